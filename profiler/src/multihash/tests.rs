use super::*;
use crate::hash::SplitMix64;
use crate::spec::{Model, parse_spec};

fn run(spec: &str, stream: &[Tuple]) -> Vec<Candidate> {
    let mut m = parse_spec(spec).unwrap().build();
    m.observe_batch(stream);
    m.end_interval()
}

#[test]
fn a_lone_hot_tuple_is_counted_exactly() {
    // Shielded after promotion, so the accumulator count plus the promotion count is
    // exact when nothing aliases.
    let mut s = vec![Tuple::value(1, 1); 300];
    s.extend((0..700).map(|i| Tuple::value(2, i)));
    let c = run("multihash:interval=1000,threshold=10%", &s);
    assert_eq!(
        c,
        vec![Candidate {
            tuple: Tuple::value(1, 1),
            count: 300
        }]
    );
}

#[test]
fn promotion_starts_at_the_minimum_counter() {
    // 2 tables of 1 counter: everything aliases; the second tuple is promoted with the
    // shared count (the minimum of its counters: our inference, see the module doc;
    // the paper does not say what a new entry's count starts at).
    let mut s = vec![Tuple::value(1, 1); 5];
    s.extend(vec![Tuple::value(2, 2); 5]);
    let c = run(
        "multihash:tables=2,entries=2,interval=100,threshold=8%,cu=off",
        &s,
    );
    assert_eq!(
        c,
        vec![Candidate {
            tuple: Tuple::value(2, 2),
            count: 10
        }]
    );
    let c = run(
        "multihash:tables=2,entries=2,interval=100,threshold=8%,cu=off,reset=on",
        &[s.clone(), s].concat(),
    );
    // With reset the counters restart at 0 after the first promotion.
    assert!(c.iter().all(|c| c.count >= 8), "{c:?}");
}

#[test]
fn accumulator_has_100_over_t_entries_and_refuses_when_full() {
    let m = MultiHash::new(parse_spec("multihash").unwrap(), MultiHashOptions::BEST);
    assert_eq!(m.accumulator_entries(), 100);
    // 3 distinct hot tuples, accumulator of 2: one is not promoted.
    let mut s = Vec::new();
    for v in 0..3 {
        s.extend(vec![Tuple::value(9, v); 20]);
    }
    let c = run("multihash:accumulator=2,interval=60,threshold=10%", &s);
    assert_eq!(c.len(), 2);
}

#[test]
fn without_retaining_every_entry_stays_replaceable_as_in_section_5_2() {
    // One table of one counter (everything aliases), L = 20, T = 10, an accumulator
    // of 100/50 = 2 entries.
    let a = Tuple::value(1, 1);
    let (b, c) = (Tuple::value(2, 2), Tuple::value(3, 3));
    let third_interval = |retain: &str| {
        let mut m = parse_spec(&format!(
            "multihash:tables=1,entries=1,interval=20,threshold=50%,cu=off,retain={retain}"
        ))
        .unwrap()
        .build();
        // 1: A is promoted. 2: A (kept from 1, replaceable) occurs 5 times; B is
        // promoted into the free entry.
        m.observe_batch(&[a; 20]);
        m.end_interval();
        let mut s = vec![a; 5];
        s.extend([b; 15]);
        m.observe_batch(&s);
        m.end_interval();
        // 3: C eight times, then A twelve. With A still in the accumulator (shielded)
        // its entry counts every occurrence; flushed, it aliases with C in the
        // counter and is promoted at the counter's 10, then counts on to 20.
        let mut s = vec![c; 8];
        s.extend([a; 12]);
        m.observe_batch(&s);
        m.end_interval()
    };
    let count = |v: &[Candidate]| v.iter().find(|x| x.tuple == a).map(|x| x.count);
    // retain=off is section 5.2's base design: nothing flushed, so A stayed, and
    // its count was not cleared either (20 + 5 + 12).
    assert_eq!(count(&third_interval("off")), Some(37));
    // retain=on flushes the entries that ended below T: A (5) went.
    assert_eq!(count(&third_interval("on")), Some(20));
}

#[test]
fn retaining_keeps_candidates_shielded_into_the_next_interval() {
    let spec = parse_spec("multihash:interval=100,threshold=10%,retain=on").unwrap();
    let mut m = spec.build();
    m.observe_batch(&vec![Tuple::value(1, 1); 50]);
    assert_eq!(m.end_interval()[0].count, 50);
    // Retained: counted exactly from the first occurrence of the next interval.
    m.observe_batch(&vec![Tuple::value(1, 1); 12]);
    assert_eq!(
        m.end_interval(),
        vec![Candidate {
            tuple: Tuple::value(1, 1),
            count: 12
        }]
    );
    // Below threshold this time: flushed, so the next interval starts over.
    m.observe_batch(&[Tuple::value(1, 1); 5]);
    assert!(m.end_interval().is_empty());
}

#[test]
fn accumulator_index_survives_replacement_churn() {
    let mut acc = Accumulator::new(8);
    let mut rng = SplitMix64::new(5);
    let mut live: Vec<Tuple>;
    for round in 0..200 {
        acc.end_interval(true, 0);
        live = acc.entries.iter().map(|e| e.tuple).collect();
        for _ in 0..8 {
            let t = Tuple::value(rng.below(50), round);
            if acc.find(&t, mix(&t)).is_none() && acc.promote(t, mix(&t), 1) {
                live.retain(|x| acc.find(x, mix(x)).is_some());
                live.push(t);
            }
        }
        for t in &live {
            assert!(acc.find(t, mix(t)).is_some(), "lost {t}");
        }
        assert_eq!(live.len(), acc.entries.len());
    }
}

