//! The `toyvm` command line.
//!
//! Every command returns its exit status or a [`status::Failure`] (the
//! status of its class and one line); `main` prints the line and exits.
//! The statuses are documented in [`status::TABLE`] (`toyvm --help`).

mod args;
mod commands;
mod import;
mod inputs;
mod labargs;
mod run;
mod runflags;
mod runstats;
mod status;
mod streams;
mod wasm;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use status::{Failure, Status};

fn main() -> ExitCode {
    // A panic is a bug: exit status 5 with its message, never 101 or an
    // abort's signal.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        streams::note("toyvm: internal error (a bug in toyvm); please report it\n");
        std::process::exit(Status::Internal.code().into());
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e),
    };
    match dispatch(cli.command) {
        Ok(status) => ExitCode::from(status),
        Err(f) => {
            if !f.msg.is_empty() {
                // Nothing more can be done when standard error is unwritable.
                streams::note(&format!("toyvm: {}\n", f.msg));
            }
            ExitCode::from(f.status.code())
        }
    }
}

/// `--help` and `--version` print to standard output and exit 0 (3 when
/// that write fails, a closed pipe included); anything else clap refuses
/// is a usage error (2).
fn clap_exit(e: &clap::Error) -> ExitCode {
    let printed = e.print();
    if e.use_stderr() {
        return ExitCode::from(Status::Usage.code());
    }
    // clap writes without flushing; an error may wait for the flush.
    let flushed = printed.and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
    match flushed {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let f = Failure::write("standard output", &e);
            streams::note(&format!("toyvm: {}\n", f.msg));
            ExitCode::from(f.status.code())
        }
    }
}

fn dispatch(cmd: Command) -> Result<u8, Failure> {
    match cmd {
        Command::Run(a) => run::run(a),
        Command::Asm { file, output } => commands::asm(&file, &output),
        Command::Dis { file, output } => commands::dis(&file, output),
        Command::Profile {
            trace,
            profiles,
            json,
            top,
        } => commands::profile(&trace, &profiles, json, top),
        Command::Verify {
            file,
            args,
            profile,
            reference,
            input,
            margin,
            tolerance,
            quorum,
            json,
            jit,
        } => commands::verify(commands::VerifyArgs {
            file,
            args,
            profile,
            reference,
            input,
            given: toyvm_lab::conformance::GivenTolerances {
                margin,
                tolerance,
                quorum,
            },
            json,
            jit,
        }),
        Command::Compare(args) => Ok(toyvm_lab::compare::run(&args.into())?),
        Command::Synth(args) => Ok(toyvm_lab::synth::run(&args.into())?),
        Command::Reproduce(args) => Ok(toyvm_lab::reproduce::run(&args.into())?),
        Command::Trace(args) => import::run(&args),
    }
}
