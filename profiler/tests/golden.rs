//! Golden equivalence: a FNV-1a hash of every model's per-interval candidate lists (plus
//! its overhead, state bytes and, for RAP, hot ranges) on small deterministic synthetic
//! streams.  Speed work on the models' hot paths must leave these exactly unchanged; the
//! values were recorded from the unoptimized implementations (RAP's again when its merge
//! became the paper's interior merge: same candidates and hot ranges but for a few counts,
//! a smaller peak tree; and the buffered RAP specs' once more when the event buffer's slot
//! hash became a mixing one, issue 37 item 3: the same events reach the tree in another
//! eviction order, which can move splits and so counts).
//!
//! `GOLDEN_PRINT=1 cargo test -p toyvm-profiler --test golden -- --nocapture` prints the
//! current values; `TOYVM_BLESS=1` rewrites the table below with them (for a change
//! meant to alter a model's output: say in the commit what changed and why).

use toyvm_profiler::synth::{noisy_zipf_stream, program_edges, zipf_stream};
use toyvm_profiler::{IntervalDriver, Tuple, parse_spec};

mod common;
use common::Fnv;

fn streams() -> Vec<(&'static str, Vec<Tuple>)> {
    let mut mixed = program_edges(6_000, 8, 20, 5);
    mixed.extend(zipf_stream(6_000, 2_000, 1.0, 6));
    for (i, t) in mixed.iter_mut().enumerate() {
        if i % 7 == 3 {
            *t = Tuple::call(t.a, t.b & 0xff);
        }
    }
    vec![
        ("zipf0.8", zipf_stream(40_000, 20_000, 0.8, 42)),
        ("zipf1.2", zipf_stream(40_000, 20_000, 1.2, 43)),
        ("noisy", noisy_zipf_stream(30_000, 5_000, 1.0, 0.3, 44)),
        ("edges", program_edges(40_000, 24, 40, 17)),
        ("mixed", mixed),
    ]
}

const SPECS: &[&str] = &[
    "multihash:interval=5000,threshold=1%",
    "multihash:interval=5000,threshold=0.5%,cu=off",
    "multihash:interval=5000,threshold=1%,reset=on,retain=off",
    "multihash:interval=5000,threshold=1%,shield=off",
    "multihash:tables=6,entries=1536,interval=5000,threshold=1%",
    "multihash:tables=3,entries=1000,interval=5000,threshold=2%,accumulator=20",
    "singlehash:interval=5000,threshold=1%",
    "stratified:interval=5000,threshold=1%",
    "stratified:second=none,interval=5000,threshold=1%",
    "stratified:sampler=H[CR_16]_64,interval=5000,threshold=1%",
    "stratified:sampler=H[H[P_8]_16]_12,interval=5000,threshold=1%",
    "stratified:sampler=R_32,interval=5000,threshold=1%",
    "tagged:interval=5000,threshold=1%",
    "rap:interval=5000,threshold=1%",
    "rap:buffer=0,interval=5000,threshold=1%",
    "rap:reset=on,interval=5000,threshold=1%",
    "rap:dims=2,branching=16,interval=5000,threshold=1%",
    "conte:scheme=twolevel,interval=5000,threshold=1%",
    "perfect:interval=5000,threshold=1%",
];

fn golden(spec: &str, stream: &[Tuple]) -> u64 {
    let spec = parse_spec(spec).unwrap();
    let mut d = IntervalDriver::new(&spec);
    let mut h = Fnv::new();
    let mut on = |e: toyvm_profiler::IntervalEnd<'_>| {
        h.u64(e.index);
        h.u64(e.tuples);
        for c in e.candidates {
            h.tuple(&c.tuple);
            h.u64(c.count);
        }
        h.u64(e.model.state_bytes() as u64);
        let o = e.model.overhead();
        h.u64(o.messages);
        h.u64(o.cycles);
    };
    // Uneven batches, as a runtime's sink hands them over.
    for chunk in stream.chunks(777) {
        d.observe_batch(chunk, &mut on);
    }
    d.finish(&mut on);
    for m in d.models() {
        for r in m.hot_ranges() {
            h.u64(r.kind as u64);
            for x in [r.a_lo, r.a_hi, r.b_lo, r.b_hi, r.count, r.hot_weight] {
                h.u64(x);
            }
        }
    }
    h.0
}

