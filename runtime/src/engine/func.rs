//! Function handles: a function of a module looked up by name once
//! ([`Func`], [`TypedFunc`]), then called any number of times on any
//! instance of that module without a name lookup, as wasmtime's `Func` and
//! `TypedFunc`.

use std::sync::Arc;

use toyvm_vm::Program;

use super::{Instance, Module};
use crate::{Error, Result};

/// A function of a [`Module`], found by name once ([`Module::get_func`],
/// [`Instance::get_func`]) and then called with [`Func::call`] on any
/// instance of that module: the call goes straight to the function's
/// index, and checks the argument count against the one the handle holds.
/// Cheap to copy; valid for instances of the module it came from (another
/// module's instance refuses it with [`Error::Usage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Func {
    index: u32,
    params: u8,
    /// The address of the module's program (shared by the module's clones
    /// and instances): which module the handle belongs to.
    program: usize,
}

/// A [`Func`] whose argument count, `N`, was checked once when it was
/// looked up ([`Module::get_typed_func`], [`Instance::get_typed_func`]):
/// [`TypedFunc::call`] takes exactly `N` arguments, so calling it with the
/// wrong count does not compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TypedFunc<const N: usize> {
    func: Func,
}

/// The address that names `program` in a handle.
fn program_id(program: &Arc<Program>) -> usize {
    Arc::as_ptr(program) as usize
}

impl Module {
    /// The function named `name`, as a handle to call on this module's
    /// instances ([`Error::NoSuchFunction`] if there is none).
    pub fn get_func(&self, name: &str) -> Result<Func> {
        let index = self
            .function(name)
            .ok_or_else(|| Error::NoSuchFunction(name.to_owned()))?;
        Ok(Func {
            index,
            params: self.program.functions[index as usize].params,
            program: program_id(&self.program),
        })
    }

    /// The function named `name`, checked to take `N` arguments
    /// ([`Error::Arity`] if it takes another number).
    pub fn get_typed_func<const N: usize>(&self, name: &str) -> Result<TypedFunc<N>> {
        let func = self.get_func(name)?;
        if func.params() != N {
            return Err(Error::Arity {
                function: name.to_owned(),
                expected: func.params(),
                given: N,
            });
        }
        Ok(TypedFunc { func })
    }
}

impl Instance {
    /// The function named `name` of this instance's module (see
    /// [`Module::get_func`]).
    pub fn get_func(&self, name: &str) -> Result<Func> {
        self.module().get_func(name)
    }

    /// The function named `name`, checked to take `N` arguments (see
    /// [`Module::get_typed_func`]).
    pub fn get_typed_func<const N: usize>(&self, name: &str) -> Result<TypedFunc<N>> {
        self.module().get_typed_func(name)
    }

    /// Whether `func` is a handle of this instance's module; otherwise a
    /// usage error.
    fn check_owner(&self, func: Func) -> Result<()> {
        let program = &self.module().program;
        if func.program == program_id(program) && (func.index as usize) < program.functions.len() {
            Ok(())
        } else {
            Err(Error::Usage(format!(
                "function handle #{} belongs to another module than this instance's",
                func.index
            )))
        }
    }
}

impl Func {
    /// Calls the function on `instance` with `args` (one per parameter:
    /// another count is [`Error::Arity`], before anything runs), and
    /// returns what it returns (or `halt`'s operand). A trap ends the
    /// call, not the instance.
    pub fn call(&self, instance: &mut Instance, args: &[i64]) -> Result<i64> {
        instance.check_owner(*self)?;
        super::check_arity(&instance.module().program, self.index, args.len())?;
        instance.run_call(self.index, args)
    }

    /// The number of arguments the function takes.
    pub fn params(&self) -> usize {
        self.params as usize
    }

    /// The function's index in the program's functions.
    pub fn index(&self) -> u32 {
        self.index
    }
}

impl<const N: usize> TypedFunc<N> {
    /// Calls the function on `instance` with its `N` arguments, and
    /// returns what it returns (or `halt`'s operand).
    pub fn call(&self, instance: &mut Instance, args: [i64; N]) -> Result<i64> {
        instance.check_owner(self.func)?;
        instance.run_call(self.func.index, &args)
    }

    /// The untyped handle.
    pub fn func(&self) -> Func {
        self.func
    }
}
