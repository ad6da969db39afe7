//! The generator: a terminating program from a [`Source`] of choices (see
//! the parent module for what it exercises).

use std::fmt::Write as _;

use super::{FuzzProgram, Source};

/// Words of memory every program has at the start (its length, `.memlen`
/// in bytes); `mgrow` can double it.
const MEMORY: i64 = 64;
/// The capacity, in words.
const CAPACITY: i64 = 2 * MEMORY;
/// Cells 0..48 are data (stores stay there); 48..56 hold values that stay
/// constant for a long time; 56..60 hold function values.
const SLOW_CELLS: i64 = 48;
const FN_CELLS: i64 = 56;

/// Main's register layout.
const N: u8 = 0;
const I: u8 = 1;
const LIMIT: u8 = 2;
const MAIN_DATA: [u8; 9] = [3, 4, 5, 6, 7, 8, 9, 10, 11];
const MAIN_SLOW: [u8; 4] = [12, 13, 14, 15];
const SLOTS: [u8; 3] = [16, 17, 18];
/// Loop counters and limits by nesting depth: (counter, limit).
const COUNTERS: [(u8, u8); 2] = [(19, 20), (21, 22)];
const ARGS: u8 = 24;
const T0: u8 = 28;
const T1: u8 = 29;
/// Holds 0, for absolute addresses.
const ZERO: u8 = 30;

#[derive(Clone, Debug)]
struct Func {
    name: String,
    arity: u8,
}

/// What a function body may read, write and call.
struct Ctx<'a> {
    data: &'a [u8],
    /// Readable, written only at phase changes.
    slow: &'a [u8],
    /// The hot loop's counter and its iteration count, in main.
    phase: Option<(u8, i64)>,
    slots: &'a [(u8, u8)],
    callees: &'a [Func],
    /// Function-value cells `calli` may load from: (address, arity).
    cells: &'a [(i64, u8)],
    /// Innermost counted loop nesting left, and the largest limit.
    loops: usize,
    max_trip: i64,
    /// Rare traps (out of bounds, division by zero, bad calls) allowed.
    traps: bool,
    /// The program imports the fuzz host's functions ([`super::HOST`]):
    /// statements may call them with `hcall`.
    host: bool,
}

struct Gen<'s> {
    src: &'s mut dyn Source,
    label: u32,
}

