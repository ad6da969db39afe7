//! A program's memory: zeroed words, backed by transparent huge pages when
//! large, with a current length; and how its byte view and word view
//! address the same storage.
//!
//! # One memory, two views
//!
//! The memory is `capacity` 64-bit words, that is `8 * capacity` bytes. The
//! word view (`ld`/`st`, and [`Memory`] dereferenced) indexes words; the byte
//! view (the sized loads and stores, [`Memory::bytes`]) indexes bytes, and
//! byte `8w + i` is bits `8i .. 8i + 7` of word `w`: little-endian, as the
//! hosts toyvm builds for store words (a big-endian target is refused at
//! compile time below, so the byte view is simply the words' storage).
//!
//! The memory has a *current length* in bytes, [`Memory::len_bytes`], at
//! most its capacity: every access is bounds-checked against it (a word
//! access needs the whole word inside it, so the word view is the
//! `len_bytes / 8` whole words), and `mgrow` raises it ([`Memory::grow`]).
//! Bytes past the length are zero and stay zero until growing exposes
//! them: nothing can write them (the views handed out stop at the length).
//!
//! A memory of [`MAP_MIN_BYTES`] or more is an anonymous mapping: the
//! kernel's zero pages, faulted in as the program touches them, so a run
//! pays only for the memory it uses (a zeroed vector that size, taken on a
//! thread whose allocator reuses freed memory, was written whole: 512 KB
//! of zeroes were a fifth of a short JIT run's fixed cost). From
//! [`HUGE_PAGE_MIN_BYTES`] the kernel is asked to back it with transparent
//! huge pages (`madvise(2)`'s `MADV_HUGEPAGE`, through `memmap2`'s safe
//! [`MmapMut::advise`]); a smaller memory is an ordinary zeroed vector. Either way the program sees the same
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

use crate::semantics;

// The byte view is the words' storage seen as bytes: byte `8w + i` must be
// bits `8i ..` of word `w`, which holds on little-endian hosts only.
const _: () = assert!(
    cfg!(target_endian = "little"),
    "toyvm's memory views assume a little-endian host"
);

/// Memories at least this large (two huge pages) are advised to use huge
/// pages.
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Memories at least this large are mapped (see the module docs); smaller
/// ones are a vector.
pub const MAP_MIN_BYTES: usize = 256 << 10;

/// A program's memory (see the module docs): zeroed words, with a current
/// length in bytes; dereferences to `[i64]`, the whole words within the
/// current length.
pub struct Memory {
    backing: Backing,
    /// The current length in bytes, `<= 8 * capacity`.
    len: u64,
}

enum Backing {
    Heap(Vec<i64>),
    /// Exactly `words * 8` bytes, page-aligned (so aligned for `i64`).
    Mapped(MmapMut),
}

impl Memory {
    /// `words` zeroed words, all of them within the current length, or
    /// `None` when the host cannot give them (nothing is then allocated:
    /// the request is made fallibly).
    pub fn zeroed(words: usize) -> Option<Memory> {
        let backing = Self::backing(words)?;
        Some(Memory {
            backing,
            len: words as u64 * 8,
        })
    }

    fn backing(words: usize) -> Option<Backing> {
        let bytes = words.checked_mul(8)?;
        if bytes >= MAP_MIN_BYTES {
            let map = MmapOptions::new().len(bytes).map_anon().ok()?;
            #[cfg(target_os = "linux")]
            if bytes >= HUGE_PAGE_MIN_BYTES {
                // Only advice: where the kernel does not take it the mapping
                // stays an ordinary one, which is as correct.
                let _ = map.advise(memmap2::Advice::HugePage);
            }
            return Some(Backing::Mapped(map));
        }
        // Ask fallibly first, so a host that cannot give it gets an error
        // instead of an abort; the probe is returned and the memory taken
        // with `vec!`, whose zeroed allocation maps fresh pages without
        // writing them (a safe fallible zeroed allocation is not stable yet).
        Vec::<i64>::new().try_reserve_exact(words).ok()?;
        Some(Backing::Heap(vec![0i64; words]))
    }

    /// Whether the memory is a mapping advised to use huge pages (large
    /// memories on Linux), not a vector.
    pub fn is_mapped(&self) -> bool {
        matches!(self.backing, Backing::Mapped(_))
    }

    /// Every word of the capacity.
    fn all(&self) -> &[i64] {
        match &self.backing {
            Backing::Heap(v) => v,
            // Cannot fail: the mapping is page-aligned and a whole number of words.
            Backing::Mapped(m) => bytemuck::cast_slice(&m[..]),
        }
    }

    fn all_mut(&mut self) -> &mut [i64] {
        match &mut self.backing {
            Backing::Heap(v) => v,
            Backing::Mapped(m) => bytemuck::cast_slice_mut(&mut m[..]),
        }
    }

    /// The capacity in words (`.memory`).
    pub fn capacity_words(&self) -> usize {
        self.all().len()
    }

