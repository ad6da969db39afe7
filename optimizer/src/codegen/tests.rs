//! Compiled regions against the reference evaluator and the interpreter.

use std::collections::HashMap;
use toyvm_vm::interp::Memory;

use toyvm_vm::Program;
use toyvm_vm::asm::assemble;

use crate::testing::{reaches, reference_traps, run_mixed, run_oracle, tuples};
use crate::{CodeCache, CompiledRegion, Exit, ExitKind, PlanConfig, Profile, Region, plan_regions};

/// A memory of no words, for code that uses none.
pub(super) fn no_memory() -> Memory {
    Memory::from(Vec::new())
}

/// Compiles `text` and runs it once on `regs`/`mem`.
fn run_text(
    text: &str,
    regs: &mut [i64; 256],
    mem: &mut Memory,
) -> (Exit, CompiledRegion, Vec<u64>) {
    let r = Region::parse(text).unwrap();
    let c = CodeCache::new().unwrap().compile(&r).unwrap();
    let mut counters = vec![0; c.counters_len()];
    let e = c.run(regs, mem, &mut counters);
    (e, c, counters)
}

/// Checks that the compiled exit state is one the reference passes through.
fn check_against_reference(p: &Program, region: &Region, regs: [i64; 256], mem: Memory) -> Exit {
    let mut cache = CodeCache::new().unwrap();
    cache.compile_natives(p).unwrap();
    let c = cache.compile(region).unwrap();
    let (mut r1, mut m1) = (regs, mem.clone());
    let mut counters = vec![0; c.counters_len()];
    let e = match c.run_with(&mut r1, &mut m1, &mut counters, 0, crate::DEFAULT_MAX_DEPTH) {
        Ok(e) => e,
        Err(t) => {
            assert!(
                reference_traps(p, region.func, region.head, Box::new(regs), mem, 1_000_000),
                "native code trapped ({t:?}), the reference does not\n{region}"
            );
            assert_eq!(
                counters[..c.exits().len()].iter().sum::<u64>(),
                1,
                "exactly one exit counted"
            );
            return Exit {
                kind: ExitKind::Trap,
                resume: t.pc,
            };
        }
    };
    assert!(
        reaches(
            p,
            region.func,
            region.head,
            Box::new(regs),
            mem,
            e,
            &r1,
            &m1,
            1_000_000
        ),
        "the reference never reaches {e} with the compiled state\n{region}"
    );
    assert_eq!(
        counters[..c.exits().len()].iter().sum::<u64>(),
        1,
        "exactly one exit counted"
    );
    e
}

fn profile_and_plan(p: &Program, args: &[i64], file: &[u8]) -> Vec<Region> {
    let t = tuples(p, args, file);
    let mut counts: HashMap<toyvm_vm::Tuple, u64> = HashMap::new();
    for x in t {
        *counts.entry(x).or_insert(0) += 1;
    }
    let cands: Vec<toyvm_vm::Candidate> = counts
        .into_iter()
        .map(|(tuple, count)| toyvm_vm::Candidate { tuple, count })
        .collect();
    plan_regions(p, &Profile::from_candidates(&cands), &PlanConfig::default())
}

const VALUES: &str = "
    .memory 64
    .func main(n)
        .reg i, x, d, q, t
        li i, 0
        li x, 1000
        li q, 0
    top:
        andi t, i, 15
        ld d, t, 0          # 4: almost always 8
        div t, x, d
        add q, q, t
        addi i, i, 1
        blt i, n, top
        ret q
    .end";

/// [`VALUES`]'s loop as a region, its load guarded to be 8.
const GUARDED_LOOP: &str = "\
region f0:3
  block 3 weight=100
    3: andi r5, r1, 15
    4: ld r3, r5, 0
    guard r3 == 8 | fail 5
    5: div r5, r2, r3
    6: add r4, r4, r5
    7: addi r1, r1, 1
    8: blt r1, r0, L3 -> head | exit 9
";

