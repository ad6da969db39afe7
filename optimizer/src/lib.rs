//! toyvm's optimizer (being written).
#![deny(unsafe_code)]
