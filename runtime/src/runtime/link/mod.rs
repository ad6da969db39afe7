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
//! **A thread when the run is long enough.** A thread costs tens of
//! microseconds to start and join, more than a short run's whole stream
//! costs the model inline, so where the choice is the runtime's
//! ([`Threads::Auto`]) the model starts on the interpreter's thread and
//! moves to a thread of its own once [`THREAD_AFTER`] tuples have been
//! sent ([`Link::deferred`]): the first tuples are observed inline, the
//! rest there, and the decisions and their points are the same as on
//! either alone (the thread's model carries on from the tuples it has
//! observed). If the system refuses the thread the model stays inline.
//!
//! **Shutting down.** Dropping the sending half tells the model thread the
//! stream is over: it ends the final partial interval and returns its
//! summary. Whatever stops the interpreter (the program's end, a trap, a
//! panic) drops the link, so the model thread always ends; a panic on the
//! model thread drops its halves, so the interpreter never waits on it, and
//! [`Link::finish`] turns it into an error.

mod threaded;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Scope;
use std::time::{Duration, Instant};

use serde::Serialize;
use toyvm_profiler::Candidate;
use toyvm_vm::Tuple;

use super::model::ModelSide;
use threaded::Threaded;

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
    /// a JIT run whose lag is under [`MIN_THREADED_LAG`]. With two, the
    /// model starts on the interpreter's thread and moves to its own after
    /// [`THREAD_AFTER`] tuples ([`Link::deferred`]).
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
    /// The model's time on the interpreter's thread before it moved to a
    /// thread of its own (see [`Link::deferred`]); 0 for a model that
    /// started on its own thread or never left the interpreter's.
    pub inline_seconds: f64,
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

/// Tuples a deferred link ([`Link::deferred`]) sends before its model
/// moves to a thread of its own: sixteen of the interpreter's batches,
/// about what a model costs inline in the time a thread takes to start
/// and join (`examples/run_cost`: 50-110 us of a model-alone run's fixed
/// cost was its thread), so a run that ends before gains that, and one
/// that goes on loses at most as much.
pub const THREAD_AFTER: u64 = 16 * toyvm_vm::tuple::BATCH as u64;

/// A deferred link's way to its model's own thread: what starts it (the
/// model back, if the system refuses a thread), and the model's time on
/// the interpreter's thread so far.
struct Deferred<'s, M: ModelSide> {
    start: StartThread<'s, M>,
    time: Duration,
}

/// Starts the model thread with a model that has observed so many tuples.
type StartThread<'s, M> =
    Box<dyn FnOnce(M, u64) -> Result<Threaded<'s, <M as ModelSide>::Summary>, M> + Send + 's>;

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
    /// Only while the model moves to its thread (inside `start_thread`).
    Moving,
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
    /// Set while the model of a deferred link is still inline.
    deferred: Option<Deferred<'s, M>>,
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
            deferred: None,
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
        let threaded = Threaded::start(scope, make, 0, lag, want_ends)?;
        Ok(Self::new(Mode::Threaded(threaded), lag, want_ends))
    }

    /// The model on the interpreter's thread until [`THREAD_AFTER`]
    /// tuples have been sent, then on a thread of its own in `scope` (see
    /// the module docs); on the interpreter's thread to the end if the run
    /// ends first or the system refuses the thread.
    pub fn deferred(scope: &'s Scope<'s, '_>, model: M, lag: u64, want_ends: bool) -> Self
    where
        M: Send + 's,
        M::Summary: Send + 's,
    {
        let start: StartThread<'s, M> = Box::new(move |model: M, through: u64| {
            // Where a thread that never started leaves the model.
            let slot = Arc::new(Mutex::new(Some(model)));
            let theirs = Arc::clone(&slot);
            let make = move || {
                theirs
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .expect("the model is handed over once")
            };
            Threaded::start(scope, make, through, lag, want_ends).map_err(|_| {
                slot.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take()
                    .expect("a thread that never started leaves the model")
            })
        });
        let mut link = Self::inline(model, lag, want_ends);
        link.deferred = Some(Deferred {
            start,
            time: Duration::ZERO,
        });
        link
    }

    /// Hands a batch to the model (an empty one is no batch at all).
    pub fn send(&mut self, batch: &[Tuple]) {
        if batch.is_empty() {
            return;
        }
        self.stats.tuples_sent += batch.len() as u64;
        self.stats.batches += 1;
        match &mut self.mode {
            Mode::Inline(inline) => match &mut self.deferred {
                None => inline.push(batch, self.want_ends, &mut self.ready),
                Some(d) => {
                    let start = Instant::now();
                    inline.push(batch, self.want_ends, &mut self.ready);
                    d.time += start.elapsed();
                    if self.stats.tuples_sent >= THREAD_AFTER {
                        self.start_thread();
                    }
                }
            },
            Mode::Threaded(t) => t.push(batch, &mut self.ready),
            Mode::Moving => unreachable!("the model moves only inside start_thread"),
        }
    }

    /// Moves a deferred link's model to a thread of its own, once it has
    /// observed every tuple sent so far.
    fn start_thread(&mut self) {
        let Some(d) = self.deferred.take() else {
            return;
        };
        let Mode::Inline(mut inline) = std::mem::replace(&mut self.mode, Mode::Moving) else {
            unreachable!("a deferred link's model is inline until it moves");
        };
        let start = Instant::now();
        inline.drain(self.want_ends, &mut self.ready);
        self.stats.inline_seconds = (d.time + start.elapsed()).as_secs_f64();
        let pending = inline.pending;
        self.mode = match (d.start)(inline.model, self.stats.tuples_sent) {
            Ok(t) => {
                self.stats.threads = 2;
                self.stats.queue_capacity = QUEUE_BUFFERS as u64;
                Mode::Threaded(t)
            }
            // No thread: inline to the end, with the same decisions.
            Err(model) => {
                self.stats.inline_seconds = 0.0;
                Mode::Inline(Inline { model, pending })
            }
        };
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
                Mode::Moving => unreachable!("the model moves only inside start_thread"),
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
            Mode::Moving => unreachable!("the model moves only inside start_thread"),
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

#[cfg(test)]
mod tests;
