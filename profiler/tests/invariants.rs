//! Property tests of the contract every model promises (the `Profiler` doc's numbered
//! list) and of the bounds some models guarantee, on random small streams.

use proptest::prelude::*;
use std::collections::HashMap;
use toyvm_profiler::spec::MODEL_NAMES;
use toyvm_profiler::{IntervalDriver, Kind, Tuple, parse_spec};

/// Streams with a few hot tuples among noise, all three kinds, small pcs and values.
fn stream() -> impl Strategy<Value = Vec<Tuple>> {
    proptest::collection::vec((0u8..3, 0u64..6, 0u64..40), 1..1500).prop_map(|v| {
        v.into_iter()
            .map(|(k, a, b)| {
                let kind = Kind::from_u8(k).unwrap();
                // Edge targets are often the fall-through (a + 1), as in real code.
                let b = if kind == Kind::Edge && b % 2 == 0 {
                    a + 1
                } else {
                    b
                };
                Tuple::new(kind, Tuple::pc(1, a as u32), b)
            })
            .collect()
    })
}

fn spec_for(name: &str) -> String {
    let kinds = if name == "conte" { "edge" } else { "all" };
    format!("{name}:interval=300,threshold=2%,kinds={kinds}")
}

fn run(spec: &str, s: &[Tuple]) -> Vec<(u64, Vec<(Tuple, u64)>)> {
    let mut d = IntervalDriver::new(&parse_spec(spec).unwrap());
    let mut out = Vec::new();
    let mut record = |e: toyvm_profiler::IntervalEnd<'_>| {
        out.push((
            e.tuples,
            e.candidates.iter().map(|c| (c.tuple, c.count)).collect(),
        ));
    };
    d.observe_batch(s, &mut record);
    d.finish(&mut record);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_model_keeps_the_contract(s in stream()) {
        for name in MODEL_NAMES {
            let spec = spec_for(name);
            let t = parse_spec(&spec).unwrap().threshold_count();
            let a = run(&spec, &s);
            // 7: deterministic.
            prop_assert_eq!(&a, &run(&spec, &s), "{}", spec);
            for (_, cands) in &a {
                // 3: unique tuples, at or over the threshold, highest count first.
                let mut seen = std::collections::HashSet::new();
                for w in cands.windows(2) {
                    prop_assert!(w[0].1 >= w[1].1, "{} not sorted", spec);
                }
                for (tuple, count) in cands {
                    prop_assert!(seen.insert(*tuple), "{} repeats {}", spec, tuple);
                    prop_assert!(*count >= t, "{} reports {} below the threshold", spec, tuple);
                    // 2: only supported kinds.
                    prop_assert!(*name != "conte" || tuple.kind == Kind::Edge);
                }
            }
        }
    }

    #[test]
    fn batches_and_single_tuples_give_the_same_profile(s in stream(), cut in 1usize..200) {
        // Models that hash or look up a block at a time in `observe_batch` must
        // report what one `observe` per tuple does, however the stream is cut.
        // Small tables as well, so that tuples share sets and counters and a
        // batch path that put a tuple in the wrong one would show.
        let small = [
            "tagged:entries=16,ways=2",
            "singlehash:entries=16",
            "multihash:tables=2,entries=64",
        ];
        let specs = MODEL_NAMES.iter().map(|n| spec_for(n)).chain(
            small.iter().map(|s| format!("{s},interval=300,threshold=2%")),
        );
        for name in specs {
            let spec = parse_spec(&name).unwrap();
            let (mut batched, mut single) = (spec.build(), spec.build());
            for (i, chunk) in s.chunks(300).enumerate() {
                for part in chunk.chunks(cut + i) {
                    batched.observe_batch(part);
                }
                for t in chunk {
                    single.observe(*t);
                }
                let a: Vec<_> = batched.end_interval().iter().map(|c| (c.tuple, c.count)).collect();
                let b: Vec<_> = single.end_interval().iter().map(|c| (c.tuple, c.count)).collect();
                prop_assert_eq!(a, b, "{} interval {}", name, i);
            }
        }
    }

    #[test]
    fn full_profiles_are_the_candidates_before_the_threshold(s in stream()) {
        for name in MODEL_NAMES {
            let spec = parse_spec(&spec_for(name)).unwrap();
            let t = spec.threshold_count();
            let (mut with, mut without) = (spec.build(), spec.build());
            for chunk in s.chunks(300) {
                with.observe_batch(chunk);
                without.observe_batch(chunk);
                let mut full: Vec<(Tuple, u64)> = Vec::new();
                let cands = with.end_interval_with(&mut |t, n| full.push((t, n)));
                // Handing over the profile changes nothing the model reports.
                prop_assert_eq!(&cands, &without.end_interval(), "{}", spec);
                let mut seen = std::collections::HashSet::new();
                for (tuple, n) in &full {
                    prop_assert!(seen.insert(*tuple), "{} repeats {}", spec, tuple);
                    prop_assert!(*n >= 1, "{} hands over a zero estimate", spec);
                }
                // The candidates are exactly the profile's entries at or over T.
                let mut over: Vec<(Tuple, u64)> =
                    full.iter().copied().filter(|(_, n)| *n >= t).collect();
                over.sort_by(|x, y| y.1.cmp(&x.1).then(x.0.cmp(&y.0)));
                let got: Vec<(Tuple, u64)> = cands.iter().map(|c| (c.tuple, c.count)).collect();
                prop_assert_eq!(got, over, "{}", spec);
            }
        }
    }

    #[test]
    fn perfect_is_exact_and_rap_never_over_counts(s in stream()) {
        let exact = run("perfect:interval=300,threshold=2%", &s);
        let mut pos = 0usize;
        for (len, cands) in &exact {
            let mut counts: HashMap<Tuple, u64> = HashMap::new();
            for t in &s[pos..pos + *len as usize] {
                *counts.entry(*t).or_default() += 1;
            }
            for (t, c) in cands {
                prop_assert_eq!(counts[t], *c);
            }
            prop_assert_eq!(cands.len(), counts.values().filter(|&&c| c >= 6).count());
            pos += *len as usize;
        }
        for rap in ["rap:interval=300,threshold=2%,reset=on", "rap:interval=300,threshold=2%", "rap:interval=300,threshold=2%,dims=2,buffer=0"] {
            let got = run(rap, &s);
            for ((_, ex), (_, r)) in exact.iter().zip(&got) {
                let ex: HashMap<Tuple, u64> = ex.iter().copied().collect();
                for (t, c) in r {
                    // Every estimate is a lower bound, so a RAP candidate is a true one.
                    prop_assert!(ex.get(t).is_some_and(|e| c <= e), "{}: {} {} vs {:?}", rap, t, c, ex.get(t));
                }
            }
        }
    }

    #[test]
    fn multihash_without_aliasing_is_exact(s in stream()) {
        // 64K counters per table for at most ~700 distinct tuples: no aliasing in practice,
        // so promotion counts are exact and shielding keeps them exact.
        let exact = run("perfect:interval=300,threshold=2%", &s);
        let mh = run("multihash:tables=2,entries=131072,interval=300,threshold=2%", &s);
        prop_assert_eq!(exact, mh);
    }
}
