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
//! use toyvm_lab::synth::{self, Knobs};
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
use std::fmt::{self, Write as _};

use serde::Serialize;
use toyvm_profiler::hash::SplitMix64;
use toyvm_vm::interp::{self, Config, Input};

use toyvm::{Error, Result};

mod cli;
mod stats;

pub use cli::{SynthArgs, run};
pub use stats::{KindStats, StreamStats, describe};

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
        let int = || {
            toyvm::vm::parse_int(value)
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(bad)
        };
        let real = || value.parse::<f64>().map_err(|_| bad());
        match key {
            "seed" => {
                self.seed = toyvm::vm::parse_int(value)
                    .and_then(|v| u64::try_from(v).ok())
                    .ok_or_else(bad)?;
            }
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

fn data_lines(out: &mut impl fmt::Write, addr: usize, words: &[i64]) {
    for (i, row) in words.chunks(32).enumerate() {
        let row: Vec<String> = row.iter().map(i64::to_string).collect();
        let _ = writeln!(out, ".data {}: {}", addr + 32 * i, row.join(", "));
    }
}

/// Writes the program for `knobs` to `s`, without its expected output;
/// returns where in the text the expected output (`#>` lines) goes.
fn write_program<W: fmt::Write>(k: &Knobs, s: &mut Text<W>) -> usize {
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
    let expect_at = s.len;
    let _ = writeln!(
        s,
        ".memory {memory}                 # SCHED at {sched_at}, VAL at {val_at}, TT at {tt_at}"
    );
    let _ = s.write_char('\n');

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

    let _ = s.write_str("# SCHED: item ranks (Zipf-weighted), -1 marks a cold draw\n");
    data_lines(s, sched_at, &sched);
    let _ = writeln!(
        s,
        "# VAL: the dominant value {dominant} in {dom_words} of {VAL_WORDS} words"
    );
    data_lines(s, val_at, &val);
    let _ = writeln!(
        s,
        "# TT: call-target offsets 0..{}, offset t in proportion to 1/(t+1)",
        k.targets
    );
    data_lines(s, tt_at, &tt);

    expect_at
}

/// Writes the program for `knobs`: text assembly with its knobs, seed,
/// default arguments and expected output (`#>`) in the header. The text is
/// assembled, verified and run once at the default argument before it is
/// returned.
pub fn generate(knobs: &Knobs) -> Result<String> {
    let g = Generated::new(knobs)?;
    let mut text = g.text;
    text.insert_str(g.expect_at, &g.expect);
    Ok(text)
}

/// A generated program, checked, ready to be written: [`generate`]'s text
/// without a second copy of it (what `toyvm synth` writes as it goes).
#[derive(Clone, Debug)]
pub struct Generated {
    text: String,
    expect_at: usize,
    expect: String,
}

impl Generated {
    /// Generates and checks the program for `knobs` (see [`generate`]).
    pub fn new(knobs: &Knobs) -> Result<Generated> {
        let (text, expect_at, expect) = build(knobs)?;
        Ok(Generated {
            text,
            expect_at,
            expect,
        })
    }

    /// Writes the program, its expected output in its header, and flushes
    /// `out`.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        out.write_all(&self.text.as_bytes()[..self.expect_at])?;
        out.write_all(self.expect.as_bytes())?;
        out.write_all(&self.text.as_bytes()[self.expect_at..])?;
        out.flush()
    }
}

/// The most bytes a generated program may have: what every command reads
/// of a program file ([`crate::files::MAX_FILE_BYTES`]).
pub const MAX_PROGRAM_BYTES: u64 = crate::files::MAX_FILE_BYTES;

/// Room left in [`MAX_PROGRAM_BYTES`] for the expected output's lines.
const EXPECT_ROOM: u64 = 256;

/// The program's size in bytes for `knobs` (without its expected output),
/// measured by writing it nowhere: nothing is held.
pub fn program_bytes(knobs: &Knobs) -> Result<u64> {
    knobs.check()?;
    let mut counter = Text { w: Nowhere, len: 0 };
    write_program(knobs, &mut counter);
    Ok(counter.len as u64)
}

/// The text without its expected output, where that goes, and the
/// expected output (checked by assembling, verifying and running the text
/// at the default argument). Knobs whose program `toyvm run` would refuse
/// (over [`MAX_PROGRAM_BYTES`]) are refused before the text is made.
fn build(knobs: &Knobs) -> Result<(String, usize, String)> {
    let bytes = program_bytes(knobs)?;
    if bytes + EXPECT_ROOM > MAX_PROGRAM_BYTES {
        return Err(Error::Usage(format!(
            "synth: these knobs make a program of {bytes} bytes, over the {MAX_PROGRAM_BYTES} \
             bytes `toyvm run` reads: give fewer --functions, --blocks or --phases (or a \
             smaller --hot)"
        )));
    }
    let mut s = Text {
        w: String::with_capacity(bytes as usize),
        len: 0,
    };
    let expect_at = write_program(knobs, &mut s);
    let text = s.w;
    let program = toyvm_vm::asm::assemble(&text)?;
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
    drop(program);
    let expect: String = String::from_utf8_lossy(&out)
        .lines()
        .map(|l| format!("#> {l}\n"))
        .collect();
    Ok((text, expect_at, expect))
}

/// A text being written, and its length so far.
struct Text<W> {
    w: W,
    len: usize,
}

impl<W: fmt::Write> fmt::Write for Text<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.len += s.len();
        self.w.write_str(s)
    }
}

/// Text written nowhere (to measure it).
struct Nowhere;

impl fmt::Write for Nowhere {
    fn write_str(&mut self, _: &str) -> fmt::Result {
        Ok(())
    }
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
