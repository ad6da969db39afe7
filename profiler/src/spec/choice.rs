//! `none` or a model: what every `--profile` flag, `profile_str` and comparison column
//! chooses. The one place that knows the word `none`.

use super::{ProfilerSpec, parse_spec};
use crate::error::Result;
use std::fmt;

/// The word that chooses no model (the interpreter alone, the JIT off).
pub const NONE: &str = "none";

/// No model, or a model with its spec.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// No model: the interpreter alone (the baseline and the output oracle).
    None,
    /// A profiler model (driving the JIT, where the JIT is on).
    Model(ProfilerSpec),
}

impl Choice {
    /// Parses `none` or a spec (surrounding blanks ignored).
    pub fn parse(s: &str) -> Result<Choice> {
        if is_none(s) {
            return Ok(Choice::None);
        }
        parse_spec(s).map(Choice::Model)
    }

    /// The model's spec; `None` for no model.
    pub fn spec(&self) -> Option<&ProfilerSpec> {
        match self {
            Choice::None => None,
            Choice::Model(s) => Some(s),
        }
    }

    /// The model's spec, taken; `None` for no model.
    pub fn into_spec(self) -> Option<ProfilerSpec> {
        match self {
            Choice::None => None,
            Choice::Model(s) => Some(s),
        }
    }

    /// `none`, or the model's name.
    pub fn model_name(&self) -> &'static str {
        match self {
            Choice::None => NONE,
            Choice::Model(s) => s.model.name(),
        }
    }

    /// `none`, or the canonical spec (what [`Choice::parse`] reads back).
    pub fn spec_string(&self) -> String {
        self.to_string()
    }
}

/// Whether a spec, model name or report column says `none` (surrounding blanks ignored).
pub fn is_none(s: &str) -> bool {
    s.trim() == NONE
}

impl From<Option<ProfilerSpec>> for Choice {
    fn from(spec: Option<ProfilerSpec>) -> Self {
        spec.map_or(Choice::None, Choice::Model)
    }
}

impl fmt::Display for Choice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Choice::None => f.write_str(NONE),
            Choice::Model(s) => s.fmt(f),
        }
    }
}

impl std::str::FromStr for Choice {
    type Err = crate::Error;
    fn from_str(s: &str) -> Result<Self> {
        Choice::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_and_models_round_trip() {
        assert_eq!(Choice::parse(" none ").unwrap(), Choice::None);
        assert_eq!(Choice::None.to_string(), "none");
        let c = Choice::parse("multihash:interval=100").unwrap();
        assert_eq!(c.model_name(), "multihash");
        assert_eq!(Choice::parse(&c.to_string()).unwrap(), c);
        assert!(Choice::parse("nonesuch").is_err());
        assert!(Choice::parse("none:interval=5").is_err());
        assert_eq!(Choice::from(None), Choice::None);
    }
}
