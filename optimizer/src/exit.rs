//! How compiled code tells the interpreter where to go on.
//!
//! A compiled region returns one `u64`: `(kind << 32) | resume_offset`, the
//! offset being an instruction index in the region's own function. The
//! encoding is this module's only; [`Exit::encode`] is what the code
//! generator bakes into each exit and [`Exit::decode`] what the runtime reads.

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
    pub kind: ExitKind,
    /// Instruction offset within the region's function.
    pub resume: u32,
}

impl Exit {
    /// The ABI value: `(kind << 32) | resume`.
    pub const fn encode(self) -> u64 {
        ((self.kind as u64) << 32) | self.resume as u64
    }

    /// The inverse of [`Exit::encode`]; `None` for a value no compiled
    /// region returns.
    pub const fn decode(raw: u64) -> Option<Exit> {
        let kind = match raw >> 32 {
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
    pub kind: ExitKind,
    /// Where the interpreter resumes.
    pub resume: u32,
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
        assert_eq!(Exit::decode(4 << 32), None);
        assert_eq!(
            Exit::decode((2 << 32) | 12),
            Some(Exit {
                kind: ExitKind::Interpret,
                resume: 12
            })
        );
    }
}
