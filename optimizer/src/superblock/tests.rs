use super::*;
use crate::cfg::{EdgeCounts, edge_counts};
use toyvm_vm::asm::assemble;
use toyvm_vm::{Pc, Program, interp};

/// `src` assembled, and its function 0's CFG weighted by a run's edges.
fn profiled(src: &str, args: &[i64]) -> (Program, WeightedCfg) {
    let p = assemble(src).unwrap();
    let mut tuples = Vec::new();
    let input = interp::Input { args, file: &[] };
    interp::run_with_sink(&p, input, &mut Vec::new(), &mut tuples, &Default::default()).unwrap();
    let w = WeightedCfg::build(&p, 0, &edge_counts(&tuples)).unwrap();
    (p, w)
}

fn regions(src: &str, args: &[i64], cfg: &SuperblockConfig) -> (Program, Vec<Region>) {
    let (p, w) = profiled(src, args);
    let r = form_superblocks(&w, &p.functions[0], cfg);
    (p, r)
}

fn text(rs: &[Region]) -> String {
    rs.iter().map(|r| r.to_string()).collect()
}

#[test]
fn a_counted_loop_stays_inside_its_region() {
    let (_, rs) = regions(
        crate::testing::LOOP_NEST,
        &[10],
        &SuperblockConfig::default(),
    );
    assert_eq!(
        text(&rs),
        "\
region f0:3
  block 3 weight=100
    3: mul r4, r2, r3
    4: remi r4, r4, 7
    5: add r1, r1, r4
    6: loop r3, r0, L3 -> head | block 7
  block 7 weight=10
    7: loop r2, r0, L2 -> next | exit 8
  block 2 weight=10 dup
    2: li r3, 1
    goto head
region f0:0
  block 0 weight=1
    0: li r1, 0
    1: li r2, 1
    goto exit 2
"
    );
    assert!(rs[0].loops());
}

const DIAMOND: &str = "
        .func main(n)
            .reg i, s, t
            li i, 0
            li s, 0
        top:                    # 2
            andi t, i, 7
            beqi t, 7, rare     # 3: taken 1 time in 8
            addi s, s, 1        # 4: hot side
            jmp join            # 5
        rare:
            subi s, s, 5        # 6
        join:
            add s, s, i         # 7
            addi i, i, 1
            blt i, n, top       # 9
            ret s
        .end";

/// Plain superblocks: no trace-tree arms.
fn plain() -> SuperblockConfig {
    SuperblockConfig {
        arm_share: 0.0,
        ..Default::default()
    }
}

#[test]
fn a_hot_path_through_a_diamond_tail_duplicates_the_join() {
    let (_, rs) = regions(DIAMOND, &[800], &plain());
    assert_eq!(
        rs[0].to_string(),
        "\
region f0:2
  block 2 weight=800
    2: andi r3, r1, 7
    3: beqi r3, 7, L6 -> exit 6 | next
  block 4 weight=700
    4: addi r2, r2, 1
  block 7 weight=800 dup
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> head | exit 10
"
    );
}

/// [`DIAMOND`] with its branch taken every other iteration.
fn unbiased_diamond() -> String {
    DIAMOND
        .replace("andi t, i, 7", "andi t, i, 1")
        .replace("beqi t, 7", "beqi t, 1")
}

#[test]
fn growth_stops_below_the_threshold() {
    // Taken half the time: neither successor is likely enough.
    let src = unbiased_diamond();
    let (_, rs) = regions(&src, &[800], &plain());
    assert_eq!(
        rs[0].to_string(),
        "\
region f0:2
  block 2 weight=800
    2: andi r3, r1, 1
    3: beqi r3, 1, L6 -> exit 6 | exit 4
"
    );
    // A lower threshold takes the likelier (here: first listed) arc.
    let cfg = SuperblockConfig {
        threshold: 0.5,
        ..plain()
    };
    let (_, rs) = regions(&src, &[800], &cfg);
    assert_eq!(rs[0].instr_count(), 6);
}

#[test]
fn the_size_cap_and_interpreted_instructions_end_a_trace() {
    let cfg = SuperblockConfig {
        max_instrs: 4,
        ..Default::default()
    };
    let (_, rs) = regions(DIAMOND, &[800], &cfg);
    assert_eq!(rs[0].instr_count(), 3);
    assert_eq!(rs[0].steps.last(), Some(&Step::Goto(Target::Exit(7))));

    let src = "
            .func main(n)
                .reg i
                li i, 0
            top:
                putn i
                addi i, i, 1
                blt i, n, top
                ret i
            .end";
    let (_, rs) = regions(src, &[50], &SuperblockConfig::default());
    // The loop's only block starts with `putn`: nothing worth compiling.
    assert!(rs.iter().all(|r| r.head != 1), "{}", text(&rs));
}

