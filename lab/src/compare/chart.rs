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
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::error::{Error, Result};
use super::report::{CompareReport, IntervalSeries, ProgramInfo, Status};

/// Writes a drawn chart to `path` through a
/// [`crate::output::Replacement`]: a failed write (a full disk) leaves no
/// truncated SVG behind.
fn write_svg(path: &Path, svg: &str) -> Result<()> {
    crate::output::replace_file(path, svg.as_bytes()).map_err(|source| Error::Write {
        what: "the chart",
        path: path.to_owned(),
        source,
    })
}

/// Plotters words a failed write as `backend error: Drawing backend error:
/// <the I/O error>`: keep only the cause, for a person.
fn fail<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> Error + '_ {
    move |e| {
        let text = e.to_string();
        let cause = text.rsplit("error: ").next().unwrap_or(&text);
        Error::Chart {
            path: path.to_owned(),
            cause: cause.to_owned(),
        }
    }
}

/// The colour of series `i` of a panel: twenty that stay apart on white
/// (ten, then a lighter shade of each), then hues a golden angle apart at
/// three lightnesses, so no two series of one panel share a colour however
/// many there are.
fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 20] = [
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
        RGBColor(141, 180, 226),
        RGBColor(255, 179, 102),
        RGBColor(130, 210, 120),
        RGBColor(250, 140, 138),
        RGBColor(197, 176, 213),
        RGBColor(196, 156, 148),
        RGBColor(247, 182, 210),
        RGBColor(60, 60, 60),
        RGBColor(219, 219, 141),
        RGBColor(158, 218, 229),
    ];
    if let Some(c) = C.get(i) {
        return *c;
    }
    let k = (i - C.len()) as f64;
    let hue = (k * 137.507_764 + 15.0) % 360.0;
    let light = [0.42, 0.58, 0.32][(i - C.len()) % 3];
    hsl(hue, 0.65, light)
}

fn hsl(h: f64, s: f64, l: f64) -> RGBColor {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let x = c * (1.0 - ((h / 60.0) % 2.0 - 1.0).abs());
    let m = l - c / 2.0;
    let (r, g, b) = match (h / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    RGBColor(byte(r), byte(g), byte(b))
}

/// What the sizes were, for a title: test sizes are for checking, not
/// timing.
fn sizes_word(report: &CompareReport) -> String {
    let runs = report.settings.repeat;
    if report.settings.bench {
        format!("benchmark sizes, median of {runs} runs")
    } else {
        format!("test sizes (for checking, not timing), median of {runs} runs")
    }
}

/// Each program with its arguments, `fib(32)`, wrapped into lines of at
/// most `width` characters.
fn program_sizes(programs: &[ProgramInfo], width: usize) -> Vec<String> {
    let mut lines: Vec<String> = vec![String::new()];
    for p in programs {
        let a: Vec<String> = p.args.iter().map(i64::to_string).collect();
        let item = format!("{}({})", p.name, a.join(" "));
        let last = lines.last_mut().expect("one line at least");
        if !last.is_empty() && last.len() + item.len() + 2 > width {
            lines.push(item);
        } else {
            if !last.is_empty() {
                last.push_str(", ");
            }
            last.push_str(&item);
        }
    }
    lines
}

/// Draws `lines` (the first as the title) at the top of `area` and returns
/// the area below them.
fn titled<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lines: &[String],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut y = 8;
    for (i, l) in lines.iter().enumerate() {
        let size = if i == 0 { 19 } else { 13 };
        area.draw(&Text::new(l.clone(), (15, y), ("sans-serif", size)))?;
        y += size + 6;
    }
    Ok(area.split_vertically(y + 4).1)
}

