//! The models and their options: the data half of the spec grammar, with each model's
//! keys and the papers' best configurations as defaults.

use crate::tuple::{Kind, KindSet};
use std::fmt;

/// The model and its options.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// Exact counts: the oracle.
    Perfect,
    /// Multi-hash (000, section 6).
    MultiHash(MultiHashOptions),
    /// The best single hash, BSH (000, section 5): multi-hash options with the BSH preset.
    SingleHash(MultiHashOptions),
    /// A sampler expression (001, section 3).
    Stratified(StratifiedOptions),
    /// The tagged compressor (001, section 4).
    Tagged(TaggedOptions),
    /// Range-adaptive profiling (004).
    Rap(RapOptions),
    /// Branch-predictor profiling (002).
    Conte(ConteOptions),
}

/// Options of `multihash` and `singlehash`.
#[derive(Clone, Debug, PartialEq)]
pub struct MultiHashOptions {
    /// n: number of hash tables (`tables`).
    pub tables: usize,
    /// Total counters over all tables (`entries`), split evenly.
    pub entries: usize,
    /// Conservative update (`cu`).
    pub conservative: bool,
    /// Reset a tuple's counters when it is promoted (`reset`).
    pub reset: bool,
    /// Retain last interval's candidates in the accumulator (`retain`).
    pub retain: bool,
    /// Shielding: tuples in the accumulator skip the hash tables (`shield`).
    pub shield: bool,
    /// Accumulator entries (`accumulator`); 0 means the paper's 100/t.
    pub accumulator: usize,
    /// Counter width in bits (`counter_bits`).
    pub counter_bits: u32,
}

impl MultiHashOptions {
    /// The multi-hash paper's best configuration: 4 tables, 2K counters, C1 R0, retaining.
    pub const BEST: MultiHashOptions = MultiHashOptions {
        tables: 4,
        entries: 2048,
        conservative: true,
        reset: false,
        retain: true,
        shield: true,
        accumulator: 0,
        counter_bits: 24,
    };
    /// The best single hash (BSH): one 2K table with reset and retaining.
    pub const BSH: MultiHashOptions = MultiHashOptions {
        tables: 1,
        entries: 2048,
        conservative: false,
        reset: true,
        retain: true,
        shield: true,
        accumulator: 0,
        counter_bits: 24,
    };
}

/// A sampler expression of 001 section 3.3: `R_r`, `P_r`, `CR_r`, `H[X]_n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SamplerExpr {
    /// `R_r`: select each element with probability 1/r.
    Random(u64),
    /// `P_r`: select every r-th element.
    Periodic(u64),
    /// `CR_r`: `R_r` with a counter of the elements since the last sample.
    CountedRandom(u64),
    /// `H[X]_n`: hash-split into n substreams, each sampled by its own `X`.
    Hash(Box<SamplerExpr>, usize),
}

impl SamplerExpr {
    /// Parses `H[P_256]_2048` and friends.
    pub fn parse(s: &str) -> Option<SamplerExpr> {
        let num = |x: &str| x.parse::<u64>().ok().filter(|&v| v >= 1);
        if let Some(rest) = s.strip_prefix("H[") {
            let close = rest.rfind("]_")?;
            let inner = SamplerExpr::parse(&rest[..close])?;
            let n = num(&rest[close + 2..])? as usize;
            return (n <= 1 << 16).then(|| SamplerExpr::Hash(Box::new(inner), n));
        }
        if let Some(r) = s.strip_prefix("CR_") {
            return Some(SamplerExpr::CountedRandom(num(r)?));
        }
        if let Some(r) = s.strip_prefix("R_") {
            return Some(SamplerExpr::Random(num(r)?));
        }
        if let Some(r) = s.strip_prefix("P_") {
            return Some(SamplerExpr::Periodic(num(r)?));
        }
        None
    }
}

impl fmt::Display for SamplerExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SamplerExpr::Random(r) => write!(f, "R_{r}"),
            SamplerExpr::Periodic(r) => write!(f, "P_{r}"),
            SamplerExpr::CountedRandom(r) => write!(f, "CR_{r}"),
            SamplerExpr::Hash(x, n) => write!(f, "H[{x}]_{n}"),
        }
    }
}

