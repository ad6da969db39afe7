//! Studies that outgrow one machine: cells files, `--resume`, `--shard I/N`
//! and `--merge`.
//!
//! **The partition rule.** Each cell has an expected cost: its program's
//! instruction count, from one interpreter run with the study's arguments
//! (run by every shard before its first cell; runs are deterministic, so
//! every shard computes the same counts), times `1 + models` for an error
//! pass (the interpreter plus every model of the pass fed the stream). A
//! program whose counting run fails costs 1 per cell. Cells are dealt
//! largest cost first (ties: lower cell number first) to the shard with the
//! least cost so far (ties: lower shard index): the longest-processing-time
//! rule, deterministic for a given study. A shard's cells run in cell
//! order. The header of each part records its share, so a merge needs no
//! counting runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::cells::{self, Appender, CellLine, CellsFile, Fingerprint, Finished, Header, Shard};
use super::error::{Error, Result};
use super::measure::Job;
use super::report::Column;
use super::{CompareArgs, Progress, Runner};
use crate::suite::Case;
use toyvm_vm::interp;

/// Each cell's expected cost (see the module doc).
pub fn costs(cases: &[Case], work: &[Job]) -> Vec<u64> {
    let per_case: Vec<u64> = cases
        .iter()
        .map(|c| {
            let cfg = interp::Config {
                count_steps: true,
                ..interp::Config::default()
            };
            c.interpret(&mut std::io::sink(), &mut toyvm_vm::tuple::NoSink, &cfg)
                .ok()
                .and_then(|o| o.steps)
                .unwrap_or(1)
                .max(1)
        })
        .collect();
    work.iter()
        .map(|j| match j {
            Job::Time { case, .. } => per_case[*case],
            Job::Errors { case, configs } => {
                per_case[*case].saturating_mul(1 + configs.len() as u64)
            }
        })
        .collect()
}

/// The shard of each cell, by the longest-processing-time rule.
pub fn partition(costs: &[u64], count: u32) -> Vec<u32> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].cmp(&costs[a]).then(a.cmp(&b)));
    let mut load = vec![0u128; count.max(1) as usize];
    let mut shard = vec![0u32; costs.len()];
    for i in order {
        let (s, _) = load
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)))
            .unwrap_or((0, &0));
        load[s] += u128::from(costs[i]);
        shard[i] = s as u32;
    }
    shard
}

/// The cells of `shard`, by number.
pub fn share(cases: &[Case], work: &[Job], shard: Shard) -> Vec<u64> {
    if shard.count == 1 {
        return (0..work.len() as u64).collect();
    }
    let of = partition(&costs(cases, work), shard.count);
    (0..work.len() as u64)
        .filter(|&i| of[i as usize] == shard.index)
        .collect()
}

/// The flags that rebuild the study of `args`.
pub fn study_args(args: &CompareArgs) -> cells::StudyArgs {
    cells::StudyArgs {
        programs: args.programs.clone(),
        profiles: args.profiles.clone(),
        sweep: args.sweep.clone(),
        synth: args.synth.clone(),
        repeat: args.repeat,
        bench: args.bench,
        program_dir: args.program_dir.clone(),
    }
}

/// What a cells run did.
#[derive(Debug)]
pub struct Ran {
    /// The file as it stands after the run.
    pub file: CellsFile,
    /// Cells this run ran.
    pub ran: usize,
    /// Cells of the share found finished in the file (`--resume`).
    pub kept: usize,
}

