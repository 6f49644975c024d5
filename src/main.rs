use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kca::cli::Cli::parse();
    ExitCode::from(kca::app::run(cli).code())
}
