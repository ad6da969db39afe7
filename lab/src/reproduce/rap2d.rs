//! Paper 004's 2-D tree (section 4) judged against the oracle: the exact
//! hot boxes of the same trie (a and b halved together at each level, the
//! bit-interleaved key of `toyvm_profiler::rap::key_of`), computed from
//! the exact counts with the paper's hot-range rule (a box is hot when its
//! events outside its hot sub-boxes reach `hot * n`).
//!
//! The verdict asks what the claim says, that RAP finds the hot regions:
//! every exact hot box is reported by RAP as that very box or, when its
//! weight is within RAP's error of the threshold (under `(hot + eps) n`),
//! as an enclosing box that holds no other exact hot box and at most
//! `eps n` more events; and every box RAP reports holds an exact hot box.
//! A tree that stops refining (reports the root, or one box around several
//! hot ones) or reports a box with no hot events in it turns the verdict.

use std::collections::HashMap;
use std::fmt::Write as _;

use toyvm_profiler::rap::key_of;
use toyvm_profiler::{HotRange, Tuple};

use super::streams::{Ctx, run_specs};
use super::{Outcome, Verdict};

/// A box of the 2-D trie: `a` and `b` ranges, and its weight (its events
/// outside its hot sub-boxes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HotBox {
    pub a: (u64, u64),
    pub b: (u64, u64),
    pub weight: u64,
}

impl HotBox {
    fn within(&self, r: &HotRange) -> bool {
        r.a_lo <= self.a.0 && self.a.1 <= r.a_hi && r.b_lo <= self.b.0 && self.b.1 <= r.b_hi
    }

    fn is(&self, r: &HotRange) -> bool {
        (r.a_lo, r.a_hi, r.b_lo, r.b_hi) == (self.a.0, self.a.1, self.b.0, self.b.1)
    }
}

/// Every `(2i)`-th (a) or `(2i+1)`-th (b) bit of the interleaved key.
fn deinterleave(k: u128) -> (u64, u64) {
    let (mut a, mut b) = (0u64, 0u64);
    for i in 0..64 {
        a |= (((k >> (2 * i + 1)) & 1) as u64) << i;
        b |= (((k >> (2 * i)) & 1) as u64) << i;
    }
    (a, b)
}

/// The box of the trie node at `depth` (2 bits a level) whose keys start
/// with `key`'s top `2 depth` bits.
fn node_box(key: u128, depth: u32) -> ((u64, u64), (u64, u64)) {
    let bits = 2 * depth;
    let low = u128::MAX.checked_shr(bits).unwrap_or(0);
    let lo = key & !low;
    let hi = lo | low;
    let ((alo, blo), (ahi, bhi)) = (deinterleave(lo), deinterleave(hi));
    ((alo, ahi), (blo, bhi))
}

/// The exact profile of a stream (one kind) and its hot boxes.
#[derive(Clone, Debug)]
pub struct Oracle {
    /// The exact hot boxes at `hot * n` events.
    pub boxes: Vec<HotBox>,
    /// Every distinct `(a, b)` with its count.
    points: Vec<(u64, u64, u64)>,
}

impl Oracle {
    /// The exact profile of `tuples` and its hot boxes at `hot * n` events.
    pub fn new(tuples: &[Tuple], hot: f64) -> Oracle {
        let mut counts: HashMap<u128, u64> = HashMap::new();
        for t in tuples {
            *counts.entry(key_of(t, 2)).or_default() += 1;
        }
        let mut keys: Vec<(u128, u64)> = counts.into_iter().collect();
        keys.sort_unstable();
        let threshold = ((hot * tuples.len() as f64).ceil() as u64).max(1);
        let mut boxes = Vec::new();
        residual(&keys, 0, threshold, &mut boxes);
        let points = keys
            .iter()
            .map(|&(k, n)| {
                let (a, b) = deinterleave(k);
                (a, b, n)
            })
            .collect();
        Oracle { boxes, points }
    }

    /// The events in `a` x `b`.
    fn mass(&self, a: (u64, u64), b: (u64, u64)) -> u64 {
        self.points
            .iter()
            .filter(|&&(x, y, _)| (a.0..=a.1).contains(&x) && (b.0..=b.1).contains(&y))
            .map(|p| p.2)
            .sum()
    }
}

