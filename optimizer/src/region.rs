//! Regions: what the optimizer compiles, and their text form.
//!
//! A region is a superblock of one bytecode function laid out as a straight
//! list of [`Step`]s, possibly followed by the arms of a trace tree (other
//! paths back to the head, each a list of steps). Control enters only at the
//! top; it leaves through side exits to exact bytecode offsets, or jumps back
//! to the region's head (a loop kept inside compiled code) or to an arm. Every step names the original offsets,
//! so each exit resumes the interpreter at the right instruction.
//!
//! The text form exists so optimizer tests read as "IR in, IR out": a test
//! builds or parses a region, runs a pass, and compares the printed result
//! with the expected text. [`Region`]'s `Display` and [`Region::parse`] are
//! inverses. One line per step:
//!
//! ```text
//! region f0:3                          # function 0, head at offset 3
//!   guard r0 == 100 | fail 3           # entry guard (before the first block)
//!   block 3 weight=90000               # a basic block starts (`dup`: it has
//!                                      # side entrances, so this is its copy)
//!   3: mul r4, r1, r2                  # an instruction compiled in place
//!   4: ld r5, r4, 0
//!   guard r5 == 8 | fail 5             # specialization guard, resume offset
//!   6: loop r2, r0, L3 -> head | exit 7    # taken | fall-through targets
//!   7: jtab r3 -> [exit 12, next] | exit 8 # jump table cases | out of range
//!   9: interpret putn r2               # the interpreter runs this one
//!   10: native f2 call r1, f2, r1, 1   # a native call to closed function 2
//!   11: native [f2, f5] calli r1, r3, r1, 1  # dispatch among natives
//!   12: interpreted calli r1, r3, r1, 1  # the interpreter runs the callee
//!   goto exit 12                       # unconditional end of the trace
//! ```
//!
//! Targets are `next` (the following step), `head` (the first `block`
//! step), `exit N` (leave to offset `N`), or `block N` (the region's copy of
//! the block at offset `N`: the first `block N` step after the head's, where
//! an arm of a trace tree starts). `#` and `;` start comments.

use std::fmt::{self, Write as _};

use toyvm_vm::isa::{Instr, Op, Operand, OperandKind, Reg};
use toyvm_vm::{Function, Pc};

use crate::exit::{ExitKind, ExitReport, ExitSite};
use crate::{Error, Result};

/// Where a branch direction goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The following step: this direction stays on the trace.
    Next,
    /// Back to the region head (the first [`Step::Block`]): a loop that
    /// stays in compiled code.
    Head,
    /// Leave the region; the interpreter resumes at this offset.
    Exit(u32),
    /// To the region's copy of the block at this offset: the first
    /// [`Step::Block`] (after the head's) with that offset. A trace tree's
    /// arms start at such blocks (see [`crate::superblock`]); control still
    /// enters the region only at its head.
    Block(u32),
}