/// `(spec, stream, hash)` recorded before any optimization.
const GOLDEN: &[(&str, &str, u64)] = &[
    (
        "multihash:interval=5000,threshold=1%",
        "zipf0.8",
        0x58f87fd393dfcda6,
    ),
    (
        "multihash:interval=5000,threshold=1%",
        "zipf1.2",
        0x3778c78f4c184bcd,
    ),
    (
        "multihash:interval=5000,threshold=1%",
        "noisy",
        0x184599e708c45ece,
    ),
    (
        "multihash:interval=5000,threshold=1%",
        "edges",
        0xaa5b61f2eb924ad5,
    ),
    (
        "multihash:interval=5000,threshold=1%",
        "mixed",
        0x885091742e531dc6,
    ),
    (
        "multihash:interval=5000,threshold=0.5%,cu=off",
        "zipf0.8",
        0x9c1cdb8f3afb024c,
    ),
    (
        "multihash:interval=5000,threshold=0.5%,cu=off",
        "zipf1.2",
        0x04e7eff713bc7f23,
    ),
    (
        "multihash:interval=5000,threshold=0.5%,cu=off",
        "noisy",
        0x13675861ab2c8038,
    ),
    (
        "multihash:interval=5000,threshold=0.5%,cu=off",
        "edges",
        0x3fc01ade3ba3b3e4,
    ),
    (
        "multihash:interval=5000,threshold=0.5%,cu=off",
        "mixed",
        0x4e0b8dc260be44e8,
    ),
    (
        "multihash:interval=5000,threshold=1%,reset=on,retain=off",
        "zipf0.8",
        0xf9b4a30bf37ee861,
    ),
    (
        "multihash:interval=5000,threshold=1%,reset=on,retain=off",
        "zipf1.2",
        0xd717238c511f2298,
    ),
    (
        "multihash:interval=5000,threshold=1%,reset=on,retain=off",
        "noisy",
        0xca6d32fb64b50b35,
    ),
    (
        "multihash:interval=5000,threshold=1%,reset=on,retain=off",
        "edges",
        0x6f6b574204bdd11e,
    ),
    (
        "multihash:interval=5000,threshold=1%,reset=on,retain=off",
        "mixed",
        0x675114cc53960b63,
    ),
    (
        "multihash:interval=5000,threshold=1%,shield=off",
        "zipf0.8",
        0x58f87fd393dfcda6,
    ),
    (
        "multihash:interval=5000,threshold=1%,shield=off",
        "zipf1.2",
        0x3778c78f4c184bcd,
    ),
    (
        "multihash:interval=5000,threshold=1%,shield=off",
        "noisy",
        0x184599e708c45ece,
    ),
    (
        "multihash:interval=5000,threshold=1%,shield=off",
        "edges",
        0xaa5b61f2eb924ad5,
    ),
    (
        "multihash:interval=5000,threshold=1%,shield=off",
        "mixed",
        0x885091742e531dc6,
    ),
    (
        "multihash:tables=6,entries=1536,interval=5000,threshold=1%",
        "zipf0.8",
        0x4048385138d142ae,
    ),
    (
        "multihash:tables=6,entries=1536,interval=5000,threshold=1%",
        "zipf1.2",
        0x0d46948f32815a21,
    ),
    (
        "multihash:tables=6,entries=1536,interval=5000,threshold=1%",
        "noisy",
        0xb72a9373f13c6966,
    ),
    (
        "multihash:tables=6,entries=1536,interval=5000,threshold=1%",
        "edges",
        0xb4329357919ac1c6,
    ),
    (
        "multihash:tables=6,entries=1536,interval=5000,threshold=1%",
        "mixed",
        0xa589e8dabd6a3266,
    ),
    (
        "multihash:tables=3,entries=1000,interval=5000,threshold=2%,accumulator=20",
        "zipf0.8",
        0xc69164dcfa40dcbb,
    ),
    (
        "multihash:tables=3,entries=1000,interval=5000,threshold=2%,accumulator=20",
        "zipf1.2",
        0xd6f2956a9147678b,
    ),
    (
        "multihash:tables=3,entries=1000,interval=5000,threshold=2%,accumulator=20",
        "noisy",
        0xfd9bcd4cbf5821ac,
    ),
    (
        "multihash:tables=3,entries=1000,interval=5000,threshold=2%,accumulator=20",
        "edges",
        0x0c78dc3392f4d76b,
    ),
    (
        "multihash:tables=3,entries=1000,interval=5000,threshold=2%,accumulator=20",
        "mixed",
        0x5d3b81bc062e6934,
    ),
    (
        "singlehash:interval=5000,threshold=1%",
        "zipf0.8",
        0x09a1bd92a878b919,
    ),
    (
        "singlehash:interval=5000,threshold=1%",
        "zipf1.2",
        0x5e1510c1be8b6980,
    ),
    (
        "singlehash:interval=5000,threshold=1%",
        "noisy",
        0x94c4844a3cee3be9,
    ),
    (
        "singlehash:interval=5000,threshold=1%",
        "edges",
        0x800bfbabaa044bc4,
    ),
    (
        "singlehash:interval=5000,threshold=1%",
        "mixed",
        0xc0cf6bde960af7d2,
    ),
    (
        "stratified:interval=5000,threshold=1%",
        "zipf0.8",
        0x61e6c818fbdce7f0,
    ),
    (
        "stratified:interval=5000,threshold=1%",
        "zipf1.2",
        0x3763415a68c8b2f8,
    ),
    (
        "stratified:interval=5000,threshold=1%",
        "noisy",
        0x1a87f4b1ffef98d4,
    ),
    (
        "stratified:interval=5000,threshold=1%",
        "edges",
        0x2bbd12b3e967c8a9,
    ),
    (
        "stratified:interval=5000,threshold=1%",
        "mixed",
        0x9fc3dcfd9cc0b0a4,
    ),
    (
        "stratified:second=none,interval=5000,threshold=1%",
        "zipf0.8",
        0x308f6523bc030570,
    ),
    (
        "stratified:second=none,interval=5000,threshold=1%",
        "zipf1.2",
        0xa73ed783b5701bb1,
    ),
    (
        "stratified:second=none,interval=5000,threshold=1%",
        "noisy",
        0x4ad3d510becf3ba8,
    ),
    (
        "stratified:second=none,interval=5000,threshold=1%",
        "edges",
        0x72c082855ecffc58,
    ),
    (
        "stratified:second=none,interval=5000,threshold=1%",
        "mixed",
        0x4d01bb997c842fa4,
    ),
    (
        "stratified:sampler=H[CR_16]_64,interval=5000,threshold=1%",
        "zipf0.8",
        0x293df214ce82493f,
    ),
    (
        "stratified:sampler=H[CR_16]_64,interval=5000,threshold=1%",
        "zipf1.2",
        0x2e4e5e0975db0cdd,
    ),
    (
        "stratified:sampler=H[CR_16]_64,interval=5000,threshold=1%",
        "noisy",
        0x01716b866a6bd921,
    ),
    (
        "stratified:sampler=H[CR_16]_64,interval=5000,threshold=1%",
        "edges",
        0x48433cb1e5c4eb1e,
    ),
    (
        "stratified:sampler=H[CR_16]_64,interval=5000,threshold=1%",
        "mixed",
        0x4bf2d1b33cda99ff,
    ),
    (
        "stratified:sampler=H[H[P_8]_16]_12,interval=5000,threshold=1%",
        "zipf0.8",
        0x39c0a7c2944a15fb,
    ),
    (
        "stratified:sampler=H[H[P_8]_16]_12,interval=5000,threshold=1%",
        "zipf1.2",
        0x274bbda3c2258e68,
    ),
    (
        "stratified:sampler=H[H[P_8]_16]_12,interval=5000,threshold=1%",
        "noisy",
        0x60a488b9a28f9667,
    ),
    (
        "stratified:sampler=H[H[P_8]_16]_12,interval=5000,threshold=1%",
        "edges",
        0x631feade56b645b2,
    ),
    (
        "stratified:sampler=H[H[P_8]_16]_12,interval=5000,threshold=1%",
        "mixed",
        0x9590cd6bfd65bc1f,
    ),
    (
        "stratified:sampler=R_32,interval=5000,threshold=1%",
        "zipf0.8",
        0x823af8585a3c0612,
    ),
    (
        "stratified:sampler=R_32,interval=5000,threshold=1%",
        "zipf1.2",
        0xb739fe63364aa396,
    ),
    (
        "stratified:sampler=R_32,interval=5000,threshold=1%",
        "noisy",
        0x8b8ad8ff63f5f3bf,
    ),
    (
        "stratified:sampler=R_32,interval=5000,threshold=1%",
        "edges",
        0xb7912490bbab1584,
    ),
    (
        "stratified:sampler=R_32,interval=5000,threshold=1%",
        "mixed",
        0x634b25fb5069d1b5,
    ),
    (
        "tagged:interval=5000,threshold=1%",
        "zipf0.8",
        0x25d6eeafd102d9c7,
    ),
    (
        "tagged:interval=5000,threshold=1%",
        "zipf1.2",
        0x1314291ef4da66b0,
    ),
    (
        "tagged:interval=5000,threshold=1%",
        "noisy",
        0xdaadb6dcbb6c530c,
    ),
    (
        "tagged:interval=5000,threshold=1%",
        "edges",
        0x746c6c51ae1153a3,
    ),
    (
        "tagged:interval=5000,threshold=1%",
        "mixed",
        0x40a0246d4c3c20ff,
    ),
    (
        "rap:interval=5000,threshold=1%",
        "zipf0.8",
        0xdc243d2f39c036a2,
    ),
    (
        "rap:interval=5000,threshold=1%",
        "zipf1.2",
        0x58f6de1c94fc443b,
    ),
    (
        "rap:interval=5000,threshold=1%",
        "noisy",
        0x87edd40ee21b2e17,
    ),
    (
        "rap:interval=5000,threshold=1%",
        "edges",
        0xb0c6b61def8af68c,
    ),
    (
        "rap:interval=5000,threshold=1%",
        "mixed",
        0x283893eac3fe6ed5,
    ),
    (
        "rap:buffer=0,interval=5000,threshold=1%",
        "zipf0.8",
        0xb07da490feadd9e7,
    ),
    (
        "rap:buffer=0,interval=5000,threshold=1%",
        "zipf1.2",
        0xfe86df2a6b19815a,
    ),
    (
        "rap:buffer=0,interval=5000,threshold=1%",
        "noisy",
        0xbd494583845efccd,
    ),
    (
        "rap:buffer=0,interval=5000,threshold=1%",
        "edges",
        0x331fcefbb78bc99e,
    ),
    (
        "rap:buffer=0,interval=5000,threshold=1%",
        "mixed",
        0x7c8ba40733a1053a,
    ),
    (
        "rap:reset=on,interval=5000,threshold=1%",
        "zipf0.8",
        0x04a51d1b26f7416a,
    ),
    (
        "rap:reset=on,interval=5000,threshold=1%",
        "zipf1.2",
        0x55624b05af506c92,
    ),
    (
        "rap:reset=on,interval=5000,threshold=1%",
        "noisy",
        0xfeafba9bcf4de971,
    ),
    (
        "rap:reset=on,interval=5000,threshold=1%",
        "edges",
        0x834f5d581999a0a3,
    ),
    (
        "rap:reset=on,interval=5000,threshold=1%",
        "mixed",
        0x50e7df0d9b5005d5,
    ),
    (
        "rap:dims=2,branching=16,interval=5000,threshold=1%",
        "zipf0.8",
        0x396bdd5e526b72dd,
    ),
    (
        "rap:dims=2,branching=16,interval=5000,threshold=1%",
        "zipf1.2",
        0x4b26ac15ec280b58,
    ),
    (
        "rap:dims=2,branching=16,interval=5000,threshold=1%",
        "noisy",
        0xd521c7e2832925f9,
    ),
    (
        "rap:dims=2,branching=16,interval=5000,threshold=1%",
        "edges",
        0xa40dd5931ca37f77,
    ),
    (
        "rap:dims=2,branching=16,interval=5000,threshold=1%",
        "mixed",
        0xd0a079fc59c4347d,
    ),
    (
        "conte:scheme=twolevel,interval=5000,threshold=1%",
        "zipf0.8",
        0xcbf29ce484222325,
    ),
    (
        "conte:scheme=twolevel,interval=5000,threshold=1%",
        "zipf1.2",
        0xcbf29ce484222325,
    ),
    (
        "conte:scheme=twolevel,interval=5000,threshold=1%",
        "noisy",
        0xcbf29ce484222325,
    ),
    (
        "conte:scheme=twolevel,interval=5000,threshold=1%",
        "edges",
        0x3470c481e74582c9,
    ),
    (
        "conte:scheme=twolevel,interval=5000,threshold=1%",
        "mixed",
        0x46905d534159ad89,
    ),
    (
        "perfect:interval=5000,threshold=1%",
        "zipf0.8",
        0xa5a4fde28ae9944a,
    ),
    (
        "perfect:interval=5000,threshold=1%",
        "zipf1.2",
        0x55f77020507001b7,
    ),
    (
        "perfect:interval=5000,threshold=1%",
        "noisy",
        0xec076c910562928e,
    ),
    (
        "perfect:interval=5000,threshold=1%",
        "edges",
        0x885bf9444ab9351d,
    ),
    (
        "perfect:interval=5000,threshold=1%",
        "mixed",
        0xd042d7f7f178b71d,
    ),
];

