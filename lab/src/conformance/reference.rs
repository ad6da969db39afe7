//! The reference file: what pass 1 saves and pass 2 reuses.
//!
//! A reference is only meaningful for the run it was recorded from, so it
//! names that run, and a reuse that does not match is refused instead of
//! judged (a reference of `fib` checked against `hashtable` would report a
//! meaningless FAIL, or worse a PASS):
//!
//! - the program, by the FNV-1a 64 hash and length of its `.bc` encoding
//!   ([`Program::to_bytes`], the same for a program loaded from assembly or
//!   bytecode);
//! - the entry arguments, as given;
//! - the input file, by hash and length (absent when there is none);
//! - the tolerances; tolerances given again on the command line replace the
//!   saved ones and the verdict says so ([`GivenTolerances::apply_to`]),
//!   except a wider margin, which needs entries the reference never kept.
//!
//! A reference is data from a file that may have been edited, truncated or
//! replaced: [`load`] rejects anything pass 1 cannot have written (an oracle
//! that is not the perfect model, tolerances out of range, interval indices
//! duplicated or out of order, counts the interval cannot hold, unknown
//! fields, ...) rather than run on it, and [`read_file`] never reads more
//! than [`MAX_REFERENCE_BYTES`]. References written before format 2 (without
//! the program's hash) are rejected with a message asking to re-record them.
//! `docs/verify-reference.md` describes the format.

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use toyvm_profiler::spec::Model;
use toyvm_profiler::{Kind, Tuple};
use toyvm_vm::Program;

use crate::suite::fnv1a64;

/// The reference format this toyvm writes and reads.
pub const FORMAT: u32 = 2;

/// The largest reference [`read_file`] reads and [`save`] writes, in bytes
/// (64 MiB; hashtable's at its test arguments, 103 intervals, is 63 KiB).
pub const MAX_REFERENCE_BYTES: u64 = 64 << 20;

/// How strict the check is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerances {
    /// Width of the neutral band around the threshold, as a fraction of it,
    /// in `[0, 1)`.
    pub margin: f64,
    /// Allowed relative error of a reported count, at least 0.
    pub tolerance: f64,
    /// Fraction of checked intervals that must conform for a pass, in
    /// `(0, 1]`.
    pub quorum: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        Tolerances {
            margin: 0.25,
            tolerance: 0.10,
            quorum: 0.90,
        }
    }
}

impl Tolerances {
    /// An error naming the first value out of its range.
    pub fn validate(&self) -> crate::Result<()> {
        let Tolerances {
            margin,
            tolerance,
            quorum,
        } = *self;
        let bad = if !(0.0..1.0).contains(&margin) {
            Some(format!(
                "margin {margin} is out of range: a fraction in [0, 1)"
            ))
        } else if !(tolerance.is_finite() && tolerance >= 0.0) {
            Some(format!(
                "tolerance {tolerance} is out of range: a finite fraction, at least 0"
            ))
        } else if !(quorum > 0.0 && quorum <= 1.0) {
            Some(format!(
                "quorum {quorum} is out of range: a fraction in (0, 1]"
            ))
        } else {
            None
        };
        bad.map_or(Ok(()), |m| Err(crate::Error::Usage(m)))
    }
}

/// Tolerances as given on the command line: `None` where the flag was not
/// given.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GivenTolerances {
    /// `--margin`: see [`Tolerances::margin`].
    pub margin: Option<f64>,
    /// `--tolerance`: see [`Tolerances::tolerance`].
    pub tolerance: Option<f64>,
    /// `--quorum`: see [`Tolerances::quorum`].
    pub quorum: Option<f64>,
}

impl GivenTolerances {
    /// The tolerances for recording a reference: the given ones, the
    /// defaults for the rest.
    pub fn resolve(&self) -> crate::Result<Tolerances> {
        let d = Tolerances::default();
        let t = Tolerances {
            margin: self.margin.unwrap_or(d.margin),
            tolerance: self.tolerance.unwrap_or(d.tolerance),
            quorum: self.quorum.unwrap_or(d.quorum),
        };
        t.validate()?;
        Ok(t)
    }

