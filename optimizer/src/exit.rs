//! How compiled code tells the interpreter where to go on.
//!
//! A compiled region returns one `u64`: `((site + 1) << 34) | (kind << 32) |
//! resume_offset`, the offset being an instruction index in the region's own
//! function and `site` the index of the exit site taken (0 in the top bits:
//! not said). The encoding is this module's only; [`Exit::encode_at`] is what
//! the code generator bakes into each exit, [`Exit::decode`] and
//! [`Exit::site`] what the runtime reads.

use std::fmt;

/// Why compiled code returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ExitKind {
    /// Control left the trace (an off-trace branch direction or the region's
    /// end): the interpreter resumes at the offset.
    Side = 0,
    /// A specialization guard failed: the interpreter resumes at the offset,
    /// which is right after the guarded load (or at the region head for
    /// argument guards, or at the guarded `calli`).
    Guard = 1,
    /// The instruction at the offset has not run: the interpreter must run
    /// it (calls, returns, output, input length, and any instruction that
    /// would trap, so the trap is the interpreter's, message and pc alike).
    Interpret = 2,
    /// Native code called from the region trapped (division by zero, a
    /// memory access out of bounds, calls too deep): the trap's details are
    /// in the run's context ([`crate::CompiledRegion::run_with`] returns
    /// them as a [`crate::NativeTrap`]) and the program stops there. The
    /// offset is the region's call instruction, for logs only; registers
    /// and memory hold what the interpreter's would at the trap.
    Trap = 3,
}

impl ExitKind {
    /// The word used in region IR and logs.
    pub const fn name(self) -> &'static str {
        match self {
            ExitKind::Side => "side",
            ExitKind::Guard => "guard",
            ExitKind::Interpret => "interpret",
            ExitKind::Trap => "trap",
        }
    }
}

/// A decoded exit: what happened and where the interpreter resumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Exit {
    /// Why compiled code returned, and so what the interpreter does at
    /// [`Exit::resume`].
    pub kind: ExitKind,
    /// Instruction offset within the region's function.
    pub resume: u32,
}

impl Exit {
    /// Where the site (plus one) starts in the ABI value.
    pub(crate) const SITE_SHIFT: u32 = 34;

    /// The ABI value without a site: `(kind << 32) | resume`.
    pub const fn encode(self) -> u64 {
        ((self.kind as u64) << 32) | self.resume as u64
    }

    /// The ABI value of exit site `site` (below 2^24).
    pub const fn encode_at(self, site: usize) -> u64 {
        (((site as u64) + 1) << Self::SITE_SHIFT) | self.encode()
    }

    /// The exit site a raw value names, if any.
    pub const fn site(raw: u64) -> Option<usize> {
        match raw >> Self::SITE_SHIFT {
            0 => None,
            n => Some(n as usize - 1),
        }
    }

    /// The inverse of [`Exit::encode`] and [`Exit::encode_at`] (the site is
    /// [`Exit::site`]'s); `None` for a value no compiled region returns.
    pub const fn decode(raw: u64) -> Option<Exit> {
        if raw >> 58 != 0 {
            return None;
        }
        let kind = match (raw >> 32) & 3 {
            0 => ExitKind::Side,
            1 => ExitKind::Guard,
            2 => ExitKind::Interpret,
            3 => ExitKind::Trap,
            _ => return None,
        };
        Some(Exit {
            kind,
            resume: raw as u32,
        })
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} exit to {}", self.kind.name(), self.resume)
    }
}

/// One exit point of a compiled region. A region's exit sites are numbered
/// in code order; site `i` increments `counters[i]` each time it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExitSite {
    /// The kind of exit this site returns.
    pub kind: ExitKind,
    /// Where the interpreter resumes.
    pub resume: u32,
    /// The profile tuple the interpreter would have emitted on the way out,
    /// which the runtime reports for compiled code (it emits none itself).
    pub report: Option<ExitReport>,
}

/// What an exit site reports to the profiler when it is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExitReport {
    /// A side exit out of a conditional branch or `jtab` at offset
    /// `branch`: the Edge tuple `<branch, resume>`.
    Edge {
        /// The offset of the branch or `jtab` left through.
        branch: u32,
    },
    /// A failing guard on the value loaded at offset `pc` (or argument
    /// pseudo-offset) into register `reg`: the Value tuple `<pc, regs[reg]>`
    /// with the value that failed it.
    Value {
        /// The offset of the guarded load, or for an argument guard the
        /// argument's pseudo-offset (`ARG_OFFSET | i` for argument `i`, see
        /// [`toyvm_vm::program::ARG_OFFSET`]).
        pc: u32,
        /// The register the guard tested, holding the loaded value.
        reg: u8,
    },
}

impl ExitReport {
    /// The tuple the interpreter would have emitted on leaving through this
    /// site of a region of function `func`, resuming at offset `resume`
    /// with registers `regs`; `None` when its kind is not in `kinds`.
    pub fn tuple(
        self,
        func: u32,
        resume: u32,
        regs: &[i64; 256],
        kinds: toyvm_vm::KindSet,
    ) -> Option<toyvm_vm::Tuple> {
        use toyvm_vm::{Kind, Pc, Tuple};
        let at = |o: u32| Pc::new(func, o).0;
        let t = match self {
            ExitReport::Edge { branch } => Tuple {
                kind: Kind::Edge,
                a: at(branch),
                b: at(resume),
            },
            ExitReport::Value { pc, reg } => Tuple {
                kind: Kind::Value,
                a: at(pc),
                b: regs[reg as usize] as u64,
            },
        };
        kinds.contains(t.kind).then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_round_trip_through_the_abi_encoding() {
        for kind in [
            ExitKind::Side,
            ExitKind::Guard,
            ExitKind::Interpret,
            ExitKind::Trap,
        ] {
            for resume in [0, 1, 77, u32::MAX] {
                let e = Exit { kind, resume };
                assert_eq!(Exit::decode(e.encode()), Some(e));
            }
        }
        assert_eq!(Exit::decode(u64::MAX), None);
        let e = Exit {
            kind: ExitKind::Guard,
            resume: 9,
        };
        assert_eq!(Exit::decode(e.encode_at(5)), Some(e));
        assert_eq!(Exit::site(e.encode_at(5)), Some(5));
        assert_eq!(Exit::site(e.encode()), None);
        assert_eq!(
            Exit::decode((2 << 32) | 12),
            Some(Exit {
                kind: ExitKind::Interpret,
                resume: 12
            })
        );
    }
}
