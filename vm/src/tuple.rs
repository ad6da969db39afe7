//! Profiling tuples and the sink the interpreter streams them into.
//!
//! A tuple is `(kind, a, b)`:
//! - **Value** `<pc, value>`: every `ld` (the value loaded), every `hcall`
//!   (the value the host function returned) and every argument of a
//!   function at entry (`pc` = [`Pc::arg`]`(func, i)`);
//! - **Edge** `<branch pc, next pc>`: every conditional branch, taken or not,
//!   and every `jtab`, so arc weights can be recovered from edge counts;
//! - **Call** `<call-site pc, callee index>`: every `call` and `calli`, and
//!   every `hcall`, whose callee is import `h` numbered past the program's
//!   functions (`functions.len() + h`).
//!
//! The tuple types are `toyvm-event`'s, shared with the profiler models, so
//! a batch reaches a model as the interpreter wrote it.  Which kinds are
//! emitted is chosen by a [`KindSet`] (Sastry's "selection by opcode"). The interpreter writes tuples into a fixed buffer of
//! [`BATCH`] entries and hands each full buffer to a [`TupleSink`]. A sink
//! whose `ACTIVE` is false compiles every emission site away, so running
//! without a profiler costs nothing.
//!
//! [`Pc::arg`]: toyvm_event::Pc::arg

pub use toyvm_event::{Candidate, Kind, KindSet, Tuple};

/// Tuples per batch handed to a sink.
pub const BATCH: usize = 1024;

/// Where the interpreter's tuples go.
///
/// Contract: `accept` receives every emitted tuple exactly once, in
/// execution order, in batches of at most [`BATCH`].  (A runtime that also
/// supplies compiled code implements [`Host`](crate::interp::Host) on top.)
pub trait TupleSink {
    /// `false` only for sinks that never want a tuple; the interpreter is
    /// then compiled without any emission code.
    const ACTIVE: bool = true;
    /// Takes one batch (at most [`BATCH`] tuples, in execution order).
    fn accept(&mut self, batch: &[Tuple]);
}

/// No profiling: emission compiles away.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSink;

impl TupleSink for NoSink {
    const ACTIVE: bool = false;
    fn accept(&mut self, _: &[Tuple]) {}
}

/// Receives every tuple and drops it: measures the cost of emission alone.
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard {
    /// The number of batches received so far.
    pub batches: u64,
    /// The number of tuples received so far (counted per batch).
    pub tuples: u64,
}

impl TupleSink for Discard {
    fn accept(&mut self, batch: &[Tuple]) {
        self.batches += 1;
        self.tuples += batch.len() as u64;
        std::hint::black_box(batch);
    }
}

/// Keeps every tuple (tests, small programs).
impl TupleSink for Vec<Tuple> {
    fn accept(&mut self, batch: &[Tuple]) {
        self.extend_from_slice(batch);
    }
}

impl<S: TupleSink + ?Sized> TupleSink for &mut S {
    const ACTIVE: bool = S::ACTIVE;
    fn accept(&mut self, batch: &[Tuple]) {
        (**self).accept(batch)
    }
}

thread_local! {
    /// A spare tuple buffer: a run takes it and gives it back when it ends
    /// ([`recycle_buffer`]), so starting a run does not fill 24 KB (a
    /// host that calls a short function many times would pay for that on
    /// every call).
    static SPARE: std::cell::Cell<Option<Box<[Tuple; BATCH]>>> =
        const { std::cell::Cell::new(None) };
}

/// A tuple buffer for a run: the thread's spare, or a new one.
pub(crate) fn spare_buffer() -> Box<[Tuple; BATCH]> {
    SPARE.with(std::cell::Cell::take).unwrap_or_else(|| {
        vec![Tuple::new(Kind::Value, 0, 0); BATCH]
            .into_boxed_slice()
            .try_into()
            .expect("BATCH tuples")
    })
}

/// Gives a run's buffer back for the thread's next run (after
/// [`Emitter::flush`]).
pub(crate) fn recycle_buffer(buf: Box<[Tuple; BATCH]>) {
    // During the thread's teardown the spare is gone: just free it.
    let _ = SPARE.try_with(|s| s.set(Some(buf)));
}

/// The interpreter's fixed tuple buffer in front of a sink. The buffer is
/// borrowed, so that an interpreter that compiled code calls while it runs
/// (see [`crate::interp::Reentry`]) appends to its caller's buffer, and its
/// tuples stay in execution order among the caller's.
pub(crate) struct Emitter<'s, 'b, S: TupleSink> {
    pub(crate) buf: &'b mut [Tuple; BATCH],
    pub(crate) len: usize,
    pub(crate) value: bool,
    pub(crate) edge: bool,
    pub(crate) call: bool,
    pub(crate) counts: [u64; 3],
    /// Whether to count tuples per kind (for statistics).
    pub(crate) count: bool,
    pub(crate) sink: &'s mut S,
}

impl<'s, 'b, S: TupleSink> Emitter<'s, 'b, S> {
    pub(crate) fn new(sink: &'s mut S, buf: &'b mut [Tuple; BATCH], mask: KindSet) -> Self {
        Emitter {
            buf,
            len: 0,
            value: S::ACTIVE && mask.contains(Kind::Value),
            edge: S::ACTIVE && mask.contains(Kind::Edge),
            call: S::ACTIVE && mask.contains(Kind::Call),
            counts: [0; 3],
            count: false,
            sink,
        }
    }

    /// Hands the buffered tuples to the sink.
    pub(crate) fn flush(&mut self) {
        let len = self.len;
        self.len = 0;
        hand_over(
            &mut *self.sink,
            &self.buf[..len],
            &mut self.counts,
            self.count,
        );
    }
}

/// Hands a full buffer to the sink: the interpreter's per-tuple path ends
/// in a compare and a jump here once every [`BATCH`] tuples.
#[cold]
#[inline(never)]
pub(crate) fn flush_full<S: TupleSink>(
    sink: &mut S,
    buf: &[Tuple; BATCH],
    counts: &mut [u64; 3],
    count: bool,
) {
    hand_over(sink, buf, counts, count);
}

#[inline(always)]
fn hand_over<S: TupleSink>(sink: &mut S, batch: &[Tuple], counts: &mut [u64; 3], count: bool) {
    // Counting here, once per batch, keeps the per-tuple path to a
    // store and a compare.
    if count {
        for t in batch {
            counts[t.kind as usize] += 1;
        }
    }
    sink.accept(batch);
}
