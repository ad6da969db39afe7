//! Host function imports: the assembler, the `.bc` format, the verifier
//! and the interpreter agree on `.import` and `hcall`.

use toyvm_vm::interp::{self, Call, Config, HostError, HostFunctions, NoJit, TrapKind};
use toyvm_vm::tuple::NoSink;
use toyvm_vm::{Error, Program, asm, bytecode};

const SRC: &str = "
.import add3 3
.import poke 2
.func main(n)
  li r1, 0
  li r2, 1
top:
  mov r3, r1
  mov r4, r2
  li r5, 7
  hcall r1, add3, r3, 3
  loop r2, n, top
  li r6, 5
  li r7, 1000
  hcall r8, poke, r6, 2
  ld r7, r6, 0
  add r1, r1, r7
  ret r1
.end
";

/// add3(a, b, c) = a + b + c; poke(addr, v) stores v at addr (traps on a
/// bad address).
struct Host {
    calls: u64,
}

impl HostFunctions for Host {
    fn call(&mut self, index: u16, args: &[i64], mem: &mut [i64]) -> Result<i64, HostError> {
        self.calls += 1;
        match index {
            0 => Ok(args[0] + args[1] + args[2]),
            1 => {
                let slot = usize::try_from(args[0])
                    .ok()
                    .and_then(|a| mem.get_mut(a))
                    .ok_or_else(|| format!("poke at {} is out of bounds", args[0]))?;
                *slot = args[1];
                Ok(0)
            }
            _ => unreachable!("two imports"),
        }
    }
}

fn run(p: &Program, args: &[i64]) -> (Result<i64, Error>, u64) {
    let mut mem = interp::memory(p, &[]).unwrap();
    let mut host = Host { calls: 0 };
    let call = Call {
        func: p.entry,
        args,
        input_len: 0,
    };
    let (r, _) = interp::call_with_host(
        p,
        &mut mem,
        call,
        &mut Vec::new(),
        &mut NoJit(&mut NoSink),
        &mut host,
        &Config::default(),
    );
    (r.map(|o| o.value), host.calls)
}

#[test]
fn hcall_calls_the_host_with_its_arguments_and_memory() {
    let p = asm::assemble(SRC).unwrap();
    assert_eq!(p.imports.len(), 2);
    assert_eq!(
        (p.imports[0].name.as_str(), p.imports[0].params),
        ("add3", 3)
    );
    // sum over i of (i + 7), then the poked 1000.
    let (r, calls) = run(&p, &[100]);
    assert_eq!(r.unwrap(), 5050 + 700 + 1000);
    assert_eq!(calls, 101);
}

#[test]
fn a_failing_host_function_is_the_programs_trap() {
    let p = asm::assemble(&SRC.replace("li r6, 5", "li r6, -5")).unwrap();
    match run(&p, &[3]).0 {
        Err(Error::Trap(t)) => {
            assert_eq!(
                t.kind,
                TrapKind::Host {
                    name: "poke".into(),
                    message: "poke at -5 is out of bounds".into()
                }
            );
            assert_eq!(t.pc.offset(), 9);
            assert!(
                t.to_string()
                    .contains("host function `poke` failed: poke at -5")
            );
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    // Without a host, `run` traps at the first hcall.
    let e = interp::run(
        &p,
        interp::Input {
            args: &[3],
            file: &[],
        },
        &mut Vec::new(),
        &Config::default(),
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("host function `add3` failed: no host provides it"),
        "{e}"
    );
}

#[test]
fn imports_round_trip_through_bytecode_and_text() {
    let p = asm::assemble(SRC).unwrap();
    let bytes = bytecode::encode(&p);
    assert_eq!(Program::load(&bytes).unwrap(), p);
    let text = asm::disassemble(&p);
    assert!(text.contains(".import add3 3\n.import poke 2\n"), "{text}");
    assert!(text.contains("hcall r1, add3, r3, 3"), "{text}");
    assert_eq!(asm::assemble(&text).unwrap(), p);
    // A program without imports has no IMPORTS section (version 1 files
    // stay as they were).
    let plain = asm::assemble(".func main()\n li r0, 1\n ret r0\n.end\n").unwrap();
    assert_eq!(
        u32::from_le_bytes(bytecode::encode(&plain)[12..16].try_into().unwrap()),
        2
    );
}

#[test]
fn bad_imports_are_clear_errors() {
    let cases = [
        (
            SRC.replace("hcall r1, add3, r3, 3", "hcall r1, add3, r3, 2"),
            "passes 2 arguments but it is imported with 3",
        ),
        (
            SRC.replace("hcall r1, add3", "hcall r1, nope"),
            "host function `nope` is not imported",
        ),
        (format!(".import add3 1\n{SRC}"), "imported twice"),
        (
            SRC.replace(".import poke 2", ".import poke"),
            "`.import` needs `NAME ARGUMENTS`",
        ),
        (
            SRC.replace(".import poke 2", ".import poke 300"),
            "`.import` needs `NAME ARGUMENTS`",
        ),
        (
            SRC.replace(".import poke 2", ".import 9poke 2"),
            "bad import name",
        ),
        (
            SRC.replace("hcall r1, add3, r3, 3", "hcall r1, add3, r254, 3"),
            "register",
        ),
    ];
    for (src, want) in cases {
        let e = asm::assemble(&src).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in {e:?}");
    }
    // A decoded image whose hcall names an import it lacks.
    let mut p = asm::assemble(SRC).unwrap();
    p.imports.pop();
    let e = Program::load(&bytecode::encode(&p))
        .unwrap_err()
        .to_string();
    assert!(e.contains("import 1 does not exist (1 imports)"), "{e}");
}
