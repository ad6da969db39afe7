//! Paper 004's Fig 10: the error of RAP's estimate of each hot range's
//! count against the exact count, at eps = 10% and 1%: the left panel over
//! 32-bit code keys as the paper's (R = 2^32), on the edge streams and on a
//! phased one (`004-fig10`); the right panel over 32-bit load values, on
//! the value streams and a phased one (`004-fig10-values`).
//!
//! A range's estimate falls short of its true count by the events that
//! reached the tree before the range had a node of its own (they were
//! counted higher up). On a stream whose hot code is hot from the first
//! events that run-up is a few events per range and the error rounds to
//! 0.00%; a phased stream, whose hot code moves, has ranges that become
//! hot after their code already ran: that is where the paper's error comes
//! from, so the verdict takes the phased stream's figures with the others.

use std::fmt::Write as _;

use toyvm_profiler::Tuple;
use toyvm_profiler::rap::RapTree;

use super::rapkeys::{FIRST_MERGE, VALUE_BITS, code_key, code_keys, load_values, value_key};
use super::streams::Ctx;
use super::{Outcome, Verdict};

/// A phased edge stream of `len` branches: `phases` phases of equal
/// length, each a program-like walk (`toyvm_profiler::synth::program_edges`,
/// 16 functions of 32 blocks) over functions of its own, so the hot code
/// moves at each phase.
pub fn phased_edges(len: usize, phases: u32, seed: u64) -> Vec<Tuple> {
    let per = len.div_ceil(phases.max(1) as usize);
    let mut out = Vec::with_capacity(len);
    for p in 0..phases.max(1) {
        let part = toyvm_profiler::synth::program_edges(per, 16, 32, seed + u64::from(p));
        let moved = |pc: u64| {
            let pc = toyvm_vm::Pc(pc);
            Tuple::pc(pc.func() + 16 * p, pc.offset())
        };
        out.extend(
            part.into_iter()
                .map(|t| Tuple::edge(moved(t.a), moved(t.b))),
        );
    }
    out.truncate(len);
    out
}

/// Hot-range error of one tree: ranges, mean and max percent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HotError {
    pub ranges: usize,
    pub mean: f64,
    pub max: f64,
}

/// RAP (b = 4, q = 2, first merge at 1,024 events) over 32-bit `keys` at
/// `eps`: each hot range's (`hot` of the events) estimate, all its nodes
/// summed, against the exact count of the keys inside it. With `every` >
/// 1 the tree takes only every `every`-th key (a model that drops events,
/// for the tests); the truth stays that of the whole stream.
pub fn hot_range_error(keys: &[u32], eps: f64, hot: f64, every: usize) -> HotError {
    hot_range_error_of(keys, code_key, 32, eps, hot, every)
}

/// [`hot_range_error`] over any keys: `key` makes a key's tree key (its
/// bits at the top, order kept: the truth is read off the sorted keys),
/// and the tree ranges over the tree keys' top `bits` bits.
pub fn hot_range_error_of<T: Copy + Ord>(
    keys: &[T],
    key: impl Fn(T) -> u128,
    bits: u32,
    eps: f64,
    hot: f64,
    every: usize,
) -> HotError {
    let mut t = RapTree::with_key_bits(4, eps, 2, FIRST_MERGE, bits);
    for &k in keys.iter().step_by(every.max(1)) {
        t.add(key(k), 1);
    }
    // The exact counts: the keys sorted, one entry per distinct key.
    let mut order = keys.to_vec();
    order.sort_unstable();
    let mut sorted: Vec<(u128, u64)> = Vec::new();
    for k in order {
        let k = key(k);
        match sorted.last_mut() {
            Some((last, n)) if *last == k => *n += 1,
            _ => sorted.push((k, 1)),
        }
    }
    let mut cumulative = Vec::with_capacity(sorted.len() + 1);
    cumulative.push(0u64);
    for &(_, n) in &sorted {
        cumulative.push(cumulative.last().copied().unwrap_or(0) + n);
    }
    let truth = |lo: u128, hi: u128| {
        let a = sorted.partition_point(|&(k, _)| k < lo);
        let b = sorted.partition_point(|&(k, _)| k <= hi);
        cumulative[b] - cumulative[a]
    };
    let mut e = HotError::default();
    let mut sum = 0.0;
    for v in t.nodes_with_hotness(hot).into_iter().filter(|v| v.hot) {
        let low = u128::MAX.checked_shr(v.bits).unwrap_or(0);
        let lo = v.prefix.checked_shl(128 - v.bits).unwrap_or(0);
        let n = truth(lo, lo | low);
        if n == 0 {
            continue;
        }
        let pct = 100.0 * n.abs_diff(v.subtree) as f64 / n as f64;
        e.ranges += 1;
        sum += pct;
        e.max = e.max.max(pct);
    }
    if e.ranges > 0 {
        e.mean = sum / e.ranges as f64;
    }
    e
}

