//! Spec strings: the one grammar that selects and configures every model, and the one
//! grammar for lists of them.
//!
//! ```text
//! spec    := model [ ':' option { ',' option } ]
//! option  := key '=' value
//! list    := spec { (';' | ',') spec }            (see split_spec_list)
//! ```
//!
//! A comma separates both the options of a spec and the specs of a list.  In a list, a
//! part starts a new spec when its name (the text before `:`, or the whole part when it
//! has neither `:` nor `=`) is a model name or `none`; any other part is `key=value` and
//! belongs to the spec before it.  `;` always separates.  So
//! `multihash,stratified,rap:eps=1%` is three specs and
//! `perfect,multihash:interval=10,threshold=5%` two.  A CLI may also take the flag
//! repeated (`--profile A --profile B`); every command splits with [`split_spec_list`].
//!
//! Keys every model takes: `interval` (L, tuples per interval), `threshold` (candidate
//! threshold: `1%` or `0.01`), `kinds` (`all`, or `value+edge+call` in any subset) and
//! `seed` (for the models that draw random numbers).  Model keys and their defaults (the
//! papers' best configurations) are listed in [`Model`] and printed by [`ProfilerSpec`]'s
//! `Display`, which is canonical: every key, in a fixed order, so it round-trips.
//!
//! Every key is checked when the spec is parsed, against what the model will build, so
//! building a parsed spec never panics and never allocates more than the caps in
//! [`HELP`] (the text the CLI prints, and the table below).
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
use crate::tuple::{Kind, KindSet};
use std::fmt;

mod choice;
mod model;

pub use choice::{Choice, NONE, is_none};

