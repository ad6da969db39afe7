//! The link's own tests: decisions alike on one thread and two, no tuple
//! lost, a model thread that panics or a run that stops early.

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
