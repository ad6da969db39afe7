//! The embedding examples run, and say what they claim.

#[path = "../examples/host_functions.rs"]
mod host_functions;
#[path = "../examples/instance_calls.rs"]
mod instance_calls;
#[path = "../examples/instance_threads.rs"]
mod instance_threads;
#[path = "../examples/limits.rs"]
mod limits;

#[test]
fn instance_calls_reuse_the_first_calls_code() {
    let text = instance_calls::run().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("call 1: sum = 1250025000;"), "{text}");
    // The loop, and `sum` whole: the next calls run natively from the
    // entry, and the interpreter runs the `ret` the region hands back.
    assert!(lines[0].contains("2 new compiles"), "{text}");
    for l in &lines[1..3] {
        assert!(
            l.contains(
                "sum = 1250025000; interpreted 1 instructions, 0 new compiles, 1 region entries"
            ),
            "{text}"
        );
    }
    assert!(
        lines[3].starts_with("after scale(.., 3): sum = 3750075000, word 9 = 30"),
        "{text}"
    );
}

#[test]
fn instance_threads_agree_and_share_code() {
    let text = instance_threads::run(3).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("1..=20000: longest 278 steps"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("20001..=40000: longest 323 steps"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("40001..=60000: longest 339 steps"),
        "{text}"
    );
    assert!(text.contains("Cranelift compiled"), "{text}");
}

#[test]
fn limits_trap_and_say_which() {
    let text = limits::run().unwrap();
    assert!(
        text.contains("spin = 20000100000, fuel left Some(599997)"),
        "{text}"
    );
    assert!(text.contains("out of fuel"), "{text}");
    assert!(text.contains("depth(400) = 400"), "{text}");
    assert!(text.contains("depth(600): trap in `depth`"), "{text}");
    assert!(
        text.contains("stack overflow: call depth 500 exceeded"),
        "{text}"
    );
    assert!(
        text.contains("memory limit: the program asks for 100000 words"),
        "{text}"
    );
}

#[test]
fn host_functions_are_called_and_linked() {
    let text = host_functions::run().unwrap();
    assert!(
        text.starts_with("after 10000 draws: sum 4975880, max 999\n"),
        "{text}"
    );
    assert!(
        text.contains("stats(50000) = 24933864; mean 498.7"),
        "{text}"
    );
    assert!(text.contains("without imports: link: the module imports `next_random` (taking 1 argument), which the host does not offer"), "{text}");
}
