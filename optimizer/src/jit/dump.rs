//! What `--dump-clif` writes for a compiled region: its annotated IR, the
//! machine code Cranelift emitted for it, and the same for each native
//! function it reaches through calls.

use cranelift_codegen::Context;
use toyvm_vm::Function;
use toyvm_vm::isa::Instr;

/// Appends Cranelift's listing of the machine code it just emitted for
/// `ctx` (compiled with `set_disasm(true)`), after register allocation, as
/// `;` comments under a `; machine code` line.
pub(super) fn machine_code(text: &mut String, ctx: &Context) {
    if let Some(vcode) = ctx.compiled_code().and_then(|c| c.vcode.as_deref()) {
        text.push_str("\n; machine code\n");
        for line in vcode.lines() {
            text.push_str("; ");
            text.push_str(line);
            text.push('\n');
        }
    }
}

/// The dumps of the native functions reachable from `roots` through direct
/// calls (each once, in the order first reached), from `dumps` (per
/// function, where it has native code).
pub(super) fn natives(
    functions: &[Function],
    dumps: &[Option<String>],
    roots: impl IntoIterator<Item = u32>,
) -> String {
    let mut seen = vec![false; functions.len()];
    let mut stack: Vec<u32> = roots.into_iter().collect();
    stack.reverse();
    let mut out = String::new();
    while let Some(f) = stack.pop() {
        let f = f as usize;
        let Some(Some(text)) = dumps.get(f) else {
            continue;
        };
        if std::mem::replace(&mut seen[f], true) {
            continue;
        }
        out.push('\n');
        out.push_str(text);
        let callees = functions[f].code.iter().filter_map(|i| match *i {
            Instr::Call { f, .. } => Some(f),
            _ => None,
        });
        let at = stack.len();
        stack.extend(callees);
        stack[at..].reverse();
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::CodeCache;
    use toyvm_vm::asm::assemble;

    const CHAIN: &str = "
        .func top(n)
            call r1, mid, n, 1
            call r2, mid, r1, 1
            call r3, top2, r2, 1
            ret r3
        .end
        .func mid(n)
            blti n, 1, done
            subi r1, n, 1
            call r1, mid, r1, 1
            call r1, leaf, r1, 1
            ret r1
        done:
            ret n
        .end
        .func leaf(x)
            muli x, x, 3
            ret x
        .end
        .func other(x)
            addi x, x, 1
            ret x
        .end
        .func top2(n)
            call r1, leaf, n, 1
            ret r1
        .end
        .func main(n)
            call r1, top, n, 1
            ret r1
        .end";

    #[test]
    fn a_dump_lists_the_region_then_each_native_it_reaches_once() {
        let p = assemble(CHAIN).unwrap();
        let mut cache = CodeCache::new().unwrap();
        assert_eq!(cache.compile_function(&p, 0).unwrap().clif(), None);

        let mut cache = CodeCache::new().unwrap();
        cache.set_dump_clif(true);
        let c = cache.compile_function(&p, 0).unwrap();
        let dump = c.clif().unwrap();
        let heads: Vec<&str> = dump
            .lines()
            .filter(|l| l.starts_with("; whole") || l.starts_with("; native function"))
            .collect();
        // Reached through calls, each once (`mid` calls itself), in the
        // order first reached; `other` is not reached.
        assert_eq!(
            heads,
            [
                "; whole function f0",
                "; native function f0",
                "; native function f1",
                "; native function f2",
                "; native function f4",
            ],
            "{dump}"
        );
        // Each with Cranelift's listing of its machine code.
        assert_eq!(dump.matches("\n; machine code\n").count(), 5, "{dump}");
    }
}
