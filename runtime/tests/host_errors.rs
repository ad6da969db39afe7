//! A failing host function returns a `HostError`; the trap it becomes
//! carries it back, so the embedder gets its own error again (downcast),
//! from interpreted and compiled `hcall`s alike, from an instance's call
//! and from a whole run; the trap's text stays the host's message.

use toyvm::Error;
use toyvm::engine::{Engine, HostError, Imports, Instance, Module};
use toyvm::vm::interp::{self, HostFunctions, TrapKind};

/// `work(n)`: calls `check(i)` for i in 1..=n and sums the results.
const GUEST: &str = "
.import check 1
.func work(n)
  li r2, 0
  li r3, 1
top:
  hcall r4, check, r3, 1
  add r2, r2, r4
  loop r3, n, top
  ret r2
.end
.func main()
  li r0, 0
  ret r0
.end
";

/// The embedder's own error.
#[derive(Debug, PartialEq)]
struct Refused {
    at: i64,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "check refuses {}", self.at)
    }
}

impl std::error::Error for Refused {}

fn instance(profile: &str, fail_at: i64) -> Instance {
    let engine = Engine::builder().profile_str(profile).unwrap().build();
    let module = Module::from_bytes(&engine, GUEST.as_bytes()).unwrap();
    let mut imports = Imports::new();
    imports.define("check", 1, move |args, _| {
        if args[0] == fail_at {
            Err(HostError::new(Refused { at: args[0] }))
        } else {
            Ok(args[0] % 7)
        }
    });
    Instance::with_imports(&module, imports, &[]).unwrap()
}

#[test]
fn the_embedder_gets_its_own_error_back_from_the_trap() {
    let mut jit = instance("multihash:interval=500", 25_000);
    let mut plain = instance("none", 25_000);
    let e = jit.call("work", &[30_000]).unwrap_err();
    let p = plain.call("work", &[30_000]).unwrap_err();
    assert!(
        jit.stats().jit.unwrap().compiles >= 1,
        "compiled code called it"
    );
    for e in [&e, &p] {
        let host = e.host_error().expect("a host function's failure");
        assert_eq!(
            host.downcast_ref::<Refused>(),
            Some(&Refused { at: 25_000 })
        );
        assert_eq!(host.message(), "check refuses 25000");
        assert!(host.error().is_some());
        // The trap says as much as before: where, which import, what.
        assert_eq!(
            e.to_string(),
            "trap in `work` at instruction 2 (pc f0:2): host function `check` failed: check refuses 25000"
        );
    }
    // The interpreter's trap and compiled code's are equal.
    let kind = |e: &Error| match e {
        Error::Vm(toyvm::vm::Error::Trap(t)) => t.kind.clone(),
        other => panic!("expected a trap, got {other:?}"),
    };
    assert_eq!(kind(&e), kind(&p));
    assert!(matches!(kind(&e), TrapKind::Host { name, .. } if name == "check"));
    // Another error is no host failure.
    assert!(jit.call("nope", &[]).unwrap_err().host_error().is_none());
}

#[test]
fn a_message_is_a_host_error_without_a_source() {
    let engine = Engine::default();
    let module = Module::from_bytes(&engine, GUEST.as_bytes()).unwrap();
    let mut imports = Imports::new();
    imports.define("check", 1, |args, _| {
        let small = u8::try_from(args[0]).map_err(|_| format!("{} is too big", args[0]))?;
        Ok(i64::from(small))
    });
    let mut inst = Instance::with_imports(&module, imports, &[]).unwrap();
    assert_eq!(inst.call("work", &[10]).unwrap(), 55);
    let e = inst.call("work", &[300]).unwrap_err();
    let host = e.host_error().unwrap();
    assert_eq!(host.message(), "256 is too big");
    assert!(host.error().is_none() && host.downcast_ref::<Refused>().is_none());
    assert_eq!(host, &HostError::msg("256 is too big"));
    assert!(
        e.to_string()
            .ends_with("host function `check` failed: 256 is too big")
    );
}

#[test]
fn a_whole_runs_host_error_comes_back_too() {
    /// Fails with an I/O error at 4,000.
    struct Host;
    impl HostFunctions for Host {
        fn call(&mut self, _: u16, args: &[i64], _: &mut [i64]) -> Result<i64, HostError> {
            if args[0] == 4_000 {
                return Err(HostError::new(std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the pipe closed",
                )));
            }
            Ok(1)
        }
    }
    let program = toyvm::vm::asm::assemble(&format!("{GUEST}.entry work\n")).unwrap();
    for profile in ["none", "multihash:interval=500"] {
        let rt = toyvm::Runtime::builder(program.clone())
            .profile_str(profile)
            .unwrap()
            .build();
        let input = interp::Input {
            args: &[5_000],
            file: &[],
        };
        let e = rt
            .run_with_host_fns(input, &mut std::io::sink(), &mut Host)
            .unwrap_err();
        let io = e
            .host_error()
            .and_then(|h| h.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(|e| e.kind()),
            Some(std::io::ErrorKind::BrokenPipe),
            "{e}"
        );
        assert!(e.to_string().contains("failed: the pipe closed"), "{e}");
    }
}
