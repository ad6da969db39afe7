//! `toyvm trace import --from lackey`, end to end: the captured sample
//! (`profiler/tests/data/lackey/`) becomes a trace `toyvm profile` reads, and
//! hostile input is a one-line error with its line number.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../profiler/tests/data/lackey/sample.lackey"
);

fn toyvm(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("toyvm runs");
    let mut pipe = child.stdin.take().unwrap();
    // toyvm may stop reading early (an error, a line too long): the pipe
    // then closes, which is what those cases test.
    let _ = pipe.write_all(stdin.unwrap_or_default());
    drop(pipe);
    child.wait_with_output().unwrap()
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("toyvm-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Tuples per kind letter in a text trace.
fn kinds(trace: &str) -> [usize; 3] {
    let mut n = [0; 3];
    for l in trace.lines() {
        match l.as_bytes().first() {
            Some(b'V') => n[0] += 1,
            Some(b'E') => n[1] += 1,
            Some(b'C') => n[2] += 1,
            _ => {}
        }
    }
    n
}

#[test]
fn the_sample_imports_in_both_formats_and_profiles() {
    let log = std::fs::read_to_string(SAMPLE).unwrap();
    // Counted here from the log: loads and modifies, and transfers.
    let reads = log
        .lines()
        .filter(|l| l.starts_with(" L ") || l.starts_with(" M "))
        .count();
    let mut transfers = 0;
    let mut next = None;
    for l in log.lines().filter_map(|l| l.strip_prefix("I  ")) {
        let (a, z) = l.split_once(',').unwrap();
        let a = u64::from_str_radix(a, 16).unwrap();
        transfers += usize::from(next.is_some_and(|n| n != a));
        next = Some(a + z.parse::<u64>().unwrap());
    }

    let txt = tmp("sample.trace");
    let o = toyvm(
        &["trace", "import", "--from", "lackey", SAMPLE, "-o", s(&txt)],
        None,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let trace = std::fs::read_to_string(&txt).unwrap();
    let [v, e, c] = kinds(&trace);
    assert_eq!((v, e), (reads, transfers));
    assert_eq!(c, 301, "300 calls to step, 1 to main_loop");
    assert!(
        text(&o.stderr).contains(&format!("{v} value, {e} edge, {c} call tuples")),
        "{}",
        text(&o.stderr)
    );

    // Standard input, binary output: the same tuples.
    let bin = tmp("sample.bin");
    let o = toyvm(
        &[
            "trace",
            "import",
            "--from",
            "lackey",
            "-",
            "-o",
            s(&bin),
            "--format",
            "binary",
        ],
        Some(log.as_bytes()),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stderr).starts_with("standard input -> "));
    let a = toyvm_profiler::trace::read_all(trace.as_bytes()).unwrap();
    let b = toyvm_profiler::trace::read_all(&std::fs::read(&bin).unwrap()).unwrap();
    assert_eq!(a, b);

    // To standard output.
    let o = toyvm(
        &["trace", "import", "--from", "lackey", SAMPLE, "-o", "-"],
        None,
    );
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), trace);

    // `toyvm profile` reads it; the call site of the 300 calls is the
    // hottest call tuple.
    let o = toyvm(
        &[
            "profile",
            "--trace",
            s(&bin),
            "--profile",
            "multihash:interval=500",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let report = text(&o.stdout);
    assert!(report.contains("intervals      5"), "{report}");
    let site = a
        .iter()
        .find(|t| {
            t.kind == toyvm_profiler::Kind::Call && a.iter().filter(|u| *u == *t).count() == 300
        })
        .expect("a call tuple seen 300 times");
    assert!(
        report.contains(&format!("C {:#x} {}", site.a, site.b)),
        "{report}"
    );
}

#[test]
fn hostile_input_is_an_error_with_its_line_and_leaves_no_trace() {
    let out = tmp("hostile.trace");
    let mut long = b"I  10,1\n".to_vec();
    long.extend(std::iter::repeat_n(b'0', 1 << 20));
    for (input, needle) in [
        (&b"garbage\n"[..], "lackey line 1: unknown record `garbage`"),
        (
            b"==1== hi\nI  00401000,3\n L 0040",
            "lackey line 3: expected `address,size`",
        ),
        (
            b"I  123456789abcdef01,4\n",
            "lackey line 1: address `123456789abcdef01` is not a hexadecimal number of at most 64 bits",
        ),
        (
            b"I  10,99999999999999999999\n",
            "lackey line 1: size `99999999999999999999`",
        ),
        (
            b"I  fffffffffffffffe,8\n",
            "ends past the 64-bit address space",
        ),
        (b"I  10,1\n\xff\xfe\n", "lackey line 2: not ASCII"),
        (&long, "lackey line 2: line longer than 4096 bytes"),
    ] {
        std::fs::write(&out, b"old").unwrap();
        let o = toyvm(
            &["trace", "import", "--from", "lackey", "-", "-o", s(&out)],
            Some(input),
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(err.starts_with("toyvm: standard input: "), "{err}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert_eq!(
            std::fs::read(&out).unwrap(),
            b"old",
            "a failed import leaves the file it would have replaced as it was"
        );
        let dir = out.parent().unwrap();
        let stray: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok())
            // (This test's own: the other test imports in the same folder.)
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".hostile.trace.toyvm-")
            })
            .collect();
        assert!(stray.is_empty(), "no temporary file is left: {stray:?}");
    }
    // A device is written, never replaced or removed: the failed write to
    // /dev/full used to remove the trace it had begun, which as root
    // deleted the device.
    #[cfg(unix)]
    if std::path::Path::new("/dev/full").exists() {
        use std::os::unix::fs::FileTypeExt;
        let o = toyvm(
            &[
                "trace",
                "import",
                "--from",
                "lackey",
                SAMPLE,
                "-o",
                "/dev/full",
            ],
            None,
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{err}");
        assert!(err.contains("No space left"), "{err}");
        let m = std::fs::symlink_metadata("/dev/full").unwrap();
        assert!(
            m.file_type().is_char_device(),
            "/dev/full is still a device"
        );
    }
    let o = toyvm(
        &[
            "trace",
            "import",
            "--from",
            "lackey",
            "/nonexistent/x",
            "-o",
            s(&out),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(3));
    assert!(text(&o.stderr).contains("/nonexistent/x"));
    let o = toyvm(
        &["trace", "import", "--from", "perf", SAMPLE, "-o", s(&out)],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("lackey"), "{}", text(&o.stderr));
}
