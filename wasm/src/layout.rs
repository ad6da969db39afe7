//! Where things live in toyvm's memory, and its initial contents.
//!
//! Bytes `[0, base)` hold the mutable globals (one word each), the
//! table (one word per entry) and, in a module with a data count section
//! (which `memory.init` and `data.drop` need), each data segment's current
//! length (one word: 0 once dropped, as an active segment is at
//! instantiation) and each passive segment's bytes, then each element
//! segment's current length and a passive one's entries (for `table.init`
//! and `elem.drop`); WebAssembly address `x` is toyvm byte
//! `base + x`. The memory's length starts at `base + initial pages * 64 KiB`
//! and may grow (`mgrow`) up to its capacity, `base + maximum pages * 64 KiB`.

use std::collections::BTreeMap;

use toyvm_vm::program::{DataSegment, MAX_MEMORY_WORDS};

use crate::module::Module;
use crate::{Error, Options, Result};

/// WebAssembly's page size.
pub const PAGE: u64 = 65536;

/// Where things live, in toyvm bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The toyvm byte address of WebAssembly address 0 (a multiple of 64).
    pub base: u64,
    /// The memory's length when the program starts, in bytes.
    pub initial_len: u64,
    /// The most bytes the memory can grow to.
    pub capacity: u64,
    /// Where each mutable global lives (by global index); `None` for an
    /// immutable one, which the translation uses as a constant.
    pub globals: Vec<Option<u64>>,
    /// Where the table starts.
    pub table: u64,
    /// The table's entries.
    pub table_len: u64,
    /// Each data segment's state, by data index (empty without a data
    /// count section: then no operator reads them).
    pub data: Vec<DataPlace>,
    /// Each element segment's state, by element index: its current length
    /// in entries (0 once dropped) and a passive segment's entries, one
    /// word each as in the table.
    pub elems: Vec<DataPlace>,
}

/// Where a data segment's state lives, in toyvm bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataPlace {
    /// The word holding its current length (0 once dropped).
    pub len: u64,
    /// Its bytes (a passive segment's; an active one keeps none).
    pub bytes: u64,
}

impl Layout {
    pub(crate) fn new(m: &Module<'_>, opts: &Options) -> Result<Layout> {
        let mut next = 0u64;
        let globals = m
            .globals
            .iter()
            .map(|g| {
                g.mutable.then(|| {
                    next += 8;
                    next - 8
                })
            })
            .collect();
        let table = next;
        let table_len = m.table.unwrap_or(0);
        next += 8 * table_len;
        let mut data = Vec::new();
        if m.data_count.is_some() {
            let passive: u64 = m
                .data
                .iter()
                .filter(|d| d.offset.is_none())
                .map(|d| d.bytes.len() as u64)
                .sum();
            if passive > crate::module::MAX_PASSIVE_DATA_BYTES {
                return Err(Error::Limit {
                    what: format!(
                        "{passive} bytes of passive data segments (at most {})",
                        crate::module::MAX_PASSIVE_DATA_BYTES
                    ),
                });
            }
            for d in &m.data {
                let len = next;
                next += 8;
                data.push(DataPlace { len, bytes: next });
                if d.offset.is_none() {
                    next += (d.bytes.len() as u64).div_ceil(8) * 8;
                }
            }
        }
        let passive: u64 = m
            .elems
            .iter()
            .filter(|e| e.offset.is_none())
            .map(|e| e.funcs.len() as u64)
            .sum();
        if passive > crate::module::MAX_TABLE_ENTRIES {
            return Err(Error::Limit {
                what: format!(
                    "{passive} entries of passive element segments (at most {})",
                    crate::module::MAX_TABLE_ENTRIES
                ),
            });
        }
        let mut elems = Vec::with_capacity(m.elems.len());
        for e in &m.elems {
            let len = next;
            next += 8;
            elems.push(DataPlace { len, bytes: next });
            if e.offset.is_none() {
                next += 8 * e.funcs.len() as u64;
            }
        }
        let base = next.div_ceil(64) * 64;
        let hard_limit = (MAX_MEMORY_WORDS * 8 - base) / PAGE;
        let limit = opts.max_memory_pages.min(hard_limit);
        let (initial, maximum) = m.memory.unwrap_or((0, Some(0)));
        if initial > limit {
            return Err(Error::Limit {
                what: format!(
                    "the memory's initial {initial} pages exceed the limit of {limit} pages ({} MiB; Options::max_memory_pages)",
                    (limit * PAGE) >> 20
                ),
            });
        }
        let max_pages = maximum.unwrap_or(u64::MAX).min(limit);
        Ok(Layout {
            base,
            initial_len: base + initial * PAGE,
            capacity: base + max_pages * PAGE,
            globals,
            table,
            table_len,
            data,
            elems,
        })
    }

    /// The toyvm byte address of a mutable global.
    pub fn global_addr(&self, index: u32) -> Option<u64> {
        self.globals.get(index as usize).copied().flatten()
    }
}

