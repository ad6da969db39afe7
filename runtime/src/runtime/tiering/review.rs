//! The review at each interval end: what each installed region counted
//! since the last one, and whether to drop it ([`Verdict`]), with the
//! back-off that follows.
//!
//! A region is dropped when:
//! 1. it was not entered for `idle_intervals` intervals that ran ([`Verdict::Idle`]:
//!    the hot path moved on, or it was never used). A whole native
//!    function (see `toyvm_optimizer::CodeCache::compile_function`) that a
//!    live region calls natively is not idle, however rarely the
//!    interpreter enters it: that region's calls bypass it, and the
//!    interpreter's calls (a dispatch's miss, a bail) would find it gone;
//! 2. its guards failed on `guard_failure_share` of its trips
//!    ([`Verdict::GuardsFail`]);
//! 3. a side exit back into its own code was taken on `hot_exit_share` of
//!    its entries ([`Verdict::HotExit`]);
//! 4. its entries mostly leave at once ([`Verdict::LeavesAtOnce`]): the
//!    instructions an entry runs in compiled code, estimated from where its
//!    exits were taken and how often it looped, average fewer than
//!    `min_straight_instrs` (what a region that does not loop must hold to
//!    pay for entering and leaving). Such a region costs more than it saves
//!    (a loop whose every entry hands its first call straight back, a
//!    trace whose first branch leaves it), so it backs off as 2 and 3 do.
//!
//! Going idle after real use is no fault of the region: it may come back
//! at once, the first few times. The others back off exponentially and
//! count toward their own limit (see the policy's state machine).

use std::collections::HashSet;
use std::fmt;

use toyvm_optimizer::{CompiledRegion, ExitKind, ExitReport};

use super::{Again, HeadState, Installed, Jit, describe};

/// Why the review drops a region (or keeps it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Keep it.
    Keep,
    /// Not entered for this many intervals that ran; `used`: it was
    /// entered before.
    Idle { intervals: u32, used: bool },
    /// Guards failed on `failures` of `trips` trips through its head.
    GuardsFail { failures: u64, trips: u64 },
    /// The side exit to `at` was taken on `taken` of `entries` entries.
    HotExit { at: u32, taken: u64, entries: u64 },
    /// Its `entries` entries ran about `work` instructions of compiled
    /// code in all, fewer than `least` each.
    LeavesAtOnce { entries: u64, work: u64, least: u64 },
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

impl Verdict {
    /// Whether the drop counts as going idle after use (revived soon,
    /// toward `max_revivals`) rather than as the region's fault (backed off
    /// exponentially, toward `max_recompiles`).
    fn is_revival(self) -> bool {
        matches!(self, Verdict::Idle { used: true, .. })
    }
}

/// How far into a region each exit site is: the instructions of the
/// region's own code an entry runs before leaving there, estimated from
/// the region's layout (`covers`, its instructions' offsets in layout
/// order); for a whole native function, its `ret` exit ran the function
/// (counted as `WHOLE_CALL`) and its bail ran nothing that stays.
pub(super) fn exit_reach(code: &CompiledRegion, covers: &[u32], whole: bool) -> Vec<u32> {
    let at = |pc: u32| covers.iter().position(|&c| c == pc).map(|i| i as u32);
    let all = covers.len() as u32;
    code.exits()
        .iter()
        .map(|site| {
            if whole {
                // Sites: the `ret` (the native body ran), a trap, a bail.
                return match site.kind {
                    ExitKind::Interpret if site.resume != 0 => WHOLE_CALL,
                    _ => 0,
                };
            }
            match (site.kind, site.report) {
                (ExitKind::Side, Some(ExitReport::Edge { branch })) => {
                    at(branch).map_or(all, |i| i + 1)
                }
                (ExitKind::Side, _) => all,
                (ExitKind::Trap, _) => 0,
                (ExitKind::Interpret | ExitKind::Guard, _) => at(site.resume).unwrap_or(all / 2),
            }
        })
        .collect()
}

