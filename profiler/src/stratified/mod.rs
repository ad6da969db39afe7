//! Stratified sampling (001 section 3): the sampler components `R_r`, `P_r`, `CR_r` and
//! the hash splitter `H[X]_n`, composed as the paper writes them (default
//! `H[P_256]_2048`), optionally followed by the associative second level A_k (default
//! A_16), feeding software that accumulates the messages into estimates.
//!
//! A message from a sampler without a counter carries the implied count r; one from a
//! `CR` sampler carries the elements its substream saw since its last sample (section
//! 3.3).  Per-interval candidates are the tuples whose estimate over the interval reaches
//! the threshold.
//!
//! Deviations.  The paper profiles continuously; this model answers per interval so it
//! can be compared with the others: software keeps one estimate table per interval and
//! drains A_k at each interval end, while the sampler's counters carry over (their
//! residues belong to the stream, not the interval).  With r = 256 and short intervals
//! most tuples get no message at all; that is the design's behaviour, not a bug.  Kinds
//! are folded into the hash as in [`crate::hash`].

mod sampler;
mod software;

pub use sampler::Sampler;
pub use software::{CYCLES_PER_MESSAGE, Software};

use crate::contract::{Candidate, Overhead, Profiler};
use crate::spec::{Estimator, ProfilerSpec, SamplerExpr, StratifiedOptions};

fn leaf(x: &SamplerExpr) -> &SamplerExpr {
    match x {
        SamplerExpr::Hash(inner, _) => leaf(inner),
        other => other,
    }
}
use crate::tuple::{KindSet, Tuple};

/// A sampler expression feeding software through an optional A_k.
#[derive(Debug)]
pub struct Stratified {
    spec: ProfilerSpec,
    threshold: u64,
    sampler: Sampler,
    software: Software,
}

impl Stratified {
    /// A model from its spec and options.
    pub fn new(spec: ProfilerSpec, opts: StratifiedOptions) -> Self {
        Stratified {
            threshold: spec.threshold_count(),
            sampler: Sampler::new(&opts.sampler, spec.seed),
            software: Software::new(
                opts.second,
                opts.estimator == Estimator::Share
                    && matches!(leaf(&opts.sampler), SamplerExpr::CountedRandom(_)),
            ),
            spec,
        }
    }
}

impl Profiler for Stratified {
    fn spec(&self) -> &ProfilerSpec {
        &self.spec
    }

    fn supported_kinds(&self) -> KindSet {
        KindSet::ALL
    }

    #[inline]
    fn observe(&mut self, t: Tuple) {
        if let Some(count) = self.sampler.sample(&t) {
            let stratum = if self.sampler.counted() {
                self.sampler.stratum_of(&t) as u32
            } else {
                0
            };
            self.software.message(t, count, stratum);
        }
    }

    fn observe_batch(&mut self, batch: &[Tuple]) {
        let software = &mut self.software;
        self.sampler.sample_batch(batch, |t, count, stratum| {
            software.message(t, count, stratum as u32)
        });
    }

    fn end_interval_into(
        &mut self,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        self.software.end_interval(self.threshold, estimates, out)
    }

    fn state_bytes(&self) -> usize {
        self.sampler.state_bits().div_ceil(8) + self.software.state_bytes()
    }

    fn overhead(&self) -> Overhead {
        self.software.overhead()
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::parse_spec;
    use crate::tuple::Tuple;

    #[test]
    fn a_dominant_tuple_is_estimated_within_sampling_error() {
        let mut m = parse_spec("stratified:sampler=H[P_16]_64,interval=10000,threshold=10%")
            .unwrap()
            .build();
        for i in 0..10_000u64 {
            m.observe(if i % 2 == 0 {
                Tuple::value(1, 1)
            } else {
                Tuple::value(2, i)
            });
        }
        let c = m.end_interval();
        assert_eq!(c[0].tuple, Tuple::value(1, 1));
        // Its substream also holds ~78 other tuples, so a few samples may go to them.
        assert!(c[0].count.abs_diff(5000) <= 250, "{}", c[0].count);
        assert!(m.overhead().messages > 0);
        // 64 counters of 5 bits plus A_16.
        assert_eq!(m.state_bytes(), 40 + 16 * 22);
    }
}
