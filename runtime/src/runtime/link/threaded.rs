//! The model on a thread of its own: the buffers the interpreter fills
//! and the model hands back, and the model thread's loop (see the parent
//! module's docs).

use std::collections::VecDeque;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use toyvm_vm::Tuple;

use super::{Ended, QUEUE_BUFFERS, buffer_tuples};
use crate::runtime::model::ModelSide;

/// What the model thread sends back.
pub(super) enum Back {
    Ended(Ended),
    /// A buffer done with, and tuples observed so far.
    Done(Vec<Tuple>, u64),
}

pub(super) struct Threaded<'s, S> {
    pub(super) to_model: Sender<Vec<Tuple>>,
    pub(super) back: Receiver<Back>,
    pub(super) free: Vec<Vec<Tuple>>,
    /// The buffer being filled.
    pub(super) open: Option<Vec<Tuple>>,
    /// Buffers allocated so far (at most [`QUEUE_BUFFERS`]).
    pub(super) buffers: usize,
    /// Tuples a buffer collects before it is sent ([`buffer_tuples`]).
    pub(super) capacity: usize,
    /// Tuples sent to the model thread (the open buffer's are not).
    pub(super) shipped: u64,
    /// Tuples the model has observed, as last reported.
    pub(super) through: u64,
    /// Set when the model thread went away early (it panicked): nothing
    /// more is sent or waited for, and `finish` reports the panic.
    pub(super) gone: bool,
    pub(super) handle: ScopedJoinHandle<'s, S>,
    pub(super) ships: u64,
    pub(super) full: u64,
    pub(super) occupancy: u64,
    pub(super) peak: u64,
    pub(super) queue_wait: Duration,
}

impl<'s, S: Send + 's> Threaded<'s, S> {
    /// Starts the model thread in `scope` with the model `make` builds
    /// there, which has already observed `through` tuples (the first ones
    /// on the interpreter's thread, see [`super::Link::deferred`]).
    pub(super) fn start<M>(
        scope: &'s Scope<'s, '_>,
        make: impl FnOnce() -> M + Send + 's,
        through: u64,
        lag: u64,
        want_ends: bool,
    ) -> std::io::Result<Self>
    where
        M: ModelSide<Summary = S>,
    {
        // Never full on either side: the buffers bound what is in flight.
        let (to_model, batches) = crossbeam_channel::bounded::<Vec<Tuple>>(QUEUE_BUFFERS);
        let (done, back) = crossbeam_channel::unbounded();
        let handle = std::thread::Builder::new()
            .name("toyvm-model".into())
            .spawn_scoped(scope, move || {
                model_thread(make(), through, &batches, &done, want_ends)
            })?;
        Ok(Threaded {
            to_model,
            back,
            free: Vec::with_capacity(QUEUE_BUFFERS),
            open: None,
            buffers: 0,
            capacity: buffer_tuples(want_ends.then_some(lag)),
            shipped: through,
            through,
            gone: false,
            handle,
            ships: 0,
            full: 0,
            occupancy: 0,
            peak: 0,
            queue_wait: Duration::ZERO,
        })
    }
}

impl<S> Threaded<'_, S> {
    /// Adds a batch to the open buffer; sends the buffer when full.
    pub(super) fn push(&mut self, batch: &[Tuple], ready: &mut VecDeque<Ended>) {
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
    pub(super) fn ship(&mut self) {
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
    pub(super) fn wait(&mut self, ready: &mut VecDeque<Ended>) {
        match self.back.recv() {
            Ok(msg) => self.take(msg, ready),
            Err(_) => self.gone = true,
        }
    }
}

/// The model thread's loop (its model has observed `through` tuples):
/// observe every batch, hand the buffer back with
/// the interval ends before it, and finish when the interpreter is done.
fn model_thread<M: ModelSide>(
    mut model: M,
    mut through: u64,
    batches: &Receiver<Vec<Tuple>>,
    back: &Sender<Back>,
    want_ends: bool,
) -> M::Summary {
    // A run that wants the interval ends has a JIT, whose compiler thread
    // needs the core a polling model would hold.
    let poll = if want_ends { Duration::ZERO } else { POLL };
    while let Some(buf) = next_buffer(batches, poll) {
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

/// How long the model thread of a run without a JIT polls for the next
/// buffer before it blocks. A blocked model thread must be woken by the
/// interpreter's send, a system call (`futex`) that took 4-6% of the
/// interpreter thread's samples in fib's run under multihash (`perf`);
/// the interpreter fills a buffer every 10-50 us, so a model that keeps
/// up mostly finds the next one within this. A JIT run does not poll:
/// its compiler thread needs the core (polling there made stackvm.tasm
/// 25000 under multihash 1.14x slower, hashtable.wasm 1.05x).
const POLL: Duration = Duration::from_micros(200);

/// The next buffer from the interpreter, polled for up to `poll` and
/// then waited for; `None` once the interpreter is done.
fn next_buffer(batches: &Receiver<Vec<Tuple>>, poll: Duration) -> Option<Vec<Tuple>> {
    let mut start = None;
    loop {
        match batches.try_recv() {
            Ok(buf) => return Some(buf),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        let since = *start.get_or_insert_with(Instant::now);
        if since.elapsed() >= poll {
            return batches.recv().ok();
        }
        for _ in 0..64 {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polling or blocking, the model takes every buffer in order and
    /// ends when the interpreter's side closes, whether the buffer comes
    /// while it polls or after it blocked.
    #[test]
    fn the_next_buffer_arrives_in_order_polled_or_waited_for() {
        for poll in [Duration::ZERO, POLL, Duration::from_secs(5)] {
            let (tx, rx) = crossbeam_channel::bounded::<Vec<Tuple>>(QUEUE_BUFFERS);
            let sender = std::thread::spawn(move || {
                for i in 0..20u64 {
                    if i % 5 == 0 {
                        // Longer than POLL: the model blocks in between.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    tx.send(vec![Tuple::value(i, i)]).unwrap();
                }
            });
            let mut seen = Vec::new();
            while let Some(buf) = next_buffer(&rx, poll) {
                seen.extend(buf.iter().map(|t| t.a));
            }
            sender.join().unwrap();
            assert_eq!(seen, (0..20).collect::<Vec<_>>(), "poll {poll:?}");
        }
    }
}