/// `compile_in` knows the function: its exits leave a register alone where
/// the interpreter writes it before any read (here `t`, r5, at the guard's
/// resume pc and at `ret q`), and store every live one as `compile` does.
#[test]
fn exits_of_compile_in_store_only_registers_live_where_the_interpreter_resumes() {
    let p = assemble(VALUES).unwrap();
    let text = GUARDED_LOOP;
    let region = Region::parse(text).unwrap();
    let mut cache = CodeCache::new().unwrap();
    let all = cache.compile(&region).unwrap();
    let live = cache.compile_in(&p, &region).unwrap();
    // mem[5] = 3 fails the guard on the sixth trip; n = 100 runs to `ret`
    // when every loaded value is 8.
    for (fill5, n, resume) in [(3, 100, 5), (8, 100, 9)] {
        let mut mem = Memory::from(vec![8i64; 64]);
        mem[5] = fill5;
        let start = {
            let mut r = [0i64; 256];
            r[..6].copy_from_slice(&[n, 0, 1000, 0, 0, -99]);
            r
        };
        let (mut r_all, mut r_live) = (start, start);
        let mut counters = vec![0; all.counters_len()];
        let e_all = all.run(&mut r_all, &mut mem.clone(), &mut counters);
        let e_live = live.run(&mut r_live, &mut mem, &mut counters);
        assert_eq!((e_all.resume, e_live.resume), (resume, resume));
        assert_ne!(r_all[5], -99, "compile stores t back");
        assert_eq!(r_live[5], -99, "t is dead at {resume}: left alone");
        let at = toyvm_vm::dataflow::live_in(&p.functions[0])[resume as usize];
        for r in 0..=255u8 {
            let (a, l, s) = (r_all[r as usize], r_live[r as usize], start[r as usize]);
            if at.contains(r) {
                assert_eq!(l, a, "r{r}, live at {resume}: stored as compile stores it");
            } else {
                assert_eq!(l, s, "r{r}, dead at {resume}: left as it was");
            }
        }
    }
    // At the guard's pc 5, i, x, d, q and n are live; at `ret q`, q only.
    let live = toyvm_vm::dataflow::live_in(&p.functions[0]);
    assert_eq!((0..6).filter(|&r| live[5].contains(r)).count(), 5);
    assert_eq!(
        (0..6).filter(|&r| live[9].contains(r)).collect::<Vec<_>>(),
        [4]
    );
    // A region that is not the function's is refused, not compiled with
    // another function's liveness.
    let other = assemble(&VALUES.replace("andi t, i, 15", "andi t, i, 7")).unwrap();
    let e = cache.compile_in(&other, &region).unwrap_err().to_string();
    assert!(e.contains("offset 3"), "{e}");
}

#[test]
fn a_failing_guard_resumes_after_the_load_with_the_loaded_value() {
    let p = assemble(VALUES).unwrap();
    let text = GUARDED_LOOP;
    let region = Region::parse(text).unwrap();
    let mut mem = Memory::from(vec![8i64; 64]);
    mem[5] = 3;
    let mut regs = [0i64; 256];
    regs[..5].copy_from_slice(&[100, 0, 1000, 0, 0]);
    let e = check_against_reference(&p, &region, regs, mem.clone());
    assert_eq!(
        e,
        Exit {
            kind: ExitKind::Guard,
            resume: 5
        }
    );

    // And the exact state: five iterations of 1000 / 8, then d = 3 loaded.
    let (e, c, counters) = run_text(text, &mut regs, &mut mem);
    assert_eq!(e.resume, 5);
    assert_eq!(&regs[..6], &[100, 5, 1000, 3, 5 * 125, 5]);
    let guard = c
        .exits()
        .iter()
        .position(|x| x.kind == ExitKind::Guard)
        .unwrap();
    assert_eq!(counters[guard], 1);
}

