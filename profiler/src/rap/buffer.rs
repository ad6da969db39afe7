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
        let h = (key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let slot = &mut self.slots[(h >> 40) as usize & self.mask];
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

#[cfg(test)]
mod tests {
    use super::*;

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