/// The weight the node at `depth` holding `keys` passes to its parent (0
/// when it is hot itself, and then it is recorded).
fn residual(keys: &[(u128, u64)], depth: u32, threshold: u64, out: &mut Vec<HotBox>) -> u64 {
    let w = if keys.len() == 1 && depth < 64 {
        // One key below: a chain down to its point.
        residual(keys, 64, threshold, out)
    } else if depth == 64 {
        keys[0].1
    } else {
        let shift = 126 - 2 * depth;
        let mut sum = 0;
        let mut rest = keys;
        while let Some(&(k, _)) = rest.first() {
            let digit = (k >> shift) & 3;
            let end = rest.partition_point(|&(x, _)| (x >> shift) & 3 == digit);
            sum += residual(&rest[..end], depth + 1, threshold, out);
            rest = &rest[end..];
        }
        sum
    };
    if w >= threshold {
        let (a, b) = node_box(keys[0].0, depth);
        out.push(HotBox { a, b, weight: w });
        0
    } else {
        w
    }
}

/// How RAP's hot boxes compare with the oracle's.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// Oracle hot boxes RAP reports as themselves.
    pub exact: usize,
    /// Oracle hot boxes of weight under `(hot + eps) n` (where RAP's lower
    /// bounds may miss the threshold) that RAP reports as an enclosing box
    /// holding no other exact hot box and at most `eps n` more events.
    pub coarse: usize,
    /// Oracle hot boxes found neither way.
    pub missed: usize,
    /// RAP's hot boxes holding no oracle hot box.
    pub spurious: usize,
}

/// RAP's hot boxes `rap` against the oracle's, with RAP's error `eps n`
/// as `slack` and `clear_weight` = `(hot + eps) n`.
pub fn compare(oracle: &Oracle, rap: &[HotRange], clear_weight: u64, slack: u64) -> Compared {
    let mut c = Compared {
        exact: 0,
        coarse: 0,
        missed: 0,
        spurious: 0,
    };
    for b in &oracle.boxes {
        if rap.iter().any(|r| b.is(r)) {
            c.exact += 1;
            continue;
        }
        let mass = oracle.mass(b.a, b.b);
        let coarse = b.weight < clear_weight
            && rap.iter().any(|r| {
                b.within(r)
                    && oracle.boxes.iter().filter(|o| o.within(r)).count() == 1
                    && oracle.mass((r.a_lo, r.a_hi), (r.b_lo, r.b_hi)) <= mass + slack
            });
        if coarse {
            c.coarse += 1;
        } else {
            c.missed += 1;
        }
    }
    c.spurious = rap
        .iter()
        .filter(|r| !oracle.boxes.iter().any(|b| b.within(r)))
        .count();
    c
}

/// The verdict: every exact hot box found, no spurious box.
pub fn verdict(c: &Compared) -> Verdict {
    if c.exact + c.coarse + c.missed == 0 {
        return Verdict::NotApplicable("the stream has no exact hot box".into());
    }
    Verdict::check(c.missed == 0 && c.spurious == 0, || {
        format!(
            "of the {} exact hot boxes RAP misses {}, and reports {} boxes with no exact hot box inside",
            c.exact + c.coarse + c.missed,
            c.missed,
            c.spurious
        )
    })
}

