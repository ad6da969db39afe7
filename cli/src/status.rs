//! The exit statuses of `toyvm`, one per class of outcome, and how every
//! error of the libraries maps to one.
//!
//! A script can tell a guest's result from toyvm's own failure: `run`
//! exits 0 when the program returns (whatever it returns), and its value
//! is in `--stats --json`'s `result`; `run --exit-code` makes the low byte
//! of the value the exit status instead, as a shell command would. The
//! table is the README's "Exit statuses" and `toyvm --help`'s last lines
//! ([`TABLE`]).

use std::io;

use toyvm_lab::output::NotWritable;

/// What `toyvm --help` prints after the commands.
pub(crate) const TABLE: &str = "\
Exit statuses:
  0  success (`run`: the program returned, whatever its value; see --exit-code)
  1  a verdict failed: `verify` FAIL, `compare` with a pair that mismatched or failed
  2  usage: a bad flag, value, spec or figure name, flags that do not go together
  3  input or output: a file or program missing, unreadable, too large or malformed (program,
     trace, reference, baseline), a program whose imports no host provides, a
     write that failed (full disk, standard output closed before the output ended)
  4  the program trapped (division by zero, out of bounds, stack overflow, fuel...)
  5  internal error: a bug in toyvm, or a resource the system refused (a thread,
     the program's memory)
`run --exit-code` exits with the low byte of the program's value instead of 0.";

/// An exit status's class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Status {
    /// The command did what it was asked.
    Success = 0,
    /// A verdict failed (`verify` FAIL, `compare` failures).
    Failed = 1,
    /// The command line was wrong.
    Usage = 2,
    /// A file or stream could not be read, parsed or written.
    Io = 3,
    /// The program trapped.
    Trap = 4,
    /// A bug, or a resource the system refused.
    Internal = 5,
}

impl Status {
    pub(crate) fn code(self) -> u8 {
        self as u8
    }
}

/// An error and the exit status it maps to.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: Status,
    pub(crate) msg: String,
}

impl Failure {
    pub(crate) fn new(status: Status, msg: impl Into<String>) -> Self {
        Failure {
            status,
            msg: msg.into(),
        }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Self {
        Failure::new(Status::Usage, msg)
    }

    pub(crate) fn io(msg: impl Into<String>) -> Self {
        Failure::new(Status::Io, msg)
    }

    /// A failed write of `what` (`standard output`, a file): exit status 3,
    /// a closed pipe included (the output ended early).
    pub(crate) fn write(what: &str, e: &io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::io(format!(
                "writing {what}: its reader closed it before the output ended (broken pipe)"
            ))
        } else {
            Failure::io(format!("writing {what}: {e}"))
        }
    }

    /// `e` with `context` (usually a path) in front of its message.
    pub(crate) fn of(context: impl std::fmt::Display, e: &(impl Classify + ?Sized)) -> Self {
        Failure::new(e.status(), format!("{context}: {e}"))
    }
}

/// An error whose class says its exit status.
pub(crate) trait Classify: std::fmt::Display {
    fn status(&self) -> Status;
}

impl<E: Classify> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::new(e.status(), e.to_string())
    }
}

impl Classify for toyvm_vm::Error {
    fn status(&self) -> Status {
        use toyvm_vm::Error as E;
        match self {
            E::Trap(_) => Status::Trap,
            E::Usage(_) => Status::Usage,
            E::NoMemory { .. } => Status::Internal,
            E::Decode { .. } | E::Asm { .. } | E::Verify { .. } | E::Output(_) => Status::Io,
            // `#[non_exhaustive]`: a new failure is internal until it is
            // classified here.
            _ => Status::Internal,
        }
    }
}

impl Classify for toyvm_profiler::Error {
    fn status(&self) -> Status {
        use toyvm_profiler::Error as E;
        match self {
            E::Spec { .. } | E::UnsupportedKind { .. } | E::TooManyModels { .. } => Status::Usage,
            E::TraceText { .. } | E::TraceBinary { .. } | E::Import { .. } | E::Io(_) => Status::Io,
            // `#[non_exhaustive]`, as above.
            _ => Status::Internal,
        }
    }
}