/// The verdict: at eps = 10% the mean error over every stream's hot
/// ranges is within the paper's "about 2%" (3.5% allowed), and at eps = 1%
/// no higher than at 10%.
pub fn verdict(at10: &[HotError], at1: &[HotError]) -> Verdict {
    match (mean_of(at10), mean_of(at1)) {
        (Some(m10), Some(m1)) => Verdict::check(m10 <= 3.5 && m1 <= m10, || {
            let mut w = Vec::new();
            if m10 > 3.5 {
                w.push(format!("mean error {m10:.2}% at eps = 10%"));
            }
            if m1 > m10 {
                w.push(format!(
                    "eps = 1% gives more error ({m1:.2}%) than 10% ({m10:.2}%)"
                ));
            }
            w.join("; ")
        }),
        _ => Verdict::NotApplicable("no stream had a hot range".into()),
    }
}

pub fn fig10(ctx: &Ctx) -> crate::Result<Outcome> {
    let n = ctx.sizes.long_len();
    let mut names: Vec<String> = ctx.edges.iter().map(|s| s.name.clone()).collect();
    names.push("phased-edges (4 phases)".into());
    let mut detail = String::from(
        "| stream | eps | hot ranges | mean error | max error |\n|---|---|---|---|---|\n",
    );
    let (mut at10, mut at1) = (Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        // One stream's keys at a time (20M keys are 80 MB), the stream
        // dropped once its keys are taken.
        let keys = match ctx.edges.get(i) {
            Some(s) => code_keys(&s.load(n)?.tuples),
            None => code_keys(&phased_edges(n, 4, 21)),
        };
        for (eps, out) in [(0.10, &mut at10), (0.01, &mut at1)] {
            let e = hot_range_error(&keys, eps, 0.10, 1);
            error_row(&mut detail, name, eps, &e);
            out.push(e);
        }
    }
    let _ = writeln!(
        detail,
        "\n32-bit code keys (each branch pc as a 16-bit function and 16-bit offset), b = 4, q = 2, first merge at 1,024 events; hot = 10% of the events; a range's estimate is the sum of its nodes' counts, its truth the exact count of the keys inside it. The value panel of the paper's Fig 10 is `004-fig10-values`."
    );
    let cell = |v: &[HotError]| error_cells(v, &names);
    Ok(Outcome {
        ours: format!(
            "mean hot-range error over 32-bit code keys at eps = 10%: {}; at eps = 1%: {}",
            cell(&at10),
            cell(&at1)
        ),
        verdict: verdict(&at10, &at1),
        detail,
        chart: None,
    })
}

/// The value panel's verdict (004 5.3: "a negligible percentage error with
/// eps = 1%; and with eps = 10%, an average of just 3.4%"): the mean error
/// over every value stream's hot ranges at most 5% at eps = 10%, and at
/// eps = 1% at most 1% and no higher than at 10%.
pub fn values_verdict(at10: &[HotError], at1: &[HotError]) -> Verdict {
    match (mean_of(at10), mean_of(at1)) {
        (Some(m10), Some(m1)) => Verdict::check(m10 <= 5.0 && m1 <= 1.0 && m1 <= m10, || {
            let mut w = Vec::new();
            if m10 > 5.0 {
                w.push(format!("mean error {m10:.2}% at eps = 10%"));
            }
            if m1 > 1.0 || m1 > m10 {
                w.push(format!(
                    "mean error {m1:.2}% at eps = 1% (against {m10:.2}% at 10%)"
                ));
            }
            w.join("; ")
        }),
        _ => Verdict::NotApplicable("no value stream had a hot range".into()),
    }
}

/// The mean of the streams' mean errors, over streams with a hot range.
fn mean_of(v: &[HotError]) -> Option<f64> {
    let (s, k) = v
        .iter()
        .filter(|e| e.ranges > 0)
        .fold((0.0, 0), |(s, k), e| (s + e.mean, k + 1));
    (k > 0).then(|| s / f64::from(k))
}