#[test]
fn trapping_instructions_exit_for_the_interpreter_with_registers_written_back() {
    let p = assemble(VALUES).unwrap();
    let region = Region::parse(
        "\
region f0:3
  block 3 weight=100
    3: andi r5, r1, 15
    4: ld r3, r5, 0
    5: div r5, r2, r3
    6: add r4, r4, r5
    7: addi r1, r1, 1
    8: blt r1, r0, L3 -> head | exit 9
",
    )
    .unwrap();
    // A zero divisor at word 2: the third iteration stops before `div`.
    let mut mem = Memory::from(vec![8i64; 64]);
    mem[2] = 0;
    let mut regs = [0i64; 256];
    regs[..5].copy_from_slice(&[100, 0, 1000, 0, 0]);
    let e = check_against_reference(&p, &region, regs, mem.clone());
    assert_eq!(
        e,
        Exit {
            kind: ExitKind::Interpret,
            resume: 5
        }
    );
    let (_, _, _) = run_text(&region.to_string(), &mut regs, &mut mem);
    assert_eq!(&regs[..6], &[100, 2, 1000, 0, 250, 2]);

    // Memory of 10 words: `ld` at word 10 is out of bounds.
    let mut mem = Memory::from(vec![8i64; 10]);
    let mut regs = [0i64; 256];
    regs[..5].copy_from_slice(&[100, 0, 1000, 0, 0]);
    let e = check_against_reference(&p, &region, regs, mem.clone());
    assert_eq!(
        e,
        Exit {
            kind: ExitKind::Interpret,
            resume: 4
        }
    );
    run_text(&region.to_string(), &mut regs, &mut mem);
    assert_eq!(regs[1], 10, "ten iterations completed");
    assert_eq!(regs[5], 10, "the address register was written back");
}

#[test]
fn division_edge_cases_match_the_interpreter() {
    let text = "\
region f0:0
  block 0 weight=1
    0: div r3, r1, r2
    1: rem r4, r1, r2
    2: divi r5, r1, -1
    3: remi r6, r1, -1
    4: divi r7, r1, 8
    5: remi r8, r1, 8
    6: shl r9, r1, r10
    7: ushri r11, r1, 65
    8: ltu r12, r1, r2
    goto exit 9
";
    for (x, y) in [(i64::MIN, -1), (-7, 2), (7, -2), (i64::MIN, 1), (-1, 3)] {
        let mut regs = [0i64; 256];
        regs[1] = x;
        regs[2] = y;
        regs[10] = 67;
        let (e, _, _) = run_text(text, &mut regs, &mut no_memory());
        assert_eq!(
            e,
            Exit {
                kind: ExitKind::Side,
                resume: 9
            }
        );
        use toyvm_vm::semantics::BinOp::*;
        let ev = |op: toyvm_vm::semantics::BinOp, a, b| op.eval(a, b).unwrap();
        assert_eq!(
            &regs[3..13],
            &[
                ev(Div, x, y),
                ev(Rem, x, y),
                ev(Div, x, -1),
                ev(Rem, x, -1),
                ev(Div, x, 8),
                ev(Rem, x, 8),
                ev(Shl, x, 67),
                67,
                ev(Ushr, x, 65),
                ev(Ltu, x, y),
            ],
            "x = {x}, y = {y}"
        );
    }
}

#[test]
fn jump_tables_take_every_case_and_fall_through_out_of_range() {
    let text = "\
region f0:0
  block 0 weight=1
    0: jtab r1 -> [exit 10, next, exit 12, exit 10] | exit 1
  block 8 weight=1
    8: addi r2, r2, 1
    goto exit 9
";
    for (k, resume) in [
        (0, 10),
        (1, 9),
        (2, 12),
        (3, 10),
        (4, 1),
        (-1, 1),
        (i64::MIN, 1),
    ] {
        let mut regs = [0i64; 256];
        regs[1] = k;
        let (e, _, _) = run_text(text, &mut regs, &mut no_memory());
        assert_eq!(e.resume, resume, "index {k}");
        assert_eq!(regs[2], (k == 1) as i64);
    }
}

