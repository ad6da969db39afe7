//! A study as cells: the unit of work that is recorded, resumed, sharded
//! and merged.
//!
//! A study's cells are, per program in the study's order, its error pass
//! (one cell; more when it has more models than one pass holds, see
//! [`super::measure::jobs`]) and then its timed runs, round by round (`rep`
//! 0 first), each round over every configuration in column order: the
//! order [`super::measure::jobs`] gives with one job. A cell's number is its
//! place in that order.
//!
//! A cells file (`--cells FILE`) is JSON lines: a [`Header`] line (format,
//! version, the study's [`Fingerprint`] and its digest, the flags that
//! rebuild the study, the shard), then one [`CellLine`] per finished cell,
//! appended and flushed as the cell finishes. A line cut short by a kill is
//! not a cell: reading stops at the last complete line, and `--resume`
//! truncates the file there before appending.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::measure::{Done, Job};
use super::report::{Column, IntervalPoint};
use crate::suite::{Case, fnv1a64};

/// The first field of a cells file's header.
pub const FORMAT: &str = "toyvm-cells";
/// The version of the cells format ([`Header`], [`CellLine`]).
pub const FORMAT_VERSION: u32 = 1;
/// The most a cells file may hold (1 GiB): it is read whole.
pub const MAX_CELLS_BYTES: u64 = 1 << 30;

/// A program as the fingerprint records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramPrint {
    /// Its name in the report.
    pub name: String,
    /// FNV-1a 64 of its bytecode ([`toyvm_vm::bytecode::encode`]), hex.
    pub bytecode_fnv: String,
    /// FNV-1a 64 of its input file (empty without one), hex.
    pub input_fnv: String,
    /// The arguments it runs with (test or bench size).
    pub args: Vec<i64>,
}

/// Everything that decides a study's cells and their results.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The toyvm version that measures.
    pub toyvm_version: String,
    /// `--bench`: benchmark-size arguments.
    pub bench: bool,
    /// `--repeat`.
    pub repeat: u64,
    /// The programs, in order, with their content hashes.
    pub programs: Vec<ProgramPrint>,
    /// The configurations' canonical specs, in column order.
    pub configs: Vec<String>,
    /// The configurations' labels, in column order.
    pub labels: Vec<String>,
    /// How many cells the study has.
    pub cells: u64,
}

impl Fingerprint {
    /// The fingerprint of the study of `cases` under `columns`.
    pub fn of(cases: &[Case], columns: &[Column], repeat: usize, bench: bool) -> Fingerprint {
        Fingerprint {
            toyvm_version: env!("CARGO_PKG_VERSION").to_owned(),
            bench,
            repeat: repeat as u64,
            programs: cases
                .iter()
                .map(|c| ProgramPrint {
                    name: c.name.clone(),
                    bytecode_fnv: format!(
                        "{:016x}",
                        fnv1a64(&toyvm_vm::bytecode::encode(&c.program))
                    ),
                    input_fnv: format!("{:016x}", fnv1a64(&c.input)),
                    args: c.args.clone(),
                })
                .collect(),
            configs: columns.iter().map(|c| c.config.spec_string()).collect(),
            labels: columns.iter().map(|c| c.label.clone()).collect(),
            cells: study_cells(cases.len(), columns, repeat).len() as u64,
        }
    }

    /// A short digest of the whole fingerprint (FNV-1a 64 of its JSON, hex).
    pub fn digest(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{:016x}", fnv1a64(json.as_bytes()))
    }
}

/// The flags that rebuild a study (`--merge` reads them from a part).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StudyArgs {
    /// The programs as given.
    pub programs: Vec<String>,
    /// `--profile`.
    pub profiles: Vec<String>,
    /// `--sweep`.
    pub sweep: Vec<String>,
    /// `--synth`.
    pub synth: Vec<String>,
    /// `--repeat`.
    pub repeat: usize,
    /// `--bench`.
    pub bench: bool,
    /// `--program-dir`, when given.
    pub program_dir: Option<PathBuf>,
}

/// Which share of a study's cells a run does (`--shard I/N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// From 0.
    pub index: u32,
    /// At least 1.
    pub count: u32,
}