/// Runs the share of `args.shard` (the whole study without it) of the
/// study of `cases` and `columns`, appending each finished cell to
/// `path`; with `args.resume` only the cells missing from `path`.
#[allow(clippy::too_many_arguments)]
pub fn run(
    args: &CompareArgs,
    path: &Path,
    cases: &[Case],
    columns: &[Column],
    jobs: usize,
    runner: &dyn Runner,
    progress: &Progress,
) -> Result<Ran> {
    let shard = match &args.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::WHOLE,
    };
    let fingerprint = Fingerprint::of(cases, columns, args.repeat, args.bench);
    let digest = fingerprint.digest();
    let work = cells::study_cells(cases.len(), columns, args.repeat);
    let mut kept = BTreeMap::new();
    let mut appender = None;
    if args.resume && path.exists() {
        let old = cells::read(path)?;
        if old.header.digest != digest || old.header.fingerprint != fingerprint {
            return Err(Error::Parts(format!(
                "{}: written for another study (fingerprint {}; this study's is {digest}): \
                 the programs, their sizes, the configurations, --repeat, --bench or the \
                 toyvm version differ",
                path.display(),
                old.header.digest
            )));
        }
        if old.header.shard != shard {
            return Err(Error::Parts(format!(
                "{}: holds shard {}, not {shard}",
                path.display(),
                old.header.shard
            )));
        }
        appender = Some((Appender::resume(path, old.complete_len)?, old.header.share));
        kept = old.cells;
    } else if path.exists() && !args.resume {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        if len > 0 {
            return Err(Error::Parts(format!(
                "{} exists: give --resume to run only its missing cells, or remove it",
                path.display()
            )));
        }
    }
    let (appender, share) = match appender {
        Some(a) => a,
        None => {
            let share = share(cases, &work, shard);
            let header = Header {
                format: cells::FORMAT.into(),
                version: cells::FORMAT_VERSION,
                digest,
                fingerprint,
                study: study_args(args),
                shard,
                share: share.clone(),
                started: super::meta::now_utc(),
                jobs: jobs as u64,
            };
            (Appender::create(path, &header)?, share)
        }
    };
    let todo: Vec<u64> = share
        .iter()
        .copied()
        .filter(|c| !kept.contains_key(c))
        .collect();
    let todo_jobs: Vec<Job> = todo.iter().map(|&c| work[c as usize].clone()).collect();
    let appender = Mutex::new((appender, None::<Error>));
    let sink = |i: usize, d: &super::measure::Done| {
        let line = cells::line(todo[i], &todo_jobs[i], cases, columns, cells::outcome(d));
        let mut g = appender.lock().unwrap_or_else(|e| e.into_inner());
        if g.1.is_none()
            && let Err(e) = g.0.append(&line)
        {
            g.1 = Some(e);
        }
    };
    super::execute_jobs(
        cases,
        columns,
        args.repeat,
        &todo_jobs,
        jobs,
        runner,
        progress,
        &sink,
    );
    let (_, failed) = appender.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(Ran {
        file: cells::read(path)?,
        ran: todo.len(),
        kept: share.len() - todo.len(),
    })
}

/// The finished cells of `lines`, placed in the study `work`; every cell
/// of the study must be there (`what` names where they came from).
pub fn place(
    work: &[Job],
    lines: &BTreeMap<u64, (CellLine, PathBuf)>,
    missing_by: impl Fn(u64) -> String,
) -> Result<Vec<Finished>> {
    let missing: Vec<u64> = (0..work.len() as u64)
        .filter(|c| !lines.contains_key(c))
        .collect();
    if !missing.is_empty() {
        let shown: Vec<String> = missing.iter().take(20).map(|&c| missing_by(c)).collect();
        return Err(Error::Parts(format!(
            "{} of the study's {} cells are missing (rerun their shards with --resume): {}{}",
            missing.len(),
            work.len(),
            shown.join("; "),
            if missing.len() > 20 { "; ..." } else { "" }
        )));
    }
    lines
        .iter()
        .map(|(&c, (l, path))| {
            cells::finished(&work[c as usize], l.outcome.clone()).map_err(|_| {
                Error::Parts(format!(
                    "{}: cell {c} ({} under {}) does not match the study's cell {c}",
                    path.display(),
                    l.program,
                    l.config
                ))
            })
        })
        .collect()
}

/// The parts of a merge, checked: one study, every shard once.
#[derive(Debug)]
pub struct Parts {
    /// The first part's header (the study and its fingerprint).
    pub header: Header,
    /// Every finished cell, with the part it came from.
    pub lines: BTreeMap<u64, (CellLine, PathBuf)>,
    /// The part file of each cell's shard, for messages.
    pub owner: BTreeMap<u64, (Shard, PathBuf)>,
}