/// One step of a region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A basic block of the original function starts here. No code: it
    /// carries the block's profile weight, and whether the block had side
    /// entrances (it is then a tail-duplicated copy: its off-trace
    /// predecessors keep reaching the original in the interpreter).
    Block {
        /// The block's start offset in the function.
        offset: u32,
        /// The offset after the original block's last instruction: what
        /// compiled code charges to fuel for the block (see
        /// `codegen`). Not in the text form: 0 (unknown) in a
        /// region read from text, which then cannot be metered.
        end: u32,
        /// The block's node weight in the weighted CFG (how often it ran,
        /// estimated from the profile).
        weight: u64,
        /// Whether the block had side entrances, so this is a copy (`dup`
        /// in the text form).
        duplicated: bool,
    },
    /// A straight-line instruction (moves, constants, arithmetic, `ld`,
    /// `st`, `nop`) compiled in place.
    Op {
        /// The instruction's offset in the function.
        pc: u32,
        /// The instruction.
        instr: Instr,
    },
    /// A conditional branch or `loop`: where each direction goes.
    Branch {
        /// The branch's offset in the function.
        pc: u32,
        /// The branch instruction (its condition and operands; its own
        /// label is superseded by `taken`).
        instr: Instr,
        /// Where control goes when the branch is taken (the condition holds).
        taken: Target,
        /// Where control goes when it falls through to the next offset.
        fall: Target,
    },
    /// A `jtab` on register `a`: one target per table entry, `default`
    /// when `a` is out of range.
    Switch {
        /// The `jtab`'s offset in the function.
        pc: u32,
        /// The register holding the index into the table.
        a: Reg,
        /// Where each table entry goes, in table order (entry `i` is taken
        /// when `a == i`).
        cases: Vec<Target>,
        /// Where control goes when `a` is negative or past the last entry
        /// (the `jtab`'s fall-through).
        default: Target,
    },
    /// A specialization guard: continue if `reg == value` (and from here on
    /// treat `reg` as that constant), else leave with a guard exit that
    /// resumes at `resume`.
    Guard {
        /// The register tested.
        reg: Reg,
        /// The constant it is expected to hold.
        value: i64,
        /// The offset the interpreter resumes at when the guard fails.
        resume: u32,
    },
    /// An unconditional transfer (a `jmp`, or the fall-through at the end
    /// of the trace).
    Goto(Target),
    /// Leave so the interpreter runs the instruction at `pc` (calls,
    /// returns, output): the region ends here.
    Interpret {
        /// The offset the interpreter resumes at: this instruction's.
        pc: u32,
        /// The instruction the interpreter runs.
        instr: Instr,
    },
    /// A `call` (or a `calli` right after a guard that pins its function
    /// value) to the closed or bailing function `callee`, run as a native
    /// call: the trace continues after it. A trap inside leaves through a
    /// `Trap` exit; a bail (see [`crate::native`]) calls the interpreter
    /// for the callee instead, as [`Step::Interpreted`] does.
    Call {
        /// The call instruction's offset in the function.
        pc: u32,
        /// The `call` or `calli` instruction (its destination, argument
        /// registers and count).
        instr: Instr,
        /// The function called, by index.
        callee: u32,
    },
    /// A polymorphic `calli`: a native call to whichever of `callees`
    /// (closed or bailing functions of the right arity) its function value
    /// names; any other value, or a bail, is a call into the interpreter as
    /// [`Step::Interpreted`] makes it.
    Dispatch {
        /// The `calli`'s offset in the function, where an `Interpret` exit
        /// resumes.
        pc: u32,
        /// The `calli` instruction.
        instr: Instr,
        /// The functions called natively, by index (as planned, the
        /// site's most frequent targets first).
        callees: Vec<u32>,
    },
    /// A `call` or `calli` to a function without native code: compiled code
    /// calls the interpreter for the callee (see
    /// [`crate::HostCalls::with_interpreter`]), which runs it as its own
    /// `call` would (profiled, entering compiled code where installed, its
    /// traps the interpreter's), and the trace continues after it. When no
    /// interpreter is lent, or it declines the call, an `Interpret` exit at
    /// `pc`, before the call; when the run ends inside the call, a `Trap`
    /// exit.
    Interpreted {
        /// The call instruction's offset in the function.
        pc: u32,
        /// The `call` or `calli` instruction.
        instr: Instr,
    },
}

/// The register an instruction's Value tuple reports, for an instruction
/// that emits one as it runs: a load (`ld` or a sized load) or an `hcall`;
/// `None` for every other instruction.
pub fn emits_value(i: &Instr) -> Option<toyvm_vm::isa::Reg> {
    match *i {
        Instr::Hcall { d, .. } => Some(d),
        _ if i.op().is_load() => i.dest(),
        _ => None,
    }
}

/// A single-entry region of one function, ready for code generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// The function index.
    pub func: u32,
    /// The head's offset: where the runtime enters the region.
    pub head: u32,
    /// The steps in layout order: the head's [`Step::Block`] first (after
    /// any entry guards), then the trace, then the arms of a trace tree.
    pub steps: Vec<Step>,
}

impl Region {
    /// The head as a global pc.
    pub fn head_pc(&self) -> Pc {
        Pc::new(self.func, self.head)
    }

