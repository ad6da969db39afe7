//! The papers' results, reproduced on synthetic streams with fixed seeds.
//!
//! The long variants with the papers' full parameters are `#[ignore]`d; run them with
//! `cargo test -p toyvm-profiler --release -- --ignored`.  The always-on variants use
//! fewer trials and stream lengths and assert the same orderings.

use std::collections::BTreeMap;
use toyvm_profiler::evaluation::profile_stream;
use toyvm_profiler::hash::{SplitMix64, TupleMap};
use toyvm_profiler::metrics::arc_weight_error;
use toyvm_profiler::rap::RapTree;
use toyvm_profiler::spec::parse_spec;
use toyvm_profiler::synth::{noisy_zipf_stream, program_edges};
use toyvm_profiler::{Tuple, multihash};

// ---------------------------------------------------------------------------------------
// 001 section 3.3: Monte Carlo estimate of one tuple's frequency (Figure 4).

const SAMPLERS: [&str; 6] = [
    "R_10",
    "H[R_10]_16",
    "P_10",
    "CR_10",
    "H[P_10]_16",
    "H[CR_10]_16",
];

/// Mean ERR = |100 (t - EST) / EST| per sampler for a stream of length `n`, each
/// sampler run as a `stratified` model whose software side makes the estimate. The
/// counted samplers use `estimator=share`: with the paper's stated estimator (the sum of
/// the messages' counts, the default) `CR` is not equivalent to `P` (see
/// `the_paper_estimator_sums_counts_and_is_noisier_than_p`).
/// The count `spec` reports for tuple `p` after one interval over `stream` (0 when it
/// reports none).
fn estimate_of(spec: &str, stream: &[Tuple], p: Tuple) -> u64 {
    let mut m = parse_spec(spec).unwrap().build();
    m.observe_batch(stream);
    m.end_interval()
        .iter()
        .find(|c| c.tuple == p)
        .map_or(0, |c| c.count)
}

fn monte_carlo(n: usize, trials: usize, seed: u64) -> [f64; 6] {
    let p = Tuple::value(0x1_0000_0004, 42);
    let t = (0.3 * n as f64) as usize;
    let mut rng = SplitMix64::new(seed);
    let mut sums = [0.0f64; 6];
    let mut stream: Vec<Tuple> = Vec::with_capacity(n);
    for trial in 0..trials {
        stream.clear();
        stream.extend(std::iter::repeat_n(p, t));
        stream.extend((t..n).map(|i| Tuple::value(0x2_0000_0000 + (i as u64 % 97) * 4, i as u64)));
        for i in (1..n).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            stream.swap(i, j);
        }
        for (k, expr) in SAMPLERS.iter().enumerate() {
            let seed = seed ^ (trial as u64 * 7919 + k as u64);
            let spec = format!(
                "stratified:sampler={expr},second=none,estimator=share,interval={n},threshold=10%,seed={seed}"
            );
            let est = estimate_of(&spec, &stream, p);
            // No estimate at all would be an infinite error; it does not happen at these
            // lengths, and counting it as 100% keeps the mean finite.
            sums[k] += if est == 0 {
                100.0
            } else {
                (100.0 * (t as f64 - est as f64) / est as f64).abs()
            };
        }
    }
    sums.map(|s| s / trials as f64)
}

/// The three accuracy classes in decreasing error order, {R, H[R]} > {P, CR} >
/// {H[P], H[CR]}, with the members of a class equivalent (`tol` is the largest ratio
/// between them that counts as equal).
fn assert_classes(e: &[f64; 6], tol: f64, what: &str) {
    let (r, hr, p, cr, hp, hcr) = (e[0], e[1], e[2], e[3], e[4], e[5]);
    assert!(p.max(cr) < r.min(hr), "{what}: {e:?}");
    assert!(hp.max(hcr) < p.min(cr), "{what}: {e:?}");
    for (x, y) in [(r, hr), (p, cr), (hp, hcr)] {
        assert!(x.max(y) / x.min(y).max(1e-9) < tol, "{what}: {e:?}");
    }
}

/// Runs the experiment at each length; asserts the classes on the errors pooled over
/// lengths (and per length when `per_length`), and that H[P_r]_n gets below 4% error in
/// markedly fewer events than R_r (the paper: 4,600 against 12,000).
fn check_classes(ns: &[usize], trials: usize, per_length: bool) {
    let mut first_below_4 = [None::<usize>; 6];
    let mut pooled = [0.0f64; 6];
    for &n in ns {
        let e = monte_carlo(n, trials, 0xC0FFEE + n as u64);
        if per_length {
            assert_classes(&e, 1.25, &format!("N={n}"));
        }
        for k in 0..6 {
            pooled[k] += e[k] / ns.len() as f64;
            if first_below_4[k].is_none() && e[k] <= 4.0 {
                first_below_4[k] = Some(n);
            }
        }
    }
    assert_classes(&pooled, 1.2, "pooled over lengths");
    let hp = first_below_4[4].expect("H[P] reaches 4%");
    let r = first_below_4[0].unwrap_or(usize::MAX);
    assert!(
        r as f64 >= 2.0 * hp as f64,
        "R reaches 4% at {r}, H[P] at {hp}"
    );
}

