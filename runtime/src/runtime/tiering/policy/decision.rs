//! What the policy decided about a head, as values: the JIT acts on them,
//! counts them, and writes them to its log (`--jit-log`) through their
//! `Display`, one line each.

use std::fmt;
use std::time::Duration;

use toyvm_optimizer::NativesCompiled;

use super::super::compiler::CompileError;
use super::{AfterDrop, Stale, Verdict};

/// One decision about a region head.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Compiled code installed at the head: its first compile, or a
    /// recompile (`again`: the head was compiled before, dropped or grown).
    Install(Installation),
    /// The installed loop keeps leaving and its tree, planned again, grows:
    /// recompiled in place.
    Grow {
        /// Exits it took in the last reviewed interval.
        exits: u64,
        /// Instructions of its tree, before and after.
        instrs: (usize, usize),
        /// Callees of its native calls and dispatches, before and after.
        callees: (usize, usize),
    },
    /// The installed loop's value guards failed too often for their
    /// constants to pay (`values`: each guarded value's pc and its failures in an interval of `trips` trips through the
    /// head): planned again without them and recompiled in place.
    Unguard {
        /// Each value no longer guarded: its load's pc (or argument's
        /// pseudo-pc), and its failures.
        values: Vec<(toyvm_vm::Pc, u64)>,
        /// Trips through the head in the interval.
        trips: u64,
    },
    /// The review dropped the installed region.
    Drop {
        /// Why.
        verdict: Verdict,
        /// What became of its head.
        after: AfterDrop,
    },
    /// The compile failed: the head is left to the interpreter.
    CompileFailed(CompileError),
    /// Code compiled for the head is not installed after all.
    Discard(Stale),
}

/// What was installed (see [`Decision::Install`]).
#[derive(Clone, Debug)]
pub(crate) struct Installation {
    /// A recompile (the head was compiled before).
    pub(crate) again: bool,
    /// The region: its blocks, instructions, weight and guards, or a
    /// whole native function.
    pub(crate) description: String,
    /// Its exit sites.
    pub(crate) exits: usize,
    /// What compiling it took.
    pub(crate) compile_time: Duration,
    /// Machine code bytes.
    pub(crate) bytes: usize,
    /// Native calls inlined.
    pub(crate) inlined: usize,
    /// The native functions compiled for it first.
    pub(crate) natives: NativesCompiled,
    /// Products strength-reduced.
    pub(crate) reduced: usize,
}

impl Decision {
    /// The decision about the head described as `head`, as the log writes
    /// it.
    pub(crate) fn at<'a>(&'a self, head: &'a str) -> impl fmt::Display + 'a {
        At {
            head,
            decision: self,
        }
    }
}

struct At<'a> {
    head: &'a str,
    decision: &'a Decision,
}