    /// Bytecode instructions the region holds (its size for the size cap).
    pub fn instr_count(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Step::Op { .. }
                        | Step::Branch { .. }
                        | Step::Switch { .. }
                        | Step::Call { .. }
                        | Step::Dispatch { .. }
                        | Step::Interpreted { .. }
                )
            })
            .count()
    }

    /// The offset of the first step whose instruction is not `f`'s at
    /// that offset (or whose block runs past `f`'s end), if any: `None`
    /// when the region is one of `f`'s.
    pub fn mismatch(&self, f: &Function) -> Option<u32> {
        let at = |pc: u32| f.code.get(pc as usize);
        self.steps.iter().find_map(|s| {
            let ok = match s {
                // `end` is 0 (unknown) in a region read from text.
                Step::Block { offset, end, .. } => {
                    (*offset as usize) < f.code.len()
                        && (*end == 0 || (offset < end && (*end as usize) <= f.code.len()))
                }
                Step::Op { pc, instr }
                | Step::Branch { pc, instr, .. }
                | Step::Interpret { pc, instr } => at(*pc) == Some(instr),
                Step::Call { pc, instr, .. }
                | Step::Dispatch { pc, instr, .. }
                | Step::Interpreted { pc, instr } => at(*pc) == Some(instr),
                Step::Switch { pc, .. } => matches!(at(*pc), Some(Instr::Jtab { .. })),
                Step::Guard { resume, .. } => (*resume as usize) < f.code.len(),
                Step::Goto(_) => true,
            };
            (!ok).then_some(match s {
                Step::Block { offset, .. } => *offset,
                Step::Op { pc, .. }
                | Step::Branch { pc, .. }
                | Step::Interpret { pc, .. }
                | Step::Call { pc, .. }
                | Step::Dispatch { pc, .. }
                | Step::Interpreted { pc, .. }
                | Step::Switch { pc, .. } => *pc,
                Step::Guard { resume, .. } => *resume,
                Step::Goto(_) => self.head,
            })
        })
    }

    /// Whether a `calli` of the region may look its function value up in
    /// the natives' table (a [`Step::Dispatch`]'s miss, an
    /// [`Step::Interpreted`] `calli`): natives compiled before the region
    /// make those calls native.
    pub fn calls_by_value(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(
                s,
                Step::Dispatch { .. }
                    | Step::Interpreted {
                        instr: Instr::Calli { .. },
                        ..
                    }
            )
        })
    }

    /// The native calls the region makes, in step order: each
    /// [`Step::Call`]'s callee and each of a [`Step::Dispatch`]'s, with the
    /// call instruction.
    pub fn native_calls(&self) -> impl Iterator<Item = (u32, &Instr)> + '_ {
        self.steps.iter().flat_map(|s| {
            let (callees, instr) = match s {
                Step::Call { callee, instr, .. } => (std::slice::from_ref(callee), Some(instr)),
                Step::Dispatch { callees, instr, .. } => (callees.as_slice(), Some(instr)),
                _ => (&[][..], None),
            };
            callees
                .iter()
                .zip(instr.into_iter().cycle())
                .map(|(&c, i)| (c, i))
        })
    }

    /// Whether the region may call the interpreter: it has
    /// [`Step::Interpreted`] calls, or native calls (whose bails and
    /// dispatch misses call the interpreter).
    pub fn calls_interpreter(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(
                s,
                Step::Interpreted { .. } | Step::Call { .. } | Step::Dispatch { .. }
            )
        })
    }

    /// Whether some path jumps back to the head (a loop in compiled code).
    pub fn loops(&self) -> bool {
        self.targets().any(|t| t == Target::Head)
    }

    /// The step index each [`Target::Block`] names, or an error naming a
    /// target with no block to go to.
    pub fn labels(&self) -> std::result::Result<Vec<(u32, usize)>, String> {
        let head_at = self
            .steps
            .iter()
            .position(|s| matches!(s, Step::Block { .. }));
        let mut out: Vec<(u32, usize)> = Vec::new();
        for t in self.targets() {
            let Target::Block(to) = t else { continue };
            if out.iter().any(|&(o, _)| o == to) {
                continue;
            }
            let at = self
                .steps
                .iter()
                .enumerate()
                .position(|(i, s)| {
                    Some(i) != head_at && matches!(s, Step::Block { offset, .. } if *offset == to)
                })
                .ok_or_else(|| format!("`block {to}` names no block of the region"))?;
            out.push((to, at));
        }
        Ok(out)
    }

    /// The region's guards as `(register, value, resume offset)`.
    pub fn guards(&self) -> impl Iterator<Item = (Reg, i64, u32)> + '_ {
        self.steps.iter().filter_map(|s| match *s {
            Step::Guard { reg, value, resume } => Some((reg, value, resume)),
            _ => None,
        })
    }

    fn targets(&self) -> impl Iterator<Item = Target> + '_ {
        self.steps.iter().flat_map(|s| {
            let v: Vec<Target> = match s {
                Step::Branch { taken, fall, .. } => vec![*taken, *fall],
                Step::Switch { cases, default, .. } => {
                    cases.iter().copied().chain([*default]).collect()
                }
                Step::Goto(t) => vec![*t],
                _ => vec![],
            };
            v
        })
    }

    /// The exits the region's control flow names, in step order: one per
    /// off-trace branch direction (deduplicated per step and offset), per
    /// guard and per interpreted instruction. The code generator adds an
    /// `Interpret` exit before each instruction that could trap; see
    /// [`crate::CompiledRegion::exits`] for the final counter layout.
    pub fn control_exits(&self) -> Vec<ExitSite> {
        let mut out = Vec::new();
        for (i, s) in self.steps.iter().enumerate() {
            match s {
                Step::Guard { resume, .. } => out.push(ExitSite {
                    kind: ExitKind::Guard,
                    resume: *resume,
                    report: self.guard_report(i),
                }),
                Step::Interpret { pc, .. } => out.push(ExitSite {
                    kind: ExitKind::Interpret,
                    resume: *pc,
                    report: None,
                }),
                Step::Branch {
                    pc, taken, fall, ..
                } => push_side(&mut out, &[*taken, *fall], Some(*pc)),
                Step::Switch {
                    pc, cases, default, ..
                } => {
                    let all: Vec<Target> = cases.iter().copied().chain([*default]).collect();
                    push_side(&mut out, &all, Some(*pc))
                }
                Step::Goto(t) => push_side(&mut out, &[*t], None),
                Step::Block { .. } | Step::Op { .. } | Step::Call { .. } => {}
                Step::Dispatch { pc, .. } | Step::Interpreted { pc, .. } => out.push(ExitSite {
                    kind: ExitKind::Interpret,
                    resume: *pc,
                    report: None,
                }),
            }
        }
        out
    }

    /// What the guard at step `i` reports when it fails: the Value tuple of
    /// the load or host call right before it (or, for an entry guard of a region at a
    /// function's entry, of the argument); `None` for other guards (a
    /// `calli`'s, whose Call tuple the interpreter emits when it resumes).
    pub fn guard_report(&self, i: usize) -> Option<ExitReport> {
        let Some(Step::Guard { reg, resume, .. }) = self.steps.get(i) else {
            return None;
        };
        let before = i.checked_sub(1).and_then(|k| self.steps.get(k));
        match before {
            Some(Step::Op { pc, instr })
                if emits_value(instr).is_some_and(|d| d == *reg) && pc + 1 == *resume =>
            {
                Some(ExitReport::Value { pc: *pc, reg: *reg })
            }
            None | Some(Step::Guard { .. })
                if self.head == 0
                    && *resume == 0
                    && self.steps[..i]
                        .iter()
                        .all(|s| matches!(s, Step::Guard { .. })) =>
            {
                Some(ExitReport::Value {
                    pc: toyvm_vm::program::ARG_OFFSET | *reg as u32,
                    reg: *reg,
                })
            }
            _ => None,
        }
    }

    /// Parses the text form (see the module docs).
    pub fn parse(text: &str) -> Result<Region> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, strip_comment(l).trim()))
            .filter(|(_, l)| !l.is_empty());
        let (line, header) = lines.next().ok_or(Error::Parse {
            line: 1,
            msg: "empty region text: expected `region fF:OFFSET`".into(),
        })?;
        let pc = header
            .strip_prefix("region ")
            .and_then(|rest| parse_pc(rest.trim()))
            .ok_or_else(|| perr(line, "expected `region fF:OFFSET`"))?;
        let mut steps = Vec::new();
        for (line, l) in lines {
            steps.push(parse_step(l).map_err(|msg| perr(line, &msg))?);
        }
        Ok(Region {
            func: pc.func(),
            head: pc.offset(),
            steps,
        })
    }
}

