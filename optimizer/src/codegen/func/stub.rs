//! The entry stub that runs a whole native function as a region.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, InstBuilder, MemFlagsData, types};
use cranelift_codegen::isa::TargetIsa;
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use toyvm_vm::{Pc, Program};

use super::{DeclareCallee, codegen_error};
use crate::Result;
use crate::codegen::Lowered;
use crate::exit::{Exit, ExitKind, ExitSite};
use crate::native::{self, ctx_offset};

/// The entry stub of a whole-function region (see
/// [`crate::CodeCache::compile_function`]): a region at offset 0 of `fidx`
/// that calls the native function in the frame the interpreter already
/// entered (so at the region's `depth`, without a depth check), stores the
/// value into `ret_reg` and leaves with an `Interpret` exit at `ret_pc`, a
/// `ret ret_reg` of the function: the interpreter then returns the value.
/// A trap leaves through a `Trap` exit; a bail (a bailing function that
/// needs the interpreter, see [`crate::native`]) through an `Interpret`
/// exit at offset 0 with the fuel it had, so that the interpreter runs the
/// function from its start (so does a stack pointer at the stack limit).
/// Exit sites: `[Interpret ret_pc, Trap 0, Interpret 0]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lower_stub(
    program: &Program,
    fidx: u32,
    ret_pc: u32,
    ret_reg: u8,
    isa: &dyn TargetIsa,
    fctx: &mut FunctionBuilderContext,
    declare: &mut DeclareCallee<'_>,
    metering: bool,
) -> Result<Lowered> {
    let f = &program.functions[fidx as usize];
    let mut func = ir::Function::with_name_signature(
        ir::UserFuncName::default(),
        crate::codegen::signature(isa),
    );
    let native = declare(fidx, &mut func);
    let exits = vec![
        ExitSite {
            kind: ExitKind::Interpret,
            resume: ret_pc,
            report: None,
        },
        ExitSite {
            kind: ExitKind::Trap,
            resume: 0,
            report: None,
        },
        ExitSite {
            kind: ExitKind::Interpret,
            resume: 0,
            report: None,
        },
    ];
    {
        let mut b = FunctionBuilder::new(&mut func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let p = b.block_params(entry).to_vec();
        let (regs, counters, ctx, depth) = (p[0], p[3], p[4], p[5]);
        let flags = MemFlagsData::trusted();
        let mut args = vec![ctx, depth];
        for r in 0..f.params as i32 {
            args.push(b.ins().load(types::I64, flags, regs, 8 * r));
        }
        // A bail hands the whole call back with the fuel it started with.
        let fuel = metering.then(|| b.ins().load(types::I64, flags, ctx, ctx_offset::FUEL));
        let ok = b.create_block();
        let unwound = b.create_block();
        let trap = b.create_block();
        let bail = b.create_block();
        for blk in [unwound, trap, bail] {
            b.set_cold_block(blk);
        }
        // At the stack limit the interpreter runs the function, as after a
        // bail (see `crate::native`).
        let room = super::stack_room(&mut b, ctx);
        let go = b.create_block();
        b.ins().brif(room, go, &[], bail, &[]);
        b.switch_to_block(go);
        let call = b.ins().call(native, &args);
        let (value, trapped) = {
            let r = b.inst_results(call);
            (r[0], r[1])
        };
        b.ins().brif(trapped, unwound, &[], ok, &[]);
        b.switch_to_block(unwound);
        let kind = b.ins().load(types::I64, flags, ctx, ctx_offset::TRAP_KIND);
        let bailed = b
            .ins()
            .icmp_imm_s(IntCC::Equal, kind, native::TRAP_BAIL as i64);
        b.ins().brif(bailed, bail, &[], trap, &[]);
        for (blk, site) in [(ok, 0usize), (trap, 1), (bail, 2)] {
            b.switch_to_block(blk);
            if site == 2 {
                let none = b.ins().iconst(types::I64, native::TRAP_NONE as i64);
                b.ins().store(flags, none, ctx, ctx_offset::TRAP_KIND);
                if let Some(left) = fuel {
                    b.ins().store(flags, left, ctx, ctx_offset::FUEL);
                }
            }
            if site == 0 {
                b.ins().store(flags, value, regs, 8 * ret_reg as i32);
                if metering {
                    // The native body charged the `ret` that returned; the
                    // interpreter runs `ret_pc`'s and charges it again.
                    let left = b.ins().load(types::I64, flags, ctx, ctx_offset::FUEL);
                    let left = b.ins().iadd_imm_s(left, 1);
                    b.ins().store(flags, left, ctx, ctx_offset::FUEL);
                }
            }
            let off = 8 * site as i32;
            let n = b.ins().load(types::I64, flags, counters, off);
            let n = b.ins().iadd_imm_s(n, 1);
            b.ins().store(flags, n, counters, off);
            let e = exits[site];
            let code = Exit {
                kind: e.kind,
                resume: e.resume,
            }
            .encode_at(site);
            let code = b.ins().iconst(types::I64, code as i64);
            b.ins().return_(&[code]);
        }
        b.seal_all_blocks();
        b.finalize(isa.frontend_config());
    }
    codegen_error(&func, isa, format!("{} (whole function)", Pc::new(fidx, 0)))?;
    Ok(Lowered { func, exits })
}