impl Gen<'_> {
    /// A choice in `0..n` (0 when `n <= 1`).
    fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let mut v = 0u64;
        let mut span = n - 1;
        while span > 0 {
            v = (v << 8) | self.src.byte() as u64;
            span >>= 8;
        }
        v % n
    }

    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// True with probability `pct`% (false on a zero byte).
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) >= 100 - pct
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// An access's offset: with traps, 15% of the time one of `bad` (out
    /// of bounds, or near the end); otherwise one of `lo..=hi`.
    fn offset(&mut self, ctx: &Ctx<'_>, bad: &[i64], lo: i64, hi: i64) -> i64 {
        if ctx.traps && self.chance(15) {
            self.pick(bad)
        } else {
            self.range(lo, hi)
        }
    }

    fn label(&mut self) -> String {
        self.label += 1;
        format!("L{}", self.label)
    }

    /// An immediate: mostly small, sometimes an edge value.
    fn imm(&mut self) -> i64 {
        match self.below(8) {
            0..=4 => self.range(-9, 20),
            5 => self.pick(&[63, 64, 65, 127, -1, -64, 1 << 20]),
            6 => self.pick(&[i32::MIN as i64, i32::MAX as i64, 255, 256, 1000]),
            _ => self.range(-1000, 1000),
        }
    }

    fn reg(&mut self, ctx: &Ctx<'_>) -> u8 {
        self.pick(ctx.data)
    }

    /// A readable register: data, slow, or the loop counter.
    fn src(&mut self, ctx: &Ctx<'_>) -> u8 {
        match self.below(6) {
            0 if !ctx.slow.is_empty() => self.pick(ctx.slow),
            1 if ctx.phase.is_some() => ctx.phase.unwrap().0,
            _ => self.reg(ctx),
        }
    }

    fn body(&mut self, ctx: &Ctx<'_>, out: &mut String, stmts: u64) {
        for _ in 0..stmts {
            self.stmt(ctx, out);
        }
    }

    fn stmt(&mut self, ctx: &Ctx<'_>, out: &mut String) {
        const OPS: [&str; 16] = [
            "add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "ushr", "eq",
            "ne", "lt", "le", "ltu",
        ];
        const OPS_I: [&str; 16] = [
            "addi", "subi", "muli", "divi", "remi", "andi", "ori", "xori", "shli", "shri", "ushri",
            "eqi", "nei", "lti", "lei", "ltui",
        ];
        let (d, a, b) = (self.reg(ctx), self.src(ctx), self.src(ctx));
        if ctx.host && self.chance(15) {
            self.hcall(ctx, out, d);
            return;
        }
        match self.below(46) {
            40..=45 => self.wasm_stmt(ctx, out, d, a, b),
            0..=9 => {
                let op = self.pick(&OPS);
                if matches!(op, "div" | "rem") && !(ctx.traps && self.chance(30)) {
                    // A divisor that is never 0 but can be -1.
                    let _ = writeln!(out, "  ori r{T0}, r{b}, 1\n  {op} r{d}, r{a}, r{T0}");
                } else {
                    let _ = writeln!(out, "  {op} r{d}, r{a}, r{b}");
                }
            }
            10..=17 => {
                let op = self.pick(&OPS_I);
                let mut k = self.imm();
                if matches!(op, "divi" | "remi") && k == 0 && !(ctx.traps && self.chance(20)) {
                    k = -1;
                }
                let _ = writeln!(out, "  {op} r{d}, r{a}, {k}");
            }
            18..=19 => {
                // Edge values: i64::MIN, -1, 0 and large shift counts.
                match self.below(4) {
                    0 => {
                        let _ = writeln!(out, "  lk r{d}, {}", i64::MIN);
                    }
                    1 => {
                        let _ = writeln!(out, "  li r{d}, -1");
                    }
                    2 => {
                        let _ = writeln!(out, "  lk r{d}, {}", i64::MIN);
                        let _ = writeln!(out, "  li r{T0}, -1");
                        let op = self.pick(&["div", "rem"]);
                        let _ = writeln!(out, "  {op} r{d}, r{d}, r{T0}");
                    }
                    _ => {
                        let op = self.pick(&["shl", "shr", "ushr"]);
                        let k = self.pick(&[63, 64, 65, 100, 127, -1, 1000]);
                        let _ = writeln!(out, "  li r{T0}, {k}\n  {op} r{d}, r{a}, r{T0}");
                    }
                }
            }
            20..=23 => self.load(ctx, out, d, a),
            24..=26 => self.store(ctx, out, a, b),
            27..=29 => self.fork(ctx, out),
            30..=31 => self.jtab(ctx, out),
            32..=33 if ctx.loops > 0 => self.inner_loop(ctx, out),
            34..=35 if !ctx.callees.is_empty() => {
                let f = &ctx.callees[self.below(ctx.callees.len() as u64) as usize];
                self.stage_args(ctx, out, f.arity);
                let _ = writeln!(out, "  call r{d}, {}, r{ARGS}, {}", f.name, f.arity);
            }
            36..=37 if !ctx.slots.is_empty() || !ctx.cells.is_empty() => self.calli(ctx, out, d),
            38 if ctx.phase.is_some() => {
                // Output now and then.
                let (i, _) = ctx.phase.unwrap();
                let skip = self.label();
                let mask = self.pick(&[0, 7, 63]);
                let _ = writeln!(out, "  andi r{T0}, r{i}, {mask}\n  bnei r{T0}, 0, {skip}");
                if self.chance(50) {
                    let _ = writeln!(out, "  putn r{a}");
                } else {
                    let _ = writeln!(out, "  addi r{T0}, r{a}, 'a'\n  putc r{T0}");
                }
                let _ = writeln!(out, "{skip}:");
            }
            38 if ctx.phase.is_none() && self.chance(60) => {
                // In a leaf or helper: output (or a halt) on a data-dependent
                // path, now and then. A function without stores then bails
                // there when it runs natively (see `toyvm_optimizer::native`).
                let skip = self.label();
                let mask = self.pick(&[1, 7, 63]);
                let _ = writeln!(out, "  andi r{T0}, r{a}, {mask}\n  bnei r{T0}, 0, {skip}");
                match self.below(if ctx.traps { 5 } else { 3 }) {
                    0 => {
                        let _ = writeln!(out, "  putn r{b}");
                    }
                    1 => {
                        let _ = writeln!(
                            out,
                            "  andi r{T0}, r{b}, 31\n  addi r{T0}, r{T0}, 'A'\n  putc r{T0}"
                        );
                    }
                    2 if !ctx.slots.is_empty() || !ctx.cells.is_empty() => self.calli(ctx, out, d),
                    2 => {
                        let _ = writeln!(out, "  inlen r{d}");
                    }
                    3 => {
                        let _ = writeln!(out, "  halt r{b}");
                    }
                    _ => {
                        let code = self.range(0, 6);
                        let _ = writeln!(out, "  trap {code}");
                    }
                }
                let _ = writeln!(out, "{skip}:");
            }
            39 if ctx.phase.is_some() && ctx.traps && self.chance(30) => {
                let (i, n) = ctx.phase.unwrap();
                let k = self.range(n / 2, n + n / 2);
                let skip = self.label();
                let _ = writeln!(out, "  bnei r{i}, {k}, {skip}\n  halt r{a}\n{skip}:");
            }
            _ => {
                let _ = writeln!(out, "  xor r{d}, r{d}, r{a}");
            }
        }
    }

    /// The instructions compiled WebAssembly uses: sized loads and stores
    /// at byte addresses (unaligned; with traps, sometimes out of bounds),
    /// `msize`/`mgrow`, unsigned division, rotates, bit counts, extensions
    /// and `select`.
    fn wasm_stmt(&mut self, ctx: &Ctx<'_>, out: &mut String, d: u8, a: u8, b: u8) {
        const LOADS: [&str; 7] = ["ld8s", "ld8u", "ld16s", "ld16u", "ld32s", "ld32u", "ld64"];
        const STORES: [&str; 4] = ["st8", "st16", "st32", "st64"];
        const BITS: [&str; 11] = [
            "rotl", "rotr", "rotl32", "rotr32", "leu", "addw", "subw", "mulw", "shlw", "shrw",
            "ushrw",
        ];
        const BITS_I: [&str; 4] = ["addiw", "muliw", "shliw", "ushriw"];
        const UNARY: [&str; 7] = [
            "sext8", "sext16", "sext32", "zext32", "clz", "ctz", "popcnt",
        ];
        match self.below(9) {
            0 => {
                // Part of a slow cell: a value worth a guard.
                let op = self.pick(&LOADS);
                let c = self.range(SLOW_CELLS, FN_CELLS - 1);
                let off = 8 * c + self.range(0, 4);
                let _ = writeln!(out, "  {op} r{d}, r{ZERO}, {off}");
            }
            1 if self.chance(40) => {
                // A read-modify-write through one base: what a dominating
                // bounds check proves for the accesses after it (the same
                // place, a narrower or nearer one), or does not (a wider
                // or farther one, which may be out of bounds), in bytes or
                // in words.
                if self.chance(50) {
                    let (ld, st, ld2) = (self.pick(&LOADS), self.pick(&STORES), self.pick(&LOADS));
                    let off = self.offset(ctx, &[-9, -1, 455, 460, 505, 1020], 0, 200);
                    let off2 = off + self.pick(&[0, 0, 1, -1, 4, 7]);
                    let off3 = off + self.pick(&[0, 2, 8, -2, 64]);
                    let _ = writeln!(
                        out,
                        "  andi r{T1}, r{a}, 255
  {ld} r{d}, r{T1}, {off}
  {st} r{T1}, {off2}, r{b}
  {ld2} r{d}, r{T1}, {off3}"
                    );
                } else {
                    let off = self.offset(ctx, &[40, 63, -1], 0, 16);
                    let off2 = off + self.pick(&[0, 0, 1]);
                    let _ = writeln!(
                        out,
                        "  andi r{T1}, r{a}, 31
  ld r{d}, r{T1}, {off}
  st r{T1}, {off}, r{b}
  ld r{d}, r{T1}, {off2}"
                    );
                }
            }
            1 => {
                // Bytes 0..464: inside the first length.
                let op = self.pick(&LOADS);
                let off = self.offset(ctx, &[-9, -1, 505, 600, 1020, 4000], 0, 200);
                let _ = writeln!(
                    out,
                    "  andi r{T1}, r{a}, 255
  {op} r{d}, r{T1}, {off}"
                );
            }
            2 | 3 => {
                // Bytes 0..384: the data cells, but with traps.
                let op = self.pick(&STORES);
                let off = self.offset(ctx, &[-4, -1, 509, 700, 1017], 0, 120);
                let _ = writeln!(
                    out,
                    "  andi r{T1}, r{a}, 255
  {op} r{T1}, {off}, r{b}"
                );
            }
            4 => {
                if self.chance(70) {
                    let _ = writeln!(
                        out,
                        "  andi r{T0}, r{a}, 63
  mgrow r{d}, r{T0}"
                    );
                } else if self.chance(50) {
                    let _ = writeln!(out, "  mgrow r{d}, r{a}");
                } else {
                    let _ = writeln!(out, "  msize r{d}");
                }
            }
            5 => {
                let op = self.pick(&["divu", "remu"]);
                if ctx.traps && self.chance(20) {
                    let _ = writeln!(out, "  {op} r{d}, r{a}, r{b}");
                } else {
                    let _ = writeln!(
                        out,
                        "  ori r{T0}, r{b}, 1
  {op} r{d}, r{a}, r{T0}"
                    );
                }
            }
            6 => {
                if self.chance(30) {
                    let op = self.pick(&BITS_I);
                    let k = self.pick(&[0, 1, 5, 31, 32, 33, 63, -1, 0x7fff_ffff, -0x8000_0000]);
                    let _ = writeln!(out, "  {op} r{d}, r{a}, {k}");
                } else {
                    let op = self.pick(&BITS);
                    let _ = writeln!(out, "  {op} r{d}, r{a}, r{b}");
                }
            }
            7 => {
                let op = self.pick(&UNARY);
                let _ = writeln!(out, "  {op} r{d}, r{a}");
            }
            _ => {
                let c = self.src(ctx);
                let _ = writeln!(out, "  select r{d}, r{c}, r{a}, r{b}");
            }
        }
    }

    /// `hcall` of one of the fuzz host's functions (`flaky`, which may
    /// fail, only where traps are allowed).
    fn hcall(&mut self, ctx: &Ctx<'_>, out: &mut String, d: u8) {
        let names: &[(&str, u8)] = if ctx.traps {
            &[("mix", 2), ("peek", 1), ("flaky", 1)]
        } else {
            &[("mix", 2), ("peek", 1)]
        };
        let (name, n) = self.pick(names);
        self.stage_args(ctx, out, n);
        let _ = writeln!(out, "  hcall r{d}, {name}, r{ARGS}, {n}");
    }

    /// `ld` within the data cells, from a slow cell (a value constant for a
    /// long time), or rarely at an address that may be out of bounds.
    fn load(&mut self, ctx: &Ctx<'_>, out: &mut String, d: u8, a: u8) {
        match self.below(10) {
            0..=2 => {
                let c = self.range(SLOW_CELLS, FN_CELLS - 1);
                let _ = writeln!(out, "  ld r{d}, r{ZERO}, {c}");
            }
            3..=4 if ctx.traps => {
                let off = self.pick(&[40, 50, 63, -1, -8]);
                let _ = writeln!(out, "  andi r{T1}, r{a}, 31\n  ld r{d}, r{T1}, {off}");
            }
            _ => {
                let off = self.range(0, 16);
                let _ = writeln!(out, "  andi r{T1}, r{a}, 31\n  ld r{d}, r{T1}, {off}");
            }
        }
    }

    fn store(&mut self, ctx: &Ctx<'_>, out: &mut String, a: u8, b: u8) {
        let off = self.offset(ctx, &[40, 63, -3], 0, 16);
        let _ = writeln!(out, "  andi r{T1}, r{a}, 31\n  st r{T1}, {off}, r{b}");
    }

    /// An if/else whose arms rejoin; its condition is data-dependent, an
    /// even fork on the loop counter, or a phase (constant, then flips).
    fn fork(&mut self, ctx: &Ctx<'_>, out: &mut String) {
        let (els, end) = (self.label(), self.label());
        match (self.below(4), ctx.phase) {
            (0, Some((i, _))) => {
                let m = self.pick(&[1, 3]);
                let _ = writeln!(out, "  andi r{T0}, r{i}, {m}\n  jz r{T0}, {els}");
            }
            (1, Some((i, n))) => {
                let k = self.range(n / 4, n - n / 4);
                let c = self.pick(&["blti", "bgei"]);
                let _ = writeln!(out, "  {c} r{i}, {k}, {els}");
            }
            _ => {
                let (a, b) = (self.src(ctx), self.src(ctx));
                let c = self.pick(&["beq", "bne", "blt", "ble", "bgt", "bge", "bltu", "bgeu"]);
                let _ = writeln!(out, "  {c} r{a}, r{b}, {els}");
            }
        }
        let n = self.range(1, 3) as u64;
        self.body(ctx, out, n);
        let _ = writeln!(out, "  jmp {end}\n{els}:");
        let n = self.range(0, 3) as u64;
        self.body(ctx, out, n);
        let _ = writeln!(out, "{end}:");
    }

    /// A `jtab` whose index is sometimes out of range (falls through):
    /// masked from a register, or loaded narrow (a sized load, as compiled
    /// WebAssembly's `br_table` indexes are: code generators index such a
    /// table by its low 32 bits; sign-extended, it may be negative).
    fn jtab(&mut self, ctx: &Ctx<'_>, out: &mut String) {
        let arms = self.range(2, 5) as usize;
        if self.chance(30) {
            let op = self.pick(&["ld8s", "ld8u", "ld16s", "ld32s", "ld32u"]);
            let c = self.range(SLOW_CELLS, FN_CELLS - 1);
            let off = 8 * c + self.range(0, 4);
            let _ = writeln!(out, "  {op} r{T0}, r{ZERO}, {off}");
        } else {
            let a = self.src(ctx);
            let mask = self.pick(&[1, 3, 7]);
            let _ = writeln!(out, "  andi r{T0}, r{a}, {mask}");
        }
        if self.chance(25) {
            let _ = writeln!(out, "  subi r{T0}, r{T0}, 1");
        }
        let labels: Vec<String> = (0..arms).map(|_| self.label()).collect();
        let end = self.label();
        let _ = writeln!(out, "  jtab r{T0}, [{}]", labels.join(", "));
        self.stmt(ctx, out);
        let _ = writeln!(out, "  jmp {end}");
        for l in &labels {
            let _ = writeln!(out, "{l}:");
            let n = self.range(1, 2) as u64;
            self.body(ctx, out, n);
            let _ = writeln!(out, "  jmp {end}");
        }
        let _ = writeln!(out, "{end}:");
    }

    /// A counted loop nested in the current one, its trip count constant
    /// or data-dependent (its counter and limit are written by nothing else).
    fn inner_loop(&mut self, ctx: &Ctx<'_>, out: &mut String) {
        let depth = COUNTERS.len() - ctx.loops;
        let (c, l) = COUNTERS[depth];
        let head = self.label();
        let max = ctx.max_trip;
        if self.chance(60) {
            let k = self.range(0, max);
            let _ = writeln!(out, "  li r{l}, {k}");
        } else {
            let a = self.src(ctx);
            let mask = if max >= 7 { 7 } else { 3 };
            let _ = writeln!(out, "  andi r{l}, r{a}, {mask}");
        }
        let _ = writeln!(out, "  li r{c}, 0\n{head}:");
        let inner = Ctx {
            loops: ctx.loops - 1,
            max_trip: (max / 2).max(1),
            ..*ctx
        };
        let n = self.range(1, 4) as u64;
        self.body(&inner, out, n);
        let _ = writeln!(out, "  loop r{c}, r{l}, {head}");
    }

    /// A trap that happens at one late iteration of the hot loop, long
    /// after its code was compiled (or halt there).
    fn late_trap(&mut self, ctx: &Ctx<'_>, out: &mut String) {
        let Some((i, n)) = ctx.phase else { return };
        let k = self.range(n / 4, n + n / 4);
        let (d, a) = (self.reg(ctx), self.src(ctx));
        let skip = self.label();
        let _ = writeln!(out, "  bnei r{i}, {k}, {skip}");
        let _ = match self.below(9) {
            6 => writeln!(out, "  trap {}", self.range(0, 6)),
            7 => writeln!(out, "  divu r{d}, r{a}, r{ZERO}"),
            8 => writeln!(out, "  ld16u r{d}, r{ZERO}, {}", 8 * CAPACITY - 1),
            0 => writeln!(out, "  div r{d}, r{a}, r{ZERO}"),
            1 => writeln!(out, "  remi r{d}, r{a}, 0"),
            2 => writeln!(out, "  ld r{d}, r{ZERO}, {MEMORY}"),
            3 => writeln!(out, "  st r{ZERO}, -1, r{a}"),
            4 => writeln!(out, "  li r{T0}, 999\n  calli r{d}, r{T0}, r{ARGS}, 0"),
            _ => writeln!(out, "  halt r{a}"),
        };
        let _ = writeln!(out, "{skip}:");
    }

    fn stage_args(&mut self, ctx: &Ctx<'_>, out: &mut String, n: u8) {
        for k in 0..n {
            let a = self.src(ctx);
            let _ = writeln!(out, "  mov r{}, r{a}", ARGS + k);
        }
    }

    /// `calli` through a function-value register or a memory cell.
    fn calli(&mut self, ctx: &Ctx<'_>, out: &mut String, d: u8) {
        let use_cell = ctx.slots.is_empty() || (!ctx.cells.is_empty() && self.chance(35));
        let (f, arity) = if use_cell {
            let (addr, arity) = self.pick(ctx.cells);
            let _ = writeln!(out, "  ld r{T1}, r{ZERO}, {addr}");
            (T1, arity)
        } else {
            self.pick(ctx.slots)
        };
        // Rarely the wrong count: a trap the first time it runs.
        let n = if ctx.traps && self.chance(5) {
            arity + 1
        } else {
            arity
        };
        self.stage_args(ctx, out, n);
        let _ = writeln!(out, "  calli r{d}, r{f}, r{ARGS}, {n}");
    }
}

