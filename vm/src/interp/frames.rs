//! The call stack's state ([`Calls`], [`Frame`]), the register windows
//! frames see, and growing both for a call: what only calls and returns
//! need, kept apart from the dispatch loop's own state.

use super::{MAX_STACK_WORDS, TrapKind, WINDOW};
use crate::isa::Instr;
use crate::program::Program;

/// A compact view of each function (code and register count, at most
/// [`WINDOW`]), so a call touches one small entry.
pub(super) type FnView<'p> = (&'p [Instr], usize);

/// The view of every function of `prog`.
pub(super) fn fn_views(prog: &Program) -> Vec<FnView<'_>> {
    prog.functions
        .iter()
        .map(|f| (f.code.as_slice(), (f.regs as usize).min(WINDOW)))
        .collect()
}

/// The call stack, kept apart from the dispatch loop's own state.
#[derive(Debug)]
pub(super) struct Calls<'p> {
    /// Every function's view (the verifier bounds `regs` by 256).
    pub(super) fns: &'p [FnView<'p>],
    /// Deepest call nesting before a stack-overflow trap, counted from
    /// the run's entry function (depth 0).
    pub(super) max_depth: usize,
    /// The depth of this dispatch loop's first frame: 0, or for an
    /// interpreter that compiled code called (see [`super::Reentry`]) its
    /// callee's depth. `depth` counts from it.
    pub(super) depth_base: usize,
    /// The register stack; the current frame's window starts at `base`.
    pub(super) stack: Vec<i64>,
    /// `frames[..depth]` are the suspended callers; slots past `depth` are
    /// spare, so a call stores into a slot with one bounds check.
    pub(super) frames: Vec<Frame>,
    pub(super) depth: usize,
    /// A `u32` so `base + 2 * WINDOW` cannot overflow (the stack is at
    /// most `MAX_STACK_WORDS` long).
    pub(super) base: u32,
    /// The current function's register count.
    pub(super) frame_regs: usize,
    /// The current function's index in the high half of a `Pc`, so a
    /// tuple's pc is `fpc | pc`.
    pub(super) fpc: u64,
}

/// A suspended caller.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Frame {
    /// Where the caller resumes, as a `Pc` (function and instruction).
    pub(super) ret: u64,
    pub(super) base: u32,
    pub(super) dest: u8,
}

/// A register stack and its frame slots, kept between runs.
pub(super) type Spare = (Vec<i64>, Vec<Frame>);

thread_local! {
    /// Spare register stacks with their frame slots, taken by a run and
    /// given back when it ends, so a host calling a short function many
    /// times, or compiled code calling the interpreter (whose loops nest:
    /// one spare each), does not allocate and zero one per call. What the
    /// last run left in them is never read: the verifier proves every
    /// register is written before it is read, as it must be within a run,
    /// where frames reuse the words of frames that returned. Frame slots
    /// come back empty (their allocation kept). One spare in a cell for
    /// the usual case, one run at a time; more, for nested runs, in
    /// [`MORE_SPARES`].
    static SPARE: std::cell::Cell<Option<Spare>> = const { std::cell::Cell::new(None) };
    /// Spares beyond [`SPARE`], up to [`SPARES_KEPT`].
    static MORE_SPARES: std::cell::RefCell<Vec<Spare>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Register stacks up to this many words go back to [`SPARE`] or [`MORE_SPARES`]; a run
/// that recursed deeper frees its stack.
const SPARE_STACK_WORDS: usize = 1 << 16;

/// Frame slots kept with a spare stack (more are freed).
const SPARE_FRAMES: usize = 1 << 12;

/// Spares kept per thread: nested dispatch loops (compiled code that
/// calls the interpreter, whose callee enters compiled code that calls it
/// again) deeper than this allocate.
const SPARES_KEPT: usize = 8;

/// A register stack of at least `4 * WINDOW` words and frame slots: a
/// spare one, or new.
pub(super) fn take_spare() -> Spare {
    SPARE
        .try_with(std::cell::Cell::take)
        .ok()
        .flatten()
        .or_else(|| {
            MORE_SPARES
                .try_with(|s| s.try_borrow_mut().ok()?.pop())
                .ok()
                .flatten()
        })
        .unwrap_or_else(|| (vec![0i64; 4 * WINDOW], Vec::new()))
}

/// Gives a run's register stack and frame slots back for the thread's
/// next run (or frees them: too large, or enough spares kept).
pub(super) fn give_spare(stack: Vec<i64>, mut frames: Vec<Frame>) {
    if !(4 * WINDOW..=SPARE_STACK_WORDS).contains(&stack.len()) {
        return;
    }
    if frames.capacity() > SPARE_FRAMES {
        frames = Vec::new();
    }
    // Empty, its capacity kept: the frame slots' length is what bounds
    // the call depth (see `grow_for_call`), and the next run's limit may
    // be lower.
    frames.clear();
    let Ok(Some(spare)) = SPARE.try_with(|s| s.replace(Some((stack, frames)))) else {
        return;
    };
    // The cell held one already: a run that nested in another ended.
    let _ = MORE_SPARES.try_with(|s| {
        if let Ok(mut more) = s.try_borrow_mut()
            && more.len() + 1 < SPARES_KEPT
        {
            more.push(spare);
        }
    });
}

#[inline(always)]
pub(super) fn window(stack: &mut [i64], base: usize) -> &mut [i64; WINDOW] {
    (&mut stack[base..base + WINDOW])
        .try_into()
        .expect("register window is WINDOW long")
}

/// Makes room for a call at `depth` from a frame at `base` with
/// `frame_regs` registers: doubles the spare frame slots (up to
/// `max_depth`) and grows the register stack to two windows past `base`,
/// or names the trap the call meets (the depth limit first, then the
/// stack's).
#[cold]
#[inline(never)]
pub(super) fn grow_for_call(
    cs: &mut Calls<'_>,
    depth: usize,
    base: usize,
    frame_regs: usize,
) -> std::result::Result<(), TrapKind> {
    let max_depth = cs.max_depth;
    // Frames below this loop's first are another loop's (see `Reentry`).
    let room = max_depth - cs.depth_base;
    if depth >= cs.frames.len() {
        if depth >= room {
            return Err(TrapKind::StackOverflow { depth: max_depth });
        }
        let len = (cs.frames.len() * 2).max(16).min(room);
        cs.frames.resize(len, Frame::default());
    }
    let need = base + 2 * WINDOW;
    if need > cs.stack.len() {
        if base + frame_regs + WINDOW > MAX_STACK_WORDS {
            // `depth` calls are active; this one would be the next.
            return Err(TrapKind::RegisterStackFull {
                depth: depth + cs.depth_base + 1,
                words: MAX_STACK_WORDS,
            });
        }
        let len = need.max(cs.stack.len() * 2);
        cs.stack.resize(len, 0);
    }
    Ok(())
}
