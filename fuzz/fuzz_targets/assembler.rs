//! Any text given to the assembler is either rejected with a line-numbered
//! error or assembles to a program whose disassembly assembles back to it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toyvm_vm::asm;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match asm::assemble(text) {
        Ok(p) => assert_eq!(asm::assemble(&asm::disassemble(&p)).unwrap(), p),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
});
