//! Synthetic workloads: text-assembly programs whose tuple stream has the
//! properties a set of knobs asks for, and a measurement of what a program's
//! stream really looks like to the perfect profiler.
//!
//! [`generate`] writes a program from [`Knobs`]; the same knobs (seed
//! included) always give the same text. `toyvm synth` is its command line
//! and `toyvm synth --describe FILE` runs [`describe`].
//!
//! # The generated program
//!
//! `main(n)` runs `n` iterations of a driver loop. Each iteration draws a
//! few numbers from a 64-bit LCG kept in a register (no tuples) and:
//!
//! 1. loads an item *rank* from the schedule `SCHED[j]`, `j` uniform: the
//!    table holds rank `r` (of `hot`) in proportion to `1 / (r + 1)^zipf`,
//!    so the ranks are drawn from that Zipf law, plus a share `noise` of
//!    entries marking a cold draw;
//! 2. turns the rank into an item `m = phase * hot + rank`, or for a cold
//!    draw into one of a large cold set picked uniformly (branch-free);
//! 3. loads a value `v` from `VAL[k]`, `k` uniform, where the dominant value
//!    fills a share `value_share` of the table, and a call-target offset
//!    from `TT`, where offset `t` (of `targets`) has a share proportional
//!    to `1 / (t + 1)`; a cold draw also perturbs `v` into a fresh value;
//! 4. calls worker function `m % functions` through its function value
//!    (`fref` + arithmetic + `calli`) with `(m, v, offset)`.
//!
//! A worker dispatches with a `jtab` to its block `(m / functions) %
//! blocks`; every block branches on whether `v` is the dominant value, then
//! makes an indirect call (`calli`) to leaf `(offset + rotation) % leaves`,
//! passing `v`. The worker's result folds into a checksum that `main`
//! prints at the end. With `work = W > 0` every block first runs an inner
//! loop of `W` iterations (three arithmetic instructions and the `loop`
//! back edge, one edge tuple per iteration): the item's share of the
//! program's instructions grows with `W`, and compiling the item's loop
//! pays. `work = 0` writes no loop.
//!
//! The driver loop is written once per phase (`phases + 1` copies, run one
//! after the other for `n / (phases + 1)` iterations each), so every phase
//! has its own load and call pcs and its own items (`phase * hot ..`): the
//! hot set moves `phases` times.
//!
//! One hot iteration emits 12 tuples: 3 loads, the worker's call and its 3
//! arguments, the `jtab` edge, the value branch, the leaf's call and its
//! argument, the loop edge. Of those, the schedule load, the worker's first
//! argument and (while items map to distinct blocks, `hot <= functions *
//! blocks`) the `jtab` edge, the block's dominant branch edge and its
//! dominant call target belong to one item: about five tuples per hot item,
//! each with about `1/12` of the item's share of iterations. The rest are a
//! few dozen tuples shared by all items. A cold iteration adds three tuples
//! that never repeat (the item argument, the perturbed value as an argument
//! of the worker and of the leaf). Measure rather than trust this: see
//! [`describe`].
//!
//! ```
//! use toyvm::synth::{self, Knobs};
//!
//! let knobs = Knobs { seed: 7, hot: 32, phases: 1, ..Knobs::default() };
//! let text = synth::generate(&knobs)?;
//! assert!(text.contains("# synth: seed=7 "));
//! assert_eq!(text, synth::generate(&knobs)?, "deterministic");
//! let program = toyvm::vm::asm::assemble(&text)?;
//! let stats = synth::describe(&program, &[5000], 10_000, 0.01)?;
//! assert!(stats.all.distinct > 50.0);
//! # Ok::<(), toyvm::Error>(())
//! ```

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use toyvm_profiler::hash::SplitMix64;
use toyvm_profiler::perfect::Perfect;
use toyvm_profiler::{Kind, Tuple};
use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::{KindMask, Program, TupleSink};

use crate::{Error, Result};