/// What one call of a whole native function counts as in the work
/// estimate: a call that returned ran its body, at least one instruction
/// and nearly always more than a region needs to pay for its entry.
const WHOLE_CALL: u32 = 1_000;

impl Jit {
    /// Drops regions that went idle, whose guards fail or exits turn hot,
    /// or whose entries leave at once (see the module docs).
    pub(super) fn review(&mut self, index: u64) {
        let mut keys: Vec<((u32, u32), u32, Again)> = self
            .states
            .iter()
            .filter_map(|(k, s)| match s {
                HeadState::Compiled { slot, again } => Some((*k, *slot, *again)),
                _ => None,
            })
            .collect();
        // A fixed order, as in `grow`: slots freed and reused, and the
        // budget spent, must not depend on the hash map's seed.
        keys.sort_unstable_by_key(|&(key, _, _)| key);
        // Functions live regions call natively (see the module docs).
        let called: HashSet<u32> = self
            .slots
            .iter()
            .flatten()
            .flat_map(|r| r.calls.iter().copied())
            .collect();
        for (key, slot, again) in keys {
            let r = self.slots[slot as usize].as_mut().expect("installed");
            let verdict = judge(r, &self.opts, self.ran, called.contains(&key.0));
            if verdict == Verdict::Keep {
                continue;
            }
            self.drop_region(index, key, slot, again, verdict);
        }
    }

    /// Uninstalls the region at `key` for `verdict` and decides when its
    /// head may compile again.
    fn drop_region(
        &mut self,
        index: u64,
        key: (u32, u32),
        slot: u32,
        again: Again,
        verdict: Verdict,
    ) {
        let what = describe(&self.program, key.0, key.1);
        self.uninstall(slot);
        self.stats.drops += 1;
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
        let state = if next.recompiles > self.opts.max_recompiles
            || next.revivals > self.opts.max_revivals
        {
            self.stats.given_up += 1;
            HeadState::DontCompile
        } else {
            HeadState::Counting {
                again: next,
                not_before,
            }
        };
        match state {
            HeadState::DontCompile => self.log(
                index,
                format_args!(
                    "drop {what}: {verdict}; recompiled {} times after exits, guards or early leaves and {} after going idle: left to the interpreter",
                    again.recompiles, again.revivals
                ),
            ),
            HeadState::Counting { not_before, .. } => self.log(
                index,
                format_args!("drop {what}: {verdict}; may recompile from interval {not_before}"),
            ),
            HeadState::Compiled { .. } => unreachable!("just dropped"),
        }
        self.states.insert(key, state);
    }
}

