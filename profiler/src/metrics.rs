//! Error metrics of a model against the perfect profiler.
//!
//! - [`interval_error`]: the multi-hash paper's error E (000, section 5.5.2, formula 1),
//!   `E = sum |fp_i - fh_i| / sum fp_i` over every tuple that is a candidate of either
//!   profiler, split by category (false positive, false negative, neutral positive,
//!   neutral negative, Figure 3) so the four parts add up to E.  A false negative has
//!   `fh = 0`.  The run's error is the plain mean over intervals, as the paper takes it.
//!   [`ErrorSummary`] also keeps precision, recall and F1 of the candidate sets, summed
//!   over intervals (micro-averaged).
//! - [`invariance_error`]: the stratified paper's value-profile error (001, section
//!   5.3.1) with its selection rules, over edge and call tuples too (per pc, as its
//!   Fig 11 uses it).
//! - [`arc_weight_error`]: Conte's maximum arc-weight difference per block, summed per
//!   block-weight bucket (002, section 3.5, formulas 1-2), with node weights as
//!   max(flow in, flow out) (section 3.4).
//! - [`range_error`]: RAP's per-range percentage error (004, section 5.3).

use crate::contract::{Candidate, HotRange};
use crate::hash::TupleMap;
use crate::tuple::{Kind, Tuple};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Formula 1 for one interval, split by category.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct IntervalError {
    /// E, the weighted relative error (a fraction; 0.01 = 1%).
    pub error: f64,
    /// The part of E from tuples the model reports but the oracle does not.
    pub false_positive: f64,
    /// The part from tuples the oracle reports but the model does not.
    pub false_negative: f64,
    /// The part from tuples both report, the model over-counting.
    pub neutral_positive: f64,
    /// The part from tuples both report, the model under-counting.
    pub neutral_negative: f64,
    /// Candidates both report.
    pub true_positives: u64,
    /// Candidates only the model reports.
    pub false_positives: u64,
    /// Candidates only the oracle reports.
    pub false_negatives: u64,
}

/// Formula 1: `exact` holds the exact count of every tuple of the interval; a tuple is an
/// oracle candidate when its count reaches `threshold`.
pub fn interval_error(exact: &TupleMap<u64>, threshold: u64, model: &[Candidate]) -> IntervalError {
    let mut e = IntervalError::default();
    let (mut den, mut fp_n, mut fn_n, mut np_n, mut nn_n) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut reported: TupleMap<u64> = TupleMap::default();
    for c in model {
        reported.insert(c.tuple, c.count);
    }
    for (t, &fh) in &reported {
        let fp = exact.get(t).copied().unwrap_or(0);
        den += fp;
        let diff = fp.abs_diff(fh);
        if fp >= threshold {
            e.true_positives += 1;
            if fh > fp {
                np_n += diff;
            } else {
                nn_n += diff;
            }
        } else {
            e.false_positives += 1;
            fp_n += diff;
        }
    }
    for (t, &fp) in exact {
        if fp >= threshold && !reported.contains_key(t) {
            e.false_negatives += 1;
            den += fp;
            fn_n += fp;
        }
    }
    let den = den.max(1) as f64;
    e.false_positive = fp_n as f64 / den;
    e.false_negative = fn_n as f64 / den;
    e.neutral_positive = np_n as f64 / den;
    e.neutral_negative = nn_n as f64 / den;
    e.error = e.false_positive + e.false_negative + e.neutral_positive + e.neutral_negative;
    e
}

/// Run totals: mean E per category over intervals, and micro-averaged precision, recall
/// and F1.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ErrorSummary {
    /// Mean E over intervals.
    pub error: f64,
    /// Mean false-positive part.
    pub false_positive: f64,
    /// Mean false-negative part.
    pub false_negative: f64,
    /// Mean neutral-positive part.
    pub neutral_positive: f64,
    /// Mean neutral-negative part.
    pub neutral_negative: f64,
    /// TP / (TP + FP) over all intervals (1 when the model reported nothing).
    pub precision: f64,
    /// TP / (TP + FN) over all intervals (1 when the oracle reported nothing).
    pub recall: f64,
    /// Harmonic mean of precision and recall.
    pub f1: f64,
    /// Intervals summed.
    pub intervals: u64,
    #[serde(skip)]
    tp: u64,
    #[serde(skip)]
    fp: u64,
    #[serde(skip)]
    fn_: u64,
}