/// Words in the value table `VAL` (a power of two: indexed by LCG bits).
const VAL_WORDS: usize = 1024;
/// Words in the call-target table `TT` (a power of two).
const TT_WORDS: usize = 256;
/// Schedule entries marking a cold draw.
const COLD_MARK: i64 = -1;
/// Items of the cold set, and where they start (above every hot item).
const COLD_ITEMS: i64 = 1 << 20;
const COLD_BASE: i64 = 1 << 24;
/// Multiplier and increment of the program's LCG (Knuth's MMIX constants).
const LCG_A: u64 = 6_364_136_223_846_793_005;
const LCG_C: u64 = 1_442_695_040_888_963_407;

/// What the generated stream should look like. See the module doc for how
/// each knob is realized.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Knobs {
    /// Seeds the generator (constants, rotations, values) and the
    /// program's own LCG.
    pub seed: u64,
    /// Worker functions.
    pub functions: u32,
    /// Blocks per worker function.
    pub blocks: u32,
    /// Hot items per phase.
    pub hot: u32,
    /// Skew of the hot items: item `i` gets a share proportional to
    /// `1 / i^zipf` (0: uniform).
    pub zipf: f64,
    /// Targets per indirect call site in the blocks.
    pub targets: u32,
    /// Share of the dominant value at the value load and the arguments.
    pub value_share: f64,
    /// How many times the hot set moves over the run.
    pub phases: u32,
    /// Share of iterations that run a cold item.
    pub noise: f64,
    /// Iterations of each block's inner loop (0: none).
    pub work: u32,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            seed: 1,
            functions: 16,
            blocks: 8,
            hot: 64,
            zipf: 1.0,
            targets: 2,
            value_share: 0.9,
            phases: 0,
            noise: 0.0,
            work: 0,
        }
    }
}

impl Knobs {
    /// Every knob as `(flag name, value)`, in one order: what the header
    /// and the regenerating command both print.
    fn pairs(&self) -> [(&'static str, String); 10] {
        [
            ("seed", self.seed.to_string()),
            ("functions", self.functions.to_string()),
            ("blocks", self.blocks.to_string()),
            ("hot", self.hot.to_string()),
            ("zipf", self.zipf.to_string()),
            ("targets", self.targets.to_string()),
            ("value-share", self.value_share.to_string()),
            ("phases", self.phases.to_string()),
            ("noise", self.noise.to_string()),
            ("work", self.work.to_string()),
        ]
    }

    /// Sets the knob named as its flag (`hot`, `value-share`, ...) from
    /// text; the knobs are checked when a program is generated.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let bad = || Error::Usage(format!("synth: `{key}={value}`: not a valid value"));
        let int = || value.replace('_', "").parse::<u32>().map_err(|_| bad());
        let real = || value.parse::<f64>().map_err(|_| bad());
        match key {
            "seed" => self.seed = value.replace('_', "").parse().map_err(|_| bad())?,
            "functions" => self.functions = int()?,
            "blocks" => self.blocks = int()?,
            "hot" => self.hot = int()?,
            "zipf" => self.zipf = real()?,
            "targets" => self.targets = int()?,
            "value-share" | "value_share" => self.value_share = real()?,
            "phases" => self.phases = int()?,
            "noise" => self.noise = real()?,
            "work" => self.work = int()?,
            _ => {
                let known: Vec<&str> = self.pairs().iter().map(|p| p.0).collect();
                return Err(Error::Usage(format!(
                    "synth: unknown knob `{key}` (knobs: {})",
                    known.join(", ")
                )));
            }
        }
        Ok(())
    }

    /// The header line that records the knobs (`# synth: seed=... ...`).
    pub fn header(&self) -> String {
        let parts: Vec<String> = self
            .pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parts.join(" ")
    }

    /// The command line that regenerates the program.
    pub fn command(&self) -> String {
        let mut cmd = String::from("toyvm synth");
        for (k, v) in self.pairs() {
            cmd += &format!(" --{k} {v}");
        }
        cmd
    }