    /// Replaces `reference`'s tolerances by the given ones and returns what
    /// changed, as notes for the verdict (empty when nothing did).
    ///
    /// The tolerance and quorum only judge, so any valid value applies. The
    /// margin also decided which entries pass 1 kept (those at or above
    /// `(1 - margin) T`): a narrower one applies, a wider one is refused.
    pub fn apply_to(&self, reference: &mut Reference) -> crate::Result<Vec<String>> {
        let recorded = reference.tolerances;
        let mut t = recorded;
        let mut notes = Vec::new();
        let mut take = |name: &str, given: Option<f64>, slot: &mut f64| {
            if let Some(v) = given
                && v != *slot
            {
                notes.push(format!(
                    "{name} {v} from the command line (the reference was recorded with {})",
                    *slot
                ));
                *slot = v;
            }
        };
        take("margin", self.margin, &mut t.margin);
        take("tolerance", self.tolerance, &mut t.tolerance);
        take("quorum", self.quorum, &mut t.quorum);
        t.validate()?;
        if t.margin > recorded.margin {
            return Err(crate::Error::Usage(format!(
                "--margin {} is wider than the reference's {}: it kept no entries below (1 - {}) T; \
                 record a new reference with --margin {}",
                t.margin, recorded.margin, recorded.margin, t.margin
            )));
        }
        reference.tolerances = t;
        Ok(notes)
    }
}

/// Names a byte string: its length and FNV-1a 64 hash (16 hex digits).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// The length in bytes.
    pub bytes: u64,
    /// The FNV-1a 64 hash as 16 lowercase hex digits.
    pub fnv1a64: String,
}

impl Fingerprint {
    /// The fingerprint of `bytes`.
    pub fn of(bytes: &[u8]) -> Fingerprint {
        Fingerprint {
            bytes: bytes.len() as u64,
            fnv1a64: format!("{:016x}", fnv1a64(bytes)),
        }
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes, FNV-1a 64 {}", self.bytes, self.fnv1a64)
    }
}

/// One entry of the perfect table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The tuple's kind.
    pub kind: Kind,
    /// The tuple's first component: the packed pc of the load, branch or
    /// call site.
    pub a: u64,
    /// The tuple's second component: the value, the next pc or the callee's
    /// function index, by kind.
    pub b: u64,
    /// The tuple's exact count in the interval.
    pub count: u64,
}

impl Entry {
    pub(super) fn tuple(&self) -> Tuple {
        Tuple::new(self.kind, self.a, self.b)
    }
}

/// A chain of nested key ranges with one exact count: the prefixes of
/// `prefix` (a `bits`-bit prefix of the tree key, stored as its high and low
/// halves) of every length from `top` to `bits` hold `count` events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeCount {
    /// The kind whose tree the key belongs to.
    pub kind: Kind,
    /// The high 64 bits of the 128-bit prefix (its value right-aligned,
    /// `bits` significant bits).
    pub hi: u64,
    /// The low 64 bits of the prefix.
    pub lo: u64,
    /// The longest prefix of the chain, in bits (at most 128).
    pub bits: u32,
    /// The shortest prefix of the chain, in bits (`top <= bits`).
    pub top: u32,
    /// The exact events every prefix of the chain holds: in the interval
    /// with `reset=on`, since the run's start with the cumulative tree.
    pub count: u64,
}

impl RangeCount {
    pub(super) fn prefix(&self) -> u128 {
        ((self.hi as u128) << 64) | self.lo as u128
    }

    /// The exact count of the `bits`-bit prefix `p`, if this chain holds it.
    pub(super) fn count_of(&self, kind: Kind, p: u128, bits: u32) -> Option<u64> {
        (self.kind == kind
            && self.top <= bits
            && bits <= self.bits
            && self.prefix().checked_shr(self.bits - bits).unwrap_or(0) == p)
            .then_some(self.count)
    }
}