/// The functions generated so far (leaves first) and the function-value
/// cells, with what `main` needs to pick from them.
struct Funcs {
    all: Vec<Func>,
    /// How many of `all` are leaves.
    leaves: usize,
    /// Function-value cells: address and the arity of the leaf they hold.
    cells: Vec<(i64, u8)>,
}

impl Funcs {
    /// Any function of `arity`.
    fn same_arity(&self, g: &mut Gen<'_>, arity: u8) -> String {
        let fs: Vec<&Func> = self.all.iter().filter(|f| f.arity == arity).collect();
        fs[g.below(fs.len() as u64) as usize].name.clone()
    }

    /// A leaf of `arity`.
    fn leaf_of(&self, g: &mut Gen<'_>, arity: u8) -> String {
        let fs: Vec<&Func> = self.all[..self.leaves]
            .iter()
            .filter(|f| f.arity == arity)
            .collect();
        fs[g.below(fs.len() as u64) as usize].name.clone()
    }

    /// Any function at all.
    fn any(&self, g: &mut Gen<'_>) -> &Func {
        &self.all[g.below(self.all.len() as u64) as usize]
    }
}

/// Builds one program from `src`'s choices. Every program assembles,
/// verifies and terminates: loops are counted with counters nothing else
/// writes, branches go forward, calls go to earlier functions, and the
/// one recursive function masks its argument to a small depth.
pub fn generate(src: &mut dyn Source) -> FuzzProgram {
    let mut g = Gen { src, label: 0 };
    let traps = g.chance(50);
    let host = g.chance(35);
    let mut text = format!(".memory {CAPACITY}\n.memlen {}\n", 8 * MEMORY);
    if host {
        for (name, n) in super::HOST {
            let _ = writeln!(text, ".import {name} {n}");
        }
    }
    let data: Vec<String> = (0..g.range(0, 8)).map(|_| g.imm().to_string()).collect();
    if !data.is_empty() {
        let _ = writeln!(text, ".data {}: {}", g.range(0, 40), data.join(", "));
    }
    let mut funcs = leaves(&mut g, &mut text, traps, host);
    recursive(&mut g, &mut text);
    funcs.all.push(Func {
        name: "rec".into(),
        arity: 1,
    });
    helpers(&mut g, &mut text, &mut funcs, traps, host);
    let n = main_func(&mut g, &mut text, &funcs, traps, host);
    FuzzProgram {
        text,
        args: vec![n],
    }
}

