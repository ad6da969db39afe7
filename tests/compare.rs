//! `toyvm compare` on small programs: the report's shape, CSV, sweeps,
//! baselines, charts, and that a run whose output differs from the
//! interpreter's is a failure.

use std::path::PathBuf;

use toyvm_lab::compare::Progress;
use toyvm_lab::compare::report::COLUMNS;
use toyvm_lab::compare::specs::Choice;
use toyvm_lab::compare::{self, CompareArgs, Run, Runner, RuntimeRunner, Status, render, specs};
use toyvm_lab::suite::Case;

fn programs() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../programs")
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("toyvm-compare-{}-{name}", std::process::id()))
}

/// loop and sieve at test size, the interpreter and two models, one run.
fn small() -> CompareArgs {
    CompareArgs {
        programs: vec!["loop".into(), "sieve".into()],
        profiles: vec!["multihash,perfect".into()],
        repeat: 1,
        program_dir: Some(programs()),
        ..CompareArgs::default()
    }
}

#[test]
fn a_small_comparison_reports_every_column_as_json() {
    let c = compare::build(&small(), &RuntimeRunner, &Progress::Hidden).unwrap();
    let text = render::json(&c.report);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 3, "{text}");
    for row in rows {
        for col in COLUMNS {
            assert!(row.get(*col).is_some(), "row lacks `{col}`: {row}");
        }
        assert_eq!(row["status"], "ok", "{row}");
        assert!(row["median_seconds"].as_f64().unwrap() > 0.0);
        assert!(row["speedup_vs_interpreter"].as_f64().unwrap() > 0.0);
    }
    let models: Vec<&str> = rows.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(
        models,
        [
            "none",
            "multihash",
            "perfect",
            "none",
            "multihash",
            "perfect"
        ]
    );
    // The model rows carry error figures; perfect against itself is exact.
    let perfect = &rows[2];
    assert_eq!(perfect["error"], 0.0);
    assert_eq!(perfect["recall"], 1.0);
    assert_eq!(perfect["speedup_vs_perfect"], 1.0);
    assert!(rows[1]["state_bytes"].as_u64().unwrap() > 0);
    assert!(rows[0]["error"].is_null(), "the interpreter has no error");
    // What makes the report reproducible.
    assert_eq!(v["toyvm_version"], env!("CARGO_PKG_VERSION"));
    assert!(v["date"].as_str().unwrap().ends_with('Z'));
    assert!(v["machine"]["cores"].as_u64().unwrap() >= 1);
    assert_eq!(v["programs"][0]["args"], serde_json::json!([300]));
    assert!(
        v["specs"][1]
            .as_str()
            .unwrap()
            .starts_with("multihash:tables=4,")
    );
    assert_eq!(v["summary"].as_array().unwrap().len(), 3);
    assert_eq!(v["failures"], 0);
    // The JSON reads back as a report (what --baseline loads).
    // (JSON keeps floats to the last digit or so; compare the rest.)
    let back: compare::CompareReport = serde_json::from_str(&text).unwrap();
    assert_eq!(back.specs, c.report.specs);
    assert_eq!(back.programs, c.report.programs);
    let statuses = |r: &compare::CompareReport| r.rows.iter().map(|x| x.status).collect::<Vec<_>>();
    assert_eq!(statuses(&back), statuses(&c.report));
    // The table names every pair.
    let table = render::table(&c.report);
    assert!(
        table.contains("sieve") && table.contains("multihash"),
        "{table}"
    );
    // Every model has a per-interval error series.
    assert_eq!(c.series.len(), 2 * 2);
    assert!(c.series.iter().all(|s| !s.points.is_empty()));
}

