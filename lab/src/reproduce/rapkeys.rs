//! What the RAP experiments share (paper 004): the keys the trees range over
//! (32-bit code addresses and 32-bit load values, as the paper's profiles),
//! the first merge time, and the tree's memory as section 5.2 measures it.
//! A floor module: it imports no other experiment.

use toyvm_profiler::Tuple;
use toyvm_profiler::rap::RapTree;

/// The first merge time of the trees (the paper's "at least a thousand
/// (2^10) events before our first merge", 3.3.1).
pub(super) const FIRST_MERGE: u64 = 1024;

/// The paper's code profiles range over 32-bit PCs (R = 2^32, Fig 2's
/// note): each branch's pc as a 32-bit address (function in the high 16
/// bits, offset in the low 16), in the tree key's top 32 bits. A 128-bit
/// tuple key (what `rap` profiles) has four times the levels, and a hot
/// key needs b nodes on each. Kept as the 32-bit addresses (a fourth of
/// the tree keys' memory); [`code_key`] makes the tree key.
pub(super) fn code_keys(s: &[Tuple]) -> Vec<u32> {
    s.iter()
        .map(|t| {
            let pc = toyvm_vm::Pc(t.a);
            ((pc.func() & 0xffff) << 16) | (pc.offset() & 0xffff)
        })
        .collect()
}

/// The tree key of a 32-bit code address: its bits at the key's top.
pub(super) fn code_key(addr: u32) -> u128 {
    u128::from(addr) << 96
}

/// Bits of a load-value key: the paper's loads were 32-bit words (R =
/// 2^32); toyvm's values are 64-bit, and a load-value key is the value's
/// low 32 bits, the word a 32-bit machine would load (a small negative
/// value is its two's complement word; values differing only above bit 31
/// share a key).
pub(super) const VALUE_BITS: u32 = 32;

/// The loaded values of value tuples (the `b` half) as 32-bit words, in
/// stream order.
pub(super) fn load_values(s: &[Tuple]) -> Vec<u32> {
    s.iter().map(|t| t.b as u32).collect()
}

/// The tree key of a 32-bit load value: its bits at the key's top.
pub(super) fn value_key(v: u32) -> u128 {
    u128::from(v) << 96
}

/// RAP memory as 004 section 5.2 measures it.
pub(super) struct Memory {
    /// The largest tree just before a merge (the paper's maximum).
    pub max: usize,
    /// The mean tree size just before merges (the paper's average).
    pub mean: f64,
    /// The most nodes at any moment, the first merge's run-up included.
    pub peak: usize,
    /// The event count at the merge before which the tree was largest.
    pub max_at: u64,
}

/// A tree (b, eps, q, first merge at [`FIRST_MERGE`]) over the keys' top
/// `bits` bits, fed `keys` one event each; its memory.
pub(super) fn rap_memory(
    keys: impl Iterator<Item = u128>,
    b: u32,
    eps: f64,
    q: u64,
    bits: u32,
) -> Memory {
    let mut t = RapTree::with_key_bits(b, eps, q, FIRST_MERGE, bits);
    for k in keys {
        t.add(k, 1);
    }
    let (max, mean) = t
        .nodes_before_merges()
        .unwrap_or((t.nodes(), t.nodes() as f64));
    Memory {
        max,
        mean,
        peak: t.peak_nodes(),
        max_at: t.largest_before_merge_at().unwrap_or(t.events()),
    }
}

/// [`rap_memory`] over 32-bit code keys.
pub(super) fn rap_code(keys: &[u32], b: u32, eps: f64, q: u64) -> Memory {
    rap_memory(keys.iter().map(|&k| code_key(k)), b, eps, q, 32)
}

/// The worst case before a merge over keys of `bits` bits, from the tree's
/// own bound (`rap::worst_case_before_merge`): O(log_b(R) / eps) as the
/// paper's, with the constant of our argument.
pub(super) fn worst_case_bits(b: u32, eps: f64, q: u64, bits: u32) -> f64 {
    toyvm_profiler::rap::worst_case_before_merge(b, eps, bits / b.trailing_zeros(), q)
}

/// [`worst_case_bits`] over 32-bit code keys.
pub(super) fn worst_case(b: u32, eps: f64, q: u64) -> f64 {
    worst_case_bits(b, eps, q, 32)
}
