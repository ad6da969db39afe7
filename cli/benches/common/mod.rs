//! What the whole-program harnesses (`versus`, `wasm_versus`) share: the
//! command line (`[FILTER]`, `TOYVM_BENCH_RUNS`), timing a whole process,
//! the order of contenders in a round, and the statistics (median and
//! range, per-round ratios, geometric means). Each concept is here once.

use std::process::{Command, Output};
use std::time::Instant;

/// The benchmark-name filter: the first argument that is not a flag.
pub fn filter() -> Option<String> {
    std::env::args().skip(1).find(|a| !a.starts_with('-'))
}

/// Whether flag `name` (e.g. `--check`) is among the arguments.
#[allow(dead_code, reason = "one harness reads flags, the other none")]
pub fn flag(name: &str) -> bool {
    std::env::args().skip(1).any(|a| a == name)
}

/// Rounds per benchmark: `TOYVM_BENCH_RUNS`, default 5.
pub fn runs() -> usize {
    std::env::var("TOYVM_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// Runs `cmd` to its end; its wall time in seconds and what it gave.
pub fn time_output(cmd: &mut Command) -> (f64, Output) {
    let start = Instant::now();
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} does not start: {e}"));
    (start.elapsed().as_secs_f64(), out)
}

/// Runs `cmd`, which must succeed; its wall time and its stdout, trimmed.
#[allow(dead_code, reason = "one harness checks exit statuses itself")]
pub fn time(cmd: &mut Command) -> (f64, String) {
    let (secs, out) = time_output(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (secs, String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The contenders' order in round `round` of `n` contenders: each round
/// starts one further along, so no contender always runs first or right
/// after another, and per-round ratios compare runs made moments apart.
pub fn rotated(round: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| (round + k) % n)
}

/// Sorts `v` and returns its median.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The geometric mean of positive figures.
pub fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// A sample's median and range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest figure.
    pub min: f64,
    /// The largest figure.
    pub max: f64,
    /// How many figures.
    pub n: usize,
}

impl Spread {
    /// The spread of `v` (`None` when it is empty).
    pub fn of(v: &[f64]) -> Option<Spread> {
        if v.is_empty() {
            return None;
        }
        let mut s = v.to_vec();
        let median = median(&mut s);
        Some(Spread {
            median,
            min: s[0],
            max: s[s.len() - 1],
            n: s.len(),
        })
    }

    /// The spread of the ratios of runs made in the same round
    /// (`num[i] / den[i]`): a host whose speed drifts over the run moves
    /// both.
    pub fn of_rounds(num: &[f64], den: &[f64]) -> Option<Spread> {
        let r: Vec<f64> = num.iter().zip(den).map(|(a, b)| a / b).collect();
        Spread::of(&r)
    }

    /// `median [min-max]`, three decimals (seconds in the tables).
    pub fn cell(&self) -> String {
        format!("{:.3} [{:.3}-{:.3}]", self.median, self.min, self.max)
    }

    /// `median M, range A-B over N rounds`, two decimals (ratios).
    pub fn ratio_text(&self) -> String {
        format!(
            "median {:.2}, range {:.2}-{:.2} over {} rounds",
            self.median, self.min, self.max, self.n
        )
    }
}

/// The per-round ratio rows of `pairs` (numerator, denominator column
/// names) for one benchmark whose columns are `columns` and whose runs
/// per column are `times`; pairs with a column absent or not run are left
/// out.
pub fn paired_rows(
    bench: &str,
    columns: &[String],
    times: &[Vec<f64>],
    pairs: &[(&str, &str)],
) -> Vec<String> {
    let col = |name: &str| columns.iter().position(|c| c == name);
    pairs
        .iter()
        .filter_map(|&(num, den)| {
            let s = Spread::of_rounds(&times[col(num)?], &times[col(den)?])?;
            Some(format!(
                "{bench:<9} {num:>19} / {den:<19} {}",
                s.ratio_text()
            ))
        })
        .collect()
}
