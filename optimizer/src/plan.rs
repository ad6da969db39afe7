//! From one interval's candidates to the regions worth compiling: the entry
//! point the runtime calls at each interval end.

use std::collections::{BTreeSet, HashMap};

use toyvm_vm::isa::Instr;
use toyvm_vm::{Kind, Pc, Program, Tuple};

use crate::cfg::{EdgeCounts, WeightedCfg};
use crate::region::{Region, Step};
use crate::specialize::{self, CallCandidate, Specializations, SpecializeConfig, ValueCandidate};
use crate::superblock::{SuperblockConfig, form_superblocks};

/// A profile as the optimizer reads it.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Edge counts: `(branch pc, next pc) -> count`.
    pub edges: EdgeCounts,
    pub values: Vec<ValueCandidate>,
    pub calls: Vec<CallCandidate>,
    /// Executions per pc where the runtime knows them (loads, argument
    /// pseudo-pcs, call sites). Loads without one get their block's weight.
    pub totals: HashMap<Pc, u64>,
}

impl Profile {
    /// Groups candidates `(tuple, estimated count)` by kind.
    pub fn from_candidates<'a>(candidates: impl IntoIterator<Item = &'a (Tuple, u64)>) -> Profile {
        let mut p = Profile::default();
        for &(t, count) in candidates {
            match t.kind {
                Kind::Edge => *p.edges.entry((Pc(t.a), Pc(t.b))).or_insert(0) += count,
                Kind::Value => p.values.push(ValueCandidate {
                    pc: Pc(t.a),
                    value: t.b as i64,
                    count,
                }),
                Kind::Call => p.calls.push(CallCandidate {
                    site: Pc(t.a),
                    callee: t.b as u32,
                    count,
                }),
            }
        }
        p
    }
}

/// Knobs of region planning.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanConfig {
    pub superblock: SuperblockConfig,
    pub specialize: SpecializeConfig,
    /// Regions with fewer bytecode instructions are not worth an entry.
    pub min_instrs: usize,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            superblock: SuperblockConfig::default(),
            specialize: SpecializeConfig::default(),
            min_instrs: 2,
        }
    }
}

/// The weight of a region's head block.
pub fn region_weight(r: &Region) -> u64 {
    r.steps
        .iter()
        .find_map(|s| match s {
            Step::Block { weight, .. } => Some(*weight),
            _ => None,
        })
        .unwrap_or(0)
}

/// The specialized superblocks of every function the profile's edges
/// touch, heaviest head first. Each function's regions have distinct heads.
pub fn plan_regions(program: &Program, profile: &Profile, cfg: &PlanConfig) -> Vec<Region> {
    let funcs: BTreeSet<u32> = profile
        .edges
        .keys()
        .map(|(from, _)| from.func())
        .filter(|&f| (f as usize) < program.functions.len())
        .collect();
    let mut totals = profile.totals.clone();
    let mut regions = Vec::new();
    let mut wcfgs = Vec::new();
    for f in funcs {
        let w = WeightedCfg::build(program, f, &profile.edges).expect("function index checked");
        let code = &program.functions[f as usize].code;
        for c in &profile.values {
            let at = c.pc.offset() as usize;
            if c.pc.func() == f
                && !c.pc.is_arg()
                && matches!(code.get(at), Some(Instr::Ld { .. }))
                && let Some(b) = w.cfg().block_at(at as u32)
            {
                totals.entry(c.pc).or_insert(w.weight(b));
            }
        }
        wcfgs.push((f, w));
    }
    let spec = Specializations::decide(&profile.values, &profile.calls, &totals, &cfg.specialize);
    for (f, w) in &wcfgs {
        let func = &program.functions[*f as usize];
        for mut r in form_superblocks(w, func, &cfg.superblock) {
            if r.instr_count() >= cfg.min_instrs {
                specialize::apply(&mut r, &spec);
                regions.push(r);
            }
        }
    }
    regions.sort_by_key(|r| std::cmp::Reverse(region_weight(r)));
    regions
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tuples;
    use toyvm_vm::asm::assemble;

    #[test]
    fn a_dominant_loaded_divisor_becomes_a_guard_in_the_hot_loop() {
        let p = assemble(
            "
            .memory 64
            .func main(n)
                .reg i, x, d, q, t
                li i, 0
                li x, 1000
                li q, 0
                li t, 8
                st i, 5, t      # word 5 = 8, word 4 = 0
            top:
                andi t, i, 15
                lti t, t, 15
                addi t, t, 4    # word 5, or word 4 when i % 16 == 15
                ld d, t, 0      # 8: d = 8 in 15 of 16 iterations
                beqi d, 0, skip
                div t, x, d
                add q, q, t
            skip:
                addi i, i, 1
                blt i, n, top
                ret q
            .end",
        )
        .unwrap();
        let mut counts: HashMap<Tuple, u64> = HashMap::new();
        for t in tuples(&p, &[160], &[]) {
            *counts.entry(t).or_insert(0) += 1;
        }
        let cands: Vec<(Tuple, u64)> = counts.into_iter().collect();
        let profile = Profile::from_candidates(&cands);
        let regions = plan_regions(&p, &profile, &PlanConfig::default());
        assert_eq!(
            regions[0].to_string(),
            "\
region f0:5
  block 5 weight=160
    5: andi r5, r1, 15
    6: lti r5, r5, 15
    7: addi r5, r5, 4
    8: ld r3, r5, 0
    guard r3 == 8 | fail 9
    9: beqi r3, 0, L12 -> exit 12 | next
  block 10 weight=150
    10: div r5, r2, r3
    11: add r4, r4, r5
  block 12 weight=160 dup
    12: addi r1, r1, 1
    13: blt r1, r0, L5 -> head | exit 14
"
        );
    }
}
