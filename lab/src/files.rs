//! Reading the files a command is given, with the size checked before the
//! bytes are held: a wrong path such as `/dev/zero` fails at once instead
//! of filling memory (issue 12). Every reader of a program, an `--input`
//! or a baseline goes through [`read_bounded`].

use std::io::{self, Read};
use std::path::Path;

use toyvm_vm::Program;

/// Program files (`run`, `asm`, `dis`, `verify`, `compare`, `synth
/// --describe`) are read whole: none may be larger than this (256 MiB).
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Reads at most `limit` bytes of `path`, refusing a larger file: before
/// reading it when its size is known, after `limit + 1` bytes when it is
/// not (a pipe, `/dev/zero`). The refusal is an error of kind
/// [`io::ErrorKind::FileTooLarge`] saying the limit.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("toyvm-files-doc-{}", std::process::id()));
/// std::fs::write(&dir, b"12345").unwrap();
/// assert_eq!(toyvm_lab::files::read_bounded(&dir, 5).unwrap(), b"12345");
/// let e = toyvm_lab::files::read_bounded(&dir, 4).unwrap_err();
/// assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
/// let e = toyvm_lab::files::read_bounded(std::path::Path::new("/dev/zero"), 1 << 20).unwrap_err();
/// assert_eq!(e.to_string(), "larger than the 1048576 bytes allowed");
/// # std::fs::remove_file(&dir).unwrap();
/// ```
pub fn read_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let too_big = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than the {limit} bytes allowed"),
        )
    };
    let f = std::fs::File::open(path)?;
    if let Ok(m) = f.metadata()
        && m.is_file()
        && m.len() > limit
    {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    f.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(bytes)
}

/// The most input bytes `program` can take: its memory from its `.input`
/// address on (one byte per word).
pub fn input_room(program: &Program) -> u64 {
    program.memory_words.saturating_sub(program.input_base)
}