pub use model::{
    ConteOptions, ConteScheme, Estimator, Model, MultiHashOptions, RapOptions, SamplerExpr,
    StratifiedOptions, TaggedOptions,
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

/// Most hash tables of `multihash`/`singlehash` (`tables`).
pub const MAX_TABLES: usize = 16;
/// Most counters per hash table or sets of `tagged` (a hash indexes at most 16 bits).
pub const MAX_TABLE_ENTRIES: usize = 1 << 16;
/// Most entries of any model's state (`tagged`/`conte` entries, `stratified` substreams,
/// `rap` buffer).
pub const MAX_STATE_ENTRIES: usize = 1 << 20;
/// Most models one pass over a stream runs side by side (`toyvm profile`'s list,
/// [`crate::evaluation::profile_stream`], each error pass of `toyvm compare`): each model's
/// tables are bounded by the limits above (at most a few tens of MB), and all of a
/// pass's are alive together, so the pass is bounded by this many of them.
pub const MAX_MODELS_AT_ONCE: usize = 32;
/// Most accumulator entries of `multihash`/`singlehash` (explicit, or 1/threshold).
pub const MAX_ACCUMULATOR: usize = u16::MAX as usize - 1;

/// The spec grammar, every model's keys with defaults and limits: the CLI's help text.
pub const HELP: &str = "\
Profiler specs: MODEL[:KEY=VALUE,...]. In a list, a comma or `;` separates specs; a part
whose name (before `:`, or alone) is a model name or `none` starts a new spec, any other
part is KEY=VALUE of the spec before it:
  'multihash,stratified,rap:eps=1%'   'perfect,multihash:interval=10,threshold=5%'
Every model: interval=10000 (>= 1), threshold=1% (in (0, 1]), kinds=all (or
  value+edge+call), seed=1
perfect:    no keys
multihash:  tables=4 (1..=16), entries=2048 (>= tables, at most 65536 per table),
  cu=on, reset=off, retain=on, shield=on, accumulator=0 (0 = 1/threshold; at most
  65534), counter_bits=24 (1..=32)
singlehash: the same keys; tables=1, cu=off, reset=on
stratified: sampler=H[P_256]_2048 (R_r, P_r, CR_r, H[X]_n with n <= 65536, at most
  2^20 substreams in all), second=A_16 (A_k with k <= 65536, or none),
  estimator=sum (counted samplers: sum of message counts, the paper's; or share)
tagged:     entries=2048 (at most 2^20), ways=2 (entries/ways a power of two up to
  65536), tag_bits=2 (1..=16), hit_bits=8 (2..=16), miss_bits=3 (1..=8), second=A_16
rap:        eps=1% (in (0, 1)), branching=4 (2, 4, 16, 256; not 2 with dims=2),
  buffer=64 (0..=2^20), dims=1 (1 or 2), q=2 (>= 2), merge_first=1024 (>= 1),
  reset=off, hot=10% (in (0, 1])
conte:      scheme=twolevel (onelevel, twolevel, counter), entries=1024 (at most 2^20,
  a multiple of ways), ways=4, history=10 (1..=15), period=1000 (>= 1), bbar=1 (> 0),
  fallthrough=1; edges only
";

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
    // Each table holds entries/tables counters: the spec says the entries
    // the model has, so an echoed spec is the model that ran.
    if let Model::MultiHash(o) | Model::SingleHash(o) = &mut model {
        o.entries -= o.entries % o.tables;
    }
    spec.model = model;
    Ok(spec)
}

/// Parses a list of specs in the list grammar (see the module doc); `none` is not a
/// spec here.
pub fn parse_specs(s: &str) -> Result<Vec<ProfilerSpec>> {
    split_spec_list(&[s])?
        .iter()
        .map(|p| parse_spec(p))
        .collect()
}

/// Splits spec lists (each value of a repeated flag, or one string) into one string per
/// spec, in order: the list grammar of the module doc, the one every command uses.  A
/// spec's options are joined back with `,` after `model:`; `none` comes out as `none`.
/// At least one spec, or an error.
pub fn split_spec_list<S: AsRef<str>>(values: &[S]) -> Result<Vec<String>> {
    let mut specs: Vec<String> = Vec::new();
    for v in values {
        let v = v.as_ref();
        let mut current = String::new();
        for part in v.split([';', ',']) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let colon = part.find(':');
            let eq = part.find('=');
            let name = match (colon, eq) {
                (Some(c), Some(e)) if c < e => Some(&part[..c]),
                (Some(c), None) => Some(&part[..c]),
                (None, None) => Some(part),
                _ => None,
            };
            match name.map(str::trim) {
                Some(name) if is_none(name) || MODEL_NAMES.contains(&name) => {
                    if !current.is_empty() {
                        specs.push(std::mem::take(&mut current));
                    }
                    current.push_str(part);
                }
                Some(name) => {
                    return Err(Error::spec(
                        v,
                        format!(
                            "`{part}` is neither key=value nor a spec: unknown model `{name}`; \
                             valid models: {NONE}, {}",
                            MODEL_NAMES.join(", ")
                        ),
                    ));
                }
                None if current.is_empty() => {
                    return Err(Error::spec(
                        v,
                        format!("option `{part}` comes before any model name"),
                    ));
                }
                None => {
                    current.push(if current.contains(':') { ',' } else { ':' });
                    current.push_str(part);
                }
            }
        }
        if !current.is_empty() {
            specs.push(current);
        }
    }
    if specs.is_empty() {
        let all: Vec<&str> = values.iter().map(AsRef::as_ref).collect();
        return Err(Error::spec(&all.join(";"), "no spec given"));
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
            "estimator" => {
                o.estimator = match v {
                    "sum" => Estimator::Sum,
                    "share" => Estimator::Share,
                    _ => return Err(bad("sum or share")),
                }
            }
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
                // The register and its marker bit live in 16 bits.
                o.history = parse_u64(v)
                    .filter(|h| (1..=15).contains(h))
                    .ok_or_else(|| bad("a width in 1..=15"))? as u32
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

/// Checks every limit the models rely on, against the quantities the model will build
/// (after the same arithmetic its constructor does), so no model clamps, asserts or
/// allocates beyond [`HELP`]'s documented caps.  The one place these limits live.
fn validate(s: &str, model: &Model, spec: &ProfilerSpec) -> Result<()> {
    let supported = model.supported_kinds();
    if let Some(k) = spec.kinds.iter().find(|k| !supported.contains(*k)) {
        return Err(Error::UnsupportedKind {
            model: model.name(),
            supported: "edge",
            requested: k,
        });
    }
    let err = |msg: String| Err(Error::spec(s, msg));
    match model {
        Model::MultiHash(o) | Model::SingleHash(o) => {
            if o.tables > MAX_TABLES {
                return err(format!(
                    "key `tables`: {} is more than {MAX_TABLES} tables",
                    o.tables
                ));
            }
            if o.entries < o.tables {
                return err(format!(
                    "entries={} is fewer than tables={}",
                    o.entries, o.tables
                ));
            }
            // The model gives each table entries/tables counters, indexed by a hash of at
            // most 16 bits.
            if o.entries / o.tables > MAX_TABLE_ENTRIES {
                return err(format!(
                    "entries/tables = {}/{} is more than {MAX_TABLE_ENTRIES} counters per table",
                    o.entries, o.tables
                ));
            }
            if o.accumulator > MAX_ACCUMULATOR {
                return err(format!(
                    "key `accumulator`: {} is more than {MAX_ACCUMULATOR} entries",
                    o.accumulator
                ));
            }
            let implied = (1.0 / spec.threshold).ceil();
            if o.accumulator == 0 && implied > MAX_ACCUMULATOR as f64 {
                return err(format!(
                    "threshold={} implies a {implied}-entry accumulator (1/threshold), more than \
                     {MAX_ACCUMULATOR}; raise the threshold or give accumulator=N",
                    percent(spec.threshold)
                ));
            }
        }
        Model::Tagged(o) => {
            if o.entries > MAX_STATE_ENTRIES {
                return err(format!(
                    "key `entries`: {} is more than {MAX_STATE_ENTRIES} entries",
                    o.entries
                ));
            }
            if o.entries % o.ways != 0
                || !(o.entries / o.ways).is_power_of_two()
                || o.entries / o.ways > MAX_TABLE_ENTRIES
            {
                return err(format!(
                    "entries/ways = {}/{} must be a power of two up to {MAX_TABLE_ENTRIES} sets",
                    o.entries, o.ways
                ));
            }
        }
        Model::Rap(o) => {
            if o.dims == 2 && o.branching == 2 {
                return err(
                    "key `branching`: the 2-D tree splits both dimensions, so branching must be 4, 16 or 256".into(),
                );
            }
        }
        Model::Conte(o) => {
            if o.entries > MAX_STATE_ENTRIES || o.entries % o.ways != 0 {
                return err(format!(
                    "entries={} must be at most {MAX_STATE_ENTRIES} and a multiple of ways={}",
                    o.entries, o.ways
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
            if strata > MAX_STATE_ENTRIES {
                return err(format!(
                    "key `sampler`: {strata} substreams is more than {MAX_STATE_ENTRIES}"
                ));
            }
        }
        Model::Perfect => {}
    }
    Ok(())
}

/// An unsigned integer in any form [`toyvm_event::parse_int`] reads
/// (`1e6`, `0x`, `_`), as the command line's arguments are.
fn parse_u64(v: &str) -> Option<u64> {
    toyvm_event::parse_int(v).and_then(|n| u64::try_from(n).ok())
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
                write!(f, "sampler={},second={},", o.sampler, second(o.second))?;
                // Printed only when not the default, so the common spec
                // strings stay as they were; it still round-trips.
                if o.estimator == Estimator::Share {
                    write!(f, "estimator=share,")?;
                }
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

/// The candidate threshold as a count: `ceil(threshold * interval)`, at least 1.
pub fn threshold_count(threshold: f64, interval: u64) -> u64 {
    ((threshold * interval as f64) - 1e-9).ceil().max(1.0) as u64
}

impl std::str::FromStr for ProfilerSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        parse_spec(s)
    }
}

impl ProfilerSpec {
    /// The candidate threshold as a count of tuples.
    pub fn threshold_count(&self) -> u64 {
        threshold_count(self.threshold, self.interval)
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
mod tests;
