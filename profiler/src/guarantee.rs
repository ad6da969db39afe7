//! What each model promises about its counts, stated by the model's spec
//! so that a checker (`toyvm verify`) needs no knowledge of any model: it
//! checks a model's candidates against exact counts within what its
//! [`Guarantee`] allows.
//!
//! - Counting models (perfect, multi-hash, single-hash, tagged, Conte's)
//!   see every event: [`Guarantee::Counted`], counts checked against the
//!   checker's relative tolerance.
//! - The stratified sampler (001 section 3.3) counts one event in `period`
//!   on average: [`Guarantee::Sampled`]. A count `c` is then `period` times
//!   a binomial sample; it may err by about `period + 3 sqrt(c (period -
//!   1))`, and only entries of at least `2 period` are sure to be seen.
//! - RAP (003 section 3) bounds each range's count from below, within
//!   `max(h, eps n)` of exact, `h` the tree's height and `n` the events it
//!   has seen: [`Guarantee::RangeBound`].

use crate::spec::{Model, ProfilerSpec, SamplerExpr};

/// What a model's counts promise (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub enum Guarantee {
    /// Every event counted: counts are exact up to the model's collisions.
    Counted,
    /// One event in `period` sampled on average; counts scaled back up.
    Sampled {
        /// Events per sample.
        period: u64,
    },
    /// RAP's one-sided bound over hot ranges.
    RangeBound(RangeBound),
}

/// RAP's bound, and the range setup a reference needs to check it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeBound {
    /// The range tree's height: key bits over bits per level.
    pub height: u32,
    /// The bound's relative part (RAP's `eps`).
    pub eps: f64,
    /// Whether the tree is cleared at every interval end (otherwise `n`
    /// counts every event since the run began).
    pub reset: bool,
    /// Dimensions of the range keys (1: the tuple's first word; 2: both).
    pub dims: u32,
    /// The share of the tree's events that makes a range hot.
    pub hot: f64,
}

impl RangeBound {
    /// How far below exact a range's count may be after the tree has seen
    /// `events` events: `max(h, eps * events)`.
    pub fn error(&self, events: u64) -> f64 {
        (self.height as f64).max(self.eps * events as f64)
    }
}

impl Guarantee {
    /// The guarantee of the model `spec` builds.
    pub fn of(spec: &ProfilerSpec) -> Guarantee {
        match &spec.model {
            Model::Stratified(o) => Guarantee::Sampled {
                period: o.sampler.period(),
            },
            Model::Rap(o) => Guarantee::RangeBound(RangeBound {
                height: crate::rap::KEY_BITS / o.branching.trailing_zeros(),
                eps: o.eps,
                reset: o.reset,
                dims: o.dims,
                hot: o.hot,
            }),
            _ => Guarantee::Counted,
        }
    }

    /// Events per counted event: the sampling period, 1 unless sampled.
    pub fn period(&self) -> u64 {
        match self {
            Guarantee::Sampled { period } => *period,
            _ => 1,
        }
    }

    /// RAP's bound, for a model that reports hot ranges.
    pub fn range_bound(&self) -> Option<&RangeBound> {
        match self {
            Guarantee::RangeBound(b) => Some(b),
            _ => None,
        }
    }
}

impl SamplerExpr {
    /// How many events one sample stands for on average (`r` of `R_r`,
    /// `P_r` and `CR_r`; a hash split samples each substream alike).
    pub fn period(&self) -> u64 {
        match self {
            SamplerExpr::Random(r) | SamplerExpr::Periodic(r) | SamplerExpr::CountedRandom(r) => *r,
            SamplerExpr::Hash(inner, _) => inner.period(),
        }
    }
}

impl ProfilerSpec {
    /// What the model's counts promise ([`Guarantee::of`]).
    pub fn guarantee(&self) -> Guarantee {
        Guarantee::of(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_spec;

    #[test]
    fn each_model_states_its_guarantee() {
        let g = |s: &str| parse_spec(s).unwrap().guarantee();
        assert_eq!(g("multihash"), Guarantee::Counted);
        assert_eq!(g("perfect"), Guarantee::Counted);
        assert_eq!(g("stratified"), Guarantee::Sampled { period: 256 });
        let rap = g("rap");
        let b = rap.range_bound().expect("rap bounds ranges");
        assert_eq!(rap.period(), 1);
        assert!(b.height >= 1 && b.eps > 0.0);
        assert_eq!(b.error(0), b.height as f64);
    }
}
