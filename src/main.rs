//! The `aci` binary: parse the command line, dispatch to its command ([`commands`]), and map
//! failures to exit codes (0 done, 1 run-level failure, 2 usage, 3 an evaluation regression).

mod cli;
mod commands;

use std::process::ExitCode;

use aci::text::escape_controls_in_lines;
use clap::Parser;
use cli::{Cli, Command, ImagesCommand};
use commands::Failure;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    // Whatever ends the work, a panic too, every container this process started is removed
    // before it exits.
    let result = match aci::sandbox::guard::run_guarded(runtime, dispatch(cli)) {
        Ok(result) => result,
        Err(panicked) => {
            eprintln!(
                "error: aci panicked ({}); removed {} container(s) it had started",
                panicked.message, panicked.removed
            );
            return ExitCode::from(101);
        }
    };
    match result {
        Ok(code) => code,
        Err(failure) => {
            // Messages quote paths, ids, image names and servers' answers: every control
            // character is written out, each line of a message kept a line.
            eprintln!("error: {}", escape_controls_in_lines(&failure.message));
            if let Some(hint) = failure.hint {
                eprintln!("hint: {}", escape_controls_in_lines(&hint));
            }
            ExitCode::from(1)
        }
    }
}

async fn dispatch(cli: Cli) -> Result<ExitCode, Failure> {
    match cli.command {
        Command::Images(ImagesCommand::Build {
            lang,
            force,
            debian,
        }) => commands::images::build(&lang, force, debian).await,
        Command::Images(ImagesCommand::Push(args)) => commands::images::push(args).await,
        Command::Images(ImagesCommand::Prune {
            run_id,
            all,
            pulled,
        }) => commands::images::prune(run_id, all, pulled).await,
        Command::Run(args) => commands::run::run(args).await,
        Command::Eval(args) => commands::eval::eval(args).await,
        Command::Validate(args) => commands::validate::validate(args).await,
        Command::Batch(args) => commands::batch::batch(args).await,
        Command::Ablate(args) => commands::ablate::ablate(args).await,
        Command::Shell(args) => commands::shell::shell(args).await,
        Command::Inspect(args) => commands::inspect::inspect(args).await,
    }
}