/// A legend beside a plot: `entries` as (colour, text, filled marker).
fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    notes: &[&str],
    entries: &[(RGBColor, String, bool)],
) -> DrawResult<DB> {
    for (k, line) in notes.iter().enumerate() {
        area.draw(&Text::new(
            *line,
            (0, 20 + 15 * k as i32),
            ("sans-serif", 11),
        ))?;
    }
    let top = 30 + 15 * notes.len() as i32;
    for (i, (c, name, filled)) in entries.iter().enumerate() {
        let y = top + 20 * i as i32;
        if *filled {
            area.draw(&Rectangle::new([(0, y - 5), (14, y + 5)], c.filled()))?;
        } else {
            area.draw(&PathElement::new([(0, y), (18, y)], c.stroke_width(3)))?;
        }
        area.draw(&Text::new(name.clone(), (24, y - 6), ("sans-serif", 12)))?;
    }
    Ok(())
}

/// Speedup bars and the error-vs-state scatter in one SVG.
pub fn summary(report: &CompareReport, path: &Path) -> Result<()> {
    let err = fail(path);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1400, 1150)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let (top, bottom) = root.split_vertically(600);
        speedup_bars(report, &top).map_err(&err)?;
        error_vs_state(report, &bottom).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    write_svg(path, &svg)
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The configurations drawn (every one but the interpreter), in column
/// order: a configuration's index here is its colour in both panels.
fn drawn_models(report: &CompareReport) -> Vec<&str> {
    report
        .summary
        .iter()
        .filter(|s| !toyvm_profiler::spec::is_none(&s.model))
        .map(|s| s.label.as_str())
        .collect()
}

fn speedup_bars<DB: DrawingBackend>(
    report: &CompareReport,
    area: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let programs: Vec<&str> = report.programs.iter().map(|p| p.name.as_str()).collect();
    let models = drawn_models(report);
    let row = |p: &str, m: &str| {
        report
            .rows
            .iter()
            .find(|r| r.program == p && r.label == m && r.status == Status::Ok)
    };
    let mut head = vec![format!(
        "Speedup over the interpreter, JIT driven by each model ({}; failed pairs left out)",
        sizes_word(report)
    )];
    head.extend(program_sizes(&report.programs, 190));
    let area = titled(area, &head)?;
    let (plot, side) = area.split_horizontally(area.dim_in_pixel().0 * 82 / 100);
    let ymax = report
        .rows
        .iter()
        .filter_map(|r| r.speedup_vs_interpreter_high.or(r.speedup_vs_interpreter))
        .fold(1.0f64, f64::max)
        * 1.1;
    let n = programs.len().max(1);
    let mut chart = ChartBuilder::on(&plot)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, 0f64..ymax)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc("speedup (x)")
        .draw()?;
    let width = 0.8 / models.len().max(1) as f64;
    for (mi, m) in models.iter().enumerate() {
        let c = color(mi);
        let mut bars = Vec::new();
        let mut whiskers = Vec::new();
        for (pi, p) in programs.iter().enumerate() {
            let Some(r) = row(p, m) else { continue };
            let Some(v) = r.speedup_vs_interpreter else {
                continue;
            };
            let x0 = pi as f64 - 0.4 + mi as f64 * width;
            bars.push(Rectangle::new([(x0, 0.0), (x0 + width, v)], c.filled()));
            if let (Some(lo), Some(hi)) =
                (r.speedup_vs_interpreter_low, r.speedup_vs_interpreter_high)
                && r.runs > 1
            {
                whiskers.push((x0 + width / 2.0, lo, hi));
            }
        }
        chart.draw_series(bars)?;
        let ink = BLACK.mix(0.8).stroke_width(1);
        chart.draw_series(
            whiskers
                .iter()
                .map(|&(x, lo, hi)| PathElement::new([(x, lo), (x, hi)], ink)),
        )?;
        for end in [1, 2] {
            chart.draw_series(whiskers.iter().map(|&(x, lo, hi)| {
                EmptyElement::at((x, if end == 1 { lo } else { hi }))
                    + PathElement::new([(-3, 0), (3, 0)], ink)
            }))?;
        }
    }
    chart.draw_series(LineSeries::new(
        [(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
        BLACK.stroke_width(1),
    ))?;
    // Program names under their groups, on two staggered rows when one
    // row would make neighbours overlap (about 7 pixels a character).
    let slot = {
        let (a, _) = chart.backend_coord(&(0.0, 0.0));
        let (b, _) = chart.backend_coord(&(1.0, 0.0));
        (b - a).max(1)
    };
    let longest = programs.iter().map(|p| p.len()).max().unwrap_or(0) as i32;
    let stagger = longest * 7 + 6 > slot;
    let (bx, by) = plot.get_base_pixel();
    let style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (pi, p) in programs.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(pi as f64, 0.0));
        let dy = if stagger && pi % 2 == 1 { 22 } else { 6 };
        plot.draw(&Text::new(
            (*p).to_owned(),
            (x - bx, y - by + dy),
            style.clone(),
        ))?;
    }
    let entries: Vec<(RGBColor, String, bool)> = models
        .iter()
        .enumerate()
        .map(|(i, m)| (color(i), (*m).to_owned(), true))
        .collect();
    legend(
        &side,
        &["whiskers: per-round range", "black line: 1.0x"],
        &entries,
    )
}

