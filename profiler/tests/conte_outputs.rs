//! Golden outputs of Conte's model over its organisations: a FNV-1a hash per scheme of
//! every interval's estimates and candidates (in the model's own order, before any sort),
//! state bytes and overhead, for 9 buffer organisations x 4 periods x 4 option sets x 5
//! streams, fed per tuple or in uneven batches.  The values were recorded from the model
//! as it was before its lookup memo and dense arc table (3b70435): speed work must leave
//! them unchanged.  A tiny `bbar` scales the weights up so rounding to counts keeps
//! nearly all their bits (a sum added in another order shows).
//!
//! `CONTE_DUMP=file cargo test -p toyvm-profiler --test conte_outputs` writes one hash
//! per case, to find which cases changed.

use toyvm_profiler::synth::{program_edges, zipf_stream};
use toyvm_profiler::{Tuple, parse_spec};

mod common;
use common::Fnv;

fn streams() -> Vec<(&'static str, Vec<Tuple>)> {
    let mut mixed = program_edges(20_000, 8, 20, 5);
    mixed.extend(zipf_stream(6_000, 2_000, 1.0, 6));
    for (i, t) in mixed.iter_mut().enumerate() {
        if i % 7 == 3 {
            *t = Tuple::call(t.a, t.b & 0xff);
        }
    }
    // Many branches in few sets, high function indices, fall-through and taken.
    let mut x = 12345u64;
    let contended: Vec<Tuple> = (0..30_000)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let f = (x >> 60) as u32 * 977;
            let off = ((x >> 40) & 0x3f) as u32 * 64 + 3;
            let a = Tuple::pc(f, off);
            let b = if (x >> 20) & 3 == 0 {
                Tuple::pc(f, off + 1)
            } else {
                Tuple::pc(f, ((x >> 24) & 0xff) as u32)
            };
            Tuple::edge(a, b)
        })
        .collect();
    vec![
        ("edges", program_edges(40_000, 24, 40, 17)),
        ("edges2", program_edges(30_000, 4, 300, 3)),
        ("zipf", zipf_stream(30_000, 5_000, 0.9, 42)),
        ("mixed", mixed),
        ("contended", contended),
    ]
}

fn run(spec: &str, stream: &[Tuple], chunk: usize, h: &mut Fnv) {
    let spec = parse_spec(spec).unwrap();
    let l = spec.interval as usize;
    let mut m = spec.build();
    for (k, interval) in stream.chunks(l).enumerate() {
        if chunk == 1 {
            for &t in interval {
                m.observe(t);
            }
        } else {
            for c in interval.chunks(chunk) {
                m.observe_batch(c);
            }
        }
        common::end_interval(h, k, &mut *m);
    }
}

/// Per scheme, recorded at 3b70435.
const GOLDEN: [(&str, u64); 3] = [
    ("onelevel", 0x2d93621612b84bc6),
    ("twolevel", 0xd527270cc3398676),
    ("counter", 0x8d5c8cb81506df0c),
];

#[test]
fn conte_outputs() {
    let streams = streams();
    let mut lines = Vec::new();
    let mut got = Vec::new();
    for (scheme, _) in GOLDEN {
        let mut all = Fnv::new();
        for (entries, ways) in [
            (1024, 4),
            (64, 1),
            (96, 3),
            (16, 16),
            (256, 8),
            (60, 4),
            (1, 1),
            (8, 2),
            (4096, 4),
        ] {
            for period in [1, 7, 1000, 20_000] {
                for extra in [
                    "",
                    ",bbar=0.0000000000000284,history=4,interval=3333",
                    ",history=15,bbar=0.001",
                    ",history=1,interval=777,fallthrough=4",
                ] {
                    for (name, s) in &streams {
                        let spec = format!(
                            "conte:scheme={scheme},entries={entries},ways={ways},period={period},threshold=0.5%{extra}"
                        );
                        let chunk = if period == 7 && name.len() == 5 {
                            1
                        } else {
                            777
                        };
                        let mut h = Fnv::new();
                        run(&spec, s, chunk, &mut h);
                        all.u64(h.0);
                        lines.push(format!("{spec} {name} {:016x}", h.0));
                    }
                }
            }
        }
        got.push((scheme, all.0));
    }
    if let Ok(path) = std::env::var("CONTE_DUMP") {
        std::fs::write(path, lines.join("\n")).unwrap();
    }
    for ((scheme, want), (_, got)) in GOLDEN.iter().zip(&got) {
        println!("(\"{scheme}\", {got:#018x}),");
        assert_eq!(*got, *want, "{scheme}: outputs changed");
    }
}