#[test]
fn traces_do_not_grow_into_blocks_of_other_traces() {
    let p = assemble(DIAMOND).unwrap();
    let e = |a: u32, b: u32| (Pc::new(0, a), Pc::new(0, b));
    // A profile where the rare side is as hot as the common one.
    let edges: EdgeCounts = [
        (e(3, 6), 500),
        (e(3, 4), 500),
        (e(9, 2), 999),
        (e(9, 10), 1),
    ]
    .into_iter()
    .collect();
    let w = WeightedCfg::build(&p, 0, &edges).unwrap();
    let rs = form_superblocks(&w, &p.functions[0], &plain());
    // Seed 2 (weight 1000) cannot grow (0.5 < 0.6); 7 (weight 1000)
    // loops back to 2, not to its own head, so it exits there.
    assert_eq!(
        rs[1].to_string(),
        "\
region f0:7
  block 7 weight=1000
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> exit 2 | exit 10
"
    );
}

#[test]
fn both_sides_of_an_unbiased_branch_become_arms_of_one_tree() {
    let src = unbiased_diamond();
    let (_, rs) = regions(&src, &[800], &SuperblockConfig::default());
    assert_eq!(
        rs[0].to_string(),
        "\
region f0:2
  block 2 weight=800
    2: andi r3, r1, 1
    3: beqi r3, 1, L6 -> block 6 | block 4
  block 4 weight=400
    4: addi r2, r2, 1
  block 7 weight=800 dup
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> head | exit 10
  block 6 weight=400
    6: subi r2, r2, 5
  block 7 weight=800 dup
    7: add r2, r2, r1
    8: addi r1, r1, 1
    9: blt r1, r0, L2 -> head | exit 10
"
    );
    // The whole loop is one region: the join seeds no trace of its own.
    assert!(rs.iter().all(|r| r.head != 7), "{}", text(&rs));
    // The text form has every step but the blocks' ends (fuel metering
    // needs them; a parsed region has none).
    let mut unended = rs[0].clone();
    for s in &mut unended.steps {
        if let Step::Block { end, .. } = s {
            *end = 0;
        }
    }
    assert_eq!(Region::parse(&rs[0].to_string()).unwrap(), unended);
}

#[test]
fn a_rare_side_below_the_arm_share_stays_an_exit() {
    // 1 in 8 is 12.5% of the head: an arm at the default 2%, an exit
    // at 20%.
    let (_, rs) = regions(DIAMOND, &[800], &SuperblockConfig::default());
    assert!(rs[0].to_string().contains("-> block 6 | next"), "{}", rs[0]);
    let cfg = SuperblockConfig {
        arm_share: 0.2,
        ..Default::default()
    };
    let (_, rs) = regions(DIAMOND, &[800], &cfg);
    assert!(rs[0].to_string().contains("-> exit 6 | next"), "{}", rs[0]);
}

#[test]
fn a_dispatch_loop_becomes_a_tree_with_an_arm_per_hot_case() {
    // A jump-table interpreter loop: no case is likely enough to grow a
    // superblock through (each 1/3), so only a tree keeps it compiled.
    let src = "
            .func main(n)
                .reg i, op, s
                li i, 0
                li s, 0
            next:                       # 2
                remi op, i, 3
                jtab op, [a, b, c]
                ret s                   # 4
            a:
                addi s, s, 1            # 5
                jmp tail
            b:
                subi s, s, 2            # 7
                jmp tail
            c:
                muli s, s, 3            # 9
            tail:
                addi i, i, 1            # 10
                blt i, n, next
                ret s
            .end";
    let (_, rs) = regions(src, &[300], &SuperblockConfig::default());
    let r = &rs[0];
    assert_eq!(r.head, 2);
    assert!(r.loops());
    let text = r.to_string();
    assert!(
        text.contains("jtab r2 -> [block 5, block 7, block 9] | exit 4"),
        "{text}"
    );
    // Each arm ends back at the head; `tail` is copied into each.
    assert_eq!(text.matches("-> head | exit 12").count(), 3, "{text}");
}

#[test]
fn only_seedable_blocks_head_a_tree_but_others_join_one() {
    let (p, w) = profiled(DIAMOND, &[800]);
    // The loop's first block (2) may not head a region: the heaviest
    // block that may (7, the join) heads one that loops through 2.
    let rs = form_superblocks_with(
        &w,
        &p.functions[0],
        &SuperblockConfig::default(),
        &no_native,
        &|o| o != 2,
    );
    assert!(rs.iter().all(|r| r.head != 2), "{}", text(&rs));
    assert_eq!(rs[0].head, 7);
    assert!(
        rs[0].to_string().contains("block 2 weight=800"),
        "{}",
        rs[0]
    );
}
