//! Hostile inputs and outputs: failed writes, bounded reads, guest memory
//! the host cannot give, output paths checked before the run.

use super::*;

/// A command run with its standard output (or, for `OUT` in its
/// arguments, its output file) made to fail.
fn broken(args: &[&str], sink: Sink) -> Output {
    use std::process::Stdio;
    let mut c = Command::new(env!("CARGO_BIN_EXE_toyvm"));
    c.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    c.stderr(Stdio::piped());
    match sink {
        Sink::Full => {
            c.args(
                args.iter()
                    .map(|a| if *a == "OUT" { "/dev/full" } else { a }),
            );
            if !args.contains(&"OUT") {
                c.stdout(std::fs::File::create("/dev/full").expect("/dev/full"));
            }
        }
        Sink::Closed => {
            // A pipe whose reader is gone before the command starts.
            let (reader, writer) = std::io::pipe().unwrap();
            drop(reader);
            c.args(args.iter().map(|a| if *a == "OUT" { "-" } else { a }));
            c.stdout(writer);
        }
    }
    c.output().unwrap()
}

#[derive(Clone, Copy, Debug)]
enum Sink {
    /// `/dev/full`: every write fails with "No space left on device".
    Full,
    /// A pipe whose reader closed (`| head` after its line).
    Closed,
}

/// Issue 34 item 1: every command that writes, into a full disk and into a
/// closed pipe, exits 3 with its one-line error; never 0, 101, 134 or by a
/// signal.
#[cfg(unix)]
#[test]
fn closed_pipes_and_full_disks_are_status_3_for_every_command_that_writes() {
    let trace = fib_trace("broken.trace");
    let lackey = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../profiler/tests/data/lackey/sample.lackey"
    );
    let repro = tmp("broken-reproduce");
    let printer = tmp("printer.tasm");
    std::fs::write(
        &printer,
        ".func main(n)\n .reg c, i\n li c, 65\n li i, 1\ntop:\n putc c\n loop i, n, top\n ret i\n.end\n",
    )
    .unwrap();
    // (arguments, which sinks apply): `OUT` is an output file (`-` is
    // standard output for the commands that take it).
    let table: Vec<(Vec<&str>, &[Sink])> = vec![
        (
            vec!["run", s(&printer), "100000"],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec!["run", s(&printer), "100000", "--profile", "perfect"],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec!["run", "programs/fib.tasm", "10", "--stats", "--json"],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec!["run", "programs/fib.tasm", "10", "--record", "OUT"],
            &[Sink::Full],
        ),
        (
            vec![
                "run",
                "programs/fib.tasm",
                "10",
                "--stats",
                "--stats-file",
                "OUT",
            ],
            &[Sink::Full],
        ),
        (
            vec!["dis", "programs/fib.tasm"],
            &[Sink::Full, Sink::Closed],
        ),
        (vec!["dis", "programs/fib.tasm", "-o", "OUT"], &[Sink::Full]),
        (vec!["asm", "programs/fib.tasm", "-o", "OUT"], &[Sink::Full]),
        (
            vec![
                "profile",
                "--trace",
                s(&trace),
                "--profile",
                "multihash,perfect",
            ],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec![
                "profile",
                "--trace",
                s(&trace),
                "--profile",
                "perfect",
                "--json",
            ],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec![
                "verify",
                "programs/fib.tasm",
                "15",
                "--profile",
                "multihash",
            ],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec!["synth", "--functions", "64"],
            &[Sink::Full, Sink::Closed],
        ),
        (vec!["synth", "-o", "OUT"], &[Sink::Full]),
        (
            vec!["synth", "--describe", "programs/fib.tasm", "--json"],
            &[Sink::Full, Sink::Closed],
        ),
        (vec!["reproduce", "--list"], &[Sink::Full, Sink::Closed]),
        (
            vec!["reproduce", "--quick", "000-fig9", "--out", s(&repro)],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec!["compare", "fib", "--profile", "perfect"],
            &[Sink::Full, Sink::Closed],
        ),
        (
            vec!["compare", "fib", "--profile", "perfect", "-o", "OUT"],
            &[Sink::Full],
        ),
        (
            vec!["trace", "import", "--from", "lackey", lackey, "-o", "OUT"],
            &[Sink::Full, Sink::Closed],
        ),
        (vec!["--help"], &[Sink::Full, Sink::Closed]),
        (vec!["run", "--help"], &[Sink::Full, Sink::Closed]),
    ];
    for (args, sinks) in &table {
        for &sink in *sinks {
            let o = broken(args, sink);
            let err = stderr(&o);
            assert_eq!(o.status.code(), Some(3), "{args:?} {sink:?}: {err}");
            // The error is the last line (progress may come before it).
            let last = err.lines().last().unwrap_or("");
            assert!(last.starts_with("toyvm: "), "{args:?} {sink:?}: {err}");
            let why = match sink {
                Sink::Full => "No space left",
                Sink::Closed => "pipe",
            };
            assert!(last.contains(why), "{args:?} {sink:?}: {err}");
            assert!(!err.contains("panicked"), "{args:?} {sink:?}: {err}");
        }
    }
    let _ = std::fs::remove_dir_all(&repro);
}

