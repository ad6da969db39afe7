//! `toyvm run --stats`: one text layout and one JSON shape for every run
//! mode (the interpreter alone, recording a trace, a model without the
//! JIT, the JIT driven by a model), each figure saying what it counts.
//!
//! Instructions are counted by the interpreter: under the JIT, compiled
//! code's instructions are not counted (counting them would slow the code
//! being measured), so `instructions` and the nanoseconds per instruction
//! are the interpreter's alone, and the time in compiled code is shown
//! beside them; except with a fuel limit, where compiled code counts its
//! instructions too (exactly) and the nanoseconds per instruction are not
//! given. The interpreter's time is the wall time less the other
//! parts, so it holds the run's set-up too (allocating the program's
//! memory): on a run that compiled code dominates, its nanoseconds per
//! instruction are mostly set-up, and the line says it is included. Lines
//! that do not apply to a mode say why instead of
//! disappearing, so every mode prints the same lines in the same order.

use std::fmt::Write as _;

use serde::Serialize;

use toyvm::Stats;

/// How the program ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The interpreter alone.
    Interpreter,
    /// The interpreter, writing the tuple stream to a trace.
    Record,
    /// The interpreter feeding a profiler model, no compiled code.
    Model,
    /// The model's candidates driving the JIT.
    Jit,
}

impl Mode {
    /// The mode of a run with these statistics (`recording`: `--record`).
    pub fn of(stats: &Stats, recording: bool) -> Mode {
        if recording {
            Mode::Record
        } else if stats.jit.is_some() {
            Mode::Jit
        } else if !toyvm_profiler::spec::is_none(&stats.profile) {
            Mode::Model
        } else {
            Mode::Interpreter
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Mode::Interpreter => "interpreter alone",
            Mode::Record => "interpreter, recording the trace",
            Mode::Model => "interpreter feeding the model (JIT off)",
            Mode::Jit => "JIT driven by the model",
        }
    }
}

/// The format version of `run --stats --json`'s line.
pub const STATS_JSON_FORMAT: u32 = 1;

/// The statistics as `--stats --json` prints them: the same keys in every
/// mode (`jit` is null without the JIT).
#[derive(Debug, Serialize)]
pub struct StatsOut<'a> {
    /// The JSON's format version, [`STATS_JSON_FORMAT`] (first key).
    pub format: u32,
    /// How the program ran (the JSON's `mode` key: `interpreter`,
    /// `record`, `model`, `jit`).
    pub mode: Mode,
    /// The run's statistics; in JSON their keys sit beside `mode`, not
    /// under a key of their own.
    #[serde(flatten)]
    pub stats: &'a Stats,
    /// Interpreter seconds per interpreted instruction, in nanoseconds
    /// (null when nothing was counted). Compiled code's instructions are
    /// not counted.
    pub ns_per_interpreted_instruction: Option<f64>,
    /// The entry function's return value.
    pub result: i64,
    /// What translating the WebAssembly module cost (null for a program
    /// that was not one).
    pub translation: Option<WasmStats>,
}

/// What translating a WebAssembly module cost: its time, and toyvm
/// instructions emitted against WebAssembly operators read (the static
/// side of the translation's cost; `toyvm_wasm::Counts`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WasmStats {
    /// The module's size.
    pub module_bytes: u64,
    /// Wall time of the translation (parsing, validation, translation and
    /// the verifier).
    pub translate_seconds: f64,
    /// The module's defined functions.
    pub functions: u32,
    /// Their bodies' bytes (the code section's content; the rest of the
    /// module, debug information say, is not code).
    pub code_bytes: u64,
    /// WebAssembly operators in their bodies, each counted once.
    pub operators: u64,
    /// toyvm instructions emitted for those bodies.
    pub instructions: u64,
}

impl WasmStats {
    /// The cost of translation `t` of a module of `module_bytes` bytes,
    /// which took `seconds`.
    pub fn new(module_bytes: usize, seconds: f64, t: &toyvm_wasm::Translation) -> WasmStats {
        let c = t.counts();
        WasmStats {
            module_bytes: module_bytes as u64,
            translate_seconds: seconds,
            functions: c.functions,
            code_bytes: c.code_bytes,
            operators: c.operators,
            instructions: c.instructions,
        }
    }

    fn text(&self) -> String {
        let per_op = if self.operators == 0 {
            0.0
        } else {
            self.instructions as f64 / self.operators as f64
        };
        format!(
            "{} bytes ({} of code) in {:.3} ms ({:.3} ms per KB of code); {} operators in {} functions -> {} instructions ({per_op:.2} per operator)",
            self.module_bytes,
            self.code_bytes,
            self.translate_seconds * 1e3,
            self.translate_seconds * 1e3 * 1024.0 / self.code_bytes.max(1) as f64,
            self.operators,
            self.functions,
            self.instructions
        )
    }
}