fn push_side(out: &mut Vec<ExitSite>, targets: &[Target], branch: Option<u32>) {
    let mut seen: Vec<u32> = Vec::new();
    for t in targets {
        if let Target::Exit(to) = *t
            && !seen.contains(&to)
        {
            seen.push(to);
            out.push(ExitSite {
                kind: ExitKind::Side,
                resume: to,
                report: branch.map(|branch| ExitReport::Edge { branch }),
            });
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Next => f.write_str("next"),
            Target::Head => f.write_str("head"),
            Target::Exit(to) => write!(f, "exit {to}"),
            Target::Block(to) => write!(f, "block {to}"),
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Block {
                offset,
                weight,
                duplicated,
                ..
            } => {
                write!(f, "block {offset} weight={weight}")?;
                if *duplicated {
                    f.write_str(" dup")?;
                }
                Ok(())
            }
            Step::Op { pc, instr } => write!(f, "{pc}: {}", InstrText(instr)),
            Step::Branch {
                pc,
                instr,
                taken,
                fall,
            } => write!(f, "{pc}: {} -> {taken} | {fall}", InstrText(instr)),
            Step::Switch {
                pc,
                a,
                cases,
                default,
            } => {
                let cases: Vec<String> = cases.iter().map(|t| t.to_string()).collect();
                write!(f, "{pc}: jtab r{a} -> [{}] | {default}", cases.join(", "))
            }
            Step::Guard { reg, value, resume } => {
                write!(f, "guard r{reg} == {value} | fail {resume}")
            }
            Step::Goto(t) => write!(f, "goto {t}"),
            Step::Interpret { pc, instr } => write!(f, "{pc}: interpret {}", InstrText(instr)),
            Step::Call { pc, instr, callee } => {
                write!(f, "{pc}: native f{callee} {}", InstrText(instr))
            }
            Step::Dispatch { pc, instr, callees } => {
                let names: Vec<String> = callees.iter().map(|c| format!("f{c}")).collect();
                write!(
                    f,
                    "{pc}: native [{}] {}",
                    names.join(", "),
                    InstrText(instr)
                )
            }
            Step::Interpreted { pc, instr } => write!(f, "{pc}: interpreted {}", InstrText(instr)),
        }
    }
}

