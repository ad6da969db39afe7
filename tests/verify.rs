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

    // The same saved reference serves runs with the JIT on: the good model
    // passes what can be checked there, the broken one fails with evidence.
    let verdict = verify::check_jit(&program, &[], &good, &reference).unwrap();
    assert!(verdict.passed(), "{}", verdict.to_text());
    assert!(verdict.spec.ends_with("(JIT on)"));
    let verdict = verify::check_jit(&program, &[], &broken, &reference).unwrap();
    assert!(!verdict.passed(), "{}", verdict.to_text());
    let hot = verdict
        .criteria
        .iter()
        .find(|c| c.name == "reports were hot without the JIT")
        .unwrap();
    assert!(
        !hot.passed && hot.evidence[0].contains("never hot without the JIT"),
        "{}",
        verdict.to_text()
    );

    // A spec with another interval cannot be checked against this reference.
    let other = parse_spec("multihash:interval=5000").unwrap();
    let e = verify::check(&program, &[], &other, &reference)
        .unwrap_err()
        .to_string();
    assert!(e.contains("different interval"), "{e}");
}

/// Pass 1 then pass 2 of `spec` on one program of the suite.
fn verify_program(name: &str, spec: &str) -> (verify::Reference, verify::Verdict) {
    let case = common::load(&common::root().join(format!("programs/{name}.tasm")));
    let program = asm::assemble(&case.source).unwrap();
    let input = case.input_bytes();
    let spec = parse_spec(spec).unwrap();
    let reference = verify::record_reference(
        &program,
        name,
        &case.args,
        &input,
        &spec,
        Tolerances::default(),
    )
    .unwrap();
    let verdict = verify::check(&program, &input, &spec, &reference).unwrap();
    (reference, verdict)
}

#[test]
fn verify_passes_stratified_and_rap_at_their_defaults() {
    // crc32, sieve and tokenizer once failed RAP (a point's shortfall is
    // bounded by eps*n, not by 10%); fib and matmul once failed stratified
    // (one 1-in-256 sample already exceeds T = 100).
    for (name, model) in [
        ("crc32", "rap"),
        ("sieve", "rap"),
        ("tokenizer", "rap"),
        ("fib", "stratified"),
        ("matmul", "stratified"),
        ("sieve", "stratified"),
    ] {
        let (reference, verdict) = verify_program(name, model);
        assert!(verdict.passed(), "{name}: {}", verdict.to_text());
        let checked = |c: &str| {
            verdict
                .criteria
                .iter()
                .find(|x| x.name == c)
                .map(|x| x.checked)
        };
        assert!(
            checked("counts within tolerance").unwrap() > 0,
            "{name} {model}: nothing was checked\n{}",
            verdict.to_text()
        );
        if model == "rap" {
            assert!(reference.ranges.is_some());
            assert!(
                checked("hot ranges").unwrap() as usize == reference.intervals.len(),
                "{}",
                verdict.to_text()
            );
        } else {
            assert_eq!(checked("hot ranges"), None);
        }
    }
}

#[test]
fn verify_fails_a_rap_that_breaks_its_error_bound() {
    // RAP is held to the paper's guarantee: estimates never above the true
    // count, short by at most max(h, eps*n). A model off by half its counts
    // either way must fail, with evidence, in points and in ranges.
    let case = common::load(&common::root().join("programs/sieve.tasm"));
    let program = asm::assemble(&case.source).unwrap();
    let spec = parse_spec("rap:reset=on").unwrap();
    let reference = verify::record_reference(
        &program,
        "sieve",
        &case.args,
        &[],
        &spec,
        Tolerances::default(),
    )
    .unwrap();
    assert!(
        verify::check(&program, &[], &spec, &reference)
            .unwrap()
            .passed()
    );
    for (scale, what) in [(2.0, "under"), (0.5, "over")] {
        // Scaling the truth is the same as a model scaling its estimates by
        // the inverse.
        let mut tampered = reference.clone();
        for i in &mut tampered.intervals {
            for e in &mut i.entries {
                e.count = (e.count as f64 * scale) as u64;
            }
            for r in &mut i.ranges {
                r.count = (r.count as f64 * scale) as u64;
            }
        }
        let verdict = verify::check(&program, &[], &spec, &tampered).unwrap();
        assert!(!verdict.passed(), "{what}: {}", verdict.to_text());
        for name in ["counts within tolerance", "hot ranges"] {
            let c = verdict.criteria.iter().find(|c| c.name == name).unwrap();
            assert!(!c.passed && !c.evidence.is_empty(), "{}", verdict.to_text());
            assert!(
                c.evidence[0].contains("RAP allows 0 over")
                    || c.evidence[0].contains("below hot*n"),
                "{}",
                c.evidence[0]
            );
        }
    }
    // A heavy range no reported hot range covers is evidence too.
    let mut tampered = reference.clone();
    let mut fake = tampered.intervals[0].ranges[0];
    fake.kind = toyvm_profiler::Kind::Call;
    fake.hi = 0xdead;
    fake.bits = 128;
    fake.top = 128;
    tampered.intervals[0].ranges.push(fake);
    let verdict = verify::check(&program, &[], &spec, &tampered).unwrap();
    let c = verdict
        .criteria
        .iter()
        .find(|c| c.name == "hot ranges")
        .unwrap();
    assert!(
        c.evidence
            .iter()
            .any(|e| e.contains("no reported hot range covers it")),
        "{}",
        verdict.to_text()
    );

    // A reference without range counts cannot check RAP.
    let plain = verify::record_reference(
        &program,
        "sieve",
        &case.args,
        &[],
        &parse_spec("multihash").unwrap(),
        Tolerances::default(),
    )
    .unwrap();
    let e = verify::check(&program, &[], &spec, &plain)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no range counts"), "{e}");
}
