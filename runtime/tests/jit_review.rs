//! The JIT's review judges a region by what its entries ran: a straight
//! region whose every entry runs its path to the `ret` it hands to the
//! interpreter is kept (musl's `__fwritex` in `hashtable.wasm` was
//! compiled and dropped as "leaving at once" five times, then left to the
//! interpreter: the exit's work was taken as half the region).

use toyvm::Runtime;
use toyvm::runtime::JitOptions;
use toyvm::vm::asm;
use toyvm::vm::interp::Input;

/// `main` calls `f` once per trip; `f` stores (so it is not run natively
/// whole) and prints on a path never taken (so it is not closed), and runs
/// 18 instructions to its `ret` on every call.
const STRAIGHT_TO_RET: &str = "
.memory 64
.func main(n)
  li r1, 0
  li r3, 0
top:
  mov r4, r1
  call r4, f, r4, 1
  add r3, r3, r4
  addi r1, r1, 1
  blt r1, n, top
  ret r3
.end
.func f(x)
  andi r1, r0, 1
  beqi r1, 7, rare
  addi r2, r0, 1
  xori r2, r2, 5
  addi r2, r2, 2
  muli r2, r2, 3
  addi r2, r2, 4
  xori r2, r2, 9
  addi r2, r2, 6
  muli r2, r2, 5
  addi r2, r2, 8
  xori r2, r2, 3
  addi r2, r2, 1
  andi r2, r2, 1023
  addi r2, r2, 7
  xori r2, r2, 2
  andi r1, r0, 31
  st r1, 0, r2
  ret r2
rare:
  putn r0
  ret r0
.end
";

fn run(spec: &str, jit: bool) -> toyvm::RunReport {
    let program = asm::assemble(STRAIGHT_TO_RET).unwrap();
    Runtime::builder(program)
        .profile_str(spec)
        .unwrap()
        .jit(jit.then(JitOptions::default))
        .build()
        .run(
            Input {
                args: &[200_000],
                file: &[],
            },
            &mut std::io::sink(),
        )
        .unwrap()
}

#[test]
fn a_straight_region_run_to_its_handed_over_ret_is_kept() {
    let want = run("none", false).outcome.value;
    let report = run("multihash", true);
    assert_eq!(report.outcome.value, want);
    let jit = report.stats.jit.expect("JIT stats");
    // `f`'s region and `main`'s loop, compiled once each and never dropped.
    assert_eq!(jit.compiles, 2, "{jit:?}");
    assert_eq!(
        (jit.recompiles, jit.drops, jit.given_up),
        (0, 0, 0),
        "{jit:?}"
    );
    // Nearly every call of `f` enters its region and leaves at its `ret`.
    assert!(jit.region_entries > 190_000, "{jit:?}");
    assert!(jit.interpret_exits > 190_000, "{jit:?}");
}