pub fn rap_2d(ctx: &Ctx) -> crate::Result<Outcome> {
    let n = ctx.sizes.short_len();
    let s = ctx.values[2].load(n)?;
    let (eps, hot) = (0.05, 0.10);
    let specs = [format!(
        "rap:eps=5%,dims=2,hot=10%,interval={n},threshold=1%,kinds=value"
    )];
    let tuples = &s.tuples[..];
    let r = run_specs(tuples, &specs)?;
    let m = &r.models[0];
    let ranges: Vec<HotRange> = m
        .intervals
        .last()
        .map(|i| i.ranges.clone())
        .unwrap_or_default();
    let re = m.summary.range_error.unwrap_or_default();
    let oracle = Oracle::new(tuples, hot);
    let clear_weight = ((hot + eps) * tuples.len() as f64).ceil() as u64;
    let slack = (eps * tuples.len() as f64).floor() as u64;
    let c = compare(&oracle, &ranges, clear_weight, slack);
    let mut detail = String::from("RAP's hot ranges at the end of the run:\n\n");
    for h in &ranges {
        let _ = writeln!(
            detail,
            "- {}",
            toyvm_profiler::evaluation::describe_range(h)
        );
    }
    detail
        .push_str("\nThe oracle's hot boxes (exact counts, the same trie), with their weight:\n\n");
    for b in &oracle.boxes {
        let _ = writeln!(
            detail,
            "- [{:#x}, {:#x}] x [{}, {}]: {} events",
            b.a.0, b.a.1, b.b.0, b.b.1, b.weight
        );
    }
    Ok(Outcome {
        ours: format!(
            "{}: {} hot 2-D ranges; of the oracle's {} hot boxes RAP reports {} as themselves, {} as an enclosing box within eps n, misses {}; {} reported boxes hold no exact hot box; mean estimate error {:.2}%, {} state bytes",
            s.name,
            ranges.len(),
            oracle.boxes.len(),
            c.exact,
            c.coarse,
            c.missed,
            c.spurious,
            re.mean_percent,
            m.summary.state_bytes
        ),
        verdict: verdict(&c),
        detail,
        chart: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toyvm_profiler::Kind;

    /// Three hot points (30%, 25%, 24%) and a hot value range at one pc
    /// (values 0-31 evenly, 16%: a trie box, whose halves hold 8%), over 5%
    /// of noise spread wide: every weight well clear of the 10% threshold.
    fn stream(n: usize) -> Vec<Tuple> {
        let mut rng = toyvm_profiler::hash::SplitMix64::new(3);
        (0..n)
            .map(|i| match i % 100 {
                0..=29 => Tuple::value(0x1_0000_0040, 7),
                30..=54 => Tuple::value(0x1_0000_0080, 1 << 40),
                55..=78 => Tuple::value(0x2_0000_0000, 3),
                79..=94 => Tuple::value(0x1_0000_00c0, rng.below(32)),
                _ => Tuple::value(rng.next_u64(), rng.next_u64()),
            })
            .collect()
    }

    fn rap_ranges(tuples: &[Tuple]) -> Vec<HotRange> {
        let spec = format!(
            "rap:eps=5%,dims=2,hot=10%,interval={},threshold=1%,kinds=value",
            tuples.len()
        );
        let r = run_specs(tuples, &[spec]).unwrap();
        r.models[0].intervals.last().unwrap().ranges.clone()
    }

    #[test]
    fn the_oracle_finds_the_planted_boxes() {
        let t = stream(40_000);
        let o = Oracle::new(&t, 0.10).boxes;
        let points = o
            .iter()
            .filter(|b| b.a.0 == b.a.1 && b.b.0 == b.b.1)
            .count();
        assert_eq!(points, 3, "{o:?}");
        // The value range: a trie box splits a and b together, so the one pc's values
        // 0-31 sit in a box of 32 pcs by 32 values.
        assert!(
            o.iter().any(|b| b.a == (0x1_0000_00c0, 0x1_0000_00df)
                && b.b == (0, 31)
                && b.weight == 6400),
            "{o:?}"
        );
        assert_eq!(o.len(), 4, "the noise is no hot box: {o:?}");
    }

    #[test]
    fn rap_holds_and_broken_ranges_turn_the_verdict() {
        let t = stream(40_000);
        let o = Oracle::new(&t, 0.10);
        let clear = (0.15 * t.len() as f64).ceil() as u64;
        let slack = (0.05 * t.len() as f64) as u64;
        let ranges = rap_ranges(&t);
        let c = compare(&o, &ranges, clear, slack);
        assert_eq!(verdict(&c), Verdict::Holds, "{c:?} {ranges:?}");
        // A tree that stops refining: the root for every hot box.
        let root = HotRange {
            kind: Kind::Value,
            a_lo: 0,
            a_hi: u64::MAX,
            b_lo: 0,
            b_hi: u64::MAX,
            count: t.len() as u64,
            hot_weight: t.len() as u64,
        };
        assert!(matches!(
            verdict(&compare(&o, &[root], clear, slack)),
            Verdict::Differs(_)
        ));
        // A box where nothing hot lives, beside the right ones.
        let mut wrong = ranges.clone();
        wrong.push(HotRange {
            a_lo: 0x5_0000_0000,
            a_hi: 0x5_0000_0000,
            b_lo: 9,
            b_hi: 9,
            ..root
        });
        assert!(matches!(
            verdict(&compare(&o, &wrong, clear, slack)),
            Verdict::Differs(_)
        ));
    }
}
