//! Dropped regions give their code memory back: a runtime that drops and
//! recompiles thousands of times keeps only live code mapped (issue 12's
//! storms leaked about 4.5 KB per recompile). Its own test binary, so no
//! other test's allocations move the resident-set figure.

use toyvm_optimizer::{CodeCache, Region};
use toyvm_vm::asm::assemble;

/// Resident memory of this process in bytes (Linux); `None` elsewhere.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

#[test]
fn recompiling_thousands_of_times_keeps_memory_bounded_by_live_code() {
    let program = assemble(
        ".func f(a, b)\n add r2, a, b\n ret r2\n.end\n\
         .func main(n)\n li r1, 0\n li r2, 0\ntop:\n call r3, f, r1, 2\n loop r1, n, top\n ret r3\n.end\n",
    )
    .unwrap();
    let region = Region::parse(
        "region f1:2\n  block 2 weight=100\n    2: native f0 call r3, f0, r1, 2\n    \
         3: loop r1, r0, L2 -> head | exit 4\n",
    )
    .unwrap();
    let mut cache = CodeCache::new().unwrap();
    cache.compile_natives(&program).unwrap();
    let mut live = Vec::new();
    let cycle = |cache: &mut CodeCache, live: &mut Vec<_>, n: usize| {
        for _ in 0..n {
            live.push(cache.compile(&region).unwrap());
            // Keep a handful live, as a runtime does; drop the oldest.
            if live.len() > 8 {
                let dropped = live.remove(0);
                // It still runs until it is dropped.
                let mut regs = [0i64; 256];
                regs[0] = 3;
                let mut counters = vec![0; dropped.counters_len()];
                let e = dropped.run(
                    &mut regs,
                    &mut toyvm_vm::interp::Memory::from(Vec::new()),
                    &mut counters,
                );
                assert_eq!((e.resume, regs[1], regs[3]), (4, 4, 3));
            }
        }
    };
    cycle(&mut cache, &mut live, 300);
    let Some(before) = resident_bytes() else {
        return;
    };
    cycle(&mut cache, &mut live, 4000);
    let after = resident_bytes().unwrap();
    let grown = after.saturating_sub(before);
    // 4,000 leaked compiles would be over 16 MB.
    assert!(
        grown < 4 << 20,
        "resident memory grew by {grown} bytes over 4000 recompiles"
    );
}
