//! Value and call-target specialization decisions.
//!
//! A Value candidate `(pc, value, count)` whose count covers at least
//! [`SpecializeConfig::value_share`] of its pc's executions makes the value
//! a guarded constant: a load (or a host call's result, `hcall`) gets a
//! guard right after it, a function
//! argument (`Pc::arg(f, i)`) a guard at region entry when the region starts
//! at the function's entry. After the guard the code generator treats the
//! register as that constant, so Cranelift folds what depends on it; a guard
//! failure is a side exit that resumes right after the guarded point.
//!
//! A Call candidate at a `calli` site whose callee takes at least
//! [`SpecializeConfig::call_share`] of the site's calls makes the site
//! monomorphic: a guard on the function value. Sites whose calls spread over
//! several comparable targets are megamorphic and stay generic. A guarded
//! site whose callee is closed is a native call ([`Step::Call`]); otherwise
//! the guard only records the decision, and its counter tells the runtime
//! when the site stops being monomorphic.

use std::collections::{BTreeMap, HashMap};

use toyvm_vm::Pc;
use toyvm_vm::isa::Instr;

use crate::region::{Region, Step};

/// Thresholds of specialization.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecializeConfig {
    /// Least share of a pc's executions one value must have.
    pub value_share: f64,
    /// Least share of a call site's calls one callee must have.
    pub call_share: f64,
}

impl Default for SpecializeConfig {
    fn default() -> Self {
        SpecializeConfig {
            value_share: 0.9,
            call_share: 0.9,
        }
    }
}

/// A Value candidate: `value` seen `count` times at `pc` (a load's pc or an
/// argument's pseudo-pc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueCandidate {
    /// Where the value was seen: a load's pc, or an argument's pseudo-pc
    /// ([`Pc::arg`]).
    pub pc: Pc,
    /// The value loaded or passed.
    pub value: i64,
    /// How many times it was seen there (a profiler's estimate).
    pub count: u64,
}

/// A Call candidate: `callee` called `count` times from `site`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallCandidate {
    /// The pc of the `call` or `calli` instruction.
    pub site: Pc,
    /// The called function's index.
    pub callee: u32,
    /// How many times this site called it (a profiler's estimate).
    pub count: u64,
}

/// What to do at a call site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallSite {
    /// One callee dominates: guard on it.
    Monomorphic {
        /// The dominant callee's function index.
        callee: u32,
    },
    /// No callee dominates: stay generic. The targets seen, heaviest first.
    Megamorphic {
        /// `(callee function index, count)`, one entry per callee, by
        /// decreasing count (ties: by index).
        targets: Vec<(u32, u64)>,
    },
}

/// The specialization decisions for a program.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Specializations {
    /// Guarded constants by pc (load pcs and argument pseudo-pcs).
    pub values: BTreeMap<Pc, i64>,
    /// Call-site decisions by call-site pc.
    pub calls: BTreeMap<Pc, CallSite>,
}

impl Specializations {
    /// Decides from candidates. `totals` gives the executions of each pc
    /// (loads, arguments and call sites); where a pc has no total, the sum
    /// of its candidates' counts stands in, which can only overstate a
    /// value's share (the guard keeps that safe, its counter makes it
    /// visible).
    pub fn decide(
        values: &[ValueCandidate],
        calls: &[CallCandidate],
        totals: &HashMap<Pc, u64>,
        cfg: &SpecializeConfig,
    ) -> Specializations {
        let mut by_pc: BTreeMap<Pc, Seen<i64>> = BTreeMap::new();
        for c in values {
            by_pc.entry(c.pc).or_default().push((c.value, c.count));
        }
        let mut out = Specializations::default();
        for (pc, mut seen) in by_pc {
            let sum = total(totals, pc, &seen);
            merge(&mut seen);
            let (value, count) = heaviest(&seen);
            if dominates(count, sum, cfg.value_share) {
                out.values.insert(pc, value);
            }
        }
        let mut by_site: BTreeMap<Pc, Seen<u32>> = BTreeMap::new();
        for c in calls {
            by_site.entry(c.site).or_default().push((c.callee, c.count));
        }
        for (site, mut seen) in by_site {
            let sum = total(totals, site, &seen);
            merge(&mut seen);
            let (callee, count) = heaviest(&seen);
            let decision = if dominates(count, sum, cfg.call_share) {
                CallSite::Monomorphic { callee }
            } else {
                let mut targets = seen.to_vec();
                targets.sort_by_key(|&(c, n)| (std::cmp::Reverse(n), c));
                CallSite::Megamorphic { targets }
            };
            out.calls.insert(site, decision);
        }
        out
    }
}

/// One pc's candidates (values or callees, with counts): one to a few per
/// pc. (An inline `SmallVec<[_; 4]>` here ran as many instructions as this
/// `Vec`: 27.7M against 27.5M in `decide`, callgrind of stackvm 5000 at
/// interval 100, so it was not kept.)
type Seen<K> = Vec<(K, u64)>;

/// Sorts by key and sums duplicate keys (a profiler may report one tuple
/// twice), in place.
fn merge<K: Copy + Ord>(seen: &mut Seen<K>) {
    seen.sort_unstable_by_key(|&(k, _)| k);
    seen.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 += later.1;
        }
        same
    });
}

/// The key with the highest count (ties: the smallest key, for
/// determinism), of merged candidates.
fn heaviest<K: Copy + Ord>(merged: &[(K, u64)]) -> (K, u64) {
    merged
        .iter()
        .copied()
        .max_by_key(|&(k, n)| (n, std::cmp::Reverse(k)))
        .expect("only called with candidates")
}