/// The memory's initial contents, or the instantiation trap (a toyvm trap
/// code) when a segment does not fit: elements are placed first, then data,
/// as WebAssembly instantiates.
pub struct Image {
    pub segments: Vec<DataSegment>,
    pub trap: Option<i32>,
}

/// Builds the image: mutable globals' initial values, the table's entries
/// (`(canonical type + 1) << 32 | toyvm function`; `func_value` gives the
/// toyvm function of a WebAssembly one) and the data segments.
pub fn image(m: &Module<'_>, layout: &Layout, func_value: &dyn Fn(u32) -> i64) -> Image {
    // Pieces in the order they are written (later ones win), as
    // (toyvm byte address, bytes).
    let mut pieces: Vec<(u64, Vec<u8>)> = Vec::new();
    for (g, addr) in m.globals.iter().zip(&layout.globals) {
        if let Some(addr) = addr {
            pieces.push((*addr, g.init.to_le_bytes().to_vec()));
        }
    }
    let mut trap = None;
    let entries = |e: &crate::module::Elem| -> Vec<u8> {
        let mut bytes = Vec::with_capacity(e.funcs.len() * 8);
        for f in &e.funcs {
            let value = f.map_or(0, func_value);
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        bytes
    };
    for e in &m.elems {
        let Some(offset) = e.offset else { continue };
        let end = offset as u64 + e.funcs.len() as u64;
        if end > layout.table_len {
            trap = Some(crate::trap_code::UNDEFINED_ELEMENT);
            break;
        }
        pieces.push((layout.table + 8 * offset as u64, entries(e)));
    }
    if trap.is_none() {
        for d in &m.data {
            let Some(offset) = d.offset else { continue };
            let end = offset as u64 + d.bytes.len() as u64;
            if layout.base + end > layout.initial_len {
                trap = Some(crate::trap_code::OUT_OF_BOUNDS);
                break;
            }
            pieces.push((layout.base + offset as u64, d.bytes.to_vec()));
        }
    }
    // Passive segments: their length and bytes (an active one's length
    // stays 0: it is dropped once placed).
    for (d, place) in m.data.iter().zip(&layout.data) {
        if d.offset.is_none() {
            let len = d.bytes.len() as u64;
            pieces.push((place.len, len.to_le_bytes().to_vec()));
            pieces.push((place.bytes, d.bytes.to_vec()));
        }
    }
    // Passive element segments: their length and entries (an active or
    // declared one's length stays 0: dropped at instantiation).
    for (e, place) in m.elems.iter().zip(&layout.elems) {
        if e.offset.is_none() && !e.funcs.is_empty() {
            let len = e.funcs.len() as u64;
            pieces.push((place.len, len.to_le_bytes().to_vec()));
            pieces.push((place.bytes, entries(e)));
        }
    }
    Image {
        segments: words(&pieces),
        trap,
    }
}

/// The pieces as runs of words: overlapping or adjacent pieces share a
/// run; the total is bounded by the pieces' bytes (plus two words each).
fn words(pieces: &[(u64, Vec<u8>)]) -> Vec<DataSegment> {
    // Word ranges [first, last] merged.
    let mut ranges: BTreeMap<u64, u64> = BTreeMap::new();
    for (addr, bytes) in pieces.iter().filter(|(_, b)| !b.is_empty()) {
        let first = addr / 8;
        let last = (addr + bytes.len() as u64 - 1) / 8;
        ranges
            .entry(first)
            .and_modify(|l| *l = (*l).max(last))
            .or_insert(last);
    }
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (first, last) in ranges {
        match merged.last_mut() {
            Some((_, l)) if first <= *l + 1 => *l = (*l).max(last),
            _ => merged.push((first, last)),
        }
    }
    let mut segments: Vec<DataSegment> = merged
        .iter()
        .map(|&(first, last)| DataSegment {
            addr: first,
            words: vec![0; (last - first + 1) as usize],
        })
        .collect();
    for (addr, bytes) in pieces {
        for (i, &b) in bytes.iter().enumerate() {
            let at = addr + i as u64;
            let word = at / 8;
            let s = merged.partition_point(|&(_, last)| last < word);
            let seg = &mut segments[s];
            let w = &mut seg.words[(word - seg.addr) as usize];
            let shift = 8 * (at % 8);
            *w = (*w & !(0xff << shift)) | ((b as i64) << shift);
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_become_little_endian_words_later_pieces_winning() {
        let segs = words(&[
            (0, vec![1, 2, 3]),
            (2, vec![9]),
            (8, vec![0xff; 8]),
            (100, vec![7]),
        ]);
        assert_eq!(segs.len(), 2);
        assert_eq!(segs[0].addr, 0);
        assert_eq!(segs[0].words, vec![0x090201, -1]);
        assert_eq!(segs[1].addr, 12);
        assert_eq!(segs[1].words, vec![7 << 32]);
    }
}
