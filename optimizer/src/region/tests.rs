use super::*;

const TEXT: &str = "\
region f0:3
    guard r0 == 100 | fail 3
  block 3 weight=90000
    3: mul r4, r1, r2
    4: ld r5, r4, -2
    guard r5 == 8 | fail 5
    5: lk r6, -9223372036854775808
  block 6 weight=10 dup
    6: loop r2, r0, L3 -> head | exit 7
    7: jtab r3 -> [exit 12, next] | exit 8
    8: native f2 call r1, f2, r1, 1
    9: native [f2, f4] calli r1, r2, r3, 2
    9: interpret calli r1, r2, r3, 2
";

#[test]
fn text_round_trips() {
    let r = Region::parse(TEXT).unwrap();
    assert_eq!(r.head_pc(), Pc::new(0, 3));
    assert_eq!(r.steps.len(), 12);
    assert_eq!(r.to_string(), TEXT);
    assert_eq!(r.instr_count(), 7);
    assert!(r.loops());
    assert_eq!(r.guards().collect::<Vec<_>>(), [(0, 100, 3), (5, 8, 5)]);
}

#[test]
fn comments_and_blank_lines_are_ignored() {
    let r = Region::parse("# a comment\nregion f2:0 ; head\n\n  goto exit 4 # end\n").unwrap();
    assert_eq!(r.func, 2);
    assert_eq!(r.steps, [Step::Goto(Target::Exit(4))]);
}

#[test]
fn control_exits_follow_step_order() {
    let r = Region::parse(TEXT).unwrap();
    let kinds: Vec<(ExitKind, u32)> = r
        .control_exits()
        .iter()
        .map(|e| (e.kind, e.resume))
        .collect();
    use ExitKind::*;
    assert_eq!(
        kinds,
        [
            (Guard, 3),
            (Guard, 5),
            (Side, 7),
            (Side, 12),
            (Side, 8),
            (Interpret, 9),
            (Interpret, 9)
        ]
    );
}

#[test]
fn parse_errors_name_the_line() {
    let e = Region::parse("region f0:0\n  block 0 weight=1\n  3: frob r1\n").unwrap_err();
    assert_eq!(e.to_string(), "region IR, line 3: unknown mnemonic `frob`");
    let e = Region::parse("region f0:0\n  3: add r1, r2\n").unwrap_err();
    assert!(e.to_string().contains("takes 3 operands, 2 given"), "{e}");
    let e = Region::parse("regio f0:0\n").unwrap_err();
    assert!(e.to_string().contains("line 1"), "{e}");
    let e = Region::parse("region f0:0\n  1: jnz r1, L0 -> elsewhere | next\n").unwrap_err();
    assert!(e.to_string().contains("is not a target"), "{e}");
}

#[test]
fn exits_say_what_tuple_the_interpreter_would_have_emitted() {
    let r = Region::parse(TEXT).unwrap();
    let exits = r.control_exits();
    let report = |kind, resume| {
        exits
            .iter()
            .find(|e| e.kind == kind && e.resume == resume)
            .map(|e| e.report)
    };
    // An entry guard of a region that is not at a function entry, and a
    // guard on a loaded value.
    assert_eq!(report(ExitKind::Guard, 3), Some(None));
    assert_eq!(
        report(ExitKind::Guard, 5),
        Some(Some(ExitReport::Value { pc: 4, reg: 5 }))
    );
    // Branch and jump-table exits are their edges.
    assert_eq!(
        report(ExitKind::Side, 7),
        Some(Some(ExitReport::Edge { branch: 6 }))
    );
    assert_eq!(
        report(ExitKind::Side, 12),
        Some(Some(ExitReport::Edge { branch: 7 }))
    );
    // At a function's entry, argument guards report the argument.
    let entry = Region::parse(
            "region f1:0\n  guard r1 == 7 | fail 0\n  block 0 weight=1\n    0: addi r1, r1, 1\n    goto exit 1\n",
        )
        .unwrap();
    assert_eq!(
        entry.control_exits()[0].report,
        Some(ExitReport::Value {
            pc: toyvm_vm::program::ARG_OFFSET | 1,
            reg: 1
        })
    );
}
