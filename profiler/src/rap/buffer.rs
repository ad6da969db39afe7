//! The merging event buffer of 004 section 3.2.1: a direct-mapped hash table of
//! `(key, count)` in front of the RAP tree.  An event whose key is in its slot adds to
//! the count; a different key in the slot is evicted into the tree (no chaining) and
//! replaced.  Frequent events are thus counted in the buffer and reach the tree in
//! batches; the buffer is flushed when the tree is read (rap_finalize).

/// The buffer.
#[derive(Debug, Clone)]
pub struct EventBuffer {
    keys: Vec<u128>,
    counts: Vec<u64>,
    mask: usize,
}

impl EventBuffer {
    /// A buffer of `entries` slots, rounded up to a power of two.
    pub fn new(entries: usize) -> Self {
        let n = entries.max(1).next_power_of_two();
        EventBuffer {
            keys: vec![0; n],
            counts: vec![0; n],
            mask: n - 1,
        }
    }

    /// Slots.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Never empty: at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Buffers one event; returns the evicted `(key, count)` when the slot held another key.
    #[inline]
    pub fn push(&mut self, key: u128) -> Option<(u128, u64)> {
        let h = (key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h >> 40) as usize & self.mask;
        if self.counts[i] != 0 && self.keys[i] == key {
            self.counts[i] += 1;
            return None;
        }
        let old = (self.keys[i], self.counts[i]);
        self.keys[i] = key;
        self.counts[i] = 1;
        (old.1 != 0).then_some(old)
    }

    /// Empties the buffer, yielding every buffered `(key, count)`.
    pub fn drain(&mut self) -> impl Iterator<Item = (u128, u64)> + '_ {
        self.keys
            .iter()
            .zip(self.counts.iter_mut())
            .filter(|(_, c)| **c != 0)
            .map(|(k, c)| (*k, std::mem::take(c)))
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
