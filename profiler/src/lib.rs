//! Software models of hardware profilers, with an exact oracle and the papers' error
//! metrics.  Usable on its own by any runtime: it depends only on the tuple stream.
//!
//! Use this crate when you write a runtime (or a trace analysis) and want a hardware
//! profiler's view of its events without toyvm's VM: have your interpreter emit a
//! [`Tuple`] per loaded value, taken branch and call ([`Tuple::value`], [`Tuple::edge`],
//! [`Tuple::call`], program counters packed by [`Tuple::pc`]), build a model from a spec
//! string, and feed it batches through an [`IntervalDriver`], whose callback hands you
//! each ended interval's hot [`Candidate`]s to act on (toyvm's runtime compiles them).
//! To judge a model rather than use it, [`profile_stream`] runs several over one stream
//! against the exact oracle.
//!
//! ```
//! use toyvm_profiler::{parse_spec, Tuple};
//!
//! // The multi-hash paper's best configuration, 100-tuple intervals, 5% threshold.
//! let spec = parse_spec("multihash:tables=4,entries=2048,interval=100,threshold=5%").unwrap();
//! let mut model = spec.build();
//! for i in 0..100u64 {
//!     // One load pc that sees the value 7 a third of the time.
//!     let value = if i % 3 == 0 { 7 } else { i };
//!     model.observe(Tuple::value(Tuple::pc(1, 8), value));
//! }
//! for c in model.end_interval() {
//!     println!("{} x {}", c.tuple, c.count);
//! }
//! # let c = parse_spec("multihash:interval=100,threshold=5%").unwrap();
//! # assert_eq!(c.threshold_count(), 5);
//! ```
//!
//! Map of the crate:
//!
//! - [`contract`]: [`Profiler`], the trait every model implements (its contract is a
//!   numbered list), and what it returns; [`IntervalDriver`] ends intervals every L tuples
//!   for one model or one per kind.
//! - [`spec`]: the spec-string grammar ([`parse_spec`], [`parse_specs`]); every model and
//!   option is a key, defaults are the papers' best configurations.
//! - Models: [`perfect`] (the oracle), [`multihash`] (also the single-hash baseline),
//!   [`stratified`] (samplers, A_k and the software side), [`tagged`], [`rap`], [`conte`].
//! - [`metrics`]: error E and its four parts, invariance error, arc-weight error, range
//!   error, precision/recall/F1.  [`evaluation`]: runs models over a stream against the
//!   oracle and reports how each did (the library half of `toyvm profile`).
//! - [`trace`]: the text and binary trace formats; [`lackey`] imports native programs'
//!   streams from Valgrind's Lackey tool.  [`synth`]: synthetic streams.
//! - [`hash`]: the papers' hash function and the deterministic random source.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod build;
pub mod conte;
pub mod contract;
pub mod driver;
pub mod error;
pub mod evaluation;
pub mod guarantee;
pub mod hash;
pub mod lackey;
pub mod metrics;
pub mod multihash;
pub mod perfect;
pub mod rap;
pub mod spec;
pub mod stratified;
pub mod synth;
pub mod tagged;
pub mod trace;
pub mod tuple;

pub use contract::{Candidate, HotRange, Overhead, Profiler};

pub use driver::{IntervalDriver, IntervalEnd};
pub use error::{Error, Result};
pub use evaluation::{ProfileReport, StreamProfiler, profile_stream};
pub use spec::{Choice, ProfilerSpec, parse_spec, parse_specs};
pub use trace::{TraceReader, TraceWriter};
pub use tuple::{Kind, KindSet, Tuple};