impl ErrorSummary {
    /// Adds one interval.
    pub fn add(&mut self, e: &IntervalError) {
        self.error += e.error;
        self.false_positive += e.false_positive;
        self.false_negative += e.false_negative;
        self.neutral_positive += e.neutral_positive;
        self.neutral_negative += e.neutral_negative;
        self.tp += e.true_positives;
        self.fp += e.false_positives;
        self.fn_ += e.false_negatives;
        self.intervals += 1;
    }

    /// The summary with means and ratios computed.
    pub fn finish(&self) -> ErrorSummary {
        let n = self.intervals.max(1) as f64;
        let ratio = |num: u64, den: u64| {
            if den == 0 {
                1.0
            } else {
                num as f64 / den as f64
            }
        };
        let precision = ratio(self.tp, self.tp + self.fp);
        let recall = ratio(self.tp, self.tp + self.fn_);
        let f1 = if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        ErrorSummary {
            error: self.error / n,
            false_positive: self.false_positive / n,
            false_negative: self.false_negative / n,
            neutral_positive: self.neutral_positive / n,
            neutral_negative: self.neutral_negative / n,
            precision,
            recall,
            f1,
            ..*self
        }
    }
}

/// The selection rules of 001 section 5.3.1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InvarianceRules {
    /// A static load is selected only if it executes at least this often (1000).
    pub min_pc_count: u64,
    /// A tuple is sufficiently invariant if it is at least this share of its pc (10%).
    pub min_tuple_share: f64,
    /// A pc is selected only if sufficiently invariant tuples cover this share of it (40%).
    pub min_cover: f64,
}

impl Default for InvarianceRules {
    fn default() -> Self {
        InvarianceRules {
            min_pc_count: 1000,
            min_tuple_share: 0.10,
            min_cover: 0.40,
        }
    }
}

/// 001's invariance error (section 5.3.1): `sum f(v)/f * |I_i(v) - I_p(v)|` over the
/// selected tuples, with `I(v) = n(v) / n(pc)`.  The paper defines it on `<load, value>`
/// tuples; its Fig 11 reports the same form for edge and call-target profiles, so every
/// kind counts here, each tuple normalized by its own pc's count of that kind (a
/// branch's edges by the branch's executions, a call site's targets by its calls), and
/// the selection rules apply per `(kind, pc)` alike.  `ideal` holds exact counts,
/// `estimate` the model's (a tuple it never reported counts 0).  `None` when no tuple
/// is selected.
pub fn invariance_error(
    ideal: &TupleMap<u64>,
    estimate: &TupleMap<u64>,
    rules: InvarianceRules,
) -> Option<f64> {
    let per_pc = |m: &TupleMap<u64>| {
        let mut pcs: HashMap<(Kind, u64), u64> = HashMap::new();
        for (t, &n) in m {
            *pcs.entry((t.kind, t.a)).or_default() += n;
        }
        pcs
    };
    let (ideal_pc, est_pc) = (per_pc(ideal), per_pc(estimate));
    let invariant = |t: &Tuple, n: u64| {
        let pc = ideal_pc[&(t.kind, t.a)];
        pc >= rules.min_pc_count && n as f64 >= rules.min_tuple_share * pc as f64
    };
    let mut cover: HashMap<(Kind, u64), u64> = HashMap::new();
    for (t, &n) in ideal {
        if invariant(t, n) {
            *cover.entry((t.kind, t.a)).or_default() += n;
        }
    }
    let (mut f, mut sum) = (0u64, 0.0);
    for (t, &n) in ideal {
        let key = (t.kind, t.a);
        let pc = ideal_pc[&key];
        if !invariant(t, n) || (cover[&key] as f64) < rules.min_cover * pc as f64 {
            continue;
        }
        let ii = n as f64 / pc as f64;
        let np_pc = est_pc.get(&key).copied().unwrap_or(0);
        let ip = if np_pc == 0 {
            0.0
        } else {
            estimate.get(t).copied().unwrap_or(0) as f64 / np_pc as f64
        };
        f += n;
        sum += n as f64 * (ii - ip).abs();
    }
    (f > 0).then(|| sum / f as f64)
}