/// Reads and checks the parts of a merge: parts of different studies,
/// duplicate and missing shards are refused, naming them.
pub fn read_parts(paths: &[PathBuf]) -> Result<Parts> {
    let mut files: Vec<(PathBuf, CellsFile)> = Vec::new();
    for p in paths {
        files.push((p.clone(), cells::read(p)?));
    }
    let Some((first_path, first)) = files.first() else {
        return Err(Error::Usage("--merge needs at least one part file".into()));
    };
    let mut studies: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (p, f) in &files {
        studies
            .entry(f.header.digest.as_str())
            .or_default()
            .push(p.display().to_string());
    }
    if studies.len() > 1 {
        let groups: Vec<String> = studies
            .iter()
            .map(|(d, ps)| format!("study {d}: {}", ps.join(", ")))
            .collect();
        return Err(Error::Parts(format!(
            "the parts are of different studies (programs, sizes, configurations, repeats \
             or toyvm version differ): {}",
            groups.join("; ")
        )));
    }
    let count = first.header.shard.count;
    if let Some((p, f)) = files.iter().find(|(_, f)| f.header.shard.count != count) {
        return Err(Error::Parts(format!(
            "{} is shard {} but {} is shard {}: every part must split the study the same \
             number of ways",
            p.display(),
            f.header.shard,
            first_path.display(),
            first.header.shard
        )));
    }
    let mut by_index: BTreeMap<u32, Vec<&PathBuf>> = BTreeMap::new();
    for (p, f) in &files {
        by_index.entry(f.header.shard.index).or_default().push(p);
    }
    let dups: Vec<String> = by_index
        .iter()
        .filter(|(_, ps)| ps.len() > 1)
        .map(|(i, ps)| {
            let names: Vec<String> = ps.iter().map(|p| p.display().to_string()).collect();
            format!("shard {i}/{count} in {}", names.join(" and "))
        })
        .collect();
    if !dups.is_empty() {
        return Err(Error::Parts(format!(
            "duplicate shards: {}",
            dups.join("; ")
        )));
    }
    let missing: Vec<String> = (0..count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(Error::Parts(format!(
            "shards missing: {} (given: {})",
            missing.join(", "),
            by_index
                .keys()
                .map(|i| format!("{i}/{count}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut owner = BTreeMap::new();
    let mut lines = BTreeMap::new();
    for (p, f) in &files {
        for &c in &f.header.share {
            if let Some((s, q)) = owner.insert(c, (f.header.shard, p.clone())) {
                return Err(Error::Parts(format!(
                    "cell {c} is in the share of shard {s} ({}) and of shard {} ({})",
                    q.display(),
                    f.header.shard,
                    p.display()
                )));
            }
        }
        for (&c, l) in &f.cells {
            if owner.get(&c).is_some_and(|(s, _)| *s == f.header.shard) {
                lines.entry(c).or_insert_with(|| (l.clone(), p.clone()));
            }
        }
    }
    Ok(Parts {
        header: first.header.clone(),
        lines,
        owner,
    })
}

/// `args` with the study of a merge's parts (its output flags kept).
pub fn merged_args(args: &CompareArgs, header: &Header) -> CompareArgs {
    let s = &header.study;
    CompareArgs {
        programs: s.programs.clone(),
        profiles: s.profiles.clone(),
        sweep: s.sweep.clone(),
        synth: s.synth.clone(),
        repeat: s.repeat,
        bench: s.bench,
        program_dir: args.program_dir.clone().or_else(|| s.program_dir.clone()),
        merge: Vec::new(),
        cells: None,
        shard: None,
        resume: false,
        ..args.clone()
    }
}

/// Refuses a study rebuilt here that is not the one `header` recorded.
fn same_study(header: &Header, what: &Path, fingerprint: &Fingerprint) -> Result<()> {
    if &header.fingerprint == fingerprint {
        return Ok(());
    }
    let mut diffs = Vec::new();
    let old = &header.fingerprint;
    if old.toyvm_version != fingerprint.toyvm_version {
        diffs.push(format!(
            "toyvm {} here, {} there",
            fingerprint.toyvm_version, old.toyvm_version
        ));
    }
    for (a, b) in fingerprint.programs.iter().zip(&old.programs) {
        if a != b {
            diffs.push(format!("program {} differs (content or arguments)", a.name));
        }
    }
    if diffs.is_empty() {
        diffs.push("programs, configurations, --repeat or --bench differ".into());
    }
    Err(Error::Parts(format!(
        "{}: the study rebuilt here (fingerprint {}) is not the one the parts ran \
         (fingerprint {}): {}",
        what.display(),
        fingerprint.digest(),
        header.digest,
        diffs.join("; ")
    )))
}

fn describe(work: &[Job], cases: &[Case], columns: &[Column], c: u64) -> String {
    match &work[c as usize] {
        Job::Time { case, config, rep } => format!(
            "cell {c} ({} under {}, round {})",
            cases[*case].name,
            columns[*config].label,
            rep + 1
        ),
        Job::Errors { case, .. } => format!("cell {c} ({} error pass)", cases[*case].name),
    }
}

/// The finished cells of a merge, placed in the study rebuilt from `args`.
pub fn merged_cells(
    parts: &Parts,
    cases: &[Case],
    columns: &[Column],
    args: &CompareArgs,
) -> Result<Vec<Finished>> {
    let fingerprint = Fingerprint::of(cases, columns, args.repeat, args.bench);
    let first = parts
        .owner
        .values()
        .next()
        .map_or_else(PathBuf::new, |(_, p)| p.clone());
    same_study(&parts.header, &first, &fingerprint)?;
    let work = cells::study_cells(cases.len(), columns, args.repeat);
    place(&work, &parts.lines, |c| {
        let d = describe(&work, cases, columns, c);
        match parts.owner.get(&c) {
            Some((s, p)) => format!("{d} of shard {s} ({})", p.display()),
            None => format!("{d}, in no part's share"),
        }
    })
}

/// The finished cells of a whole study's cells file.
pub fn file_cells(
    file: &CellsFile,
    path: &Path,
    cases: &[Case],
    columns: &[Column],
    repeat: usize,
) -> Result<Vec<Finished>> {
    let work = cells::study_cells(cases.len(), columns, repeat);
    let lines = file
        .cells
        .iter()
        .map(|(&c, l)| (c, (l.clone(), path.to_owned())))
        .collect();
    place(&work, &lines, |c| describe(&work, cases, columns, c))
}

/// `--shard I/N` with N > 1: runs the share into the part file and says
/// so; `None` for every other command line (the whole study's report).
pub fn run_part(args: &CompareArgs, runner: &dyn Runner) -> Result<Option<u8>> {
    let Some(s) = &args.shard else {
        return Ok(None);
    };
    let shard = Shard::parse(s)?;
    if shard.count == 1 {
        return Ok(None);
    }
    let Some(path) = &args.cells else {
        return Err(Error::Usage(
            "--shard needs --cells FILE (the part file)".into(),
        ));
    };
    super::check_flags(args)?;
    let columns = super::columns(args)?;
    let (cases, _) = super::cases(args)?;
    super::check_size(cases.len(), columns.len(), args.repeat)?;
    let jobs = super::default_jobs(args);
    let ran = run(
        args,
        path,
        &cases,
        &columns,
        jobs,
        runner,
        &Progress::for_stderr(),
    )?;
    let failed = ran
        .file
        .cells
        .values()
        .filter(|l| {
            matches!(
                &l.outcome,
                cells::Outcome::Time(Err(_)) | cells::Outcome::Errors(Err(_))
            )
        })
        .count();
    let note = format!(
        "toyvm compare: shard {shard}: ran {} cells, {} were already in {} ({} of the \
         study's {} cells are this shard's){}; make the report with \
         `toyvm compare --merge PART...` over every shard's file\n",
        ran.ran,
        ran.kept,
        path.display(),
        ran.file.header.share.len(),
        ran.file.header.fingerprint.cells,
        if failed > 0 {
            format!("; {failed} cells failed")
        } else {
            String::new()
        }
    );
    let _ = crate::output::stderr(note.as_bytes());
    Ok(Some(u8::from(failed > 0)))
}