fn error_vs_state<DB: DrawingBackend>(
    report: &CompareReport,
    area: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let models = drawn_models(report);
    // (state, E %, label, pareto, colour index)
    let pts: Vec<(f64, f64, &str, bool, usize)> = report
        .summary
        .iter()
        .filter(|s| !toyvm_profiler::spec::is_none(&s.model))
        .filter_map(|s| {
            let i = models.iter().position(|m| *m == s.label)?;
            Some((
                (s.state_bytes as f64).max(1.0),
                s.error? * 100.0,
                s.label.as_str(),
                s.pareto,
                i,
            ))
        })
        .collect();
    let area = titled(
        area,
        &[format!(
            "Mean error E against perfect vs modeled state, over {} programs (filled and joined: Pareto-optimal)",
            report.programs.len()
        )],
    )?;
    let (plot, side) = area.split_horizontally(area.dim_in_pixel().0 * 82 / 100);
    let (lo, hi) = pts.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    // Whole decades at both ends, as the study chart's log axes.
    let (lo, hi) = if lo <= hi {
        (
            10f64.powf((lo / 1.2).log10().floor()),
            10f64.powf((hi * 1.2).log10().ceil()),
        )
    } else {
        (1.0, 10.0)
    };
    let ymax = pts.iter().map(|p| p.1).fold(1.0f64, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(&plot)
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((lo..hi).log_scale(), 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("modeled state (bytes, log scale)")
        .y_desc("mean E (%)")
        .x_labels(12)
        .max_light_lines(1)
        .x_label_formatter(&log_tick)
        .draw()?;
    let mut front: Vec<(f64, f64)> = pts.iter().filter(|p| p.3).map(|p| (p.0, p.1)).collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart.draw_series(LineSeries::new(front, BLACK.mix(0.5).stroke_width(1)))?;
    for (x, y, _, pareto, i) in &pts {
        let c = color(*i);
        let style = if *pareto {
            c.filled()
        } else {
            c.stroke_width(2)
        };
        chart.draw_series(std::iter::once(Circle::new((*x, *y), 5, style)))?;
    }
    // Labels beside the plot with each point's figures: points that
    // coincide (two models of the same size and error) stay readable.
    let entries: Vec<(RGBColor, String, bool)> = pts
        .iter()
        .map(|(x, y, label, _, i)| (color(*i), format!("{label}: {y:.2}%, {x:.0} B"), true))
        .collect();
    legend(
        &side,
        &["filled: Pareto-optimal", "hollow: dominated"],
        &entries,
    )
}

/// Error per interval for two configurations side by side, one line per
/// program (the same colour for a program in both panels).
pub fn intervals(
    series: &[IntervalSeries],
    models: [&str; 2],
    report: &CompareReport,
    path: &Path,
) -> Result<()> {
    let err = fail(path);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1500, 680)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let mut head = vec![format!(
            "Error E per interval against perfect ({} sizes; interval length as in each spec)",
            if report.settings.bench {
                "benchmark"
            } else {
                "test"
            }
        )];
        head.extend(program_sizes(&report.programs, 200));
        let body = titled(&root, &head).map_err(&err)?;
        let (panels, side) = body.split_horizontally(body.dim_in_pixel().0 * 85 / 100);
        let panels = panels.split_evenly((1, 2));
        let ymax = series
            .iter()
            .filter(|s| models.contains(&s.label.as_str()))
            .flat_map(|s| s.points.iter().map(|p| p.error * 100.0))
            .fold(1.0f64, f64::max)
            * 1.1;
        let mut programs: Vec<&str> = Vec::new();
        for s in series.iter().filter(|s| models.contains(&s.label.as_str())) {
            if !programs.contains(&s.program.as_str()) {
                programs.push(&s.program);
            }
        }
        for (panel, model) in panels.iter().zip(models) {
            interval_panel(series, model, &programs, ymax, panel).map_err(&err)?;
        }
        let entries: Vec<(RGBColor, String, bool)> = programs
            .iter()
            .enumerate()
            .map(|(i, p)| (color(i), (*p).to_owned(), false))
            .collect();
        legend(&side, &["one line per program"], &entries).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    write_svg(path, &svg)
}

fn interval_panel<DB: DrawingBackend>(
    series: &[IntervalSeries],
    model: &str,
    programs: &[&str],
    ymax: f64,
    area: &DrawingArea<DB, Shift>,
) -> DrawResult<DB> {
    let mine: Vec<&IntervalSeries> = series.iter().filter(|s| s.label == model).collect();
    let xmax = mine
        .iter()
        .map(|s| s.points.len())
        .max()
        .unwrap_or(1)
        .max(2) as u64;
    let mut chart = ChartBuilder::on(area)
        .caption(model, ("sans-serif", 17))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        // Intervals are counted: an integer axis, ticks on whole intervals.
        .build_cartesian_2d(0u64..xmax - 1, 0f64..ymax)?;
    chart
        .configure_mesh()
        .x_desc("interval")
        .y_desc("E (%)")
        .x_labels(xmax.min(12) as usize)
        .draw()?;
    for s in &mine {
        let i = programs.iter().position(|p| *p == s.program).unwrap_or(0);
        let c = color(i);
        chart.draw_series(LineSeries::new(
            s.points
                .iter()
                .enumerate()
                .map(|(k, p)| (k as u64, p.error * 100.0)),
            c.stroke_width(2),
        ))?;
    }
    Ok(())
}

/// One series of the study chart: a name and its points `(x, y, low,
/// high)`, joined in x order.
type StudySeries = (String, Vec<(f64, f64, f64, f64)>);

/// The study: speedup relative to perfect, with its per-round range as
/// error bars, against load (the hot set over the model's capacity, one
/// line per configuration) above the same against modeled state bytes
/// (one line per workload). Legends sit beside the plots, not on them.
pub fn study(s: &super::study::Study, path: &Path) -> Result<()> {
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
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1300, 1150)).into_drawing_area();
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
    }
    write_svg(path, &svg)
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
    let (plot, legend_area) = area.split_horizontally(area.dim_in_pixel().0 * 78 / 100);
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
    let entries: Vec<(RGBColor, String, bool)> = series
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (color(i), name.clone(), false))
        .collect();
    legend(
        &legend_area,
        &["bars: per-round range", "grey lines: 1.0x, 0.9x"],
        &entries,
    )
}