impl fmt::Display for At<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = self.head;
        match self.decision {
            Decision::Install(i) => {
                write!(
                    f,
                    "{} {what}: {}, {} exits, {:.3} ms, {} bytes",
                    if i.again { "recompile" } else { "compile" },
                    i.description,
                    i.exits,
                    i.compile_time.as_secs_f64() * 1e3,
                    i.bytes,
                )?;
                let n = i.natives;
                if n.functions > 0 {
                    write!(
                        f,
                        ", after {} native function{} ({} instructions) in {:.3} ms",
                        n.functions,
                        if n.functions == 1 { "" } else { "s" },
                        n.instructions,
                        n.time.as_secs_f64() * 1e3,
                    )?;
                }
                match i.inlined {
                    0 => {}
                    1 => f.write_str(", 1 native call inlined")?,
                    n => write!(f, ", {n} native calls inlined")?,
                }
                match i.reduced {
                    0 => Ok(()),
                    1 => f.write_str(", 1 product strength-reduced"),
                    n => write!(f, ", {n} products strength-reduced"),
                }
            }
            Decision::Grow {
                exits,
                instrs,
                callees,
            } => write!(
                f,
                "grow {what}: {exits} exits in the interval; its tree grows from {} to {} instructions, {} to {} native callees",
                instrs.0, instrs.1, callees.0, callees.1
            ),
            Decision::Unguard { values, trips } => {
                write!(f, "unguard {what}: ")?;
                for (i, (pc, n)) in values.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}the value at {pc} failed its guard {n} times")?;
                }
                write!(
                    f,
                    " in {trips} trips through its head; planned again without guarding {}",
                    if values.len() == 1 { "it" } else { "them" }
                )
            }
            Decision::Drop {
                verdict,
                after: AfterDrop::Counting { not_before },
            } => write!(
                f,
                "drop {what}: {verdict}; may recompile from interval {not_before}"
            ),
            Decision::Drop {
                verdict,
                after: AfterDrop::GivenUp { again },
            } => write!(
                f,
                "drop {what}: {verdict}; recompiled {} times after exits, guards or early leaves and {} after going idle: left to the interpreter",
                again.recompiles, again.revivals
            ),
            Decision::CompileFailed(e) => {
                write!(f, "cannot compile {what}: {e}; left to the interpreter")
            }
            Decision::Discard(stale) => write!(
                f,
                "discard the compile of {what}: {} while it compiled",
                match stale {
                    Stale::GivenUp => "its head was given up",
                    Stale::Replaced => "the region it was to replace was dropped",
                }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Again;
    use super::*;

    const HEAD: &str = "`main`+2 (f0:2)";

    fn line(d: &Decision) -> String {
        d.at(HEAD).to_string()
    }

    #[test]
    fn installs_read_as_before() {
        let mut i = Installation {
            again: false,
            description: "2 blocks, 9 instructions, head weight 100".to_string(),
            exits: 3,
            compile_time: Duration::from_micros(1_250),
            bytes: 412,
            inlined: 0,
            reduced: 0,
            natives: NativesCompiled::default(),
        };
        assert_eq!(
            line(&Decision::Install(Installation { ..i.clone() })),
            "compile `main`+2 (f0:2): 2 blocks, 9 instructions, head weight 100, 3 exits, 1.250 ms, 412 bytes"
        );
        i.again = true;
        i.inlined = 1;
        i.reduced = 2;
        assert_eq!(
            line(&Decision::Install(i.clone())),
            "recompile `main`+2 (f0:2): 2 blocks, 9 instructions, head weight 100, 3 exits, 1.250 ms, 412 bytes, 1 native call inlined, 2 products strength-reduced"
        );
        i.inlined = 4;
        i.reduced = 1;
        assert!(
            line(&Decision::Install(i.clone()))
                .ends_with(", 4 native calls inlined, 1 product strength-reduced")
        );
        i.inlined = 0;
        i.reduced = 0;
        i.natives = NativesCompiled {
            functions: 17,
            instructions: 1450,
            time: Duration::from_micros(17_633),
        };
        assert!(
            line(&Decision::Install(i.clone())).ends_with(
                ", 412 bytes, after 17 native functions (1450 instructions) in 17.633 ms"
            )
        );
        i.natives.functions = 1;
        assert!(line(&Decision::Install(i)).contains(", after 1 native function (1450"));
    }

    #[test]
    fn the_other_decisions_read_as_before() {
        let grow = Decision::Grow {
            exits: 40,
            instrs: (12, 30),
            callees: (1, 3),
        };
        assert_eq!(
            line(&grow),
            "grow `main`+2 (f0:2): 40 exits in the interval; its tree grows from 12 to 30 instructions, 1 to 3 native callees"
        );
        let unguard = |values: Vec<(toyvm_vm::Pc, u64)>| Decision::Unguard {
            values,
            trips: 47_148,
        };
        assert_eq!(
            line(&unguard(vec![(toyvm_vm::Pc::new(1, 407), 1075)])),
            "unguard `main`+2 (f0:2): the value at f1:407 failed its guard 1075 times in 47148 trips through its head; planned again without guarding it"
        );
        let two = vec![(toyvm_vm::Pc::new(0, 5), 3), (toyvm_vm::Pc::arg(0, 1), 400)];
        assert!(line(&unguard(two)).contains(
            "the value at f0:5 failed its guard 3 times, the value at f0:arg1 failed its guard 400 times in 47148 trips through its head; planned again without guarding them"
        ));
        let verdict = Verdict::Idle {
            intervals: 3,
            used: true,
        };
        let dropped = Decision::Drop {
            verdict,
            after: AfterDrop::Counting { not_before: 17 },
        };
        assert_eq!(
            line(&dropped),
            "drop `main`+2 (f0:2): not entered for 3 intervals; may recompile from interval 17"
        );
        let given_up = Decision::Drop {
            verdict,
            after: AfterDrop::GivenUp {
                again: Again {
                    recompiles: 4,
                    revivals: 2,
                },
            },
        };
        assert_eq!(
            line(&given_up),
            "drop `main`+2 (f0:2): not entered for 3 intervals; recompiled 4 times after exits, guards or early leaves and 2 after going idle: left to the interpreter"
        );
        let failed = Decision::CompileFailed(CompileError::NoResult);
        assert_eq!(
            line(&failed),
            format!(
                "cannot compile `main`+2 (f0:2): {}; left to the interpreter",
                CompileError::NoResult
            )
        );
        assert_eq!(
            line(&Decision::Discard(Stale::GivenUp)),
            "discard the compile of `main`+2 (f0:2): its head was given up while it compiled"
        );
        assert_eq!(
            line(&Decision::Discard(Stale::Replaced)),
            "discard the compile of `main`+2 (f0:2): the region it was to replace was dropped while it compiled"
        );
    }
}