impl fmt::Display for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "region {}", self.head_pc())?;
        for s in &self.steps {
            let indent = if matches!(s, Step::Block { .. }) {
                "  "
            } else {
                "    "
            };
            writeln!(f, "{indent}{s}")?;
        }
        Ok(())
    }
}

/// An instruction in the region IR's syntax: the assembler's, with
/// registers `rN`, labels `LN`, functions `fN`, tables `tN` and host
/// functions `hN` by index
/// (a region has no program at hand to name them).
#[derive(Debug)]
pub struct InstrText<'a>(pub &'a Instr);

impl fmt::Display for InstrText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.op().mnemonic())?;
        for (i, o) in self.0.operands().iter().enumerate() {
            f.write_str(if i == 0 { " " } else { ", " })?;
            match *o {
                Operand::Reg(r) => write!(f, "r{r}")?,
                Operand::Imm(v) => write!(f, "{v}")?,
                Operand::Wide(v) => write!(f, "{v}")?,
                Operand::Label(l) => write!(f, "L{l}")?,
                Operand::Func(g) => write!(f, "f{g}")?,
                Operand::Count(n) => write!(f, "{n}")?,
                Operand::Table(t) => write!(f, "t{t}")?,
                Operand::HostFn(h) => write!(f, "h{h}")?,
            }
        }
        Ok(())
    }
}