#[test]
fn sastry_monte_carlo_fast() {
    check_classes(&[1000, 2000, 4000, 8000, 12000, 16000], 100, false);
}

#[test]
#[ignore = "the paper's 2,500 trials at 20 lengths; minutes even in release"]
fn sastry_monte_carlo_full() {
    let ns: Vec<usize> = (1..=20).map(|k| k * 1000).collect();
    check_classes(&ns, 2500, true);
}

// ---------------------------------------------------------------------------------------
// 000 section 6.2: (100 n / (t Z))^n bounds the false-positive probability.

/// Fraction of the noise tuples reported as candidates, over several intervals: 60 real
/// candidates of exactly T occurrences plus 4000 distinct noise tuples per interval.
/// The accumulator holds 8,192 entries: with the default 100 (1/t) at most 40 of the
/// 4,000 noise tuples could ever be reported, a 1% rate that every bound above 1% could
/// never be caught exceeding.
fn measured_fp_rate(n: usize, z: usize, intervals: usize) -> f64 {
    let spec = parse_spec(&format!("multihash:tables={n},entries={z},cu=off,reset=off,retain=off,shield=off,accumulator=8192,interval=10000,threshold=1%,seed={}", n * z)).unwrap();
    let mut m = spec.build();
    let mut rng = SplitMix64::new(77 + z as u64);
    let (mut fp, mut noise) = (0usize, 0usize);
    for iv in 0..intervals as u64 {
        let mut s: Vec<Tuple> = Vec::with_capacity(10_000);
        for h in 0..60u64 {
            s.extend(std::iter::repeat_n(
                Tuple::value(0x1_0000_0000 + h * 4, iv),
                100,
            ));
        }
        s.extend(
            (0..4000u64)
                .map(|i| Tuple::value(0x2_0000_0000 + rng.below(1 << 20) * 4, (iv << 32) | i)),
        );
        for i in (1..s.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            s.swap(i, j);
        }
        m.observe_batch(&s);
        fp += m
            .end_interval()
            .iter()
            .filter(|c| c.tuple.a >= 0x2_0000_0000)
            .count();
        noise += 4000;
    }
    fp as f64 / noise as f64
}

#[test]
fn multihash_false_positive_bound_holds() {
    // Every case can fail: the accumulator can take every noise tuple (a rate up to 1),
    // and each bound is below 1. Some measured rate must come within a factor of 10 of
    // its bound, or the cases would not probe it.
    let mut closest: f64 = 0.0;
    for (n, z) in [
        (1, 256),
        (1, 512),
        (2, 512),
        (4, 512),
        (1, 2048),
        (2, 2048),
        (4, 2048),
    ] {
        let bound = multihash::false_positive_bound(n, z, 1.0);
        assert!(bound < 1.0, "n={n} Z={z}: a bound of 1 cannot be exceeded");
        let rate = measured_fp_rate(n, z, 6);
        eprintln!("n={n} Z={z}: measured {rate:.5}, bound {bound:.5}");
        assert!(
            rate <= bound,
            "n={n} Z={z}: measured {rate} > bound {bound}"
        );
        closest = closest.max(rate / bound);
    }
    assert!(
        closest >= 0.1,
        "no measured rate within a factor of 10 of its bound ({closest})"
    );
}

// ---------------------------------------------------------------------------------------
// 000 Figures 10-12: C1 R0 multi-hash beats the best single hash on a noisy stream.

fn mean_error(spec: &str, stream: &[Tuple]) -> f64 {
    let r = profile_stream(stream.iter().map(|t| Ok(*t)), &[parse_spec(spec).unwrap()]).unwrap();
    r.models[0].summary.errors.error
}

#[test]
fn multihash_c1_r0_beats_best_single_hash() {
    let stream = noisy_zipf_stream(200_000, 40_000, 1.0, 0.5, 11);
    let l = "interval=10000,threshold=1%";
    let best = mean_error(&format!("multihash:{l}"), &stream);
    let bsh = mean_error(&format!("singlehash:{l}"), &stream);
    let c0r0 = mean_error(&format!("multihash:cu=off,{l}"), &stream);
    let c1r1 = mean_error(&format!("multihash:reset=on,{l}"), &stream);
    assert!(best < bsh, "multihash {best} vs BSH {bsh}");
    assert!(
        best <= c0r0 && best <= c1r1,
        "C1R0 {best}, C0R0 {c0r0}, C1R1 {c1r1}"
    );
}