#[test]
fn the_victim_is_the_first_replaceable_entry_with_the_lowest_count() {
    // The resumed search for a replaceable 0 (`Accumulator::victim`) against the rule
    // itself, over hits, promotions and interval ends, retaining or not, with
    // thresholds that leave replaceable entries at 0 and above.
    for (retain, threshold) in [(true, 1), (true, 3), (false, 1), (false, 4)] {
        let mut acc = Accumulator::new(16);
        let mut rng = SplitMix64::new(threshold + retain as u64);
        for round in 0..300 {
            for _ in 0..40 {
                let t = Tuple::value(rng.below(60), round % 3);
                let key = mix(&t);
                if let Some(i) = acc.find(&t, key) {
                    acc.hit(i, threshold);
                    continue;
                }
                let full = acc.entries.len() == acc.cap;
                let expected = (full && acc.replaceable > 0).then(|| {
                    (0..acc.entries.len())
                        .filter(|&i| acc.entries[i].replaceable)
                        .min_by_key(|&i| acc.entries[i].count)
                        .unwrap()
                });
                let count = rng.below(3);
                assert_eq!(acc.promote(t, key, count), !full || expected.is_some());
                if let Some(i) = expected {
                    assert_eq!(acc.entries[i].tuple, t, "round {round}");
                }
            }
            acc.end_interval(retain, threshold);
        }
    }
}

#[test]
fn sorting_a_block_handles_shared_home_slots() {
    let mut acc = Accumulator::new(8);
    // Two keys with one home slot and different tags, and a third key equal to the
    // first (as two tuples with the same hash word would have).
    let k1 = 1;
    let k2 = (2..)
        .find(|&k| acc.slot(k).0 == acc.slot(k1).0 && acc.slot(k).1 != acc.slot(k1).1)
        .unwrap();
    let (t1, t2, t3) = (Tuple::value(1, 1), Tuple::value(2, 2), Tuple::value(3, 3));
    assert!(acc.promote(t1, k1, 5) && acc.promote(t2, k2, 5));
    let block = [t1, t2, t3];
    let mut words = [0; BLOCK];
    words[..3].copy_from_slice(&[k1, k2, k1]);
    let mut sorted = Sorted::new();
    acc.sort(&words[..2], &mut sorted);
    // t1 is at its home slot; t2 was pushed past it, so it must look on.
    assert_eq!((sorted.hits, sorted.misses), (1, 1));
    assert_eq!((sorted.hit_at[0], sorted.miss_at[0]), (0, 1));
    assert!(sorted.entry[1] != u16::MAX && acc.find(&t2, k2) == Some(1));
    assert!(acc.verify(&block[..2], &sorted));
    // t3 matches t1's home slot and tag but is not t1.
    acc.sort(&words[..3], &mut sorted);
    assert_eq!(sorted.hits, 2);
    assert!(!acc.verify(&block, &sorted));
}

#[test]
fn theoretical_bound_matches_section_6_2() {
    // One 2K table at 1%: 100/2048 per tuple.
    assert!((false_positive_bound(1, 2048, 1.0) - 100.0 / 2048.0).abs() < 1e-12);
    // Four 512-entry tables: (400/2048)^4.
    assert!((false_positive_bound(4, 2048, 1.0) - (400.0f64 / 2048.0).powi(4)).abs() < 1e-15);
}

#[test]
fn the_accumulator_key_follows_the_hit_rate_and_changes_no_result() {
    // Intervals that alternate between nearly all hot tuples (held by the accumulator:
    // keyed by the mixer next) and mostly a wide cold tail (keyed by the hash word
    // next), through the fast loop and the per-tuple path, for every table count the
    // fast loop specializes on (one table hashes through its narrow table) and both
    // update rules. The hot tuples stay candidates throughout, so the entries retained
    // across each change of key are looked up again under the new key.
    for opts in [
        "",
        "tables=1,entries=64,",
        "tables=2,entries=1024,cu=off,",
        "tables=3,entries=1536,",
    ] {
        let spec = parse_spec(&format!("multihash:{opts}interval=2000,threshold=1%")).unwrap();
        let Model::MultiHash(o) = &spec.model else {
            unreachable!("a multihash spec")
        };
        let (mut batch, mut single) = (MultiHash::new(spec.clone(), o.clone()), spec.build());
        assert!(batch.fast, "{spec}");
        let mut rng = SplitMix64::new(9);
        let mut keyed = Vec::new();
        for interval in 0..8 {
            let stream: Vec<Tuple> = (0..2000)
                .map(|_| {
                    let hot_share = if interval % 2 == 0 { 95 } else { 30 };
                    if rng.below(100) < hot_share {
                        Tuple::edge(rng.below(8), 1)
                    } else {
                        Tuple::value(rng.below(50_000), rng.below(1 << 40))
                    }
                })
                .collect();
            batch.observe_batch(&stream);
            stream.iter().for_each(|t| single.observe(*t));
            assert_eq!(
                batch.end_interval(),
                single.end_interval(),
                "{spec}, interval {interval}"
            );
            keyed.push(batch.mixed_keys);
            // Every entry kept is found under the key the next interval looks it up by.
            for (i, e) in batch.acc.entries.iter().enumerate() {
                let key = batch.acc_key(&e.tuple);
                assert_eq!(
                    batch.acc.find(&e.tuple, key),
                    Some(i),
                    "{spec}: {}",
                    e.tuple
                );
            }
        }
        assert_eq!(
            keyed,
            [true, false, true, false, true, false, true, false],
            "{spec}"
        );
    }
}
