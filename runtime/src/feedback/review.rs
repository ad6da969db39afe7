//! The review rule: what to do with a compiled region (a host's trace)
//! after an interval, from what it counted. One rule, used by toyvm's own
//! JIT (its policy reviews every installed region with it, see
//! `runtime::tiering::policy::review`) and by the [feedback
//! component](super) (contract item 6), so that a host is told what toyvm
//! itself would do with the same numbers.
//!
//! The rule is pure: thresholds ([`ReviewRule`]) and one interval's counts
//! ([`Counted`]) in, a [`Verdict`] out, whose [`Action`] is keep, drop or
//! recompile. In order, a region is:
//! 1. **idle** ([`Verdict::Idle`], drop) when it was not entered in
//!    `idle_intervals` intervals in a row that ran (an interval in which
//!    nothing ran gave it no chance, and one in which something else kept
//!    it alive, such as a live region's native calls, does not count);
//! 2. **failing its guards** ([`Verdict::GuardsFail`], recompile) when they
//!    failed on `guard_failure_share` of at least `min_entries` trips
//!    through its head (against trips, not entries: a loop is re-entered
//!    right after each failure);
//! 3. **leaving hot** ([`Verdict::HotExit`], recompile) when the most taken
//!    exit back into its own code took `hot_exit_share` of at least
//!    `min_entries` entries (a branch inside it changed direction; a loop
//!    leaves through its exit once per entry whatever its shape);
//! 4. **leaving at once** ([`Verdict::LeavesAtOnce`], recompile) when its
//!    entries, at least `min_entries`, ran fewer than `least_work`
//!    instructions of compiled code each: it costs more to enter and leave
//!    than it saves.
//!
//! Checks 2 and 4 are optional: a host without guards, or that does not
//! estimate work, leaves them out (`None`).

use std::fmt;

/// The thresholds of the review (toyvm's JIT takes them from its
/// `JitOptions`, the feedback component from its `FeedbackConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ReviewRule {
    /// Intervals that ran without an entry before a region is idle.
    pub(crate) idle_intervals: u32,
    /// Fewer entries (or trips) in an interval than this are too few to
    /// judge exits, guards or work by.
    pub(crate) min_entries: u64,
    /// Share of the entries one exit back into the region must take.
    pub(crate) hot_exit_share: f64,
    /// Share of the trips on which guards must fail; `None`: not judged.
    pub(crate) guard_failure_share: Option<f64>,
    /// Least instructions of compiled code an entry must run on average;
    /// `None`: not judged.
    pub(crate) least_work: Option<u64>,
}

/// What one region counted over one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Counted {
    /// Entries in the interval.
    pub(crate) entries: u64,
    /// Passes through its head (entries and loop trips).
    pub(crate) trips: u64,
    /// Guard failures.
    pub(crate) guard_failures: u64,
    /// The most taken exit back into the region's own code, as
    /// `(target, times)` (see [`hottest`]).
    pub(crate) hot_exit: Option<(u32, u64)>,
    /// Instructions of compiled code its entries ran, estimated.
    pub(crate) work: u64,
    /// Whether anything ran since the last review (else the region had no
    /// chance to be entered).
    pub(crate) program_ran: bool,
    /// Whether something else keeps it alive though not entered.
    pub(crate) kept_alive: bool,
    /// Whether it was ever entered.
    pub(crate) used: bool,
}

/// The review's verdict on one region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Keep it.
    Keep,
    /// Not entered for this many intervals that ran; `used`: it was
    /// entered before.
    Idle { intervals: u32, used: bool },
    /// Guards failed on `failures` of `trips` trips through its head.
    GuardsFail { failures: u64, trips: u64 },
    /// The exit to `at` was taken on `taken` of `entries` entries.
    HotExit { at: u32, taken: u64, entries: u64 },
    /// Its `entries` entries ran about `work` instructions of compiled
    /// code in all, fewer than `least` each.
    LeavesAtOnce { entries: u64, work: u64, least: u64 },
}

/// What a verdict asks of the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Keep the region.
    Keep,
    /// Drop it: its phase is over (or it was never used).
    Drop,
    /// Compile it again from the current profile: it no longer fits.
    Recompile,
}