impl Shard {
    /// The whole study.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` (`0 <= I < N <= 65536`).
    pub fn parse(s: &str) -> Result<Shard> {
        let bad = || {
            Error::Usage(format!(
                "--shard `{s}`: expected I/N with 0 <= I < N <= 65536, e.g. 0/4"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || count > 65_536 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The first line of a cells file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// [`Fingerprint::digest`].
    pub digest: String,
    /// The study.
    pub fingerprint: Fingerprint,
    /// The flags that rebuild it.
    pub study: StudyArgs,
    /// This file's share.
    pub shard: Shard,
    /// The cells of this share, by number.
    pub share: Vec<u64>,
    /// When the file was started (UTC).
    pub started: String,
    /// Runs side by side when it was started.
    pub jobs: u64,
}

/// A timed run as a cell records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimeOut {
    /// FNV-1a 64 of what the run printed.
    pub output_hash: u64,
    /// Bytes printed.
    pub output_len: u64,
    /// The value `main` returned.
    pub value: i64,
    /// Wall time of the run, in seconds.
    pub wall_s: f64,
    /// Time inside the profiler model, in seconds.
    pub model_s: f64,
    /// Modeled state bytes.
    pub state_bytes: u64,
    /// Messages to software.
    pub messages: u64,
    /// Their modeled cycles.
    pub cycles: u64,
    /// Intervals the model ended.
    pub intervals: u64,
    /// What the JIT did (absent when it was off).
    pub jit: Option<JitOut>,
}

/// What the JIT did in a timed run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JitOut {
    /// Time compiling, in seconds.
    pub compile_s: f64,
    /// Regions compiled.
    pub compiles: u64,
    /// Recompiles.
    pub recompiles: u64,
    /// Dropped regions.
    pub drops: u64,
    /// Exits off compiled traces.
    pub side_exits: u64,
    /// Failing specialization guards.
    pub guard_failures: u64,
}

/// One model's error against the perfect profiler, as a cell records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelErrors {
    /// The canonical spec.
    pub spec: String,
    /// Mean E over intervals (a fraction, as everywhere in JSON).
    pub error: f64,
    /// E's false-positive part.
    pub false_positive: f64,
    /// E's false-negative part.
    pub false_negative: f64,
    /// E's neutral-positive part.
    pub neutral_positive: f64,
    /// E's neutral-negative part.
    pub neutral_negative: f64,
    /// Precision.
    pub precision: f64,
    /// Recall.
    pub recall: f64,
    /// F1.
    pub f1: f64,
    /// Per interval.
    pub points: Vec<IntervalPoint>,
}

/// What a finished cell produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A timed run, or why it failed.
    Time(std::result::Result<TimeOut, String>),
    /// An error pass: one entry per model of the cell, or why it failed.
    Errors(std::result::Result<Vec<ModelErrors>, String>),
}

/// One line of a cells file after the header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellLine {
    /// The cell's number in the study.
    pub cell: u64,
    /// The program (for readers; the number decides).
    pub program: String,
    /// The configuration's label, or `error pass`.
    pub config: String,
    /// The round of a timed run (from 0).
    pub rep: Option<u64>,
    /// The result.
    pub outcome: Outcome,
}

/// A finished cell with its place in the study, as the report assembles it.
#[derive(Clone, Debug)]
pub enum Finished {
    /// A timed run.
    Time {
        /// Index of the program.
        case: usize,
        /// Index of the configuration.
        config: usize,
        /// Round, from 0.
        rep: usize,
        /// The run, or why it failed.
        result: std::result::Result<TimeOut, String>,
    },
    /// An error pass.
    Errors {
        /// Index of the program.
        case: usize,
        /// Per configuration index, its errors, or why the pass failed.
        result: std::result::Result<Vec<(usize, ModelErrors)>, String>,
    },
}

/// The study's cells in order.
pub fn study_cells(cases: usize, columns: &[Column], repeat: usize) -> Vec<Job> {
    let configs: Vec<_> = columns.iter().map(|c| c.config.clone()).collect();
    super::measure::jobs(cases, &configs, repeat.max(1), 1)
}

