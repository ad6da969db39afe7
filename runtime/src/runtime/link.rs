//! How the interpreter hands its tuples to the profiler model: on its own
//! thread, or on a thread of the model's, with the same decisions either way.
//!
//! ```text
//!  interpreter thread                              model thread
//!  ------------------                              ------------
//!  full batch --copy--> free buffer --buffers-->   driver + model
//!       ^                  ^                            |
//!       |                  +--------- Done(buffer) -----+
//!       +-- due(): interval ends at least `lag` <-------+ Ended(index, at, candidates)
//!           tuples old, applied to the JIT
//! ```
//!
//! **The queue.** At most [`QUEUE_BUFFERS`] buffers exist; each collects
//! several of the interpreter's batches, goes to the model full and comes
//! back empty with the model's progress, so a run allocates its buffers
//! once and never per batch. When all are with the model the interpreter
//! waits for one (the queue is full). A buffer holds several batches so
//! that the threads hand over, and wake each other, once per several
//! thousand tuples: a wake-up is a system call and, in a virtual machine,
//! an interrupt to the other CPU, and on a machine whose other core is
//! busy the two threads share one. How many: [`MAX_BUFFER_TUPLES`] for a
//! run whose JIT does not wait for the model's decisions; for one that
//! does, half the lag (at least [`BUFFER_TUPLES`]), so that the point the
//! interpreter waits for lies in a buffer sent half a lag earlier rather
//! than in the one being filled, which would have to be handed over
//! part-filled and waited for.
//!
//! **The lag.** The decisions of an interval (its candidates, handed to the
//! JIT) take effect at the first batch boundary at least `lag` tuples after
//! the interval ended, counted in tuples handed to the model. The default
//! lag is one interval: what interval k found is acted on at the end of
//! interval k+1. Both the boundaries and the interval ends are points of
//! the tuple stream, which the decisions themselves shape only through
//! these same points, so by induction the same program, spec and lag
//! compile the same regions at the same points on every run, on one thread
//! or two, however loaded the machine. On two threads the interpreter waits
//! at a boundary only if the model has not yet reached the point `lag`
//! tuples back (handing over a part-filled buffer first if the point lies
//! in it); a lag of 0 waits at every boundary (one thread's old behaviour,
//! run on two).
//!
//! **On one thread.** The model runs inline, but a batch shorter than
//! [`SMALL_BATCH`] (what an embedder's call leaves at its end) waits with
//! the next ones until a batch's worth has gathered, a long batch comes, or
//! [`Link::due`] needs an interval end that may lie among them; the model
//! sees the same tuples in the same order, so the decisions and their
//! points are the same.
//!
//! **Shutting down.** Dropping the sending half tells the model thread the
//! stream is over: it ends the final partial interval and returns its
//! summary. Whatever stops the interpreter (the program's end, a trap, a
//! panic) drops the link, so the model thread always ends; a panic on the
//! model thread drops its halves, so the interpreter never waits on it, and
//! [`Link::finish`] turns it into an error.

use std::collections::VecDeque;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use serde::Serialize;
use toyvm_profiler::Candidate;
use toyvm_vm::Tuple;

use super::model::ModelSide;

/// Buffers the interpreter may have handed to the model thread at once.
pub const QUEUE_BUFFERS: usize = 8;

/// The fewest tuples a buffer collects before it goes to the model: four
/// of the interpreter's batches.
pub const BUFFER_TUPLES: usize = 4 * toyvm_vm::tuple::BATCH;

/// The most: sixteen batches (384 KB), for runs that never wait for the
/// model's decisions. Measured against four batches (whole-command timings, `toyvm
/// run P ARGS --no-jit --profile multihash`, median of per-round ratios of
/// wall times, range): loop 10000 0.83 (0.79-0.94), sieve 1e7 0.87
/// (0.72-0.96), fib 32 0.92 (0.52-1.38, 15 rounds), poly 2e7 0.97
/// (0.53-1.15); JIT runs at the default lag (half of it per buffer) within
/// 0.97-1.00 of before (phase, stackvm, regex, bf, fib).
pub const MAX_BUFFER_TUPLES: usize = 16 * toyvm_vm::tuple::BATCH;

