//! The code table: installed regions by slot, and per instruction the slot
//! of the region whose head is there (what the interpreter asks at every
//! transfer of control, so one load).

use toyvm_vm::Program;

use super::JitStats;
use super::policy::Installed;

/// Installed regions by slot, and where their heads are.
pub(super) struct CodeTable {
    slots: Vec<Option<Installed>>,
    /// Per function, per instruction offset: installed slot + 1, or 0.
    index: Vec<Vec<u32>>,
}

impl CodeTable {
    /// An empty table for `program`'s instructions.
    pub(super) fn new(program: &Program) -> CodeTable {
        CodeTable {
            slots: Vec::new(),
            index: program
                .functions
                .iter()
                .map(|f| vec![0; f.code.len()])
                .collect(),
        }
    }

    /// The slot of the region installed at `func`'s offset `pc`.
    #[inline(always)]
    pub(super) fn region_at(&self, func: u32, pc: u32) -> Option<u32> {
        let v = *self.index.get(func as usize)?.get(pc as usize)?;
        (v != 0).then(|| v - 1)
    }

    /// The region in `slot`, if it is still installed.
    pub(super) fn get(&self, slot: u32) -> Option<&Installed> {
        self.slots[slot as usize].as_ref()
    }

    /// ... to change.
    pub(super) fn get_mut(&mut self, slot: u32) -> Option<&mut Installed> {
        self.slots[slot as usize].as_mut()
    }

    /// The installed regions.
    pub(super) fn live(&self) -> impl Iterator<Item = &Installed> {
        self.slots.iter().flatten()
    }

    /// The slot the next region is installed in: the first free one.
    pub(super) fn free_slot(&mut self) -> u32 {
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        slot as u32
    }

    /// Installs `r` in `slot` (see [`CodeTable::free_slot`]) at its head.
    pub(super) fn put(&mut self, slot: u32, r: Installed) {
        self.index[r.code.func() as usize][r.code.head() as usize] = slot + 1;
        self.slots[slot as usize] = Some(r);
    }

    /// Uninstalls the region in `slot`.
    pub(super) fn take(&mut self, slot: u32) -> Installed {
        let r = self.slots[slot as usize].take().expect("installed");
        self.index[r.code.func() as usize][r.code.head() as usize] = 0;
        r
    }
}

/// Adds what installed region `r` counted to `stats` (while it runs, its
/// running activations hold some of its counts: see `enter`).
pub(super) fn account(stats: &mut JitStats, r: &Installed) {
    stats.region_entries += r.entries;
    super::enter::account_exits(stats, &r.code, &r.counters);
}