/// One interval of the perfect table.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefInterval {
    /// The interval's position: 0, 1, 2, ...
    pub index: u64,
    /// Entries with exact count >= the low bound, hottest first.
    pub entries: Vec<Entry>,
    /// Events of the interval per kind (in [`Kind::ALL`] order).
    pub events: [u64; 3],
    /// For a RAP reference: the key prefixes whose exact count reaches the
    /// hot-range cut, as chains (empty otherwise).
    #[serde(default)]
    pub ranges: Vec<RangeCount>,
}

/// The RAP options a reference's ranges were computed for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RangeSetup {
    /// Tree key layout (1: `a:b`, 2: a and b interleaved).
    pub dims: u32,
    /// Hot-range fraction.
    pub hot: f64,
    /// Per-interval trees (`true`) or one cumulative tree.
    pub reset: bool,
}

/// What pass 1 saves.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reference {
    /// [`FORMAT`] when written.
    pub format: u32,
    /// The toyvm version that recorded it (for messages only).
    pub toyvm_version: String,
    /// The program's name as given to pass 1 (for messages only).
    pub program: String,
    /// The program's `.bc` encoding: what identifies it.
    pub program_hash: Fingerprint,
    /// The entry function's arguments pass 1 ran with; pass 2 runs with
    /// the same.
    pub args: Vec<i64>,
    /// The input file's bytes, when there were any.
    pub input_hash: Option<Fingerprint>,
    /// Interval length, threshold fraction and kinds, as a perfect spec.
    pub oracle: String,
    /// The interval length in tuples (the oracle's).
    pub interval: u64,
    /// The candidate threshold T as a count.
    pub threshold: u64,
    /// The tolerances recorded with it; pass 2 judges with these unless
    /// the command line gives others ([`GivenTolerances::apply_to`]).
    pub tolerances: Tolerances,
    /// Present when the reference was recorded for a RAP spec.
    #[serde(default)]
    pub ranges: Option<RangeSetup>,
    /// Every interval of the run, in order (indices 0, 1, 2, ...; the
    /// partial last one included).
    pub intervals: Vec<RefInterval>,
}

impl Reference {
    pub(super) fn expected_bound(&self) -> u64 {
        (self.threshold as f64 * (1.0 + self.tolerances.margin)).ceil() as u64
    }

    pub(super) fn low_bound(&self) -> u64 {
        (self.threshold as f64 * (1.0 - self.tolerances.margin))
            .floor()
            .max(1.0) as u64
    }

    /// An error naming everything that differs between the run this
    /// reference was recorded from and `program` run with `args` on `input`.
    pub fn ensure_recorded_for(
        &self,
        program: &Program,
        args: &[i64],
        input: &[u8],
    ) -> crate::Result<()> {
        let mut diffs = Vec::new();
        let here = Fingerprint::of(&program.to_bytes());
        if here != self.program_hash {
            diffs.push(format!(
                "another program (`{}`: {}; this one: {here})",
                self.program, self.program_hash
            ));
        }
        if args != self.args.as_slice() {
            diffs.push(format!(
                "other arguments ({:?}; this run: {args:?})",
                self.args
            ));
        }
        let here = (!input.is_empty()).then(|| Fingerprint::of(input));
        if here != self.input_hash {
            let show = |f: &Option<Fingerprint>| {
                f.as_ref()
                    .map_or_else(|| "none".to_owned(), ToString::to_string)
            };
            diffs.push(format!(
                "another input file ({}; this run: {})",
                show(&self.input_hash),
                show(&here)
            ));
        }
        if diffs.is_empty() {
            return Ok(());
        }
        Err(crate::Error::Reference(format!(
            "the reference was recorded for {}; record a new one for this run",
            diffs.join(", ")
        )))
    }

