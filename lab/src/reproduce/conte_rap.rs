//! Paper 002 (Conte et al.): Table IV, the arc-weight error of the
//! one-level, two-level and counter schemes by block-weight bucket
//! (formula 2). Paper 004 (Mysore et al., RAP): Figs 2-3 (branching factor
//! and merge period) and Fig 8 (nodes against eps); Fig 4 (the merging
//! event buffer) is in `rap_buffer`, Fig 10 in `rap_hot`, the 2-D tree (section 4) in
//! `rap2d`.

use std::fmt::Write as _;

use super::rapkeys::{FIRST_MERGE, Memory, code_keys, rap_code, worst_case};
use super::streams::{Ctx, run_specs};
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
            claim: "Fig 4: the merging event buffer speeds RAP up (13x on average with 1 KB; 46x with full offline aggregation)",
            run: super::rap_buffer::fig4,
        },
        Figure {
            id: "004-fig8",
            claim: "Fig 8: about 500 or fewer nodes suffice at eps = 10% (code profiles)",
            run: fig8,
        },
        Figure {
            id: "004-fig10",
            claim: "Fig 10 (code profiles): hot ranges (10% of events) are estimated within about 2% on average at eps = 10%, better at eps = 1%",
            run: super::rap_hot::fig10,
        },
        Figure {
            id: "004-fig10-values",
            claim: "Fig 10 (right, load values): hot ranges (10% of events) are estimated within 3.4% on average at eps = 10%, with negligible error at eps = 1%",
            run: super::rap_hot::fig10_values,
        },
        Figure {
            id: "004-2d",
            claim: "Section 4: a 2-D tree over <pc, value> ranges finds the hot pc-value regions",
            run: super::rap2d::rap_2d,
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
        let s = s.load(l)?;
        let specs: Vec<String> = schemes
            .iter()
            .map(|k| format!("conte:scheme={k},interval={l},threshold=0.0001%,period=500"))
            .collect();
        let r = run_specs(&s.tuples, &specs)?;
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

/// The first edge stream (the long setting's length) and its code keys.
fn code_stream(ctx: &Ctx) -> crate::Result<(String, Vec<u32>)> {
    let s = ctx.edges[0].load(ctx.sizes.long_len())?;
    Ok((s.name, code_keys(&s.tuples)))
}

fn fig2(ctx: &Ctx) -> crate::Result<Outcome> {
    let (name, keys) = code_stream(ctx)?;
    let bs = [2u32, 4, 16, 256];
    let res: Vec<Memory> = bs.iter().map(|&b| rap_code(&keys, b, 0.01, 2)).collect();
    let grows = res.windows(2).skip(1).all(|w| w[1].max >= w[0].max);
    let mut detail = String::from(
        "Code keys: branch pcs as 32-bit addresses (R = 2^32), eps = 1%, q = 2.\n\n\
         | b | height | max nodes before a merge | mean | peak | worst case before a merge |\n\
         |---|---|---|---|---|---|\n",
    );
    for (b, r) in bs.iter().zip(&res) {
        let _ = writeln!(
            detail,
            "| {b} | {} | {} | {:.0} | {} | {:.0} |",
            32 / b.trailing_zeros(),
            r.max,
            r.mean,
            r.peak,
            worst_case(*b, 0.01, 2)
        );
    }
    Ok(Outcome {
        ours: format!(
            "{name}, 32-bit code keys: max nodes before a merge {} for b = 2/4/16/256",
            res.iter()
                .map(|r| r.max.to_string())
                .collect::<Vec<_>>()
                .join("/")
        ),
        verdict: Verdict::check(grows, || {
            "memory does not grow with b from b = 4 on this stream".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "branching factor b".into(),
            y: "nodes".into(),
            log_x: true,
            series: vec![
                (
                    "max before a merge".into(),
                    bs.iter()
                        .zip(&res)
                        .map(|(&b, r)| (f64::from(b), r.max as f64))
                        .collect(),
                ),
                (
                    "worst case".into(),
                    bs.iter()
                        .map(|&b| (f64::from(b), worst_case(b, 0.01, 2)))
                        .collect(),
                ),
            ],
        }),
    })
}

fn fig3(ctx: &Ctx) -> crate::Result<Outcome> {
    let (name, keys) = code_stream(ctx)?;
    let qs = [2u64, 4, 8];
    let res: Vec<Memory> = qs.iter().map(|&q| rap_code(&keys, 4, 0.01, q)).collect();
    let bound = |q: u64| worst_case(4, 0.01, q);
    let least = res.iter().map(|r| r.max).min().unwrap_or(0);
    let ok = res[0].max == least
        && qs
            .iter()
            .zip(&res)
            .all(|(&q, r)| (r.max as f64) <= bound(q));
    let mut detail = String::from(
        "Code keys: branch pcs as 32-bit addresses (R = 2^32), b = 4, eps = 1%.\n\n\
         | q | max nodes before a merge | mean | peak | worst case before a merge |\n|---|---|---|---|---|\n",
    );
    for (q, r) in qs.iter().zip(&res) {
        let _ = writeln!(
            detail,
            "| {q} | {} | {:.0} | {} | {:.0} |",
            r.max,
            r.mean,
            r.peak,
            bound(*q)
        );
    }
    let _ = writeln!(
        detail,
        "\nWorst case: just after a merge at most 1 + 4(b+1) h / eps nodes (h = log_b(R) = \
         16), and until the next merge each node splits at most once and a new node only \
         after eps m / h events: (b+1)(1 + 4(b+1) h / eps) + 2bq h / eps (the paper's \
         O(log_b(R)/eps), with the constant of our argument, `profiler/src/rap/trie/merge.rs`; \
         the paper's Fig 3 puts its worst case at eps = 1% at 384k nodes). Merges count from \
         the first at which the split threshold is one event; 'peak' also counts the run-up \
         before, when every new key is refined."
    );
    Ok(Outcome {
        ours: format!(
            "{name}, 32-bit code keys: max nodes before a merge {} for q = 2/4/8 (worst case {:.0} at q = 2)",
            res.iter()
                .map(|r| r.max.to_string())
                .collect::<Vec<_>>()
                .join("/"),
            bound(2)
        ),
        verdict: Verdict::check(ok, || {
            "q = 2 does not need the least memory, or a run exceeds the bound".to_owned()
        }),
        detail,
        chart: Some(Chart {
            x: "merge period ratio q".into(),
            y: "max nodes before a merge".into(),
            log_x: false,
            series: vec![(
                "max nodes before a merge".into(),
                qs.iter()
                    .zip(&res)
                    .map(|(&q, r)| (q as f64, r.max as f64))
                    .collect(),
            )],
        }),
    })
}

fn fig8(ctx: &Ctx) -> crate::Result<Outcome> {
    let epss = [1.0, 2.0, 5.0, 10.0, 20.0];
    let mut series = Vec::new();
    let mut detail = String::from(
        "Code keys: branch pcs as 32-bit addresses (R = 2^32), b = 4, q = 2. The paper's \
         maximum is the largest tree just before a merge, its average the mean of those. \
         The last column is `rap` on the 128-bit edge tuple keys (64 levels), the peak \
         at any moment.\n\n\
         'heavy keys' counts the branch pcs holding at least eps n / h of the stream's n \
         events, which the tree must keep refined to points.\n\n\
         'at n' is the event count at the merge before which the tree was largest.\n\n\
         | stream | eps | max nodes before a merge | at n | mean | heavy keys | 128-bit edge keys, peak |\n\
         |---|---|---|---|---|---|---|\n",
    );
    // At eps = 10%: the largest tree, the merge it preceded, the mean over the merges and
    // the distinct branch pcs before the first merge, of the stream with the largest.
    let (mut at10, mut at10_n, mut mean10, mut early10) = (0, 0, 0.0, 0);
    for s in &ctx.edges {
        let n = ctx.sizes.long_len();
        let s = s.load(n)?;
        let keys = code_keys(&s.tuples);
        let mut per_key: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
        for &k in &keys {
            *per_key.entry(k).or_default() += 1;
        }
        let specs: Vec<String> = epss
            .iter()
            .map(|e| format!("rap:eps={e}%,interval={n},threshold=1%,kinds=edge"))
            .collect();
        let wide = rap_runs(&s.tuples, &specs)?;
        let mut points = Vec::new();
        for (&e, w) in epss.iter().zip(&wide) {
            let m = rap_code(&keys, 4, e / 100.0, 2);
            let heavy_at = e / 100.0 * keys.len() as f64 / 16.0;
            let heavy = per_key.values().filter(|&&c| c as f64 >= heavy_at).count();
            let _ = writeln!(
                detail,
                "| {} | {e}% | {} | {} | {:.0} | {heavy} | {} |",
                s.name, m.max, m.max_at, m.mean, w.0
            );
            if e == 10.0 && m.max > at10 {
                let early: std::collections::HashSet<u32> =
                    keys.iter().take(FIRST_MERGE as usize).copied().collect();
                (at10, at10_n, mean10, early10) = (m.max, m.max_at, m.mean, early.len());
            }
            points.push((e, m.max as f64));
        }
        series.push((s.name.clone(), points));
    }
    Ok(Outcome {
        ours: format!(
            "at most {at10} nodes before a merge at eps = 10% over the edge streams (32-bit code keys)"
        ),
        verdict: Verdict::check(at10 <= 600, || {
            if at10_n == FIRST_MERGE {
                format!(
                    "{at10} nodes at eps = 10%, the tree just before the first merge (at \
                     {FIRST_MERGE} events, the paper's first merge time too): until then the \
                     split threshold eps n / h is at most {:.0} events, and this stream's first \
                     {FIRST_MERGE} events come from {early10} distinct branch pcs, so nearly \
                     each is refined several levels; the mean over the merges is {mean10:.0} \
                     (a workload difference: the tree's size there follows how many branches \
                     the run's first thousand events touch, which the paper does not give)",
                    0.1 * FIRST_MERGE as f64 / 16.0
                )
            } else {
                format!(
                    "{at10} nodes at eps = 10%, just before the merge at {at10_n} events \
                     (mean {mean10:.0} over the merges)"
                )
            }
        }),
        detail,
        chart: Some(Chart {
            x: "eps (%)".into(),
            y: "max nodes before a merge".into(),
            log_x: true,
            series,
        }),
    })
}
