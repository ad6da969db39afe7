//! `toyvm synth`: generated programs are valid and deterministic, run the
//! same interpreted and compiled, and their knobs move the measured stream
//! statistics the way the knobs claim.

use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm_lab::synth::{self, Knobs, StreamStats};
use toyvm_vm::interp::Input;
use toyvm_vm::{Program, asm};

fn knobs(f: impl FnOnce(&mut Knobs)) -> Knobs {
    let mut k = Knobs::default();
    f(&mut k);
    k
}

fn program(k: &Knobs) -> Program {
    let text = synth::generate(k).unwrap_or_else(|e| panic!("{}: {e}", k.header()));
    asm::assemble(&text).unwrap_or_else(|e| panic!("{}: {e}", k.header()))
}

/// A spread of knob settings, each knob at its extremes somewhere.
fn grid() -> Vec<Knobs> {
    let mut g = Vec::new();
    for seed in [1, 2, 99] {
        g.push(knobs(|k| k.seed = seed));
        g.push(knobs(|k| {
            k.seed = seed;
            k.functions = 1;
            k.blocks = 1;
            k.hot = 1;
            k.targets = 1;
        }));
        g.push(knobs(|k| {
            k.seed = seed;
            k.functions = 40;
            k.blocks = 20;
            k.hot = 700;
            k.zipf = 0.0;
            k.targets = 64;
            k.value_share = 0.0;
        }));
        g.push(knobs(|k| {
            k.seed = seed;
            k.functions = 3;
            k.blocks = 5;
            k.hot = 100;
            k.zipf = 2.5;
            k.value_share = 1.0;
            k.phases = 7;
            k.noise = 0.3;
        }));
        g.push(knobs(|k| {
            k.seed = seed;
            k.noise = 1.0;
            k.phases = 2;
        }));
        g.push(knobs(|k| {
            k.seed = seed;
            k.work = 9;
            k.hot = 40;
        }));
    }
    g
}

#[test]
fn every_generated_program_assembles_verifies_and_round_trips() {
    for k in grid() {
        let text = synth::generate(&k).unwrap();
        assert!(text.contains(&format!("# synth: {}\n", k.header())));
        assert_eq!(synth::header_args(&text), Some(vec![10_000]));
        let p = asm::assemble(&text).unwrap_or_else(|e| panic!("{}: {e}", k.header()));
        // The bytecode form loads (and so verifies) to the same program.
        assert_eq!(Program::load(&p.to_bytes()).unwrap(), p, "{}", k.header());
    }
}

#[test]
fn the_same_seed_gives_the_same_text() {
    for k in grid().into_iter().take(5) {
        assert_eq!(synth::generate(&k).unwrap(), synth::generate(&k).unwrap());
        let other = Knobs {
            seed: k.seed + 1000,
            ..k.clone()
        };
        assert_ne!(
            synth::generate(&k).unwrap(),
            synth::generate(&other).unwrap()
        );
    }
}

#[test]
fn work_adds_an_inner_loop_whose_edges_dominate() {
    let plain = stats(&knobs(|k| k.work = 0), 3_000, 10_000, 0.01);
    let busy = stats(&knobs(|k| k.work = 32), 3_000, 10_000, 0.01);
    let share = |s: &StreamStats| s.edge.tuples / s.all.tuples;
    assert!(
        share(&busy) > 2.0 * share(&plain),
        "{} vs {}",
        share(&busy),
        share(&plain)
    );
    // `work = 0` writes no loop: the text is what it was before the knob.
    assert!(!synth::generate(&Knobs::default()).unwrap().contains("b0w:"));
    assert!(
        synth::generate(&knobs(|k| k.work = 3))
            .unwrap()
            .contains("b0w:")
    );
}

#[test]
fn bad_knobs_are_refused() {
    for k in [
        knobs(|k| k.functions = 0),
        knobs(|k| k.hot = 0),
        knobs(|k| k.noise = 1.5),
        knobs(|k| k.value_share = -0.1),
        knobs(|k| k.targets = 65),
        knobs(|k| k.work = 100_001),
    ] {
        assert!(synth::generate(&k).is_err(), "{}", k.header());
    }
}