/// Tuples a buffer collects for a run with the given lag (see the module
/// doc): `None` for a run that never waits for the model's decisions.
pub fn buffer_tuples(lag: Option<u64>) -> usize {
    match lag {
        None => MAX_BUFFER_TUPLES,
        Some(lag) => usize::try_from(lag / 2)
            .unwrap_or(usize::MAX)
            .clamp(BUFFER_TUPLES, MAX_BUFFER_TUPLES),
    }
}

/// How many threads a profiled run uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// Two when the machine has more than one core, else one; and one for
    /// a JIT run whose lag is under [`MIN_THREADED_LAG`].
    #[default]
    Auto,
    /// The model runs on the interpreter's thread.
    One,
    /// The model runs on a thread of its own.
    Two,
}

/// The shortest lag at which [`Threads::Auto`] gives a JIT run's model a
/// thread of its own: two buffers.
///
/// A JIT run waits at every batch boundary until the model has reached
/// the point `lag` tuples back. With a lag shorter than a buffer or two,
/// that point lies in the buffer being filled nearly every time, so the
/// interpreter hands over a part-filled buffer and waits for the model
/// thread to wake up and catch up: a round trip per batch. Measured
/// (`toyvm run programs/richards.tasm 300000 --profile multihash --lag L
/// --threads 1|2`): two threads took 1.43 s against one thread's 0.42 s at
/// a lag of 1,000, 0.63-0.75 s against 0.38-0.40 s at 4,096, and broke
/// even at 8,192 (0.31-0.37 s against 0.38-0.39 s). Either way the
/// decisions are the same; only the time differs.
pub const MIN_THREADED_LAG: u64 = 2 * BUFFER_TUPLES as u64;

impl Threads {
    /// Whether the model gets a thread of its own; `jit_lag` is the lag of
    /// a run whose JIT acts on the model's decisions (`None` for a run that
    /// only profiles, which never waits for the model's decisions).
    pub fn model_thread(self, jit_lag: Option<u64>) -> bool {
        match self {
            Threads::One => false,
            Threads::Two => true,
            Threads::Auto => {
                super::cores() > 1 && jit_lag.is_none_or(|lag| lag >= MIN_THREADED_LAG)
            }
        }
    }
}

/// A thread count other than `1`, `2` or `auto`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: threads are 1, 2 or auto")]
pub struct BadThreads(pub String);

impl std::str::FromStr for Threads {
    type Err = BadThreads;
    fn from_str(s: &str) -> Result<Self, BadThreads> {
        match s {
            "auto" => Ok(Threads::Auto),
            "1" => Ok(Threads::One),
            "2" => Ok(Threads::Two),
            _ => Err(BadThreads(s.to_owned())),
        }
    }
}

/// How the interpreter fed the model.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FeedStats {
    /// 1: the model ran on the interpreter's thread; 2: on its own.
    pub threads: u32,
    /// Tuples between an interval's end and its decisions taking effect.
    pub lag: u64,
    /// Tuples the interpreter handed over (its own and its compiled code's
    /// exit tuples).
    pub tuples_sent: u64,
    /// Tuples the model observed: always equal to `tuples_sent`.
    pub model_tuples: u64,
    /// Time the interpreter waited for the model thread, in all.
    pub wait_seconds: f64,
    /// ... for a free buffer, the queue being full.
    pub queue_wait_seconds: f64,
    /// ... at a boundary, for an interval end `lag` tuples back.
    pub lag_wait_seconds: f64,
    /// Batches the interpreter handed over.
    pub batches: u64,
    /// Buffers sent to the model thread.
    pub buffers_sent: u64,
    /// Times the interpreter found every buffer with the model.
    pub queue_full: u64,
    /// Buffers the queue holds.
    pub queue_capacity: u64,
    /// The most buffers with the model when one was sent (the one sent
    /// included).
    pub queue_peak: u64,
    /// The mean of the same over every send.
    pub queue_mean: f64,
}

