//! A model's steady-state cost per tuple, for callgrind: `warm` passes over a Zipf stream
//! (or `edges`), then `passes` more inside `measured`, the only function whose
//! instructions a toggled run collects:
//!
//! `valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*ingest_steady::measured*'
//! target/release/examples/ingest_steady 0.8 rap 200000 24 3`
//!
//! Instructions per tuple are the run's total over `passes * len`. The defaults match
//! `cargo bench --bench ingest`'s Zipf stream (200,000 tuples over 100,000 keys, one
//! driver over every pass); 24 warm passes bring RAP past its merge at 4.19M events and
//! its next is at 8.39M, so three measured passes hold no merge.
//!
//! `cargo run --release -p toyvm-profiler --example ingest_steady -- [s|edges] [spec] [len] [warm] [passes]`

use std::time::Instant;
use toyvm_profiler::synth::{program_edges, zipf_stream};
use toyvm_profiler::{IntervalDriver, Tuple, parse_spec};

fn pass(d: &mut IntervalDriver, stream: &[Tuple], intervals: &mut u64) {
    d.observe_batch(stream, |_| *intervals += 1);
}

#[inline(never)]
fn measured(d: &mut IntervalDriver, stream: &[Tuple], passes: usize, intervals: &mut u64) {
    for _ in 0..passes {
        pass(d, stream, intervals);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "0.8".to_string());
    let spec = args.next().unwrap_or_else(|| "rap".to_string());
    let mut num =
        |default: usize| -> usize { args.next().map_or(default, |s| s.parse().expect("a count")) };
    let (len, warm, passes) = (num(200_000).max(1), num(24), num(3));
    let stream = match which.parse::<f64>() {
        Ok(s) => zipf_stream(len, 100_000, s, 42),
        Err(_) => program_edges(len, 24, 40, 17),
    };
    let spec = parse_spec(&spec).expect("spec");
    let mut d = IntervalDriver::new(&spec);
    let mut intervals = 0;
    for _ in 0..warm {
        pass(&mut d, &stream, &mut intervals);
    }
    let start = Instant::now();
    measured(&mut d, &stream, passes, &mut intervals);
    let tuples = (passes * len).max(1);
    let ns = start.elapsed().as_nanos() as f64 / tuples as f64;
    println!(
        "{ns:>8.1} ns/tuple over {tuples} tuples after {warm} passes  {intervals:>5} intervals  {spec}"
    );
}