impl Verdict {
    /// What the verdict asks of the host.
    pub(crate) fn action(self) -> Action {
        match self {
            Verdict::Keep => Action::Keep,
            Verdict::Idle { .. } => Action::Drop,
            Verdict::GuardsFail { .. } | Verdict::HotExit { .. } | Verdict::LeavesAtOnce { .. } => {
                Action::Recompile
            }
        }
    }

    /// Whether the drop counts as going idle after use (revived soon)
    /// rather than as the region's fault (backed off): see toyvm's head
    /// state machine.
    pub(crate) fn is_revival(self) -> bool {
        matches!(self, Verdict::Idle { used: true, .. })
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Verdict::Keep => f.write_str("kept"),
            Verdict::Idle {
                intervals,
                used: true,
            } => write!(f, "not entered for {intervals} intervals"),
            Verdict::Idle {
                intervals,
                used: false,
            } => write!(f, "never entered in {intervals} intervals"),
            Verdict::GuardsFail { failures, trips } => {
                write!(
                    f,
                    "guards failed on {failures} of {trips} trips through its head"
                )
            }
            Verdict::HotExit { at, taken, entries } => {
                write!(
                    f,
                    "side exit to offset {at} taken on {taken} of {entries} entries"
                )
            }
            Verdict::LeavesAtOnce {
                entries,
                work,
                least,
            } => write!(
                f,
                "its {entries} entries leave at once: about {:.1} instructions of compiled code each, fewer than {least}",
                work as f64 / entries.max(1) as f64
            ),
        }
    }
}

/// The first of the most taken among `exits` (`(target, times)`, in the
/// host's order): the exit the hot-exit check judges.
pub(crate) fn hottest(exits: impl IntoIterator<Item = (u32, u64)>) -> Option<(u32, u64)> {
    exits.into_iter().fold(None, |best, (at, n)| match best {
        Some((_, m)) if n <= m => best,
        _ => Some((at, n)),
    })
}

impl ReviewRule {
    /// The region's idle count after this interval, from `idle` before.
    pub(crate) fn idle(&self, idle: u32, c: &Counted) -> u32 {
        match (c.entries, c.program_ran) {
            (0, true) if c.kept_alive => 0,
            (0, true) => idle + 1,
            (0, false) => idle,
            _ => 0,
        }
    }

    /// The verdict on a region that counted `c` in the interval and has
    /// now been idle for `idle` intervals (see [`ReviewRule::idle`]).
    pub(crate) fn judge(&self, idle: u32, c: &Counted) -> Verdict {
        let judged = |n: u64| n >= self.min_entries;
        if idle >= self.idle_intervals {
            Verdict::Idle {
                intervals: idle,
                used: c.used,
            }
        } else if self.guard_failure_share.is_some_and(|share| {
            judged(c.trips) && c.guard_failures as f64 >= share * c.trips as f64
        }) {
            Verdict::GuardsFail {
                failures: c.guard_failures,
                trips: c.trips,
            }
        } else if let Some((at, taken)) = c.hot_exit.filter(|&(_, n)| {
            judged(c.entries) && n as f64 >= self.hot_exit_share * c.entries as f64
        }) {
            Verdict::HotExit {
                at,
                taken,
                entries: c.entries,
            }
        } else if let Some(least) = self
            .least_work
            .filter(|&least| judged(c.entries) && c.work < least * c.entries)
        {
            Verdict::LeavesAtOnce {
                entries: c.entries,
                work: c.work,
                least,
            }
        } else {
            Verdict::Keep
        }
    }