/// Issue 34 item 1: a verdict or a trap is never masked by where the
/// output went.
#[cfg(unix)]
#[test]
fn a_closed_pipe_never_hides_a_verdict_or_a_trap() {
    let fail = [
        "verify",
        "programs/hashtable.tasm",
        "2000",
        "--profile",
        "multihash:tables=1,entries=16,reset=on,interval=1000",
    ];
    assert_eq!(toyvm(&fail).status.code(), Some(1), "a FAIL verdict");
    for sink in [Sink::Closed, Sink::Full] {
        let o = broken(&fail, sink);
        assert_eq!(o.status.code(), Some(1), "{sink:?}: {}", stderr(&o));
    }
    // A program that prints 100,000 bytes and then divides by zero.
    let src = tmp("printtrap.tasm");
    std::fs::write(
        &src,
        ".func main()\n .reg c, i, n, z\n li c, 65\n li i, 1\n li n, 100000\ntop:\n putc c\n loop i, n, top\n li z, 0\n div c, c, z\n ret c\n.end\n",
    )
    .unwrap();
    assert_eq!(toyvm(&["run", s(&src)]).status.code(), Some(4));
    // Its output cannot be written: the run stops there, and says so.
    let o = broken(&["run", s(&src)], Sink::Closed);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("writing program output"),
        "{}",
        stderr(&o)
    );
    // Standard error full: the statistics and candidates asked for are
    // lost (3); a trap keeps its status.
    let full_stderr = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toyvm"))
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
            .args(args)
            .stderr(std::fs::File::create("/dev/full").unwrap())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap()
            .code()
    };
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
        &[
            "run",
            "programs/fib.tasm",
            "25",
            "--profile",
            "perfect:interval=1000",
            "--jit-log",
        ],
    ] {
        assert_eq!(full_stderr(args), Some(3), "{args:?}");
    }
    assert_eq!(full_stderr(&["run", s(&src)]), Some(4));
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
    // The trap is the run's status; the lost trace is said beside it.
    assert_eq!(o.status.code(), Some(4), "{err}");
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
    assert_eq!(o.status.code(), Some(3), "{err}");
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
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("found byte 0x00"), "{}", stderr(&o));
    // Every other reader of a program or an input is bounded as well:
    // `synth --describe` of a program, and `compare` of a program whose
    // header names an input (it grew to 4 GB in 10 s before).
    let o = toyvm(&["synth", "--describe", "/dev/zero"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
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
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
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
    // A resource the system refused: status 5.
    assert_eq!(o.status.code(), Some(5), "{err}");
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
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        assert!(
            err.contains(&format!("cannot write {what}")),
            "{args:?}: {err}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: nothing ran");
    }
}
