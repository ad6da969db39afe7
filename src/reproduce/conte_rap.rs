//! Paper 002 (Conte et al.): Table IV, the arc-weight error of the
//! one-level, two-level and counter schemes by block-weight bucket
//! (formula 2). Paper 004 (Mysore et al., RAP): Figs 2-3 (branching factor
//! and merge period), Fig 4 (the merging event buffer), Fig 8 (nodes
//! against eps), Fig 10 (hot-range error) and the 2-D tree (section 4).

use std::fmt::Write as _;
use std::time::Instant;

use super::streams::{Ctx, Stream, prefix, run_specs};
use super::{Chart, Figure, Outcome, Verdict};

pub fn figures() -> Vec<Figure> {
    vec![
        Figure {
            id: "002-table4",
            claim: "Table IV: arc-weight error (formula 2) ranks counter <= two-level <= one-level",
            run: table4,
        },
        Figure {
            id: "004-fig2",
            claim: "Fig 2: memory grows with the branching factor b; b = 4 trades memory against tree height",
            run: fig2,
        },
        Figure {
            id: "004-fig3",
            claim: "Figs 2-3: batched merges with a doubling period keep memory bounded; q = 2 needs the least",
            run: fig3,
        },
        Figure {
            id: "004-fig4",
            claim: "Fig 4: the merging event buffer speeds RAP up (13x on average with 1 KB)",
            run: fig4,
        },
        Figure {
            id: "004-fig8",
            claim: "Fig 8: about 500 or fewer nodes suffice at eps = 10% (code profiles)",
            run: fig8,
        },
        Figure {
            id: "004-fig10",
            claim: "Fig 10: hot ranges (10% of events) are estimated within about 2% on average at eps = 10%",
            run: fig10,
        },
        Figure {
            id: "004-2d",
            claim: "Section 4: a 2-D tree over <pc, value> ranges finds the hot pc-value regions",
            run: rap_2d,
        },
    ]
}

fn table4(ctx: &Ctx) -> crate::Result<Outcome> {
    let schemes = ["onelevel", "twolevel", "counter"];
    // As the paper: one profile of the whole run (one interval), every
    // arc the scheme estimates (no candidate threshold to speak of).
    let l = ctx.sizes.short_len();
    let mut detail = String::from(
        "| stream | scheme | blocks | missing | sum of max differences (formula 2) |\n|---|---|---|---|---|\n",
    );
    let mut totals = [0.0f64; 3];
    for s in &ctx.edges {
        let specs: Vec<String> = schemes
            .iter()
            .map(|k| format!("conte:scheme={k},interval={l},threshold=0.0001%,period=500"))
            .collect();
        let r = run_specs(prefix(s, ctx.sizes.short_len()), &specs)?;
        for (k, m) in r.models.iter().enumerate() {
            let buckets = m.summary.arc_weight_error.clone().unwrap_or_default();
            // Formula 2 over every block, lost ones included.
            let sum: f64 = buckets.iter().map(|b| b.sum).sum();
            let blocks: u64 = buckets.iter().map(|b| b.blocks).sum();
            let missing: u64 = buckets.iter().map(|b| b.missing).sum();
            totals[k] += sum;
            let _ = writeln!(
                detail,
                "| {} | {} | {blocks} | {missing} | {sum:.2} |",
                s.name, schemes[k]
            );
        }
    }
    let ok = totals[2] <= totals[1] + 1e-9 && totals[1] <= totals[0] + 1e-9;
    Ok(Outcome {
        ours: format!(
            "summed over the edge streams: one-level {:.2}, two-level {:.2}, counter {:.2}",
            totals[0], totals[1], totals[2]
        ),
        verdict: Verdict::check(ok, || {
            "the schemes do not rank as Table IV on these streams".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "scheme: 0 one-level, 1 two-level, 2 counter".into(),
            y: "summed arc-weight error".into(),
            log_x: false,
            series: vec![(
                "formula 2".into(),
                totals
                    .iter()
                    .enumerate()
                    .map(|(i, &t)| (i as f64, t))
                    .collect(),
            )],
        }),
    })
}

/// Peak nodes (state bytes at 128 bits a node) and hot-range error of
/// each RAP spec over a stream.
fn rap_runs(s: &[toyvm_profiler::Tuple], specs: &[String]) -> crate::Result<Vec<(u64, f64, f64)>> {
    let r = run_specs(s, specs)?;
    Ok(r.models
        .iter()
        .map(|m| {
            let re = m.summary.range_error.unwrap_or_default();
            (
                (m.summary.state_bytes / 16) as u64,
                re.mean_percent,
                re.max_percent,
            )
        })
        .collect())
}

fn code_stream(ctx: &Ctx) -> (&Stream, usize) {
    (&ctx.edges[0], ctx.sizes.long_len())
}