    /// The capacity in bytes: the most the length can grow to.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_words() as u64 * 8
    }

    /// The current length in bytes.
    pub fn len_bytes(&self) -> u64 {
        self.len
    }

    /// The bytes within the current length (the byte view).
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(self.all())[..self.len as usize]
    }

    /// The bytes within the current length, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len as usize;
        &mut bytemuck::cast_slice_mut(self.all_mut())[..len]
    }

    /// `mgrow`: grows the length by `by` bytes ([`semantics::grown_length`]);
    /// returns the old length, or `None` (nothing changes) when `by < 0`
    /// or the capacity would be passed. The bytes exposed are zero.
    pub fn grow(&mut self, by: i64) -> Option<u64> {
        let old = self.len;
        self.len = semantics::grown_length(old, self.capacity_bytes(), by)?;
        Some(old)
    }

    /// Sets the current length to `len` bytes, which compiled code that ran
    /// `mgrow` reports: the length never shrinks, so the bytes past it stay
    /// zero.
    ///
    /// # Panics
    ///
    /// If `len` is below the current length or past the capacity.
    pub fn set_grown_length(&mut self, len: u64) {
        assert!(
            self.len <= len && len <= self.capacity_bytes(),
            "a memory's length only grows, up to its capacity ({} -> {len} of {})",
            self.len,
            self.capacity_bytes()
        );
        self.len = len;
    }

    /// Makes `len` bytes (at most the capacity) the current length of a
    /// memory that has not run yet ([`super::memory`]), whose bytes past
    /// `len` are all still zero.
    pub(crate) fn set_initial_length(&mut self, len: u64) {
        debug_assert!(len <= self.capacity_bytes());
        debug_assert!(
            self.all()[(len as usize).div_ceil(8)..]
                .iter()
                .all(|&w| w == 0)
        );
        self.len = len;
    }

    /// The interpreter's view: the whole words within the length (the
    /// word view), the rest of the capacity, and the length in bytes.
    pub(crate) fn split(&mut self) -> (&mut [i64], &mut [i64], u64) {
        let len = self.len;
        let (words, rest) = self.all_mut().split_at_mut((len / 8) as usize);
        (words, rest, len)
    }

    /// Compiled code's view: the first word's address and the capacity in
    /// words. Compiled code reads and writes only within the current
    /// length (it checks every access against it) and reports a grown
    /// length through [`set_grown_length`](Self::set_grown_length).
    pub fn as_mut_ptr(&mut self) -> *mut i64 {
        self.all_mut().as_mut_ptr()
    }
}

/// The `size` bytes (1, 2, 4 or 8) at byte address `ea`, little-endian,
/// of a memory split as the interpreter holds it: `words`, the whole words
/// within the length, and `rest`, the capacity past them. The caller has
/// checked the access against the length ([`semantics::bytes_in_bounds`]).
#[inline(always)]
pub(crate) fn load(words: &[i64], rest: &[i64], ea: u64, size: u8) -> u64 {
    let (at, end) = (ea as usize, ea as usize + size as usize);
    let bytes: &[u8] = bytemuck::cast_slice(words);
    match bytes.get(at..end) {
        Some(b) => match size {
            1 => b[0] as u64,
            2 => u16::from_le_bytes([b[0], b[1]]) as u64,
            4 => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64,
            _ => u64::from_le_bytes(b.try_into().expect("8 bytes")),
        },
        None => load_past_words(bytes, bytemuck::cast_slice(rest), at, size),
    }
}

/// [`load`] of an access that reaches past the whole words, into the
/// partial last word of a length that is not a multiple of 8.
#[cold]
#[inline(never)]
fn load_past_words(bytes: &[u8], rest: &[u8], at: usize, size: u8) -> u64 {
    (0..size as usize).rev().fold(0u64, |acc, i| {
        let k = at + i;
        let b = bytes.get(k).unwrap_or_else(|| &rest[k - bytes.len()]);
        acc << 8 | *b as u64
    })
}

/// Stores the low `size` bytes of `v` at byte address `ea`, little-endian,
/// in a memory split as for [`load`]; the caller has checked the bounds.
#[inline(always)]
pub(crate) fn store(words: &mut [i64], rest: &mut [i64], ea: u64, size: u8, v: i64) {
    let (at, end) = (ea as usize, ea as usize + size as usize);
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(words);
    let le = v.to_le_bytes();
    match bytes.get_mut(at..end) {
        Some(b) => b.copy_from_slice(&le[..size as usize]),
        None => store_past_words(
            bytes,
            bytemuck::cast_slice_mut(rest),
            at,
            &le[..size as usize],
        ),
    }
}

/// [`store`] of an access that reaches into the partial last word.
#[cold]
#[inline(never)]
fn store_past_words(bytes: &mut [u8], rest: &mut [u8], at: usize, le: &[u8]) {
    let whole = bytes.len();
    for (i, &b) in le.iter().enumerate() {
        let k = at + i;
        match bytes.get_mut(k) {
            Some(slot) => *slot = b,
            None => rest[k - whole] = b,
        }
    }
}

