//! `referee`: the command line. Thin by design (ARCHITECTURE.md): parse arguments, call one
//! library function, print. Data goes to stdout, logs to stderr.

mod cli;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return cli::argument_error(&error),
    };
    cli::init_logging(cli.verbose);
    match cli.run() {
        Ok(code) => code,
        Err(err) => {
            // A closed stdout (`referee status | head`) is not a failure.
            if err.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(2)
        }
    }
}