/// Leaves: no calls; arities 0..=3. Then the function-value cells, which
/// hold leaves, chosen by arity.
fn leaves(g: &mut Gen<'_>, text: &mut String, traps: bool, host: bool) -> Funcs {
    let mut all: Vec<Func> = Vec::new();
    let leaves = g.range(2, 4);
    for k in 0..leaves {
        let arity = g.range(0, 3) as u8;
        let f = Func {
            name: format!("leaf{k}"),
            arity,
        };
        let locals: Vec<u8> = (0..8).collect();
        let _ = writeln!(text, ".func {}({})\n  .regs 32", f.name, params(arity));
        for r in arity..8 {
            let _ = writeln!(text, "  li r{r}, {}", g.range(-5, 9));
        }
        let _ = writeln!(text, "  li r{ZERO}, 0");
        let ctx = Ctx {
            data: &locals,
            slow: &[],
            phase: None,
            slots: &[],
            callees: &[],
            cells: &[],
            loops: g.below(2) as usize,
            max_trip: 3,
            traps,
            host,
        };
        let n = g.range(1, 5) as u64;
        g.body(&ctx, text, n);
        let r = g.pick(&locals);
        let _ = writeln!(text, "  ret r{r}\n.end");
        all.push(f);
    }
    let cells: Vec<(i64, u8)> = (0..g.range(0, 2))
        .map(|c| (FN_CELLS + c, all[g.below(all.len() as u64) as usize].arity))
        .collect();
    Funcs {
        all,
        leaves: leaves as usize,
        cells,
    }
}

