//! The software side of the hybrid profilers (001 sections 2.2, 3.4, 5.3.2): an optional
//! fully associative second level A_k that merges messages before they reach software,
//! and the software that folds messages into estimated counts.
//!
//! A_k (section 3.4): a message that hits adds its count to the entry; a message that
//! misses takes a free entry, or evicts the least recently used one to software.  An
//! entry also goes to software when its 8-bit message counter would overflow ("a counter
//! reaches a particular value"; the paper does not give the value or the replacement
//! policy, so 255 messages and LRU are ours).  Only messages that reach software cost
//! cycles: 30 each (section 5.3.2's worst case, interrupt cost included).
//!
//! Estimates.  A tuple's estimate is the sum of its messages' counts: r each for the
//! samplers without a counter, the counter's value for the counted samplers (`CR_r`,
//! `H[CR_r]_n`), as section 3.3 says ("the sum of count's from all messages that
//! contain the tuple"). Section 3.3 also reports `CR_r` equivalent to `P_r` (Figure 4);
//! with the sum it is not, on our Monte Carlo: summing adds the variance of the random
//! gaps between samples (about 20% against 12% mean error for `P_10` at N = 1000). The
//! option `estimator=share` is the estimator that is: the counter gives the length of
//! each substream (section 3.1), and software estimates a tuple as its substream's
//! length times the tuple's share of that substream's messages (our inference, not the
//! paper's text).
//!
//! Intervals: at an interval end the A_k entries are drained to software (they count as
//! messages), the estimates of the interval become its candidates and start over.

use crate::contract::{Candidate, Overhead};
use crate::hash::TupleMap;
use crate::tuple::Tuple;
use std::collections::HashMap;

/// Cycles per message reaching software (001 section 5.3.2).
pub const CYCLES_PER_MESSAGE: u64 = 30;
const MESSAGES_PER_ENTRY: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    tuple: Tuple,
    count: u64,
    stratum: u32,
    messages: u8,
    last_use: u64,
}

/// A_k plus the software accumulator.
#[derive(Debug)]
pub struct Software {
    second: Option<(usize, Vec<Entry>)>,
    clock: u64,
    counted: bool,
    /// Sum of counts (plain) or messages (counted) per tuple, with its substream.
    estimates: TupleMap<(u64, u32)>,
    /// Counted mode: per substream, (length, messages).
    strata: HashMap<u32, (u64, u64)>,
    /// Messages the first level produced.
    pub produced: u64,
    /// Messages that reached software.
    pub delivered: u64,
}

impl Software {
    /// Software behind an optional A_k with `k` entries; `counted` selects the
    /// substream-length estimator for counted samplers.
    pub fn new(second: Option<usize>, counted: bool) -> Self {
        Software {
            second: second.map(|k| (k, Vec::with_capacity(k))),
            clock: 0,
            counted,
            estimates: TupleMap::default(),
            strata: HashMap::new(),
            produced: 0,
            delivered: 0,
        }
    }

    fn deliver(&mut self, e: Entry) {
        self.delivered += 1;
        let slot = self.estimates.entry(e.tuple).or_insert((0, e.stratum));
        if self.counted {
            slot.0 += e.messages as u64;
            let s = self.strata.entry(e.stratum).or_insert((0, 0));
            s.0 += e.count;
            s.1 += e.messages as u64;
        } else {
            slot.0 += e.count;
        }
    }

