//! The crate's one error type.

use crate::tuple::Kind;

/// Everything that can go wrong in this crate.  Every variant says what was wrong and
/// where: the spec key, the trace line or byte offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A profiler spec string did not parse or names an impossible configuration.
    #[error("bad profiler spec `{spec}`: {msg}")]
    Spec {
        /// The spec text (or the part of it being parsed).
        spec: String,
        /// What was wrong, naming the bad key or value and the valid ones.
        msg: String,
    },
    /// A line of a text trace is malformed.
    #[error("trace line {line}: {msg}")]
    TraceText {
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        msg: String,
    },
    /// A binary trace is malformed.
    #[error("binary trace at byte offset {offset}: {msg}")]
    TraceBinary {
        /// Offset of the first byte of the bad record or header field.
        offset: u64,
        /// What was wrong.
        msg: String,
    },
    /// A line of another tool's output being imported is malformed.
    #[error("{format} line {line}: {msg}")]
    Import {
        /// The tool whose output it is (`lackey`).
        format: &'static str,
        /// 1-based line number.
        line: u64,
        /// What was wrong.
        msg: String,
    },
    /// A model was asked to profile a tuple kind it cannot profile.
    #[error("{model} profiles {supported} tuples only; it cannot profile {requested} tuples")]
    UnsupportedKind {
        /// The model name.
        model: &'static str,
        /// What the model supports, in words.
        supported: &'static str,
        /// The kind that was asked for.
        requested: Kind,
    },
    /// Reading or writing a trace failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// More models than run over one stream at once
    /// (`toyvm_profiler::spec::MAX_MODELS_AT_ONCE`).
    #[error(
        "{count} models over one stream; at most {max} run at once (their tables are all alive together)"
    )]
    TooManyModels {
        /// How many were given.
        count: usize,
        /// The most that run at once.
        max: usize,
    },
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub(crate) fn spec(spec: &str, msg: impl Into<String>) -> Self {
        Error::Spec {
            spec: spec.to_string(),
            msg: msg.into(),
        }
    }
}