/// `rec(n)`: bounded recursion, depth at most 15, or a fib-like tree of at
/// most fib(7) calls.
fn recursive(g: &mut Gen<'_>, text: &mut String) {
    let fib = g.chance(40);
    let (base, tail) = (g.range(-3, 7), g.pick(&["add", "xor", "mul", "sub"]));
    let _ = writeln!(text, ".func rec(n)\n  .regs 8");
    let _ = writeln!(
        text,
        "  andi r1, n, {}\n  blei r1, 1, base\n  subi r2, r1, 1\n  call r3, rec, r2, 1",
        if fib { 7 } else { 15 }
    );
    if fib {
        let _ = writeln!(
            text,
            "  subi r2, r1, 2\n  call r4, rec, r2, 1\n  add r3, r3, r4"
        );
    }
    let _ = writeln!(
        text,
        "  {tail} r3, r3, r1\n  ret r3\nbase:\n  addi r3, r1, {base}\n  ret r3\n.end"
    );
}

/// Helpers: call leaves, earlier helpers and rec; calli through cells.
fn helpers(g: &mut Gen<'_>, text: &mut String, funcs: &mut Funcs, traps: bool, host: bool) {
    for k in 0..g.range(0, 3) {
        let arity = g.range(1, 3) as u8;
        let f = Func {
            name: format!("helper{k}"),
            arity,
        };
        let locals: Vec<u8> = (0..10).collect();
        let _ = writeln!(text, ".func {}({})\n  .regs 32", f.name, params(arity));
        for r in arity..10 {
            let _ = writeln!(text, "  li r{r}, {}", g.range(-5, 9));
        }
        let _ = writeln!(text, "  li r{ZERO}, 0");
        let ctx = Ctx {
            data: &locals,
            slow: &[],
            phase: None,
            slots: &[],
            callees: &funcs.all,
            cells: &funcs.cells,
            loops: 1,
            max_trip: 4,
            traps,
            host,
        };
        let n = g.range(2, 6) as u64;
        g.body(&ctx, text, n);
        let r = g.pick(&locals);
        let _ = writeln!(text, "  ret r{r}\n.end");
        funcs.all.push(f);
    }
    if !funcs.cells.is_empty() && g.chance(60) {
        dispatcher(g, text, funcs, traps, host);
    }
}

