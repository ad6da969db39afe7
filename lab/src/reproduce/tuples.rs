//! Paper 000 (Narayanasamy et al.) section 5.6.1, "Analysis of Candidate
//! Tuples", measured with the perfect interval profiler as the paper did:
//! Fig 4 (distinct tuples per interval at interval lengths of 10K, 100K
//! and 1M), Fig 5 (candidate tuples per interval at thresholds of 1% and
//! 0.1%), Fig 6 (the change in candidates between consecutive intervals,
//! as a distribution: "x% of intervals experience less than y% change").
//!
//! The paper does not give Fig 6's change as a formula; ours is the share
//! of the two intervals' candidates (their union) that is a candidate in
//! only one of them, |C_i xor C_i+1| / |C_i or C_i+1| (0 when both are
//! empty).

use std::fmt::Write as _;

use toyvm_profiler::Tuple;
use toyvm_profiler::contract::threshold_count;
use toyvm_profiler::hash::TupleMap;

use super::streams::{Ctx, Stream};
use super::{Chart, Figure, Outcome, Verdict};

pub fn figures() -> Vec<Figure> {
    vec![
        Figure {
            id: "000-fig4",
            claim: "Fig 4 / 5.6.1 (value profiles, perfect profiler): distinct tuples per interval grow in proportion to the interval length (10K, 100K, 1M)",
            run: fig4,
        },
        Figure {
            id: "000-fig5",
            claim: "Fig 5 / 5.6.1: candidates (1% and 0.1%) are very few beside the distinct tuples and roughly the same whatever the interval length",
            run: fig5,
        },
        Figure {
            id: "000-fig6",
            claim: "Fig 6 / 5.6.1 (10K/1% and 1M/0.1%): candidates change between consecutive intervals; some programs vary less at 1M than at 10K, others (deltablue, phases) more: interval length suits the program",
            run: fig6,
        },
    ]
}

/// One interval of a stream as the perfect profiler sees it.
#[derive(Clone, Debug)]
pub struct Interval {
    /// Distinct tuples in it.
    pub distinct: usize,
    /// Per threshold asked for: the candidates (count reaching the
    /// threshold), sorted.
    pub candidates: Vec<Vec<Tuple>>,
    /// Per threshold: the events the candidates account for.
    pub candidate_events: Vec<u64>,
}

/// The whole intervals of length `l` of `tuples` (a last partial one is
/// dropped), each counted exactly, with its candidates at each of
/// `thresholds` (fractions of `l`: 0.01 for 1%).
pub fn intervals(tuples: &[Tuple], l: usize, thresholds: &[f64]) -> Vec<Interval> {
    let mut counts: TupleMap<u64> = TupleMap::default();
    let mut out = Vec::new();
    let limits: Vec<u64> = thresholds
        .iter()
        .map(|&t| threshold_count(t, l as u64))
        .collect();
    for chunk in tuples.chunks_exact(l.max(1)) {
        counts.clear();
        for t in chunk {
            *counts.entry(*t).or_insert(0) += 1;
        }
        let mut candidates = Vec::with_capacity(limits.len());
        let mut candidate_events = Vec::with_capacity(limits.len());
        for &lim in &limits {
            let mut c: Vec<Tuple> = Vec::new();
            let mut events = 0;
            for (t, &n) in &counts {
                if n >= lim {
                    c.push(*t);
                    events += n;
                }
            }
            c.sort_unstable();
            candidates.push(c);
            candidate_events.push(events);
        }
        out.push(Interval {
            distinct: counts.len(),
            candidates,
            candidate_events,
        });
    }
    out
}

/// The interval lengths of Figs 4-5: the paper's 10K, 100K and 1M, those
/// the stream holds at least two of (`--quick`'s 800K-tuple streams drop
/// 1M).
fn lengths(ctx: &Ctx) -> Vec<usize> {
    [10_000usize, 100_000, 1_000_000]
        .into_iter()
        .filter(|&l| 2 * l <= ctx.sizes.long_len())
        .collect()
}