impl Classify for toyvm::Error {
    fn status(&self) -> Status {
        use toyvm::Error as E;
        match self {
            E::Vm(e) => e.status(),
            E::Profiler(e) => e.status(),
            E::Io { .. } | E::MemoryLimit { .. } | E::Link(_) => Status::Io,
            E::Usage(_) | E::NoSuchFunction(_) | E::Arity { .. } => Status::Usage,
            E::Jit(_) | E::Thread { .. } | E::MemoryAccess { .. } | E::Model(_) => Status::Internal,
            // `#[non_exhaustive]`, as above.
            _ => Status::Internal,
        }
    }
}

impl Classify for NotWritable {
    fn status(&self) -> Status {
        Status::Io
    }
}

impl Classify for toyvm_lab::compare::Error {
    fn status(&self) -> Status {
        use toyvm_lab::compare::Error as E;
        match self {
            E::Spec(e) | E::Sweep { source: e, .. } => e.status(),
            E::Run(e) | E::Synth(e) | E::Workload { source: e, .. } => e.status(),
            E::Record(e) => e.status(),
            E::Suite(e) => e.status(),
            E::GridOption { .. }
            | E::GridKey { .. }
            | E::TooManyPoints { .. }
            | E::TooManyConfigs { .. }
            | E::SynthIterations { .. }
            | E::BaselineSizes { .. }
            | E::BaselinePrograms { .. }
            | E::UnknownIntervalModel(_)
            | E::Usage(_) => Status::Usage,
            E::Read { .. }
            | E::BaselineTooLarge { .. }
            | E::BaselineJson { .. }
            | E::Output(_)
            | E::Write { .. }
            | E::Stdout(_)
            | E::Chart { .. }
            | E::Parts(_) => Status::Io,
        }
    }
}

impl Classify for toyvm_lab::suite::Error {
    fn status(&self) -> Status {
        use toyvm_lab::suite::Error as E;
        match self {
            E::Program { source: e, .. } => e.status(),
            E::Link { source: e, .. } => e.status(),
            // `#[non_exhaustive]`: a new failure to find or read a program
            // is an input error until it says otherwise.
            _ => Status::Io,
        }
    }
}

impl Classify for toyvm_lab::Error {
    fn status(&self) -> Status {
        use toyvm_lab::Error as E;
        match self {
            E::Runtime(e) | E::Program { source: e, .. } => e.status(),
            E::Compare(e) => e.status(),
            E::Trace { source, .. } => source.status(),
            E::Io { .. } | E::Reference(_) | E::Stdout(_) | E::Output(_) => Status::Io,
            E::Usage(_) => Status::Usage,
            _ => Status::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_its_own_status_and_a_line_in_the_table() {
        let all = [
            Status::Success,
            Status::Failed,
            Status::Usage,
            Status::Io,
            Status::Trap,
            Status::Internal,
        ];
        for (i, s) in all.iter().enumerate() {
            assert_eq!(s.code() as usize, i);
            assert!(TABLE.contains(&format!("\n  {i}  ")), "{s:?}");
        }
    }

    #[test]
    fn errors_map_to_their_class() {
        let trap = toyvm_vm::Error::Trap(toyvm_vm::interp::Trap {
            kind: toyvm_vm::interp::TrapKind::DivisionByZero,
            pc: toyvm_vm::Pc::new(0, 0),
            function: "main".into(),
        });
        assert_eq!(trap.status(), Status::Trap);
        assert_eq!(toyvm::Error::from(trap).status(), Status::Trap);
        let asm = toyvm_vm::asm::assemble(".func main(\n").unwrap_err();
        assert_eq!(asm.status(), Status::Io);
        let spec = toyvm_profiler::parse_spec("nosuchmodel").unwrap_err();
        assert_eq!(spec.status(), Status::Usage);
        assert_eq!(toyvm::Error::Link("foo".into()).status(), Status::Io);
        let closed = Failure::write("standard output", &io::ErrorKind::BrokenPipe.into());
        assert_eq!(closed.status, Status::Io);
        assert!(closed.msg.contains("closed"), "{}", closed.msg);
    }
}