/// Options of `stratified`.
#[derive(Clone, Debug, PartialEq)]
pub struct StratifiedOptions {
    /// The sampler (`sampler`), default `H[P_256]_2048`.
    pub sampler: SamplerExpr,
    /// Entries of the associative second level A_k (`second=A_16` or `none`).
    pub second: Option<usize>,
    /// How software estimates a tuple's count from a counted sampler's
    /// (`CR_r`, `H[CR_r]_n`) messages (`estimator`).
    pub estimator: Estimator,
}

/// The counted samplers' estimator (001 section 3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Estimator {
    /// The paper's: the sum of the counts the tuple's messages carry
    /// (`estimator=sum`, the default).
    #[default]
    Sum,
    /// The substream's length (the sum of its messages' counts) times the
    /// tuple's share of the substream's messages (`estimator=share`): the
    /// counter tells software the substream's length, and this estimate has
    /// the variance of `P_r`'s, which is what makes `CR_r` equivalent to
    /// `P_r` as the paper's Figure 4 reports. Not the paper's text.
    Share,
}

/// Options of `tagged`.
#[derive(Clone, Debug, PartialEq)]
pub struct TaggedOptions {
    /// Total entries (`entries`).
    pub entries: usize,
    /// Associativity (`ways`).
    pub ways: usize,
    /// Partial tag bits (`tag_bits`).
    pub tag_bits: u32,
    /// Hit counter bits (`hit_bits`); the trigger threshold is 2^hit_bits.
    pub hit_bits: u32,
    /// Miss counter bits (`miss_bits`).
    pub miss_bits: u32,
    /// Second level A_k (`second`).
    pub second: Option<usize>,
}

/// Options of `rap`.
#[derive(Clone, Debug, PartialEq)]
pub struct RapOptions {
    /// Error bound as a fraction of the stream (`eps`).
    pub eps: f64,
    /// Branching factor b (`branching`): 2, 4, 16 or 256 (1-D); 4, 16 or 256 (2-D).
    pub branching: u32,
    /// Merging event buffer entries (`buffer`, 0 = none).
    pub buffer: usize,
    /// 1 = one tree over the tuple key `a:b`; 2 = the 2-D tree over `(a, b)` (`dims`).
    pub dims: u32,
    /// Growth factor of the merge period (`q`).
    pub q: u64,
    /// Events before the first batched merge (`merge_first`).
    pub merge_first: u64,
    /// Hot-range threshold as a fraction of the events (`hot`).
    pub hot: f64,
    /// Start a new tree every interval (`reset=on`) or keep one tree over the whole
    /// stream as the paper does (`reset=off`, the default).
    pub reset: bool,
}

/// Which of Conte's schemes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConteScheme {
    /// BTB with 2-bit counters and the Table II estimate.
    OneLevel,
    /// History registers with marker and full bits.
    TwoLevel,
    /// The ideal two-counter scheme.
    Counter,
}

impl ConteScheme {
    pub(crate) fn word(self) -> &'static str {
        match self {
            ConteScheme::OneLevel => "onelevel",
            ConteScheme::TwoLevel => "twolevel",
            ConteScheme::Counter => "counter",
        }
    }
}

/// Options of `conte`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConteOptions {
    /// Scheme (`scheme`).
    pub scheme: ConteScheme,
    /// Buffer entries (`entries`).
    pub entries: usize,
    /// Buffer associativity (`ways`); LRU within a set.
    pub ways: usize,
    /// History register width for `twolevel` (`history`).
    pub history: u32,
    /// S: branches between sampling points (`period`).
    pub period: u64,
    /// B-bar: instructions per basic block (`bbar`); our N counts branches, so 1.
    pub bbar: f64,
    /// A branch edge `(a, b)` is a fall-through when `b == a + fallthrough` (`fallthrough`).
    pub fallthrough: u64,
}

