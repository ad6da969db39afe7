//! Spec strings: the one grammar that selects and configures every model.
//!
//! ```text
//! spec    := model [ ':' option { ',' option } ]
//! option  := key '=' value
//! specs   := spec { ';' spec }          (see parse_specs)
//! ```
//!
//! Keys every model takes: `interval` (L, tuples per interval), `threshold` (candidate
//! threshold: `1%` or `0.01`), `kinds` (`all`, or `value+edge+call` in any subset) and
//! `seed` (for the models that draw random numbers).  Model keys and their defaults (the
//! papers' best configurations) are listed in [`Model`] and printed by [`ProfilerSpec`]'s
//! `Display`, which is canonical: every key, in a fixed order, so it round-trips.
//!
//! Several specs in one string are separated by `;` because a spec itself contains `,`.
//! The `H[...]` sampler expressions contain neither.  A CLI may also take the flag
//! repeated (`--profile A --profile B`); each value goes through [`parse_specs`], so both
//! forms mix.
//!
//! | model | keys (defaults) |
//! |---|---|
//! | `perfect` | none |
//! | `multihash` | `tables=4,entries=2048,cu=on,reset=off,retain=on,shield=on,accumulator=0` (100/t)`,counter_bits=24` |
//! | `singlehash` | the same keys, defaults `tables=1,cu=off,reset=on,retain=on` (BSH) |
//! | `stratified` | `sampler=H[P_256]_2048,second=A_16` |
//! | `tagged` | `entries=2048,ways=2,tag_bits=2,hit_bits=8,miss_bits=3,second=A_16` |
//! | `rap` | `eps=1%,branching=4,buffer=64,dims=1,q=2,merge_first=1024,reset=off,hot=10%` |
//! | `conte` | `scheme=twolevel,entries=1024,ways=4,history=10,period=1000,bbar=1,fallthrough=1` (edges only) |
//!
//! Common defaults: `interval=10000,threshold=1%,kinds=all,seed=1` (`kinds=edge` for
//! `conte`).

use crate::error::{Error, Result};
use crate::profiler::Profiler;
use crate::tuple::{Kind, KindSet};
use std::fmt;

mod model;

pub use model::{
    ConteOptions, ConteScheme, Model, MultiHashOptions, RapOptions, SamplerExpr, StratifiedOptions,
    TaggedOptions,
};

/// A parsed, validated spec: the model, its options and the interval settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfilerSpec {
    /// Which model and its model-specific options.
    pub model: Model,
    /// L: tuples per interval.
    pub interval: u64,
    /// Candidate threshold as a fraction of `interval` (0.01 = 1%).
    pub threshold: f64,
    /// Kinds the model profiles; tuples of other kinds are not shown to it.
    pub kinds: KindSet,
    /// Seed for every random choice the model makes.
    pub seed: u64,
}

/// Every model name.
pub const MODEL_NAMES: &[&str] = &[
    "perfect",
    "multihash",
    "singlehash",
    "stratified",
    "tagged",
    "rap",
    "conte",
];
const COMMON_KEYS: &[&str] = &["interval", "threshold", "kinds", "seed"];

