//! Models of hardware profilers (placeholder: being written).
#![forbid(unsafe_code)]

pub mod tuple;
pub use tuple::{Kind, Tuple};
