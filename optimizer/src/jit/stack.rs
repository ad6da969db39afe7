//! The machine stack compiled code runs on: where the current thread's
//! stack ends, and the limit native calls check (`NativeCtx::stack_limit`).
//!
//! Compiled code runs on whatever thread calls it (the caller of
//! `toyvm::engine::Instance::call`, say), as wasmtime runs WebAssembly.
//! Native functions recurse on that thread's stack, so every native call
//! first compares the stack pointer against a limit: the lowest usable
//! address of the thread's stack plus a reserve the runtime chooses. Above
//! the limit the call is made natively; below it the callee runs in the
//! interpreter, which keeps its frames on the heap and checks the call-depth
//! limit itself (see [`crate::native`]). The reserve is what one level of
//! the interpreter and everything it does between two checks (host
//! functions, the profiler model, compiling) may take below the limit.
//!
//! The bounds come from the C library on Linux (`pthread_getattr_np`,
//! asked once per thread: for the main thread it reads `/proc/self/maps`);
//! elsewhere a thread that knows its stack size says so with
//! [`assume_thread_stack`], and other threads have no known bounds.

use std::cell::Cell;

thread_local! {
    /// This thread's lowest usable stack address, once known.
    static LOW: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Bytes kept clear above the reported end of the stack: the guard page
/// (some C libraries count it in the stack) and rounding.
const GUARD: usize = 16 << 10;

/// An address in the caller's frame: how deep the machine stack is there.
#[inline(always)]
pub fn stack_pointer() -> usize {
    let marker = 0u8;
    std::ptr::from_ref(std::hint::black_box(&marker)) as usize
}

/// The lowest address of the current thread's stack that code may use
/// (the stack grows down), if known: from the C library on Linux, else as
/// [`assume_thread_stack`] recorded it. Cached per thread.
pub fn thread_stack_low() -> Option<usize> {
    LOW.with(|low| {
        if let Some(v) = low.get() {
            return Some(v);
        }
        let v = query()?.checked_add(GUARD)?;
        low.set(Some(v));
        Some(v)
    })
}

/// Records that the current thread's stack extends `size` bytes below the
/// caller's frame, for targets whose C library does not say (call it
/// first thing in a thread spawned with that stack size). A bound already
/// known is kept.
pub fn assume_thread_stack(size: usize) {
    if thread_stack_low().is_some() {
        return;
    }
    let low = stack_pointer().saturating_sub(size).saturating_add(GUARD);
    LOW.with(|l| l.set(Some(low)));
}

/// The stack limit for compiled code on this thread (see the module docs):
/// `reserve` bytes above the end of its stack, or `None` when the bounds
/// are unknown.
pub fn stack_limit(reserve: usize) -> Option<usize> {
    thread_stack_low()?.checked_add(reserve)
}

/// The bytes between the caller's frame and `limit` (0 below it).
pub fn stack_room(limit: usize) -> usize {
    stack_pointer().saturating_sub(limit)
}

/// The lowest address of the current thread's stack, from the C library.
#[cfg(target_os = "linux")]
fn query() -> Option<usize> {
    // SAFETY: `attr` is initialized by `pthread_getattr_np` before it is
    // read, and destroyed once; the out-pointers are to live locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let got = libc::pthread_attr_getstack(&attr, &mut addr, &mut size);
        let mut guard: libc::size_t = 0;
        let guarded = libc::pthread_attr_getguardsize(&attr, &mut guard);
        libc::pthread_attr_destroy(&mut attr);
        if got != 0 || addr.is_null() || size == 0 {
            return None;
        }
        let guard = if guarded == 0 { guard } else { 0 };
        (addr as usize).checked_add(guard)
    }
}

/// Bounds are known only through [`assume_thread_stack`] here.
#[cfg(not(target_os = "linux"))]
fn query() -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounds_hold_the_current_frame() {
        let size = 512 << 10;
        let t = std::thread::Builder::new()
            .stack_size(size)
            .spawn(move || {
                assume_thread_stack(size);
                let low = thread_stack_low().expect("known after assume_thread_stack");
                let sp = stack_pointer();
                assert!(low < sp, "{low:#x} {sp:#x}");
                // Within the thread's stack: not more than its size (plus
                // what the C library keeps at the top) below the frame.
                assert!(sp - low <= size, "{} bytes", sp - low);
                assert!(sp - low >= size / 2, "{} bytes", sp - low);
                assert_eq!(stack_limit(4096), Some(low + 4096));
                assert!(stack_room(low + 4096) < sp - low);
            })
            .unwrap();
        t.join().unwrap();
    }
}