/// Parses one spec.
pub fn parse_spec(s: &str) -> Result<ProfilerSpec> {
    let s = s.trim();
    let (name, opts) = match s.split_once(':') {
        Some((n, o)) => (n.trim(), o),
        None => (s, ""),
    };
    let mut model = Model::default_for(name).ok_or_else(|| {
        Error::spec(
            s,
            format!(
                "unknown model `{name}`; valid models: {}",
                MODEL_NAMES.join(", ")
            ),
        )
    })?;
    let mut spec = ProfilerSpec {
        interval: 10_000,
        threshold: 0.01,
        kinds: model.supported_kinds(),
        seed: 1,
        model: Model::Perfect,
    };
    if let Model::Conte(_) = model {
        spec.kinds = KindSet::only(Kind::Edge);
    }
    for opt in opts.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (key, value) = opt
            .split_once('=')
            .ok_or_else(|| Error::spec(s, format!("option `{opt}` is not key=value")))?;
        let (key, value) = (key.trim(), value.trim());
        let bad = |what: &str| Error::spec(s, format!("key `{key}`: `{value}` is not {what}"));
        match key {
            "interval" => {
                spec.interval = parse_u64(value)
                    .filter(|&v| v > 0)
                    .ok_or_else(|| bad("a positive integer"))?
            }
            "threshold" => {
                spec.threshold = parse_fraction(value)
                    .filter(|&v| v > 0.0 && v <= 1.0)
                    .ok_or_else(|| bad("a fraction in (0, 1] such as 1% or 0.01"))?
            }
            "kinds" => {
                spec.kinds = KindSet::parse(value)
                    .filter(|k| !k.is_empty())
                    .ok_or_else(|| bad("`all` or kinds joined by + (value, edge, call)"))?
            }
            "seed" => spec.seed = parse_u64(value).ok_or_else(|| bad("an unsigned integer"))?,
            _ => set_model_key(&mut model, key, value).map_err(|msg| {
                Error::spec(
                    s,
                    msg.unwrap_or_else(|| {
                        format!(
                            "unknown key `{key}` for {}; valid keys: {}",
                            model.name(),
                            COMMON_KEYS
                                .iter()
                                .chain(model.keys())
                                .copied()
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }),
                )
            })?,
        }
    }
    validate(s, &model, &spec)?;
    spec.model = model;
    Ok(spec)
}

/// Parses several specs separated by `;` (a spec itself contains commas).
pub fn parse_specs(s: &str) -> Result<Vec<ProfilerSpec>> {
    let specs: Vec<ProfilerSpec> = s
        .split(';')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(parse_spec)
        .collect::<Result<_>>()?;
    if specs.is_empty() {
        return Err(Error::spec(s, "no spec given"));
    }
    Ok(specs)
}