#[test]
fn candidate_lists_match_the_recorded_golden_hashes() {
    let print = std::env::var_os("GOLDEN_PRINT").is_some();
    let bless = std::env::var_os("TOYVM_BLESS").is_some_and(|v| v == "1");
    let streams = streams();
    let mut bad = Vec::new();
    let mut table = String::new();
    for spec in SPECS {
        for (name, stream) in &streams {
            let got = golden(spec, stream);
            if print {
                println!("    ({spec:?}, {name:?}, {got:#018x}),");
            }
            table += &format!(
                "    (\n        {spec:?},\n        {name:?},\n        {got:#018x},\n    ),\n"
            );
            match GOLDEN.iter().find(|(s, n, _)| s == spec && n == name) {
                Some((_, _, want)) if *want == got => {}
                Some((_, _, want)) => bad.push(format!("{spec} on {name}: {got:#x} != {want:#x}")),
                None => bad.push(format!("{spec} on {name}: no golden value")),
            }
        }
    }
    if bless && !bad.is_empty() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden.rs");
        let src = std::fs::read_to_string(path).unwrap();
        let open = "const GOLDEN: &[(&str, &str, u64)] = &[\n";
        let start = src.find(open).unwrap() + open.len();
        let end = start + src[start..].find("\n];\n").unwrap() + 1;
        std::fs::write(path, format!("{}{table}{}", &src[..start], &src[end..])).unwrap();
        eprintln!("blessed:\n{}", bad.join("\n"));
        return;
    }
    assert!(
        bad.is_empty(),
        "{}\n(TOYVM_BLESS=1 to record the current values)",
        bad.join("\n")
    );
}

