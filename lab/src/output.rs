//! Writing the CLI's output without panicking, and checking output paths
//! before the work that fills them.
//!
//! `println!` and `eprintln!` panic when the write fails (a full disk, a
//! closed pipe), and release builds abort on a panic; every write of the
//! commands goes through [`stdout`] or [`stderr`] instead, and the caller
//! turns an error into an exit status: one line and status 3, a closed
//! pipe included (`toyvm profile ... | head -1`: the output ended early),
//! never hiding a verdict or a trap decided before the write. Rust ignores
//! SIGPIPE, so a closed pipe arrives here as an `EPIPE` error rather than a
//! signal.

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

/// A JSON document with its format version first: `{"format": N, ...}`,
/// `body`'s fields after it. Every JSON output of the commands carries
/// one (`docs/json.md` defines each).
#[derive(Debug, serde::Serialize)]
pub struct Versioned<'a, T> {
    /// The document's format version: raised when a field changes meaning
    /// or goes away (new fields may appear without it).
    pub format: u32,
    /// The document's own fields.
    #[serde(flatten)]
    pub body: &'a T,
}

/// `body` as indented JSON with its `format` version first (no newline at
/// the end).
pub fn json_pretty<T: serde::Serialize>(format: u32, body: &T) -> String {
    serde_json::to_string_pretty(&Versioned { format, body })
        .expect("the documents hold only serializable data")
}

/// A file being written in place of `path`: the bytes go to a temporary
/// file beside it, which [`Replacement::commit`] renames over `path` once
/// everything is written, so a failed write leaves `path` as it was
/// (dropping an uncommitted one removes the temporary file). A `path`
/// that is not a regular file (a device such as `/dev/full`, a pipe, a
/// link) is written directly, never replaced or removed.
#[derive(Debug)]
pub struct Replacement {
    path: PathBuf,
    temp: Option<PathBuf>,
}

impl Replacement {
    /// Opens the file to write for `path`.
    pub fn create(path: &Path) -> io::Result<(fs::File, Replacement)> {
        let old = fs::symlink_metadata(path);
        let regular_or_absent = match &old {
            Ok(m) => m.file_type().is_file(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        if !regular_or_absent {
            let f = fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(path)?;
            return Ok((
                f,
                Replacement {
                    path: path.to_owned(),
                    temp: None,
                },
            ));
        }
        let temp = beside(path, &format!("{}.tmp", std::process::id()));
        if old.is_ok() {
            // A file we may not write is not replaced either (renaming
            // over it needs only the folder's permission).
            fs::OpenOptions::new().append(true).open(path)?;
        }
        let f = fs::File::create(&temp)?;
        let r = Replacement {
            path: path.to_owned(),
            temp: Some(temp),
        };
        if let (Ok(m), Some(t)) = (&old, &r.temp) {
            // The replacement keeps the old file's permissions (dropping
            // `r` on an error removes the temporary file).
            fs::set_permissions(t, m.permissions())?;
        }
        Ok((f, r))
    }

    /// Puts the written file in place (the file must be flushed and
    /// closed first).
    pub fn commit(mut self) -> io::Result<()> {
        match self.temp.take() {
            Some(temp) => fs::rename(&temp, &self.path).inspect_err(|_| {
                let _ = fs::remove_file(&temp);
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Replacement {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = fs::remove_file(temp);
        }
    }
}

/// Writes `bytes` to `path` through a [`Replacement`]: `path` holds either
/// its old contents or all of `bytes`, never part of them.
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (mut f, r) = Replacement::create(path)?;
    f.write_all(bytes)?;
    drop(f);
    r.commit()
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// A hidden file beside `path` for this process's own use:
/// `.NAME.toyvm-TAG` in `path`'s folder.
fn beside(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    folder_of(path).join(format!(".{name}.toyvm-{tag}"))
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
    let dir = folder_of(path);
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
    let probe = beside(path, &format!("probe-{}", std::process::id()));
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
    if fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(NotWritable::NotADirectory {
            what: what.to_owned(),
            path: dir.to_owned(),
            dir: dir.to_owned(),
        });
    }
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

    #[test]
    fn a_replacement_takes_the_place_of_the_file_only_when_committed() {
        let dir = std::env::temp_dir().join(format!("toyvm-replace-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.trace");
        fs::write(&path, "old").unwrap();
        // Abandoned (a failed write): the old file stays, no temporary is left.
        let (mut f, r) = Replacement::create(&path).unwrap();
        f.write_all(b"partial").unwrap();
        drop((f, r));
        assert_eq!(fs::read_to_string(&path).unwrap(), "old");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temporary left");
        // Committed: the new bytes, in place of the old file.
        let (mut f, r) = Replacement::create(&path).unwrap();
        f.write_all(b"new").unwrap();
        drop(f);
        r.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        // The replacement keeps the old file's permissions.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
            let (f, r) = Replacement::create(&path).unwrap();
            drop(f);
            r.commit().unwrap();
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o640);
        }
        // A new file appears only when committed.
        let fresh = dir.join("fresh.trace");
        let (f, r) = Replacement::create(&fresh).unwrap();
        drop((f, r));
        assert!(!fresh.exists());
        // A device is written where it is, never replaced.
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let (mut f, r) = Replacement::create(Path::new("/dev/null")).unwrap();
            f.write_all(b"x").unwrap();
            drop(f);
            r.commit().unwrap();
            let m = fs::symlink_metadata("/dev/null").unwrap();
            assert!(m.file_type().is_char_device());
        }
        let _ = fs::remove_dir_all(&dir);
    }
}