// ---------------------------------------------------------------------------------------
// 004 section 2.2: estimates are lower bounds short by at most eps*n; memory is bounded.
// (Both trees here run long enough that eps*n exceeds h, where our floored threshold
// and the paper's give the same bound.)

#[test]
fn rap_error_and_memory_bounds() {
    let eps = 0.05;
    let mut tree = RapTree::new(4, eps, 2, 2048);
    let mut truth: BTreeMap<u128, u64> = BTreeMap::new();
    let mut rng = SplitMix64::new(3);
    let mut z = toyvm_profiler::synth::Zipf::new(3000, 1.1, 5);
    for i in 0..120_000u64 {
        let key = if i % 3 == 0 {
            ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128
        } else {
            let r = z.next_rank() as u128;
            (0x1_0000_0000u128 + (r % 37) * 4) << 64 | (r * 1_000_003)
        };
        let c = 1 + rng.below(3);
        tree.add(key, c);
        *truth.entry(key).or_default() += c;
        if let Some(bound) = tree.memory_bound() {
            assert!(
                tree.nodes() <= bound,
                "{} nodes > bound {bound} at n={}",
                tree.nodes(),
                tree.events()
            );
        }
    }
    assert!(tree.memory_bound().is_some(), "merges ran");
    let n = tree.events();
    // eps*n, or h events while n < h/eps (the tree's threshold is floored at one event).
    let slack = ((eps * n as f64).floor() as u64).max(tree.height() as u64);
    let true_count = |prefix: u128, bits: u32| -> u64 {
        let lo = if bits == 0 { 0 } else { prefix << (128 - bits) };
        let hi = lo | u128::MAX.checked_shr(bits).unwrap_or(0);
        truth.range(lo..=hi).map(|(_, c)| c).sum()
    };
    // Every node's range, and ranges around random true keys at every depth.
    let mut checked = 0;
    for node in tree.nodes_with_hotness(0.1) {
        let (est, t) = (
            tree.estimate(node.prefix, node.bits),
            true_count(node.prefix, node.bits),
        );
        assert_eq!(est, node.subtree);
        assert!(
            est <= t && t - est <= slack,
            "range /{}: est {est}, true {t}",
            node.bits
        );
        checked += 1;
    }
    let keys: Vec<u128> = truth.keys().copied().collect();
    for _ in 0..2000 {
        let key = keys[rng.below(keys.len() as u64) as usize];
        let bits = rng.below(129) as u32;
        let prefix = if bits == 0 { 0 } else { key >> (128 - bits) };
        let (est, t) = (tree.estimate(prefix, bits), true_count(prefix, bits));
        assert!(
            est <= t && t - est <= slack,
            "prefix /{bits}: est {est}, true {t}"
        );
        checked += 1;
    }
    assert!(checked > 2000);
}

// ---------------------------------------------------------------------------------------
// 002 Table IV: counter at least as accurate as two-level, two-level as one-level.

fn conte_error(scheme: &str, stream: &[Tuple]) -> f64 {
    let spec = parse_spec(&format!(
        "conte:scheme={scheme},interval={},threshold=0.0001%,period=500",
        stream.len()
    ))
    .unwrap();
    let mut m = spec.build();
    m.observe_batch(stream);
    let est: TupleMap<u64> = m
        .end_interval()
        .into_iter()
        .map(|c| (c.tuple, c.count))
        .collect();
    let mut actual: TupleMap<u64> = TupleMap::default();
    for t in stream {
        *actual.entry(*t).or_default() += 1;
    }
    // Formula 2 over every block, lost ones included (metrics::arc_weight_error).
    arc_weight_error(&actual, &est, &[10_000])
        .iter()
        .map(|b| b.sum)
        .sum()
}

#[test]
fn conte_schemes_rank_as_table_iv() {
    let stream = program_edges(300_000, 24, 40, 17);
    let counter = conte_error("counter", &stream);
    let two = conte_error("twolevel", &stream);
    let one = conte_error("onelevel", &stream);
    assert!(
        counter <= two && two <= one,
        "counter {counter}, twolevel {two}, onelevel {one}"
    );
}