    /// A message `(t, count)` from the first level; `stratum` is t's substream (only
    /// used by the counted estimator).
    #[inline]
    pub fn message(&mut self, t: Tuple, count: u64, stratum: u32) {
        self.produced += 1;
        self.clock += 1;
        let entry = Entry {
            tuple: t,
            count,
            stratum,
            messages: 1,
            last_use: self.clock,
        };
        let Some((k, table)) = &mut self.second else {
            self.deliver(entry);
            return;
        };
        if let Some(i) = table.iter().position(|e| e.tuple == t) {
            let e = &mut table[i];
            e.count += count;
            e.messages += 1;
            e.last_use = self.clock;
            if e.messages == MESSAGES_PER_ENTRY {
                let full = table.swap_remove(i);
                self.deliver(full);
            }
            return;
        }
        if table.len() < *k {
            table.push(entry);
            return;
        }
        let lru = (0..table.len())
            .min_by_key(|&i| table[i].last_use)
            .expect("k >= 1");
        let old = std::mem::replace(&mut table[lru], entry);
        self.deliver(old);
    }

    /// Drains A_k and appends to `out` the interval's tuples whose estimate reaches
    /// `threshold` (in no particular order), handing `estimates` every nonzero estimate.
    pub fn end_interval(
        &mut self,
        threshold: u64,
        estimates: &mut dyn FnMut(Tuple, u64),
        out: &mut Vec<Candidate>,
    ) {
        if let Some((_, table)) = &mut self.second {
            let drained: Vec<Entry> = std::mem::take(table);
            for e in drained {
                self.deliver(e);
            }
        }
        let strata = std::mem::take(&mut self.strata);
        let counted = self.counted;
        out.extend(
            self.estimates
                .drain()
                .map(|(tuple, (x, s))| {
                    let count = if counted {
                        let (len, msgs) = strata.get(&s).copied().unwrap_or((0, 1));
                        ((len as f64) * x as f64 / msgs.max(1) as f64).round() as u64
                    } else {
                        x
                    };
                    Candidate { tuple, count }
                })
                .inspect(|c| {
                    if c.count > 0 {
                        estimates(c.tuple, c.count)
                    }
                })
                .filter(|c| c.count >= threshold),
        );
    }

    /// Messages delivered and their modeled cycles.
    pub fn overhead(&self) -> Overhead {
        Overhead {
            messages: self.delivered,
            cycles: self.delivered * CYCLES_PER_MESSAGE,
        }
    }

    /// Modeled A_k bytes: a 128-bit tuple, 2 kind bits, a 32-bit count and an 8-bit
    /// message counter per entry.
    pub fn state_bytes(&self) -> usize {
        self.second.as_ref().map_or(0, |(k, _)| k * 22)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interval's candidates at a threshold of 1, in the contract's order.
    fn candidates(s: &mut Software) -> Vec<Candidate> {
        let mut out = Vec::new();
        s.end_interval(1, &mut |_, _| {}, &mut out);
        crate::contract::sort_candidates(&mut out);
        out
    }

    #[test]
    fn second_level_merges_without_changing_estimates() {
        for counted in [false, true] {
            let mut with = Software::new(Some(2), counted);
            let mut without = Software::new(None, counted);
            let ts = [
                Tuple::value(1, 1),
                Tuple::value(2, 2),
                Tuple::value(1, 1),
                Tuple::value(3, 3),
                Tuple::value(1, 1),
            ];
            for (i, t) in ts.into_iter().enumerate() {
                with.message(t, 10 + i as u64, 0);
                without.message(t, 10 + i as u64, 0);
            }
            assert_eq!(candidates(&mut with), candidates(&mut without));
            assert!(with.overhead().messages < without.overhead().messages);
            assert_eq!(without.overhead().cycles, 5 * CYCLES_PER_MESSAGE);
        }
    }

    #[test]
    fn counted_estimates_split_the_substream_length() {
        let mut s = Software::new(None, true);
        // Substream 0 is 100 long; 3 of its 4 messages are tuple a.
        let (a, b) = (Tuple::value(1, 1), Tuple::value(2, 2));
        for (t, c) in [(a, 10), (b, 40), (a, 30), (a, 20)] {
            s.message(t, c, 0);
        }
        assert_eq!(
            candidates(&mut s),
            vec![
                Candidate {
                    tuple: a,
                    count: 75
                },
                Candidate {
                    tuple: b,
                    count: 25
                }
            ]
        );
    }
}