fn run(p: &Program, profile: &str, n: i64) -> (i64, Vec<u8>, u64) {
    let mut out = Vec::new();
    let r = Runtime::builder(p.clone())
        .profile_str(profile)
        .unwrap()
        .jit((profile != "none").then(JitOptions::default))
        .build()
        .run(
            Input {
                args: &[n],
                file: &[],
            },
            &mut out,
        )
        .unwrap();
    let compiles = r.stats.jit.map_or(0, |j| j.compiles);
    (r.outcome.value, out, compiles)
}

#[test]
fn the_jit_agrees_with_the_interpreter() {
    let mut compiles = 0;
    for k in grid().into_iter().step_by(2) {
        let p = program(&k);
        let (want, want_out, _) = run(&p, "none", 4000);
        assert!(!want_out.is_empty());
        for spec in ["perfect:interval=500", "multihash:interval=500"] {
            let (got, got_out, c) = run(&p, spec, 4000);
            assert_eq!(got, want, "{} under {spec}", k.header());
            assert_eq!(got_out, want_out, "{} under {spec}", k.header());
            compiles += c;
        }
    }
    assert!(compiles >= 10, "the JIT compiled only {compiles} regions");
}

fn stats(k: &Knobs, n: i64, interval: u64, threshold: f64) -> StreamStats {
    synth::describe(&program(k), &[n], interval, threshold).unwrap()
}

#[test]
fn more_hot_items_make_more_hot_tuples() {
    // Uniform shares and a threshold low enough for every hot item's tuples
    // (about 1/12 of its share of iterations each) to clear it.
    let hot: Vec<f64> = [8, 64, 512]
        .iter()
        .map(|&h| {
            let k = knobs(|k| {
                k.hot = h;
                k.zipf = 0.0;
                k.functions = 32;
                k.blocks = 16;
            });
            stats(&k, 25_000, 100_000, 0.0001).all.hot
        })
        .collect();
    assert!(hot[0] < hot[1] && hot[1] < hot[2], "{hot:?}");
    assert!(hot[2] > 4.0 * hot[0], "{hot:?}");
}

#[test]
fn more_skew_concentrates_the_stream() {
    let top: Vec<f64> = [0.0, 1.0, 2.0]
        .iter()
        .map(|&z| {
            let k = knobs(|k| {
                k.hot = 256;
                k.zipf = z;
            });
            stats(&k, 5_000, 10_000, 0.01).all.top1_share
        })
        .collect();
    assert!(top[0] < top[1] && top[1] < top[2], "{top:?}");
}

#[test]
fn noise_adds_distinct_tuples() {
    let distinct: Vec<f64> = [0.0, 0.1, 0.4]
        .iter()
        .map(|&p| {
            stats(&knobs(|k| k.noise = p), 5_000, 10_000, 0.01)
                .all
                .distinct
        })
        .collect();
    assert!(
        distinct[0] < distinct[1] && distinct[1] < distinct[2],
        "{distinct:?}"
    );
    assert!(distinct[2] > 1.5 * distinct[0], "{distinct:?}");
}

#[test]
fn more_targets_make_more_call_tuples() {
    let calls: Vec<f64> = [1, 8]
        .iter()
        .map(|&t| {
            stats(&knobs(|k| k.targets = t), 5_000, 10_000, 0.01)
                .call
                .distinct
        })
        .collect();
    assert!(calls[1] > 2.0 * calls[0], "{calls:?}");
}

#[test]
fn value_share_concentrates_values() {
    let top: Vec<f64> = [0.5, 0.99]
        .iter()
        .map(|&p| {
            stats(&knobs(|k| k.value_share = p), 5_000, 10_000, 0.01)
                .value
                .distinct
        })
        .collect();
    assert!(top[1] < top[0], "{top:?}");
}

#[test]
fn phases_move_the_hot_set() {
    let change = |phases| {
        let s = stats(&knobs(|k| k.phases = phases), 20_000, 10_000, 0.002);
        (s.hot_change, s.hot_change_max)
    };
    let (steady, steady_max) = change(0);
    let (moving, moving_max) = change(3);
    assert!(moving > steady, "mean {moving} vs {steady}");
    assert!(
        moving_max > 0.5 && moving_max > 2.0 * steady_max,
        "max {moving_max} vs {steady_max}"
    );
}
