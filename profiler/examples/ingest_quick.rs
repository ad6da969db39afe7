//! Quick ns-per-tuple figures (best of 7 passes over 1M tuples) for every model on a Zipf stream, without criterion:
//! `cargo run --release -p toyvm-profiler --example ingest_quick -- [s|edges] [spec;spec...] [len] [batch]`.
//! A short `len` (e.g. 100000) makes a small run for `valgrind --tool=callgrind`.
//! The stream goes to the driver as one batch unless `batch` is given (e.g. 1024, the
//! VM's `BATCH`, or 4096, the runtime's buffer): the driver checks a batch's kinds before
//! the model reads it, so with one 24 MB batch both read the stream from memory, while a
//! runtime's batches are still in cache for the model.

use std::time::Instant;
use toyvm_profiler::synth::{program_edges, zipf_stream};
use toyvm_profiler::{IntervalDriver, parse_specs};

fn main() {
    let mut args = std::env::args().skip(1);
    // A Zipf exponent, or `edges` for the program-like edge stream.
    let which = args.next().unwrap_or_else(|| "0.8".to_string());
    let specs = args.next().unwrap_or_else(|| {
        "multihash;singlehash;stratified;tagged;rap;rap:buffer=0;perfect".to_string()
    });
    let len: usize = args
        .next()
        .map_or(1_000_000, |s| s.parse().expect("len"))
        .max(1);
    let batch: usize = args
        .next()
        .map_or(len, |s| s.parse().expect("batch"))
        .max(1);
    let stream = match which.parse::<f64>() {
        Ok(s) => zipf_stream(len, 100_000, s, 42),
        Err(_) => program_edges(len, 24, 40, 17),
    };
    for spec in parse_specs(&specs).expect("specs") {
        let mut d = IntervalDriver::new(&spec);
        let mut intervals = 0;
        for b in stream[..len.min(100_000)].chunks(batch) {
            d.observe_batch(b, |_| {});
        }
        // The best of several passes: the machine may be shared.
        let mut ns = f64::INFINITY;
        for _ in 0..7 {
            let start = Instant::now();
            for b in stream.chunks(batch) {
                d.observe_batch(b, |_| intervals += 1);
            }
            ns = ns.min(start.elapsed().as_nanos() as f64 / stream.len() as f64);
        }
        let bytes = d.models().next().map_or(0, |m| m.state_bytes());
        println!("{ns:>8.1} ns/tuple  {bytes:>9} B  {intervals:>4} intervals  {spec}");
    }
}