/// Node weights from edge counts: a node is a block, named by the pc of the branch that
/// ends it.  Flow out of block `a` is the sum of edges `(a, _)`; flow in is the sum of
/// edges `(_, b)` whose target `b` starts that block, i.e. `a` is the first branch pc at
/// or after `b` in the same function.  The weight is max(flow in, flow out) (002, 3.4).
pub fn node_weights(edges: &TupleMap<u64>) -> BTreeMap<u64, u64> {
    let branches: BTreeSet<u64> = edges
        .keys()
        .filter(|t| t.kind == Kind::Edge)
        .map(|t| t.a)
        .collect();
    let mut out_flow: BTreeMap<u64, u64> = BTreeMap::new();
    let mut in_flow: BTreeMap<u64, u64> = BTreeMap::new();
    for (t, &n) in edges.iter().filter(|(t, _)| t.kind == Kind::Edge) {
        *out_flow.entry(t.a).or_default() += n;
        if let Some(&blk) = branches
            .range(t.b..)
            .next()
            .filter(|&&a| a >> 32 == t.b >> 32)
        {
            *in_flow.entry(blk).or_default() += n;
        }
    }
    branches
        .iter()
        .map(|&a| {
            (
                a,
                out_flow
                    .get(&a)
                    .copied()
                    .unwrap_or(0)
                    .max(in_flow.get(&a).copied().unwrap_or(0)),
            )
        })
        .collect()
}

/// Conte's error for one block-weight bucket.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct BucketError {
    /// Lowest block weight in the bucket.
    pub lo: u64,
    /// Highest block weight in the bucket (`u64::MAX` for the last).
    pub hi: u64,
    /// Blocks in the bucket (every block the actual profile has).
    pub blocks: u64,
    /// Of those, blocks the model gave no arc for (no estimate: every
    /// estimated arc weight is 0, so the block's difference is its largest
    /// actual arc weight; summed like the others).
    pub missing: u64,
    /// Formula 2: the sum of the blocks' maximum arc-weight differences.
    pub sum: f64,
    /// The mean difference per block, in percent (Table IV's scale).
    pub mean_percent: f64,
}

/// Conte's formula 1-2: for each block i, `dw_i = max_j |w_ij - west_ij|` over its
/// successors, with arc weights normalized to the block's out-flow; summed per bucket of
/// actual block weight.  `bounds` are the bucket boundaries (Table IV uses `[10_000]`).
/// A block the estimate has no arc for is the paper's case of a block the hardware lost
/// (its buffer contention): every `west_ij` is 0, so `dw_i` is its largest actual arc
/// weight. It is summed like every other block (the paper's definition: formula 2 runs
/// over all blocks) and also counted in `missing`.
pub fn arc_weight_error(
    actual: &TupleMap<u64>,
    estimate: &TupleMap<u64>,
    bounds: &[u64],
) -> Vec<BucketError> {
    let succ = |m: &TupleMap<u64>| {
        let mut s: BTreeMap<u64, BTreeMap<u64, u64>> = BTreeMap::new();
        for (t, &n) in m.iter().filter(|(t, _)| t.kind == Kind::Edge) {
            *s.entry(t.a).or_default().entry(t.b).or_default() += n;
        }
        s
    };
    let (act, est) = (succ(actual), succ(estimate));
    let weights = node_weights(actual);
    let mut edges: Vec<u64> = vec![0];
    edges.extend_from_slice(bounds);
    let mut buckets: Vec<BucketError> = edges
        .iter()
        .enumerate()
        .map(|(i, &lo)| BucketError {
            lo,
            hi: edges.get(i + 1).map_or(u64::MAX, |h| h - 1),
            blocks: 0,
            missing: 0,
            sum: 0.0,
            mean_percent: 0.0,
        })
        .collect();
    let empty = BTreeMap::new();
    for (a, arcs) in &act {
        let out: u64 = arcs.values().sum();
        let e = est.get(a).unwrap_or(&empty);
        let eout: u64 = e.values().sum();
        let wt = weights.get(a).copied().unwrap_or(out);
        let k = edges.partition_point(|&lo| lo <= wt) - 1;
        if eout == 0 {
            buckets[k].missing += 1;
        }
        let mut dw: f64 = 0.0;
        for b in arcs.keys().chain(e.keys()) {
            let w = arcs.get(b).copied().unwrap_or(0) as f64 / out.max(1) as f64;
            let we = if eout == 0 {
                0.0
            } else {
                e.get(b).copied().unwrap_or(0) as f64 / eout as f64
            };
            dw = dw.max((w - we).abs());
        }
        buckets[k].blocks += 1;
        buckets[k].sum += dw;
    }
    for b in &mut buckets {
        b.mean_percent = if b.blocks == 0 {
            0.0
        } else {
            100.0 * b.sum / b.blocks as f64
        };
    }
    buckets
}