fn fig2(ctx: &Ctx) -> crate::Result<Outcome> {
    let (s, n) = code_stream(ctx);
    let bs = [2u32, 4, 16, 256];
    let specs: Vec<String> = bs
        .iter()
        .map(|b| format!("rap:eps=1%,branching={b},interval={n},threshold=1%,kinds=edge"))
        .collect();
    let res = rap_runs(prefix(s, n), &specs)?;
    let grows = res.windows(2).all(|w| w[1].0 >= w[0].0);
    let mut detail =
        String::from("| b | peak nodes | mean hot-range error | max |\n|---|---|---|---|\n");
    for (b, r) in bs.iter().zip(&res) {
        let _ = writeln!(detail, "| {b} | {} | {:.2}% | {:.2}% |", r.0, r.1, r.2);
    }
    Ok(Outcome {
        ours: format!(
            "{}: peak nodes {} for b = 2/4/16/256",
            s.name,
            res.iter()
                .map(|r| r.0.to_string())
                .collect::<Vec<_>>()
                .join("/")
        ),
        verdict: Verdict::check(grows, || {
            "memory does not grow with b on this stream".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "branching factor b".into(),
            y: "peak nodes".into(),
            log_x: true,
            series: vec![(
                "peak nodes".into(),
                bs.iter()
                    .zip(&res)
                    .map(|(&b, r)| (f64::from(b), r.0 as f64))
                    .collect(),
            )],
        }),
    })
}

fn fig3(ctx: &Ctx) -> crate::Result<Outcome> {
    let (s, n) = code_stream(ctx);
    let qs = [2u32, 4, 8];
    let specs: Vec<String> = qs
        .iter()
        .map(|q| format!("rap:eps=1%,q={q},interval={n},threshold=1%,kinds=edge"))
        .collect();
    let res = rap_runs(prefix(s, n), &specs)?;
    // The paper's worst-case bound, O(log_b(R) / eps) nodes per merge
    // period: b = 4, R = 2^64 tuple keys, eps = 1%, times the b children.
    let bound = (64.0 / 2.0) / 0.01 * 4.0;
    let least = res.iter().map(|r| r.0).min().unwrap_or(0);
    let ok = res[0].0 == least && res.iter().all(|r| (r.0 as f64) <= bound);
    let mut detail = String::from("| q | peak nodes |\n|---|---|\n");
    for (q, r) in qs.iter().zip(&res) {
        let _ = writeln!(detail, "| {q} | {} |", r.0);
    }
    let _ = writeln!(
        detail,
        "\nWorst-case bound used: log_4(2^64) / eps x 4 = {bound:.0} nodes."
    );
    Ok(Outcome {
        ours: format!(
            "{}: peak nodes {} for q = 2/4/8 (bound {bound:.0})",
            s.name,
            res.iter()
                .map(|r| r.0.to_string())
                .collect::<Vec<_>>()
                .join("/")
        ),
        verdict: Verdict::check(ok, || {
            "q = 2 does not need the least memory, or a run exceeds the bound".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "merge period ratio q".into(),
            y: "peak nodes".into(),
            log_x: false,
            series: vec![(
                "peak nodes".into(),
                qs.iter()
                    .zip(&res)
                    .map(|(&q, r)| (f64::from(q), r.0 as f64))
                    .collect(),
            )],
        }),
    })
}

fn fig4(ctx: &Ctx) -> crate::Result<Outcome> {
    let mut detail = String::from(
        "| stream | no buffer (s) | 64-entry buffer (s) | speedup |\n|---|---|---|---|\n",
    );
    let mut speedups = Vec::new();
    for s in ctx.values.iter().chain(&ctx.edges) {
        let tuples = prefix(s, ctx.sizes.long_len());
        let n = tuples.len();
        let time = |buffer: u32| -> crate::Result<f64> {
            let spec =
                toyvm_profiler::parse_spec(&format!("rap:eps=1%,buffer={buffer},interval={n}"))?;
            // Best of three: timing is the figure.
            let mut best = f64::MAX;
            for _ in 0..3 {
                let mut m = spec.build();
                let t = Instant::now();
                m.observe_batch(tuples);
                let _ = m.end_interval();
                best = best.min(t.elapsed().as_secs_f64());
            }
            Ok(best)
        };
        let (a, b) = (time(1)?, time(64)?);
        let x = a / b.max(1e-9);
        speedups.push(x);
        let _ = writeln!(detail, "| {} | {a:.3} | {b:.3} | {x:.2}x |", s.name);
    }
    let mean = speedups.iter().sum::<f64>() / speedups.len().max(1) as f64;
    Ok(Outcome {
        ours: format!(
            "speedup from a 64-entry buffer: mean {mean:.2}x (timed; varies with the machine)"
        ),
        // Holds when within a factor of two of the paper's average.
        verdict: Verdict::check(mean >= 6.5, || {
            format!(
                "{mean:.2}x, far below 13x: the streams here are replayed from memory, so there is no host program whose locality the buffer protects, and the tree walk is cheap"
            )
        }),
        detail,
        chart: Some(Chart {
            x: "stream".into(),
            y: "speedup (x)".into(),
            log_x: false,
            series: vec![(
                "buffer speedup".into(),
                speedups
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| (i as f64, x))
                    .collect(),
            )],
        }),
    })
}

