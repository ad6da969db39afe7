//! The two-pass verifier passes a good model and fails a broken one, with
//! evidence.

mod common;

use toyvm_lab::conformance::{self, Tolerances};
use toyvm_profiler::parse_spec;
use toyvm_vm::asm;

#[test]
fn verify_passes_multihash_and_fails_a_broken_configuration() {
    let case = common::load(&common::root().join("programs/hashtable.tasm"));
    let program = asm::assemble(&case.source).unwrap();
    let good = parse_spec("multihash").unwrap();
    let reference = conformance::record_reference(
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
    conformance::save(&reference, &mut saved).unwrap();
    let reference = conformance::load(&saved).unwrap();

    let verdict = conformance::check(&program, &[], &good, &reference).unwrap();
    assert!(verdict.passed(), "{}", verdict.to_text());

    let broken = parse_spec("multihash:tables=1,entries=16,reset=on").unwrap();
    let verdict = conformance::check(&program, &[], &broken, &reference).unwrap();
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
    let verdict = conformance::check_jit(&program, &[], &good, &reference).unwrap();
    assert!(verdict.passed(), "{}", verdict.to_text());
    assert!(verdict.spec.ends_with("(JIT on)"));
    let verdict = conformance::check_jit(&program, &[], &broken, &reference).unwrap();
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
    let e = conformance::check(&program, &[], &other, &reference)
        .unwrap_err()
        .to_string();
    assert!(e.contains("different interval"), "{e}");
}

/// Pass 1 then pass 2 of `spec` on one program of the suite (`None` when
/// its input is absent).
fn verify_program(
    name: &str,
    spec: &str,
) -> Option<(conformance::Reference, conformance::Verdict)> {
    let case = common::load(&common::root().join(format!("programs/{name}.tasm")));
    let program = asm::assemble(&case.source).unwrap();
    let input = case.input_or_skip()?;
    let spec = parse_spec(spec).unwrap();
    let reference = conformance::record_reference(
        &program,
        name,
        &case.args,
        &input,
        &spec,
        Tolerances::default(),
    )
    .unwrap();
    let verdict = conformance::check(&program, &input, &spec, &reference).unwrap();
    Some((reference, verdict))
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
        let Some((reference, verdict)) = verify_program(name, model) else {
            continue;
        };
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
    let reference = conformance::record_reference(
        &program,
        "sieve",
        &case.args,
        &[],
        &spec,
        Tolerances::default(),
    )
    .unwrap();
    assert!(
        conformance::check(&program, &[], &spec, &reference)
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
        let verdict = conformance::check(&program, &[], &spec, &tampered).unwrap();
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
    let verdict = conformance::check(&program, &[], &spec, &tampered).unwrap();
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
    let plain = conformance::record_reference(
        &program,
        "sieve",
        &case.args,
        &[],
        &parse_spec("multihash").unwrap(),
        Tolerances::default(),
    )
    .unwrap();
    let e = conformance::check(&program, &[], &spec, &plain)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no range counts"), "{e}");
}

/// `toyvm` itself, for the command-line cases.
fn toyvm(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(args)
        .output()
        .expect("toyvm runs")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toyvm-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A program of the suite, assembled, with its arguments and input: the
/// header's arguments, and for a program that reads an input its own source
/// (any text serves these tests, and it needs no `../shared`).
fn suite(name: &str) -> (toyvm_vm::Program, Vec<i64>, Vec<u8>) {
    let case = common::load(&common::root().join(format!("programs/{name}.tasm")));
    let input = match &case.input {
        Some(_) => case.source.clone().into_bytes(),
        None => Vec::new(),
    };
    (asm::assemble(&case.source).unwrap(), case.args, input)
}

fn record(name: &str, spec: &str) -> conformance::Reference {
    let (program, args, input) = suite(name);
    conformance::record_reference(
        &program,
        name,
        &args,
        &input,
        &parse_spec(spec).unwrap(),
        Tolerances::default(),
    )
    .unwrap()
}

#[test]
fn a_reference_is_refused_for_another_program_arguments_or_input() {
    let fib = record("fib", "multihash");
    assert_eq!(fib.format, conformance::FORMAT);
    assert_eq!(fib.input_hash, None);
    let (fib_program, fib_args, _) = suite("fib");
    let (ht, ht_args, _) = suite("hashtable");
    let spec = parse_spec("multihash").unwrap();
    let err = |r: toyvm_lab::Result<conformance::Verdict>| r.unwrap_err().to_string();

    // Another program: refused by check and check_jit alike, not judged.
    let e = err(conformance::check(&ht, &[], &spec, &fib));
    assert!(e.contains("recorded for another program (`fib`"), "{e}");
    let e = err(conformance::check_jit(&ht, &[], &spec, &fib));
    assert!(e.contains("another program"), "{e}");
    // Other arguments, another input: each named, all at once.
    let e = fib
        .ensure_recorded_for(&fib_program, &[21], &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("other arguments ([20]; this run: [21])"), "{e}");
    assert!(!e.contains("program"), "{e}");
    let e = fib
        .ensure_recorded_for(&fib_program, &fib_args, b"text")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("another input file (none; this run: 4 bytes"),
        "{e}"
    );
    let e = fib
        .ensure_recorded_for(&ht, &ht_args, b"text")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("another program") && e.contains("other arguments") && e.contains("input"),
        "{e}"
    );
    fib.ensure_recorded_for(&fib_program, &fib_args, &[])
        .unwrap();

    // A reference with an input names it by hash: another file is refused.
    let tok = record("tokenizer", "multihash");
    let (tok_program, tok_args, input) = suite("tokenizer");
    assert_eq!(
        tok.input_hash.as_ref().map(|f| f.bytes),
        Some(input.len() as u64)
    );
    let mut other = input.clone();
    other[0] ^= 1;
    let e = err(conformance::check(&tok_program, &other, &spec, &tok));
    assert!(e.contains("another input file"), "{e}");
    assert!(conformance::check(&tok_program, &input, &spec, &tok).is_ok());
    tok.ensure_recorded_for(&tok_program, &tok_args, &input)
        .unwrap();
}

#[test]
fn a_reference_whose_intervals_do_not_match_its_run_is_refused() {
    let (program, _, _) = suite("fib");
    let spec = parse_spec("multihash").unwrap();
    let good = record("fib", "multihash");
    let mut short = good.clone();
    short.intervals.pop();
    let mut events = good.clone();
    events.intervals[0].events[1] -= 1;
    for r in [short, events] {
        let e = conformance::check(&program, &[], &spec, &r)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not match the run it names"), "{e}");
    }
}

/// `reference` saved, edited as JSON by `change`, and loaded again.
fn load_edited(
    reference: &conformance::Reference,
    change: impl FnOnce(&mut serde_json::Value),
) -> toyvm_lab::Result<conformance::Reference> {
    let mut v = serde_json::to_value(reference).unwrap();
    change(&mut v);
    conformance::load(&serde_json::to_vec(&v).unwrap())
}

type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;

fn edit(f: impl FnOnce(&mut serde_json::Value) + 'static) -> Edit {
    Box::new(f)
}

#[test]
fn altered_references_are_rejected_not_run() {
    let fib = record("fib", "multihash");
    assert!(fib.intervals.len() >= 3 && !fib.intervals[0].entries.is_empty());
    assert!(load_edited(&fib, |_| {}).is_ok());
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "a model as the oracle",
            edit(|v| v["oracle"] = "multihash".into()),
            "is not the perfect model but `multihash`",
        ),
        (
            "an invalid oracle",
            edit(|v| v["oracle"] = "nonsense:x=1".into()),
            "oracle `nonsense:x=1`",
        ),
        (
            "an interval length the oracle does not have",
            edit(|v| v["interval"] = 5000.into()),
            "are not the oracle",
        ),
        (
            "a duplicated interval index",
            edit(|v| v["intervals"][1]["index"] = 0.into()),
            "interval 1 has index 0",
        ),
        (
            "intervals out of order",
            edit(|v| {
                let a = v["intervals"].as_array_mut().unwrap();
                a.swap(1, 2);
            }),
            "interval 1 has index 2",
        ),
        (
            "quorum=-1",
            edit(|v| v["tolerances"]["quorum"] = (-1.0).into()),
            "quorum -1 is out of range",
        ),
        (
            "quorum=0",
            edit(|v| v["tolerances"]["quorum"] = 0.0.into()),
            "quorum 0 is out of range",
        ),
        (
            "margin=1.5",
            edit(|v| v["tolerances"]["margin"] = 1.5.into()),
            "margin 1.5 is out of range",
        ),
        (
            "a negative tolerance",
            edit(|v| v["tolerances"]["tolerance"] = (-0.1).into()),
            "tolerance -0.1 is out of range",
        ),
        (
            "an entry counted more than its interval holds",
            edit(|v| v["intervals"][0]["entries"][0]["count"] = 1_000_000.into()),
            "more than its",
        ),
        (
            "an entry below the low bound",
            edit(|v| v["intervals"][0]["entries"][0]["count"] = 1.into()),
            "below the low bound",
        ),
        (
            "a duplicated entry",
            edit(|v| {
                let e = v["intervals"][0]["entries"][0].clone();
                v["intervals"][0]["entries"].as_array_mut().unwrap().push(e);
            }),
            "twice",
        ),
        (
            "more events than the interval",
            edit(|v| v["intervals"][0]["events"][0] = 20_000.into()),
            "more than the interval length",
        ),
        (
            "a malformed program hash",
            edit(|v| v["program_hash"]["fnv1a64"] = "xyz".into()),
            "not 16 hex digits",
        ),
        (
            "an unknown field",
            edit(|v| v["intervals"][0]["extra"] = 1.into()),
            "unknown field `extra`",
        ),
        (
            "no arguments",
            edit(|v| {
                v.as_object_mut().unwrap().remove("args");
            }),
            "missing field `args`",
        ),
        (
            "an old-format reference",
            edit(|v| {
                let o = v.as_object_mut().unwrap();
                for k in ["format", "program_hash", "input_hash"] {
                    o.remove(k);
                }
            }),
            "old-format reference",
        ),
        (
            "a later format",
            edit(|v| v["format"] = 3.into()),
            "reference format 3",
        ),
    ];
    for (what, change, want) in cases {
        let e = match load_edited(&fib, change) {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(want), "{what}: {e}");
    }
    // Range counts: only in a RAP reference, and within 128 bits.
    let rap = record("sieve", "rap:reset=on");
    assert!(load_edited(&rap, |_| {}).is_ok());
    let e = load_edited(&rap, |v| {
        v["intervals"][0]["ranges"][0]["bits"] = 200.into()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("impossible range count"), "{e}");
    let e = load_edited(&fib, |v| {
        v["intervals"][0]["ranges"] = serde_json::to_value(&rap.intervals[0].ranges).unwrap()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("not RAP's"), "{e}");

    // Truncated anywhere: rejected with a "record a new one" message.
    let mut saved = Vec::new();
    conformance::save(&fib, &mut saved).unwrap();
    for cut in [0, 1, saved.len() / 2, saved.len() - 3] {
        let e = conformance::load(&saved[..cut]).unwrap_err().to_string();
        assert!(e.contains("not a readable reference"), "cut at {cut}: {e}");
    }
}

#[test]
fn reference_files_are_read_with_a_size_bound() {
    // Devices that never end fail at their first byte, not after filling memory.
    for dev in ["/dev/zero", "/dev/full"] {
        let path = std::path::Path::new(dev);
        if path.exists() {
            let e = conformance::read_file(path).unwrap_err().to_string();
            assert!(e.contains("found byte 0x00"), "{dev}: {e}");
        }
    }
    // A file over the maximum is refused by its size (sparse: nothing is written).
    let big = tmp("big.ref.json");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&big).unwrap();
        f.write_all(b"{").unwrap();
        f.set_len(conformance::MAX_REFERENCE_BYTES + 1).unwrap();
    }
    let e = conformance::read_file(&big).unwrap_err().to_string();
    assert!(e.contains("larger than the"), "{e}");
    std::fs::remove_file(&big).unwrap();
    let e = conformance::read_file(&tmp("missing.ref.json"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("No such file"), "{e}");
    // An empty file is not a reference either.
    let empty = tmp("empty.ref.json");
    std::fs::write(&empty, b"").unwrap();
    let e = conformance::read_file(&empty).unwrap_err().to_string();
    assert!(e.contains("not a readable reference"), "{e}");
}