/// Parses one instruction in [`InstrText`] syntax.
pub fn parse_instr(s: &str) -> std::result::Result<Instr, String> {
    let s = s.trim();
    let (mnemonic, rest) = s.split_once(char::is_whitespace).unwrap_or((s, ""));
    let op = Op::from_mnemonic(mnemonic).ok_or_else(|| format!("unknown mnemonic `{mnemonic}`"))?;
    let kinds = op.operand_kinds();
    let words: Vec<&str> = if rest.trim().is_empty() {
        Vec::new()
    } else {
        rest.split(',').map(str::trim).collect()
    };
    if words.len() != kinds.len() {
        return Err(format!(
            "`{mnemonic}` takes {} operands, {} given",
            kinds.len(),
            words.len()
        ));
    }
    let mut ops = Vec::with_capacity(kinds.len());
    for (&kind, w) in kinds.iter().zip(&words) {
        let bad = || format!("`{w}` is not {}", kind.describe());
        let num = |prefix: &str| w.strip_prefix(prefix).ok_or_else(bad);
        ops.push(match kind {
            OperandKind::Reg => Operand::Reg(num("r")?.parse().map_err(|_| bad())?),
            OperandKind::Imm => Operand::Imm(w.parse().map_err(|_| bad())?),
            OperandKind::Wide => Operand::Wide(w.parse().map_err(|_| bad())?),
            OperandKind::Label => Operand::Label(num("L")?.parse().map_err(|_| bad())?),
            OperandKind::Func => Operand::Func(num("f")?.parse().map_err(|_| bad())?),
            OperandKind::Count => Operand::Count(w.parse().map_err(|_| bad())?),
            OperandKind::Table => Operand::Table(num("t")?.parse().map_err(|_| bad())?),
            OperandKind::HostFn => Operand::HostFn(num("h")?.parse().map_err(|_| bad())?),
        });
    }
    Instr::from_operands(op, &ops).ok_or_else(|| format!("bad operands for `{mnemonic}`"))
}

fn perr(line: usize, msg: &str) -> Error {
    Error::Parse {
        line,
        msg: msg.to_owned(),
    }
}

fn strip_comment(l: &str) -> &str {
    let cut = l.find(['#', ';']).unwrap_or(l.len());
    &l[..cut]
}

/// `f3:12`.
fn parse_pc(s: &str) -> Option<Pc> {
    let (f, o) = s.strip_prefix('f')?.split_once(':')?;
    Some(Pc::new(f.parse().ok()?, o.parse().ok()?))
}

fn parse_target(s: &str) -> std::result::Result<Target, String> {
    match s.trim() {
        "next" => Ok(Target::Next),
        "head" => Ok(Target::Head),
        t => {
            let num = |p: &str| t.strip_prefix(p).and_then(|n| n.trim().parse().ok());
            num("exit ")
                .map(Target::Exit)
                .or_else(|| num("block ").map(Target::Block))
                .ok_or_else(|| {
                    format!("`{t}` is not a target (`next`, `head`, `exit N` or `block N`)")
                })
        }
    }
}