/// What region `r` counted since its last review, and the verdict. `ran`
/// is the JIT's count of batches run; `called` whether a live region calls
/// the region's function natively.
fn judge(r: &mut Installed, opts: &super::JitOptions, ran: u64, called: bool) -> Verdict {
    if r.busy > 0 {
        // On the machine stack (it called the interpreter, which is where
        // this review runs from): in use, and its counts are away until it
        // returns. Judged at a later review, over both intervals.
        r.idle = 0;
        r.reviewed_at = ran;
        return Verdict::Keep;
    }
    let ever = r.entries;
    let entered = r.entries - r.entries_seen;
    r.entries_seen = r.entries;
    let mut guard_failures = 0;
    let mut side_exits = 0;
    let mut work: u64 = 0;
    let mut hot_exit: Option<(u32, u64)> = None;
    for (i, site) in r.code.exits().iter().enumerate() {
        let d = r.counters[i] - r.seen[i];
        r.seen[i] = r.counters[i];
        work += d * u64::from(r.reach[i]);
        if site.kind == ExitKind::Side
            || (site.kind == ExitKind::Interpret && r.dispatches.contains(&site.resume))
        {
            side_exits += d;
        }
        match site.kind {
            ExitKind::Guard => guard_failures += d,
            ExitKind::Side
                if r.covers.contains(&site.resume) && hot_exit.is_none_or(|(_, n)| d > n) =>
            {
                hot_exit = Some((site.resume, d));
            }
            _ => {}
        }
    }
    // Arrivals at the head: the entries that passed the entry guards and
    // every loop trip (the counter after the exits').
    let last = r.code.exits().len();
    let arrivals = r.counters[last] - r.seen[last];
    r.seen[last] = r.counters[last];
    let trips = entered.max(arrivals);
    // Every trip past an entry's first went around the whole loop.
    work += (trips - entered) * r.covers.len() as u64;
    r.recent_side_exits = side_exits;
    // Nothing ran since the last review (another interval ended in the same
    // batch): there was no chance to enter the region.
    let ran_since = r.reviewed_at != ran;
    r.reviewed_at = ran;
    r.idle = match (entered, ran_since) {
        (0, true) if called && r.whole => 0,
        (0, true) => r.idle + 1,
        (0, false) => r.idle,
        _ => 0,
    };
    let least = opts.min_straight_instrs as u64;
    if r.idle >= opts.idle_intervals {
        Verdict::Idle {
            intervals: r.idle,
            used: ever > 0,
        }
    } else if trips >= opts.min_entries
        && guard_failures as f64 >= opts.guard_failure_share * trips as f64
    {
        // Against trips, not entries: a looping region is re-entered right
        // after each failure, so failures per entry is near 1 even when the
        // guard fails once in a thousand iterations.
        Verdict::GuardsFail {
            failures: guard_failures,
            trips,
        }
    } else if let Some((at, taken)) = hot_exit.filter(|&(_, n)| {
        entered >= opts.min_entries && n as f64 >= opts.hot_exit_share * entered as f64
    }) {
        Verdict::HotExit {
            at,
            taken,
            entries: entered,
        }
    } else if entered >= opts.min_entries && work < least * entered {
        Verdict::LeavesAtOnce {
            entries: entered,
            work,
            least,
        }
    } else {
        Verdict::Keep
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use toyvm_optimizer::{CodeCache, Region};
    use toyvm_vm::asm::assemble;

    use super::super::{JitLimits, JitOptions, SharedCode};
    use super::*;

    /// `main`'s loop (offsets 2-3) compiled: exit sites `[side exit to 4]`.
    const LOOP: &str = "\
region f0:2
  block 2 weight=100
    2: add r1, r1, r2
    3: loop r2, r0, L2 -> head | exit 4
";

    fn program() -> toyvm_vm::Program {
        assemble(
            ".func main(n)\n li r1, 0\n li r2, 1\ntop:\n add r1, r1, r2\n loop r2, n, top\n ret r1\n.end",
        )
        .unwrap()
    }

    fn installed(whole: bool) -> Installed {
        let region = Region::parse(LOOP).unwrap();
        let code = Arc::new(CodeCache::new().unwrap().compile(&region).unwrap());
        let covers = vec![2, 3];
        let reach = exit_reach(&code, &covers, whole);
        let n = code.counters_len();
        Installed {
            code,
            covers,
            dispatches: Vec::new(),
            callees: 0,
            loops: true,
            calls: Vec::new(),
            whole,
            reach,
            busy: 0,
            planned_from: Vec::new(),
            recent_side_exits: 0,
            counters: vec![0; n],
            seen: vec![0; n],
            entries: 0,
            entries_seen: 0,
            idle: 0,
            reviewed_at: 0,
        }
    }

    #[test]
    fn a_native_function_a_live_region_calls_is_not_idle() {
        let opts = JitOptions::default();
        let mut r = installed(true);
        // Reviews after intervals that ran, with no entry: called natively
        // by a live region, it stays.
        for ran in 1..=10 {
            assert_eq!(judge(&mut r, &opts, ran, true), Verdict::Keep);
            assert_eq!(r.idle, 0);
        }
        // Nobody calls it: idle after `idle_intervals`.
        let mut verdict = Verdict::Keep;
        for ran in 11..=13 {
            verdict = judge(&mut r, &opts, ran, false);
        }
        assert_eq!(
            verdict,
            Verdict::Idle {
                intervals: opts.idle_intervals,
                used: false
            }
        );
        assert_eq!(verdict.to_string(), "never entered in 3 intervals");
        // A planned region is idle whoever calls its function.
        let mut r = installed(false);
        r.entries = 5;
        r.entries_seen = 5;
        for ran in 1..=3 {
            verdict = judge(&mut r, &opts, ran, true);
        }
        assert!(verdict.is_revival(), "{verdict:?}");
        assert_eq!(verdict.to_string(), "not entered for 3 intervals");
    }

    #[test]
    fn a_region_on_the_stack_is_kept_and_judged_later() {
        let opts = JitOptions::default();
        let mut r = installed(false);
        r.busy = 1;
        // Its activation holds the counters.
        r.counters.clear();
        r.entries = 1000;
        for ran in 1..=10 {
            assert_eq!(judge(&mut r, &opts, ran, false), Verdict::Keep);
        }
        assert_eq!(r.entries_seen, 0, "judged later, over the whole time");
    }

    #[test]
    fn entries_that_leave_at_once_drop_the_region() {
        let opts = JitOptions::default();
        // Every entry takes the exit after two instructions, without
        // looping: less than `min_straight_instrs` each.
        let mut r = installed(false);
        r.entries = 100;
        r.counters = vec![100, 100];
        let v = judge(&mut r, &opts, 1, false);
        assert_eq!(
            v,
            Verdict::LeavesAtOnce {
                entries: 100,
                work: 200,
                least: 16
            }
        );
        assert!(!v.is_revival());
        assert!(v.to_string().contains("about 2.0 instructions"), "{v}");
        // The same entries looping 50 times each pay.
        let mut r = installed(false);
        r.entries = 100;
        r.counters = vec![100, 5000];
        assert_eq!(judge(&mut r, &opts, 1, false), Verdict::Keep);
        // Too few entries to judge.
        let mut r = installed(false);
        r.entries = 4;
        r.counters = vec![4, 4];
        assert_eq!(judge(&mut r, &opts, 1, false), Verdict::Keep);
    }

    #[test]
    fn drops_back_off_and_give_up() {
        let program = Arc::new(program());
        let code = Arc::new(SharedCode::new(&program, false, false).unwrap());
        let limits = JitLimits {
            fuel: None,
            max_depth: 1 << 16,
        };
        let opts = JitOptions::default();
        let mut jit = Jit::new(Arc::clone(&program), code, opts.clone(), false, limits).unwrap();
        let key = (0, 2);
        let verdict = Verdict::LeavesAtOnce {
            entries: 100,
            work: 10,
            least: 16,
        };
        let mut again = Again::default();
        for k in 1..=opts.max_recompiles + 1 {
            jit.slots = vec![Some(installed(false))];
            jit.heads[0][2] = 1;
            jit.states
                .insert(key, HeadState::Compiled { slot: 0, again });
            jit.drop_region(10, key, 0, again, verdict);
            assert_eq!(jit.heads[0][2], 0, "uninstalled");
            match jit.states[&key] {
                HeadState::Counting {
                    again: next,
                    not_before,
                } => {
                    // Back-off doubles with each drop for cause.
                    assert_eq!(next.recompiles, k);
                    assert_eq!(not_before, 10 + (1 << k));
                    again = next;
                }
                HeadState::DontCompile => {
                    assert_eq!(k, opts.max_recompiles + 1);
                    assert_eq!(jit.stats.given_up, 1);
                }
                HeadState::Compiled { .. } => panic!("dropped"),
            }
        }
        assert_eq!(jit.stats.drops, u64::from(opts.max_recompiles) + 1);
    }
}