#[test]
fn csv_has_one_header_and_a_line_per_pair() {
    let c = compare::build(&small(), &RuntimeRunner, &Progress::Hidden).unwrap();
    let csv = render::csv(&c.report);
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), COLUMNS.join(","));
    assert!(csv.starts_with("program,model,label,spec,status,"));
    let body: Vec<&str> = lines.collect();
    assert_eq!(body.len(), 6);
    // The canonical spec contains commas: it is quoted.
    assert!(
        body[1].starts_with("loop,multihash,multihash,\"multihash:tables=4,"),
        "{}",
        body[1]
    );
    let intervals = render::intervals_csv(&c.series);
    assert!(intervals.starts_with("program,label,spec,interval,tuples,error,"));
}

/// Passes everything to the runtime but prints one extra byte under one
/// model: the comparison must notice.
struct Tamper {
    model: &'static str,
}

impl Runner for Tamper {
    fn run(&self, case: &Case, config: &Choice) -> compare::Result<Run> {
        let mut r = RuntimeRunner.run(case, config)?;
        if config.model_name() == self.model {
            std::io::Write::write_all(&mut r.output, b"!").unwrap();
        }
        Ok(r)
    }
}

#[test]
fn a_run_whose_output_differs_is_a_failure() {
    let tamper = Tamper { model: "multihash" };
    let c = compare::build(&small(), &tamper, &Progress::Hidden).unwrap();
    assert_eq!(c.report.failures, 2);
    for r in &c.report.rows {
        if r.model == "multihash" {
            assert_eq!(r.status, Status::Mismatch, "{r:?}");
            assert!(r.detail.as_deref().unwrap().contains("differs"));
            assert_eq!(r.median_seconds, None, "a wrong result is never timed");
            assert_eq!(r.speedup_vs_interpreter, None);
        } else {
            assert_eq!(r.status, Status::Ok, "{r:?}");
        }
    }
    assert!(render::table(&c.report).contains("MISMATCH"));
    // And the command's exit status says so.
    let out = temp("mismatch.csv");
    let args = CompareArgs {
        format: compare::Format::Csv,
        output: Some(out.clone()),
        ..small()
    };
    assert_eq!(compare::run_with(&args, &tamper).unwrap(), 1);
    let csv = std::fs::read_to_string(&out).unwrap();
    assert!(csv.contains(",mismatch,"), "{csv}");
    let _ = std::fs::remove_file(out);
    // A tampered interpreter makes every model "differ".
    let c = compare::build(&small(), &Tamper { model: "none" }, &Progress::Hidden).unwrap();
    assert_eq!(c.report.failures, 4);
}

#[test]
fn sweeps_expand_run_in_parallel_and_mark_the_frontier() {
    let grid = specs::expand_sweep("multihash:tables=1|2|4|8,entries=512|2048").unwrap();
    assert_eq!(grid.len(), 8);
    assert!(grid.contains(&"multihash:tables=2,entries=512".to_owned()));
    let args = CompareArgs {
        programs: vec!["loop".into()],
        sweep: vec!["singlehash:entries=256|2048".into()],
        repeat: 1,
        jobs: Some(2),
        program_dir: Some(programs()),
        ..CompareArgs::default()
    };
    let c = compare::build(&args, &RuntimeRunner, &Progress::Hidden).unwrap();
    let labels: Vec<&str> = c.report.summary.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "none",
            "perfect",
            "singlehash:entries=256",
            "singlehash:entries=2048"
        ]
    );
    assert_eq!(c.report.failures, 0);
    assert!(c.report.summary.iter().any(|s| s.pareto));
    assert!(
        !c.report.summary[0].pareto,
        "the interpreter is not a model"
    );
    assert!(!c.report.summary[1].pareto, "perfect is the reference");
}