fn parse_num<T: std::str::FromStr>(s: &str, what: &str) -> std::result::Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{}` is not {what}", s.trim()))
}

fn parse_step(l: &str) -> std::result::Result<Step, String> {
    if let Some(rest) = l.strip_prefix("block ") {
        let mut words = rest.split_whitespace();
        let offset = parse_num(words.next().unwrap_or(""), "a block offset")?;
        let weight = words
            .next()
            .and_then(|w| w.strip_prefix("weight="))
            .ok_or("expected `block OFFSET weight=W [dup]`")?;
        let weight = parse_num(weight, "a weight")?;
        let duplicated = match words.next() {
            None => false,
            Some("dup") => true,
            Some(w) => return Err(format!("unexpected `{w}` after the block weight")),
        };
        return Ok(Step::Block {
            offset,
            end: 0,
            weight,
            duplicated,
        });
    }
    if let Some(rest) = l.strip_prefix("guard ") {
        let (cond, resume) = rest
            .split_once("| fail")
            .ok_or("expected `guard rN == VALUE | fail OFFSET`")?;
        let (reg, value) = cond
            .split_once("==")
            .ok_or("expected `guard rN == VALUE | fail OFFSET`")?;
        let reg = reg
            .trim()
            .strip_prefix('r')
            .ok_or("a guard names a register `rN`")?;
        return Ok(Step::Guard {
            reg: parse_num(reg, "a register number")?,
            value: parse_num(value, "a 64-bit value")?,
            resume: parse_num(resume, "a resume offset")?,
        });
    }
    if let Some(rest) = l.strip_prefix("goto ") {
        return Ok(Step::Goto(parse_target(rest)?));
    }
    let (pc, rest) = l
        .split_once(':')
        .ok_or("expected `OFFSET: instruction`, `block`, `guard` or `goto`")?;
    let pc: u32 = parse_num(pc, "an instruction offset")?;
    let rest = rest.trim();
    if let Some(instr) = rest.strip_prefix("interpret ") {
        return Ok(Step::Interpret {
            pc,
            instr: parse_instr(instr)?,
        });
    }
    if let Some(instr) = rest.strip_prefix("interpreted ") {
        let instr = parse_instr(instr)?;
        if !matches!(instr, Instr::Call { .. } | Instr::Calli { .. }) {
            return Err("only a `call` or `calli` is `interpreted`".into());
        }
        return Ok(Step::Interpreted { pc, instr });
    }
    if let Some(call) = rest.strip_prefix("native [") {
        let (list, instr) = call
            .split_once(']')
            .ok_or("expected `OFFSET: native [fA, fB] calli ...`")?;
        let callees = list
            .split(',')
            .map(|c| {
                c.trim()
                    .strip_prefix('f')
                    .ok_or_else(|| format!("`{}` is not a function `fN`", c.trim()))
                    .and_then(|n| parse_num(n, "a function index"))
            })
            .collect::<std::result::Result<_, _>>()?;
        return Ok(Step::Dispatch {
            pc,
            instr: parse_instr(instr)?,
            callees,
        });
    }
    if let Some(call) = rest.strip_prefix("native ") {
        let (callee, instr) = call
            .trim()
            .split_once(char::is_whitespace)
            .ok_or("expected `OFFSET: native fN call ...`")?;
        let callee = callee
            .strip_prefix('f')
            .ok_or("a native call names its callee `fN`")?;
        return Ok(Step::Call {
            pc,
            instr: parse_instr(instr)?,
            callee: parse_num(callee, "a function index")?,
        });
    }
    let Some((instr, targets)) = rest.split_once("->") else {
        return Ok(Step::Op {
            pc,
            instr: parse_instr(rest)?,
        });
    };
    let (first, default) = targets
        .rsplit_once('|')
        .ok_or("expected `-> TAKEN | FALL` after a branch")?;
    if let Some(reg) = instr.trim().strip_prefix("jtab ") {
        let reg = reg
            .trim()
            .strip_prefix('r')
            .ok_or("jtab names a register")?;
        let list = first
            .trim()
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(']'))
            .ok_or("expected `jtab rN -> [T0, T1, ...] | DEFAULT`")?;
        let cases = if list.trim().is_empty() {
            Vec::new()
        } else {
            list.split(',')
                .map(parse_target)
                .collect::<std::result::Result<_, _>>()?
        };
        return Ok(Step::Switch {
            pc,
            a: parse_num(reg, "a register number")?,
            cases,
            default: parse_target(default)?,
        });
    }
    Ok(Step::Branch {
        pc,
        instr: parse_instr(instr)?,
        taken: parse_target(first)?,
        fall: parse_target(default)?,
    })
}

/// Renders a region for humans and logs, with a trailing summary line of
/// its exits (used by `--jit-log`).
pub fn describe(region: &Region) -> String {
    let mut s = region.to_string();
    let exits = region.control_exits();
    let _ = writeln!(
        s,
        "  ; {} instructions, {} exits, {}",
        region.instr_count(),
        exits.len(),
        if region.loops() {
            "loops to head"
        } else {
            "no loop"
        }
    );
    s
}

#[cfg(test)]
mod tests;