impl From<Vec<i64>> for Memory {
    /// These words as a memory, all of them within the current length.
    fn from(words: Vec<i64>) -> Memory {
        Memory {
            len: words.len() as u64 * 8,
            backing: Backing::Heap(words),
        }
    }
}

impl Deref for Memory {
    type Target = [i64];

    /// The word view: the whole words within the current length.
    fn deref(&self) -> &[i64] {
        let words = (self.len / 8) as usize;
        &self.all()[..words]
    }
}

impl DerefMut for Memory {
    fn deref_mut(&mut self) -> &mut [i64] {
        let words = (self.len / 8) as usize;
        &mut self.all_mut()[..words]
    }
}

impl Clone for Memory {
    fn clone(&self) -> Memory {
        let mut copy =
            Memory::zeroed(self.capacity_words()).expect("memory for a copy of a memory");
        copy.all_mut().copy_from_slice(self.all());
        copy.len = self.len;
        copy
    }
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("words", &self.capacity_words())
            .field("len_bytes", &self.len)
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

impl PartialEq for Memory {
    fn eq(&self, other: &Memory) -> bool {
        self.len == other.len && self.all() == other.all()
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
            MAP_MIN_BYTES / 8 - 1,
            MAP_MIN_BYTES / 8,
            HUGE_PAGE_MIN_BYTES / 8 - 1,
            HUGE_PAGE_MIN_BYTES / 8,
            3 << 20,
        ] {
            let mut m = Memory::zeroed(words).unwrap();
            assert_eq!(m.len(), words);
            assert_eq!(m.is_mapped(), words * 8 >= MAP_MIN_BYTES, "{words}");
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
    fn byte_view_and_word_view_agree_little_endian() {
        let mut m = Memory::from(vec![0x0807_0605_0403_0201, -1, 0]);
        assert_eq!(&m.bytes()[..9], &[1, 2, 3, 4, 5, 6, 7, 8, 0xff]);
        m.bytes_mut()[16] = 0xab;
        m.bytes_mut()[23] = 0x80;
        assert_eq!(m[2], 0x8000_0000_0000_00ab_u64 as i64);
        let (words, rest, len) = m.split();
        assert_eq!((len, rest.len()), (24, 0));
        // Unaligned, across the boundary of words 0 and 1.
        assert_eq!(load(words, rest, 6, 4), 0xffff_0807);
        assert_eq!(load(words, rest, 7, 2), 0xff08);
        assert_eq!(load(words, rest, 1, 8), 0xff08_0706_0504_0302);
        store(words, rest, 6, 4, 0x1122_3344);
        assert_eq!(words[0], 0x3344_0605_0403_0201);
        assert_eq!(words[1], 0xffff_ffff_ffff_1122_u64 as i64);
        store(words, rest, 15, 2, 0x7766);
        assert_eq!(words[1] as u64 >> 56, 0x66);
        assert_eq!(words[2] & 0xff, 0x77);
    }

    #[test]
    fn the_length_bounds_the_views_and_grows_to_the_capacity() {
        let mut m = Memory::zeroed(4).unwrap();
        assert_eq!((m.len_bytes(), m.capacity_bytes()), (32, 32));
        m.set_initial_length(8);
        assert_eq!((m.len(), m.bytes().len()), (1, 8));
        assert_eq!(m.grow(-1), None);
        assert_eq!(m.grow(25), None);
        assert_eq!(m.len_bytes(), 8);
        // Growing by 3 bytes: a partial word, in the byte view only.
        assert_eq!(m.grow(3), Some(8));
        assert_eq!((m.len(), m.bytes().len()), (1, 11));
        let (words, rest, len) = m.split();
        assert_eq!((words.len(), rest.len(), len), (1, 3, 11));
        store(words, rest, 6, 4, 0x4433_2211);
        assert_eq!(load(words, rest, 6, 4), 0x4433_2211);
        assert_eq!((words[0] as u64 >> 48, rest[0]), (0x2211, 0x4433));
        assert_eq!(m.grow(21), Some(11));
        assert_eq!((m.len_bytes(), m.len()), (32, 4));
        assert_eq!(m.grow(1), None);
        assert_eq!(m.grow(0), Some(32));
        let copy = m.clone();
        assert_eq!((copy.len_bytes(), &copy[..]), (32, &m[..]));
    }

    #[test]
    #[should_panic(expected = "only grows")]
    fn a_length_never_shrinks() {
        let mut m = Memory::zeroed(2).unwrap();
        m.set_grown_length(8);
    }

    #[test]
    fn a_size_past_the_address_space_is_refused_not_aborted() {
        assert!(Memory::zeroed(usize::MAX).is_none());
        assert!(Memory::zeroed(usize::MAX / 8).is_none());
    }
}