/// `Err(None)`: unknown key; `Err(Some(msg))`: bad value.
fn set_model_key(model: &mut Model, key: &str, v: &str) -> std::result::Result<(), Option<String>> {
    let bad = |what: &str| Some(format!("key `{key}`: `{v}` is not {what}"));
    let usize_pos = |what: &str| {
        parse_u64(v)
            .filter(|&x| x > 0)
            .map(|x| x as usize)
            .ok_or_else(|| bad(what))
    };
    let flag = || parse_flag(v).ok_or_else(|| bad("on or off"));
    match model {
        Model::Perfect => return Err(None),
        Model::MultiHash(o) | Model::SingleHash(o) => match key {
            "tables" => o.tables = usize_pos("a positive integer")?,
            "entries" => o.entries = usize_pos("a positive integer")?,
            "cu" => o.conservative = flag()?,
            "reset" => o.reset = flag()?,
            "retain" => o.retain = flag()?,
            "shield" => o.shield = flag()?,
            "accumulator" => {
                o.accumulator = parse_u64(v).ok_or_else(|| bad("an integer (0 = 100/t)"))? as usize
            }
            "counter_bits" => {
                o.counter_bits = parse_u64(v)
                    .filter(|b| (1..=32).contains(b))
                    .ok_or_else(|| bad("a width in 1..=32"))?
                    as u32
            }
            _ => return Err(None),
        },
        Model::Stratified(o) => match key {
            "sampler" => {
                o.sampler = SamplerExpr::parse(v).ok_or_else(|| {
                    bad("a sampler expression: R_r, P_r, CR_r or H[X]_n, e.g. H[P_256]_2048")
                })?
            }
            "second" => o.second = parse_second(v).ok_or_else(|| bad("A_k (k >= 1) or none"))?,
            _ => return Err(None),
        },
        Model::Tagged(o) => match key {
            "entries" => o.entries = usize_pos("a positive integer")?,
            "ways" => o.ways = usize_pos("a positive integer")?,
            "tag_bits" => {
                o.tag_bits = parse_u64(v)
                    .filter(|b| (1..=16).contains(b))
                    .ok_or_else(|| bad("a width in 1..=16"))? as u32
            }
            "hit_bits" => {
                o.hit_bits = parse_u64(v)
                    .filter(|b| (2..=16).contains(b))
                    .ok_or_else(|| bad("a width in 2..=16"))? as u32
            }
            "miss_bits" => {
                o.miss_bits = parse_u64(v)
                    .filter(|b| (1..=8).contains(b))
                    .ok_or_else(|| bad("a width in 1..=8"))? as u32
            }
            "second" => o.second = parse_second(v).ok_or_else(|| bad("A_k (k >= 1) or none"))?,
            _ => return Err(None),
        },
        Model::Rap(o) => match key {
            "eps" => {
                o.eps = parse_fraction(v)
                    .filter(|&e| e > 0.0 && e < 1.0)
                    .ok_or_else(|| bad("a fraction in (0, 1) such as 1% or 0.01"))?
            }
            "branching" => {
                o.branching = parse_u64(v)
                    .filter(|b| [2, 4, 16, 256].contains(b))
                    .ok_or_else(|| bad("one of 2, 4, 16, 256"))?
                    as u32
            }
            "buffer" => {
                o.buffer = parse_u64(v)
                    .filter(|&b| b <= 1 << 20)
                    .ok_or_else(|| bad("an entry count up to 2^20 (0 = no buffer)"))?
                    as usize
            }
            "dims" => {
                o.dims = parse_u64(v)
                    .filter(|d| *d == 1 || *d == 2)
                    .ok_or_else(|| bad("1 or 2"))? as u32
            }
            "q" => {
                o.q = parse_u64(v)
                    .filter(|&q| q >= 2)
                    .ok_or_else(|| bad("an integer >= 2"))?
            }
            "merge_first" => {
                o.merge_first = parse_u64(v)
                    .filter(|&m| m >= 1)
                    .ok_or_else(|| bad("a positive integer"))?
            }
            "hot" => {
                o.hot = parse_fraction(v)
                    .filter(|&h| h > 0.0 && h <= 1.0)
                    .ok_or_else(|| bad("a fraction in (0, 1]"))?
            }
            "reset" => o.reset = flag()?,
            _ => return Err(None),
        },
        Model::Conte(o) => match key {
            "scheme" => {
                o.scheme = match v {
                    "onelevel" => ConteScheme::OneLevel,
                    "twolevel" => ConteScheme::TwoLevel,
                    "counter" => ConteScheme::Counter,
                    _ => return Err(bad("one of onelevel, twolevel, counter")),
                }
            }
            "entries" => o.entries = usize_pos("a positive integer")?,
            "history" => {
                o.history = parse_u64(v)
                    .filter(|h| (1..=16).contains(h))
                    .ok_or_else(|| bad("a width in 1..=16"))? as u32
            }
            "period" => {
                o.period = parse_u64(v)
                    .filter(|&p| p > 0)
                    .ok_or_else(|| bad("a positive integer"))?
            }
            "bbar" => {
                o.bbar = v
                    .parse::<f64>()
                    .ok()
                    .filter(|b| b.is_finite() && *b > 0.0)
                    .ok_or_else(|| bad("a positive number"))?
            }
            "fallthrough" => {
                o.fallthrough = parse_u64(v).ok_or_else(|| bad("an unsigned integer"))?
            }
            "ways" => o.ways = usize_pos("a positive integer")?,
            _ => return Err(None),
        },
    }
    Ok(())
}

