//! Golden outputs of RAP: a FNV-1a hash per group of configurations of everything the
//! model and its trees report, interval by interval, so that speed work on the tree (node
//! layout, hint tables, batching) provably leaves it unchanged.
//!
//! - `model`: the `rap` profiler over 20 option sets (branching 2 to 256, 1-D and 2-D
//!   keys, no buffer to a 4,096-slot one, eps from 0.2% to 20%, merge periods, fresh or
//!   cumulative trees) x 6 streams, fed per tuple or in uneven batches. Per interval: its
//!   estimates and candidates in the model's own order, state bytes, overhead and hot
//!   ranges, and per tree its size, peak, events, next merge, memory before merges and
//!   every node (prefix, depth, count, subtree, hot weight, hotness).
//! - `tree`: [`RapTree`] alone over weighted adds, by `add`, by `add_batch` and with the
//!   plain walk (all three must agree), at several key widths: its nodes, points, point
//!   growth and range estimates after every run of adds.
//!
//! The values were recorded from the tree as it was at 703bb05, before issue 38's work
//! on its per-tuple cost. `RAP_DUMP=file cargo test -p toyvm-profiler --test
//! rap_outputs` writes one hash per case, to find which cases changed.

use toyvm_profiler::hash::SplitMix64;
use toyvm_profiler::rap::{Rap, RapTree};
use toyvm_profiler::spec::Model;
use toyvm_profiler::synth::{noisy_zipf_stream, program_edges, zipf_stream};
use toyvm_profiler::{Profiler, Tuple, parse_spec};

mod common;
use common::Fnv;

fn streams() -> Vec<(&'static str, Vec<Tuple>)> {
    let mut mixed = program_edges(8_000, 8, 20, 5);
    mixed.extend(zipf_stream(8_000, 2_000, 1.0, 6));
    for (i, t) in mixed.iter_mut().enumerate() {
        if i % 7 == 3 {
            *t = Tuple::call(t.a, t.b & 0xff);
        }
    }
    // Keys over the whole 128 bits: splits all the way down, and deep interior merges.
    let mut rng = SplitMix64::new(77);
    let wide: Vec<Tuple> = (0..12_000)
        .map(|i| {
            if i % 3 == 0 {
                Tuple::value(0x3_0000_0040, 5)
            } else {
                Tuple::value(rng.next_u64(), rng.next_u64() >> (i % 64))
            }
        })
        .collect();
    vec![
        ("zipf0.8", zipf_stream(30_000, 20_000, 0.8, 42)),
        ("zipf1.2", zipf_stream(20_000, 5_000, 1.2, 43)),
        ("noisy", noisy_zipf_stream(20_000, 5_000, 1.0, 0.3, 44)),
        ("edges", program_edges(25_000, 24, 40, 17)),
        ("mixed", mixed),
        ("wide", wide),
    ]
}

const SPECS: &[&str] = &[
    "",
    "buffer=0",
    "buffer=1",
    "buffer=4096",
    "reset=on",
    "reset=on,buffer=0,interval=777",
    "branching=2",
    "branching=2,buffer=0,eps=0.5%",
    "branching=16",
    "branching=256",
    "branching=256,reset=on,buffer=16",
    "dims=2",
    "dims=2,branching=16,buffer=0",
    "dims=2,branching=256,reset=on",
    "eps=0.2%,interval=3333",
    "eps=20%,q=4,merge_first=100",
    "eps=5%,q=3,merge_first=500,hot=3%",
    "q=8,merge_first=64,hot=50%",
    "merge_first=1,interval=1000,threshold=0.5%",
    "eps=0.5%,branching=16,dims=2,buffer=7,interval=2500",
];

fn hash_trees(m: &Rap, h: &mut Fnv) {
    for tree in m.set().trees() {
        h.u64(tree.nodes() as u64);
        h.u64(tree.peak_nodes() as u64);
        h.u64(tree.events());
        h.u64(tree.next_merge_at());
        match tree.nodes_before_merges() {
            Some((largest, mean)) => {
                h.u64(largest as u64);
                h.u64(mean.to_bits());
            }
            None => h.u64(u64::MAX),
        }
        h.u64(tree.largest_before_merge_at().unwrap_or(u64::MAX));
        let nodes = tree.nodes_with_hotness(0.1);
        h.u64(nodes.len() as u64);
        for n in nodes {
            h.u64(n.prefix as u64);
            h.u64((n.prefix >> 64) as u64);
            h.u64(n.bits.into());
            h.u64(n.count);
            h.u64(n.subtree);
            h.u64(n.hot_weight);
            h.u64(n.hot.into());
        }
    }
}

fn run_model(spec: &str, stream: &[Tuple], chunk: usize, h: &mut Fnv) {
    let spec = parse_spec(spec).unwrap();
    let Model::Rap(opts) = &spec.model else {
        panic!("not a rap spec")
    };
    let mut m = Rap::new(spec.clone(), opts.clone());
    let l = spec.interval as usize;
    for (k, interval) in stream.chunks(l).enumerate() {
        if chunk == 1 {
            interval.iter().for_each(|&t| m.observe(t));
        } else {
            interval.chunks(chunk).for_each(|c| m.observe_batch(c));
        }
        common::end_interval(h, k, &mut m);
        for r in m.hot_ranges() {
            h.u64(r.kind as u64);
            for x in [r.a_lo, r.a_hi, r.b_lo, r.b_hi, r.count, r.hot_weight] {
                h.u64(x);
            }
        }
        hash_trees(&m, h);
    }
}