impl FeedStats {
    /// The `--stats` lines.
    pub fn text(&self) -> String {
        let mut t = format!(
            "model feed         {} thread{}, lag {} tuples, {} tuples sent, {} observed\n",
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            self.lag,
            self.tuples_sent,
            self.model_tuples
        );
        if self.threads == 2 {
            t += &format!(
                "  waiting on model {:.3} s ({:.3} s queue full, {:.3} s at the lag point)\n\
                 queue              {} buffers: peak {}, mean {:.2}, full {} times in {} sends\n",
                self.wait_seconds,
                self.queue_wait_seconds,
                self.lag_wait_seconds,
                self.queue_capacity,
                self.queue_peak,
                self.queue_mean,
                self.queue_full,
                self.buffers_sent
            );
        } else {
            // The same lines in every mode (`--stats` has one layout).
            t += "  waiting on model - (one thread)\n\
                  queue              - (one thread)\n";
        }
        t
    }
}

/// An interval end on the interpreter's side, waiting for its point.
#[derive(Debug)]
pub struct Ended {
    /// 0-based interval number.
    pub index: u64,
    /// Where the interval ended, in tuples handed to the model.
    pub at: u64,
    /// The interval's hot candidates.
    pub candidates: Vec<Candidate>,
}

/// What the model thread sends back.
enum Back {
    Ended(Ended),
    /// A buffer done with, and tuples observed so far.
    Done(Vec<Tuple>, u64),
}

struct Threaded<'s, S> {
    to_model: Sender<Vec<Tuple>>,
    back: Receiver<Back>,
    free: Vec<Vec<Tuple>>,
    /// The buffer being filled.
    open: Option<Vec<Tuple>>,
    /// Buffers allocated so far (at most [`QUEUE_BUFFERS`]).
    buffers: usize,
    /// Tuples a buffer collects before it is sent ([`buffer_tuples`]).
    capacity: usize,
    /// Tuples sent to the model thread (the open buffer's are not).
    shipped: u64,
    /// Tuples the model has observed, as last reported.
    through: u64,
    /// Set when the model thread went away early (it panicked): nothing
    /// more is sent or waited for, and `finish` reports the panic.
    gone: bool,
    handle: ScopedJoinHandle<'s, S>,
    ships: u64,
    full: u64,
    occupancy: u64,
    peak: u64,
    queue_wait: Duration,
}

/// Batches shorter than this wait in the inline model's pending buffer
/// (a quarter of the interpreter's batch): an embedder's call ends with a
/// batch of a few tuples, and handing each to the model cost it about a
/// thousand instructions per call (the driver's and the model's per-batch
/// work, a clock read), over twice the interpreter's own call.
pub const SMALL_BATCH: usize = toyvm_vm::tuple::BATCH / 4;

/// The model on the interpreter's thread, with short batches pending until
/// a full batch's worth has gathered, a long batch comes, or a decision
/// needs them (see [`Link::due`]); the model sees the same tuples in the
/// same order either way, only cut into other batches.
struct Inline<M> {
    model: M,
    pending: Vec<Tuple>,
}

impl<M: ModelSide> Inline<M> {
    fn push(&mut self, batch: &[Tuple], want: bool, ready: &mut VecDeque<Ended>) {
        if batch.len() >= SMALL_BATCH {
            self.drain(want, ready);
            Self::feed(&mut self.model, batch, want, ready);
        } else {
            self.pending.extend_from_slice(batch);
            if self.pending.len() >= toyvm_vm::tuple::BATCH {
                self.drain(want, ready);
            }
        }
    }

    /// Hands the pending tuples to the model.
    fn drain(&mut self, want: bool, ready: &mut VecDeque<Ended>) {
        if !self.pending.is_empty() {
            Self::feed(&mut self.model, &self.pending, want, ready);
            self.pending.clear();
        }
    }

    fn feed(model: &mut M, batch: &[Tuple], want: bool, ready: &mut VecDeque<Ended>) {
        model.feed(batch, &mut |e| {
            if want {
                ready.push_back(Ended {
                    index: e.index,
                    at: e.at,
                    candidates: e.candidates.to_vec(),
                });
            }
        });
    }
}

enum Mode<'s, M: ModelSide> {
    Inline(Inline<M>),
    Threaded(Threaded<'s, M::Summary>),
}

