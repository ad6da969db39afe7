//! Issue 34 (reliability, round two) and the exit statuses of issue 35:
//! one documented status per class, memory bounded by what a command
//! keeps, limits named right, imports treated one way, names that round
//! trip, outputs checked before the work.

use super::*;

fn code(o: &Output) -> Option<i32> {
    o.status.code()
}

/// A program file of `text` in the test's folder.
fn program(name: &str, text: &str) -> std::path::PathBuf {
    let p = tmp(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Each class has its status, as `toyvm --help` and the README list them.
#[test]
fn each_class_of_outcome_has_its_own_exit_status() {
    let help = toyvm(&["--help"]);
    assert_eq!(code(&help), Some(0));
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("Exit statuses:"), "{text}");
    let readme = std::fs::read_to_string(common::root().join("README.md")).unwrap();
    assert!(readme.contains("## Exit statuses"));
    for n in 0..=5 {
        assert!(text.contains(&format!("\n  {n}  ")), "{n}: {text}");
        assert!(readme.contains(&format!("| {n} |")), "README's row for {n}");
    }
    let div = program(
        "class-trap.tasm",
        ".func main(n)\n li r1, 0\n div n, n, r1\n ret n\n.end\n",
    );
    let ret3 = program(
        "class-ret3.tasm",
        ".func main()\n li r0, 3\n ret r0\n.end\n",
    );
    // 0: the program returned, whatever its value; --exit-code gives it.
    assert_eq!(code(&toyvm(&["run", s(&ret3)])), Some(0));
    assert_eq!(code(&toyvm(&["run", s(&ret3), "--exit-code"])), Some(3));
    // 1: a verdict failed.
    let fail = toyvm(&[
        "verify",
        "programs/hashtable.tasm",
        "2000",
        "--profile",
        "multihash:tables=1,entries=16,reset=on,interval=1000",
    ]);
    assert_eq!(code(&fail), Some(1), "{}", stderr(&fail));
    // 2: usage.
    for args in [
        &["run", s(&ret3), "--no-such-flag"][..],
        &["run", s(&ret3), "--profile", "nosuchmodel"],
        &["run", s(&ret3), "--candidates"],
        &["run", s(&div)],
        &["reproduce", "no-such-figure"],
    ] {
        let o = toyvm(args);
        assert_eq!(code(&o), Some(2), "{args:?}: {}", stderr(&o));
    }
    // 3: input and output.
    let garbage = program("class-garbage.tasm", ".func main(\n");
    for args in [
        &["run", "/no/such/file.tasm"][..],
        &["run", s(&garbage)],
        &["dis", s(&garbage)],
        &["asm", s(&ret3), "-o", "/no/such/dir/x.bc"],
        &["profile", "--trace", s(&garbage), "--profile", "perfect"],
    ] {
        let o = toyvm(args);
        assert_eq!(code(&o), Some(3), "{args:?}: {}", stderr(&o));
    }
    // 4: a trap, whichever command ran the program.
    assert_eq!(code(&toyvm(&["run", s(&div), "4"])), Some(4));
    assert_eq!(
        code(&toyvm(&["run", s(&div), "4", "--profile", "perfect"])),
        Some(4)
    );
    let o = toyvm(&["synth", "--describe", s(&div), "4"]);
    assert_eq!(code(&o), Some(4), "{}", stderr(&o));
    // 5 (a resource the system refused) is
    // `hostile::guest_memory_the_host_cannot_give_is_an_error`.
}

/// Item 2: `synth --describe` and `compare` keep a digest of what a
/// program prints and a bounded prefix, never the whole output.
#[test]
fn outputs_are_digested_as_they_stream() {
    let p = program(
        "prints.tasm",
        "# args: 100000\n.func main(n)\n .reg c, i\n li c, 65\n li i, 1\ntop:\n putc c\n loop i, n, top\n ret i\n.end\n",
    );
    let o = toyvm(&["synth", "--describe", s(&p), "--json"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["format"], 1);
    assert_eq!(v["output_bytes"], 100_000);
    assert_eq!(
        v["output_fnv1a64"],
        format!("{:016x}", toyvm_lab::suite::fnv1a64(&[b'A'; 100_000]))
    );
    let kept = v["output"].as_str().unwrap().len();
    assert_eq!(kept, toyvm_lab::suite::OUTPUT_PREFIX_BYTES);
    let text = toyvm(&["synth", "--describe", s(&p)]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("(100000 bytes in all, FNV-1a 64 "), "{text}");
    // The comparison's runs are compared by digest: same output, no
    // mismatch, and the report says how much was printed.
    let o = toyvm(&["compare", s(&p), "--profile", "perfect", "--format", "json"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["format"], 1);
    assert_eq!(r["failures"], 0, "{r}");
}

/// Item 2: knobs whose program `run` would refuse are refused before any
/// of it is made.
#[test]
fn synth_refuses_programs_run_would_refuse() {
    for blocks in ["384", "300"] {
        let o = toyvm(&["synth", "--functions", "4096", "--blocks", blocks]);
        let err = stderr(&o);
        assert_eq!(code(&o), Some(2), "{err}");
        assert!(
            err.contains("over the 268435456 bytes `toyvm run` reads"),
            "{err}"
        );
        assert!(o.stdout.is_empty(), "nothing written");
    }
    // Within the limit, what synth writes runs.
    let file = tmp("synth-small.tasm");
    let o = toyvm(&["synth", "--functions", "8", "-o", s(&file)]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
    let o = toyvm(&["run", s(&file), "1000"]);
    assert_eq!(code(&o), Some(0), "{}", stderr(&o));
}

/// Item 2: the assembler quotes at most 4,096 bytes of its input, escaped.
#[test]
fn assembler_errors_are_capped_and_escaped() {
    let nul = tmp("nul.tasm");
    std::fs::write(&nul, vec![0u8; 1 << 20]).unwrap();
    for args in [
        &["asm", s(&nul), "-o", s(&tmp("nul.bc"))][..],
        &["run", s(&nul)],
    ] {
        let o = toyvm(args);
        assert_eq!(code(&o), Some(3), "{args:?}");
        assert!(o.stderr.len() < 4096 + 200, "{} bytes", o.stderr.len());
        assert!(!o.stderr.contains(&0), "no raw NUL");
        let err = stderr(&o);
        assert!(
            err.contains("\\0\\0") && err.contains("bytes in all"),
            "{err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// Item 3: what ran out is named, with the right number.
#[test]
fn stack_limits_are_named_right() {
    let rec = |regs: u32| {
        program(
            &format!("deep{regs}.tasm"),
            &format!(
                ".func rec(n)\n .regs {regs}\n beqi n, 0, done\n subi r1, n, 1\n call r1, rec, r1, 1\n ret r1\ndone:\n ret n\n.end\n.func main(n)\n call r1, rec, n, 1\n ret r1\n.end\n"
            ),
        )
    };
    let deep200 = rec(200);
    let o = toyvm(&["run", s(&deep200), "84000", "--max-depth", "4194304"]);
    let err = stderr(&o);
    assert_eq!(code(&o), Some(4), "{err}");
    assert!(
        err.contains("the register stack (16777216 words) is full at call depth"),
        "{err}"
    );
    assert!(!err.contains("exceeded"), "{err}");
    // 256 registers: the register stack gives out at the 65,536th call,
    // which the default depth limit (65,536) allows.
    let deep256 = rec(256);
    let err = stderr(&toyvm(&["run", s(&deep256), "70000"]));
    assert!(err.ends_with("is full at call depth 65536\n"), "{err}");
    // The depth limit, when it is what stops the run, is the one given.
    let err = stderr(&toyvm(&["run", s(&deep200), "2000", "--max-depth", "1000"]));
    assert!(err.contains("call depth 1000 exceeded"), "{err}");
}

/// Item 3: a JIT run whose native recursion would want more stack than
/// the system gives runs on what it can have (natives that need more are
/// left to the interpreter), never refused where the interpreter runs.
#[cfg(unix)]
#[test]
fn the_jit_thread_takes_the_stack_it_can_have() {
    let r256 = program(
        "r256.tasm",
        ".func rec(n)\n .regs 256\n beqi n, 0, done\n subi r1, n, 1\n call r1, rec, r1, 1\n ret r1\ndone:\n ret n\n.end\n.func main(n)\n call r1, rec, n, 1\n putn r1\n ret r1\n.end\n",
    );
    let limited = |extra: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v 4000000 && exec {} run {} 1 --max-depth 1000000 {extra}",
                env!("CARGO_BIN_EXE_toyvm"),
                s(&r256)
            ))
            .output()
            .unwrap()
    };
    let interpreted = limited("--profile perfect --no-jit");
    assert_eq!(code(&interpreted), Some(0), "{}", stderr(&interpreted));
    let jit = limited("--profile perfect");
    assert_eq!(code(&jit), Some(0), "{}", stderr(&jit));
    assert_eq!(jit.stdout, interpreted.stdout);
}

/// Item 4: every command links a program before it runs it.
#[test]
fn every_command_links_before_it_runs() {
    let imp = program(
        "imp.tasm",
        ".import foo 1\n.func main()\n li r0, 1\n jz r0, never\n ret r0\nnever:\n hcall r1, foo, r0, 1\n ret r1\n.end\n",
    );
    for args in [
        &["run", s(&imp)][..],
        &["run", s(&imp), "--profile", "perfect"],
        &["verify", s(&imp), "--profile", "multihash"],
        &["synth", "--describe", s(&imp)],
        &["compare", s(&imp), "--profile", "perfect"],
    ] {
        let o = toyvm(args);
        let err = stderr(&o);
        assert_eq!(code(&o), Some(3), "{args:?}: {err}");
        assert!(
            err.contains("imports host function `foo`"),
            "{args:?}: {err}"
        );
    }
    // Assembling and disassembling do not run it: they take it.
    assert_eq!(code(&toyvm(&["dis", s(&imp)])), Some(0));
}

/// Item 5: the loader takes only the names the assembler reads, so every
/// loaded program disassembles into text that assembles back.
#[test]
fn names_follow_one_rule_in_loader_and_assembler() {
    let src = program(
        "named.tasm",
        ".entry fab\n.func fab()\n li r0, 0\n ret r0\n.end\n",
    );
    let bc = tmp("named.bc");
    assert_eq!(code(&toyvm(&["asm", s(&src), "-o", s(&bc)])), Some(0));
    let bytes = std::fs::read(&bc).unwrap();
    let at = bytes.windows(3).position(|w| w == b"fab").unwrap();
    for bad in [&b"f b"[..], b"f#b", b"f,b", b"f\nb", b"2fb"] {
        let mut b = bytes.clone();
        b[at..at + 3].copy_from_slice(bad);
        let path = tmp("badname.bc");
        std::fs::write(&path, &b).unwrap();
        for cmd in ["run", "dis"] {
            let o = toyvm(&[cmd, s(&path)]);
            let err = stderr(&o);
            assert_eq!(code(&o), Some(3), "{bad:?} {cmd}: {err}");
            assert!(err.contains("not a name the assembler reads"), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}

/// Item 5: outputs are checked before the work; the smaller items.
#[test]
fn outputs_are_checked_before_the_work_and_the_smaller_items_hold() {
    // REPORT.md a directory: refused before any figure runs.
    let dir = tmp("repro-report-dir");
    std::fs::create_dir_all(dir.join("REPORT.md")).unwrap();
    let o = toyvm(&["reproduce", "--quick", "000-fig9", "--out", s(&dir)]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("REPORT.md: it is a directory"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("reproduce: 000-fig9"), "nothing ran");
    assert!(!dir.join("000-fig9.svg").exists());
    // A file where a directory goes: "not a directory".
    let file = tmp("a-file");
    std::fs::write(&file, "x").unwrap();
    for args in [
        &["reproduce", "--quick", "000-fig9", "--out", s(&file)][..],
        &[
            "run",
            "programs/fib.tasm",
            "5",
            "--profile",
            "perfect",
            "--dump-clif",
            s(&file),
        ],
    ] {
        let o = toyvm(args);
        assert_eq!(code(&o), Some(3), "{args:?}");
        assert!(stderr(&o).contains("is not a directory"), "{}", stderr(&o));
    }
    // synth -o into a directory: refused before generating.
    let o = toyvm(&["synth", "-o", s(&dir)]);
    assert_eq!(code(&o), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("it is a directory"), "{}", stderr(&o));
    // --interval 0 is the flag's fault, said as such.
    let o = toyvm(&[
        "synth",
        "--describe",
        "programs/fib.tasm",
        "--interval",
        "0",
    ]);
    assert_eq!(code(&o), Some(2));
    assert_eq!(stderr(&o), "toyvm: --interval must be at least 1 tuple\n");
    // Generation flags are refused with --describe.
    let o = toyvm(&["synth", "--describe", "programs/fib.tasm", "--hot", "3"]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    // A too-small `.regs` is reported on its own line.
    let regs = program(
        "regs.tasm",
        ".func main()\n .regs 1\n li r3, 1\n ret r3\n.end\n",
    );
    let err = stderr(&toyvm(&["run", s(&regs)]));
    assert!(err.contains("line 2: `.regs 1` is too few"), "{err}");
    // An empty figure name is not "every figure".
    let o = toyvm(&["reproduce", ""]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    // --interval-models needs --interval-chart.
    let o = toyvm(&["compare", "fib", "--interval-models", "perfect,multihash"]);
    assert_eq!(code(&o), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--interval-chart"), "{}", stderr(&o));
    // The echoed spec is the model that runs: entries a multiple of tables.
    let spec = toyvm_profiler::parse_spec("multihash:tables=3,entries=1000").unwrap();
    assert!(spec.to_string().contains("entries=999"), "{spec}");
}