/// The specialized batch loops against the per-tuple `observe` path (which is the
/// unspecialized model) for shapes the golden list does not pin: every table count the
/// fast path handles, with and without conservative update and reset, over counters
/// padded to either span (4,096 and 65,536 slots).
#[test]
fn batch_ingest_equals_per_tuple_observe() {
    let streams = streams();
    for (tables, per_table) in (1..=4).flat_map(|n| [(n, 512), (n, 8192)]) {
        for opts in [
            "cu=on",
            "cu=off",
            "cu=on,reset=on",
            "cu=off,reset=on,retain=off",
        ] {
            let spec = format!(
                "multihash:tables={tables},entries={},{opts},interval=5000,threshold=1%",
                per_table * tables
            );
            let spec = parse_spec(&spec).unwrap();
            for (name, stream) in &streams {
                let (mut batch, mut single) = (spec.build(), spec.build());
                for chunk in stream.chunks(5000) {
                    batch.observe_batch(chunk);
                    chunk.iter().for_each(|t| single.observe(*t));
                    assert_eq!(
                        batch.end_interval(),
                        single.end_interval(),
                        "{spec} on {name}"
                    );
                }
            }
        }
    }
}

/// Each of the multi-hash options changes what a model reports on a stream that
/// stresses it (small tables, many aliasing tuples, hot tuples that persist across
/// intervals), so the golden list pins options that really act.
#[test]
fn shielding_reset_and_retaining_each_change_the_output() {
    // Persistent hot tuples (retaining carries them over; shielding keeps their
    // counts out of the tables) over a wide, aliasing tail.
    let mut stream = noisy_zipf_stream(60_000, 30_000, 0.9, 0.4, 91);
    for (i, t) in stream.iter_mut().enumerate() {
        if i % 5 == 0 {
            *t = Tuple::value(0x9_0000_0000 + (i as u64 % 7) * 4, 1);
        }
    }
    let base = "multihash:tables=2,entries=256,interval=5000,threshold=0.5%";
    let want = golden(base, &stream);
    for option in ["shield=off", "reset=on", "retain=off"] {
        let got = golden(&format!("{base},{option}"), &stream);
        assert_ne!(got, want, "{option} changed nothing");
    }
}
