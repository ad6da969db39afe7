//! Hostile inputs and outputs: failed writes, bounded reads, guest memory
//! the host cannot give, output paths checked before the run.

use super::*;

#[test]
fn failed_writes_are_one_line_and_status_2_never_an_abort() {
    use std::process::Stdio;
    let full = || std::fs::File::create("/dev/full").expect("/dev/full");
    let trace = fib_trace("full.trace");
    let run = |args: &[&str], out: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_toyvm"));
        c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
        c.args(args);
        if out {
            c.stdout(full());
        } else {
            c.stderr(full());
        }
        c.output().unwrap()
    };
    for args in [
        &["profile", "--trace", s(&trace), "--profile", "multihash"][..],
        &[
            "verify",
            "programs/fib.tasm",
            "15",
            "--profile",
            "multihash",
        ],
        &["run", "programs/fib.tasm", "10"],
        &["run", "programs/fib.tasm", "10", "--profile", "perfect"],
        &["dis", "programs/fib.tasm"],
    ] {
        let o = run(args, true);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.lines().count() == 1 && err.contains("No space left"),
            "{args:?}: {err}"
        );
    }
    // Standard error full: statistics and candidates are lost, so status 2;
    // a trap keeps its status 3.
    for args in [
        &["run", "programs/fib.tasm", "10", "--stats"][..],
        &[
            "run",
            "programs/fib.tasm",
            "10",
            "--profile",
            "perfect",
            "--stats",
        ],
        &[
            "run",
            "programs/fib.tasm",
            "10",
            "--profile",
            "perfect",
            "--candidates",
        ],
        // The JIT log and the IR dump are outputs too.
        &[
            "run",
            "programs/fib.tasm",
            "25",
            "--profile",
            "perfect:interval=1000",
            "--jit-log",
        ],
    ] {
        assert_eq!(run(args, false).status.code(), Some(2), "{args:?}");
    }
    let src = tmp("full-trap.tasm");
    std::fs::write(
        &src,
        ".func main(n)\n li r1, 0\n div n, n, r1\n ret n\n.end\n",
    )
    .unwrap();
    assert_eq!(run(&["run", s(&src), "4"], false).status.code(), Some(3));
    // A closed pipe ends quietly.
    for args in [
        &[
            "profile",
            "--trace",
            s(&trace),
            "--profile",
            "multihash,perfect",
        ][..],
        &["run", "programs/fib.tasm", "10"],
        &["run", "programs/fib.tasm", "10", "--profile", "perfect"],
        &["dis", "programs/fib.tasm"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = Command::new(env!("CARGO_BIN_EXE_toyvm"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .args(args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}

#[cfg(unix)]
#[test]
fn a_trap_does_not_hide_a_lost_trace() {
    let src = tmp("lost-trace.tasm");
    std::fs::write(
        &src,
        ".func main(n)\n li r1, 0\n div n, n, r1\n ret n\n.end\n",
    )
    .unwrap();
    let o = toyvm(&["run", s(&src), "4", "--record", "/dev/full"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("division by zero") && err.contains("the trace is lost"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn input_and_reference_reads_are_bounded() {
    let o = toyvm(&["run", "programs/bf.tasm", "--input", "/dev/zero"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("/dev/zero") && err.contains(".memory"),
        "{err}"
    );
    let o = toyvm(&[
        "verify",
        "programs/fib.tasm",
        "15",
        "--profile",
        "multihash",
        "--reference",
        "/dev/zero",
    ]);
    // Refused at its first byte (verify's reader is bounded too).
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("found byte 0x00"), "{}", stderr(&o));
    // Every other reader of a program or an input is bounded as well:
    // `synth --describe` of a program, and `compare` of a program whose
    // header names an input (it grew to 4 GB in 10 s before).
    let o = toyvm(&["synth", "--describe", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/dev/zero: larger than the 268435456 bytes allowed"),
        "{}",
        stderr(&o)
    );
    let zero_input = tmp("zero_input.tasm");
    std::fs::write(
        &zero_input,
        "# args: 1\n# input: /dev/zero\n.func main(n)\n  li r1, 0\n  ret r1\n.end\n",
    )
    .unwrap();
    let o = toyvm(&["compare", s(&zero_input), "--profile", "multihash"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("input /dev/zero: larger than the 65536 bytes allowed"),
        "{}",
        stderr(&o)
    );
    // An input that fits still runs.
    let input = tmp("small.b");
    std::fs::write(&input, "++++++++[>++++++++<-]>+.").unwrap();
    let o = toyvm(&["run", "programs/bf.tasm", "--input", s(&input)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(o.stdout, b"A");
}

#[cfg(unix)]
#[test]
fn guest_memory_the_host_cannot_give_is_an_error() {
    let src = tmp("bigmem.tasm");
    std::fs::write(
        &src,
        ".memory 134217728\n.func main()\n li r0, 0\n ret r0\n.end\n",
    )
    .unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 1000000 && exec {} run {}",
            env!("CARGO_BIN_EXE_toyvm"),
            s(&src)
        ))
        .output()
        .unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot allocate the program's memory"),
        "{err}"
    );
}

#[test]
fn output_paths_are_checked_before_the_run() {
    let bad = "/nonexistent/toyvm/out";
    for (args, what) in [
        (
            vec!["run", "programs/fib.tasm", "10", "--record", bad],
            "the trace",
        ),
        (
            vec![
                "run",
                "programs/fib.tasm",
                "10",
                "--profile",
                "perfect",
                "--dump-clif",
                "/proc/toyvm",
            ],
            "Cranelift IR",
        ),
        (
            vec![
                "verify",
                "programs/fib.tasm",
                "15",
                "--profile",
                "multihash",
                "--reference",
                bad,
            ],
            "the reference",
        ),
        (vec!["asm", "programs/fib.tasm", "-o", bad], "the bytecode"),
        (
            vec!["dis", "programs/fib.tasm", "-o", bad],
            "the disassembly",
        ),
        (vec!["compare", "fib", "--chart", bad], "the chart"),
        (vec!["compare", "fib", "-o", bad], "the report"),
    ] {
        let o = toyvm(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(&format!("cannot write {what}")),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: nothing ran");
    }
}
