//! An instance with compiled code runs its calls on a thread of its own:
//! one thread however many calls, and none left once the instance is
//! dropped. (A test binary of its own: it counts the process's threads.)

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
fn one_thread_per_instance_joined_when_it_is_dropped() {
    let src = ".func id(n)\n  ret n\n.end\n.func main()\n  li r0, 0\n  ret r0\n.end\n";
    let engine = Engine::builder().profile_str("multihash").unwrap().build();
    let module = Module::from_bytes(&engine, src.as_bytes()).unwrap();
    let mut a = Instance::new(&module).unwrap();
    let mut b = Instance::new(&module).unwrap();
    // Started by the first call, not before.
    assert_eq!(instance_threads(), 0);
    for k in 0..1000 {
        assert_eq!(a.call("id", &[k]).unwrap(), k);
    }
    assert_eq!(instance_threads(), 1);
    assert_eq!(b.call("id", &[7]).unwrap(), 7);
    assert_eq!(instance_threads(), 2);
    drop(a);
    assert_eq!(instance_threads(), 1);
    drop(b);
    assert_eq!(instance_threads(), 0);
}
