//! An instance with compiled code runs its calls on the calling thread
//! when that thread's stack has room, and on a thread of its own when it
//! has not: one thread however many calls, and none left once the
//! instance is dropped. (A test binary of its own: it counts the process's
//! threads.)

use toyvm::engine::{Engine, Instance, Module};

/// The process's threads named `toyvm-instance`.
#[cfg(target_os = "linux")]
fn instance_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "toyvm-instance")
        .count()
}

#[cfg(target_os = "linux")]
#[test]
fn an_instance_thread_only_for_callers_without_room_joined_when_dropped() {
    let src = ".func id(n)\n  ret n\n.end\n.func main()\n  li r0, 0\n  ret r0\n.end\n";
    let engine = Engine::builder().profile_str("multihash").unwrap().build();
    let module = Module::from_bytes(&engine, src.as_bytes()).unwrap();
    let mut a = Instance::new(&module).unwrap();
    let b = Instance::new(&module).unwrap();
    // The test's thread has room: the calls run on it.
    for k in 0..1000 {
        assert_eq!(a.call("id", &[k]).unwrap(), k);
    }
    assert_eq!(instance_threads(), 0);
    // From threads with too small a stack for compiled code, each
    // instance starts its own thread, once.
    let small = |mut i: Instance, n: i64| {
        std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || {
                for k in 0..n {
                    assert_eq!(i.call("id", &[k]).unwrap(), k);
                }
                i
            })
            .unwrap()
            .join()
            .unwrap()
    };
    let a = small(a, 100);
    assert_eq!(instance_threads(), 1);
    let mut b = small(b, 1);
    assert_eq!(instance_threads(), 2);
    // A call from a thread with room still runs there.
    assert_eq!(b.call("id", &[7]).unwrap(), 7);
    drop(a);
    assert_eq!(instance_threads(), 1);
    drop(b);
    assert_eq!(instance_threads(), 0);
}