#[test]
fn guarded_constants_fold_and_the_dump_names_bytecode_pcs() {
    let text = GUARDED_LOOP;
    let r = Region::parse(text).unwrap();
    let mut cache = CodeCache::new().unwrap();
    let clif = cache.clif(&r).unwrap();
    assert!(clif.contains("; f0:5: div r5, r2, r3"), "{clif}");
    assert!(
        clif.contains("; guard r3 == 8, else resume at f0:5"),
        "{clif}"
    );
    assert!(
        clif.contains("; counters[0]: interpret exit to f0:4"),
        "{clif}"
    );
    // After the guard the divisor is the constant 8: no zero check, no
    // -1 patch-up, so no `select` in the division's group.
    let div_group: String = clif
        .split("; f0:5: div")
        .nth(1)
        .and_then(|s| s.split("; f0:6").next())
        .unwrap()
        .into();
    assert!(div_group.contains("sdiv"), "{div_group}");
    assert!(!div_group.contains("select"), "{div_group}");
    cache.set_dump_clif(true);
    let c = cache.compile(&r).unwrap();
    // The dump is the IR `clif` gives, then Cranelift's listing of the
    // machine code it emitted, as comments.
    let dump = c.clif().unwrap();
    let code = dump
        .strip_prefix(clif.as_str())
        .and_then(|rest| rest.strip_prefix("\n; machine code\n"))
        .unwrap_or_else(|| panic!("{dump}"));
    assert!(code.lines().all(|l| l.starts_with("; ")), "{code}");
    assert!(code.contains("ret"), "{code}");
    assert!(c.code_size() > 0);
}

#[test]
fn constant_branches_fold_and_a_region_can_loop_forever_until_an_exit() {
    let text = "\
region f0:0
  block 0 weight=1
    0: li r1, 5
    1: bgti r1, 3, L7 -> exit 7 | next
    2: addi r2, r2, 1
    goto head
";
    let mut regs = [0i64; 256];
    let (e, c, counters) = run_text(text, &mut regs, &mut no_memory());
    assert_eq!(
        e,
        Exit {
            kind: ExitKind::Side,
            resume: 7
        }
    );
    assert_eq!(c.exits().len(), 1);
    // One exit taken; the head reached once.
    assert_eq!(counters, [1, 1]);
    assert_eq!(regs[2], 0);
}

#[test]
fn the_last_counter_counts_trips_through_the_head() {
    let text = "\
region f0:0
  block 0 weight=10
    0: addi r1, r1, 1
    1: blti r1, 10, L0 -> head | exit 2
";
    for start in [0, 7, 9, 10] {
        let mut regs = [0i64; 256];
        regs[1] = start;
        let (e, _, counters) = run_text(text, &mut regs, &mut no_memory());
        assert_eq!(e.resume, 2);
        // Entered at r1 = start: one arrival per increment.
        let trips = (10 - start).max(1) as u64;
        assert_eq!(counters, [1, trips], "from {start}");
    }
}

#[test]
fn bad_regions_are_errors_not_crashes() {
    let mut cache = CodeCache::new().unwrap();
    let falls_off = Region::parse("region f0:0\n  block 0 weight=1\n    0: li r1, 5\n").unwrap();
    let e = cache.compile(&falls_off).unwrap_err();
    assert!(e.to_string().contains("falls through"), "{e}");
    let call_in_place = Region::parse("region f0:0\n  0: putn r1\n  goto exit 1\n").unwrap();
    let e = cache.compile(&call_in_place).unwrap_err();
    assert!(e.to_string().contains("cannot be compiled in place"), "{e}");
}

/// `(program, args, input file)` from a program's header lines.
fn suite() -> Vec<(String, Program, Vec<i64>, Vec<u8>)> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(format!("{root}/programs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tasm"))
        .collect();
    names.sort();
    for path in names {
        let src = std::fs::read_to_string(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut args = Vec::new();
        let mut file = Vec::new();
        for l in src.lines() {
            if let Some(a) = l.strip_prefix("# args:") {
                args = a.split_whitespace().map(|w| w.parse().unwrap()).collect();
            }
            if let Some(f) = l.strip_prefix("# input:") {
                match std::fs::read(format!("{root}/{}", f.trim())) {
                    Ok(bytes) => file = bytes,
                    Err(_) => {
                        eprintln!("skipping {name}: input {} not found", f.trim());
                        continue;
                    }
                }
            }
        }
        let Ok(p) = assemble(&src) else {
            eprintln!("skipping {name}: does not assemble");
            continue;
        };
        out.push((name, p, args, file));
    }
    out
}