/// Fig 10's right panel: hot ranges of load values (32-bit words) at eps =
/// 10% and 1%, on the value streams and a phased one.
pub fn fig10_values(ctx: &Ctx) -> crate::Result<Outcome> {
    let n = ctx.sizes.long_len();
    let mut names: Vec<String> = ctx.values.iter().map(|s| s.name.clone()).collect();
    names.push("phased-values (phases of 1.5 long intervals)".into());
    let mut detail = String::from(
        "| stream | eps | hot ranges | mean error | max error |\n|---|---|---|---|---|\n",
    );
    let (mut at10, mut at1) = (Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        // One stream's values at a time, its tuples dropped once they are taken.
        let values = match ctx.values.get(i) {
            Some(s) => load_values(&s.load(n)?.tuples),
            None => load_values(&super::tuples::phased_values(
                n,
                ctx.sizes.long as usize * 3 / 2,
                31,
            )),
        };
        for (eps, out) in [(0.10, &mut at10), (0.01, &mut at1)] {
            let e = hot_range_error_of(&values, value_key, VALUE_BITS, eps, 0.10, 1);
            error_row(&mut detail, name, eps, &e);
            out.push(e);
        }
    }
    let _ = writeln!(
        detail,
        "\nLoad values as 32-bit words (each value's low 32 bits; R = 2^32 as the paper's), b = 4, q = 2, first merge at 1,024 events; hot = 10% of the events; a range's estimate is the sum of its nodes' counts, its truth the exact count of the values inside it."
    );
    let cell = |v: &[HotError]| error_cells(v, &names);
    Ok(Outcome {
        ours: format!(
            "mean hot-range error over 32-bit load values at eps = 10%: {}; at eps = 1%: {}",
            cell(&at10),
            cell(&at1)
        ),
        verdict: values_verdict(&at10, &at1),
        detail,
        chart: None,
    })
}

/// One row of a hot-range error table: stream, eps, ranges, mean and max.
fn error_row(detail: &mut String, name: &str, eps: f64, e: &HotError) {
    let _ = writeln!(
        detail,
        "| {name} | {:.0}% | {} | {:.2}% | {:.2}% |",
        eps * 100.0,
        e.ranges,
        e.mean,
        e.max
    );
}

/// Each stream's mean (and max) hot-range error, for the report's cell.
fn error_cells(v: &[HotError], names: &[String]) -> String {
    v.iter()
        .zip(names)
        .map(|(e, name)| format!("{name} {:.2}% (max {:.2}%)", e.mean, e.max))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_give_error_and_a_tree_that_drops_events_turns_the_verdict() {
        let keys = code_keys(&phased_edges(400_000, 4, 21));
        let (at10, at1) = (
            hot_range_error(&keys, 0.10, 0.10, 1),
            hot_range_error(&keys, 0.01, 0.10, 1),
        );
        assert!(at10.ranges > 0 && at10.mean > 0.0, "{at10:?}");
        assert_eq!(verdict(&[at10], &[at1]), Verdict::Holds, "{at10:?} {at1:?}");
        // A tree that takes every other event only: its estimates are half the truth.
        let broken = hot_range_error(&keys, 0.10, 0.10, 2);
        assert!(
            matches!(verdict(&[broken], &[at1]), Verdict::Differs(_)),
            "{broken:?}"
        );
    }

    #[test]
    fn the_phased_stream_moves_its_code() {
        let t = phased_edges(40_000, 4, 21);
        let funcs = |s: &[Tuple]| {
            s.iter()
                .map(|t| toyvm_vm::Pc(t.a).func())
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (first, last) = (funcs(&t[..10_000]), funcs(&t[30_000..]));
        assert!(first.is_disjoint(&last), "{first:?} {last:?}");
    }

    #[test]
    fn value_hot_ranges_hold_and_a_tree_that_drops_events_turns_them() {
        let values = load_values(&crate::reproduce::tuples::phased_values(
            400_000, 150_000, 31,
        ));
        let e = |eps, every| hot_range_error_of(&values, value_key, VALUE_BITS, eps, 0.10, every);
        let (at10, at1) = (e(0.10, 1), e(0.01, 1));
        assert!(at10.ranges > 0, "{at10:?}");
        assert_eq!(
            values_verdict(&[at10], &[at1]),
            Verdict::Holds,
            "{at10:?} {at1:?}"
        );
        let broken = e(0.01, 2);
        assert!(
            matches!(values_verdict(&[at10], &[broken]), Verdict::Differs(_)),
            "{broken:?}"
        );
    }
}
