//! Importing a real Lackey capture (`tests/data/lackey/`, see its README):
//! the tuples match what a plain reading of the log counts.

use std::collections::HashMap;
use std::io::BufReader;

use toyvm_profiler::lackey::LackeyReader;
use toyvm_profiler::{Kind, Tuple};

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/lackey/sample.lackey"
);

/// Counts from the log itself: instruction records, loads plus modifies,
/// and transfers (an instruction not at the previous one's end).
fn count_independently(text: &str) -> (u64, u64, u64) {
    let (mut insns, mut reads, mut transfers) = (0, 0, 0);
    let mut fall_through = None;
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["I", rec] => {
                let (a, z) = rec.split_once(',').unwrap();
                let a = u64::from_str_radix(a, 16).unwrap();
                insns += 1;
                if fall_through.is_some_and(|f| f != a) {
                    transfers += 1;
                }
                fall_through = Some(a + z.parse::<u64>().unwrap());
            }
            ["L" | "M", _] => reads += 1,
            _ => {}
        }
    }
    (insns, reads, transfers)
}

#[test]
fn the_sample_imports_with_the_counts_the_log_shows() {
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    let (insns, reads, transfers) = count_independently(&text);
    let mut r = LackeyReader::new(BufReader::new(std::fs::File::open(SAMPLE).unwrap()));
    let tuples: Vec<Tuple> = r.by_ref().collect::<Result<_, _>>().unwrap();
    let n = |k| tuples.iter().filter(|t| t.kind == k).count() as u64;
    assert_eq!(r.stats().instructions, insns);
    assert_eq!(n(Kind::Value), reads);
    assert_eq!(n(Kind::Edge), transfers);
    assert!(reads > 500 && transfers > 1000, "{reads} {transfers}");

    // sample.c calls `step` 300 times from one site and `main_loop` once.
    let mut calls: HashMap<(u64, u64), u64> = HashMap::new();
    for t in tuples.iter().filter(|t| t.kind == Kind::Call) {
        *calls.entry((t.a, t.b)).or_default() += 1;
    }
    let mut counts: Vec<u64> = calls.values().copied().collect();
    counts.sort_unstable();
    assert_eq!(counts, [1, 300]);
    assert_eq!(r.stats().returns, 301, "every inferred call returned");
    // Every call is also an edge, from the same site to the same callee.
    for t in tuples.iter().filter(|t| t.kind == Kind::Call) {
        assert!(tuples.contains(&Tuple::edge(t.a, t.b)));
    }
    // The capture's code is below 4 GiB: the function field is 0 and no
    // offset has the argument bit (see TRACE-FORMAT.md).
    assert!(
        tuples
            .iter()
            .all(|t| t.a < 0x8000_0000 && (t.kind == Kind::Value || t.b < 0x8000_0000))
    );
}

#[test]
fn a_truncated_capture_fails_at_its_last_line() {
    let text = std::fs::read_to_string(SAMPLE).unwrap();
    // Cut inside the last instruction record's address.
    let cut = text.rfind("\nI  ").unwrap() + 6;
    let lines = text[..cut].lines().count();
    let e = LackeyReader::new(&text.as_bytes()[..cut])
        .find_map(Result::err)
        .expect("an error");
    assert!(
        e.to_string()
            .starts_with(&format!("lackey line {lines}: expected `address,size`")),
        "{e}"
    );
}