/// Mean distinct tuples, candidates and the candidates' share of the
/// events, per interval length, at 1% and 0.1%.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub length: usize,
    pub distinct: f64,
    /// At 1%, then 0.1%.
    pub candidates: [f64; 2],
    pub share: [f64; 2],
}

const THRESHOLDS: [f64; 2] = [0.01, 0.001];

/// Fig 4-5's rows of one stream.
pub fn rows(tuples: &[Tuple], lengths: &[usize]) -> Vec<Row> {
    lengths
        .iter()
        .map(|&l| {
            let iv = intervals(tuples, l, &THRESHOLDS);
            let n = iv.len().max(1) as f64;
            let mean = |f: &dyn Fn(&Interval) -> f64| iv.iter().map(f).sum::<f64>() / n;
            Row {
                length: l,
                distinct: mean(&|i| i.distinct as f64),
                candidates: [0, 1].map(|k| mean(&|i| i.candidates[k].len() as f64)),
                share: [0, 1].map(|k| mean(&|i| i.candidate_events[k] as f64 / l as f64)),
            }
        })
        .collect()
}

/// The smallest growth of the distinct tuples per tenfold interval length
/// over a stream's rows (10.0: exactly proportional).
/// The interval lengths as the report names them: `10000/100000/1000000`.
fn slashed(ls: &[usize]) -> String {
    ls.iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join("/")
}

fn growth(rows: &[Row]) -> f64 {
    rows.windows(2)
        .map(|w| {
            let decades = (w[1].length as f64 / w[0].length as f64).log10();
            (w[1].distinct / w[0].distinct.max(1.0)).powf(1.0 / decades)
        })
        .fold(f64::INFINITY, f64::min)
}

/// Fig 4's verdict: on every stream the distinct tuples grow at least 5x
/// per tenfold interval (near proportion; 10x is exact proportion).
pub fn fig4_verdict(streams: &[(String, Vec<Row>)]) -> Verdict {
    let slow: Vec<String> = streams
        .iter()
        .filter(|(_, r)| growth(r) < 5.0)
        .map(|(name, r)| format!("{name} {:.1}x", growth(r)))
        .collect();
    Verdict::check(slow.is_empty(), || {
        format!(
            "distinct tuples grow less than 5x per tenfold interval on {} (per tenfold length, the smallest step): a stream whose distinct tuples are few saturates (a workload difference)",
            slow.join(", ")
        )
    })
}

/// The interval lengths and each value stream's rows at them.
#[allow(clippy::type_complexity)]
fn value_rows(ctx: &Ctx) -> crate::Result<(Vec<usize>, Vec<(String, Vec<Row>)>)> {
    let ls = lengths(ctx);
    let mut per = Vec::new();
    for s in &ctx.values {
        let s = s.load(ctx.sizes.long_len())?;
        per.push((s.name.clone(), rows(&s.tuples, &ls)));
    }
    Ok((ls, per))
}