/// `dispatch(x)`: a loop that calls the function in a cell (which `main`
/// changes at its phase changes) and stores what it returns, so its native
/// code, compiled whole when `main` calls it often, is open where the
/// cell's arity has a function with output, and specialized for the
/// cell's callee of the moment (see `CodeCache::compile_function_for`).
fn dispatcher(g: &mut Gen<'_>, text: &mut String, funcs: &mut Funcs, traps: bool, host: bool) {
    let f = Func {
        name: "dispatch".into(),
        arity: 1,
    };
    let locals: Vec<u8> = (0..10).collect();
    let _ = writeln!(text, ".func dispatch(r0)\n  .regs 32");
    for r in 1..10 {
        let _ = writeln!(text, "  li r{r}, {}", g.range(-5, 9));
    }
    let (c, l) = COUNTERS[0];
    let trip = g.range(2, 6);
    let _ = writeln!(
        text,
        "  li r{ZERO}, 0\n  li r{c}, 0\n  li r{l}, {trip}\nLdispatch:"
    );
    let ctx = Ctx {
        data: &locals,
        slow: &[],
        phase: None,
        slots: &[],
        callees: &[],
        cells: &funcs.cells,
        loops: 0,
        max_trip: 1,
        traps,
        host,
    };
    let d = g.pick(&locals);
    g.calli(&ctx, text, d);
    let n = g.range(0, 2) as u64;
    g.body(&ctx, text, n);
    let cell = g.range(0, SLOW_CELLS - 1);
    let _ = writeln!(
        text,
        "  st r{ZERO}, {cell}, r{d}\n  addi r{c}, r{c}, 1\n  blt r{c}, r{l}, Ldispatch\n  ret r{d}\n.end"
    );
    funcs.all.push(f);
}