fn fig8(ctx: &Ctx) -> crate::Result<Outcome> {
    let epss = ["1%", "2%", "5%", "10%", "20%"];
    let mut series = Vec::new();
    let mut detail = String::from("| stream | eps | peak nodes |\n|---|---|---|\n");
    let mut at10 = 0;
    for s in &ctx.edges {
        let n = ctx.sizes.long_len();
        let specs: Vec<String> = epss
            .iter()
            .map(|e| format!("rap:eps={e},interval={n},threshold=1%,kinds=edge"))
            .collect();
        let res = rap_runs(prefix(s, n), &specs)?;
        for (e, r) in epss.iter().zip(&res) {
            let _ = writeln!(detail, "| {} | {e} | {} |", s.name, r.0);
        }
        at10 = at10.max(res[3].0);
        series.push((
            s.name.clone(),
            [1.0, 2.0, 5.0, 10.0, 20.0]
                .iter()
                .zip(&res)
                .map(|(&e, r)| (e, r.0 as f64))
                .collect(),
        ));
    }
    Ok(Outcome {
        ours: format!("at most {at10} nodes at eps = 10% over the edge streams"),
        verdict: Verdict::check(at10 <= 600, || format!("{at10} nodes at eps = 10%")),
        detail,
        chart: Some(Chart {
            x: "eps (%)".into(),
            y: "peak nodes".into(),
            log_x: true,
            series,
        }),
    })
}

fn fig10(ctx: &Ctx) -> crate::Result<Outcome> {
    let mut detail =
        String::from("| stream | hot ranges | mean error | max error |\n|---|---|---|---|\n");
    let (mut sum, mut k) = (0.0, 0);
    for s in ctx.edges.iter().chain(&ctx.values) {
        let n = ctx.sizes.long_len();
        let kinds = if s
            .tuples
            .first()
            .is_some_and(|t| t.kind == toyvm_profiler::Kind::Edge)
        {
            "edge"
        } else {
            "value"
        };
        let specs = [format!(
            "rap:eps=10%,hot=10%,interval={n},threshold=1%,kinds={kinds}"
        )];
        let r = run_specs(prefix(s, n), &specs)?;
        let re = r.models[0].summary.range_error.unwrap_or_default();
        let _ = writeln!(
            detail,
            "| {} | {} | {:.2}% | {:.2}% |",
            s.name, re.ranges, re.mean_percent, re.max_percent
        );
        if re.ranges > 0 {
            sum += re.mean_percent;
            k += 1;
        }
    }
    let mean = if k == 0 { f64::NAN } else { sum / f64::from(k) };
    let verdict = if k == 0 {
        Verdict::NotApplicable("no stream had a hot range".into())
    } else {
        Verdict::check(mean <= 3.5, || format!("mean error {mean:.2}%"))
    };
    Ok(Outcome {
        ours: format!("mean hot-range error {mean:.2}% over {k} streams at eps = 10%"),
        verdict,
        detail,
        chart: None,
    })
}

fn rap_2d(ctx: &Ctx) -> crate::Result<Outcome> {
    let s = &ctx.values[2];
    let n = ctx.sizes.short_len();
    let specs = [format!(
        "rap:eps=5%,dims=2,hot=10%,interval={n},threshold=1%,kinds=value"
    )];
    let tuples = prefix(s, n);
    let r = run_specs(tuples, &specs)?;
    let m = &r.models[0];
    let ranges: usize = m.intervals.iter().map(|i| i.ranges.len()).sum();
    let re = m.summary.range_error.unwrap_or_default();
    let mut detail = String::new();
    for i in m.intervals.iter().take(1) {
        for h in &i.ranges {
            let _ = writeln!(detail, "- {}", toyvm_profiler::report::describe_range(h));
        }
    }
    Ok(Outcome {
        ours: format!(
            "{}: {ranges} hot 2-D ranges, mean estimate error {:.2}%, {} state bytes",
            s.name, re.mean_percent, m.summary.state_bytes
        ),
        verdict: Verdict::check(ranges > 0, || "no hot 2-D range found".to_owned()),
        detail: if detail.is_empty() {
            "No ranges.\n".into()
        } else {
            format!("The first interval's hot ranges:\n\n{detail}")
        },
        chart: None,
    })
}
