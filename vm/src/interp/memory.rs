//! A program's memory: zeroed words, backed by transparent huge pages when
//! large.
//!
//! A memory of [`HUGE_PAGE_MIN_BYTES`] or more is an anonymous mapping the
//! kernel is asked to back with transparent huge pages (`madvise(2)`'s
//! `MADV_HUGEPAGE`, through `memmap2`'s safe [`MmapMut::advise`]); a smaller
//! one is an ordinary zeroed vector. Either way the program sees the same
//! zeroed words ([`Memory`] dereferences to `[i64]`), so no result depends on
//! the backing, only speed: a program that touches a large memory takes one
//! page fault per 2 MiB instead of one per 4 KiB, and its strided accesses
//! miss the TLB far less. `programs/sieve.tasm` at 10^7 (80 MB of words)
//! spent a third of its compiled run in the kernel faulting pages in before
//! this (see the README's benchmarks). On a kernel whose transparent huge
//! pages are off (`/sys/kernel/mm/transparent_hugepage/enabled` = `never`),
//! or outside Linux, the advice is not given or has no effect, and the
//! memory is an ordinary mapping.

use memmap2::{MmapMut, MmapOptions};
use std::fmt;
use std::ops::{Deref, DerefMut};

/// Memories at least this large (two huge pages) are mapped and advised to
/// use huge pages; smaller ones are a vector.
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Zeroed words that a program runs on; dereferences to `[i64]`.
pub struct Memory(Backing);

enum Backing {
    Heap(Vec<i64>),
    /// Exactly `words * 8` bytes, page-aligned (so aligned for `i64`).
    Mapped(MmapMut),
}

impl Memory {
    /// `words` zeroed words, or `None` when the host cannot give them
    /// (nothing is then allocated: the request is made fallibly).
    pub fn zeroed(words: usize) -> Option<Memory> {
        let bytes = words.checked_mul(8)?;
        if bytes >= HUGE_PAGE_MIN_BYTES {
            let map = MmapOptions::new().len(bytes).map_anon().ok()?;
            #[cfg(target_os = "linux")]
            {
                // Only advice: where the kernel does not take it the mapping
                // stays an ordinary one, which is as correct.
                let _ = map.advise(memmap2::Advice::HugePage);
            }
            return Some(Memory(Backing::Mapped(map)));
        }
        // Ask fallibly first, so a host that cannot give it gets an error
        // instead of an abort; the probe is returned and the memory taken
        // with `vec!`, whose zeroed allocation maps fresh pages without
        // writing them (a safe fallible zeroed allocation is not stable yet).
        Vec::<i64>::new().try_reserve_exact(words).ok()?;
        Some(Memory(Backing::Heap(vec![0i64; words])))
    }

    /// Whether the memory is a mapping advised to use huge pages (large
    /// memories on Linux), not a vector.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Backing::Mapped(_))
    }
}

impl Deref for Memory {
    type Target = [i64];

    fn deref(&self) -> &[i64] {
        match &self.0 {
            Backing::Heap(v) => v,
            // Cannot fail: the mapping is page-aligned and a whole number of words.
            Backing::Mapped(m) => bytemuck::cast_slice(&m[..]),
        }
    }
}

impl DerefMut for Memory {
    fn deref_mut(&mut self) -> &mut [i64] {
        match &mut self.0 {
            Backing::Heap(v) => v,
            Backing::Mapped(m) => bytemuck::cast_slice_mut(&mut m[..]),
        }
    }
}

impl Clone for Memory {
    fn clone(&self) -> Memory {
        let mut copy = Memory::zeroed(self.len()).expect("memory for a copy of a memory");
        copy.copy_from_slice(self);
        copy
    }
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("words", &self.len())
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

impl PartialEq for Memory {
    fn eq(&self, other: &Memory) -> bool {
        **self == **other
    }
}

impl Eq for Memory {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_memories_are_zeroed_words_either_way() {
        for words in [
            0,
            1,
            1000,
            HUGE_PAGE_MIN_BYTES / 8 - 1,
            HUGE_PAGE_MIN_BYTES / 8,
            3 << 20,
        ] {
            let mut m = Memory::zeroed(words).unwrap();
            assert_eq!(m.len(), words);
            assert_eq!(m.is_mapped(), words * 8 >= HUGE_PAGE_MIN_BYTES, "{words}");
            assert!(m.iter().all(|&w| w == 0));
            if words > 0 {
                m[0] = i64::MAX;
                m[words - 1] = -7;
                assert_eq!(m[words - 1], -7);
                assert_eq!(m[0], if words == 1 { -7 } else { i64::MAX });
                let copy = m.clone();
                assert_eq!(copy, m);
                assert_eq!(copy.is_mapped(), m.is_mapped());
            }
        }
    }

    #[test]
    fn a_size_past_the_address_space_is_refused_not_aborted() {
        assert!(Memory::zeroed(usize::MAX).is_none());
        assert!(Memory::zeroed(usize::MAX / 8).is_none());
    }
}
