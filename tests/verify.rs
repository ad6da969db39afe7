//! The two-pass verifier passes a good model and fails a broken one, with
//! evidence.

mod common;

use toyvm::verify::{self, Tolerances};
use toyvm_profiler::parse_spec;
use toyvm_vm::asm;

#[test]
fn verify_passes_multihash_and_fails_a_broken_configuration() {
    let case = common::load(&common::root().join("programs/hashtable.tasm"));
    let program = asm::assemble(&case.source).unwrap();
    let good = parse_spec("multihash").unwrap();
    let reference = verify::record_reference(
        &program,
        "hashtable",
        &case.args,
        &[],
        &good,
        Tolerances::default(),
    )
    .unwrap();
    assert!(
        reference.intervals.len() > 20,
        "the run must span many intervals"
    );

    // The reference survives a save/load round trip and is reused for both.
    let mut saved = Vec::new();
    verify::save(&reference, &mut saved).unwrap();
    let reference = verify::load(&saved).unwrap();

    let verdict = verify::check(&program, &[], &good, &reference).unwrap();
    assert!(verdict.passed(), "{}", verdict.to_text());

    let broken = parse_spec("multihash:tables=1,entries=16,reset=on").unwrap();
    let verdict = verify::check(&program, &[], &broken, &reference).unwrap();
    assert!(!verdict.passed(), "{}", verdict.to_text());
    let fp = verdict
        .criteria
        .iter()
        .find(|c| c.name == "no systematic false positives")
        .unwrap();
    assert!(
        !fp.passed && !fp.evidence.is_empty(),
        "{}",
        verdict.to_text()
    );
    assert!(
        fp.evidence[0].contains("false positives, e.g."),
        "{}",
        fp.evidence[0]
    );

    // A spec with another interval cannot be checked against this reference.
    let other = parse_spec("multihash:interval=5000").unwrap();
    let e = verify::check(&program, &[], &other, &reference)
        .unwrap_err()
        .to_string();
    assert!(e.contains("different interval"), "{e}");
}