/// Main: a hot loop of `n` iterations with phase changes, then a checksum
/// of the registers and the data cells. Returns `n`, its argument.
fn main_func(g: &mut Gen<'_>, text: &mut String, funcs: &Funcs, traps: bool, host: bool) -> i64 {
    let n = g.range(200, 2500);
    let _ = writeln!(text, ".func main(n)\n  .regs 32\n  li r{ZERO}, 0");
    for &r in MAIN_DATA.iter().chain(&MAIN_SLOW) {
        let v = g.imm();
        let _ = writeln!(text, "  li r{r}, {v}");
    }
    for c in SLOW_CELLS..FN_CELLS {
        let _ = writeln!(text, "  li r{T0}, {}\n  st r{ZERO}, {c}, r{T0}", g.imm());
    }
    for &(addr, arity) in &funcs.cells {
        let f = funcs.leaf_of(g, arity);
        let _ = writeln!(text, "  fref r{T0}, {f}\n  st r{ZERO}, {addr}, r{T0}");
    }
    let slots: Vec<(u8, u8)> = SLOTS[..g.range(0, 3) as usize]
        .iter()
        .map(|&r| (r, funcs.any(g).arity))
        .collect();
    for &(r, arity) in &slots {
        let f = funcs.same_arity(g, arity);
        let _ = writeln!(text, "  fref r{r}, {f}");
    }
    let _ = writeln!(text, "  li r{I}, 0\n  subi r{LIMIT}, r{N}, 1\ntop:");
    for _ in 0..g.range(0, 3) {
        phase_change(g, text, funcs, &slots, n, traps);
    }
    // A polymorphic slot: alternates between two targets every iteration.
    if let Some(&(r, arity)) = slots.first()
        && g.chance(30)
    {
        let (other, skip) = (g.label(), g.label());
        let (f1, f2) = (funcs.same_arity(g, arity), funcs.same_arity(g, arity));
        let _ = writeln!(
            text,
            "  andi r{T0}, r{I}, 1\n  jz r{T0}, {other}\n  fref r{r}, {f1}\n  jmp {skip}\n{other}:\n  fref r{r}, {f2}\n{skip}:"
        );
    }
    let ctx = Ctx {
        data: &MAIN_DATA,
        slow: &MAIN_SLOW,
        phase: Some((I, n)),
        slots: &slots,
        callees: &funcs.all,
        cells: &funcs.cells,
        loops: COUNTERS.len(),
        max_trip: 7,
        traps,
        host,
    };
    let stmts = g.range(3, 12) as u64;
    g.body(&ctx, text, stmts);
    if traps && g.chance(40) {
        g.late_trap(&ctx, text);
    }
    let _ = writeln!(text, "  loop r{I}, r{LIMIT}, top");
    let acc = MAIN_DATA[0];
    for &r in &MAIN_DATA[1..] {
        let _ = writeln!(
            text,
            "  muli r{acc}, r{acc}, 31\n  add r{acc}, r{acc}, r{r}"
        );
    }
    let _ = writeln!(
        text,
        "  li r{T1}, 0\nsum:\n  ld r{T0}, r{T1}, 0\n  xor r{acc}, r{acc}, r{T0}\n  muli r{acc}, r{acc}, 31\n  addi r{T1}, r{T1}, 1\n  blti r{T1}, {FN_CELLS}, sum"
    );
    let _ = writeln!(
        text,
        "  msize r{T0}\n  xor r{acc}, r{acc}, r{T0}\n  putn r{acc}\n  ret r{acc}\n.end"
    );
    n
}