#[test]
fn the_command_line_refuses_a_mismatched_reference_and_applies_given_tolerances() {
    let fib = common::root().join("programs/fib.tasm");
    let ht = common::root().join("programs/hashtable.tasm");
    let (fib, ht) = (fib.to_str().unwrap(), ht.to_str().unwrap());
    let path = tmp("fib.ref.json");
    let _ = std::fs::remove_file(&path);
    let r = path.to_str().unwrap();
    let o = toyvm(&[
        "verify",
        fib,
        "20",
        "--profile",
        "multihash",
        "--reference",
        r,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("pass 1: wrote"));
    assert!(
        text(&o.stdout).contains("margin 0.25, tolerance 0.1, quorum 0.9"),
        "{}",
        text(&o.stdout)
    );

    // Reused as recorded: passes, and says nothing about tolerances.
    let o = toyvm(&[
        "verify",
        fib,
        "20",
        "--profile",
        "multihash",
        "--reference",
        r,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("pass 1: reusing"));
    assert!(!text(&o.stdout).contains("note:"), "{}", text(&o.stdout));

    // Another program, other arguments: refused (status 3), naming what differs.
    for (args, want) in [
        (vec![ht, "20000"], "recorded for another program"),
        (
            vec![fib, "21"],
            "recorded for other arguments ([20]; this run: [21])",
        ),
    ] {
        let mut cmd = vec!["verify"];
        cmd.extend(args);
        cmd.extend(["--profile", "multihash", "--reference", r]);
        let o = toyvm(&cmd);
        assert_eq!(o.status.code(), Some(3), "{}", text(&o.stdout));
        assert!(text(&o.stderr).contains(want), "{}", text(&o.stderr));
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    }

    // Tolerances given on the command line replace the reference's, and the
    // verdict says so; a wider margin would need entries it never kept.
    let o = toyvm(&[
        "verify",
        fib,
        "20",
        "--profile",
        "multihash",
        "--reference",
        r,
        "--quorum",
        "0.5",
        "--margin",
        "0.1",
    ]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("margin 0.1, tolerance 0.1, quorum 0.5"),
        "{out}"
    );
    assert!(
        out.contains(
            "note: quorum 0.5 from the command line (the reference was recorded with 0.9)"
        ),
        "{out}"
    );
    assert!(
        out.contains("note: margin 0.1 from the command line"),
        "{out}"
    );
    for (flag, value, want) in [
        ("--margin", "0.5", "wider than the reference's 0.25"),
        ("--quorum", "-1", "quorum -1 is out of range"),
    ] {
        let o = toyvm(&[
            "verify",
            fib,
            "20",
            "--profile",
            "multihash",
            "--reference",
            r,
            flag,
            value,
        ]);
        assert_eq!(o.status.code(), Some(2));
        assert!(text(&o.stderr).contains(want), "{}", text(&o.stderr));
    }
    // Out-of-range tolerances are refused before pass 1 too.
    let o = toyvm(&[
        "verify",
        fib,
        "20",
        "--profile",
        "multihash",
        "--quorum",
        "1.5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("quorum 1.5 is out of range"));

    // /dev/zero as a reference: a clear error, at once.
    if std::path::Path::new("/dev/zero").exists() {
        let o = toyvm(&[
            "verify",
            fib,
            "20",
            "--profile",
            "multihash",
            "--reference",
            "/dev/zero",
        ]);
        assert_eq!(o.status.code(), Some(3));
        assert!(
            text(&o.stderr).contains("/dev/zero: not a reference"),
            "{}",
            text(&o.stderr)
        );
    }
    std::fs::remove_file(&path).unwrap();
}

/// The disclosure's effectiveness criterion: a model whose modeled software
/// cost exceeds the budget fails it with evidence; the default models pass.
#[test]
fn the_overhead_criterion_passes_cheap_models_and_fails_a_costly_one() {
    let case = common::load(&common::root().join("programs/hashtable.tasm"));
    let program = asm::assemble(&case.source).unwrap();
    let criterion = |spec: &str| {
        let spec = parse_spec(spec).unwrap();
        let reference = conformance::record_reference(
            &program,
            "hashtable",
            &case.args,
            &[],
            &spec,
            Tolerances::default(),
        )
        .unwrap();
        let verdict = conformance::check(&program, &[], &spec, &reference).unwrap();
        let c = verdict
            .criteria
            .iter()
            .find(|c| c.name == "overhead within budget")
            .cloned()
            .unwrap_or_else(|| panic!("no overhead criterion:\n{}", verdict.to_text()));
        (c, verdict.to_text())
    };
    for cheap in ["multihash", "stratified"] {
        let (c, text) = criterion(cheap);
        assert!(c.passed && c.checked > 20, "{cheap}:\n{text}");
    }
    // Sampling every event sends a message (30 cycles) per event.
    let (c, text) = criterion("stratified:sampler=R_1,second=none");
    assert!(!c.passed, "{text}");
    assert!(c.evidence[0].contains("cycles per event"), "{text}");
}