/// Weighted keys for the tree alone: clustered keys (a few hot, a Zipf-like body over
/// several top halves) and a tail of keys anywhere, in counts of 1 to 40.
fn weighted_adds(len: usize, seed: u64) -> Vec<(u128, u64)> {
    let mut rng = SplitMix64::new(seed);
    (0..len)
        .map(|i| {
            let key = match rng.below(10) {
                0 => ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128,
                1..=3 => (0x2_0000_0010u128 << 64) | rng.below(4) as u128,
                _ => {
                    let top = 1 + rng.below(3_000);
                    let r = rng.below(top) as u128;
                    ((0x1_0000_0000 + (r % 29) * 8) << 64) | (r * 7_919)
                }
            };
            let count = if i % 5 == 0 { 1 + rng.below(40) } else { 1 };
            (key, count)
        })
        .collect()
}

/// `(branching, eps, q, merge_first, key bits)`.
const TREES: &[(u32, f64, u64, u64, u32)] = &[
    (4, 0.01, 2, 1024, 128),
    (4, 0.05, 2, 256, 128),
    (2, 0.02, 3, 500, 128),
    (16, 0.01, 2, 1024, 128),
    (256, 0.03, 2, 100, 128),
    (4, 0.01, 2, 1024, 64),
    (16, 0.1, 4, 50, 32),
    (2, 0.2, 1, 10, 96),
    (4, 0.6, 2, 1, 128),
];

fn hash_tree(tree: &mut RapTree, h: &mut Fnv) {
    h.u64(tree.nodes() as u64);
    h.u64(tree.peak_nodes() as u64);
    h.u64(tree.events());
    h.u64(tree.next_merge_at());
    let nodes = tree.nodes_with_hotness(0.05);
    for n in &nodes {
        h.u64(n.prefix as u64);
        h.u64((n.prefix >> 64) as u64);
        h.u64(n.bits.into());
        h.u64(n.count);
        h.u64(n.subtree);
        h.u64(n.hot_weight);
        h.u64(n.hot.into());
    }
    // Estimates of ranges around some nodes, a level above and below theirs.
    for n in nodes.iter().step_by(7) {
        for bits in [n.bits.saturating_sub(3), (n.bits + 5).min(128)] {
            let prefix = if bits <= n.bits {
                n.prefix.checked_shr(n.bits - bits).unwrap_or(0)
            } else {
                (n.prefix << (bits - n.bits)) | 0b10101
            };
            h.u64(tree.estimate(prefix, bits));
        }
    }
    for (k, c) in tree.points() {
        h.u64(k as u64);
        h.u64((k >> 64) as u64);
        h.u64(c);
    }
    for (k, c) in tree.take_point_growth() {
        h.u64(k as u64);
        h.u64((k >> 64) as u64);
        h.u64(c);
    }
}

/// The hash of the tree after each run of `adds` (and a reset after the sixth), fed by
/// `add` (`how` 0), by `add_batch` (1) or by `add_batch` with plain walks (2).
fn run_tree(cfg: (u32, f64, u64, u64, u32), adds: &[(u128, u64)], how: usize) -> u64 {
    let (b, eps, q, first, bits) = cfg;
    let mut tree = RapTree::with_key_bits(b, eps, q, first, bits);
    tree.set_plain_walk(how == 2);
    let mut h = Fnv::new();
    for (i, run) in adds.chunks(997).enumerate() {
        if how == 0 {
            run.iter().for_each(|&(k, c)| tree.add(k, c));
        } else {
            tree.add_batch(run);
        }
        hash_tree(&mut tree, &mut h);
        if i == 5 {
            tree.reset();
        }
    }
    h.0
}

/// Per group, recorded at 703bb05.
const GOLDEN: [(&str, u64); 2] = [("model", 0x9e5501e2fd3cd85e), ("tree", 0xf980d0779403a3b8)];

#[test]
fn rap_outputs() {
    let streams = streams();
    let mut lines = Vec::new();
    let mut model = Fnv::new();
    for (i, extra) in SPECS.iter().enumerate() {
        for (j, (name, s)) in streams.iter().enumerate() {
            let interval = if extra.contains("interval=") {
                ""
            } else {
                "interval=5000,"
            };
            let spec = format!("rap:{interval}threshold=1%,{extra}");
            let spec = spec.trim_end_matches(',');
            let chunk = if (i + j) % 4 == 0 { 1 } else { 777 };
            let mut h = Fnv::new();
            run_model(spec, s, chunk, &mut h);
            model.u64(h.0);
            lines.push(format!("{spec} {name} {chunk} {:016x}", h.0));
        }
    }
    let mut trees = Fnv::new();
    for (i, &cfg) in TREES.iter().enumerate() {
        let adds = weighted_adds(12_000, 100 + i as u64);
        let got: Vec<u64> = (0..3).map(|how| run_tree(cfg, &adds, how)).collect();
        assert!(
            got.iter().all(|&x| x == got[0]),
            "{cfg:?}: add, add_batch and plain walks disagree: {got:x?}"
        );
        trees.u64(got[0]);
        lines.push(format!("tree {cfg:?} {:016x}", got[0]));
    }
    if let Ok(path) = std::env::var("RAP_DUMP") {
        std::fs::write(path, lines.join("\n")).unwrap();
    }
    let got = [("model", model.0), ("tree", trees.0)];
    for (group, got) in got {
        println!("(\"{group}\", {got:#018x}),");
    }
    for ((group, want), (_, got)) in GOLDEN.iter().zip(&got) {
        assert_eq!(*got, *want, "{group}: outputs changed");
    }
}
