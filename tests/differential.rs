//! Differential fuzzing of the JIT against the interpreter (the oracle):
//! random programs from [`toyvm_lab::fuzzgen`] and every file of
//! `tests/corpus/` must print the same bytes, return the same value and
//! trap with the same message at the same pc under the JIT driven by every
//! profiler model (`fuzzgen::configs`).
//!
//! The proptest's budget is small ([`CASES`] programs); the long campaign
//! is `cargo run --release --example fuzz_campaign`.

use proptest::prelude::*;
use toyvm_lab::fuzzgen::{self, Bytes, End, FuzzProgram, JitTotals, Seeded};

/// Programs per `cargo test` run of the proptest.
const CASES: u32 = 64;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: CASES,
        // A failing program runs every configuration again per shrink step.
        max_shrink_iters: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn jit_matches_the_interpreter_on_generated_programs(
        bytes in prop::collection::vec(any::<u8>(), 16..2048)
    ) {
        let case = fuzzgen::generate(&mut Bytes::new(&bytes));
        if let Err(m) = fuzzgen::check(&case, &fuzzgen::configs()) {
            prop_assert!(false, "{}", m);
        }
    }
}

/// Every `tests/corpus/*.tasm` under every configuration. Files with a
/// `# known-failing: REASON` line are listed and skipped.
#[test]
fn corpus_matches_the_interpreter_under_every_configuration() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tasm"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no corpus in {}", dir.display());
    let configs = fuzzgen::configs();
    let mut failures = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy();
        if let Some(reason) = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("# known-failing:"))
        {
            eprintln!("SKIPPED {name} (known-failing:{reason})");
            continue;
        }
        let case = FuzzProgram::from_corpus(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        match fuzzgen::check(&case, &configs) {
            Ok(s) => {
                assert!(!s.out_of_fuel, "{name}: out of fuel");
                eprintln!("ok {name}: {} runs", s.runs);
            }
            Err(m) => failures.push(format!("{name}: {m}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The generator is not vacuous: over a fixed sample its programs compile
/// regions, enter them, take side exits and fail guards; the JIT drops and
/// recompiles; compiled code calls the interpreter; some programs call host
/// functions; some programs trap and most end normally; none runs out of
/// the oracle's fuel.
#[test]
fn generated_programs_really_exercise_the_jit() {
    let configs = fuzzgen::configs();
    let mut totals = JitTotals::default();
    let (mut values, mut traps, mut runs) = (0, 0, 0);
    let (mut hosted, mut hosted_entries) = (0, 0);
    for seed in 0..32 {
        let case = fuzzgen::generate(&mut Seeded::new(seed));
        let s = fuzzgen::check(&case, &configs).unwrap_or_else(|m| panic!("seed {seed}: {m}"));
        if case.text.contains("hcall") {
            hosted += 1;
            hosted_entries += s.jit.region_entries;
        }
        assert!(
            !s.out_of_fuel,
            "seed {seed} ran out of fuel:\n{}",
            case.text
        );
        match s.oracle {
            Some(End::Value(_)) => values += 1,
            Some(End::Trap { .. }) => traps += 1,
            _ => {}
        }
        runs += s.runs;
        totals.add(&s.jit);
    }
    eprintln!("{runs} runs: {values} returned, {traps} trapped; {totals:?}");
    assert!(
        values >= 8 && traps >= 1,
        "{values} returned, {traps} trapped"
    );
    // Some programs call the fuzz host, and run compiled code.
    assert!(
        hosted >= 3 && hosted_entries >= 1_000,
        "{hosted} programs call the host; {hosted_entries} region entries"
    );
    assert!(totals.compiles >= 100, "{totals:?}");
    assert!(totals.region_entries >= 10_000, "{totals:?}");
    assert!(totals.side_exits >= 1_000, "{totals:?}");
    assert!(totals.guard_failures >= 10, "{totals:?}");
    // 9 drops since decisions wait one interval (the lag, issue 15).
    assert!(totals.drops >= 5 && totals.recompiles >= 1, "{totals:?}");
    // Compiled code calls interpreted functions (they print, store, trap,
    // halt, recurse, and run loops compiled in turn), and runs are cut
    // short by fuel part-way.
    assert!(totals.interpreter_calls >= 1_000, "{totals:?}");
    assert!(totals.fuel_cut >= 10, "{totals:?}");
}

/// `TOYVM_FUZZ_SHOW=SEED cargo test --test differential show -- --nocapture`
/// prints one generated program.
#[test]
fn show() {
    if let Ok(seed) = std::env::var("TOYVM_FUZZ_SHOW") {
        let case = fuzzgen::generate(&mut Seeded::new(seed.parse().unwrap()));
        println!("{}", case.to_corpus("generated"));
    }
}