impl<'a> StatsOut<'a> {
    /// The output of a run with `stats` in `mode` that returned `result`;
    /// computes the nanoseconds per interpreted instruction, which are
    /// absent when no instruction was counted and under the JIT with a
    /// fuel limit (the count then holds compiled code's instructions).
    pub fn new(stats: &'a Stats, mode: Mode, result: i64) -> StatsOut<'a> {
        StatsOut {
            format: STATS_JSON_FORMAT,
            mode,
            stats,
            ns_per_interpreted_instruction: (stats.instructions > 0
                && !(stats.fuel.is_some() && stats.jit.is_some()))
            .then(|| stats.interpreter_seconds * 1e9 / stats.instructions as f64),
            result,
            translation: None,
        }
    }

    /// The same, for a program translated from a WebAssembly module at
    /// this cost (`None`: it was not one).
    pub fn translation(mut self, cost: Option<WasmStats>) -> StatsOut<'a> {
        self.translation = cost;
        self
    }

    /// One JSON line.
    pub fn json(&self) -> String {
        serde_json::to_string(self).expect("statistics hold only numbers and strings") + "\n"
    }

    /// The text layout, the same lines in every mode.
    pub fn text(&self) -> String {
        let s = self.stats;
        let mut t = String::new();
        let line = |t: &mut String, name: &str, value: String| {
            let _ = writeln!(t, "{name:<19}{value}");
        };
        let _ = writeln!(t, "-- toyvm stats --");
        line(&mut t, "mode", self.mode.describe().to_owned());
        line(&mut t, "profile", s.profile.clone());
        line(&mut t, "wall time", format!("{:.3} s", s.wall_seconds));
        let per = self.ns_per_interpreted_instruction.map_or_else(
            || {
                if s.fuel.is_some() && s.jit.is_some() {
                    "no ns per instruction: the count holds compiled code's".to_owned()
                } else {
                    "no instructions counted".to_owned()
                }
            },
            |ns| format!("{ns:.2} ns per interpreted instruction"),
        );
        // The interpreter's time is what the other lines leave of the
        // wall time: the run's set-up (memory, the run's thread) is in it.
        let also = if self.mode == Mode::Record {
            "; set-up and writing the trace included"
        } else {
            "; set-up included"
        };
        line(
            &mut t,
            "  interpreter",
            format!("{:.3} s ({per}{also})", s.interpreter_seconds),
        );
        match &s.jit {
            Some(j) => {
                line(
                    &mut t,
                    "  compiled code",
                    if s.fuel.is_some() {
                        format!(
                            "{:.3} s (its instructions are counted: a fuel limit is set)",
                            j.compiled_seconds
                        )
                    } else {
                        format!(
                            "{:.3} s (its instructions are not counted)",
                            j.compiled_seconds
                        )
                    },
                );
                line(
                    &mut t,
                    "  compiler",
                    if j.background {
                        format!(
                            "{:.3} s on its own thread; the interpreter waited {:.3} s for it",
                            j.compile_seconds, j.compile_wait_seconds
                        )
                    } else {
                        format!("{:.3} s", j.compile_seconds)
                    },
                );
            }
            None => {
                line(&mut t, "  compiled code", "- (no JIT)".to_owned());
                line(&mut t, "  compiler", "- (no JIT)".to_owned());
            }
        }
        line(
            &mut t,
            "  profiler model",
            if self.mode == Mode::Jit || self.mode == Mode::Model {
                format!("{:.3} s", s.profiler_seconds)
            } else {
                "- (no model)".to_owned()
            },
        );
        let interpreted = if s.jit.is_some() && s.fuel.is_some() {
            " (the interpreter's and compiled code's: a fuel limit is set)"
        } else if s.jit.is_some() {
            " (by the interpreter; compiled code's are not counted)"
        } else {
            ""
        };
        line(
            &mut t,
            "instructions",
            format!("{}{interpreted}", s.instructions),
        );
        line(
            &mut t,
            "tuples",
            format!(
                "value {} / edge {} / call {}{}",
                s.tuples.value,
                s.tuples.edge,
                s.tuples.call,
                if s.jit.is_some() {
                    " (emitted by the interpreter)"
                } else {
                    ""
                }
            ),
        );
        if toyvm_profiler::spec::is_none(&s.profile) {
            for name in ["intervals", "model state", "messages"] {
                line(&mut t, name, "- (no model)".to_owned());
            }
        } else {
            line(
                &mut t,
                "intervals",
                format!("{} ({} candidates)", s.intervals, s.candidates),
            );
            line(&mut t, "model state", format!("{} bytes", s.state_bytes));
            line(
                &mut t,
                "messages",
                format!("{} ({} modeled cycles)", s.messages, s.cycles),
            );
        }
        // The model feed (threads, lag, waiting, the queue), when a model ran.
        match &s.feed {
            Some(f) => t += &f.text(),
            None => {
                for name in ["model feed", "  waiting on model", "queue"] {
                    line(&mut t, name, "- (no model)".to_owned());
                }
            }
        }
        match &s.jit {
            Some(j) => {
                line(
                    &mut t,
                    "regions",
                    format!(
                        "{} compiled, {} recompiled, {} dropped, {} live ({} bytes of code), {} left to the interpreter by the recompile limits",
                        j.compiles, j.recompiles, j.drops, j.live_regions, j.code_bytes, j.given_up
                    ),
                );
                line(
                    &mut t,
                    "region entries",
                    format!(
                        "{} ({} side exits, {} guard failures, {} handed to the interpreter)",
                        j.region_entries, j.side_exits, j.guard_failures, j.interpret_exits
                    ),
                );
                line(
                    &mut t,
                    "interpreter calls",
                    format!(
                        "{} from compiled code ({} declined for want of machine stack)",
                        j.interpreter_calls, j.interpreter_calls_declined
                    ),
                );
                line(
                    &mut t,
                    "exit tuples",
                    format!(
                        "{} (reported to the profiler for compiled code)",
                        j.exit_tuples
                    ),
                );
            }
            None => {
                for name in [
                    "regions",
                    "region entries",
                    "interpreter calls",
                    "exit tuples",
                ] {
                    line(&mut t, name, "- (no JIT)".to_owned());
                }
            }
        }
        line(
            &mut t,
            "translation",
            self.translation.as_ref().map_or_else(
                || "- (not a WebAssembly module)".to_owned(),
                WasmStats::text,
            ),
        );
        line(&mut t, "result", self.result.to_string());
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mode prints the same lines in the same order.
    #[test]
    fn every_mode_has_one_layout() {
        let names = |text: &str| -> Vec<String> {
            text.lines()
                .map(|l| l.get(..19).unwrap_or(l).trim_end().to_owned())
                .collect()
        };
        let plain = Stats {
            profile: "none".into(),
            instructions: 100,
            interpreter_seconds: 1e-6,
            ..Stats::default()
        };
        let jit = Stats {
            profile: "multihash".into(),
            jit: Some(Default::default()),
            ..plain.clone()
        };
        let model = Stats {
            profile: "multihash".into(),
            ..plain.clone()
        };
        let layouts: Vec<Vec<String>> = [
            (&plain, false),
            (&plain, true),
            (&model, false),
            (&jit, false),
        ]
        .iter()
        .map(|(s, rec)| names(&StatsOut::new(s, Mode::of(s, *rec), 7).text()))
        .collect();
        for l in &layouts[1..] {
            assert_eq!(l, &layouts[0]);
        }
        let text = StatsOut::new(&jit, Mode::Jit, 7).text();
        assert!(
            text.contains("10.00 ns per interpreted instruction"),
            "{text}"
        );
        assert!(text.contains("compiled code's are not counted"), "{text}");
    }

    /// Every mode gives the same JSON keys.
    #[test]
    fn every_mode_has_one_json_shape() {
        let plain = Stats {
            profile: "none".into(),
            ..Stats::default()
        };
        let jit = Stats {
            profile: "multihash".into(),
            jit: Some(Default::default()),
            ..Stats::default()
        };
        let keys = |s: &Stats, m: Mode| -> Vec<String> {
            let v: serde_json::Value =
                serde_json::from_str(&StatsOut::new(s, m, 1).json()).unwrap();
            v.as_object().unwrap().keys().cloned().collect()
        };
        assert_eq!(keys(&plain, Mode::Record), keys(&jit, Mode::Jit));
        let v: serde_json::Value =
            serde_json::from_str(&StatsOut::new(&plain, Mode::Interpreter, 1).json()).unwrap();
        assert!(v["jit"].is_null() && v["ns_per_interpreted_instruction"].is_null());
        assert!(v["translation"].is_null());
        assert_eq!(v["mode"], "interpreter");
        let cost = WasmStats {
            module_bytes: 4096,
            translate_seconds: 0.004,
            functions: 3,
            code_bytes: 2048,
            operators: 100,
            instructions: 150,
        };
        let out = StatsOut::new(&jit, Mode::Jit, 1).translation(Some(cost));
        let w: serde_json::Value = serde_json::from_str(&out.json()).unwrap();
        assert_eq!(w["translation"]["operators"], 100);
        assert_eq!(w["translation"]["instructions"], 150);
        assert!(
            out.text()
                .contains("4096 bytes (2048 of code) in 4.000 ms (2.000 ms per KB of code); 100 operators in 3 functions -> 150 instructions (1.50 per operator)"),
            "{}",
            out.text()
        );
    }
}
