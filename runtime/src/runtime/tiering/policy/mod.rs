//! The JIT's hotness policy: what to compile, recompile, grow or drop at
//! each interval end. This module decides; the JIT (`super`, see
//! `interval`) plans, compiles and installs what it decides.
//!
//! Each region head moves through a small state machine (after yk's),
//! [`Heads`], whose transitions are its methods:
//!
//! ```text
//!                  may_compile: candidates form a region
//!  (no state) ----------------------------------------------+
//!                                                           v
//!  Counting { again, not_before } ---- compiled ----> Compiled { slot, again }
//!     ^   (planned only from interval `not_before`)     |  |  |
//!     |                                                 |  |  | grown or unguarded:
//!     |   dropped, within the limits:                   |  |  | again.recompiles += 1,
//!     |                                                 |  |  | recompiled in place
//!     +------- idle after use: revivals += 1, ----------+  |  +--+
//!     |        back-off 2^(revivals/4) - 1 intervals       |     |
//!     +------- hot exits, failing guards, early leaves, ---+  <--+
//!              never entered: recompiles += 1,             |
//!              back-off 2^recompiles intervals             |
//!                                                          | dropped past max_recompiles
//!                                                          v or max_revivals
//!  any state ---- failed (the compile failed) ------> DontCompile (interpreted for good;
//!                                                      counted in `given_up` when dropped)
//! ```
//!
//! Both counts are bounded, so no head compiles forever: a region that
//! goes idle is no fault of its own (the phase moved on) and comes back at
//! once the first few times, but a head that keeps going idle and coming
//! back (a compile/drop storm) backs off and stops at `max_revivals`.
//!
//! The JIT's own work is paid for by the program's, in tuples, so that no
//! interval length or phase pattern makes it cost more than it can win
//! (issue 12: at an interval of 100, planning every interval and compiling
//! on every new candidate made short and phase-rich programs many times
//! slower than interpreting them). Every tuple the program produces earns
//! one unit of credit (up to a cap); planning regions from the candidates
//! costs `plan_cost` (growing an installed tree, which plans its one
//! function, costs the same) and compiling one costs `compile_cost`. Candidates of
//! intervals that cannot pay for planning are kept and summed, and planned
//! together when the credit allows; a compile that cannot be paid for is
//! deferred (the head stays Counting and is planned again). A plan goes
//! ahead only when the credit also covers a compile after it: otherwise,
//! with intervals shorter than a compile's cost, every plan spent what the
//! intervals earned and no compile was ever paid for (regex at an interval
//! of 1,000 planned 35,831 times in 71,650 intervals and compiled nothing
//! after its first intervals, running 5x slower than the interpreter). The
//! credit is counted in tuples, not time, so decisions stay deterministic.
//!
//! Idleness is judged on what ran. The interpreter hands tuples over in
//! batches of [`toyvm_vm::BATCH`]; with a short interval one batch ends
//! several intervals at once, and nothing runs between them. A region
//! installed at the first of those must not count as idle at the next:
//! an interval counts toward idleness only if the program ran since the
//! region was last reviewed (the batches counted by `Jit::ran`).
//!
//! Compiled code emits no tuples, so a compiled region's own candidates
//! vanish from the profile as soon as it runs. What tells the runtime that a
//! region no longer fits is what the region itself counts: its entries
//! (none for `idle_intervals` intervals: the program's phase moved on, so
//! the region is dropped), its guard failures (a guarded value stopped
//! being constant) and its side exits that resume inside its own code (a
//! branch inside the trace changed direction); see [`review`]. A loop
//! kept alive by its other trips whose value guards fail on one trip in
//! 200 or more is planned again without guarding those values, which no
//! later plan guards (`review::COSTLY_GUARD`). Dropped
//! code is interpreted, and so profiled, again, and the next intervals'
//! candidates decide anew.
//!
//! Every decision about a head is a [`Decision`]: the JIT acts on it and
//! its log writes it.

mod candidates;
mod decision;
pub(super) mod review;

use std::collections::HashMap;

use crate::runtime::JitOptions;

pub(super) use candidates::Summed;
pub(super) use decision::{Decision, Installation};
pub(super) use review::{Installed, Shape, Verdict, laid_out};

/// A region head: function and instruction offset.
pub(super) type Head = (u32, u32);

/// How often a head was compiled again: after hot exits or failing
/// guards (`recompiles`), and after going idle (`revivals`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Again {
    pub(super) recompiles: u32,
    pub(super) revivals: u32,
}

impl Again {
    /// After the tree at the head grew (recompiled in place).
    pub(super) fn grown(self) -> Again {
        Again {
            recompiles: self.recompiles + 1,
            ..self
        }
    }
}

/// A head's state (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum HeadState {
    /// Interpreted and profiled; may be planned from interval `not_before`.
    Counting { again: Again, not_before: u64 },
    /// The region in `slot` is installed there.
    Compiled { slot: u32, again: Again },
    /// Interpreted for good.
    DontCompile,
}

