//! SVG charts of a comparison (plotters, SVG backend only):
//! - [`summary`]: speedup over the interpreter per program and model
//!   (grouped bars), above error against state bytes per configuration
//!   (log scale, Pareto-optimal configurations filled and joined);
//! - [`intervals`]: error per interval of two models side by side, one line
//!   per program, as the multi-hash paper's Figure 13 shows them;
//! - [`study`]: speedup relative to perfect against load and state bytes
//!   for the `--synth` study.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::report::{IntervalSeries, Report, Status};

/// Plotters words a failed write as `backend error: Drawing backend error:
/// <the I/O error>`: keep only the cause, for a person.
fn fail<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> String + '_ {
    move |e| {
        let text = e.to_string();
        let cause = text.rsplit("error: ").next().unwrap_or(&text);
        format!("cannot write the chart to {}: {cause}", path.display())
    }
}

fn color(i: usize) -> RGBColor {
    // Colors that stay apart on white, then the 99-color palette.
    const C: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    C.get(i).copied().unwrap_or_else(|| {
        let (r, g, b) = Palette99::pick(i).rgb();
        RGBColor(r, g, b)
    })
}

/// Speedup bars and the error-vs-state scatter in one SVG.
pub fn summary(report: &Report, path: &Path) -> Result<(), String> {
    let err = fail(path);
    let root = SVGBackend::new(path, (1280, 1100)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let (top, bottom) = root.split_vertically(560);
    speedup_bars(report, &top).map_err(&err)?;
    error_vs_state(report, &bottom).map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn speedup_bars<DB: DrawingBackend>(
    report: &Report,
    area: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let programs: Vec<&str> = report.programs.iter().map(|p| p.name.as_str()).collect();
    let models: Vec<&str> = report
        .summary
        .iter()
        .filter(|s| s.model != "none")
        .map(|s| s.label.as_str())
        .collect();
    let value = |p: &str, m: &str| {
        report
            .rows
            .iter()
            .find(|r| r.program == p && r.label == m && r.status == Status::Ok)
            .and_then(|r| r.speedup_vs_interpreter)
    };
    let ymax = report
        .rows
        .iter()
        .filter_map(|r| r.speedup_vs_interpreter)
        .fold(1.0f64, f64::max)
        * 1.15;
    // Program i's bars are centered on x = i, where the axis puts a label
    // (asked for one label per program, the axis picks a step of 1).
    let n = programs.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Speedup over the interpreter (JIT driven by each model; failed pairs left out)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..ymax)?;
    let names = programs.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.max(2))
        .x_label_formatter(&|x| {
            let k = x.round();
            if (x - k).abs() > 1e-6 || k < 0.0 {
                return String::new();
            }
            names
                .get(k as usize)
                .map_or_else(String::new, |s| (*s).to_owned())
        })
        .y_desc("speedup (x)")
        .draw()?;
    let width = 0.8 / models.len().max(1) as f64;
    for (mi, m) in models.iter().enumerate() {
        let c = color(mi);
        let bars: Vec<Rectangle<(f64, f64)>> = programs
            .iter()
            .enumerate()
            .filter_map(|(pi, p)| {
                let v = value(p, m)?;
                let x0 = pi as f64 - 0.4 + mi as f64 * width;
                Some(Rectangle::new([(x0, 0.0), (x0 + width, v)], c.filled()))
            })
            .collect();
        chart
            .draw_series(bars)?
            .label(*m)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart.draw_series(LineSeries::new(
        [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
        BLACK.stroke_width(1),
    ))?;
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

fn error_vs_state<DB: DrawingBackend>(
    report: &Report,
    area: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let pts: Vec<(f64, f64, &str, bool)> = report
        .summary
        .iter()
        .filter(|s| s.model != "none")
        .filter_map(|s| {
            Some((
                (s.state_bytes as f64).max(1.0),
                s.error? * 100.0,
                s.label.as_str(),
                s.pareto,
            ))
        })
        .collect();
    let (mut lo, mut hi) = pts
        .iter()
        .fold((f64::MAX, 1.0f64), |(lo, hi), p| (lo.min(p.0), hi.max(p.0)));
    if lo > hi {
        lo = 1.0;
    }
    lo /= 2.0;
    hi *= 2.0;
    let ymax = pts.iter().map(|p| p.1).fold(1.0f64, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(
            "Mean error E against perfect vs modeled state (filled, joined: Pareto-optimal)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("state (bytes, log scale)")
        .y_desc("mean E (%)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    let mut front: Vec<(f64, f64)> = pts.iter().filter(|p| p.3).map(|p| (p.0, p.1)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart.draw_series(LineSeries::new(front, BLACK.mix(0.5).stroke_width(1)))?;
    for (i, (x, y, label, pareto)) in pts.iter().enumerate() {
        let c = color(i);
        let style = if *pareto {
            c.filled()
        } else {
            c.stroke_width(2)
        };
        chart.draw_series(std::iter::once(
            EmptyElement::at((*x, *y))
                + Circle::new((0, 0), 5, style)
                + Text::new((*label).to_owned(), (8, -8), ("sans-serif", 13)),
        ))?;
    }
    Ok(())
}

/// Error per interval for two configurations side by side.
pub fn intervals(series: &[IntervalSeries], models: [&str; 2], path: &Path) -> Result<(), String> {
    let err = fail(path);
    let root = SVGBackend::new(path, (1400, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let panels = root.split_evenly((1, 2));
    let ymax = series
        .iter()
        .filter(|s| models.contains(&s.label.as_str()))
        .flat_map(|s| s.points.iter().map(|p| p.error * 100.0))
        .fold(1.0f64, f64::max)
        * 1.1;
    for (panel, model) in panels.iter().zip(models) {
        interval_panel(series, model, ymax, panel).map_err(&err)?;
    }
    root.present().map_err(&err)?;
    Ok(())
}

fn interval_panel<DB: DrawingBackend>(
    series: &[IntervalSeries],
    model: &str,
    ymax: f64,
    area: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let mine: Vec<&IntervalSeries> = series.iter().filter(|s| s.label == model).collect();
    let xmax = mine
        .iter()
        .map(|s| s.points.len())
        .max()
        .unwrap_or(1)
        .max(2) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{model}: error per interval"), ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(0f64..xmax, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("interval")
        .y_desc("E (%)")
        .draw()?;
    for (i, s) in mine.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(
                s.points
                    .iter()
                    .enumerate()
                    .map(|(k, p)| (k as f64, p.error * 100.0)),
                c.stroke_width(2),
            ))?
            .label(s.program.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// One series of the study chart: a name and its points `(x, y, low,
/// high)`, joined in x order.
type StudySeries = (String, Vec<(f64, f64, f64, f64)>);

/// The study: speedup relative to perfect, with its per-round range as
/// error bars, against load (the hot set over the model's capacity, one
/// line per configuration) above the same against modeled state bytes
/// (one line per workload). Legends sit beside the plots, not on them.
pub fn study(s: &super::study::Study, path: &Path) -> Result<(), String> {
    let err = fail(path);
    let mut by_model: Vec<StudySeries> = Vec::new();
    let mut by_workload: Vec<StudySeries> = Vec::new();
    let push = |v: &mut Vec<StudySeries>, key: &str, p: (f64, f64, f64, f64)| match v
        .iter_mut()
        .find(|(k, _)| k == key)
    {
        Some((_, pts)) => pts.push(p),
        None => v.push((key.to_owned(), vec![p])),
    };
    for p in &s.points {
        let Some(y) = p.speedup_vs_perfect else {
            continue;
        };
        let (lo, hi) = (
            p.speedup_vs_perfect_low.unwrap_or(y),
            p.speedup_vs_perfect_high.unwrap_or(y),
        );
        if let Some(load) = p.load.filter(|l| *l > 0.0) {
            push(&mut by_model, &p.label, (load, y, lo, hi));
        }
        push(
            &mut by_workload,
            &p.workload,
            ((p.state_bytes as f64).max(1.0), y, lo, hi),
        );
    }
    for (_, pts) in by_model.iter_mut().chain(by_workload.iter_mut()) {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let sizes: Vec<String> = {
        let mut v: Vec<String> = s
            .workloads
            .iter()
            .map(|w| w.iterations.to_string())
            .collect();
        v.dedup();
        v
    };
    let root = SVGBackend::new(path, (1300, 1150)).into_drawing_area();
    root.fill(&WHITE).map_err(&err)?;
    let (top, bottom) = root.split_vertically(575);
    study_panel(
        &top,
        &format!(
            "Speedup relative to perfect vs hot set / capacity ({} iterations; hot set at interval {})",
            sizes.join(", "),
            s.interval
        ),
        "load: distinct tuples per interval / model capacity (log scale)",
        &by_model,
    )
    .map_err(&err)?;
    study_panel(
        &bottom,
        "Speedup relative to perfect vs modeled state, one line per workload",
        "modeled state (bytes, log scale)",
        &by_workload,
    )
    .map_err(&err)?;
    root.present().map_err(&err)?;
    Ok(())
}

/// A log axis tick with two significant digits (`1500`, `0.25`).
fn log_tick(x: &f64) -> String {
    if *x <= 0.0 {
        return String::new();
    }
    let digits = (1 - x.log10().floor() as i32).max(0) as usize;
    let step = 10f64.powi(x.log10().floor() as i32 - 1);
    let s = format!("{:.digits$}", (x / step).round() * step);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

fn study_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    xdesc: &str,
    series: &[StudySeries],
) -> DrawResult<DB> {
    let (plot, legend) = area.split_horizontally(area.dim_in_pixel().0 * 78 / 100);
    let pts = series.iter().flat_map(|s| s.1.iter());
    let (lo, hi) = pts
        .clone()
        .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    // Whole decades at both ends: the log axis labels at least two powers
    // of ten.
    let (lo, hi) = if lo <= hi && lo > 0.0 {
        (
            10f64.powf((lo / 1.2).log10().floor()),
            10f64.powf((hi * 1.2).log10().ceil()),
        )
    } else {
        (0.1, 10.0)
    };
    let ymax = pts.clone().map(|p| p.3).fold(1.1f64, f64::max) * 1.05;
    let ymin = pts.map(|p| p.2).fold(0.9f64, f64::min).min(0.8) * 0.95;
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 17))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), ymin..ymax)?;
    chart
        .configure_mesh()
        .x_desc(xdesc)
        .y_desc("speedup relative to perfect (x)")
        .x_labels(12)
        .max_light_lines(1)
        .x_label_formatter(&log_tick)
        .draw()?;
    for y in [1.0, 0.9] {
        chart.draw_series(LineSeries::new(
            [(lo, y), (hi, y)],
            BLACK.mix(if y == 1.0 { 0.6 } else { 0.3 }).stroke_width(1),
        ))?;
    }
    for (i, (_, pts)) in series.iter().enumerate() {
        let c = color(i);
        chart.draw_series(LineSeries::new(
            pts.iter().map(|p| (p.0, p.1)),
            c.stroke_width(2),
        ))?;
        chart.draw_series(
            pts.iter()
                .map(|p| PathElement::new([(p.0, p.2), (p.0, p.3)], c.stroke_width(1))),
        )?;
        for y in [2, 3] {
            chart.draw_series(pts.iter().map(|p| {
                let at = if y == 2 { p.2 } else { p.3 };
                EmptyElement::at((p.0, at)) + PathElement::new([(-4, 0), (4, 0)], c.stroke_width(1))
            }))?;
        }
        chart.draw_series(pts.iter().map(|p| Circle::new((p.0, p.1), 4, c.filled())))?;
    }
    // The legend, beside the plot so it never covers a point.
    for (k, line) in ["bars: per-round range", "grey lines: 1.0x, 0.9x"]
        .iter()
        .enumerate()
    {
        legend.draw(&Text::new(
            *line,
            (0, 20 + 15 * k as i32),
            ("sans-serif", 11),
        ))?;
    }
    for (i, (name, _)) in series.iter().enumerate() {
        let y = 60 + 20 * i as i32;
        let c = color(i);
        legend.draw(&PathElement::new([(0, y), (18, y)], c.stroke_width(3)))?;
        legend.draw(&Text::new(name.clone(), (24, y - 6), ("sans-serif", 12)))?;
    }
    Ok(())
}