    /// An error unless pass 1 could have written this reference.
    fn validate(&self) -> crate::Result<()> {
        let bad = |m: String| Err(crate::Error::Reference(format!("invalid reference: {m}")));
        self.tolerances.validate().or_else(|e| bad(e.to_string()))?;
        if self.program_hash.fnv1a64.len() != 16
            || !self
                .program_hash
                .fnv1a64
                .bytes()
                .all(|b| b.is_ascii_hexdigit())
        {
            return bad(format!(
                "program hash `{}` is not 16 hex digits",
                self.program_hash.fnv1a64
            ));
        }
        let oracle = match toyvm_profiler::parse_spec(&self.oracle) {
            Ok(o) if matches!(o.model, Model::Perfect) => o,
            Ok(o) => {
                return bad(format!(
                    "oracle `{}` is not the perfect model but `{}`",
                    self.oracle,
                    o.model.name()
                ));
            }
            Err(e) => return bad(format!("oracle `{}`: {e}", self.oracle)),
        };
        if oracle.interval != self.interval || oracle.threshold_count() != self.threshold {
            return bad(format!(
                "interval {} and threshold {} are not the oracle `{}`'s ({} and {})",
                self.interval,
                self.threshold,
                self.oracle,
                oracle.interval,
                oracle.threshold_count()
            ));
        }
        if let Some(r) = self.ranges
            && !((r.dims == 1 || r.dims == 2) && r.hot > 0.0 && r.hot <= 1.0)
        {
            return bad(format!(
                "range setup dims={}, hot={} is out of range (dims 1 or 2, hot in (0, 1])",
                r.dims, r.hot
            ));
        }
        let low = self.low_bound();
        // With a cumulative RAP tree a range count may reach the events so far.
        let mut so_far = [0u64; 3];
        let mut seen = std::collections::HashSet::new();
        for (i, iv) in self.intervals.iter().enumerate() {
            let at = format!("interval {i}");
            if iv.index != i as u64 {
                return bad(format!(
                    "{at} has index {}: indices must run 0, 1, 2, ... without repeats or gaps",
                    iv.index
                ));
            }
            let events: u64 = iv.events.iter().fold(0u64, |s, &e| s.saturating_add(e));
            if events > self.interval {
                return bad(format!(
                    "{at} has {events} events, more than the interval length {}",
                    self.interval
                ));
            }
            for (k, e) in so_far.iter_mut().zip(iv.events) {
                *k += e;
            }
            let mut kind_sum = [0u64; 3];
            seen.clear();
            for e in &iv.entries {
                if !oracle.kinds.contains(e.kind) {
                    return bad(format!(
                        "{at} has an entry of kind {:?}, which the oracle does not record",
                        e.kind
                    ));
                }
                if e.count < low {
                    return bad(format!(
                        "{at} has an entry counted {}, below the low bound {low} pass 1 keeps",
                        e.count
                    ));
                }
                if e.count > self.interval {
                    return bad(format!(
                        "{at} has an entry counted {}, more than its interval length {}",
                        e.count, self.interval
                    ));
                }
                kind_sum[e.kind as usize] += e.count;
                if !seen.insert(e.tuple()) {
                    return bad(format!("{at} lists the entry {} twice", e.tuple()));
                }
            }
            for kind in Kind::ALL {
                let k = kind as usize;
                if kind_sum[k] > iv.events[k] {
                    return bad(format!(
                        "{at}: its {kind:?} entries count {} events, more than its {} {kind:?} events",
                        kind_sum[k], iv.events[k]
                    ));
                }
            }
            if !iv.ranges.is_empty() && self.ranges.is_none() {
                return bad(format!(
                    "{at} has range counts but the reference is not RAP's"
                ));
            }
            for r in &iv.ranges {
                let most = if self.ranges.is_some_and(|s| s.reset) {
                    iv.events[r.kind as usize]
                } else {
                    so_far[r.kind as usize]
                };
                // A `bits`-bit prefix has nothing above its low `bits` bits.
                let fits = r.bits <= 128 && r.prefix().checked_shr(r.bits).unwrap_or(0) == 0;
                if !fits || r.top > r.bits || r.count > most {
                    return bad(format!(
                        "{at} has an impossible range count (bits {}, top {}, count {})",
                        r.bits, r.top, r.count
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Writes a reference as JSON; an error if it would exceed
/// [`MAX_REFERENCE_BYTES`] (it could not be read back).
pub fn save(reference: &Reference, out: &mut dyn Write) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(reference)?;
    bytes.push(b'\n');
    if bytes.len() as u64 > MAX_REFERENCE_BYTES {
        return Err(std::io::Error::other(format!(
            "the reference would take {} bytes, over the {MAX_REFERENCE_BYTES}-byte maximum a reference may have; \
             use a longer interval or fewer arguments",
            bytes.len()
        )));
    }
    out.write_all(&bytes)
}

/// Just the fields that tell a reference's format, read before the rest so
/// that an old reference gets "re-record" instead of a missing-field error.
#[derive(Deserialize)]
struct Header {
    format: Option<u32>,
}

/// Reads and validates a reference.
pub fn load(bytes: &[u8]) -> crate::Result<Reference> {
    let err = crate::Error::Reference;
    let header: Header = serde_json::from_slice(bytes)
        .map_err(|e| err(format!("not a readable reference ({e}); record a new one")))?;
    match header.format {
        Some(FORMAT) => {}
        None => {
            return Err(err(
                "an old-format reference (before format 2, which names the program, its arguments \
                 and input): re-record it (delete the file and run again)"
                    .to_owned(),
            ));
        }
        Some(n) => {
            return Err(err(format!(
                "reference format {n}; this toyvm reads format {FORMAT}: re-record it"
            )));
        }
    }
    let reference: Reference =
        serde_json::from_slice(bytes).map_err(|e| err(format!("invalid reference: {e}")))?;
    reference.validate()?;
    Ok(reference)
}

/// Reads and validates the reference at `path`, never reading more than
/// [`MAX_REFERENCE_BYTES`] (a device such as `/dev/zero` fails at its
/// first byte).
pub fn read_file(path: &Path) -> crate::Result<Reference> {
    let io = |source: std::io::Error| crate::Error::Io {
        path: path.to_owned(),
        source,
    };
    let too_big = || {
        crate::Error::Reference(format!(
            "larger than the {MAX_REFERENCE_BYTES}-byte maximum a reference may have"
        ))
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if let Ok(meta) = file.metadata()
        && meta.is_file()
        && meta.len() > MAX_REFERENCE_BYTES
    {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    let mut rest = file.take(MAX_REFERENCE_BYTES + 1);
    // A reference is a JSON object: check its first byte before reading on.
    let mut chunk = [0u8; 4096];
    loop {
        let n = rest.read(&mut chunk).map_err(io)?;
        bytes.extend_from_slice(&chunk[..n]);
        if let Some(&b) = bytes.iter().find(|b| !b.is_ascii_whitespace()) {
            if b != b'{' {
                return Err(crate::Error::Reference(format!(
                    "not a reference: a JSON object must start with `{{`, found byte 0x{b:02x}"
                )));
            }
            break;
        }
        if n == 0 {
            break;
        }
    }
    rest.read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MAX_REFERENCE_BYTES {
        return Err(too_big());
    }
    load(&bytes)
}

/// Opens the reference at `path` for reuse by `program` run with `args`
/// on `input`: reads and validates it, refuses it if it was recorded for
/// another run, and applies the tolerances `given` on the command line.
/// Returns the reference and notes for the verdict.
pub fn reuse(
    path: &Path,
    program: &Program,
    args: &[i64],
    input: &[u8],
    given: GivenTolerances,
) -> crate::Result<(Reference, Vec<String>)> {
    let mut reference = read_file(path)?;
    reference.ensure_recorded_for(program, args, input)?;
    let notes = given.apply_to(&mut reference)?;
    Ok((reference, notes))
}