/// One line of [`lines`]: a name and its points `(x, y)`, joined in order.
pub type Line = (String, Vec<(f64, f64)>);

/// A plain line chart: `title` (first line large), one line per series
/// with its legend beside the plot, a logarithmic x axis when `log_x`.
/// What `toyvm reproduce` draws each paper's figure with.
pub fn lines(
    path: &Path,
    title: &[String],
    axes: (&str, &str),
    log_x: bool,
    series: &[Line],
) -> Result<()> {
    let err = fail(path);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1100, 560)).into_drawing_area();
        root.fill(&WHITE).map_err(&err)?;
        let body = titled(&root, title).map_err(&err)?;
        let (plot, side) = body.split_horizontally(body.dim_in_pixel().0 * 72 / 100);
        let pts = || series.iter().flat_map(|(_, p)| p.iter().copied());
        let finite = |v: f64| v.is_finite();
        let xs: Vec<f64> = pts()
            .map(|p| p.0)
            .filter(|&x| finite(x) && (!log_x || x > 0.0))
            .collect();
        let ys: Vec<f64> = pts().map(|p| p.1).filter(|&y| finite(y)).collect();
        let (x0, x1) = xs
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
        let (x0, x1) = if xs.is_empty() {
            (0.0, 1.0)
        } else if x0 == x1 {
            (x0 * 0.5, x1 * 1.5 + 1.0)
        } else {
            (x0, x1)
        };
        let ymax = ys.iter().copied().fold(0.0f64, f64::max).max(1e-9) * 1.1;
        let ymin = ys.iter().copied().fold(0.0f64, f64::min).min(0.0);
        let draw = |area: &DrawingArea<SVGBackend<'_>, Shift>| -> DrawResult<SVGBackend<'_>> {
            let mut cb = ChartBuilder::on(area);
            cb.margin(15).x_label_area_size(40).y_label_area_size(60);
            if log_x {
                let mut chart = cb.build_cartesian_2d((x0..x1).log_scale(), ymin..ymax)?;
                chart
                    .configure_mesh()
                    .x_desc(axes.0)
                    .y_desc(axes.1)
                    .draw()?;
                for (i, (_, p)) in series.iter().enumerate() {
                    let c = color(i);
                    let p: Vec<(f64, f64)> = p
                        .iter()
                        .copied()
                        .filter(|&(x, y)| x > 0.0 && finite(y))
                        .collect();
                    chart.draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(2)))?;
                    chart.draw_series(p.iter().map(|&q| Circle::new(q, 3, c.filled())))?;
                }
            } else {
                let mut chart = cb.build_cartesian_2d(x0..x1, ymin..ymax)?;
                chart
                    .configure_mesh()
                    .x_desc(axes.0)
                    .y_desc(axes.1)
                    .draw()?;
                for (i, (_, p)) in series.iter().enumerate() {
                    let c = color(i);
                    let p: Vec<(f64, f64)> = p
                        .iter()
                        .copied()
                        .filter(|&(x, y)| finite(x) && finite(y))
                        .collect();
                    chart.draw_series(LineSeries::new(p.iter().copied(), c.stroke_width(2)))?;
                    chart.draw_series(p.iter().map(|&q| Circle::new(q, 3, c.filled())))?;
                }
            }
            Ok(())
        };
        draw(&plot).map_err(&err)?;
        let entries: Vec<(RGBColor, String, bool)> = series
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (color(i), name.clone(), false))
            .collect();
        legend(&side, &[], &entries).map_err(&err)?;
        root.present().map_err(&err)?;
    }
    write_svg(path, &svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_series_of_a_panel_share_a_colour() {
        let colours: Vec<RGBColor> = (0..500).map(color).collect();
        for (i, a) in colours.iter().enumerate() {
            for b in &colours[..i] {
                assert_ne!((a.0, a.1, a.2), (b.0, b.1, b.2), "series {i}");
            }
        }
    }

    #[test]
    fn log_ticks_are_short_round_numbers() {
        assert_eq!(log_tick(&1000.0), "1000");
        assert_eq!(log_tick(&1234.5), "1200");
        assert_eq!(log_tick(&0.25), "0.25");
        assert_eq!(log_tick(&0.0), "");
    }

    #[test]
    fn sizes_wrap_into_lines() {
        let p = |name: &str, args: Vec<i64>| ProgramInfo {
            name: name.into(),
            path: String::new(),
            args,
            input: None,
        };
        let lines = program_sizes(
            &[p("fib", vec![32]), p("loop", vec![10000]), p("bf", vec![])],
            16,
        );
        assert_eq!(lines, ["fib(32)", "loop(10000)", "bf()"]);
        let lines = program_sizes(&[p("fib", vec![32]), p("loop", vec![10000])], 80);
        assert_eq!(lines, ["fib(32), loop(10000)"]);
    }
}