/// The interpreter's end of the model.
pub struct Link<'s, M: ModelSide> {
    mode: Mode<'s, M>,
    lag: u64,
    /// Whether interval ends are wanted (by a JIT); without, none is kept.
    want_ends: bool,
    ready: VecDeque<Ended>,
    stats: FeedStats,
    lag_wait: Duration,
}

impl<M: ModelSide> std::fmt::Debug for Link<'_, M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Link")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl<'s, M: ModelSide> Link<'s, M> {
    fn new(mode: Mode<'s, M>, lag: u64, want_ends: bool) -> Self {
        let threaded = matches!(mode, Mode::Threaded(_));
        Link {
            mode,
            lag,
            want_ends,
            ready: VecDeque::new(),
            stats: FeedStats {
                threads: if threaded { 2 } else { 1 },
                lag,
                queue_capacity: if threaded { QUEUE_BUFFERS as u64 } else { 0 },
                ..FeedStats::default()
            },
            lag_wait: Duration::ZERO,
        }
    }

    /// The model on the interpreter's thread.
    pub fn inline(model: M, lag: u64, want_ends: bool) -> Self {
        let inline = Inline {
            model,
            pending: Vec::new(),
        };
        Self::new(Mode::Inline(inline), lag, want_ends)
    }

    /// The model on a thread of its own in `scope`, built there by `make`
    /// (a model need not be `Send`).
    pub fn spawn(
        scope: &'s Scope<'s, '_>,
        make: impl FnOnce() -> M + Send + 's,
        lag: u64,
        want_ends: bool,
    ) -> std::io::Result<Self>
    where
        M::Summary: 's,
    {
        // Never full on either side: the buffers bound what is in flight.
        let (to_model, batches) = crossbeam_channel::bounded::<Vec<Tuple>>(QUEUE_BUFFERS);
        let (done, back) = crossbeam_channel::unbounded();
        let handle = std::thread::Builder::new()
            .name("toyvm-model".into())
            .spawn_scoped(scope, move || {
                model_thread(make(), &batches, &done, want_ends)
            })?;
        Ok(Self::new(
            Mode::Threaded(Threaded {
                to_model,
                back,
                free: Vec::with_capacity(QUEUE_BUFFERS),
                open: None,
                buffers: 0,
                capacity: buffer_tuples(want_ends.then_some(lag)),
                shipped: 0,
                through: 0,
                gone: false,
                handle,
                ships: 0,
                full: 0,
                occupancy: 0,
                peak: 0,
                queue_wait: Duration::ZERO,
            }),
            lag,
            want_ends,
        ))
    }

    /// Hands a batch to the model (an empty one is no batch at all).
    pub fn send(&mut self, batch: &[Tuple]) {
        if batch.is_empty() {
            return;
        }
        self.stats.tuples_sent += batch.len() as u64;
        self.stats.batches += 1;
        match &mut self.mode {
            Mode::Inline(inline) => inline.push(batch, self.want_ends, &mut self.ready),
            Mode::Threaded(t) => t.push(batch, &mut self.ready),
        }
    }

    /// The next interval end whose decisions are due: one that ended at
    /// least `lag` tuples before the last batch sent. On two threads this
    /// waits until the model has got that far.
    pub fn due(&mut self) -> Option<Ended> {
        debug_assert!(self.want_ends, "interval ends were not asked for");
        let point = self.stats.tuples_sent.checked_sub(self.lag)?;
        loop {
            match self.ready.front() {
                Some(e) if e.at <= point => return self.ready.pop_front(),
                // Interval ends arrive in order of `at`.
                Some(_) => return None,
                None => {}
            }
            let t = match &mut self.mode {
                Mode::Threaded(t) => t,
                Mode::Inline(inline) => {
                    // The model has seen all but the pending tuples; an
                    // end at or before `point` can only be among them if
                    // it has not got that far.
                    let fed = self.stats.tuples_sent - inline.pending.len() as u64;
                    if fed >= point || inline.pending.is_empty() {
                        return None;
                    }
                    inline.drain(self.want_ends, &mut self.ready);
                    continue;
                }
            };
            // Invariant: the model thread sends every interval end of a
            // batch before that batch's `Done`, so once it reports
            // `through >= point` no end at or before `point` is still to come.
            if t.through >= point || t.gone {
                return None;
            }
            if t.shipped < point {
                t.ship();
                // Invariant: `point` is at most the tuples sent, the
                // shipped ones and the open buffer's, so shipping the open
                // buffer covers it (unless the model thread is gone).
                if t.shipped < point {
                    return None;
                }
            }
            let start = Instant::now();
            t.wait(&mut self.ready);
            self.lag_wait += start.elapsed();
        }
    }

    /// Ends the stream; the model's summary (or the model thread's panic,
    /// as an error) and how the feeding went.
    pub fn finish(self) -> (crate::Result<M::Summary>, FeedStats) {
        let Link {
            mode,
            mut stats,
            lag_wait,
            ..
        } = self;
        let summary = match mode {
            Mode::Inline(mut inline) => {
                inline.drain(false, &mut VecDeque::new());
                Ok(inline.model.finish())
            }
            Mode::Threaded(mut t) => {
                t.ship();
                let queue_wait = t.queue_wait;
                stats.queue_wait_seconds = queue_wait.as_secs_f64();
                stats.wait_seconds = (queue_wait + lag_wait).as_secs_f64();
                stats.buffers_sent = t.ships;
                stats.queue_full = t.full;
                stats.queue_peak = t.peak;
                stats.queue_mean = if t.ships > 0 {
                    t.occupancy as f64 / t.ships as f64
                } else {
                    0.0
                };
                drop(t.to_model);
                drop(t.back);
                t.handle.join().map_err(|panic| {
                    let msg = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic without a message".to_owned());
                    crate::Error::Model(msg)
                })
            }
        };
        stats.lag_wait_seconds = lag_wait.as_secs_f64();
        if let Ok(s) = &summary {
            stats.model_tuples = M::observed(s);
        }
        (summary, stats)
    }
}

