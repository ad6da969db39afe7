//! `toyvm reproduce --quick`: a row with a computed verdict for every
//! figure of issues 14 and 37 (in the papers' order), an SVG for each charted one, the same report twice,
//! and clear errors for bad figures, outputs and traces.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn toyvm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toyvm"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(args)
        .output()
        .expect("run toyvm")
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toyvm-reproduce-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Every figure issues 14 and 37 list.
const IDS: [&str; 29] = [
    "000-fig4",
    "000-fig5",
    "000-fig6",
    "000-fig7",
    "000-fig9",
    "000-fig10",
    "000-fig11",
    "000-fig12",
    "000-fig13",
    "000-fig14",
    "001-fig4",
    "001-fig7",
    "001-fig7-overhead",
    "001-fig8",
    "001-fig9",
    "001-fig10",
    "001-fig11",
    "002-fig2",
    "002-table1",
    "002-table4",
    "004-fig2",
    "004-fig3",
    "004-fig4",
    "004-fig8",
    "004-fig8-values",
    "004-fig9",
    "004-fig10",
    "004-fig10-values",
    "004-2d",
];

/// The figures that are timings: their numbers, and so their verdicts,
/// move with the machine's load.
const TIMED: [&str; 2] = ["002-table1", "004-fig4"];

/// The report without what may differ between runs: the timing and
/// machine lines of the header, the timed figures' rows and sections, and
/// the count of verdicts (a timed figure's may turn).
fn body(report: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for l in report.lines() {
        if let Some(id) = l.strip_prefix("## ") {
            skipping = TIMED.contains(&id);
        }
        if skipping
            || l.starts_with("- duration:")
            || l.starts_with("- machine:")
            || TIMED.iter().any(|id| l.starts_with(&format!("| {id} |")))
            || l.contains(" figures: ") && l.ends_with(" not applicable.")
        {
            continue;
        }
        out.push(l);
    }
    out.join("\n")
}

fn run_quick(dir: &Path) -> String {
    let out = toyvm(&["reproduce", "--quick", "--out", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read_to_string(dir.join("REPORT.md")).unwrap()
}

#[test]
fn quick_run_reports_every_figure_with_a_verdict_and_repeats_itself() {
    let (a, b) = (temp("a"), temp("b"));
    let report = run_quick(&a);
    let listed = toyvm(&["reproduce", "--list"]);
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for id in IDS {
        assert!(listed.contains(id), "--list lacks {id}");
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {id} |")))
            .unwrap_or_else(|| panic!("no row for {id}:\n{report}"));
        assert!(
            ["**holds**", "**differs**: ", "**not applicable**: "]
                .iter()
                .any(|v| row.contains(v)),
            "{row}"
        );
        assert!(report.contains(&format!("## {id}")), "no section for {id}");
        let svg = a.join(format!("{id}.svg"));
        if report.contains(&format!("![{id}]({id}.svg)")) {
            let text = std::fs::read_to_string(&svg).unwrap();
            assert!(text.trim_start().starts_with("<svg"), "{}", svg.display());
        }
    }
    assert!(report.contains("- sizes: --quick"), "{report}");
    // Rows in the papers' order: by seed file, then figure number.
    let rows: Vec<&str> = report
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.strip_prefix("| ")?.split(" |").next())
        .filter(|id| IDS.contains(id))
        .collect();
    assert_eq!(rows, IDS, "{report}");
    // Fixed seeds: the same body again.
    let again = run_quick(&b);
    assert_eq!(body(&report), body(&again));
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn figures_are_chosen_by_id_or_prefix_and_unknown_ones_are_errors() {
    let dir = temp("pick");
    let out = toyvm(&[
        "reproduce",
        "--quick",
        "--out",
        dir.to_str().unwrap(),
        "000-fig9",
        "002",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("| 000-fig9 |") && table.contains("| 002-table4 |"),
        "{table}"
    );
    assert!(!table.contains("| 000-fig7 |"), "{table}");
    let out = toyvm(&[
        "reproduce",
        "--quick",
        "--out",
        dir.to_str().unwrap(),
        "999-fig1",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no figure `999-fig1`") && err.contains("000-fig12"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_outputs_and_traces_are_clear_errors() {
    let dir = temp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    // --out under a file cannot be created.
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let under = file.join("out");
    let out = toyvm(&[
        "reproduce",
        "--quick",
        "--out",
        under.to_str().unwrap(),
        "000-fig9",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("a-file"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A trace that is not there, and one that is garbage.
    let o = dir.join("o");
    let out = toyvm(&[
        "reproduce",
        "--quick",
        "--out",
        o.to_str().unwrap(),
        "--trace",
        "/no/such.trace",
        "000-fig9",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("/no/such.trace"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let junk = dir.join("junk.trace");
    std::fs::write(&junk, b"\x00\x01garbage\nnot a tuple\n").unwrap();
    let out = toyvm(&[
        "reproduce",
        "--quick",
        "--out",
        o.to_str().unwrap(),
        "--trace",
        junk.to_str().unwrap(),
        "000-fig9",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