    fn check(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Usage(format!("synth: {what}")));
        if !(1..=4096).contains(&self.functions) {
            return bad("--functions must be in 1..=4096");
        }
        if !(1..=1024).contains(&self.blocks) {
            return bad("--blocks must be in 1..=1024");
        }
        if !(1..=16384).contains(&self.hot) {
            return bad("--hot must be in 1..=16384");
        }
        if !(0.0..=8.0).contains(&self.zipf) {
            return bad("--zipf must be in 0..=8");
        }
        if !(1..=64).contains(&self.targets) {
            return bad("--targets must be in 1..=64");
        }
        if !(0.0..=1.0).contains(&self.value_share) {
            return bad("--value-share must be in 0..=1");
        }
        if self.phases > 1000 {
            return bad("--phases must be at most 1000");
        }
        if !(0.0..=1.0).contains(&self.noise) {
            return bad("--noise must be in 0..=1");
        }
        if self.work > 100_000 {
            return bad("--work must be at most 100000");
        }
        Ok(())
    }

    /// Schedule entries: a power of two, about 16 per hot item, within
    /// 4096..=65536 (beyond 4096 hot items the Zipf tail is rounded up to
    /// one entry per item).
    fn schedule_words(&self) -> usize {
        (16 * self.hot as usize)
            .next_power_of_two()
            .clamp(4096, 65536)
    }

    /// Leaf functions the blocks' call sites choose among.
    fn leaves(&self) -> u32 {
        self.targets.max(8)
    }
}

/// Splits `total` slots among weights, proportionally (largest remainder),
/// giving every weight at least one slot when there are enough.
fn apportion(weights: &[f64], total: usize) -> Vec<usize> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || total == 0 || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let floor = usize::from(total >= weights.len());
    let quota: Vec<f64> = weights.iter().map(|w| w / sum * total as f64).collect();
    let mut count: Vec<usize> = quota
        .iter()
        .map(|q| (q.floor() as usize).max(floor))
        .collect();
    let mut have: usize = count.iter().sum();
    // Too few: the largest remainders get one more each.
    let mut by_rest: Vec<usize> = (0..weights.len()).collect();
    by_rest.sort_by(|&a, &b| {
        let (ra, rb) = (quota[a] - quota[a].floor(), quota[b] - quota[b].floor());
        rb.total_cmp(&ra).then(a.cmp(&b))
    });
    for &i in by_rest.iter().cycle() {
        if have >= total {
            break;
        }
        count[i] += 1;
        have += 1;
    }
    // Too many (the floor of one lifted small weights): take from the
    // largest counts.
    while have > total {
        let i = (0..count.len())
            .max_by_key(|&i| (count[i], std::cmp::Reverse(i)))
            .expect("non-empty");
        count[i] -= 1;
        have -= 1;
    }
    count
}

fn data_lines(out: &mut String, addr: usize, words: &[i64]) {
    for (i, row) in words.chunks(32).enumerate() {
        let row: Vec<String> = row.iter().map(i64::to_string).collect();
        let _ = writeln!(out, ".data {}: {}", addr + 32 * i, row.join(", "));
    }
}