/// RAP's per-range percentage error over the reported hot ranges.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RangeError {
    /// Ranges compared.
    pub ranges: u64,
    /// Mean of `100 |true - estimate| / true`.
    pub mean_percent: f64,
    /// Largest such error.
    pub max_percent: f64,
}

/// Compares each range's estimate with the exact count of the tuples it holds.
pub fn range_error(exact: &TupleMap<u64>, ranges: &[HotRange]) -> RangeError {
    let mut r = RangeError::default();
    for h in ranges {
        let truth: u64 = exact
            .iter()
            .filter(|(t, _)| h.contains(t))
            .map(|(_, n)| n)
            .sum();
        if truth == 0 {
            continue;
        }
        let pct = 100.0 * truth.abs_diff(h.count) as f64 / truth as f64;
        r.ranges += 1;
        r.mean_percent += pct;
        r.max_percent = r.max_percent.max(pct);
    }
    if r.ranges > 0 {
        r.mean_percent /= r.ranges as f64;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: &[(Tuple, u64)]) -> TupleMap<u64> {
        v.iter().copied().collect()
    }

    #[test]
    fn formula_1_splits_into_the_four_categories() {
        let (a, b, c, d) = (
            Tuple::value(1, 1),
            Tuple::value(1, 2),
            Tuple::value(2, 1),
            Tuple::value(3, 3),
        );
        let exact = map(&[(a, 100), (b, 200), (c, 50), (d, 120)]);
        // a over-counted by 10 (NP), b under by 20 (NN), c reported but below T (FP, off
        // by 40), d missed (FN, 120).
        let hw = [
            Candidate {
                tuple: a,
                count: 110,
            },
            Candidate {
                tuple: b,
                count: 180,
            },
            Candidate {
                tuple: c,
                count: 90,
            },
        ];
        let e = interval_error(&exact, 100, &hw);
        let den = (100 + 200 + 50 + 120) as f64;
        assert!((e.neutral_positive - 10.0 / den).abs() < 1e-12);
        assert!((e.neutral_negative - 20.0 / den).abs() < 1e-12);
        assert!((e.false_positive - 40.0 / den).abs() < 1e-12);
        assert!((e.false_negative - 120.0 / den).abs() < 1e-12);
        assert!((e.error - 190.0 / den).abs() < 1e-12);
        assert_eq!(
            (e.true_positives, e.false_positives, e.false_negatives),
            (2, 1, 1)
        );
        let mut s = ErrorSummary::default();
        s.add(&e);
        s.add(&interval_error(
            &exact,
            100,
            &[
                Candidate {
                    tuple: a,
                    count: 100,
                },
                Candidate {
                    tuple: b,
                    count: 200,
                },
                Candidate {
                    tuple: d,
                    count: 120,
                },
            ],
        ));
        let s = s.finish();
        assert!((s.error - 190.0 / den / 2.0).abs() < 1e-12);
        assert!((s.precision - 5.0 / 6.0).abs() < 1e-12 && (s.recall - 5.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn invariance_error_applies_the_selection_rules() {
        let pc = 0x1_0000_0000;
        // pc executes 2000 times; value 0 is 60% (selected), value 1 is 5% (not invariant).
        let mut ideal = map(&[(Tuple::value(pc, 0), 1200), (Tuple::value(pc, 1), 100)]);
        for v in 2..72 {
            ideal.insert(Tuple::value(pc, v), 10);
        }
        // A rare pc is ignored whatever the estimate says.
        ideal.insert(Tuple::value(7, 7), 999);
        let est = map(&[(Tuple::value(pc, 0), 500), (Tuple::value(pc, 1), 500)]);
        let e = invariance_error(&ideal, &est, InvarianceRules::default()).unwrap();
        assert!((e - (0.6f64 - 0.5).abs()).abs() < 1e-12, "{e}");
        assert_eq!(
            invariance_error(
                &map(&[(Tuple::value(7, 7), 999)]),
                &est,
                InvarianceRules::default()
            ),
            None
        );
    }

    #[test]
    fn invariance_error_normalizes_edges_and_calls_per_pc_and_kind() {
        // A branch at 0x10 taken to 0x20 70% of 2000 times; a call site at 0x10 too (a
        // different kind: its own pc count) calling 0x100 all of 1500 times.
        let ideal = map(&[
            (Tuple::edge(0x10, 0x20), 1400),
            (Tuple::edge(0x10, 0x11), 600),
            (Tuple::call(0x10, 0x100), 1500),
        ]);
        // The estimate has the branch at 50/50 and the call exact.
        let est = map(&[
            (Tuple::edge(0x10, 0x20), 50),
            (Tuple::edge(0x10, 0x11), 50),
            (Tuple::call(0x10, 0x100), 6),
        ]);
        let e = invariance_error(&ideal, &est, InvarianceRules::default()).unwrap();
        // Edges: both selected, each off by 0.2; the call is exact.
        let want = (1400.0 * 0.2 + 600.0 * 0.2) / (1400.0 + 600.0 + 1500.0);
        assert!((e - want).abs() < 1e-12, "{e} vs {want}");
        // Were calls and edges pooled per pc, the call's share would be wrong.
        assert_eq!(
            invariance_error(&ideal, &ideal, InvarianceRules::default()),
            Some(0.0)
        );
    }

    #[test]
    fn conte_error_takes_the_maximum_difference_per_block() {
        // The paper's example: 40%/60% actual vs 44%/56% estimated is a 4% difference.
        let actual = map(&[(Tuple::edge(10, 11), 40), (Tuple::edge(10, 20), 60)]);
        let est = map(&[(Tuple::edge(10, 11), 44), (Tuple::edge(10, 20), 56)]);
        let b = arc_weight_error(&actual, &est, &[10_000]);
        assert_eq!(b[0].blocks, 1);
        assert!((b[0].sum - 0.04).abs() < 1e-12);
        assert_eq!(b[1].blocks, 0);
    }

    #[test]
    fn a_block_without_estimated_arcs_is_summed_at_its_largest_arc_weight() {
        // Block 10 is estimated (4%); block 30 (70%/30%) was lost by the
        // hardware: formula 2 runs over every block, so it adds 0.7.
        let actual = map(&[
            (Tuple::edge(10, 11), 40),
            (Tuple::edge(10, 20), 60),
            (Tuple::edge(30, 31), 70),
            (Tuple::edge(30, 40), 30),
        ]);
        let est = map(&[(Tuple::edge(10, 11), 44), (Tuple::edge(10, 20), 56)]);
        let b = arc_weight_error(&actual, &est, &[10_000]);
        assert_eq!((b[0].blocks, b[0].missing), (2, 1));
        assert!((b[0].sum - 0.74).abs() < 1e-12, "{}", b[0].sum);
        assert!((b[0].mean_percent - 37.0).abs() < 1e-9);
    }

    #[test]
    fn node_weight_is_max_of_flow_in_and_out() {
        // Block ending at 0x10 is entered at 0x5 twice (from 0x30) and left 3 times.
        let e = map(&[
            (Tuple::edge(0x30, 0x5), 2),
            (Tuple::edge(0x10, 0x11), 3),
            (Tuple::edge(0x30, 0x31), 1),
        ]);
        let w = node_weights(&e);
        assert_eq!(w[&0x10], 3);
        assert_eq!(w[&0x30], 3);
    }
}
