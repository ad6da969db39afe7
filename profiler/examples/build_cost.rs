//! What a model costs before it has seen a stream: build it from its spec, hand it a
//! few tuples, end the interval and drop it, `runs` times per spec (what a short
//! `Runtime::run` pays for its model, issue 38 section 2):
//! `cargo run --release -p toyvm-profiler --example build_cost -- [spec;spec...] [runs] [tuples]`.
//!
//! Timings on a shared machine are noise; count instructions instead, e.g.
//! `valgrind --tool=callgrind target/release/examples/build_cost multihash 1000`
//! (the instructions of the whole run over `runs`: the start-up of the process is
//! a few hundred thousand).

use std::time::Instant;
use toyvm_profiler::synth::program_edges;
use toyvm_profiler::{IntervalDriver, parse_specs};

fn main() {
    let mut args = std::env::args().skip(1);
    let specs = args
        .next()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "multihash;singlehash;stratified;tagged;rap;conte;perfect".to_string());
    let runs: usize = args.next().map_or(10_000, |s| s.parse().expect("runs"));
    let tuples: usize = args.next().map_or(2, |s| s.parse().expect("tuples"));
    let stream = program_edges(tuples.max(1), 4, 8, 1);
    let stream = &stream[..tuples];
    for spec in parse_specs(&specs).expect("specs") {
        let mut intervals = 0u64;
        let start = Instant::now();
        for _ in 0..runs {
            let mut d = IntervalDriver::new(&spec);
            d.observe_batch(stream, |_| intervals += 1);
            d.finish(|_| intervals += 1);
            std::hint::black_box(&d);
        }
        let us = start.elapsed().as_secs_f64() * 1e6 / runs.max(1) as f64;
        println!("{us:>9.2} us/run  {intervals:>6} intervals  {spec}");
    }
}