/// What a cell records of a finished job.
pub fn outcome(done: &Done) -> Outcome {
    match done {
        Done::Time { result, .. } => Outcome::Time(match result {
            Ok(t) => {
                let s = &t.stats;
                Ok(TimeOut {
                    output_hash: t.output_hash,
                    output_len: t.output_len,
                    value: t.value,
                    wall_s: s.wall_seconds,
                    model_s: s.profiler_seconds,
                    state_bytes: s.state_bytes,
                    messages: s.messages,
                    cycles: s.cycles,
                    intervals: s.intervals,
                    jit: s.jit.as_ref().map(|j| JitOut {
                        compile_s: j.compile_seconds,
                        compiles: j.compiles,
                        recompiles: j.recompiles,
                        drops: j.drops,
                        side_exits: j.side_exits,
                        guard_failures: j.guard_failures,
                    }),
                })
            }
            Err(e) => Err(e.to_string()),
        }),
        Done::Errors { result, .. } => Outcome::Errors(match result {
            Ok(models) => Ok(models
                .iter()
                .map(|(_, m)| {
                    let s = &m.summary.errors;
                    ModelErrors {
                        spec: m.spec.clone(),
                        error: s.error,
                        false_positive: s.false_positive,
                        false_negative: s.false_negative,
                        neutral_positive: s.neutral_positive,
                        neutral_negative: s.neutral_negative,
                        precision: s.precision,
                        recall: s.recall,
                        f1: s.f1,
                        points: m
                            .intervals
                            .iter()
                            .map(|i| IntervalPoint {
                                index: i.index,
                                tuples: i.tuples,
                                error: i.error.error,
                                false_positive: i.error.false_positive,
                                false_negative: i.error.false_negative,
                                neutral_positive: i.error.neutral_positive,
                                neutral_negative: i.error.neutral_negative,
                            })
                            .collect(),
                    }
                })
                .collect()),
            Err(e) => Err(e.to_string()),
        }),
    }
}

/// The cell `job` with its `outcome`, placed.
pub fn finished(job: &Job, outcome: Outcome) -> Result<Finished> {
    let mismatch = || Error::Parts("a cell's result does not match its kind".into());
    Ok(match (job, outcome) {
        (Job::Time { case, config, rep }, Outcome::Time(result)) => Finished::Time {
            case: *case,
            config: *config,
            rep: *rep,
            result,
        },
        (Job::Errors { case, configs }, Outcome::Errors(result)) => Finished::Errors {
            case: *case,
            result: match result {
                Ok(models) if models.len() == configs.len() => {
                    Ok(configs.iter().copied().zip(models).collect())
                }
                Ok(_) => return Err(mismatch()),
                Err(e) => Err(e),
            },
        },
        _ => return Err(mismatch()),
    })
}

/// The line for cell number `cell` (job `job`) and what it produced.
pub fn line(
    cell: u64,
    job: &Job,
    cases: &[Case],
    columns: &[Column],
    outcome: Outcome,
) -> CellLine {
    let (case, config, rep) = match job {
        Job::Time { case, config, rep } => {
            (*case, columns[*config].label.clone(), Some(*rep as u64))
        }
        Job::Errors { case, .. } => (*case, "error pass".to_owned(), None),
    };
    CellLine {
        cell,
        program: cases[case].name.clone(),
        config,
        rep,
        outcome,
    }
}

/// A cells file as read: its header, its finished cells by number, and
/// the length of its complete lines (a resumed run truncates there).
#[derive(Clone, Debug)]
pub struct CellsFile {
    /// The header.
    pub header: Header,
    /// Finished cells by number (a cell written twice keeps its first line).
    pub cells: BTreeMap<u64, CellLine>,
    /// Bytes up to the end of the last complete line.
    pub complete_len: u64,
}

