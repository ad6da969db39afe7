//! The one rule for the names of functions and imports: what the assembler
//! reads is what the bytecode loader accepts, so every loaded program
//! disassembles into text that assembles back.

/// Whether `s` is a name: an ASCII letter, `_` or `.`, then ASCII letters,
/// digits, `_` or `.`.
///
/// ```
/// use toyvm_vm::name::is_name;
/// assert!(is_name("main") && is_name("_f.2"));
/// assert!(!is_name("") && !is_name("f b") && !is_name("2f") && !is_name("f#"));
/// ```
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}