/// What became of a head whose region was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterDrop {
    /// Counting again; it may recompile from interval `not_before`.
    Counting { not_before: u64 },
    /// Past `max_recompiles` or `max_revivals`: left to the interpreter.
    /// `again`: how often it had been compiled again before.
    GivenUp { again: Again },
}

/// Why compiled code is not installed after all (see [`Heads::stale`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stale {
    /// Its head went to [`HeadState::DontCompile`] while it compiled.
    GivenUp,
    /// It was to replace a region that was dropped while it compiled.
    Replaced,
}

/// Every head's state and how often it was installed (see the module
/// docs): the state machine, its transitions its methods.
#[derive(Debug, Default)]
pub(super) struct Heads {
    states: HashMap<Head, HeadState>,
    /// Per head, how many compiles were installed there.
    versions: HashMap<Head, u32>,
}

impl Heads {
    /// Whether `head` may be planned at interval `index`, and if so how
    /// often it was compiled again before: only a head never seen, or
    /// Counting past its back-off.
    pub(super) fn may_compile(&self, head: Head, index: u64) -> Option<Again> {
        match self.states.get(&head) {
            None => Some(Again::default()),
            Some(HeadState::Counting { again, not_before }) if *not_before <= index => Some(*again),
            Some(_) => None,
        }
    }

    /// The slot of the region installed at `head`, if any.
    pub(super) fn installed(&self, head: Head) -> Option<u32> {
        match self.states.get(&head) {
            Some(HeadState::Compiled { slot, .. }) => Some(*slot),
            _ => None,
        }
    }

    /// The heads with a region installed, with its slot and history, in a
    /// fixed order: `states` is a hash map, and which head the budget pays
    /// for first, or which slot is freed and reused, must not depend on
    /// its seed.
    pub(super) fn compiled(&self) -> Vec<(Head, u32, Again)> {
        let mut heads: Vec<(Head, u32, Again)> = self
            .states
            .iter()
            .filter_map(|(k, s)| match *s {
                HeadState::Compiled { slot, again } => Some((*k, slot, again)),
                _ => None,
            })
            .collect();
        heads.sort_unstable_by_key(|&(head, _, _)| head);
        heads
    }

    /// Compiled code for `head` is installed in `slot`: Compiled. Returns
    /// its version (1 for the head's first compile).
    pub(super) fn install(&mut self, head: Head, slot: u32, again: Again) -> u32 {
        self.states
            .insert(head, HeadState::Compiled { slot, again });
        let version = self.versions.entry(head).or_insert(0);
        *version += 1;
        *version
    }

    /// The compile for `head` failed: DontCompile.
    pub(super) fn failed(&mut self, head: Head) {
        self.states.insert(head, HeadState::DontCompile);
    }

    /// Whether code compiled for `head` is no longer wanted: what happened
    /// at the head while it compiled decides. `replaces`: the slot
    /// installed at `head` when it was submitted.
    pub(super) fn stale(&self, head: Head, replaces: Option<u32>) -> Option<Stale> {
        match (self.states.get(&head), replaces) {
            (Some(HeadState::DontCompile), _) => Some(Stale::GivenUp),
            (Some(HeadState::Compiled { slot, .. }), Some(old)) if *slot == old => None,
            (_, Some(_)) => Some(Stale::Replaced),
            (_, None) => None,
        }
    }

    /// The region at `head`, compiled `again` times before, was dropped at
    /// interval `index` for `verdict`: Counting after a back-off, or
    /// DontCompile past the limits.
    pub(super) fn dropped(
        &mut self,
        head: Head,
        again: Again,
        verdict: Verdict,
        index: u64,
        limits: Limits,
    ) -> AfterDrop {
        let (next, not_before) = if verdict.is_revival() {
            let next = Again {
                revivals: again.revivals + 1,
                ..again
            };
            (next, index + (1u64 << (next.revivals / 4).min(16)) - 1)
        } else {
            let next = Again {
                recompiles: again.recompiles + 1,
                ..again
            };
            (next, index + (1u64 << next.recompiles.min(16)))
        };
        let (state, after) =
            if next.recompiles > limits.max_recompiles || next.revivals > limits.max_revivals {
                (HeadState::DontCompile, AfterDrop::GivenUp { again })
            } else {
                (
                    HeadState::Counting {
                        again: next,
                        not_before,
                    },
                    AfterDrop::Counting { not_before },
                )
            };
        self.states.insert(head, state);
        after
    }

    /// `head`'s state (none: never planned).
    #[cfg(test)]
    pub(super) fn state(&self, head: Head) -> Option<HeadState> {
        self.states.get(&head).copied()
    }
}

