//! How much machine stack a native function's frame takes.

use toyvm_vm::Function;

/// The machine stack one call of this code takes (return address
/// included), read from Cranelift's x86-64 prologue (`push rbp; mov rbp,
/// rsp; sub rsp, N`, the callee-saved registers stored inside the `N`);
/// `None` for any other shape or host.
pub(super) fn frame_bytes(code: &[u8]) -> Option<usize> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let rest = code.strip_prefix(&[0x55, 0x48, 0x89, 0xe5])?;
    let sub = match rest {
        [0x48, 0x83, 0xec, n, ..] => *n as usize,
        [0x48, 0x81, 0xec, a, b, c, d, ..] => u32::from_le_bytes([*a, *b, *c, *d]) as usize,
        // Pushes of callee-saved registers: a shape not measured here.
        [0x50..=0x57, ..] | [0x41, 0x50..=0x57, ..] => return None,
        // No stack adjustment: a leaf with nothing to spill or save.
        _ => 0,
    };
    Some(16 + sub)
}

/// A generous frame estimate where the prologue cannot be read: the
/// callee-saved registers and a spill slot per bytecode register and
/// native argument.
pub(super) fn estimated_frame_bytes(f: &Function) -> usize {
    96 + 8 * (f.regs as usize + 8)
}