#[test]
fn every_program_runs_identically_with_its_hot_regions_compiled() {
    let mut cache = CodeCache::new().unwrap();
    let mut report = String::new();
    let mut entered = 0;
    let suite = suite();
    let programs = suite.len();
    for (name, p, args, file) in suite {
        let regions = profile_and_plan(&p, &args, &file);
        cache.compile_natives(&p).unwrap();
        let mut compiled = HashMap::new();
        let mut times = Vec::new();
        for r in &regions {
            let c = cache
                .compile(r)
                .unwrap_or_else(|e| panic!("{name}: {e}\n{r}"));
            times.push(c.compile_time());
            compiled.entry((r.func, r.head)).or_insert(c);
        }
        let oracle = run_oracle(&p, &args, &file);
        let (mixed, stats) = run_mixed(&p, &args, &file, &compiled, 2_000_000_000);
        assert_eq!(
            mixed.as_ref().map(|(o, v)| (String::from_utf8_lossy(o), v)),
            oracle
                .as_ref()
                .map(|(o, v)| (String::from_utf8_lossy(o), v)),
            "{name}"
        );
        if stats.entries > 0 {
            entered += 1;
        }
        let total: std::time::Duration = times.iter().sum();
        let max = times.iter().max().copied().unwrap_or_default();
        report += &format!(
            "{name}: {} regions, compile total {total:?} max {max:?}, {} entries, exits {:?}\n",
            regions.len(),
            stats.entries,
            stats.exits
        );
    }
    eprintln!("{report}");
    // Only programs whose time goes to calls (fib) may run no region.
    assert!(entered + 1 >= programs, "{report}");
}

mod native;
mod native_bails;
mod native_calli;
mod native_open;
mod strength;

mod random;

/// A guard on one path of a trace tree proves nothing on another path: the
/// facts at an arm are only those that hold at the head (issue 12's wrong
/// result: a `calli` on the second arm was compiled as a call to the
/// first arm's guarded target without its guard).
#[test]
fn a_guard_on_one_arm_is_not_a_fact_on_another() {
    let text = "\
region f0:0
  block 0 weight=100
    0: beqi r1, 0, L5 -> block 5 | next
    1: addi r1, r1, 1
    guard r3 == 8 | fail 2
    2: add r2, r2, r3
    goto exit 9
  block 5 weight=50
    5: addi r1, r1, 1
    6: bnei r3, 8, L9 -> exit 9 | next
    7: addi r2, r2, 100
    goto exit 8
";
    let r = Region::parse(text).unwrap();
    // r1 != 0: the first path guards r3 == 8 and leaves.
    let mut regs = [0i64; 256];
    (regs[1], regs[3]) = (1, 8);
    let (e, _, _) = run_text(text, &mut regs, &mut no_memory());
    assert_eq!(e.resume, 9);
    assert_eq!(regs[2], 8);
    // r1 == 0: the arm tests r3 itself; r3 is 7, so it must leave at 9
    // without adding 100 (the leaked fact folded the test to "equal").
    let mut regs = [0i64; 256];
    regs[3] = 7;
    let (e, _, _) = run_text(text, &mut regs, &mut no_memory());
    assert_eq!((e.kind, e.resume), (ExitKind::Side, 9), "{r}");
    assert_eq!(regs[2], 0);
}

