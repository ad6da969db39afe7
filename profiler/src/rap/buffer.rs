//! The merging event buffer of 004 section 3.2.1: a direct-mapped hash table of
//! `(key, count)` in front of the RAP tree.  An event whose key is in its slot adds to
//! the count; a different key in the slot is evicted into the tree (no chaining) and
//! replaced.  Frequent events are thus counted in the buffer and reach the tree in
//! batches; the buffer is flushed when the tree is read (rap_finalize).

/// The buffer.  A slot is `(key, count)`, empty when the count is 0; slots sit side by
/// side so an event reads one of them.
#[derive(Debug, Clone)]
pub struct EventBuffer {
    slots: Vec<(u128, u64)>,
    mask: usize,
}

impl EventBuffer {
    /// A buffer of `entries` slots, rounded up to a power of two.
    pub fn new(entries: usize) -> Self {
        let n = entries.max(1).next_power_of_two();
        EventBuffer {
            slots: vec![(0, 0); n],
            mask: n - 1,
        }
    }

    /// Slots.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Never empty: at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Buffers one event; returns the evicted `(key, count)` when the slot held another key.
    #[inline]
    pub fn push(&mut self, key: u128) -> Option<(u128, u64)> {
        let (old, evicted) = self.push_slot(key);
        evicted.then_some(old)
    }

    /// [`EventBuffer::push`] without branches on the outcome: returns the slot's previous
    /// content and whether it was evicted (a different key with a nonzero count).  On a
    /// hit the slot's key is rewritten with itself and its count grows by one; otherwise
    /// the slot becomes `(key, 1)`.
    #[inline]
    pub fn push_slot(&mut self, key: u128) -> ((u128, u64), bool) {
        let slot = &mut self.slots[slot_of(key) & self.mask];
        let old = *slot;
        let hit = (old.0 == key) & (old.1 != 0);
        *slot = (key, u64::from(hit) * old.1 + 1);
        (old, !hit & (old.1 != 0))
    }

    /// Empties the buffer, yielding every buffered `(key, count)`.
    pub fn drain(&mut self) -> impl Iterator<Item = (u128, u64)> + '_ {
        self.slots
            .iter_mut()
            .filter(|s| s.1 != 0)
            .map(|s| (s.0, std::mem::take(&mut s.1)))
    }
}

/// A key's slot hash: the high half multiplied before it meets the low half, then mixed
/// (a multiply and two xor-shifts), so every key bit reaches the slot bits.  An edge's
/// key is `branch pc : next pc`, both in one function for most edges; xor of the halves
/// (the hash until issue 37) cancelled the function bits, and program-edges' 3,074 edges
/// fell on 109 hash inputs.
#[inline]
fn slot_of(key: u128) -> usize {
    let x = ((key >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ key as u64;
    let x = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    (x ^ (x >> 32)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edges within a function (same high pc bits on both ends) spread over the slots:
    /// with xor of the key's halves these 256 edges (16 functions x 16 branches) hashed
    /// alike per branch/target offset pair whatever their function.
    #[test]
    fn intra_function_edges_spread_over_the_slots() {
        let pc = |f: u64, off: u64| crate::tuple::Tuple::pc(f as u32, off as u32);
        let mut used = std::collections::HashSet::new();
        let mut inputs = std::collections::HashSet::new();
        for f in 0..16u64 {
            for j in 0..16u64 {
                let key = (u128::from(pc(f, 4 * j + 3)) << 64) | u128::from(pc(f, 4 * j + 4));
                used.insert(slot_of(key) & 1023);
                inputs.insert((key as u64) ^ (key >> 64) as u64);
            }
        }
        // The old hash's inputs: at most one per offset pair (5 here: 3 ^ 4 = 11 ^ 12),
        // the functions cancelled.
        assert!(inputs.len() <= 16, "{} inputs", inputs.len());
        // 256 keys into 1,024 slots: about 227 distinct slots expected at random.
        assert!(used.len() > 200, "{} slots", used.len());
    }

    #[test]
    fn merges_identical_events_and_evicts_on_conflict() {
        let mut b = EventBuffer::new(1);
        assert_eq!(b.push(5), None);
        assert_eq!(b.push(5), None);
        assert_eq!(b.push(6), Some((5, 2)));
        let rest: Vec<_> = b.drain().collect();
        assert_eq!(rest, vec![(6, 1)]);
        assert_eq!(b.drain().count(), 0);
    }
}
