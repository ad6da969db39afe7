//! Ingest cost per tuple of every model, beside an exact `HashMap` counter and the
//! `heavykeeper` crate sized to the multi-hash model's state, on Zipf streams (s = 0.8 and
//! 1.2), a program-like edge stream, and a recorded trace (`TOYVM_TRACE=path`, text or
//! binary; the group is skipped with a note when unset).  Before timing, each group prints
//! every model's precision and recall against the perfect profiler at that memory.
//!
//! `cargo bench -p toyvm-profiler --bench ingest -- --warm-up-time 1 --measurement-time 2`
//! Criterion reports time per batch and elements/s; ns per tuple is 1000 / (Melem/s).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use heavykeeper::TopK;
use std::collections::HashMap;
use std::hint::black_box;
use toyvm_profiler::evaluation::profile_stream;
use toyvm_profiler::synth::{program_edges, zipf_stream};
use toyvm_profiler::{IntervalDriver, TraceReader, Tuple, parse_spec};

const INTERVAL: u64 = 10_000;
const THRESHOLD: f64 = 0.01;

fn specs() -> Vec<(&'static str, String)> {
    let l = format!("interval={INTERVAL},threshold=1%");
    vec![
        ("multihash", format!("multihash:tables=4,entries=2048,{l}")),
        ("singlehash", format!("singlehash:{l}")),
        ("stratified", format!("stratified:{l}")),
        ("stratified_no_A16", format!("stratified:second=none,{l}")),
        ("tagged", format!("tagged:{l}")),
        ("rap_buffer64", format!("rap:buffer=64,eps=1%,{l}")),
        ("rap_nobuffer", format!("rap:buffer=0,eps=1%,{l}")),
        ("conte_twolevel", format!("conte:scheme=twolevel,{l}")),
        ("perfect", format!("perfect:{l}")),
    ]
}

/// HeavyKeeper sized to the multi-hash model's modeled state (2K 24-bit counters plus a
/// 100-entry accumulator of 20 bytes = 8,144 bytes): k = 100 and two rows of 16-byte
/// buckets filling the rest (a heap entry is counted as a 32-byte tuple-plus-count).
fn heavykeeper() -> TopK<Tuple> {
    let bytes = 2048 * 3 + 100 * 20;
    let depth = 2;
    let width = (bytes - 100 * 32) / (depth * 16);
    TopK::with_seed(100, width, depth, 0.9, 7)
}

/// Precision and recall of HeavyKeeper's per-interval top-k (count >= threshold).
fn heavykeeper_quality(stream: &[Tuple]) -> (f64, f64) {
    let t = (THRESHOLD * INTERVAL as f64) as u64;
    let (mut tp, mut fp, mut fneg) = (0u64, 0u64, 0u64);
    for chunk in stream.chunks(INTERVAL as usize) {
        let mut hk = heavykeeper();
        let mut exact: HashMap<Tuple, u64> = HashMap::new();
        for x in chunk {
            hk.add(x, 1);
            *exact.entry(*x).or_default() += 1;
        }
        let reported: Vec<Tuple> = hk
            .list()
            .into_iter()
            .filter(|n| n.count >= t)
            .map(|n| n.item)
            .collect();
        for r in &reported {
            if exact.get(r).copied().unwrap_or(0) >= t {
                tp += 1
            } else {
                fp += 1
            }
        }
        fneg += exact
            .iter()
            .filter(|(k, c)| **c >= t && !reported.contains(k))
            .count() as u64;
    }
    let ratio = |a: u64, b: u64| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    (ratio(tp, tp + fp), ratio(tp, tp + fneg))
}

fn print_quality(name: &str, stream: &[Tuple]) {
    println!(
        "\n== {name}: {} tuples, interval {INTERVAL}, threshold 1%",
        stream.len()
    );
    for (label, spec) in specs() {
        let spec = parse_spec(&spec).unwrap();
        let r = profile_stream(stream.iter().map(|t| Ok(*t)), std::slice::from_ref(&spec)).unwrap();
        let s = &r.models[0].summary;
        println!(
            "  {label:<18} precision {:.3}  recall {:.3}  error {:>7.2}%  state {:>8} B  messages {}",
            s.errors.precision,
            s.errors.recall,
            100.0 * s.errors.error,
            s.state_bytes,
            s.messages
        );
    }
    let (p, r) = heavykeeper_quality(stream);
    println!(
        "  {:<18} precision {p:.3}  recall {r:.3}  (equal memory: {} B)",
        "heavykeeper",
        heavykeeper().mem_bytes(|_| 0)
    );
    println!(
        "  {:<18} precision 1.000  recall 1.000  (exact, unbounded memory)",
        "hashmap"
    );
}

fn bench_stream(c: &mut Criterion, name: &str, stream: &[Tuple]) {
    print_quality(name, stream);
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Elements(stream.len() as u64));
    for (label, spec) in specs() {
        let spec = parse_spec(&spec).unwrap();
        let mut driver = IntervalDriver::new(&spec);
        g.bench_function(BenchmarkId::new("model", label), |b| {
            b.iter(|| {
                driver.observe_batch(black_box(stream), |e| {
                    black_box(e.candidates.len());
                })
            })
        });
    }
    g.bench_function(BenchmarkId::new("baseline", "hashmap"), |b| {
        b.iter(|| {
            let mut m: HashMap<Tuple, u64> = HashMap::new();
            for chunk in stream.chunks(INTERVAL as usize) {
                m.clear();
                for t in chunk {
                    *m.entry(*t).or_default() += 1;
                }
                black_box(m.len());
            }
        })
    });
    g.bench_function(BenchmarkId::new("baseline", "heavykeeper"), |b| {
        b.iter(|| {
            for chunk in stream.chunks(INTERVAL as usize) {
                let mut hk = heavykeeper();
                for t in chunk {
                    hk.add(t, 1);
                }
                black_box(hk.list().len());
            }
        })
    });
    g.finish();
}

fn ingest(c: &mut Criterion) {
    for s in [0.8, 1.2] {
        let stream = zipf_stream(200_000, 100_000, s, 42);
        bench_stream(c, &format!("zipf_s{s}"), &stream);
    }
    bench_stream(c, "program_edges", &program_edges(200_000, 24, 40, 17));
    match std::env::var("TOYVM_TRACE") {
        Ok(path) => {
            let stream: Vec<Tuple> = TraceReader::open(&path)
                .and_then(|r| r.take(2_000_000).collect())
                .unwrap_or_else(|e| panic!("TOYVM_TRACE={path}: {e}"));
            bench_stream(c, "recorded_trace", &stream);
        }
        Err(_) => println!("\nnote: TOYVM_TRACE is not set; skipping the recorded-trace group"),
    }
}

criterion_group!(benches, ingest);
criterion_main!(benches);