/// An inner loop whose tree runs on through its outer loop: `c` and `i`
/// (r4, r1) are named only on the outer path, under 1/8 as hot as the
/// head, so they stay in the register file (see `COLD`): read and written
/// there, not carried around the inner loop, and not stored by exits.
const NESTED: &str = "
    .memory 8
    .func main(n)
        .reg i, j, s, c, t
        li i, 0
        li s, 0
        li c, 0
    outer:
        li j, 0
    inner:
        add s, s, j
        addi j, j, 1
        blt j, n, inner
        addi c, c, 7
        ld t, i, 0
        add c, c, t
        addi i, i, 1
        blt i, n, outer
        add s, s, c
        ret s
    .end";

#[test]
fn registers_only_the_outer_path_names_stay_in_memory_and_agree() {
    let p = assemble(NESTED).unwrap();
    for (outer, inner) in [(10, 1000), (1000, 1000)] {
        let text = format!(
            "\
region f0:4
  block 4 weight={inner}
    4: add r3, r3, r2
    5: addi r2, r2, 1
    6: blt r2, r0, L4 -> head | next
  block 7 weight={outer}
    7: addi r4, r4, 7
    8: ld r5, r1, 0
    9: add r4, r4, r5
    10: addi r1, r1, 1
    11: blt r1, r0, L3 -> block 3 | exit 12
  block 3 weight={outer}
    3: li r2, 0
    goto head
"
        );
        let region = Region::parse(&text).unwrap();
        let mem = Memory::from((1..=8).collect::<Vec<i64>>());
        // n = 5 runs the nest to its end; n = 10 loads past memory's end
        // at i = 8, leaving for the interpreter to trap there.
        // c adds 7 and mem[i] = i + 1 per outer trip (the 7 already added
        // when the load leaves).
        for case in [(5, 12, 5, 35 + 15), (10, 8, 8, 8 * 7 + 36 + 7)] {
            run_nest(&p, &region, &mem, outer * 8 < inner, case);
        }
    }
}

/// Runs a nest's region (`NESTED`'s registers: n in r0, i in r1, c in r4)
/// from its head against the interpreter and compiled: it leaves at
/// `resume` with c and i as the interpreter leaves them, except that i,
/// dead at 12, is left alone there where it is a variable (not `cold`);
/// kept in memory, it was written as it ran.
fn run_nest(p: &Program, region: &Region, mem: &Memory, cold: bool, case: (i64, u32, i64, i64)) {
    let (n, resume, i, c) = case;
    let mut regs = [0i64; 256];
    regs[0] = n;
    let e = check_against_reference(p, region, regs, mem.clone());
    assert_eq!(e.resume, resume, "n = {n}, cold: {cold}");
    let c_run = CodeCache::new().unwrap().compile_in(p, region).unwrap();
    let (mut r, mut m) = (regs, mem.clone());
    let mut counters = vec![0; c_run.counters_len()];
    let e = c_run.run(&mut r, &mut m, &mut counters);
    assert_eq!(e.resume, resume);
    assert_eq!(r[4], c, "c as the interpreter leaves it");
    let i = if resume == 12 && !cold { 0 } else { i };
    assert_eq!(r[1], i, "i, n = {n}, cold: {cold}");
}

/// The outer path in two blocks that both name `i` (r1): each runs under
/// 1/8 as often as the head, but together they name it 2 x outer times,
/// so `i` is cold only when that sum is under 1/8 of the head's weight.
const NESTED_SPLIT: &str = "
    .memory 8
    .func main(n)
        .reg i, j, s, c, t
        li i, 0
        li s, 0
        li c, 0
    outer:
        ld t, i, 0
        li j, 0
    inner:
        add s, s, j
        addi j, j, 1
        blt j, n, inner
        addi c, c, 7
        add c, c, t
        addi i, i, 1
        blt i, n, outer
        add s, s, c
        ret s
    .end";

