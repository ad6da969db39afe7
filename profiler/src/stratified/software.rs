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
//! Intervals: at an interval end the A_k entries are drained to software (they count as
//! messages), the estimates of the interval become its candidates and start over.

use crate::hash::TupleMap;
use crate::profiler::{Candidate, Overhead, sort_candidates};
use crate::tuple::Tuple;

/// Cycles per message reaching software (001 section 5.3.2).
pub const CYCLES_PER_MESSAGE: u64 = 30;
const MESSAGES_PER_ENTRY: u8 = u8::MAX;

#[derive(Clone, Copy, Debug)]
struct Entry {
    tuple: Tuple,
    count: u64,
    messages: u8,
    last_use: u64,
}

/// A_k plus the software accumulator.
#[derive(Debug)]
pub struct Software {
    second: Option<(usize, Vec<Entry>)>,
    clock: u64,
    estimates: TupleMap<u64>,
    /// Messages the first level produced.
    pub produced: u64,
    /// Messages that reached software.
    pub delivered: u64,
}

impl Software {
    /// Software behind an optional A_k with `k` entries.
    pub fn new(second: Option<usize>) -> Self {
        Software {
            second: second.map(|k| (k, Vec::with_capacity(k))),
            clock: 0,
            estimates: TupleMap::default(),
            produced: 0,
            delivered: 0,
        }
    }

    fn deliver(&mut self, t: Tuple, count: u64) {
        self.delivered += 1;
        *self.estimates.entry(t).or_insert(0) += count;
    }

    /// A message `(t, count)` from the first level.
    #[inline]
    pub fn message(&mut self, t: Tuple, count: u64) {
        self.produced += 1;
        let Some((k, table)) = &mut self.second else {
            self.deliver(t, count);
            return;
        };
        self.clock += 1;
        if let Some(e) = table.iter_mut().find(|e| e.tuple == t) {
            e.count += count;
            e.messages += 1;
            e.last_use = self.clock;
            if e.messages == MESSAGES_PER_ENTRY {
                let (tu, c) = (e.tuple, e.count);
                table.retain(|e| e.tuple != tu);
                self.deliver(tu, c);
            }
            return;
        }
        let entry = Entry {
            tuple: t,
            count,
            messages: 1,
            last_use: self.clock,
        };
        if table.len() < *k {
            table.push(entry);
            return;
        }
        let lru = (0..table.len())
            .min_by_key(|&i| table[i].last_use)
            .expect("k >= 1");
        let old = std::mem::replace(&mut table[lru], entry);
        self.deliver(old.tuple, old.count);
    }

    /// Drains A_k and returns the interval's tuples whose estimate reaches `threshold`.
    pub fn end_interval(&mut self, threshold: u64) -> Vec<Candidate> {
        if let Some((_, table)) = &mut self.second {
            let drained: Vec<Entry> = std::mem::take(table);
            for e in drained {
                self.deliver(e.tuple, e.count);
            }
        }
        let mut out: Vec<Candidate> = self
            .estimates
            .drain()
            .filter(|(_, n)| *n >= threshold)
            .map(|(tuple, count)| Candidate { tuple, count })
            .collect();
        sort_candidates(&mut out);
        out
    }

    /// Messages delivered and their modeled cycles.
    pub fn overhead(&self) -> Overhead {
        Overhead {
            messages: self.delivered,
            cycles: self.delivered * CYCLES_PER_MESSAGE,
        }
    }

    /// Modeled A_k bytes: a 128-bit tuple, 2 kind bits and a 32-bit count per entry.
    pub fn state_bytes(&self) -> usize {
        self.second.as_ref().map_or(0, |(k, _)| k * 21)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_level_merges_without_changing_estimates() {
        let mut with = Software::new(Some(2));
        let mut without = Software::new(None);
        let ts = [
            Tuple::value(1, 1),
            Tuple::value(2, 2),
            Tuple::value(1, 1),
            Tuple::value(3, 3),
            Tuple::value(1, 1),
        ];
        for t in ts {
            with.message(t, 10);
            without.message(t, 10);
        }
        assert_eq!(with.end_interval(1), without.end_interval(1));
        assert!(with.overhead().messages < without.overhead().messages);
        assert_eq!(without.overhead().cycles, 5 * CYCLES_PER_MESSAGE);
    }
}