fn validate(s: &str, model: &Model, spec: &ProfilerSpec) -> Result<()> {
    let supported = model.supported_kinds();
    if let Some(k) = spec.kinds.iter().find(|k| !supported.contains(*k)) {
        return Err(Error::UnsupportedKind {
            model: model.name(),
            supported: "edge",
            requested: k,
        });
    }
    match model {
        Model::MultiHash(o) | Model::SingleHash(o) => {
            if o.entries < o.tables {
                return Err(Error::spec(
                    s,
                    format!("entries={} is fewer than tables={}", o.entries, o.tables),
                ));
            }
            if o.entries / o.tables > 1 << 16 {
                return Err(Error::spec(s, "more than 65536 entries per table"));
            }
        }
        Model::Tagged(o) => {
            if o.entries % o.ways != 0
                || !(o.entries / o.ways).is_power_of_two()
                || o.entries / o.ways > 1 << 16
            {
                return Err(Error::spec(
                    s,
                    format!(
                        "entries/ways = {}/{} must be a power of two up to 65536 sets",
                        o.entries, o.ways
                    ),
                ));
            }
        }
        Model::Rap(o) => {
            if o.dims == 2 && o.branching == 2 {
                return Err(Error::spec(
                    s,
                    "key `branching`: the 2-D tree splits both dimensions, so branching must be 4, 16 or 256",
                ));
            }
        }
        Model::Conte(o) => {
            if o.entries > 1 << 20 || o.entries % o.ways != 0 {
                return Err(Error::spec(
                    s,
                    format!(
                        "entries={} must be at most 2^20 and a multiple of ways={}",
                        o.entries, o.ways
                    ),
                ));
            }
        }
        Model::Stratified(o) => {
            let mut strata = 1usize;
            let mut x = &o.sampler;
            while let SamplerExpr::Hash(inner, n) = x {
                strata = strata.saturating_mul(*n);
                x = inner;
            }
            if strata > 1 << 20 {
                return Err(Error::spec(s, "key `sampler`: more than 2^20 substreams"));
            }
        }
        Model::Perfect => {}
    }
    Ok(())
}

fn parse_u64(v: &str) -> Option<u64> {
    let v = v.replace('_', "");
    match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

fn parse_fraction(v: &str) -> Option<f64> {
    let x = match v.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok()? / 100.0,
        None => v.parse::<f64>().ok()?,
    };
    x.is_finite().then_some(x)
}

fn parse_flag(v: &str) -> Option<bool> {
    match v {
        "on" | "1" | "true" | "yes" => Some(true),
        "off" | "0" | "false" | "no" => Some(false),
        _ => None,
    }
}

fn parse_second(v: &str) -> Option<Option<usize>> {
    if v == "none" {
        return Some(None);
    }
    let k = v.strip_prefix("A_")?.parse::<usize>().ok()?;
    (1..=1 << 16).contains(&k).then_some(Some(k))
}

fn onoff(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// Prints a fraction as a percentage without float noise (`0.001` -> `0.1%`).
fn percent(x: f64) -> String {
    let s = format!("{:.9}", x * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn second(k: Option<usize>) -> String {
    k.map_or_else(|| "none".to_string(), |k| format!("A_{k}"))
}

impl fmt::Display for ProfilerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:", self.model.name())?;
        match &self.model {
            Model::Perfect => {}
            Model::MultiHash(o) | Model::SingleHash(o) => write!(
                f,
                "tables={},entries={},cu={},reset={},retain={},shield={},accumulator={},counter_bits={},",
                o.tables,
                o.entries,
                onoff(o.conservative),
                onoff(o.reset),
                onoff(o.retain),
                onoff(o.shield),
                o.accumulator,
                o.counter_bits
            )?,
            Model::Stratified(o) => {
                write!(f, "sampler={},second={},", o.sampler, second(o.second))?
            }
            Model::Tagged(o) => write!(
                f,
                "entries={},ways={},tag_bits={},hit_bits={},miss_bits={},second={},",
                o.entries,
                o.ways,
                o.tag_bits,
                o.hit_bits,
                o.miss_bits,
                second(o.second)
            )?,
            Model::Rap(o) => write!(
                f,
                "eps={},branching={},buffer={},dims={},q={},merge_first={},hot={},reset={},",
                percent(o.eps),
                o.branching,
                o.buffer,
                o.dims,
                o.q,
                o.merge_first,
                percent(o.hot),
                onoff(o.reset)
            )?,
            Model::Conte(o) => write!(
                f,
                "scheme={},entries={},ways={},history={},period={},bbar={},fallthrough={},",
                o.scheme.word(),
                o.entries,
                o.ways,
                o.history,
                o.period,
                o.bbar,
                o.fallthrough
            )?,
        }
        write!(
            f,
            "interval={},threshold={},kinds={},seed={}",
            self.interval,
            percent(self.threshold),
            self.kinds,
            self.seed
        )
    }
}

impl std::str::FromStr for ProfilerSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        parse_spec(s)
    }
}

