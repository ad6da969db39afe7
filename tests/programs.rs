//! The golden runner: every program in `programs/` prints what its header
//! says.  `TOYVM_BLESS=1 cargo test --test programs` rewrites the headers
//! from the current output.

mod common;

use toyvm_vm::interp::{self, Config, Input};
use toyvm_vm::{Program, asm};

#[test]
fn every_program_prints_its_golden_output() {
    let bless = std::env::var_os("TOYVM_BLESS").is_some_and(|v| v == "1");
    let cases = common::all();
    assert!(cases.len() >= 3, "the program suite is missing");
    let mut failures = Vec::new();
    for case in &cases {
        let program = match asm::assemble(&case.source) {
            Ok(p) => p,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        // The binary form must describe the same program.
        assert_eq!(
            Program::load(&program.to_bytes()).unwrap(),
            program,
            "{}",
            case.name
        );
        let Some(input) = case.input_or_skip() else {
            continue;
        };
        let mut out = Vec::new();
        let cfg = Config {
            fuel: Some(2_000_000_000),
            ..Config::default()
        };
        let r = interp::run(
            &program,
            Input {
                args: &case.args,
                file: &input,
            },
            &mut out,
            &cfg,
        );
        if let Err(e) = r {
            failures.push(format!("{}: {e}", case.name));
            continue;
        }
        if !case.matches(&out) {
            if bless {
                std::fs::write(&case.path, case.blessed(&out)).unwrap();
                eprintln!("blessed {}", case.name);
            } else {
                failures.push(format!(
                    "{}: output differs from the header (TOYVM_BLESS=1 to update):\n{}",
                    case.name,
                    String::from_utf8_lossy(&out[..out.len().min(2000)])
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
