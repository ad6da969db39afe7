//! Paper 000 (Narayanasamy et al., "Catching Accurate Profiles in
//! Hardware"): the single hash with resetting and retaining (section
//! 5.6.2, Fig 7), the false-positive bound (6.2, Fig 9), the design space
//! (6.3, Figs 10-11), the best configuration (6.4, Figs 12-14).
//!
//! The papers' streams are SPEC programs; ours are those of [`super::streams`].
//! All multi-hash configurations split 2,048 counters evenly over their
//! tables and retain, as section 6.3 does.

use std::fmt::Write as _;

use toyvm_profiler::multihash::false_positive_bound;

use super::streams::{Ctx, Source, run_specs};
use super::{Chart, Figure, Outcome, Verdict, pct};

pub fn figures() -> Vec<Figure> {
    vec![
        Figure {
            id: "000-fig7",
            claim: "Single hash (Fig 7): resetting (R) and retaining (P) each lower the error, R1-P1 lowest",
            run: fig7,
        },
        Figure {
            id: "000-fig9",
            claim: "Fig 9 / 6.2: P(false positive) <= (100n/(tZ))^n, a loose upper bound; at 1,000 entries it falls to 4 tables, then rises",
            run: fig9,
        },
        Figure {
            id: "000-fig10",
            claim: "Fig 10 (10K/1%, 2K counters, 1-8 tables): C1-R0 performs best; immediate reset adds false negatives as tables grow",
            run: |c| fig10_11(c, false),
        },
        Figure {
            id: "000-fig11",
            claim: "Fig 11 (1M/0.1%): C1-R0 performs best; without conservative update error stays high",
            run: |c| fig10_11(c, true),
        },
        Figure {
            id: "000-fig12",
            claim: "Fig 12 (C1-R0, 1-16 tables): 4 tables best, 8 and 16 worse, beats the best single hash; average error under 1%",
            run: fig12,
        },
        Figure {
            id: "000-fig13",
            claim: "Fig 13 (1M/0.1%, per interval): multi-hash (4 tables) lowers the size and number of error spikes of the best single hash",
            run: fig13,
        },
        Figure {
            id: "000-fig14",
            claim: "Fig 14 (edge profiles): 4 tables significantly outperform other table counts and the best single hash",
            run: fig14,
        },
    ]
}

/// `(interval, threshold)` of the short (10K/1%) or long (1M/0.1%) setting.
fn setting(ctx: &Ctx, long: bool) -> (u64, &'static str) {
    if long {
        (ctx.sizes.long, "0.1%")
    } else {
        (ctx.sizes.short, "1%")
    }
}

fn stream_len(ctx: &Ctx, long: bool) -> usize {
    if long {
        ctx.sizes.long_len()
    } else {
        ctx.sizes.short_len()
    }
}

fn multihash(
    tables: u32,
    cu: bool,
    reset: bool,
    interval: u64,
    threshold: &str,
    kinds: &str,
) -> String {
    let on = |b: bool| if b { "on" } else { "off" };
    format!(
        "multihash:tables={tables},entries=2048,cu={},reset={},retain=on,interval={interval},threshold={threshold},kinds={kinds}",
        on(cu),
        on(reset)
    )
}

fn bsh(interval: u64, threshold: &str, kinds: &str) -> String {
    format!("singlehash:entries=2048,interval={interval},threshold={threshold},kinds={kinds}")
}

/// Each spec's summary averaged over `streams` (E and its parts).
#[derive(Clone, Copy, Debug, Default)]
struct Mean {
    error: f64,
    fp: f64,
    fn_: f64,
}

fn means(ctx: &Ctx, streams: &[Source], long: bool, specs: &[String]) -> crate::Result<Vec<Mean>> {
    let mut sums = vec![Mean::default(); specs.len()];
    let len = stream_len(ctx, long);
    for s in streams {
        let r = run_specs(&s.load(len)?.tuples, specs)?;
        for (m, out) in sums.iter_mut().zip(&r.models) {
            let x = &out.summary.errors;
            m.error += x.error;
            m.fp += x.false_positive;
            m.fn_ += x.false_negative;
        }
    }
    let n = streams.len().max(1) as f64;
    Ok(sums
        .into_iter()
        .map(|m| Mean {
            error: m.error / n,
            fp: m.fp / n,
            fn_: m.fn_ / n,
        })
        .collect())
}