#[test]
fn baselines_charts_and_interval_views_are_written() {
    let json = temp("base.json");
    let chart = temp("chart.svg");
    let ichart = temp("intervals.svg");
    let icsv = temp("intervals.csv");
    let first = CompareArgs {
        programs: vec!["loop".into()],
        profiles: vec!["multihash;singlehash".into()],
        format: compare::Format::Json,
        output: Some(json.clone()),
        ..small()
    };
    assert_eq!(compare::run(&first).unwrap(), 0);
    let second = CompareArgs {
        format: compare::Format::Markdown,
        output: Some(temp("report.md")),
        baseline: Some(json.clone()),
        chart: Some(chart.clone()),
        interval_chart: Some(ichart.clone()),
        intervals: Some(icsv.clone()),
        ..first.clone()
    };
    assert_eq!(compare::run(&second).unwrap(), 0);
    let md = std::fs::read_to_string(temp("report.md")).unwrap();
    assert!(md.contains("Changes since"), "{md}");
    assert!(md.contains("| loop | multihash |"), "{md}");
    for svg in [&chart, &ichart] {
        let s = std::fs::read_to_string(svg).unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..s.len().min(200)]);
    }
    // Titles give the sizes: test sizes are for checking, not timing.
    let s = std::fs::read_to_string(&ichart).unwrap();
    assert!(
        s.contains("Error E per interval against perfect (test sizes")
            && s.contains("\nmultihash\n")
            && s.contains("\nsinglehash\n")
            && s.contains("loop(300)"),
        "{s}"
    );
    let s = std::fs::read_to_string(&chart).unwrap();
    assert!(
        s.contains("test sizes (for checking, not timing)") && s.contains("loop(300)"),
        "{s}"
    );
    let rows = std::fs::read_to_string(&icsv).unwrap();
    assert!(rows.lines().count() > 2);
    // A model not compared is refused before anything runs.
    let bad = CompareArgs {
        interval_models: Some("rap,conte".into()),
        ..second
    };
    let e = compare::run(&bad).unwrap_err();
    assert!(
        matches!(&e, compare::Error::UnknownIntervalModel(m) if m == "rap"),
        "{e:?}"
    );
    assert!(e.to_string().contains("rap"), "{e}");
    for p in [json, chart, ichart, icsv, temp("report.md")] {
        let _ = std::fs::remove_file(p);
    }
}

/// A runner that fails the test if anything is run.
struct MustNotRun;

impl Runner for MustNotRun {
    fn run(&self, _: &Case, _: &Choice) -> compare::Result<Run> {
        panic!("a run started although an output path is bad");
    }
    fn errors(
        &self,
        _: &Case,
        _: &[toyvm_profiler::ProfilerSpec],
    ) -> compare::Result<Vec<toyvm_profiler::evaluation::ModelReport>> {
        panic!("a run started although an output path is bad");
    }
}

