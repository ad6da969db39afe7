//! The multi-hash model's fully associative accumulator (000, section 5.2) and the
//! software index that finds its entries (see [`Accumulator`]).

use super::{BLOCK, Sorted};
use crate::tuple::Tuple;

#[derive(Clone, Copy, Debug)]
pub(super) struct AccEntry {
    pub(super) tuple: Tuple,
    pub(super) count: u64,
    pub(super) replaceable: bool,
    /// The key the index places the entry by (see `MultiHash::acc_key`).
    pub(super) key: u64,
}

/// A free index slot.  Its tag half (0xffff) is no key's tag, which has 15 bits.
pub(super) const EMPTY: u32 = u32::MAX;

/// The fully associative accumulator.  Hardware compares all tags at once; we find the
/// entry through an open-addressed index (linear probing, backward-shift deletion),
/// placed by a caller-supplied 64-bit key of the tuple.
#[derive(Debug)]
pub(super) struct Accumulator {
    pub(super) cap: usize,
    pub(super) entries: Vec<AccEntry>,
    /// `tag << 16 | entry number` per used slot, else `EMPTY`; see [`Accumulator::slot`].
    pub(super) index: Vec<u32>,
    pub(super) mask: usize,
    /// `64 - log2(index.len())`.
    pub(super) shift: u32,
    pub(super) replaceable: usize,
    /// No entry before this one is replaceable with count 0 (see
    /// [`Accumulator::victim`]).
    pub(super) zero_from: usize,
}

impl Accumulator {
    pub(super) fn new(cap: usize) -> Self {
        // At least 8 slots per entry: most misses find their home slot empty rather
        // than taken by another entry, which would send them down the slow path.  For
        // the default 100 entries that is 1,024 four-byte slots.
        let size = (8 * cap).next_power_of_two();
        Accumulator {
            cap,
            entries: Vec::with_capacity(cap),
            index: vec![EMPTY; size],
            mask: size - 1,
            shift: 64 - size.trailing_zeros(),
            replaceable: 0,
            zero_from: 0,
        }
    }

