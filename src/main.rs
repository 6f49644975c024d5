use std::process::ExitCode;

use clap::Parser;

// kca's big inputs (manifests, quizzes) become many small nodes, strings and maps;
// mimalloc makes that allocation work about a quarter cheaper than glibc's malloc
// (whole-process CPU, `bench/scale.sh`, issue #11).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match kca::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(kca::app::parse_failed(e).code()),
    };
    ExitCode::from(kca::app::run(cli).code())
}
