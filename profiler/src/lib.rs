//! Models of hardware profilers.
#![forbid(unsafe_code)]

pub mod conte;
pub mod driver;
pub mod error;
pub mod hash;
pub mod metrics;
pub mod multihash;
pub mod perfect;
pub mod profiler;
pub mod spec;
pub mod stratified;
pub mod tagged;
pub mod trace;
pub mod tuple;

pub use driver::{IntervalDriver, IntervalEnd};
pub use error::{Error, Result};
pub use profiler::{Candidate, HotRange, Overhead, Profiler};
pub use spec::{ProfilerSpec, parse_spec, parse_specs};
pub use tuple::{Kind, KindSet, Tuple};
