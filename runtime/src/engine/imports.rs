//! Host functions: the closures a host offers an instance ([`Imports`]),
//! linked by name and argument count against the module's imports, and
//! the failure they return ([`HostError`]).
//!
//! The `Host*` names of the workspace, each for one thing:
//! - [`HostFn`]: one host function as an embedder writes it, a closure
//!   over the arguments and the guest's memory.
//! - [`HostFunctions`]: the interpreter's trait for the functions `hcall`
//!   calls, by import index ([`Imports`] linked become one; a WASI host is
//!   another).
//! - [`HostError`]: how a host function fails; the trap keeps it.
//! - [`toyvm_optimizer::HostCalls`]: compiled code's side of the same
//!   calls (the [`HostFunctions`], the import names for traps, the
//!   interpreter compiled code calls back into).
//! - [`toyvm_vm::interp::Host`]: not a host function at all, the
//!   interpreter's embedder hooks: the sink of its tuples and the compiled
//!   regions it enters (the runtime's JIT host, a model feeder, or none).
//! - `toyvm::feedback::HostGraph`: a foreign VM's control-flow graph, as
//!   the feedback component asks it.

use std::collections::HashMap;

use toyvm_vm::Program;
use toyvm_vm::interp::{HostError, HostFunctions};

use crate::{Error, Result};

/// A host function: called with its arguments and the instance's memory,
/// it returns the value `hcall` puts in its destination register, or a
/// [`HostError`] that becomes the guest's trap
/// ([`TrapKind::Host`](toyvm_vm::interp::TrapKind::Host), which keeps it:
/// see [`Error::host_error`](crate::Error::host_error)).
pub type HostFn = Box<dyn FnMut(&[i64], &mut [i64]) -> Result<i64, HostError> + Send>;

/// The host functions a host offers an instance, by name: linked against
/// the module's imports (`.import NAME N`) when the instance is made.
#[derive(Default)]
pub struct Imports {
    fns: HashMap<String, (u8, HostFn)>,
}

impl std::fmt::Debug for Imports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<_> = self.fns.iter().map(|(n, (p, _))| (n, p)).collect();
        names.sort();
        f.debug_struct("Imports").field("fns", &names).finish()
    }
}

impl Imports {
    /// No host functions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Offers `f` as host function `name` taking `params` arguments
    /// (replacing one of that name). `f` fails with a [`HostError`]: a
    /// message (`Err("why".into())`; `?` converts a `String` or `&str`
    /// error) or the host's own error (`HostError::new(e)`), which the
    /// embedder gets back from the trap ([`Error::host_error`]).
    pub fn define(
        &mut self,
        name: &str,
        params: u8,
        f: impl FnMut(&[i64], &mut [i64]) -> Result<i64, HostError> + Send + 'static,
    ) -> &mut Self {
        self.fns.insert(name.to_owned(), (params, Box::new(f)));
        self
    }

    /// The functions for `program`'s imports, in import order: each
    /// import must be offered, with its number of arguments.
    pub(super) fn link(mut self, program: &Program) -> Result<Linked> {
        let mut linked = Vec::with_capacity(program.imports.len());
        for i in &program.imports {
            match self.fns.remove(&i.name) {
                Some((params, f)) if params == i.params => linked.push(f),
                Some((params, _)) => {
                    return Err(Error::Link(format!(
                        "the module imports `{}` taking {}; the host offers it taking {}",
                        i.name,
                        plural(i.params),
                        plural(params)
                    )));
                }
                None => {
                    return Err(Error::Link(format!(
                        "the module imports `{}` (taking {}), which the host does not offer",
                        i.name,
                        plural(i.params)
                    )));
                }
            }
        }
        Ok(Linked(linked))
    }
}

/// `1 argument`, `2 arguments`.
fn plural(n: u8) -> String {
    format!("{n} argument{}", if n == 1 { "" } else { "s" })
}

/// An instance's host functions, by import index.
pub(super) struct Linked(Vec<HostFn>);

impl HostFunctions for Linked {
    fn call(&mut self, index: u16, args: &[i64], mem: &mut [i64]) -> Result<i64, HostError> {
        (self.0[index as usize])(args, mem)
    }
}
