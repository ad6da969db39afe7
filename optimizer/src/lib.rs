//! toyvm's optimizer: weighted control-flow graphs from edge profiles,
//! IMPACT-style superblocks, value and call-target specialization, and
//! Cranelift code generation with exact side exits.
//!
//! Use this crate to turn profiles of `toyvm-vm` programs into native code
//! yourself (to study region formation, or to drive compilation from a
//! policy of your own). It decides nothing about when to compile: the
//! `toyvm` crate's runtime does that (when to plan, compile, install and
//! drop regions), and is what to use to simply run programs with the JIT.
//!
//! ```
//! use toyvm_optimizer::{CodeCache, ExitKind, SuperblockConfig, WeightedCfg, cfg, form_superblocks};
//! use toyvm_vm::{asm, interp};
//!
//! let program = asm::assemble(
//!     "
//!     .func main(n)
//!         li r1, 0            # acc
//!         li r2, 1            # i
//!     top:
//!         add r1, r1, r2
//!         loop r2, n, top     # i += 1; while i <= n
//!         ret r1
//!     .end
//!     ",
//! )?;
//! // Profile a run: edge tuples become the weighted CFG's arc counts.
//! let mut tuples = Vec::new();
//! let input = interp::Input { args: &[100], file: &[] };
//! interp::run_with_sink(&program, input, &mut Vec::new(), &mut tuples, &Default::default())?;
//! let wcfg = WeightedCfg::build(&program, 0, &cfg::edge_counts(&tuples))?;
//!
//! // The hottest superblock is the loop, which jumps back to its own head.
//! let regions = form_superblocks(&wcfg, &program.functions[0], &SuperblockConfig::default());
//! assert_eq!(
//!     regions[0].to_string(),
//!     "region f0:2
//!   block 2 weight=100
//!     2: add r1, r1, r2
//!     3: loop r2, r0, L2 -> head | exit 4
//! "
//! );
//!
//! // Compile it and run it on a register window, as the interpreter would
//! // on reaching offset 2 with n = 1000, acc = 0, i = 1.
//! let mut code = CodeCache::new()?;
//! let region = code.compile(&regions[0])?;
//! let mut regs = [0i64; 256];
//! regs[..3].copy_from_slice(&[1000, 0, 1]);
//! let mut counters = vec![0u64; region.counters_len()];
//! let mut mem = interp::Memory::from(Vec::new());
//! let exit = region.run(&mut regs, &mut mem, &mut counters);
//! assert_eq!((exit.kind, exit.resume), (ExitKind::Side, 4));
//! assert_eq!(regs[1], 500_500);
//! // One exit taken, and 1000 trips through the head.
//! assert_eq!(counters, [1, 1000]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The pieces, in the order the runtime uses them:
//! - [`cfg`](mod@cfg): basic blocks and the weighted CFG, with arc weights the
//!   profile cannot see recovered by flow conservation;
//! - [`superblock`]: trace selection and layout into [`Region`]s;
//! - [`specialize`]: guarded constants and call-target decisions;
//! - [`plan`]: all of the above from one interval's candidates;
//! - [`region`]: the region IR and its text form (tests are IR in, IR out);
//! - [`native`]: closed and bailing functions, compiled whole to native
//!   code that regions call directly ([`Step::Call`], [`Step::Dispatch`]),
//!   and the traps such code reports ([`NativeTrap`]);
//! - [`CodeCache`] / [`CompiledRegion`]: Cranelift code and running it
//!   ([`CompiledRegion::run_with`]), including whole closed or bailing
//!   functions as regions ([`CodeCache::compile_function`]).
//!
//! Unsafe code lives only in the private `jit` module: the transmute to the
//! region's function pointer, the call through it, and freeing code memory.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod cfg;
mod codegen;
mod error;
mod exit;
#[allow(unsafe_code)]
mod jit;
pub mod native;
pub mod plan;
pub mod region;
pub mod specialize;
pub mod superblock;
#[cfg(test)]
mod testing;

pub use cfg::{Cfg, EdgeCounts, WeightedCfg};
pub use error::{Error, Result};
pub use exit::{Exit, ExitKind, ExitReport, ExitSite};
pub use jit::stack;
pub use jit::{
    Called, CodeCache, CompiledRegion, DEFAULT_MAX_DEPTH, Fuel, HostCalls, Interpreter,
    NativesCompiled, RegionFn,
};
pub use native::{Native, NativeTrap, closed_functions, native_functions};
pub use plan::{Analysis, PlanConfig, Profile, hot_functions, plan_regions, plan_regions_at};
pub use region::{Region, Step, Target};
pub use specialize::{CallCandidate, CallSite, Specializations, SpecializeConfig, ValueCandidate};
pub use superblock::{SuperblockConfig, form_superblocks};