impl Model {
    /// The name used in specs.
    pub fn name(&self) -> &'static str {
        match self {
            Model::Perfect => "perfect",
            Model::MultiHash(_) => "multihash",
            Model::SingleHash(_) => "singlehash",
            Model::Stratified(_) => "stratified",
            Model::Tagged(_) => "tagged",
            Model::Rap(_) => "rap",
            Model::Conte(_) => "conte",
        }
    }

    /// The model's keys beyond the common ones.
    pub fn keys(&self) -> &'static [&'static str] {
        match self {
            Model::Perfect => &[],
            Model::MultiHash(_) | Model::SingleHash(_) => &[
                "tables",
                "entries",
                "cu",
                "reset",
                "retain",
                "shield",
                "accumulator",
                "counter_bits",
            ],
            Model::Stratified(_) => &["sampler", "second"],
            Model::Tagged(_) => &[
                "entries",
                "ways",
                "tag_bits",
                "hit_bits",
                "miss_bits",
                "second",
            ],
            Model::Rap(_) => &[
                "eps",
                "branching",
                "buffer",
                "dims",
                "q",
                "merge_first",
                "reset",
                "hot",
            ],
            Model::Conte(_) => &[
                "scheme",
                "entries",
                "ways",
                "history",
                "period",
                "bbar",
                "fallthrough",
            ],
        }
    }

    /// The default model of each name.
    pub fn default_for(name: &str) -> Option<Model> {
        Some(match name {
            "perfect" => Model::Perfect,
            "multihash" => Model::MultiHash(MultiHashOptions::BEST),
            "singlehash" => Model::SingleHash(MultiHashOptions::BSH),
            "stratified" => Model::Stratified(StratifiedOptions {
                sampler: SamplerExpr::Hash(Box::new(SamplerExpr::Periodic(256)), 2048),
                second: Some(16),
                estimator: Estimator::Sum,
            }),
            "tagged" => Model::Tagged(TaggedOptions {
                entries: 2048,
                ways: 2,
                tag_bits: 2,
                hit_bits: 8,
                miss_bits: 3,
                second: Some(16),
            }),
            "rap" => Model::Rap(RapOptions {
                eps: 0.01,
                branching: 4,
                buffer: 64,
                dims: 1,
                q: 2,
                merge_first: 1024,
                hot: 0.10,
                reset: false,
            }),
            "conte" => Model::Conte(ConteOptions {
                scheme: ConteScheme::TwoLevel,
                entries: 1024,
                ways: 4,
                history: 10,
                period: 1000,
                bbar: 1.0,
                fallthrough: 1,
            }),
            _ => return None,
        })
    }

    /// How many distinct tuples the model can tell apart in an interval of
    /// `interval` tuples, for plotting a workload's hot set against it
    /// (`None`: unbounded, the perfect profiler). Not a figure from the
    /// papers, a choice for comparing unlike models on one axis:
    ///
    /// - `multihash`, `singlehash`: counters per table (`entries / tables`):
    ///   more distinct tuples than that share counters in every table
    ///   (000, section 5: aliasing);
    /// - `stratified`: the samples it takes per interval (`interval / r`
    ///   for `P_r`, `R_r`, `CR_r` and `H[X]_n` over them, 001 section 3.3):
    ///   a tuple must be sampled to be seen;
    /// - `tagged`, `conte`: entries (001 section 4; 002's branch buffer);
    /// - `rap`: `1 / eps`, the ranges of weight `eps` an interval can hold
    ///   apart (004, section 3).
    pub fn capacity(&self, interval: u64) -> Option<u64> {
        fn period(s: &SamplerExpr) -> u64 {
            match s {
                SamplerExpr::Random(r)
                | SamplerExpr::Periodic(r)
                | SamplerExpr::CountedRandom(r) => *r,
                SamplerExpr::Hash(x, _) => period(x),
            }
        }
        Some(match self {
            Model::Perfect => return None,
            Model::MultiHash(o) | Model::SingleHash(o) => (o.entries / o.tables.max(1)) as u64,
            Model::Stratified(o) => (interval / period(&o.sampler).max(1)).max(1),
            Model::Tagged(o) => o.entries as u64,
            Model::Conte(o) => o.entries as u64,
            Model::Rap(o) => (1.0 / o.eps).round().max(1.0) as u64,
        })
    }

    /// Kinds the model can profile.
    pub fn supported_kinds(&self) -> KindSet {
        match self {
            Model::Conte(_) => KindSet::only(Kind::Edge),
            _ => KindSet::ALL,
        }
    }
}