#[test]
fn bad_output_paths_fail_before_any_run() {
    let bad = PathBuf::from("/nonexistent/toyvm/x");
    for (args, what) in [
        (
            CompareArgs {
                chart: Some(bad.with_extension("svg")),
                ..small()
            },
            "the chart",
        ),
        (
            CompareArgs {
                output: Some(bad.with_extension("json")),
                ..small()
            },
            "the report",
        ),
        (
            CompareArgs {
                intervals: Some(bad.with_extension("csv")),
                ..small()
            },
            "the interval CSV",
        ),
        (
            CompareArgs {
                interval_chart: Some(bad.with_extension("svg")),
                ..small()
            },
            "the interval chart",
        ),
        (
            CompareArgs {
                output: Some(std::env::temp_dir()),
                ..small()
            },
            "is a directory",
        ),
    ] {
        let e = compare::run_with(&args, &MustNotRun).unwrap_err();
        assert!(matches!(e, compare::Error::Output(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains(what) && !e.contains("Error(") && !e.contains("Os {"),
            "{e}"
        );
    }
}

#[test]
fn huge_sweeps_are_refused_with_the_cap() {
    let ten = "1|2|3|4|5|6|7|8|9|10";
    let args = CompareArgs {
        sweep: vec![format!(
            "multihash:{}",
            vec![format!("seed={ten}"); 8].join(",")
        )],
        ..small()
    };
    let e = compare::run_with(&args, &MustNotRun).unwrap_err();
    assert!(matches!(e, compare::Error::TooManyPoints { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("100000000 configurations") && e.contains("4096"),
        "{e}"
    );
}

#[test]
fn repeat_jobs_and_the_number_of_timed_runs_are_capped_before_any_run() {
    for (args, want) in [
        (
            CompareArgs {
                repeat: 100_000_000_000,
                ..small()
            },
            "--repeat must be between 1 and 1000, not 100000000000",
        ),
        (
            CompareArgs {
                repeat: 0,
                ..small()
            },
            "--repeat must be between 1 and 1000, not 0",
        ),
        (
            CompareArgs {
                jobs: Some(100_000),
                ..small()
            },
            "--jobs must be between 1 and 256, not 100000",
        ),
        (
            // 2 + 16 x 64 configurations x 1000 runs: over a million.
            CompareArgs {
                repeat: 1000,
                sweep: vec![format!(
                    "multihash:tables={},seed={}",
                    (1..=16)
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join("|"),
                    (1..=64)
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join("|")
                )],
                ..small()
            },
            "timed runs, over the 1000000 one comparison may make",
        ),
    ] {
        let e = compare::run_with(&args, &MustNotRun)
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn an_error_pass_runs_at_most_the_models_one_pass_may_hold() {
    use toyvm_lab::compare::measure::{Job, jobs};
    use toyvm_profiler::spec::MAX_MODELS_AT_ONCE;
    let grid = specs::expand_sweep(&format!(
        "multihash:seed={}",
        (1..=100)
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join("|")
    ))
    .unwrap();
    let configs: Vec<Choice> = grid
        .iter()
        .map(|s| Choice::Model(toyvm_profiler::parse_spec(s).unwrap()))
        .collect();
    let work = jobs(1, &configs, 1, 1);
    let passes: Vec<usize> = work
        .iter()
        .filter_map(|j| match j {
            Job::Errors { configs, .. } => Some(configs.len()),
            Job::Time { .. } => None,
        })
        .collect();
    assert!(
        passes.iter().all(|&n| n <= MAX_MODELS_AT_ONCE),
        "{passes:?}"
    );
    assert_eq!(passes.iter().sum::<usize>(), 100, "every model in a pass");
}

#[test]
fn profile_lists_in_the_help_texts_plan_their_columns() {
    for (list, models) in [
        (
            "multihash,stratified,rap:eps=1%",
            vec!["none", "multihash", "stratified", "rap"],
        ),
        (
            "perfect,multihash:interval=10",
            vec!["none", "perfect", "multihash"],
        ),
        (
            "perfect,multihash,multihash:tables=1,entries=512",
            vec!["none", "perfect", "multihash", "multihash"],
        ),
    ] {
        let p = specs::plan(&[list.to_owned()], &[]).unwrap();
        let names: Vec<&str> = p.iter().map(Choice::model_name).collect();
        assert_eq!(names, models, "{list}");
    }
}

#[test]
fn synth_workloads_add_the_study_its_crossings_and_its_chart() {
    let chart = temp("study.svg");
    let args = CompareArgs {
        synth: vec!["hot=4|256,n=3000".into()],
        profiles: vec!["perfect,multihash:tables=1,entries=16".into()],
        repeat: 2,
        study_chart: Some(chart.clone()),
        ..CompareArgs::default()
    };
    let c = compare::build(&args, &RuntimeRunner, &Progress::Hidden).unwrap();
    // Only the workloads run without PROGRAMS.
    let names: Vec<&str> = c.report.programs.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["synth(hot=4,n=3000)", "synth(hot=256,n=3000)"]);
    let study = c.report.study.as_ref().expect("a study");
    assert_eq!(study.points.len(), 2, "one model on two workloads");
    let [small, big] = &study.workloads[..] else {
        panic!("two workloads")
    };
    assert!(big.distinct_per_interval > small.distinct_per_interval);
    for p in &study.points {
        assert_eq!(p.capacity, Some(16));
        assert!(p.error.is_some() && p.speedup_vs_perfect.is_some(), "{p:?}");
        let (lo, hi) = (
            p.speedup_vs_perfect_low.unwrap(),
            p.speedup_vs_perfect_high.unwrap(),
        );
        assert!(lo <= hi, "{p:?}");
        assert!(p.within_noise.is_some());
    }
    // A 16-counter table cannot hold the big hot set apart.
    let big_point = study
        .points
        .iter()
        .find(|p| p.workload == big.name)
        .unwrap();
    assert!(big_point.load.unwrap() > 4.0, "{big_point:?}");
    assert!(big_point.error.unwrap() > 0.01, "{big_point:?}");
    let text = render::table(&c.report);
    assert!(text.contains("study: where the error shows"), "{text}");
    assert!(
        text.contains("multihash:tables=1,entries=16: E above 1% at"),
        "{text}"
    );
    let md = render::markdown(&c.report);
    assert!(md.contains("| workload | config | capacity |"), "{md}");
    // The chart is written by `run_with`, the JSON round-trips with the study.
    compare::run_with(
        &CompareArgs {
            output: Some(temp("study.json")),
            format: compare::Format::Json,
            ..args
        },
        &RuntimeRunner,
    )
    .unwrap();
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("hot set / capacity"),
        "{svg:.200}"
    );
    let json = std::fs::read_to_string(temp("study.json")).unwrap();
    let back: compare::CompareReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.study.unwrap().points.len(), 2);
    let _ = std::fs::remove_file(chart);
    let _ = std::fs::remove_file(temp("study.json"));
}

#[test]
fn a_study_chart_without_workloads_is_refused() {
    let args = CompareArgs {
        study_chart: Some(temp("nope.svg")),
        ..small()
    };
    let e = compare::build(&args, &RuntimeRunner, &Progress::Hidden)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--synth"), "{e}");
}

/// `small()`'s report as a JSON value, to edit into baselines.
fn small_report() -> serde_json::Value {
    let c = compare::build(&small(), &RuntimeRunner, &Progress::Hidden).unwrap();
    serde_json::from_str(&render::json(&c.report)).unwrap()
}

#[test]
fn a_baseline_at_other_sizes_is_refused_before_any_run() {
    let base = small_report();
    let file = temp("sizes.json");
    let refused = |v: &serde_json::Value| {
        std::fs::write(&file, v.to_string()).unwrap();
        let args = CompareArgs {
            baseline: Some(file.clone()),
            ..small()
        };
        compare::run_with(&args, &MustNotRun).unwrap_err()
    };
    let mut bench = base.clone();
    bench["settings"]["bench"] = true.into();
    let e = refused(&bench);
    assert!(
        matches!(
            e,
            compare::Error::BaselineSizes {
                baseline_bench: true,
                bench: false,
                ..
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(
        e.contains("benchmark sizes (--bench)") && e.contains("test sizes"),
        "{e}"
    );
    let mut bigger = base.clone();
    bigger["programs"][0]["args"] = serde_json::json!([3000]);
    let e = refused(&bigger);
    match &e {
        compare::Error::BaselinePrograms { programs, .. } => {
            assert_eq!(programs.len(), 1);
            assert_eq!(programs[0].program, "loop");
        }
        _ => panic!("{e:?}"),
    }
    let e = e.to_string();
    assert!(e.contains("loop ran as (3000) there, (300) here"), "{e}");
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_baseline_with_other_specs_or_machine_is_compared_with_warnings() {
    let mut base = small_report();
    base["machine"]["cores"] = 97.into();
    base["settings"]["repeat"] = 5.into();
    for row in base["rows"].as_array_mut().unwrap() {
        if row["label"] == "multihash" {
            row["spec"] = "multihash:tables=1".into();
        }
    }
    let file = temp("specs.json");
    std::fs::write(&file, base.to_string()).unwrap();
    let args = CompareArgs {
        baseline: Some(file.clone()),
        ..small()
    };
    let c = compare::build(&args, &RuntimeRunner, &Progress::Hidden).unwrap();
    let b = c.report.baseline.as_ref().unwrap();
    let all = b.warnings.join("\n");
    assert!(all.contains("another machine (97 cores"), "{all}");
    assert!(
        all.contains(
            "`multihash` is another configuration than in the baseline (multihash:tables=1 there"
        ),
        "{all}"
    );
    assert!(all.contains("medians of 5 runs, this run of 1"), "{all}");
    let changed: Vec<_> = b
        .changes
        .iter()
        .filter(|c| c.spec_before.is_some())
        .collect();
    assert_eq!(changed.len(), 2, "loop and sieve under multihash");
    let table = render::table(&c.report);
    assert!(
        table.contains("WARNING: the baseline ran on another machine"),
        "{table}"
    );
    assert!(table.contains("ok, spec changed"), "{table}");
    let _ = std::fs::remove_file(file);
}

/// What a C program's header says it prints, as the digest of those lines.
fn expected_digest(c_source: &std::path::Path) -> toyvm_lab::suite::Digest {
    use std::io::Write as _;
    let h = toyvm_lab::suite::parse_header(&std::fs::read_to_string(c_source).unwrap()).unwrap();
    let toyvm_lab::suite::Expect::Lines(lines) = h.expect else {
        panic!("{}: expected output lines", c_source.display());
    };
    let mut d = toyvm_lab::suite::Digest::default();
    for l in lines {
        writeln!(d, "{l}").unwrap();
    }
    d
}

#[test]
fn webassembly_commands_are_cases_with_their_c_header_and_wasi_host() {
    let dir = programs().join("c");
    let listed = toyvm_lab::suite::list(&dir).unwrap();
    assert!(
        listed.iter().any(|p| p.ends_with("crc32.wasm")),
        "{listed:?}"
    );
    for name in ["crc32", "qsort"] {
        let case = toyvm_lab::suite::load(&dir.join(format!("{name}.wasm")), false).unwrap();
        assert!(case.wasm.is_some());
        assert!(!case.args.is_empty(), "{name}: the C header's args");
        assert!(case.entry_args().is_empty(), "_start takes no arguments");
        // The interpreter, through the case's WASI host, prints what the C
        // source's header says.
        let mut out = toyvm_lab::suite::Digest::default();
        let cfg = toyvm::vm::interp::Config::default();
        case.interpret(&mut out, &mut toyvm::vm::tuple::NoSink, &cfg)
            .unwrap();
        let want = expected_digest(&dir.join(format!("{name}.c")));
        assert_eq!(
            (out.fnv1a64(), out.bytes()),
            (want.fnv1a64(), want.bytes()),
            "{name}"
        );
    }
    // A comparison over them: every run's output agrees with the
    // interpreter's, and the error pass measured the models.
    let args = CompareArgs {
        programs: vec!["crc32".into(), "qsort".into()],
        profiles: vec!["multihash".into()],
        repeat: 1,
        program_dir: Some(dir),
        ..CompareArgs::default()
    };
    let c = compare::build(&args, &RuntimeRunner, &Progress::Hidden).unwrap();
    assert_eq!(c.report.rows.len(), 2 * 2);
    for r in &c.report.rows {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        if r.model == "multihash" {
            assert!(r.error.is_some(), "{r:?}");
        }
    }
}

#[test]
fn a_module_that_does_not_translate_is_a_clear_error() {
    let dir = temp("badwasm");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.wasm");
    std::fs::write(&bad, b"\0asm\x01\0\0\0\x01\xff").unwrap();
    let e = toyvm_lab::suite::load(&bad, false).unwrap_err();
    assert!(matches!(e, toyvm_lab::suite::Error::Module { .. }), "{e:?}");
    assert!(e.to_string().contains("bad.wasm"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
