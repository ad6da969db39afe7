//! What a generated program's stream holds: per-interval tuples, distinct
//! tuples and hot tuples per kind, measured by running it.

use std::collections::HashSet;
use std::fmt::Write as _;

use serde::Serialize;
use toyvm_profiler::perfect::Perfect;
use toyvm_profiler::{Kind, Tuple};
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::{KindSet, Program, TupleSink};

use toyvm::Result;

/// Per-interval means for one kind of tuple (or all of them).
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindStats {
    /// Tuples per interval.
    pub tuples: f64,
    /// Distinct tuples per interval.
    pub distinct: f64,
    /// Candidates (count at or above the threshold) per interval.
    pub hot: f64,
    /// Share of the interval's tuples covered by its top 1% distinct tuples
    /// (at least one).
    pub top1_share: f64,
}

/// What the perfect profiler sees in a run: means over its intervals.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StreamStats {
    /// Interval length in tuples.
    pub interval: u64,
    /// Candidate threshold as a fraction of the interval (0.01: 1%).
    pub threshold: f64,
    /// The same threshold as a count of tuples per interval (at least 1):
    /// a tuple seen this many times in an interval is a candidate.
    pub threshold_count: u64,
    /// Tuples in the run, every kind.
    pub tuples: u64,
    /// Intervals measured: the full ones; the partial last one only when
    /// there is no full one. The means below are over these.
    pub intervals: u64,
    /// Every kind together.
    pub all: KindStats,
    /// Value tuples only.
    pub value: KindStats,
    /// Edge tuples only.
    pub edge: KindStats,
    /// Call tuples only.
    pub call: KindStats,
    /// Candidates per interval at lower thresholds: `(threshold, mean)`.
    pub hot_at: Vec<(f64, f64)>,
    /// Mean share of an interval's candidates that were not candidates in
    /// the interval before (0: a fixed hot set; 1: a new hot set every
    /// interval), averaged over the intervals after the first that have a
    /// candidate.
    pub hot_change: f64,
    /// The largest such share of any one interval, in `0.0..=1.0`.
    pub hot_change_max: f64,
    /// The start of the program's output (at most
    /// [`crate::suite::OUTPUT_PREFIX_BYTES`] bytes, lossily UTF-8).
    pub output: String,
    /// The length of the program's output, in bytes.
    pub output_bytes: u64,
    /// FNV-1a 64 of the program's output, as 16 hex digits.
    pub output_fnv1a64: String,
}

/// Lower thresholds `describe` also counts candidates at.
const LOWER_THRESHOLDS: [f64; 4] = [0.005, 0.001, 0.0005, 0.0001];

/// Sums of per-interval figures, made means by [`Counter::finish`].
#[derive(Debug)]
struct Counter {
    model: Perfect,
    interval: u64,
    threshold: u64,
    seen: u64,
    stats: StreamStats,
    previous: Option<HashSet<Tuple>>,
    changes: u64,
}

impl Counter {
    fn end(&mut self) {
        let counts = self.model.end_interval_all();
        let n = self.seen;
        self.seen = 0;
        if n < self.interval {
            // The partial last interval counts only when it is the only one.
            if self.stats.intervals > 0 {
                return;
            }
        }
        let st = &mut self.stats;
        st.intervals += 1;
        let kinds = [None, Some(Kind::Value), Some(Kind::Edge), Some(Kind::Call)];
        for (i, kind) in kinds.into_iter().enumerate() {
            let mut c: Vec<u64> = counts
                .iter()
                .filter(|(t, _)| kind.is_none_or(|k| t.kind == k))
                .map(|(_, n)| *n)
                .collect();
            c.sort_unstable_by(|a, b| b.cmp(a));
            let total: u64 = c.iter().sum();
            let top = c.len().div_ceil(100).max(1).min(c.len());
            let ks = match i {
                0 => &mut st.all,
                1 => &mut st.value,
                2 => &mut st.edge,
                _ => &mut st.call,
            };
            ks.tuples += total as f64;
            ks.distinct += c.len() as f64;
            ks.hot += c.iter().take_while(|&&x| x >= self.threshold).count() as f64;
            if total > 0 {
                ks.top1_share += c[..top].iter().sum::<u64>() as f64 / total as f64;
            }
        }
        for (th, sum) in st.hot_at.iter_mut() {
            let at = toyvm_profiler::contract::threshold_count(*th, self.interval);
            *sum += counts.values().filter(|&&x| x >= at).count() as f64;
        }
        let hot: HashSet<Tuple> = Perfect::candidates_of(&counts, self.threshold)
            .into_iter()
            .map(|c| c.tuple)
            .collect();
        if let Some(prev) = &self.previous
            && !hot.is_empty()
        {
            let new = hot.iter().filter(|t| !prev.contains(t)).count() as f64 / hot.len() as f64;
            st.hot_change += new;
            st.hot_change_max = st.hot_change_max.max(new);
            self.changes += 1;
        }
        self.previous = Some(hot);
    }

    fn finish(mut self) -> StreamStats {
        if self.seen > 0 {
            self.end();
        }
        let mut st = self.stats;
        let n = st.intervals.max(1) as f64;
        for ks in [&mut st.all, &mut st.value, &mut st.edge, &mut st.call] {
            ks.tuples /= n;
            ks.distinct /= n;
            ks.hot /= n;
            ks.top1_share /= n;
        }
        for (_, sum) in st.hot_at.iter_mut() {
            *sum /= n;
        }
        st.hot_change /= self.changes.max(1) as f64;
        st
    }
}

