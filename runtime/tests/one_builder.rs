//! One set of options: `RuntimeBuilder` wraps an `EngineBuilder`, every
//! option of one is the other's, and a whole run agrees with a call of
//! its entry function on an instance of the runtime's engine.

use toyvm::engine::{Engine, Instance, Module};
use toyvm::runtime::{Limits, Threads};
use toyvm::vm::interp::{Input, TrapKind};
use toyvm::{Error, Runtime};

const SRC: &str = "
.memory 64
# main(n): sum of i * (i % 8) for i in 1..=n.
.func main(n)
  li r1, 0
  li r2, 1
top:
  remi r3, r2, 8
  mul r3, r3, r2
  add r1, r1, r3
  loop r2, n, top
  ret r1
.end
";

fn program() -> toyvm::vm::Program {
    toyvm::vm::asm::assemble(SRC).unwrap()
}

#[test]
fn the_runtimes_options_are_its_engines() {
    let limits = Limits {
        fuel: Some(5_000_000),
        max_depth: 300,
        max_memory_words: Some(1_000),
    };
    let by_setters = Runtime::builder(program())
        .profile_str("multihash:interval=1000")
        .unwrap()
        .fuel(limits.fuel)
        .max_depth(limits.max_depth)
        .max_memory_words(limits.max_memory_words)
        .build();
    let engine = Engine::builder()
        .profile_str("multihash:interval=1000")
        .unwrap()
        .fuel(limits.fuel)
        .max_depth(limits.max_depth)
        .max_memory_words(limits.max_memory_words);
    let by_engine = Runtime::builder(program()).engine(engine).build();
    assert_eq!(by_setters.engine().limits(), &limits);
    assert_eq!(by_engine.engine().limits(), &limits);
    assert_eq!(
        Engine::builder().limits(limits).build().limits(),
        by_engine.engine().limits()
    );
    // The engine's limits hold for its instances: fuel and depth.
    let module = Module::new(by_engine.engine(), program()).unwrap();
    let inst = Instance::new(&module).unwrap();
    assert_eq!(inst.fuel(), Some(5_000_000));
    let deep = toyvm::vm::asm::assemble(
        ".func d(n)\n jz n, z\n subi r1, n, 1\n call r2, d, r1, 1\n ret r2\nz:\n ret n\n.end\n.entry d",
    )
    .unwrap();
    let shallow = Engine::builder().max_depth(10).build();
    let mut inst = Instance::new(&Module::new(&shallow, deep).unwrap()).unwrap();
    match inst.call("d", &[50]) {
        Err(Error::Vm(toyvm::vm::Error::Trap(t))) => {
            assert_eq!(t.kind, TrapKind::StackOverflow { depth: 10 })
        }
        other => panic!("expected a stack overflow, got {other:?}"),
    }
    let small = Engine::builder().max_memory_words(Some(10)).build();
    assert!(matches!(
        Module::new(&small, program()),
        Err(Error::MemoryLimit {
            words: 64,
            limit: 10
        })
    ));
}

#[test]
fn a_whole_run_agrees_with_a_call_on_its_engines_instance() {
    for profile in ["none", "multihash:interval=1000"] {
        let runtime = Runtime::builder(program())
            .profile_str(profile)
            .unwrap()
            .count_instructions(true)
            .threads(Threads::One)
            .build();
        let report = runtime
            .run(
                Input {
                    args: &[200_000],
                    file: &[],
                },
                &mut std::io::sink(),
            )
            .unwrap();
        let module = Module::new(runtime.engine(), runtime.program().clone()).unwrap();
        let mut inst = Instance::new(&module).unwrap();
        let main = inst.get_typed_func::<1>("main").unwrap();
        assert_eq!(
            main.call(&mut inst, [200_000]).unwrap(),
            report.outcome.value
        );
        let stats = inst.stats();
        // Counted alike: the interpreter's instructions (compiled code's
        // are not counted without fuel).
        assert_eq!(stats.instructions, report.stats.instructions, "{profile}");
        assert_eq!(
            stats.jit.map(|j| j.compiles >= 1),
            report.stats.jit.map(|j| j.compiles >= 1),
            "{profile}"
        );
    }
}