fn total<K>(totals: &HashMap<Pc, u64>, pc: Pc, seen: &[(K, u64)]) -> u64 {
    let sum: u64 = seen.iter().map(|&(_, n)| n).sum();
    // A total below the candidates' sum is an estimate gone stale.
    totals.get(&pc).map_or(sum, |&t| t.max(sum))
}

fn dominates(count: u64, total: u64, share: f64) -> bool {
    total > 0 && count as f64 >= share * total as f64
}

/// Inserts the guards `spec` calls for into `region`: argument guards at
/// entry (only when the region starts at the function's entry), a guard
/// after each specialized load, and a guard on the function value before
/// each monomorphic `calli`. Idempotent.
pub fn apply(region: &mut Region, spec: &Specializations) {
    let func = region.func;
    let mut steps = Vec::with_capacity(region.steps.len() + 4);
    if region.head == 0 {
        let args = spec
            .values
            .range(Pc::arg(func, 0)..=Pc::arg(func, 255))
            .map(|(pc, &v)| (pc.offset() & !toyvm_vm::program::ARG_OFFSET, v));
        for (i, value) in args {
            let guard = Step::Guard {
                reg: i as u8,
                value,
                resume: 0,
            };
            if !region.steps.contains(&guard) {
                steps.push(guard);
            }
        }
    }
    let old = std::mem::take(&mut region.steps);
    let mut it = old.into_iter().peekable();
    while let Some(step) = it.next() {
        match step {
            Step::Op { pc, instr } if let Some(d) = crate::region::emits_value(&instr) => {
                steps.push(step);
                if let Some(&value) = spec.values.get(&Pc::new(func, pc)) {
                    let guard = Step::Guard {
                        reg: d,
                        value,
                        resume: pc + 1,
                    };
                    if it.peek() != Some(&guard) {
                        steps.push(guard);
                    }
                }
            }
            Step::Interpret {
                pc,
                instr: Instr::Calli { f, .. },
            }
            | Step::Call {
                pc,
                instr: Instr::Calli { f, .. },
                ..
            } => {
                if let Some(CallSite::Monomorphic { callee }) = spec.calls.get(&Pc::new(func, pc)) {
                    let guard = Step::Guard {
                        reg: f,
                        value: *callee as i64,
                        resume: pc,
                    };
                    if steps.last() != Some(&guard) {
                        steps.push(guard);
                    }
                }
                steps.push(step);
            }
            _ => steps.push(step),
        }
    }
    region.steps = steps;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(pc: Pc, value: i64, count: u64) -> ValueCandidate {
        ValueCandidate { pc, value, count }
    }

    #[test]
    fn a_dominant_value_becomes_a_guarded_constant() {
        let ld = Pc::new(0, 4);
        let arg = Pc::arg(0, 1);
        let rare = Pc::new(0, 9);
        let totals: HashMap<Pc, u64> = [(ld, 1000), (rare, 1000)].into_iter().collect();
        let s = Specializations::decide(
            &[
                v(ld, 8, 999),
                v(ld, 12, 1),
                v(arg, 5, 40),
                v(rare, 1, 500),
                v(rare, 2, 400),
            ],
            &[],
            &totals,
            &SpecializeConfig::default(),
        );
        // `arg` has no total: its candidates' sum (40) stands in.
        assert_eq!(
            s.values.into_iter().collect::<Vec<_>>(),
            [(ld, 8), (arg, 5)]
        );
    }

    #[test]
    fn call_sites_are_monomorphic_or_megamorphic() {
        let c = |site, callee, count| CallCandidate {
            site: Pc::new(0, site),
            callee,
            count,
        };
        let s = Specializations::decide(
            &[],
            &[
                c(3, 1, 95),
                c(3, 2, 5),
                c(7, 1, 50),
                c(7, 2, 45),
                c(7, 3, 5),
            ],
            &HashMap::new(),
            &SpecializeConfig::default(),
        );
        assert_eq!(s.calls[&Pc::new(0, 3)], CallSite::Monomorphic { callee: 1 });
        assert_eq!(
            s.calls[&Pc::new(0, 7)],
            CallSite::Megamorphic {
                targets: vec![(1, 50), (2, 45), (3, 5)]
            }
        );
    }

    #[test]
    fn guards_are_inserted_where_the_decisions_apply() {
        let mut r = Region::parse(
            "\
region f1:0
  block 0 weight=100
    0: ld r3, r0, 0
    1: add r4, r3, r1
    2: interpret calli r5, r6, r4, 1
",
        )
        .unwrap();
        let mut spec = Specializations::default();
        spec.values.insert(Pc::new(1, 0), 8);
        spec.values.insert(Pc::arg(1, 1), -3);
        spec.values.insert(Pc::arg(2, 0), 99);
        spec.calls
            .insert(Pc::new(1, 2), CallSite::Monomorphic { callee: 4 });
        apply(&mut r, &spec);
        let expected = "\
region f1:0
    guard r1 == -3 | fail 0
  block 0 weight=100
    0: ld r3, r0, 0
    guard r3 == 8 | fail 1
    1: add r4, r3, r1
    guard r6 == 4 | fail 2
    2: interpret calli r5, r6, r4, 1
";
        assert_eq!(r.to_string(), expected);
        apply(&mut r, &spec);
        assert_eq!(r.to_string(), expected, "applying twice changes nothing");
    }
}