    /// A key's home slot (where its probe starts) and its 15-bit tag, from independent
    /// bits of one multiplicative hash: the product's top bits depend on every key bit,
    /// which matters for the packed hash words used as keys (their lanes leave bits 0).
    #[inline(always)]
    pub(super) fn slot(&self, key: u64) -> (usize, u32) {
        let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> self.shift) as usize, (h >> 20) as u32 & 0x7fff)
    }

    #[inline]
    pub(super) fn home(&self, key: u64) -> usize {
        self.slot(key).0
    }

    /// Splits a block by its keys into the tuples whose home slot holds an entry with
    /// their tag (almost surely their own entry) and the others (see [`Sorted`]).
    ///
    /// Branch-free, so the coin flip of hit or miss costs no mispredicts: the outcome is
    /// one compare of the slot's tag half (free slots have a tag no key has), and each
    /// position is written to both lists with only the right list's length advanced.
    /// Only the index is read, not the entries, so a lookup is one load.
    #[inline(always)]
    pub(super) fn sort(&self, keys: &[u64], out: &mut Sorted) {
        let (mut hits, mut misses) = (0, 0);
        for (j, &key) in keys.iter().enumerate() {
            // (`% BLOCK` on indices known to be in range spares the bounds checks.)
            let j = j % BLOCK;
            let (p, tag) = self.slot(key);
            let v = self.index[p];
            let hit = v >> 16 == tag;
            out.hit_at[hits % BLOCK] = j as u8;
            hits += hit as usize;
            out.miss_at[misses % BLOCK] = j as u8;
            misses += !hit as usize;
            out.entry[j] = v as u16;
        }
        out.hits = hits;
        out.misses = misses;
    }

    /// Whether every hit of `sorted` is really its tuple's entry (not another tuple's
    /// with an equal key tag at the same home slot).
    #[inline(always)]
    pub(super) fn verify(&self, block: &[Tuple], sorted: &Sorted) -> bool {
        sorted.hit_at[..sorted.hits].iter().all(|&at| {
            let j = at as usize % BLOCK;
            self.entries[sorted.entry[j] as usize].tuple == block[j]
        })
    }

    #[inline]
    pub(super) fn find(&self, t: &Tuple, key: u64) -> Option<usize> {
        let mut p = self.home(key);
        loop {
            let v = self.index[p];
            if v == EMPTY {
                return None;
            }
            let slot = v as u16 as usize;
            if self.entries[slot].tuple == *t {
                return Some(slot);
            }
            p = (p + 1) & self.mask;
        }
    }

    #[inline]
    pub(super) fn hit(&mut self, i: usize, threshold: u64) {
        self.hit_all(std::iter::once(i), threshold);
    }

    /// Counts a hit on each entry of `hits`.
    #[inline(always)]
    pub(super) fn hit_all(&mut self, hits: impl Iterator<Item = usize>, threshold: u64) {
        let mut settled = 0;
        for i in hits {
            let e = &mut self.entries[i];
            e.count += 1;
            // A retained entry becomes non-replaceable when it reaches T again.
            // Branch-free: early in an interval the hits alternate unpredictably
            // between entries below and at T, replaceable or not.
            let settle = e.replaceable & (e.count >= threshold);
            e.replaceable ^= settle;
            settled += settle as usize;
        }
        self.replaceable -= settled;
    }

    pub(super) fn insert_index(&mut self, key: u64, slot: usize) {
        let (mut p, tag) = self.slot(key);
        while self.index[p] != EMPTY {
            p = (p + 1) & self.mask;
        }
        self.index[p] = tag << 16 | slot as u32;
    }

    pub(super) fn remove_index(&mut self, victim: usize) {
        let mut p = self.home(self.entries[victim].key);
        while self.index[p] as u16 as usize != victim {
            p = (p + 1) & self.mask;
        }
        // Backward-shift deletion keeps every probe chain unbroken.
        let mut hole = p;
        let mut q = (p + 1) & self.mask;
        while self.index[q] != EMPTY {
            let home = self.home(self.entries[self.index[q] as u16 as usize].key);
            let dist_q = q.wrapping_sub(home) & self.mask;
            let dist_hole = q.wrapping_sub(hole) & self.mask;
            if dist_q >= dist_hole {
                self.index[hole] = self.index[q];
                hole = q;
            }
            q = (q + 1) & self.mask;
        }
        self.index[hole] = EMPTY;
    }

    pub(super) fn push(&mut self, e: AccEntry) {
        self.entries.push(e);
        self.insert_index(e.key, self.entries.len() - 1);
    }

    /// Allocates an entry for `t` with `count`; false when none is free.
    pub(super) fn promote(&mut self, t: Tuple, key: u64, count: u64) -> bool {
        let entry = AccEntry {
            tuple: t,
            count,
            replaceable: false,
            key,
        };
        if self.entries.len() < self.cap {
            self.push(entry);
            return true;
        }
        if self.replaceable == 0 {
            return false;
        }
        let victim = self.victim();
        self.remove_index(victim);
        self.entries[victim] = entry;
        self.replaceable -= 1;
        self.insert_index(key, victim);
        true
    }

    /// The replaceable entry with the lowest count, the first of them on a tie (there
    /// is one: `replaceable > 0`).
    ///
    /// No count is below 0, so the first replaceable entry with count 0 is that entry.
    /// Within an interval no entry becomes replaceable and no count falls (both happen
    /// only in `end_interval`, which resets `zero_from`), so an entry that is not a
    /// replaceable 0 now never becomes one before the interval ends: the search for
    /// one resumes where the last one stopped. With retaining every kept entry starts
    /// the interval as a replaceable 0, so at short intervals, where the accumulator
    /// is full and nearly every promotion reuses an entry, this is one pass per
    /// interval instead of one per promotion. Only when no replaceable 0 is left are
    /// all entries scanned for the lowest count.
    pub(super) fn victim(&mut self) -> usize {
        let zero = self.entries[self.zero_from..]
            .iter()
            .position(|e| e.replaceable & (e.count == 0));
        if let Some(i) = zero {
            let victim = self.zero_from + i;
            // The victim is about to hold a non-replaceable entry.
            self.zero_from = victim + 1;
            return victim;
        }
        self.zero_from = self.entries.len();
        (0..self.entries.len())
            .filter(|&i| self.entries[i].replaceable)
            .min_by_key(|&i| self.entries[i].count)
            .expect("replaceable count says one exists")
    }

    pub(super) fn end_interval(&mut self, retain: bool, threshold: u64) {
        // Retaining (5.4.1) flushes the entries below T and sets the counts of those
        // it keeps to 0; the base design (5.2) flushes none ("the accumulator table is
        // not flushed, and instead all entries are marked as replaceable") and, unlike
        // retaining, does not say the counts are cleared, so they are kept: an entry
        // carries its count into the next interval until it is replaced. Either way
        // what stays is replaceable.
        // In place, in order (no allocation per interval: at short intervals
        // this runs every few hundred tuples); each kept entry moves to the
        // slot it would get by being pushed again.
        let mut kept = 0;
        for i in 0..self.entries.len() {
            let e = self.entries[i];
            if !retain || e.count >= threshold {
                self.entries[kept] = AccEntry {
                    count: if retain { 0 } else { e.count },
                    replaceable: true,
                    ..e
                };
                kept += 1;
            }
        }
        self.entries.truncate(kept);
        self.index.fill(EMPTY);
        self.replaceable = kept;
        self.zero_from = 0;
        for slot in 0..kept {
            self.insert_index(self.entries[slot].key, slot);
        }
    }
}