#[test]
fn a_register_is_cold_by_the_summed_weight_of_the_blocks_naming_it() {
    let p = assemble(NESTED_SPLIT).unwrap();
    for (outer, inner) in [(10, 1000), (70, 1000), (1000, 1000)] {
        let text = format!(
            "\
region f0:5
  block 5 weight={inner}
    5: add r3, r3, r2
    6: addi r2, r2, 1
    7: blt r2, r0, L5 -> head | next
  block 8 weight={outer}
    8: addi r4, r4, 7
    9: add r4, r4, r5
    10: addi r1, r1, 1
    11: blt r1, r0, L3 -> block 3 | exit 12
  block 3 weight={outer}
    3: ld r5, r1, 0
    4: li r2, 0
    goto head
"
        );
        let region = Region::parse(&text).unwrap();
        let mem = Memory::from((1..=8).collect::<Vec<i64>>());
        // n = 5 runs the nest to its end; n = 10 loads past memory's end
        // at i = 8, leaving at 3 for the interpreter to trap there; c adds
        // 7 and t per outer trip: t = 0 on the first (the region starts at
        // the head), then mem[i] = i + 1 loaded for trip i + 1.
        // At 70/1000 each block alone is under 1/8 of the head (70 x 8 <
        // 1000), the two together are not.
        let cold = 2 * outer * 8 < inner;
        assert_eq!(cold, outer == 10);
        for case in [(5, 12, 5, 35 + 14), (10, 3, 8, 8 * 7 + 35)] {
            run_nest(&p, &region, &mem, cold, case);
        }
    }
}

/// A store back to the place a load just checked goes unchecked; one
/// through a register redefined since, one wider than the check, or one
/// after a join (the loop head) is checked again.
#[test]
fn a_dominating_bounds_check_covers_the_same_place_until_its_register_changes() {
    let text = "\
region f0:0
  block 0 weight=100
    0: ld32s r1, r0, 4
    1: addiw r1, r1, 1
    2: st32 r0, 4, r1
    3: st16 r0, 6, r1
    4: st64 r0, 4, r1
    5: addiw r0, r0, 8
    6: st32 r0, 4, r1
    7: blti r1, 100, L0 -> head | exit 8
";
    // The offsets of the accesses still checked (each check leaves
    // through an `Interpret` exit at its instruction).
    let checked = |text: &str| {
        let c = CodeCache::new()
            .unwrap()
            .compile(&Region::parse(text).unwrap())
            .unwrap();
        let at: Vec<u32> = c
            .exits()
            .iter()
            .filter(|e| e.kind == ExitKind::Interpret)
            .map(|e| e.resume)
            .collect();
        (c, at)
    };
    let (c, at) = checked(text);
    // 2 and 3 fall within 0's check; 4 reaches past it; 6 follows a new r0.
    assert_eq!(at, [0, 4, 6]);
    // 32 bytes of memory: the trip at r0 = 24 loads bytes 28..32, stores
    // 2 and 4 bytes within them, and the 8-byte store at 28..36 leaves for
    // the interpreter to trap (r1 written back, memory as stored so far).
    let mut mem = Memory::from(vec![0i64; 4]);
    let mut regs = [0i64; 256];
    let mut counters = vec![0; c.counters_len()];
    let e = c.run(&mut regs, &mut mem, &mut counters);
    assert_eq!((e.kind, e.resume, regs[0]), (ExitKind::Interpret, 4, 24));
    assert_eq!(regs[1], 4);
    assert_eq!(mem.bytes()[28..32], [4, 0, 4, 0]);
    // Words: the same word again is covered, another word is not.
    let text = "\
region f0:0
  block 0 weight=100
    0: ld r1, r0, 2
    1: addi r1, r1, 1
    2: st r0, 2, r1
    3: st r0, 3, r1
    4: addi r0, r0, 2
    5: blti r1, 100, L0 -> head | exit 6
";
    let (c, at) = checked(text);
    assert_eq!(at, [0, 3]);
    // Six words: the trip at r0 = 4 loads word 6, past the end.
    let mut mem = Memory::from(vec![0i64; 6]);
    let mut regs = [0i64; 256];
    let e = c.run(&mut regs, &mut mem, &mut vec![0; c.counters_len()]);
    assert_eq!((e.kind, e.resume, regs[0]), (ExitKind::Interpret, 0, 4));
    assert_eq!(mem[2..6], [1, 1, 1, 1]);
}