/// A phase change: at an iteration k of main's loop, a slow register, a
/// slow cell, a function slot or cell gets a new value (rarely a bad one).
fn phase_change(
    g: &mut Gen<'_>,
    text: &mut String,
    funcs: &Funcs,
    slots: &[(u8, u8)],
    n: i64,
    traps: bool,
) {
    let k = g.range(n / 8, n - n / 8);
    let skip = g.label();
    let _ = writeln!(text, "  bnei r{I}, {k}, {skip}");
    match g.below(4) {
        0 => {
            let r = g.pick(&MAIN_SLOW);
            let v = g.pick(&[0, -1, 1, 7, 64, i32::MIN as i64]);
            let _ = writeln!(text, "  li r{r}, {v}");
        }
        1 => {
            let c = g.range(SLOW_CELLS, FN_CELLS - 1);
            let _ = writeln!(text, "  li r{T0}, {}\n  st r{ZERO}, {c}, r{T0}", g.imm());
        }
        2 if !slots.is_empty() => {
            let (r, arity) = g.pick(slots);
            if traps && g.chance(30) {
                let bad = g.pick(&[-1, 1000]);
                let _ = writeln!(text, "  li r{r}, {bad}");
            } else {
                let wrong = traps && g.chance(30);
                let f = if wrong {
                    funcs.any(g).name.clone()
                } else {
                    funcs.same_arity(g, arity)
                };
                let _ = writeln!(text, "  fref r{r}, {f}");
            }
        }
        _ if !funcs.cells.is_empty() => {
            // A cell that helpers call through changes: usually to a leaf
            // of its arity; with traps, sometimes to any function (another
            // arity, one with stores or output) or to no function at all,
            // which compiled helpers meet natively.
            let (addr, arity) = g.pick(&funcs.cells);
            if traps && g.chance(40) {
                if g.chance(30) {
                    let bad = g.pick(&[-1, 1000]);
                    let _ = writeln!(text, "  li r{T0}, {bad}\n  st r{ZERO}, {addr}, r{T0}");
                } else {
                    let f = funcs.any(g).name.clone();
                    let _ = writeln!(text, "  fref r{T0}, {f}\n  st r{ZERO}, {addr}, r{T0}");
                }
            } else {
                let f = funcs.leaf_of(g, arity);
                let _ = writeln!(text, "  fref r{T0}, {f}\n  st r{ZERO}, {addr}, r{T0}");
            }
        }
        _ => {
            let r = g.pick(&MAIN_SLOW);
            let _ = writeln!(text, "  addi r{r}, r{r}, 1");
        }
    }
    let _ = writeln!(text, "{skip}:");
}

fn params(n: u8) -> String {
    let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    names.join(", ")
}