/// What the JIT may still spend, in tuples, and the candidates of interval
/// ends it has not planned from yet (see the module docs).
#[derive(Debug)]
pub(super) struct Budget {
    credit: u64,
    /// Most credit kept: the initial credit and sixteen compiles.
    cap: u64,
    plan_cost: u64,
    compile_cost: u64,
    /// Candidates of interval ends not planned from yet, summed.
    pub(super) pending: Summed,
}

impl Budget {
    /// The initial credit and the costs of `opts`.
    pub(super) fn new(opts: &JitOptions) -> Budget {
        Budget {
            credit: opts.initial_credit,
            cap: opts
                .initial_credit
                .saturating_add(opts.compile_cost.saturating_mul(16)),
            plan_cost: opts.plan_cost,
            compile_cost: opts.compile_cost,
            pending: Summed::default(),
        }
    }

    /// The program produced `tuples` tuples: one unit of credit each, up
    /// to the cap.
    pub(super) fn earn(&mut self, tuples: u64) {
        self.credit = self.credit.saturating_add(tuples).min(self.cap);
    }

    /// Pays for a plan if the credit covers it and a compile after it.
    pub(super) fn pay_plan(&mut self) -> bool {
        self.credit >= self.plan_cost.saturating_add(self.compile_cost) && self.pay(self.plan_cost)
    }

    /// Pays for a compile if the credit covers it.
    pub(super) fn pay_compile(&mut self) -> bool {
        self.pay(self.compile_cost)
    }

    fn pay(&mut self, cost: u64) -> bool {
        let paid = self.credit >= cost;
        if paid {
            self.credit -= cost;
        }
        paid
    }
}

/// How often one head may be compiled again (see [`JitOptions`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) max_recompiles: u32,
    pub(super) max_revivals: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_recompiles: 4,
        max_revivals: 32,
    };

    fn leaves() -> Verdict {
        Verdict::LeavesAtOnce {
            entries: 100,
            work: 10,
            least: 16,
        }
    }

    #[test]
    fn drops_for_cause_back_off_exponentially_and_give_up() {
        let mut heads = Heads::default();
        let head = (0, 2);
        assert_eq!(heads.may_compile(head, 0), Some(Again::default()));
        let mut again = Again::default();
        for k in 1..=LIMITS.max_recompiles + 1 {
            assert_eq!(heads.install(head, 0, again), k);
            assert_eq!(heads.installed(head), Some(0));
            assert_eq!(heads.may_compile(head, 10), None, "compiled");
            match heads.dropped(head, again, leaves(), 10, LIMITS) {
                AfterDrop::Counting { not_before } => {
                    // Back-off doubles with each drop for cause.
                    assert_eq!(not_before, 10 + (1 << k));
                    assert_eq!(heads.may_compile(head, not_before - 1), None);
                    again = heads.may_compile(head, not_before).expect("counting");
                    assert_eq!(again.recompiles, k);
                }
                AfterDrop::GivenUp { again: before } => {
                    assert_eq!(k, LIMITS.max_recompiles + 1);
                    assert_eq!(before, again);
                    assert_eq!(heads.state(head), Some(HeadState::DontCompile));
                    assert_eq!(heads.may_compile(head, u64::MAX), None);
                }
            }
        }
    }

    #[test]
    fn going_idle_after_use_comes_back_at_once_the_first_times() {
        let mut heads = Heads::default();
        let head = (1, 0);
        let idle = Verdict::Idle {
            intervals: 3,
            used: true,
        };
        let mut again = Again::default();
        for j in 1..=3 {
            heads.install(head, 5, again);
            let after = heads.dropped(head, again, idle, 7, LIMITS);
            assert_eq!(after, AfterDrop::Counting { not_before: 7 });
            again = heads.may_compile(head, 7).expect("counting");
            assert_eq!(again.revivals, j);
        }
        // Never entered is the region's own fault.
        heads.install(head, 5, again);
        let never = Verdict::Idle {
            intervals: 3,
            used: false,
        };
        assert_eq!(
            heads.dropped(head, again, never, 7, LIMITS),
            AfterDrop::Counting { not_before: 9 }
        );
    }

    #[test]
    fn code_compiled_for_a_head_that_changed_is_stale() {
        let mut heads = Heads::default();
        let head = (0, 4);
        assert_eq!(heads.stale(head, None), None);
        heads.install(head, 3, Again::default());
        // A recompile in place of slot 3: wanted while 3 is there.
        assert_eq!(heads.stale(head, Some(3)), None);
        assert_eq!(heads.stale(head, Some(2)), Some(Stale::Replaced));
        heads.dropped(head, Again::default(), leaves(), 0, LIMITS);
        assert_eq!(heads.stale(head, Some(3)), Some(Stale::Replaced));
        heads.failed(head);
        assert_eq!(heads.stale(head, None), Some(Stale::GivenUp));
        assert_eq!(heads.compiled(), Vec::new());
    }
}