/// Writes the program for `knobs`: text assembly with its knobs, seed,
/// default arguments and expected output (`#>`) in the header. The text is
/// assembled, verified and run once at the default argument before it is
/// returned.
pub fn generate(knobs: &Knobs) -> Result<String> {
    knobs.check()?;
    let k = knobs;
    let mut rng = SplitMix64::new(k.seed ^ 0x7379_6e74_685f_746f);
    let (f_n, b_n, h_n, l_n) = (k.functions, k.blocks, k.hot as i64, k.leaves());
    let t_words = k.schedule_words();
    let t_bits = t_words.trailing_zeros();
    let sched_at = 0usize;
    let val_at = t_words;
    let tt_at = val_at + VAL_WORDS;
    let memory = tt_at + TT_WORDS;

    // SCHED: rank r in proportion to 1/(r+1)^zipf, then the cold marks.
    let cold = ((k.noise * t_words as f64).round() as usize).min(t_words);
    let weights: Vec<f64> = (0..h_n)
        .map(|r| 1.0 / ((r + 1) as f64).powf(k.zipf))
        .collect();
    let mut sched = Vec::with_capacity(t_words);
    for (r, c) in apportion(&weights, t_words - cold).into_iter().enumerate() {
        sched.extend(std::iter::repeat_n(r as i64, c));
    }
    sched.resize(t_words, COLD_MARK);

    // VAL: the dominant value, then distinct rare values (all below 2^20,
    // so a cold draw's perturbation, at least 2^20, never meets them).
    let dominant = 1 + rng.below(999) as i64;
    let dom_words = (k.value_share * VAL_WORDS as f64).round() as usize;
    let mut val = vec![dominant; dom_words];
    let mut seen: HashSet<i64> = HashSet::from([dominant]);
    while val.len() < VAL_WORDS {
        let v = 1000 + rng.below((1 << 20) - 1000) as i64;
        if seen.insert(v) {
            val.push(v);
        }
    }

    // TT: target offset t in proportion to 1/(t+1).
    let t_weights: Vec<f64> = (0..k.targets).map(|t| 1.0 / f64::from(t + 1)).collect();
    let mut tt = Vec::with_capacity(TT_WORDS);
    for (t, c) in apportion(&t_weights, TT_WORDS).into_iter().enumerate() {
        tt.extend(std::iter::repeat_n(t as i64, c));
    }

    let mut s = String::new();
    let _ = writeln!(
        s,
        "# A synthetic workload written by `toyvm synth` (src/synth.rs, whose module doc\n\
         # describes the program): main(n) runs n iterations; each draws an item from a\n\
         # Zipf-weighted schedule (or, with the noise share, a cold item), loads a value\n\
         # with a dominant one and a call-target offset, and calls the item's worker, which\n\
         # jumps to the item's block; the block branches on the value and calls a leaf\n\
         # through a polymorphic `calli`. The hot set moves at each phase boundary. Prints a\n\
         # checksum of every worker's result."
    );
    let _ = writeln!(s, "# synth: {}", k.header());
    let _ = writeln!(s, "# regenerate: {} -o FILE", k.command());
    let _ = writeln!(s, "# args: 10000");
    let expect_at = s.len();
    let _ = writeln!(
        s,
        ".memory {memory}                 # SCHED at {sched_at}, VAL at {val_at}, TT at {tt_at}"
    );
    s.push('\n');

    // main: the per-phase driver loops.
    let phases = k.phases + 1;
    let _ = writeln!(
        s,
        ".func main(n)\n    .reg x, a, c, acc, i, lim, seg, endp, rank, m, v, off, cold, t, t2, w, r"
    );
    let _ = writeln!(
        s,
        "    lk a, {}\n    lk c, {}\n    lk x, {}\n    fref w, w0\n    li acc, 0\n    li i, 0\n    li endp, 0\n    divi seg, n, {phases}",
        LCG_A as i64,
        LCG_C as i64,
        rng.next_u64() as i64
    );
    let step = "    mul x, x, a\n    add x, x, c\n";
    for p in 0..phases {
        let base = i64::from(p) * h_n;
        let _ = writeln!(s, "# phase {p}: items {base}..{}", base + h_n);
        if p + 1 == phases {
            let _ = writeln!(s, "    mov endp, n");
        } else {
            let _ = writeln!(s, "    add endp, endp, seg");
        }
        let _ = writeln!(
            s,
            "    bge i, endp, skip{p}\n    subi lim, endp, 1\ntop{p}:"
        );
        let _ = write!(
            s,
            "{step}    ushri t, x, {}\n    ld rank, t, {sched_at}          # the item's rank (or -1: cold)\n",
            64 - t_bits
        );
        let _ = write!(
            s,
            "{step}    ushri t, x, 54\n    ld v, t, {val_at}            # value locality\n"
        );
        let _ = write!(
            s,
            "{step}    ushri t, x, 56\n    ld off, t, {tt_at}          # call-target offset\n"
        );
        // m = rank + base, or for a cold draw (rank = -1) COLD_BASE + u % COLD_ITEMS.
        let _ = write!(
            s,
            "{step}    ushri t, x, 24\n    lti cold, rank, 0\n    remi t2, t, {COLD_ITEMS}\n    addi m, t2, {}\n    mul m, m, cold\n    add m, m, rank\n    addi m, m, {base}\n",
            COLD_BASE - base + 1
        );
        // A cold draw also gets a fresh value: v + (2^20 | 20 random bits).
        let _ = write!(
            s,
            "    andi t, t, 0xFFFFF\n    ori t, t, 0x100000\n    mul t, t, cold\n    add v, v, t\n"
        );
        let _ = write!(
            s,
            "    remi t, m, {f_n}\n    add t, t, w\n    calli r, t, m, 3\n    muli acc, acc, 31\n    add acc, acc, r\n    loop i, lim, top{p}\nskip{p}:\n"
        );
    }
    let _ = writeln!(
        s,
        "    putn acc\n    li t, 10\n    putc t\n    li t, 0\n    ret t\n.end\n"
    );

    // The workers.
    for f in 0..f_n {
        let _ = writeln!(s, ".func w{f}(m, v, off)\n    .reg b, t, g, r, lf, c, cl");
        let labels: Vec<String> = (0..b_n).map(|b| format!("b{b}")).collect();
        let _ = writeln!(
            s,
            "    fref lf, leaf0\n    divi b, m, {f_n}\n    remi b, b, {b_n}\n    jtab b, [{}]\n    li t, 0\n    ret t",
            labels.join(", ")
        );
        for b in 0..b_n {
            let c1 = 3 + rng.below(1000) as i64;
            let c2 = rng.below(1 << 16) as i64;
            let rot = rng.below(u64::from(l_n));
            let (work, rare) = match rng.below(3) {
                0 => (format!("muli t, m, {c1}"), "add t, t, v"),
                1 => (
                    format!("shli t, m, {}\n    addi t, t, {c1}", c1 % 13),
                    "sub t, t, v",
                ),
                _ => (
                    format!("xori t, m, {c2}\n    muli t, t, {c1}"),
                    "xor t, t, v",
                ),
            };
            let inner = if k.work > 0 {
                format!(
                    "\n    li c, 0\n    li cl, {}\nb{b}w:\n    muli t, t, {}\n    addi t, t, {c1}\n    xor t, t, c\n    loop c, cl, b{b}w",
                    k.work,
                    1 + 2 * rng.below(1000)
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "b{b}:\n    {work}{inner}\n    bnei v, {dominant}, b{b}r\n    xori t, t, {c2}\n    jmp b{b}c\nb{b}r:\n    {rare}\nb{b}c:\n    addi g, off, {rot}\n    remi g, g, {l_n}\n    add g, g, lf\n    calli r, g, v, 1\n    add t, t, r\n    ret t"
            );
        }
        let _ = writeln!(s, ".end\n");
    }
    for l in 0..l_n {
        let _ = writeln!(
            s,
            ".func leaf{l}(x)\n    .reg t\n    muli t, x, {}\n    addi t, t, {}\n    ret t\n.end\n",
            1 + 2 * rng.below(500),
            rng.below(1 << 20)
        );
    }

    s.push_str("# SCHED: item ranks (Zipf-weighted), -1 marks a cold draw\n");
    data_lines(&mut s, sched_at, &sched);
    let _ = writeln!(
        s,
        "# VAL: the dominant value {dominant} in {dom_words} of {VAL_WORDS} words"
    );
    data_lines(&mut s, val_at, &val);
    let _ = writeln!(
        s,
        "# TT: call-target offsets 0..{}, offset t in proportion to 1/(t+1)",
        k.targets
    );
    data_lines(&mut s, tt_at, &tt);

    // Check the program and record its output at the default argument.
    let program = toyvm_vm::asm::assemble(&s)?;
    let mut out = Vec::new();
    interp::run(
        &program,
        Input {
            args: &[10_000],
            file: &[],
        },
        &mut out,
        &Config::default(),
    )?;
    let expect: String = String::from_utf8_lossy(&out)
        .lines()
        .map(|l| format!("#> {l}\n"))
        .collect();
    s.insert_str(expect_at, &expect);
    Ok(s)
}

/// The arguments a program's header gives (`# args: ...`), if any.
pub fn header_args(text: &str) -> Option<Vec<i64>> {
    text.lines()
        .take_while(|l| l.trim_start().starts_with('#'))
        .find_map(|l| {
            l.trim_start()
                .trim_start_matches('#')
                .trim()
                .strip_prefix("args:")
        })
        .map(|a| {
            a.split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect()
        })
}

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
    /// Candidate threshold as a fraction of the interval, and as a count.
    pub threshold: f64,
    pub threshold_count: u64,
    /// Tuples in the run, and intervals measured (the full ones; the
    /// partial last one only when there is no full one).
    pub tuples: u64,
    pub intervals: u64,
    /// Every kind together, then value, edge and call tuples.
    pub all: KindStats,
    pub value: KindStats,
    pub edge: KindStats,
    pub call: KindStats,
    /// Candidates per interval at lower thresholds: `(threshold, mean)`.
    pub hot_at: Vec<(f64, f64)>,
    /// Mean share of an interval's candidates that were not candidates in
    /// the interval before (0: a fixed hot set), and the largest such share.
    pub hot_change: f64,
    pub hot_change_max: f64,
    /// The program's output.
    pub output: String,
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
    scratch: Vec<Tuple>,
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
            let at = toyvm_profiler::profiler::threshold_count(*th, self.interval);
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
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.extend(batch.iter().map(crate::record::to_profiler));
        let mut rest = &scratch[..];
        while !rest.is_empty() {
            let room = (self.interval - self.seen).min(rest.len() as u64) as usize;
            toyvm_profiler::Profiler::observe_batch(&mut self.model, &rest[..room]);
            self.seen += room as u64;
            rest = &rest[room..];
            if self.seen == self.interval {
                self.end();
            }
        }
        self.scratch = scratch;
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
    let spec = toyvm_profiler::parse_spec(&format!(
        "perfect:interval={interval},threshold={threshold}"
    ))?;
    let mut counter = Counter {
        threshold: spec.threshold_count(),
        model: Perfect::new(spec.clone()),
        interval: spec.interval,
        seen: 0,
        scratch: Vec::new(),
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
    let mut out = Vec::new();
    let cfg = Config {
        kinds: KindMask::ALL,
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
    st.output = String::from_utf8_lossy(&out).into_owned();
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
        let out = self.output.trim_end();
        if !out.is_empty() {
            let _ = writeln!(s, "output: {}", out.lines().next().unwrap_or(""));
        }
        s
    }
}

/// `toyvm synth`: generate a program, or describe one.
#[derive(clap::Args, Clone, Debug)]
pub struct SynthArgs {
    /// Seed of the generator and of the program's random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker functions (code size).
    #[arg(long, default_value_t = 16)]
    pub functions: u32,
    /// Blocks per worker function (code size).
    #[arg(long, default_value_t = 8)]
    pub blocks: u32,
    /// Hot items per phase (each brings about five distinct tuples: edges,
    /// values and call targets).
    #[arg(long, default_value_t = 64)]
    pub hot: u32,
    /// Skew of the hot items: the i-th gets a share proportional to 1/i^S.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    pub zipf: f64,
    /// Targets per indirect call site, the t-th with a share proportional
    /// to 1/t.
    #[arg(long, default_value_t = 2)]
    pub targets: u32,
    /// Share of the dominant value at the value load and the arguments.
    #[arg(long, value_name = "P", default_value_t = 0.9)]
    pub value_share: f64,
    /// How many times the hot set moves over the run.
    #[arg(long, default_value_t = 0)]
    pub phases: u32,
    /// Share of iterations that run a cold, rarely repeated item.
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub noise: f64,
    /// Iterations of an inner loop in every block (0: none): work that
    /// compiled code speeds up, one edge tuple per iteration.
    #[arg(long, value_name = "W", default_value_t = 0)]
    pub work: u32,
    /// Where to write the program (standard output without it).
    #[arg(short, long, value_name = "FILE.tasm", conflicts_with = "describe")]
    pub output: Option<PathBuf>,
    /// Instead of generating, run FILE under the perfect profiler and
    /// report its tuple stream's statistics.
    #[arg(long, value_name = "FILE")]
    pub describe: Option<PathBuf>,
    /// Arguments of the described program (default: its `# args:` line).
    #[arg(allow_negative_numbers = true, requires = "describe")]
    pub args: Vec<i64>,
    /// Interval length in tuples for `--describe`.
    #[arg(long, default_value_t = 10_000, requires = "describe")]
    pub interval: u64,
    /// Candidate threshold for `--describe`: `1%` or `0.01`.
    #[arg(long, default_value = "1%", requires = "describe")]
    pub threshold: String,
    /// Print the description as JSON.
    #[arg(long, requires = "describe")]
    pub json: bool,
}

impl SynthArgs {
    /// The generator's knobs.
    pub fn knobs(&self) -> Knobs {
        Knobs {
            seed: self.seed,
            functions: self.functions,
            blocks: self.blocks,
            hot: self.hot,
            zipf: self.zipf,
            targets: self.targets,
            value_share: self.value_share,
            phases: self.phases,
            noise: self.noise,
            work: self.work,
        }
    }
}

/// Runs `toyvm synth`; returns the exit status or a message.
pub fn run(args: &SynthArgs) -> std::result::Result<u8, String> {
    if let Some(file) = &args.describe {
        let text = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let program = Program::load_any(&text).map_err(|e| format!("{}: {e}", file.display()))?;
        let call_args = if args.args.is_empty() {
            header_args(&String::from_utf8_lossy(&text)).unwrap_or_default()
        } else {
            args.args.clone()
        };
        let threshold = args
            .threshold
            .strip_suffix('%')
            .map_or_else(
                || args.threshold.parse(),
                |p| p.parse().map(|p: f64| p / 100.0),
            )
            .map_err(|_| format!("--threshold `{}` is not a fraction", args.threshold))?;
        let st = describe(&program, &call_args, args.interval, threshold)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        if args.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&st).expect("stats serialize")
            );
        } else {
            print!("{}", st.to_text());
        }
        return Ok(0);
    }
    let text = generate(&args.knobs()).map_err(|e| e.to_string())?;
    match &args.output {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))?,
        None => print!("{text}"),
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apportion_is_exact_and_gives_everyone_a_slot() {
        let w: Vec<f64> = (1..=10).map(|i| 1.0 / f64::from(i)).collect();
        let c = apportion(&w, 100);
        assert_eq!(c.iter().sum::<usize>(), 100);
        assert!(c.windows(2).all(|p| p[0] >= p[1]), "{c:?}");
        let c = apportion(&[1.0; 5], 3);
        assert_eq!(c.iter().sum::<usize>(), 3);
        let c = apportion(&[100.0, 1e-9, 1e-9], 3);
        assert_eq!(c, [1, 1, 1]);
    }

    #[test]
    fn header_args_are_read() {
        assert_eq!(header_args("# x\n# args: 12 3\n.func"), Some(vec![12, 3]));
        assert_eq!(header_args(".func main\n# args: 1"), None);
    }
}
