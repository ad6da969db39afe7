//! The branch buffer of Conte's model: its entries, looked up by branch pc in a set of
//! `ways` entries with LRU replacement (see [`super`]), and a memo of where recent
//! branches sit, which saves the search of the set without changing its outcome.

/// One buffer entry: its tag (the branch, and the clock of its last use, 0 while the
/// entry is invalid: the clock is at least 1 once anything has been looked up, so the
/// way a miss takes is the first with the least `last_use`, an invalid way first, else
/// the least recently used) and what it holds about its branch.  All schemes share the
/// layout; each updates only its own fields.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Entry {
    pub(super) branch: u64,
    pub(super) last_use: u64,
    /// The last taken target, if `has_target`.
    pub(super) target: u64,
    /// Counter: executions and taken executions since the last sample.
    pub(super) executed: u64,
    pub(super) taken: u64,
    /// Two-level: the history register with its marker bit while not full; full, its
    /// last `width` outcomes with the full bit above them (bit `width`), so an update
    /// reads and writes one field.
    pub(super) history: u16,
    /// One-level: the 2-bit counter, or [`FRESH`] when just allocated (the counter then
    /// takes the first outcome's side).
    pub(super) counter: u8,
    pub(super) has_target: bool,
    pub(super) dirty: bool,
}

/// The one-level counter of an entry allocated and not yet updated.
pub(super) const FRESH: u8 = 4;

/// A memo slot: `[pc, entry]`, the buffer entry holding `pc`.  An empty slot holds a pc
/// that does not hash to it ([`empty`]), so no pc ever matches it.  Plain words, so the
/// memo is allocated zeroed (the kernel's zero pages: a short run touches few of its
/// 64 KB) and only slot 0 needs another empty pc.
type MemoSlot = [u64; 2];

/// Fibonacci hashing's odd multiplier (2^64 / phi).
const MEMO_MUL: u64 = 0x9E37_79B9_7F4A_7C15;

/// The memo's slots: a constant, so its index needs no bounds check (a larger buffer's
/// memo misses more often, and searches more sets, with the same outcome).
const MEMO_BITS: u32 = 12;
const MEMO_SLOTS: usize = 1 << MEMO_BITS;

/// The memo slot of `pc`.
#[inline(always)]
fn memo_index(pc: u64) -> usize {
    (pc.wrapping_mul(MEMO_MUL) >> (64 - MEMO_BITS)) as usize
}

/// A pc that does not hash to memo slot `h`: 0 hashes to slot 0, 2^63 to the middle one
/// (an odd multiplier keeps the top bit alone).
fn empty(h: usize) -> u64 {
    if h == 0 { 1 << 63 } else { 0 }
}

/// How the buffer is organised, copied into the lookup loop.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    ways: usize,
    /// Sets of `ways` entries, and `sets - 1` when that is a power of two (the usual
    /// case): a set is then selected by a mask rather than a division.
    sets: u64,
    set_mask: Option<u64>,
}

/// The buffer.
#[derive(Debug)]
pub(super) struct Buffer {
    pub(super) entries: Vec<Entry>,
    /// Where each recently seen branch sits: one multiply and one compare find it instead
    /// of a search of its set.  A branch sits in one way of its set, the memo only
    /// remembers which; a memo miss searches the set, and an entry given to another
    /// branch loses its memo slot.
    memo: Box<[MemoSlot; MEMO_SLOTS]>,
    geometry: Geometry,
    /// Allocations that replaced another branch's valid entry (buffer contentions, 002
    /// Fig 2), since the buffer was made.
    pub(super) contentions: u64,
}

impl Buffer {
    /// A buffer of `entries` invalid entries in sets of `ways`.
    pub(super) fn new(entries: usize, ways: usize) -> Self {
        let sets = (entries / ways) as u64;
        Buffer {
            entries: vec![Entry::default(); entries],
            memo: {
                let mut memo: Box<[MemoSlot; MEMO_SLOTS]> = vec![[0u64; 2]; MEMO_SLOTS]
                    .into_boxed_slice()
                    .try_into()
                    .expect("MEMO_SLOTS slots");
                memo[0][0] = empty(0);
                memo
            },
            geometry: Geometry {
                ways,
                sets,
                set_mask: sets.is_power_of_two().then(|| sets - 1),
            },
            contentions: 0,
        }
    }

    /// The buffer as a lookup loop uses it.
    pub(super) fn lookup(&mut self) -> Lookup<'_> {
        Lookup {
            entries: &mut self.entries,
            memo: &mut self.memo,
            geometry: self.geometry,
            contentions: &mut self.contentions,
        }
    }
}

/// The buffer borrowed for a loop of lookups: its slices and geometry stay in registers.
pub(super) struct Lookup<'a> {
    pub(super) entries: &'a mut [Entry],
    memo: &'a mut [MemoSlot; MEMO_SLOTS],
    geometry: Geometry,
    contentions: &'a mut u64,
}

impl Lookup<'_> {
    /// The index of the entry holding `pc`, allocating (and so losing the old entry's
    /// unsampled information) on a miss; a lookup at time `clock` (the caller records it
    /// as the entry's last use).
    #[inline(always)]
    pub(super) fn find(&mut self, pc: u64, clock: u64) -> usize {
        let h = memo_index(pc);
        let [memo_pc, entry] = self.memo[h];
        if memo_pc == pc {
            entry as usize
        } else {
            search(
                self.entries,
                self.memo,
                self.geometry,
                self.contentions,
                pc,
                h,
                clock,
            )
        }
    }
}

/// The lookup without the memo: the search of `pc`'s set, then the memo remembers the
/// way.
#[cold]
#[inline(never)]
fn search(
    entries: &mut [Entry],
    memo: &mut [MemoSlot; MEMO_SLOTS],
    geometry: Geometry,
    contentions: &mut u64,
    pc: u64,
    h: usize,
    clock: u64,
) -> usize {
    // Low offset bits select the set, as a BTB indexes by address; the function index
    // is mixed in so equal offsets in different functions spread.
    let x = (pc & 0xffff_ffff) ^ (pc >> 32).wrapping_mul(0x9E37_79B1);
    let ways = geometry.ways;
    let set = match geometry.set_mask {
        Some(mask) => x & mask,
        None => x % geometry.sets,
    };
    let base = set as usize * ways;
    let set = &mut entries[base..base + ways];
    // One pass finds a hit, or else the first way with the least `last_use`.
    let (mut victim, mut least) = (0, u64::MAX);
    let mut hit = None;
    for (w, e) in set.iter().enumerate() {
        if e.branch == pc && e.last_use != 0 {
            hit = Some(w);
            break;
        }
        if e.last_use < least {
            (victim, least) = (w, e.last_use);
        }
    }
    let w = match hit {
        Some(w) => w,
        None => {
            let old = set[victim];
            // The new branch inherits the way's dirty bit (and its place in the dirty
            // list): the model marks it dirty right after, so the bit only says whether
            // the index is listed already.
            set[victim] = Entry {
                branch: pc,
                last_use: clock,
                dirty: old.dirty,
                history: 1,
                counter: FRESH,
                ..Entry::default()
            };
            if least != 0 {
                *contentions += 1;
                let g = memo_index(old.branch);
                if memo[g][0] == old.branch {
                    memo[g][0] = empty(g);
                }
            }
            victim
        }
    };
    memo[h] = [pc, (base + w) as u64];
    base + w
}