/// The one way the interpreter's batches reach a model side: as the
/// interpreter's sink, a link takes every batch it emits (the runtime's
/// host forwards to its link; `compare`'s error pass runs the interpreter
/// straight into one).
impl<M: ModelSide> toyvm_vm::TupleSink for Link<'_, M> {
    fn accept(&mut self, batch: &[Tuple]) {
        self.send(batch);
    }
}

impl<S> Threaded<'_, S> {
    /// Adds a batch to the open buffer; sends the buffer when full.
    fn push(&mut self, batch: &[Tuple], ready: &mut VecDeque<Ended>) {
        if self.gone {
            return;
        }
        let mut buf = match self.open.take() {
            Some(buf) => buf,
            None => match self.buffer(ready) {
                Some(buf) => buf,
                None => return,
            },
        };
        buf.extend_from_slice(batch);
        self.open = Some(buf);
        if self.open.as_ref().is_some_and(|b| b.len() >= self.capacity) {
            self.ship();
        }
    }

    /// An empty buffer: a free one, a new one while fewer than
    /// [`QUEUE_BUFFERS`] exist, or the first the model hands back.
    fn buffer(&mut self, ready: &mut VecDeque<Ended>) -> Option<Vec<Tuple>> {
        // Take what came back without waiting.
        loop {
            match self.back.try_recv() {
                Ok(msg) => self.take(msg, ready),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.gone = true;
                    return None;
                }
            }
        }
        if let Some(mut buf) = self.free.pop() {
            buf.clear();
            return Some(buf);
        }
        if self.buffers < QUEUE_BUFFERS {
            self.buffers += 1;
            return Some(Vec::with_capacity(self.capacity + toyvm_vm::tuple::BATCH));
        }
        self.full += 1;
        let start = Instant::now();
        while self.free.is_empty() && !self.gone {
            self.wait(ready);
        }
        self.queue_wait += start.elapsed();
        let mut buf = self.free.pop()?;
        buf.clear();
        Some(buf)
    }

    /// Sends the open buffer, if it holds anything, to the model.
    fn ship(&mut self) {
        let Some(buf) = self.open.take() else { return };
        if buf.is_empty() || self.gone {
            self.open = Some(buf);
            return;
        }
        self.shipped += buf.len() as u64;
        self.ships += 1;
        // Invariant: `free`, the open buffer (none, here) and the buffers
        // with the model add up to `buffers`.
        let with_model = (self.buffers - self.free.len()) as u64;
        self.occupancy += with_model;
        self.peak = self.peak.max(with_model);
        if self.to_model.send(buf).is_err() {
            self.gone = true;
        }
    }

    fn take(&mut self, msg: Back, ready: &mut VecDeque<Ended>) {
        match msg {
            Back::Ended(e) => ready.push_back(e),
            Back::Done(buf, through) => {
                self.free.push(buf);
                self.through = through;
            }
        }
    }

    /// Blocks for one message from the model thread.
    fn wait(&mut self, ready: &mut VecDeque<Ended>) {
        match self.back.recv() {
            Ok(msg) => self.take(msg, ready),
            Err(_) => self.gone = true,
        }
    }
}