fn table(header: &str, rows: &[(String, Mean)]) -> String {
    let mut t =
        format!("| {header} | E | false positives | false negatives |\n|---|---|---|---|\n");
    for (name, m) in rows {
        let _ = writeln!(
            t,
            "| {name} | {} | {} | {} |",
            pct(m.error),
            pct(m.fp),
            pct(m.fn_)
        );
    }
    t
}

fn fig7(ctx: &Ctx) -> crate::Result<Outcome> {
    let mut detail = String::new();
    let mut ours = Vec::new();
    let mut ok = true;
    let mut series = Vec::new();
    for long in [false, true] {
        let (l, t) = setting(ctx, long);
        let names = ["R0-P0", "R1-P0", "R0-P1", "R1-P1"];
        let specs: Vec<String> = [(false, false), (true, false), (false, true), (true, true)]
            .iter()
            .map(|&(r, p)| {
                let on = |b: bool| if b { "on" } else { "off" };
                format!(
                    "singlehash:entries=2048,reset={},retain={},interval={l},threshold={t},kinds=value",
                    on(r),
                    on(p)
                )
            })
            .collect();
        let m = means(ctx, &ctx.values, long, &specs)?;
        let e: Vec<f64> = m.iter().map(|x| x.error).collect();
        let best = e.iter().copied().fold(f64::MAX, f64::min);
        let holds = e[3] <= best + 1e-9 && e[1] < e[0] && e[2] < e[0];
        ok &= holds;
        let what = if long {
            ctx.sizes.long_words()
        } else {
            "10K/1%".to_owned()
        };
        ours.push(format!(
            "{what}: E {}",
            names
                .iter()
                .zip(&e)
                .map(|(n, x)| format!("{n} {}", pct(*x)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let _ = writeln!(detail, "Mean over the value streams, {what}:\n");
        detail.push_str(&table(
            "configuration",
            &names
                .iter()
                .map(|n| n.to_string())
                .zip(m)
                .collect::<Vec<_>>(),
        ));
        detail.push('\n');
        series.push((
            format!("E (%), {what}"),
            e.iter()
                .enumerate()
                .map(|(i, x)| (i as f64, x * 100.0))
                .collect(),
        ));
    }
    Ok(Outcome {
        ours: ours.join("; "),
        verdict: Verdict::check(ok, || {
            "on these streams the options do not each lower the error, or R1-P1 is not the lowest (see the table)".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "configuration: 0 R0-P0, 1 R1-P0, 2 R0-P1, 3 R1-P1".into(),
            y: "mean E (%)".into(),
            log_x: false,
            series,
        }),
    })
}

/// Section 6.2's bound ([`false_positive_bound`]) for `n` tables sharing
/// `z` counters at a 1% threshold.
fn fp_bound(n: u32, z: u32, t_percent: f64) -> f64 {
    false_positive_bound(n as usize, z as usize, t_percent)
}

fn fig9(ctx: &Ctx) -> crate::Result<Outcome> {
    let sizes = [500u32, 1000, 2000];
    let tables: Vec<u32> = (1..=8).collect();
    let mut series = Vec::new();
    for &z in &sizes {
        series.push((
            format!("bound, {z} entries"),
            tables
                .iter()
                .map(|&n| (f64::from(n), fp_bound(n, z, 1.0) * 100.0))
                .collect(),
        ));
    }
    let argmin_1000 = tables
        .iter()
        .copied()
        .min_by(|&a, &b| fp_bound(a, 1000, 1.0).total_cmp(&fp_bound(b, 1000, 1.0)))
        .unwrap_or(1);
    // Measured: the share of the interval's distinct cold tuples (below the
    // threshold) a bare multi-hash (no conservative update, shielding,
    // retaining or reset) reports, on the widest value stream at 10K/1%.
    let len = ctx.sizes.short_len();
    let stream = ctx.values[0].load(len)?;
    let tuples = &stream.tuples[..];
    let l = ctx.sizes.short;
    let cold = cold_distinct(tuples, l, l / 100);
    let mut detail = String::from("| entries | tables | bound | measured |\n|---|---|---|---|\n");
    let mut within = true;
    let mut measured_1000 = Vec::new();
    for &z in &sizes {
        let rates = fp_rates(tuples, l, z, &tables, cold, true)?;
        let mut pts = Vec::new();
        for (&n, &p) in tables.iter().zip(&rates) {
            let b = fp_bound(n, z, 1.0);
            within &= p <= b + 1e-12;
            if z == 1000 {
                measured_1000.push((n, p));
            }
            pts.push((f64::from(n), p * 100.0));
            let _ = writeln!(
                detail,
                "| {z} | {n} | {:.4}% | {:.4}% |",
                b * 100.0,
                p * 100.0
            );
        }
        series.push((format!("measured, {z} entries ({})", stream.name), pts));
    }
    let shape = fig9_shape(&measured_1000);
    let ok = argmin_1000 == 4 && within && shape.ok;
    let ours = format!(
        "bound at 1,000 entries lowest at {argmin_1000} tables; measured rate at 1,000 entries {} (lowest at {} tables, {} at 1 table, {} at 8); within the bound for all {} configurations: {}",
        if shape.ok {
            "falls, then rises"
        } else {
            "does not fall, then rise"
        },
        shape.argmin,
        pct(shape.first),
        pct(shape.last),
        sizes.len() * tables.len(),
        if within { "yes" } else { "no" }
    );
    Ok(Outcome {
        ours,
        verdict: Verdict::check(ok, || {
            [
                (!within).then_some("a measured rate exceeds the bound (see the table)"),
                (!shape.ok).then_some(
                    "the measured rate at 1,000 entries does not fall to a minimum between 2 and 6 tables and rise again by 1.5x at 8",
                ),
                (argmin_1000 != 4).then_some("the bound is not lowest at 4 tables"),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ")
        }),
        detail,
        chart: Some(Chart {
            x: "hash tables".into(),
            y: "P(false positive) (%)".into(),
            log_x: false,
            series,
        }),
    })
}

/// The false-positive rate of a bare multi-hash (no conservative update,
/// shielding, retaining or reset) with `z` entries split over each of
/// `tables` tables (with `split` false, `z` entries in every table: a
/// model that does not split its counters, for the tests): reported
/// tuples below the threshold over `cold` distinct cold tuples, at `l`
/// tuples per interval and a 1% threshold.
fn fp_rates(
    tuples: &[toyvm_profiler::Tuple],
    l: u64,
    z: u32,
    tables: &[u32],
    cold: u64,
    split: bool,
) -> crate::Result<Vec<f64>> {
    let specs: Vec<String> = tables
        .iter()
        .map(|&n| {
            let entries = if split { z } else { z * n };
            format!(
                "multihash:tables={n},entries={entries},cu=off,shield=off,retain=off,reset=off,interval={l},threshold=1%,kinds=value"
            )
        })
        .collect();
    let r = run_specs(tuples, &specs)?;
    Ok(r.models
        .iter()
        .map(|m| {
            let fps: u64 = m.intervals.iter().map(|i| i.error.false_positives).sum();
            fps as f64 / cold.max(1) as f64
        })
        .collect())
}

/// The shape of a measured false-positive curve over table counts.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// Falls from one table to a minimum at 2-6 tables, and the last
    /// point is at least 1.5x that minimum.
    ok: bool,
    argmin: u32,
    first: f64,
    last: f64,
}

/// The section 6.4.1 shape of Fig 9's 1,000-entry curve in measured
/// rates: lowest between 2 and 6 tables, higher at one table and rising
/// again (1.5x) by the last. `(tables, rate)` in table order.
fn fig9_shape(curve: &[(u32, f64)]) -> Shape {
    let (argmin, min) = curve
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, 0.0));
    let first = curve.first().map_or(0.0, |c| c.1);
    let last = curve.last().map_or(0.0, |c| c.1);
    Shape {
        ok: (2..=6).contains(&argmin) && first > min && last >= 1.5 * min && min > 0.0,
        argmin,
        first,
        last,
    }
}

/// Distinct tuples below `threshold` occurrences, summed over the
/// intervals of length `l`.
fn cold_distinct(tuples: &[toyvm_profiler::Tuple], l: u64, threshold: u64) -> u64 {
    let mut total = 0;
    for chunk in tuples.chunks(l.max(1) as usize) {
        let mut counts: std::collections::HashMap<toyvm_profiler::Tuple, u64> =
            std::collections::HashMap::new();
        for t in chunk {
            *counts.entry(*t).or_insert(0) += 1;
        }
        total += counts.values().filter(|&&c| c < threshold).count() as u64;
    }
    total
}

fn fig10_11(ctx: &Ctx, long: bool) -> crate::Result<Outcome> {
    let (l, t) = setting(ctx, long);
    let tables = [1u32, 2, 4, 8];
    let configs = [
        ("C0-R0", false, false),
        ("C1-R0", true, false),
        ("C0-R1", false, true),
        ("C1-R1", true, true),
    ];
    let mut specs = Vec::new();
    for &n in &tables {
        for &(_, c, r) in &configs {
            specs.push(multihash(n, c, r, l, t, "value"));
        }
    }
    let m = means(ctx, &ctx.values, long, &specs)?;
    let at = |i: usize, k: usize| m[i * configs.len() + k];
    let mut rows = Vec::new();
    for (i, &n) in tables.iter().enumerate() {
        for (k, (name, _, _)) in configs.iter().enumerate() {
            rows.push((format!("{n} tables, {name}"), at(i, k)));
        }
    }
    let grid: Vec<[Mean; 4]> = (0..tables.len())
        .map(|i| [at(i, 0), at(i, 1), at(i, 2), at(i, 3)])
        .collect();
    let d = design(&tables, &grid);
    let fn_reset = |i: usize| (at(i, 2).fn_ + at(i, 3).fn_) / 2.0;
    let reset_fn_grows = fn_reset(tables.len() - 1) > fn_reset(0);
    let series = configs
        .iter()
        .enumerate()
        .map(|(k, (name, _, _))| {
            (
                name.to_string(),
                tables
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| (f64::from(n), at(i, k).error * 100.0))
                    .collect(),
            )
        })
        .collect();
    let what = if long {
        ctx.sizes.long_words()
    } else {
        "10K/1%".to_owned()
    };
    let ours = format!(
        "{what}: C1-R0 lowest at {} of {} table counts from 2 up (where conservative update acts; lowest: {}; E {} at 4 tables); without conservative update E at least {:.1}x C1's from 2 tables up; reset's false negatives {} -> {} from 1 to 8 tables",
        d.c1r0_best,
        d.counted,
        d.lowest.join(", "),
        pct(at(2, 1).error),
        d.c0_over_c1,
        pct(fn_reset(0)),
        pct(fn_reset(tables.len() - 1))
    );
    Ok(Outcome {
        ours,
        verdict: design_verdict(&d, long, reset_fn_grows),
        detail: format!(
            "Mean over the value streams:\n\n{}",
            table("configuration", &rows)
        ),
        chart: Some(Chart {
            x: "hash tables (2,048 counters in all)".into(),
            y: "mean E (%)".into(),
            log_x: true,
            series,
        }),
    })
}

/// How the four configurations of Figs 10-11 compare at the table counts
/// where conservative update acts (2 tables and up: with one table it
/// updates the one counter either way).
#[derive(Clone, Debug)]
struct Design {
    /// Table counts counted.
    counted: usize,
    /// Of those, where C1-R0 has the lowest E.
    c1r0_best: usize,
    /// The lowest configuration at each counted table count (`4: C1-R0`).
    lowest: Vec<String>,
    /// The smallest ratio, over the counted table counts, of the lower
    /// C0 configuration's E to the higher C1 configuration's.
    c0_over_c1: f64,
}

const CONFIGS: [&str; 4] = ["C0-R0", "C1-R0", "C0-R1", "C1-R1"];

/// `grid[i]` holds E of C0-R0, C1-R0, C0-R1, C1-R1 at `tables[i]`.
fn design(tables: &[u32], grid: &[[Mean; 4]]) -> Design {
    let mut d = Design {
        counted: 0,
        c1r0_best: 0,
        lowest: Vec::new(),
        c0_over_c1: f64::INFINITY,
    };
    for (&n, g) in tables.iter().zip(grid).filter(|(n, _)| **n >= 2) {
        d.counted += 1;
        let best = (0..4)
            .min_by(|&a, &b| g[a].error.total_cmp(&g[b].error))
            .unwrap_or(0);
        if g[1].error <= g[best].error + 1e-9 {
            d.c1r0_best += 1;
        }
        d.lowest.push(format!("{n}: {}", CONFIGS[best]));
        let c0 = g[0].error.min(g[2].error);
        let c1 = g[1].error.max(g[3].error).max(1e-12);
        d.c0_over_c1 = d.c0_over_c1.min(c0 / c1);
    }
    d
}

/// Fig 10: C1-R0 lowest at most counted table counts, reset's false
/// negatives growing with the tables. Fig 11 (`long`): C1-R0 lowest at
/// most, and without conservative update the error stays high: both C0
/// configurations at least twice both C1 ones at every counted count.
fn design_verdict(d: &Design, long: bool, reset_fn_grows: bool) -> Verdict {
    let most = d.c1r0_best * 2 > d.counted;
    let high = d.c0_over_c1 >= 2.0;
    let ok = most && if long { high } else { reset_fn_grows };
    Verdict::check(ok, || {
        let mut w = Vec::new();
        if !most {
            w.push(format!(
                "C1-R0 is the lowest at {} of {} table counts from 2 up on these streams (lowest: {})",
                d.c1r0_best,
                d.counted,
                d.lowest.join(", ")
            ));
        }
        if long && !high {
            w.push(format!(
                "without conservative update the error does not stay high: at some table count the better configuration without it (C0-R0, C0-R1) has only {:.1}x the error of the worse with it (C1-R0, C1-R1)",
                d.c0_over_c1
            ));
        }
        if !long && !reset_fn_grows {
            w.push(
                "immediate reset's false negatives do not grow with the tables on these streams"
                    .to_owned(),
            );
        }
        w.join("; ")
    })
}

/// Per setting (short, long): C1-R0's means by table count and the best
/// single hash's; the detail tables; the chart's lines.
type BestConfig = (
    Vec<[Vec<Mean>; 2]>,
    String,
    Vec<crate::compare::chart::Line>,
);

/// E of C1-R0 at each table count and of the best single hash, per setting.
fn best_config(
    ctx: &Ctx,
    streams: &[Source],
    kinds: &str,
    tables: &[u32],
) -> crate::Result<BestConfig> {
    let mut out = Vec::new();
    let mut detail = String::new();
    let mut series = Vec::new();
    for long in [false, true] {
        let (l, t) = setting(ctx, long);
        let mut specs: Vec<String> = tables
            .iter()
            .map(|&n| multihash(n, true, false, l, t, kinds))
            .collect();
        specs.push(bsh(l, t, kinds));
        let m = means(ctx, streams, long, &specs)?;
        let what = if long {
            ctx.sizes.long_words()
        } else {
            "10K/1%".to_owned()
        };
        let mut rows: Vec<(String, Mean)> = tables
            .iter()
            .map(|n| format!("{n} tables"))
            .zip(m.iter().copied())
            .collect();
        rows.push(("best single hash".to_owned(), m[tables.len()]));
        let _ = writeln!(
            detail,
            "Mean over the {kinds} streams, {what}:\n\n{}",
            table("C1-R0", &rows)
        );
        series.push((
            format!("C1-R0, {what}"),
            tables
                .iter()
                .zip(&m)
                .map(|(&n, x)| (f64::from(n), x.error * 100.0))
                .collect(),
        ));
        out.push([m[..tables.len()].to_vec(), vec![m[tables.len()]]]);
    }
    Ok((out, detail, series))
}

fn fig12(ctx: &Ctx) -> crate::Result<Outcome> {
    let tables = [1u32, 2, 4, 8, 16];
    let (res, detail, series) = best_config(ctx, &ctx.values, "value", &tables)?;
    let mut ok = true;
    let mut ours = Vec::new();
    let mut why = Vec::new();
    for (k, [mh, bsh]) in res.iter().enumerate() {
        let e: Vec<f64> = mh.iter().map(|m| m.error).collect();
        let best = e.iter().copied().fold(f64::MAX, f64::min);
        let four_best = e[2] <= best + 0.001;
        let more_worse = e[3] > e[2] && e[4] > e[2];
        let beats = e[2] < bsh[0].error;
        let under = e[2] < 0.01;
        ok &= four_best && more_worse && beats && under;
        let what = if k == 1 { "long" } else { "10K/1%" };
        if !four_best {
            why.push(format!("{what}: 4 tables is not the lowest"));
        }
        if !more_worse {
            why.push(format!("{what}: 8 or 16 tables are not worse than 4"));
        }
        if !under {
            why.push(format!(
                "{what}: E at 4 tables is {} (not under 1%)",
                pct(e[2])
            ));
        }
        if !beats {
            why.push(format!("{what}: the best single hash is as good"));
        }
        ours.push(format!(
            "{what}: E {} by tables 1/2/4/8/16, best single hash {}",
            e.iter().map(|x| pct(*x)).collect::<Vec<_>>().join("/"),
            pct(bsh[0].error)
        ));
    }
    Ok(Outcome {
        ours: ours.join("; "),
        verdict: Verdict::check(ok, || format!("{} on these streams", why.join("; "))),
        detail,
        chart: Some(Chart {
            x: "hash tables (2,048 counters in all)".into(),
            y: "mean E (%)".into(),
            log_x: true,
            series,
        }),
    })
}

fn fig13(ctx: &Ctx) -> crate::Result<Outcome> {
    let (l, t) = setting(ctx, true);
    let specs = [bsh(l, t, "value"), multihash(4, true, false, l, t, "value")];
    let mut series = Vec::new();
    let mut detail = String::from(
        "| stream | model | max E | intervals with E > 5% | mean E |\n|---|---|---|---|---|\n",
    );
    let (mut spikes, mut peaks) = ([0usize; 2], [0f64; 2]);
    for s in &ctx.values {
        let s = s.load(ctx.sizes.long_len())?;
        let r = run_specs(&s.tuples, &specs)?;
        for (k, m) in r.models.iter().enumerate() {
            let e: Vec<f64> = m.intervals.iter().map(|i| i.error.error).collect();
            let max = e.iter().copied().fold(0.0, f64::max);
            let n = e.iter().filter(|&&x| x > 0.05).count();
            spikes[k] += n;
            peaks[k] = peaks[k].max(max);
            let name = if k == 0 {
                "best single hash"
            } else {
                "multi-hash, 4 tables"
            };
            let _ = writeln!(
                detail,
                "| {} | {name} | {} | {n} | {} |",
                s.name,
                pct(max),
                pct(m.summary.errors.error)
            );
            series.push((
                format!("{}, {}", s.name, name),
                e.iter()
                    .enumerate()
                    .map(|(i, x)| (i as f64, x * 100.0))
                    .collect(),
            ));
        }
    }
    let ok = peaks[1] <= peaks[0] && spikes[1] <= spikes[0];
    Ok(Outcome {
        ours: format!(
            "{}: peak E {} -> {}, intervals above 5% {} -> {} (best single hash -> multi-hash)",
            ctx.sizes.long_words(),
            pct(peaks[0]),
            pct(peaks[1]),
            spikes[0],
            spikes[1]
        ),
        verdict: Verdict::check(ok, || {
            "multi-hash has higher or more spikes on these streams".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "interval".into(),
            y: "E (%)".into(),
            log_x: false,
            series,
        }),
    })
}

fn fig14(ctx: &Ctx) -> crate::Result<Outcome> {
    let tables = [1u32, 2, 4, 8];
    let (res, detail, series) = best_config(ctx, &ctx.edges, "edge", &tables)?;
    let mut ok = true;
    let mut ours = Vec::new();
    for (k, [mh, bsh]) in res.iter().enumerate() {
        let e: Vec<f64> = mh.iter().map(|m| m.error).collect();
        let best = e.iter().copied().fold(f64::MAX, f64::min);
        ok &= e[2] <= best + 0.001 && e[2] <= bsh[0].error;
        let what = if k == 1 { "long" } else { "10K/1%" };
        ours.push(format!(
            "{what}: E {} by tables 1/2/4/8, best single hash {}",
            e.iter().map(|x| pct(*x)).collect::<Vec<_>>().join("/"),
            pct(bsh[0].error)
        ));
    }
    Ok(Outcome {
        ours: ours.join("; "),
        verdict: Verdict::check(ok, || {
            "4 tables are not the lowest, or the best single hash does as well, on these edge streams".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "hash tables (2,048 counters in all)".into(),
            y: "mean E (%)".into(),
            log_x: true,
            series,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn design_counts_from_two_tables_and_checks_that_c0_stays_high() {
        let m = |e: f64| Mean {
            error: e,
            fp: e,
            fn_: 0.0,
        };
        let tables = [1, 2, 4, 8];
        // The paper's picture: C1-R0 lowest from 2 tables, C0 far above.
        let good = [
            [m(0.5), m(0.5), m(0.3), m(0.3)],
            [m(0.6), m(0.02), m(0.4), m(0.03)],
            [m(0.9), m(0.01), m(0.5), m(0.02)],
            [m(1.0), m(0.03), m(0.7), m(0.04)],
        ];
        let d = design(&tables, &good);
        assert_eq!((d.counted, d.c1r0_best), (3, 3));
        assert_eq!(design_verdict(&d, true, true), Verdict::Holds);
        // A model whose conservative update does nothing (C1 = C0): the second
        // half of the claim turns the verdict, though C1-R0 still ties for lowest.
        let no_cu: Vec<[Mean; 4]> = good.iter().map(|g| [g[0], g[0], g[2], g[2]]).collect();
        let d = design(&tables, &no_cu);
        assert!(matches!(
            design_verdict(&d, true, true),
            Verdict::Differs(_)
        ));
        // One table does not count: C1-R0 lowest only there is no majority.
        let one = [
            [m(0.5), m(0.1), m(0.3), m(0.3)],
            [m(0.6), m(0.05), m(0.4), m(0.03)],
            [m(0.9), m(0.05), m(0.5), m(0.02)],
            [m(1.0), m(0.05), m(0.7), m(0.04)],
        ];
        let d = design(&tables, &one);
        assert_eq!(d.c1r0_best, 0);
        assert!(matches!(
            design_verdict(&d, false, true),
            Verdict::Differs(_)
        ));
    }

    #[test]
    fn fig9_shape_holds_for_split_counters_and_turns_when_tables_do_not_share_them() {
        let tuples = toyvm_profiler::synth::noisy_zipf_stream(80_000, 20_000, 1.0, 0.3, 11);
        let l = 10_000;
        let tables: Vec<u32> = (1..=8).collect();
        let cold = cold_distinct(&tuples, l, l / 100);
        let curve = |split| {
            let r = fp_rates(&tuples, l, 1000, &tables, cold, split).unwrap();
            tables.iter().copied().zip(r).collect::<Vec<_>>()
        };
        let good = curve(true);
        assert!(fig9_shape(&good).ok, "{good:?}");
        // Tables that each keep all 1,000 entries: more tables only filter more.
        let broken = curve(false);
        assert!(!fig9_shape(&broken).ok, "{broken:?}");
    }
}