fn fig4(ctx: &Ctx) -> crate::Result<Outcome> {
    let (ls, per) = value_rows(ctx)?;
    let mut detail = String::from(
        "Perfect profiler, value streams, whole intervals of each length.\n\n| stream | interval | mean distinct tuples | per tenfold |\n|---|---|---|---|\n",
    );
    for (name, r) in &per {
        for (i, row) in r.iter().enumerate() {
            let step = if i == 0 {
                "-".to_owned()
            } else {
                format!("{:.1}x", growth(&r[i - 1..=i]))
            };
            let _ = writeln!(
                detail,
                "| {name} | {} | {:.0} | {step} |",
                row.length, row.distinct
            );
        }
    }
    if ctx.sizes.quick {
        detail.push_str(
            "\n--quick: intervals of 10K and 100K only (the paper's 1M needs longer streams).\n",
        );
    }
    let series = per
        .iter()
        .map(|(name, r)| {
            (
                name.clone(),
                r.iter()
                    .map(|x| (x.length as f64, x.distinct))
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let ours = per
        .iter()
        .map(|(name, r)| {
            format!(
                "{name} {} ({:.1}x per tenfold)",
                r.iter()
                    .map(|x| format!("{:.0}", x.distinct))
                    .collect::<Vec<_>>()
                    .join("/"),
                growth(r)
            )
        })
        .collect::<Vec<_>>();
    Ok(Outcome {
        ours: format!(
            "mean distinct tuples per interval of {}: {}",
            slashed(&ls),
            ours.join(", ")
        ),
        verdict: fig4_verdict(&per),
        detail,
        chart: Some(Chart {
            x: "interval length (tuples)".into(),
            y: "mean distinct tuples per interval".into(),
            log_x: true,
            series,
        }),
    })
}

/// Fig 5's verdict, per stream and threshold: the mean candidates are at
/// most a tenth of the mean distinct tuples at every interval length
/// ("very small compared to"), and the most over the lengths is at most
/// twice the fewest ("roughly the same irrespective of interval length").
pub fn fig5_verdict(streams: &[(String, Vec<Row>)]) -> Verdict {
    let mut w = Vec::new();
    for (name, r) in streams {
        for (k, t) in ["1%", "0.1%"].iter().enumerate() {
            if let Some(x) = r.iter().find(|x| x.candidates[k] * 10.0 > x.distinct) {
                w.push(format!(
                    "{name} at {t}: {:.0} candidates beside {:.0} distinct tuples at {}",
                    x.candidates[k], x.distinct, x.length
                ));
            }
            let (lo, hi) = r.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                (lo.min(x.candidates[k]), hi.max(x.candidates[k]))
            });
            if hi > 2.0 * lo {
                w.push(format!(
                    "{name} at {t}: candidates range from {lo:.1} to {hi:.1} over the interval lengths"
                ));
            }
        }
    }
    Verdict::check(w.is_empty(), || w.join("; "))
}

fn fig5(ctx: &Ctx) -> crate::Result<Outcome> {
    let (ls, per) = value_rows(ctx)?;
    let mut detail = String::from(
        "Perfect profiler, value streams; means over whole intervals; 'share' is the candidates' share of the interval's events.\n\n| stream | interval | distinct | candidates at 1% | share | candidates at 0.1% | share |\n|---|---|---|---|---|---|---|\n",
    );
    let mut series = Vec::new();
    for (name, r) in &per {
        for x in r {
            let _ = writeln!(
                detail,
                "| {name} | {} | {:.0} | {:.1} | {} | {:.1} | {} |",
                x.length,
                x.distinct,
                x.candidates[0],
                super::pct(x.share[0]),
                x.candidates[1],
                super::pct(x.share[1])
            );
        }
        for (k, t) in ["1%", "0.1%"].iter().enumerate() {
            series.push((
                format!("{name}, {t}"),
                r.iter()
                    .map(|x| (x.length as f64, x.candidates[k]))
                    .collect(),
            ));
        }
    }
    let ours = per
        .iter()
        .map(|(name, r)| {
            let cell = |k: usize| {
                r.iter()
                    .map(|x| format!("{:.0}", x.candidates[k]))
                    .collect::<Vec<_>>()
                    .join("/")
            };
            let share = r.last().map_or(0.0, |x| x.share[1]);
            format!(
                "{name} {} at 1%, {} at 0.1% (of {:.0} distinct at the longest; {} of the events there)",
                cell(0),
                cell(1),
                r.last().map_or(0.0, |x| x.distinct),
                super::pct(share)
            )
        })
        .collect::<Vec<_>>();
    Ok(Outcome {
        ours: format!(
            "mean candidates per interval of {}: {}",
            slashed(&ls),
            ours.join("; ")
        ),
        verdict: fig5_verdict(&per),
        detail,
        chart: Some(Chart {
            x: "interval length (tuples)".into(),
            y: "mean candidates per interval".into(),
            log_x: true,
            series,
        }),
    })
}

/// The change in candidates from each interval to the next: the share of
/// their union that is a candidate in only one (0 when both are empty).
pub fn changes(iv: &[Interval], k: usize) -> Vec<f64> {
    iv.windows(2)
        .map(|w| {
            let (a, b) = (&w[0].candidates[k], &w[1].candidates[k]);
            let both = a.iter().filter(|t| b.binary_search(t).is_ok()).count();
            let union = a.len() + b.len() - both;
            if union == 0 {
                0.0
            } else {
                (union - both) as f64 / union as f64
            }
        })
        .collect()
}

/// The median of `v` (0 when empty).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// A phased value stream of `len` tuples standing in for the paper's
/// deltablue: phases of `phase` tuples, each a Zipf(1.0) stream over 2,000
/// values at load pcs of its own and with its own bits 28-31 of the value
/// (the phase number, mod 16), so the hot tuples and the hot value ranges
/// move at each phase.
pub fn phased_values(len: usize, phase: usize, seed: u64) -> Vec<Tuple> {
    let mut out = Vec::with_capacity(len);
    let mut p = 0u32;
    while out.len() < len {
        let n = phase.max(1).min(len - out.len());
        let part = toyvm_profiler::synth::zipf_stream(n, 2_000, 1.0, seed + u64::from(p));
        out.extend(part.into_iter().map(|t| {
            let pc = toyvm_vm::Pc(t.a);
            let moved = (t.b & !(0xf << 28)) | (u64::from(p & 0xf) << 28);
            Tuple::value(Tuple::pc(pc.func() + 16 * p, pc.offset()), moved)
        }));
        p += 1;
    }
    out
}

/// Median change per stream at the short (10K/1%) and long (the long
/// setting's interval at 0.1%) settings.
#[derive(Clone, Debug)]
pub struct Change {
    pub name: String,
    pub short: Vec<f64>,
    pub long: Vec<f64>,
}

/// Fig 6's verdict: interval length suits the program, so on at least one
/// stream the long setting's median change is the lower and on at least
/// one the higher.
pub fn fig6_verdict(streams: &[Change]) -> Verdict {
    let lower = streams.iter().any(|c| median(&c.long) < median(&c.short));
    let higher = streams.iter().any(|c| median(&c.long) > median(&c.short));
    Verdict::check(lower && higher, || {
        if !lower {
            "no stream varies less at the long interval than at 10K".to_owned()
        } else {
            "no stream varies more at the long interval than at 10K (no phases at the long interval's scale)".to_owned()
        }
    })
}

/// One stream's changes at both settings.
pub fn change_of(s: &Stream, short: usize, long: usize) -> Change {
    Change {
        name: s.name.clone(),
        short: changes(&intervals(&s.tuples, short, &[0.01]), 0),
        long: changes(&intervals(&s.tuples, long, &[0.001]), 0),
    }
}

fn fig6(ctx: &Ctx) -> crate::Result<Outcome> {
    let (short, long) = (ctx.sizes.short as usize, ctx.sizes.long as usize);
    let n = ctx.sizes.long_len();
    let mut per = Vec::new();
    for s in &ctx.values {
        per.push(change_of(&s.load(n)?, short, long));
    }
    // Phases of one and a half long intervals: most long intervals hold
    // the end of one phase and the start of the next.
    let phased = Stream {
        name: "phased-values (phases of 1.5 long intervals)".into(),
        tuples: phased_values(n, long * 3 / 2, 31),
    };
    per.push(change_of(&phased, short, long));
    drop(phased);
    let long_word = if ctx.sizes.quick {
        "100K/0.1% (the paper's 1M, reduced by --quick)"
    } else {
        "1M/0.1%"
    };
    let mut detail = String::from(
        "Perfect profiler; change = |C_i xor C_i+1| / |C_i or C_i+1| between consecutive intervals' candidates. Percentiles: y such that x% of the intervals change less than y.\n\n| stream | setting | intervals | 25% | 50% | 75% | 90% |\n|---|---|---|---|---|---|---|\n",
    );
    let mut series = Vec::new();
    for c in &per {
        for (setting, v) in [("10K/1%", &c.short), (long_word, &c.long)] {
            let mut s = v.clone();
            s.sort_unstable_by(f64::total_cmp);
            let at = |q: f64| {
                s.get(((q * s.len() as f64).ceil() as usize).saturating_sub(1))
                    .copied()
                    .unwrap_or(0.0)
            };
            let _ = writeln!(
                detail,
                "| {} | {setting} | {} | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
                c.name,
                v.len() + 1,
                100.0 * at(0.25),
                100.0 * at(0.5),
                100.0 * at(0.75),
                100.0 * at(0.9)
            );
            let k = s.len().max(1) as f64;
            series.push((
                format!("{}, {setting}", c.name),
                s.iter()
                    .enumerate()
                    .map(|(i, y)| (100.0 * (i + 1) as f64 / k, 100.0 * y))
                    .collect(),
            ));
        }
    }
    let ours = per
        .iter()
        .map(|c| {
            format!(
                "{} {:.0}% -> {:.0}%",
                c.name,
                100.0 * median(&c.short),
                100.0 * median(&c.long)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Outcome {
        ours: format!("median change between consecutive intervals, 10K/1% -> {long_word}: {ours}"),
        verdict: fig6_verdict(&per),
        detail,
        chart: Some(Chart {
            x: "intervals (%)".into(),
            y: "change in candidates (%)".into(),
            log_x: false,
            series,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_count_exactly() {
        let t = |v: u64| Tuple::value(4, v);
        let s = [t(1), t(1), t(2), t(1), t(3), t(3), t(9)];
        let iv = intervals(&s, 3, &[0.5]);
        assert_eq!(iv.len(), 2);
        assert_eq!(iv[0].distinct, 2);
        assert_eq!(iv[0].candidates[0], vec![t(1)]);
        assert_eq!(iv[0].candidate_events[0], 2);
        assert_eq!(iv[1].candidates[0], vec![t(3)]);
        assert_eq!(changes(&iv, 0), vec![1.0]);
    }

    #[test]
    fn fig4_and_fig5_hold_on_a_noisy_stream_and_turn_on_a_broken_one() {
        let noisy = toyvm_profiler::synth::noisy_zipf_stream(400_000, 20_000, 1.0, 0.3, 11);
        let ls = [10_000, 100_000];
        let good = vec![("noisy".to_owned(), rows(&noisy, &ls))];
        assert_eq!(fig4_verdict(&good), Verdict::Holds, "{good:?}");
        assert_eq!(fig5_verdict(&good), Verdict::Holds, "{good:?}");
        // A stream that repeats one block of 50 values in runs of 200: the distinct
        // tuples stop growing (Fig 4 turns), and every value is a candidate (Fig 5
        // turns).
        let block: Vec<Tuple> = (0..400_000u64)
            .map(|i| Tuple::value(8, (i / 200) % 50))
            .collect();
        let bad = vec![("block".to_owned(), rows(&block, &ls))];
        assert!(matches!(fig4_verdict(&bad), Verdict::Differs(_)), "{bad:?}");
        assert!(matches!(fig5_verdict(&bad), Verdict::Differs(_)), "{bad:?}");
    }

    #[test]
    fn fig6_needs_a_phased_stream_to_hold() {
        let (short, long) = (1_000, 10_000);
        let steady = Stream {
            name: "steady".into(),
            tuples: toyvm_profiler::synth::zipf_stream(200_000, 2_000, 1.0, 3),
        };
        let phased = Stream {
            name: "phased".into(),
            tuples: phased_values(200_000, long * 3 / 2, 31),
        };
        let both = [
            change_of(&steady, short, long),
            change_of(&phased, short, long),
        ];
        assert_eq!(fig6_verdict(&both), Verdict::Holds, "{both:?}");
        // Stationary streams only: nothing varies more at the long interval.
        assert!(matches!(fig6_verdict(&both[..1]), Verdict::Differs(_)));
    }
}
