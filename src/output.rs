//! Writing the CLI's output without panicking, and checking output paths
//! before the work that fills them.
//!
//! `println!` and `eprintln!` panic when the write fails (a full disk, a
//! closed pipe), and release builds abort on a panic; every write of the
//! commands goes through [`stdout`] or [`stderr`] instead, and the caller
//! turns an error into an exit status: a closed pipe ([`is_closed_pipe`],
//! `toyvm profile ... | head -1`) ends quietly, as cargo and ripgrep do, and
//! any other error is one line and exit status 2. Rust ignores SIGPIPE, so
//! a closed pipe arrives here as an `EPIPE` error rather than a signal.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Writes all of `text` to standard output and flushes it.
pub fn stdout(text: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(text).and_then(|()| out.flush())
}

/// Writes all of `text` to standard error.
pub fn stderr(text: &[u8]) -> io::Result<()> {
    let mut err = io::stderr().lock();
    err.write_all(text).and_then(|()| err.flush())
}

/// Whether `e` says the reader went away (`EPIPE`): the output is no
/// longer wanted, which is not a failure.
pub fn is_closed_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// Why an output path cannot be written: what [`check_writable`] and
/// [`check_dir_writable`] refuse. `what` names the output in the message
/// (`the report`, `the chart`).
#[derive(Debug, thiserror::Error)]
pub enum NotWritable {
    /// The path is a directory, not a file.
    #[error("cannot write {what} to {}: it is a directory", .path.display())]
    IsDirectory {
        /// The output, as the message names it.
        what: String,
        /// The path given.
        path: PathBuf,
    },
    /// The file exists and does not open for writing.
    #[error("cannot write {what} to {}: {source}", .path.display())]
    Open {
        /// The output, as the message names it.
        what: String,
        /// The path given.
        path: PathBuf,
        /// Why it did not open.
        source: io::Error,
    },
    /// The directory the file would go in does not exist.
    #[error("cannot write {what} to {}: the directory {} does not exist", .path.display(), .dir.display())]
    NoDirectory {
        /// The output, as the message names it.
        what: String,
        /// The path given.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
    },
    /// What would be the file's directory is not a directory.
    #[error("cannot write {what} to {}: {} is not a directory", .path.display(), .dir.display())]
    NotADirectory {
        /// The output, as the message names it.
        what: String,
        /// The path given.
        path: PathBuf,
        /// Its would-be directory.
        dir: PathBuf,
    },
    /// No file can be created in the file's directory.
    #[error("cannot write {what} to {}: cannot create files in {}: {source}", .path.display(), .dir.display())]
    CannotCreate {
        /// The output, as the message names it.
        what: String,
        /// The path given.
        path: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// Why the probe file could not be created.
        source: io::Error,
    },
    /// An output directory could not be created.
    #[error("cannot write {what} in {}: {source}", .dir.display())]
    CreateDir {
        /// The output, as the message names it.
        what: String,
        /// The directory given.
        dir: PathBuf,
        /// Why it could not be created.
        source: io::Error,
    },
    /// An output directory exists but no file can be created in it.
    #[error("cannot write {what} in {}: cannot create files there", .dir.display())]
    DirNotWritable {
        /// The output, as the message names it.
        what: String,
        /// The directory given.
        dir: PathBuf,
    },
}

/// Checks that `path` can be written, before the work whose result goes
/// there: an existing file must open for writing (it is not truncated), a
/// new one needs an existing directory where a file can be created (a probe
/// file is created and removed, so nothing is left behind). `what` names
/// the output in the message (`the report`, `the chart`).
pub fn check_writable(path: &Path, what: &str) -> Result<(), NotWritable> {
    let what = || what.to_owned();
    let path_buf = || path.to_owned();
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(NotWritable::IsDirectory {
                what: what(),
                path: path_buf(),
            });
        }
        Ok(_) => {
            return match fs::OpenOptions::new().append(true).open(path) {
                Ok(_) => Ok(()),
                Err(source) => Err(NotWritable::Open {
                    what: what(),
                    path: path_buf(),
                    source,
                }),
            };
        }
        Err(_) => {}
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match fs::metadata(dir) {
        Err(_) => {
            return Err(NotWritable::NoDirectory {
                what: what(),
                path: path_buf(),
                dir: dir.to_owned(),
            });
        }
        Ok(m) if !m.is_dir() => {
            return Err(NotWritable::NotADirectory {
                what: what(),
                path: path_buf(),
                dir: dir.to_owned(),
            });
        }
        Ok(_) => {}
    }
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let probe = dir.join(format!(".{name}.toyvm-probe-{}", std::process::id()));
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(source) => Err(NotWritable::CannotCreate {
            what: what(),
            path: path_buf(),
            dir: dir.to_owned(),
            source,
        }),
    }
}

/// Checks that `dir` is, or can be made, a directory to write files in;
/// it is created if missing (the work would create it anyway).
pub fn check_dir_writable(dir: &Path, what: &str) -> Result<(), NotWritable> {
    if let Err(source) = fs::create_dir_all(dir) {
        return Err(NotWritable::CreateDir {
            what: what.to_owned(),
            dir: dir.to_owned(),
            source,
        });
    }
    check_writable(&dir.join("probe"), what).map_err(|_| NotWritable::DirNotWritable {
        what: what.to_owned(),
        dir: dir.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked_without_leaving_files() {
        let dir = std::env::temp_dir().join(format!("toyvm-output-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let new = dir.join("new.txt");
        check_writable(&new, "the report").unwrap();
        assert!(!new.exists());
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "no probe left");
        let e = check_writable(Path::new("/nonexistent/x.svg"), "the chart").unwrap_err();
        assert!(matches!(e, NotWritable::NoDirectory { .. }), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("the chart") && e.contains("/nonexistent") && e.contains("does not exist"),
            "{e}"
        );
        let e = check_writable(&dir, "the report").unwrap_err();
        assert!(matches!(e, NotWritable::IsDirectory { .. }), "{e:?}");
        assert!(e.to_string().contains("is a directory"), "{e}");
        fs::write(&new, "old").unwrap();
        check_writable(&new, "the report").unwrap();
        assert_eq!(fs::read_to_string(&new).unwrap(), "old", "not truncated");
        let _ = fs::remove_dir_all(&dir);
    }
}
