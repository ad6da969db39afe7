//! The corpus (wasm/tests/corpus): modules the campaigns found, each
//! export with integer parameters run under wasmi and toyvm's interpreter
//! with all-zero, all-one and all-minus-one arguments, and through the
//! fuzzer's comparison (memory and globals too). The lab's campaign test
//! runs them under the JIT as well.

mod common;

use common::fuzz::{Stats, compare_run, corpus, fuzz_module};
use toyvm_wasm::{Entry, Options, ValKind, translate};

#[test]
fn corpus_modules_run_alike_under_wasmi_and_toyvm() {
    let modules = corpus();
    assert!(!modules.is_empty());
    let mut runs = 0;
    for (name, wasm) in &modules {
        let opts = Options {
            entry: Entry::InstantiateOnly,
            ..Options::default()
        };
        let t = translate(wasm, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        for e in &t.exports {
            if e.params
                .iter()
                .any(|k| !matches!(k, ValKind::I32 | ValKind::I64))
            {
                continue;
            }
            for v in [0, 1, -1] {
                let args = vec![v; e.params.len()];
                // Returning or trapping: either, alike under both engines.
                let _ending = compare_run(wasm, &e.name, &args)
                    .unwrap_or_else(|d| panic!("{name} `{}` {args:?}: {d}", e.name));
                runs += 1;
            }
        }
        let mut stats = Stats::default();
        fuzz_module(7, wasm, &mut stats, &mut |_| Vec::new());
        assert!(
            stats.mismatches.is_empty(),
            "{name}: {:#?}",
            stats.mismatches
        );
    }
    assert!(runs >= 9, "{runs}");
}

#[test]
fn a_known_select_condition_picks_the_second_operand_from_its_register() {
    let wasm = wat::parse_str(include_str!("corpus/select-known-condition.wat")).unwrap();
    assert_eq!(compare_run(&wasm, "f", &[0]).unwrap(), Ok(Some(0)));
    assert_eq!(compare_run(&wasm, "stale", &[0]).unwrap(), Ok(Some(9)));
    assert_eq!(compare_run(&wasm, "first", &[0]).unwrap(), Ok(Some(7)));
}