/// The model thread's loop: observe every batch, hand the buffer back with
/// the interval ends before it, and finish when the interpreter is done.
fn model_thread<M: ModelSide>(
    mut model: M,
    batches: &Receiver<Vec<Tuple>>,
    back: &Sender<Back>,
    want_ends: bool,
) -> M::Summary {
    let mut through = 0;
    while let Ok(buf) = batches.recv() {
        through += buf.len() as u64;
        // A failed send means the interpreter stopped (a trap): observe
        // what is queued anyway, then finish when the channel closes.
        model.feed(&buf, &mut |e| {
            if want_ends {
                let _ = back.send(Back::Ended(Ended {
                    index: e.index,
                    at: e.at,
                    candidates: e.candidates.to_vec(),
                }));
            }
        });
        let _ = back.send(Back::Done(buf, through));
    }
    model.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::model::{Ending, ModelSummary};
    use std::sync::mpsc;
    use toyvm_vm::Kind;

    /// Ends an interval every `every` tuples, with one candidate naming the
    /// interval; panics at tuple `panic_at` if set.
    struct Counter {
        every: u64,
        seen: u64,
        panic_at: Option<u64>,
    }

    impl ModelSide for Counter {
        type Summary = ModelSummary;

        fn observed(summary: &ModelSummary) -> u64 {
            summary.tuples
        }

        fn feed(&mut self, batch: &[Tuple], ended: &mut dyn FnMut(Ending<'_>)) {
            for _ in batch {
                self.seen += 1;
                assert!(Some(self.seen) != self.panic_at, "model failure on purpose");
                if self.seen.is_multiple_of(self.every) {
                    let c = [Candidate {
                        tuple: toyvm_profiler::Tuple::value(0, self.seen / self.every - 1),
                        count: 1,
                    }];
                    ended(Ending {
                        index: self.seen / self.every - 1,
                        at: self.seen,
                        candidates: &c,
                    });
                }
            }
        }
        fn finish(self) -> ModelSummary {
            ModelSummary {
                tuples: self.seen,
                ..ModelSummary::default()
            }
        }
    }

    fn batch(n: usize) -> Vec<Tuple> {
        vec![
            Tuple {
                kind: Kind::Value,
                a: 1,
                b: 2
            };
            n
        ]
    }

    /// Feeds batches of the given sizes; returns, per batch, the interval
    /// indices that became due after it.
    fn drive(threaded: bool, lag: u64, sizes: &[usize]) -> (Vec<Vec<u64>>, FeedStats) {
        std::thread::scope(|s| {
            let make = || Counter {
                every: 100,
                seen: 0,
                panic_at: None,
            };
            let mut link = if threaded {
                Link::spawn(s, make, lag, true).unwrap()
            } else {
                Link::inline(make(), lag, true)
            };
            let mut due = Vec::new();
            for &n in sizes {
                link.send(&batch(n));
                let mut now = Vec::new();
                while let Some(e) = link.due() {
                    assert!(e.at + lag <= link.stats.tuples_sent);
                    now.push(e.index);
                }
                due.push(now);
            }
            let (summary, stats) = link.finish();
            assert_eq!(summary.unwrap().tuples, stats.tuples_sent);
            (due, stats)
        })
    }

    #[test]
    fn decisions_fall_on_the_same_boundaries_on_one_thread_and_two() {
        let sizes: Vec<usize> = (0..200).map(|i| [1024, 7, 300, 1, 1024][i % 5]).collect();
        for lag in [0, 1, 99, 100, 1000, 5000, 1 << 40] {
            let (one, s1) = drive(false, lag, &sizes);
            let (two, s2) = drive(true, lag, &sizes);
            assert_eq!(one, two, "lag {lag}");
            assert_eq!(s1.tuples_sent, s2.model_tuples);
            assert_eq!((s1.threads, s2.threads), (1, 2));
            assert!(s2.queue_peak <= QUEUE_BUFFERS as u64);
            // Every full interval `lag` tuples before the end became due.
            let all: Vec<u64> = one.concat();
            let total: u64 = sizes.iter().map(|&n| n as u64).sum();
            assert_eq!(
                all.len() as u64,
                total.saturating_sub(lag) / 100,
                "lag {lag}"
            );
            assert!(all.windows(2).all(|w| w[1] == w[0] + 1), "in order");
        }
    }

    #[test]
    fn the_lag_holds_decisions_back_by_that_many_tuples() {
        let (due, _) = drive(false, 250, &[100, 100, 100, 100, 100]);
        // Interval 0 ends at 100, due from 350 (after the 4th batch).
        assert_eq!(due, vec![vec![], vec![], vec![], vec![0], vec![1]]);
    }

    /// Counts the batches the model is handed.
    struct Batches(std::rc::Rc<std::cell::Cell<u64>>);

    impl ModelSide for Batches {
        type Summary = ModelSummary;
        fn observed(summary: &ModelSummary) -> u64 {
            summary.tuples
        }
        fn feed(&mut self, _: &[Tuple], _: &mut dyn FnMut(Ending<'_>)) {
            self.0.set(self.0.get() + 1);
        }
        fn finish(self) -> ModelSummary {
            ModelSummary::default()
        }
    }

    #[test]
    fn short_batches_reach_an_inline_model_together() {
        // 3,000 calls of an embedder, each leaving 2 tuples: the model gets
        // a batch per 1,024 tuples, not one per call; a long batch goes
        // through at once, after what was pending; `finish` hands over the
        // rest.
        let fed = std::rc::Rc::new(std::cell::Cell::new(0));
        let mut link = Link::inline(Batches(fed.clone()), 1 << 40, false);
        for _ in 0..3000 {
            link.send(&batch(2));
        }
        assert_eq!(fed.get(), 5, "6,000 tuples in batches of 1,024");
        link.send(&batch(SMALL_BATCH));
        assert_eq!(fed.get(), 7, "the pending 880, then the long batch");
        link.send(&batch(1));
        assert_eq!(fed.get(), 7);
        link.finish().0.unwrap();
        assert_eq!(fed.get(), 8);
    }

    /// Runs `f` on a thread; fails if it takes over a minute (a hang).
    fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the link hung or its thread died")
    }

    #[test]
    fn a_panic_on_the_model_thread_is_an_error_not_a_hang() {
        for want_ends in [true, false] {
            let err = within_a_minute(move || {
                std::thread::scope(|s| {
                    let make = || Counter {
                        every: 100,
                        seen: 0,
                        panic_at: Some(5000),
                    };
                    let mut link = Link::spawn(s, make, 0, want_ends).unwrap();
                    for _ in 0..100 {
                        link.send(&batch(1024));
                        while want_ends && link.due().is_some() {}
                    }
                    link.finish().0.unwrap_err().to_string()
                })
            });
            assert!(err.contains("model failure on purpose"), "{err}");
        }
    }

    #[test]
    fn dropping_the_link_mid_run_ends_the_model_thread() {
        // What a trap or an interpreter panic does: the scope's join of the
        // model thread must return.
        within_a_minute(|| {
            std::thread::scope(|s| {
                let make = || Counter {
                    every: 100,
                    seen: 0,
                    panic_at: None,
                };
                let mut link = Link::spawn(s, make, 1 << 20, true).unwrap();
                for _ in 0..50 {
                    link.send(&batch(1024));
                }
                drop(link);
            })
        });
    }
}