impl TupleSink for Counter {
    fn accept(&mut self, batch: &[toyvm_vm::Tuple]) {
        self.stats.tuples += batch.len() as u64;
        let mut rest = batch;
        while !rest.is_empty() {
            let room = (self.interval - self.seen).min(rest.len() as u64) as usize;
            toyvm_profiler::Profiler::observe_batch(&mut self.model, &rest[..room]);
            self.seen += room as u64;
            rest = &rest[room..];
            if self.seen == self.interval {
                self.end();
            }
        }
    }
}

/// Runs `program` (interpreted) under the perfect profiler with intervals of
/// `interval` tuples and a candidate threshold `threshold` (a fraction of
/// the interval), and measures the stream: per interval, distinct tuples,
/// the share the top 1% of them cover, and the candidates, overall and per
/// kind; candidates at lower thresholds; and how much the candidate set
/// changes from one interval to the next.
pub fn describe(
    program: &Program,
    args: &[i64],
    interval: u64,
    threshold: f64,
) -> Result<StreamStats> {
    if interval == 0 {
        return Err(toyvm::Error::Usage(
            "the interval must be at least 1 tuple".into(),
        ));
    }
    if !(threshold > 0.0 && threshold <= 1.0) {
        return Err(toyvm::Error::Usage(format!(
            "the threshold {threshold} must be a fraction in (0, 1]"
        )));
    }
    // Linked before it runs, as every command does.
    toyvm::runtime::no_imports(program)?;
    let spec = toyvm_profiler::parse_spec(&format!(
        "perfect:interval={interval},threshold={threshold}"
    ))?;
    let mut counter = Counter {
        threshold: spec.threshold_count(),
        model: Perfect::new(spec.clone()),
        interval: spec.interval,
        seen: 0,
        stats: StreamStats {
            interval: spec.interval,
            threshold: spec.threshold,
            threshold_count: spec.threshold_count(),
            hot_at: LOWER_THRESHOLDS
                .iter()
                .filter(|&&t| t < spec.threshold)
                .map(|&t| (t, 0.0))
                .collect(),
            ..StreamStats::default()
        },
        previous: None,
        changes: 0,
    };
    // The output is reduced as it streams: a program may print gigabytes.
    let mut out = crate::suite::Digest::default();
    let cfg = Config {
        kinds: KindSet::ALL,
        ..Config::default()
    };
    interp::run_with_sink(
        program,
        Input { args, file: &[] },
        &mut out,
        &mut counter,
        &cfg,
    )?;
    let mut st = counter.finish();
    st.output = String::from_utf8_lossy(out.prefix()).into_owned();
    st.output_bytes = out.bytes();
    st.output_fnv1a64 = format!("{:016x}", out.fnv1a64());
    Ok(st)
}

fn pct(x: f64) -> String {
    let p = 100.0 * x;
    if p == 0.0 || p >= 1.0 {
        format!("{p:.0}%")
    } else {
        format!("{}%", (p * 1000.0).round() / 1000.0)
    }
}

impl StreamStats {
    /// The report `toyvm synth --describe` prints.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} tuples, {} intervals of {} measured, threshold {} ({} tuples)",
            self.tuples,
            self.intervals,
            self.interval,
            pct(self.threshold),
            self.threshold_count
        );
        let _ = writeln!(
            s,
            "per interval (mean)        all     value      edge      call"
        );
        let kinds = [&self.all, &self.value, &self.edge, &self.call];
        let row = |name: &str, f: &dyn Fn(&KindStats) -> String| {
            let cells: Vec<String> = kinds.iter().map(|k| format!("{:>9}", f(k))).collect();
            format!("{name:<20}{}\n", cells.join(" "))
        };
        s += &row("tuples", &|k| format!("{:.0}", k.tuples));
        s += &row("distinct tuples", &|k| format!("{:.1}", k.distinct));
        s += &row("top 1% share", &|k| format!("{:.3}", k.top1_share));
        s += &row(&format!("hot at {}", pct(self.threshold)), &|k| {
            format!("{:.1}", k.hot)
        });
        if !self.hot_at.is_empty() {
            let at: Vec<String> = self
                .hot_at
                .iter()
                .map(|(t, n)| format!("{} {:.1}", pct(*t), n))
                .collect();
            let _ = writeln!(s, "hot at lower thresholds: {}", at.join(", "));
        }
        let _ = writeln!(
            s,
            "hot set change: {:.3} of an interval's hot tuples were not hot in the one before (max {:.3})",
            self.hot_change, self.hot_change_max
        );
        let first = self.output.lines().next().unwrap_or("").trim_end();
        if self.output_bytes > 0 {
            let shown: String = first.chars().take(72).collect();
            if shown.len() as u64 + 1 >= self.output_bytes {
                let _ = writeln!(s, "output: {shown}");
            } else {
                let _ = writeln!(
                    s,
                    "output: {shown} ... ({} bytes in all, FNV-1a 64 {})",
                    self.output_bytes, self.output_fnv1a64
                );
            }
        }
        s
    }
}