    /// [`ReviewRule::idle`] then [`ReviewRule::judge`]: the idle count
    /// after the interval, and the verdict.
    pub(crate) fn review(&self, idle: u32, c: &Counted) -> (u32, Verdict) {
        let idle = self.idle(idle, c);
        (idle, self.judge(idle, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// toyvm's JIT's defaults.
    const JIT: ReviewRule = ReviewRule {
        idle_intervals: 3,
        min_entries: 8,
        hot_exit_share: 0.5,
        guard_failure_share: Some(0.1),
        least_work: Some(16),
    };

    fn entered(entries: u64) -> Counted {
        Counted {
            entries,
            trips: entries,
            work: entries * 100,
            program_ran: true,
            used: true,
            ..Counted::default()
        }
    }

    #[test]
    fn idleness_counts_only_intervals_that_ran() {
        let none = Counted {
            program_ran: true,
            used: true,
            ..Counted::default()
        };
        let mut idle = 0;
        let mut verdicts = Vec::new();
        for c in [
            none,
            Counted {
                program_ran: false,
                ..none
            },
            none,
            none,
        ] {
            let (next, v) = JIT.review(idle, &c);
            idle = next;
            verdicts.push(v);
        }
        assert_eq!(idle, 3);
        assert_eq!(verdicts[..3], [Verdict::Keep; 3]);
        assert_eq!(
            verdicts[3],
            Verdict::Idle {
                intervals: 3,
                used: true
            }
        );
        assert_eq!(verdicts[3].action(), Action::Drop);
        assert!(verdicts[3].is_revival());
        // Kept alive, or entered: idleness starts over.
        let kept = Counted {
            kept_alive: true,
            ..none
        };
        assert_eq!(JIT.idle(2, &kept), 0);
        assert_eq!(JIT.idle(2, &entered(1)), 0);
        let never = Counted {
            used: false,
            ..none
        };
        let v = JIT.judge(3, &never);
        assert!(!v.is_revival());
        assert_eq!(v.to_string(), "never entered in 3 intervals");
    }

    #[test]
    fn guards_are_judged_against_trips() {
        // One failure in ten trips: the share is met.
        let c = Counted {
            trips: 10,
            guard_failures: 1,
            ..entered(2)
        };
        assert_eq!(
            JIT.judge(0, &c),
            Verdict::GuardsFail {
                failures: 1,
                trips: 10
            }
        );
        assert_eq!(JIT.judge(0, &c).action(), Action::Recompile);
        // Below the share, too few trips, or no guards judged: kept.
        assert_eq!(JIT.judge(0, &Counted { trips: 11, ..c }), Verdict::Keep);
        assert_eq!(
            JIT.judge(
                0,
                &Counted {
                    trips: 7,
                    guard_failures: 7,
                    ..c
                }
            ),
            Verdict::Keep
        );
        let no_guards = ReviewRule {
            guard_failure_share: None,
            ..JIT
        };
        assert_eq!(no_guards.judge(0, &c), Verdict::Keep);
    }

    #[test]
    fn an_exit_back_in_taken_on_half_the_entries_is_hot() {
        let hot = hottest([(4, 3), (7, 5), (9, 5), (2, 1)]);
        assert_eq!(hot, Some((7, 5)), "the first of the most taken");
        assert_eq!(hottest(std::iter::empty()), None);
        let c = Counted {
            hot_exit: hot,
            ..entered(10)
        };
        let v = JIT.judge(0, &c);
        assert_eq!(
            v,
            Verdict::HotExit {
                at: 7,
                taken: 5,
                entries: 10
            }
        );
        assert_eq!(
            v.to_string(),
            "side exit to offset 7 taken on 5 of 10 entries"
        );
        assert_eq!(JIT.judge(0, &Counted { entries: 11, ..c }), Verdict::Keep);
        // Too few entries to judge.
        let few = Counted {
            hot_exit: Some((7, 7)),
            ..entered(7)
        };
        assert_eq!(JIT.judge(0, &few), Verdict::Keep);
        // Idleness comes first.
        assert!(matches!(JIT.judge(3, &c), Verdict::Idle { .. }));
    }

    #[test]
    fn entries_that_run_too_little_leave_at_once() {
        let c = Counted {
            work: 159,
            ..entered(10)
        };
        let v = JIT.judge(0, &c);
        assert_eq!(
            v,
            Verdict::LeavesAtOnce {
                entries: 10,
                work: 159,
                least: 16
            }
        );
        assert_eq!(v.action(), Action::Recompile);
        assert!(v.to_string().contains("about 15.9 instructions"), "{v}");
        assert_eq!(JIT.judge(0, &Counted { work: 160, ..c }), Verdict::Keep);
        let unknown = ReviewRule {
            least_work: None,
            ..JIT
        };
        assert_eq!(unknown.judge(0, &c), Verdict::Keep);
    }
}