/// Reads a cells file; a last line without its newline (a kill mid-write)
/// is ignored.
pub fn read(path: &Path) -> Result<CellsFile> {
    let bytes =
        crate::files::read_bounded(path, MAX_CELLS_BYTES).map_err(|source| Error::Read {
            path: path.to_owned(),
            source,
        })?;
    let bad = |what: String| Error::Parts(format!("{}: {what}", path.display()));
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let text = std::str::from_utf8(&bytes[..end]).map_err(|_| bad("not UTF-8".into()))?;
    let mut lines = text.lines();
    let first = lines
        .next()
        .ok_or_else(|| bad("empty: no header line (was it written by --cells?)".into()))?;
    let header: Header = serde_json::from_str(first)
        .map_err(|e| bad(format!("the header line is not a {FORMAT} header: {e}")))?;
    if header.format != FORMAT || header.version != FORMAT_VERSION {
        return Err(bad(format!(
            "format {} version {}; this toyvm reads {FORMAT} version {FORMAT_VERSION}",
            header.format, header.version
        )));
    }
    let mut cells = BTreeMap::new();
    for (n, l) in lines.enumerate() {
        let c: CellLine =
            serde_json::from_str(l).map_err(|e| bad(format!("line {}: {e}", n + 2)))?;
        if c.cell >= header.fingerprint.cells {
            return Err(bad(format!(
                "line {}: cell {} is past the study's {} cells",
                n + 2,
                c.cell,
                header.fingerprint.cells
            )));
        }
        cells.entry(c.cell).or_insert(c);
    }
    Ok(CellsFile {
        header,
        cells,
        complete_len: end as u64,
    })
}

/// Appends cells to a cells file, one flushed line each.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    file: std::fs::File,
}

impl Appender {
    /// Starts `path` afresh with `header`.
    pub fn create(path: &Path, header: &Header) -> Result<Appender> {
        let write = |source| Error::Write {
            what: "the cells file",
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::File::create(path).map_err(write)?;
        let mut text = serde_json::to_string(header).map_err(|e| write(e.into()))?;
        text.push('\n');
        file.write_all(text.as_bytes()).map_err(write)?;
        file.sync_data().map_err(write)?;
        Ok(Appender {
            path: path.to_owned(),
            file,
        })
    }

    /// Opens `path` to append after its first `complete_len` bytes (what
    /// follows, a line cut short, is dropped).
    pub fn resume(path: &Path, complete_len: u64) -> Result<Appender> {
        let write = |source| Error::Write {
            what: "the cells file",
            path: path.to_owned(),
            source,
        };
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(write)?;
        file.set_len(complete_len).map_err(write)?;
        Ok(Appender {
            path: path.to_owned(),
            file,
        })
    }

    /// Appends one cell as one line, flushed to the file before it returns.
    pub fn append(&mut self, cell: &CellLine) -> Result<()> {
        let write = |source| Error::Write {
            what: "the cells file",
            path: self.path.clone(),
            source,
        };
        let mut text = serde_json::to_string(cell).map_err(|e| write(e.into()))?;
        text.push('\n');
        // One write per line: with O_APPEND a line is never interleaved.
        self.file.write_all(text.as_bytes()).map_err(write)?;
        self.file.flush().map_err(write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse() {
        assert_eq!(Shard::parse("1/4").unwrap(), Shard { index: 1, count: 4 });
        for bad in ["4/4", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cut_line_is_not_a_cell_and_a_bad_header_is_refused() {
        let dir = std::env::temp_dir().join(format!("toyvm-cells-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("c.jsonl");
        let header = Header {
            format: FORMAT.into(),
            version: FORMAT_VERSION,
            digest: "0".into(),
            fingerprint: Fingerprint {
                toyvm_version: "0".into(),
                bench: false,
                repeat: 1,
                programs: vec![],
                configs: vec![],
                labels: vec![],
                cells: 2,
            },
            study: StudyArgs::default(),
            shard: Shard::WHOLE,
            share: vec![0, 1],
            started: "now".into(),
            jobs: 1,
        };
        let mut a = Appender::create(&p, &header).unwrap();
        let cell = CellLine {
            cell: 1,
            program: "p".into(),
            config: "none".into(),
            rep: Some(0),
            outcome: Outcome::Time(Err("trap".into())),
        };
        a.append(&cell).unwrap();
        drop(a);
        let whole = std::fs::metadata(&p).unwrap().len();
        let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"{\"cell\":0,\"prog").unwrap();
        drop(f);
        let c = read(&p).unwrap();
        assert_eq!(c.header, header);
        assert_eq!(c.cells.len(), 1);
        assert_eq!(c.cells[&1], cell);
        assert_eq!(c.complete_len, whole);
        let mut a = Appender::resume(&p, c.complete_len).unwrap();
        a.append(&CellLine {
            cell: 0,
            ..cell.clone()
        })
        .unwrap();
        assert_eq!(read(&p).unwrap().cells.len(), 2);
        std::fs::write(&p, "{\"format\":\"other\"}\n").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("header"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