impl ProfilerSpec {
    /// Builds the model.
    pub fn build(&self) -> Box<dyn Profiler> {
        match &self.model {
            Model::Perfect => Box::new(crate::perfect::Perfect::new(self.clone())),
            Model::MultiHash(o) | Model::SingleHash(o) => {
                Box::new(crate::multihash::MultiHash::new(self.clone(), o.clone()))
            }
            Model::Stratified(o) => {
                Box::new(crate::stratified::Stratified::new(self.clone(), o.clone()))
            }
            Model::Tagged(o) => Box::new(crate::tagged::Tagged::new(self.clone(), o.clone())),
            Model::Conte(o) => Box::new(crate::conte::Conte::new(self.clone(), o.clone())),
            Model::Rap(o) => Box::new(crate::rap::Rap::new(self.clone(), o.clone())),
        }
    }

    /// The candidate threshold as a count of tuples.
    pub fn threshold_count(&self) -> u64 {
        crate::profiler::threshold_count(self.threshold, self.interval)
    }

    /// The same spec with the `perfect` model: the oracle to compare this one against.
    pub fn oracle(&self) -> ProfilerSpec {
        ProfilerSpec {
            model: Model::Perfect,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_papers_best() {
        let s = parse_spec("multihash").unwrap();
        assert_eq!(s.model, Model::MultiHash(MultiHashOptions::BEST));
        assert_eq!((s.interval, s.threshold), (10_000, 0.01));
        let s = parse_spec("stratified").unwrap();
        assert_eq!(
            s.to_string(),
            "stratified:sampler=H[P_256]_2048,second=A_16,interval=10000,threshold=1%,kinds=all,seed=1"
        );
    }

    #[test]
    fn issue_example_parses() {
        let s = parse_spec(
            "multihash:tables=4,entries=2048,threshold=1%,interval=10000,cu=on,reset=off,retain=on",
        )
        .unwrap();
        assert_eq!(s.threshold_count(), 100);
        let s = parse_spec("multihash:interval=1000000,threshold=0.1%").unwrap();
        assert_eq!(s.threshold_count(), 1000);
    }

    #[test]
    fn every_default_round_trips() {
        for name in MODEL_NAMES {
            let s = parse_spec(name).unwrap();
            let text = s.to_string();
            let again = parse_spec(&text).unwrap();
            assert_eq!(again.to_string(), text);
            assert_eq!(again, s, "{text}");
        }
    }

    #[test]
    fn errors_name_the_key_and_list_valid_ones() {
        let e = parse_spec("multihash:tabels=4").unwrap_err().to_string();
        assert!(
            e.contains("tabels") && e.contains("tables") && e.contains("retain"),
            "{e}"
        );
        let e = parse_spec("multihash:cu=maybe").unwrap_err().to_string();
        assert!(e.contains("`cu`") && e.contains("on or off"), "{e}");
        let e = parse_spec("stratified:sampler=H[Q_2]_4")
            .unwrap_err()
            .to_string();
        assert!(e.contains("H[P_256]_2048"), "{e}");
        let e = parse_spec("nosuch").unwrap_err().to_string();
        assert!(e.contains("multihash") && e.contains("conte"), "{e}");
        let e = parse_spec("conte:kinds=value").unwrap_err().to_string();
        assert!(e.contains("edge"), "{e}");
    }

    #[test]
    fn sampler_expressions_nest() {
        for text in ["R_10", "P_10", "CR_10", "H[P_256]_2048", "H[H[CR_4]_8]_16"] {
            assert_eq!(SamplerExpr::parse(text).unwrap().to_string(), text);
        }
        assert!(SamplerExpr::parse("H[P_0]_4").is_none());
        assert!(SamplerExpr::parse("H[P_4").is_none());
    }

    #[test]
    fn several_specs_split_on_semicolons() {
        let v = parse_specs("multihash:tables=2,entries=1024; rap:eps=10%;perfect").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[1].model.name(), "rap");
    }
}
