//! `toyvm run`'s flags that act only with another: given where they cannot
//! act, they are an error that says why, not silently ignored.

/// Which of `run`'s dependent flags were given.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFlags<'a> {
    /// The `--profile` spec (`none` without one).
    pub profile: &'a str,
    /// `--no-jit`: interpret only, even with a model.
    pub no_jit: bool,
    /// `--candidates`: print each interval's candidates (needs a model).
    pub candidates: bool,
    /// `--jit-log`: log what the JIT compiles (needs a model and the JIT).
    pub jit_log: bool,
    /// `--async`: install compiled code as soon as it is ready (needs a
    /// model and the JIT).
    pub async_install: bool,
    /// `--dump-clif DIR` was given (needs a model and the JIT).
    pub dump_clif: bool,
    /// `--no-value-spec` (needs a model and the JIT).
    pub no_value_spec: bool,
    /// `--no-call-spec` (needs a model and the JIT).
    pub no_call_spec: bool,
    /// `--kinds KINDS` was given (needs `--record`).
    pub kinds: bool,
    /// `--record-format` was given (needs `--record`).
    pub record_format: bool,
    /// `--lag` was given (needs a model).
    pub lag: bool,
    /// `--threads` was given (needs a model: it places the model's work).
    pub threads: bool,
    /// `--install-lag` was given (needs a model and the JIT).
    pub install_lag: bool,
    /// `--record FILE` was given.
    pub record: bool,
}

/// A flag of `toyvm run` given where it cannot act.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FlagError {
    /// `--candidates` without a profiler model.
    #[error(
        "--candidates needs --profile SPEC: without a profiler model there are no candidates to print"
    )]
    CandidatesWithoutModel,
    /// A flag that acts on the JIT, without a profiler model to drive it.
    #[error(
        "{flag} needs --profile SPEC: it {what}, and the JIT compiles only what a profiler model's candidates name"
    )]
    JitFlagWithoutModel {
        /// The flag (`--jit-log`).
        flag: &'static str,
        /// What it does (`logs what the JIT compiles`).
        what: &'static str,
    },
    /// A flag that acts on the JIT, with `--no-jit`.
    #[error("{flag} cannot act with --no-jit: it {what}, and nothing is compiled")]
    JitFlagWithNoJit {
        /// The flag (`--jit-log`).
        flag: &'static str,
        /// What it does (`logs what the JIT compiles`).
        what: &'static str,
    },
    /// A flag that acts on the profiler model, without one.
    #[error("{flag} needs --profile SPEC: it {what}, and without a model there is none")]
    ModelFlagWithoutModel {
        /// The flag (`--lag`).
        flag: &'static str,
        /// What it does.
        what: &'static str,
    },
    /// `--record-format` without `--record`.
    #[error("--record-format needs --record FILE: it is the recorded trace's format")]
    RecordFormatWithoutRecord,
    /// `--kinds` without `--record`.
    #[error(
        "--kinds needs --record FILE: it chooses the tuple kinds the recorded trace holds (a profiler model takes the kinds its spec names)"
    )]
    KindsWithoutRecord,
}

/// The first flag that cannot act.
pub fn check(f: &RunFlags<'_>) -> Result<(), FlagError> {
    let jit_flags = [
        (f.jit_log, "--jit-log", "logs what the JIT compiles"),
        (
            f.async_install,
            "--async",
            "changes when compiled code is installed",
        ),
        (
            f.dump_clif,
            "--dump-clif",
            "writes the IR of compiled regions",
        ),
        (
            f.no_value_spec,
            "--no-value-spec",
            "changes how regions compile",
        ),
        (
            f.no_call_spec,
            "--no-call-spec",
            "changes how regions compile",
        ),
        (
            f.install_lag,
            "--install-lag",
            "delays installing compiled code",
        ),
    ];
    let model_flags = [
        (
            f.lag,
            "--lag",
            "delays the model's candidates reaching the JIT",
        ),
        (f.threads, "--threads", "places the model's work on threads"),
    ];
    let jit_flag = jit_flags.iter().find(|j| j.0);
    if toyvm_profiler::spec::is_none(f.profile) {
        if f.candidates {
            return Err(FlagError::CandidatesWithoutModel);
        }
        if let Some(&(_, flag, what)) = jit_flag {
            return Err(FlagError::JitFlagWithoutModel { flag, what });
        }
        if let Some(&(_, flag, what)) = model_flags.iter().find(|m| m.0) {
            return Err(FlagError::ModelFlagWithoutModel { flag, what });
        }
    } else if let Some(&(_, flag, what)) = jit_flag.filter(|_| f.no_jit) {
        return Err(FlagError::JitFlagWithNoJit { flag, what });
    }
    if f.kinds && !f.record {
        return Err(FlagError::KindsWithoutRecord);
    }
    if f.record_format && !f.record {
        return Err(FlagError::RecordFormatWithoutRecord);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_flag_is_checked_against_what_it_needs() {
        let none = RunFlags {
            profile: "none",
            ..RunFlags::default()
        };
        let model = RunFlags {
            profile: "perfect",
            ..RunFlags::default()
        };
        assert!(check(&none).is_ok() && check(&model).is_ok());
        let candidates = RunFlags {
            candidates: true,
            ..none
        };
        assert_eq!(check(&candidates), Err(FlagError::CandidatesWithoutModel));
        assert!(
            check(&candidates)
                .unwrap_err()
                .to_string()
                .starts_with("--candidates needs --profile")
        );
        assert!(
            check(&RunFlags {
                candidates: true,
                no_jit: true,
                ..model
            })
            .is_ok()
        );
        let log = RunFlags {
            jit_log: true,
            ..model
        };
        assert!(check(&log).is_ok());
        assert!(
            check(&RunFlags {
                no_jit: true,
                ..log
            })
            .unwrap_err()
            .to_string()
            .contains("--no-jit")
        );
        assert!(
            check(&RunFlags {
                no_call_spec: true,
                ..none
            })
            .unwrap_err()
            .to_string()
            .starts_with("--no-call-spec needs")
        );
        let kinds = RunFlags {
            kinds: true,
            ..model
        };
        assert_eq!(check(&kinds), Err(FlagError::KindsWithoutRecord));
        assert!(
            check(&kinds)
                .unwrap_err()
                .to_string()
                .starts_with("--kinds needs --record")
        );
        assert!(
            check(&RunFlags {
                record: true,
                ..kinds
            })
            .is_ok()
        );
        // Issue 34: the model's and the trace's flags are refused where
        // they cannot act, like the others.
        for (f, starts) in [
            (RunFlags { lag: true, ..none }, "--lag needs --profile"),
            (
                RunFlags {
                    threads: true,
                    ..none
                },
                "--threads needs --profile",
            ),
            (
                RunFlags {
                    install_lag: true,
                    ..none
                },
                "--install-lag needs --profile",
            ),
            (
                RunFlags {
                    record_format: true,
                    ..none
                },
                "--record-format needs --record",
            ),
        ] {
            let e = check(&f).unwrap_err().to_string();
            assert!(e.starts_with(starts), "{e}");
        }
        assert!(check(&RunFlags { lag: true, ..model }).is_ok());
        assert!(
            check(&RunFlags {
                install_lag: true,
                no_jit: true,
                ..model
            })
            .unwrap_err()
            .to_string()
            .contains("--no-jit")
        );
    }
}