/// The counted samplers' default estimator is the paper's text (section 3.3: the sum of
/// the counts of the messages holding the tuple), and on the Figure 4 experiment it is
/// noisier than `P_r`: the equivalence the paper reports needs `estimator=share`.
#[test]
fn the_paper_estimator_sums_counts_and_is_noisier_than_p() {
    let s = parse_spec("stratified:sampler=CR_10").unwrap();
    assert_eq!(
        s.to_string(),
        parse_spec("stratified:sampler=CR_10,estimator=sum")
            .unwrap()
            .to_string()
    );
    let share = parse_spec("stratified:sampler=CR_10,estimator=share").unwrap();
    assert!(share.to_string().contains("estimator=share"));
    assert_eq!(parse_spec(&share.to_string()).unwrap(), share);
    // The Monte Carlo of Figure 4 at N = 2000 with each estimator.
    let p = Tuple::value(0x1_0000_0004, 42);
    let n = 2000;
    let t = 600;
    let mut rng = SplitMix64::new(5);
    let (mut sum_err, mut share_err, mut p_err) = (0.0, 0.0, 0.0);
    for trial in 0..200u64 {
        let mut stream: Vec<Tuple> = std::iter::repeat_n(p, t).collect();
        stream.extend((t..n).map(|i| Tuple::value(0x2_0000_0000 + (i as u64 % 97) * 4, i as u64)));
        for i in (1..n).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            stream.swap(i, j);
        }
        let err = |spec: &str| {
            let spec = format!("{spec},second=none,interval={n},threshold=10%,seed={trial}");
            let est = estimate_of(&spec, &stream, p);
            (100.0 * (t as f64 - est as f64) / est.max(1) as f64).abs()
        };
        sum_err += err("stratified:sampler=CR_10");
        share_err += err("stratified:sampler=CR_10,estimator=share");
        p_err += err("stratified:sampler=P_10");
    }
    assert!(sum_err > 1.3 * p_err, "sum {sum_err} vs P {p_err}");
    assert!(share_err < 1.3 * p_err, "share {share_err} vs P {p_err}");
}

// 004 sections 2.2 and 5.2: with batched merges the tree's size stays independent of the
// stream's length, within O(log_b(R)/eps) nodes, measured as the paper does (the largest
// tree just before a merge, from the first merge with a split threshold of one event)
// over 32-bit code keys (R = 2^32, h = 16). The paper gives the order, not a constant;
// ours is b: b h / eps is what the splits between two merges alone can add (b nodes per
// split, one split per eps m / h events over the at most m events of a doubling period).
// Since RAP merges interior nodes as the paper does (004 3.3, Fig 1), the tree just after
// a merge keeps few nodes beside that growth: on this stream the largest tree before a
// merge is 5,621 nodes (mean 4,214) against a bound of 6,400. The constant was 2b while
// merges took only nodes whose children were all leaves; with it the bound passed the
// interior-merge tree with 2.3x to spare and sat 10% under the unmerged tree, so it
// hardly tested the merge. Without merges the same stream grows to 14,213 nodes (the hot
// code moves, and without merges the paths to code that went cold stay), so the bound
// binds.
#[test]
fn rap_memory_within_the_papers_order() {
    let (b, eps) = (4u32, 0.01);
    let bound = f64::from(b) * 16.0 / eps;
    let keys: Vec<u128> = {
        let mut rng = SplitMix64::new(9);
        let mut z = toyvm_profiler::synth::Zipf::new(200_000, 0.8, 4);
        (0..2_000_000u32)
            .map(|i| {
                // The hot code moves every 40,000 events (phases): what a
                // merge gives back is the paths of code that went cold.
                let addr = if i % 2 == 0 {
                    rng.next_u64() as u32
                } else {
                    0x0040_0000 + (i / 40_000) * 0x0010_0000 + 4 * z.next_rank() as u32
                };
                u128::from(addr) << 96
            })
            .collect()
    };
    let run = |merge_first: u64| {
        let mut t = RapTree::with_key_bits(b, eps, 2, merge_first, 32);
        for &k in &keys {
            t.add(k, 1);
        }
        t
    };
    let merged = run(1024);
    let (max, mean) = merged.nodes_before_merges().expect("merges ran");
    eprintln!("bound {bound}: max {max}, mean {mean:.0} nodes before a merge");
    assert!(
        (max as f64) <= bound,
        "{max} nodes before a merge > {bound}"
    );
    assert!(mean <= max as f64);
    let unmerged = run(1 << 40);
    assert!(unmerged.nodes_before_merges().is_none());
    eprintln!("without merges: {} nodes", unmerged.nodes());
    assert!(
        unmerged.nodes() as f64 > bound,
        "without merges {} nodes: the bound does not bind on this stream",
        unmerged.nodes()
    );
}
