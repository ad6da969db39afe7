//! The `toyvm` command line, end to end.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn toyvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .args(args)
        .output()
        .expect("toyvm runs")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("toyvm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn asm_and_dis_round_trip_every_program_byte_for_byte() {
    for case in common::all() {
        let bc = tmp(&format!("{}.bc", case.name));
        let text = tmp(&format!("{}.dis.tasm", case.name));
        let bc2 = tmp(&format!("{}.2.bc", case.name));
        let o = toyvm(&["asm", s(&case.path), "-o", s(&bc)]);
        assert!(
            o.status.success(),
            "{}: {}",
            case.name,
            String::from_utf8_lossy(&o.stderr)
        );
        let o = toyvm(&["dis", s(&bc), "-o", s(&text)]);
        assert!(o.status.success());
        let o = toyvm(&["asm", s(&text), "-o", s(&bc2)]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            std::fs::read(&bc).unwrap(),
            std::fs::read(&bc2).unwrap(),
            "{}",
            case.name
        );
        let dis_again = toyvm(&["dis", s(&bc2)]).stdout;
        assert_eq!(dis_again, std::fs::read(&text).unwrap(), "{}", case.name);
    }
}

#[test]
fn run_takes_either_form_and_maps_exit_status() {
    let src = tmp("exit.tasm");
    std::fs::write(&src, ".func main(n)\n putn n\n ret n\n.end\n").unwrap();
    let bc = tmp("exit.bc");
    assert!(toyvm(&["asm", s(&src), "-o", s(&bc)]).status.success());
    for file in [&src, &bc] {
        let o = toyvm(&["run", s(file), "--", "-7"]);
        assert_eq!(o.stdout, b"-7");
        assert_eq!(o.status.code(), Some(249), "low byte of -7");
    }
}

#[test]
fn traps_and_bad_input_give_clear_errors_and_status() {
    let src = tmp("trap.tasm");
    std::fs::write(
        &src,
        ".func main(n)\n li r1, 0\n div n, n, r1\n ret n\n.end\n",
    )
    .unwrap();
    let o = toyvm(&["run", s(&src), "4"]);
    assert_eq!(o.status.code(), Some(3));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("trap in `main` at instruction 1") && err.contains("division by zero"),
        "{err}"
    );

    let o = toyvm(&["run", s(&src)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("takes 1 argument, 0 given"));

    let o = toyvm(&["run", s(&src), "four"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("argument 1 (`four`) is not an integer"));

    let junk = tmp("junk.bc");
    let mut bytes = toyvm_vm::bytecode::MAGIC.to_vec();
    bytes.extend_from_slice(&[1, 0, 0, 0, 9, 9]);
    std::fs::write(&junk, bytes).unwrap();
    let o = toyvm(&["run", s(&junk)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bytecode: byte offset"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let o = toyvm(&["run", s(&src), "1", "--fuel", "1"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("out of fuel"));
}

#[test]
fn record_writes_both_trace_formats_with_the_counted_tuples() {
    let case = common::load(&common::root().join("programs/fib.tasm"));
    let args: Vec<String> = case.args.iter().map(|a| a.to_string()).collect();
    let mut counts = None;
    for format in ["text", "binary"] {
        let trace = tmp(&format!("fib.{format}.trace"));
        let mut cmd = vec!["run", s(&case.path)];
        cmd.extend(args.iter().map(String::as_str));
        cmd.extend([
            "--record",
            s(&trace),
            "--record-format",
            format,
            "--stats",
            "--json",
        ]);
        let o = toyvm(&cmd);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let stats: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
        let tuples = toyvm_profiler::trace::read_all(&std::fs::read(&trace).unwrap()).unwrap();
        let by_kind =
            |k: toyvm_profiler::Kind| tuples.iter().filter(|t| t.kind == k).count() as u64;
        assert_eq!(
            stats["tuples"]["value"],
            by_kind(toyvm_profiler::Kind::Value)
        );
        assert_eq!(stats["tuples"]["edge"], by_kind(toyvm_profiler::Kind::Edge));
        assert_eq!(stats["tuples"]["call"], by_kind(toyvm_profiler::Kind::Call));
        assert!(stats["instructions"].as_u64().unwrap() > 0);
        let now = (by_kind(toyvm_profiler::Kind::Edge), tuples.len());
        if let Some(before) = counts {
            assert_eq!(before, now, "both formats hold the same stream");
        }
        counts = Some(now);
    }
}

#[test]
fn help_explains_each_command() {
    let o = toyvm(&["--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for cmd in ["run", "asm", "dis"] {
        assert!(text.contains(cmd), "{text}");
    }
    let o = toyvm(&["run", "--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for flag in ["--input", "--fuel", "--record", "--stats", "--kinds"] {
        assert!(text.contains(flag), "{text}");
    }
}

#[test]
fn profiling_a_run_changes_nothing_the_program_prints() {
    let case = common::load(&common::root().join("programs/sieve.tasm"));
    let arg = case.args[0].to_string();
    let plain = toyvm(&["run", s(&case.path), &arg]);
    assert!(plain.status.success());
    for spec in ["perfect", "multihash", "stratified", "rap", "conte"] {
        let o = toyvm(&[
            "run",
            s(&case.path),
            &arg,
            "--profile",
            spec,
            "--stats",
            "--json",
        ]);
        assert!(
            o.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.stdout, plain.stdout, "{spec}");
        let stats: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
        assert!(stats["intervals"].as_u64().unwrap() > 0, "{spec}: {stats}");
        assert!(stats["profile"].as_str().unwrap().starts_with(spec));
    }
    let o = toyvm(&[
        "run",
        s(&case.path),
        &arg,
        "--profile",
        "multihash:tables=x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("tables"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
