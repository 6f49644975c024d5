use std::process::ExitCode;

// kca's big inputs (manifests, quizzes) become many small nodes, strings and maps;
// mimalloc makes that allocation work about a quarter cheaper than glibc's malloc
// (whole-process CPU, `bench/scale.sh`, issue #11).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match kca::app::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(exit) => return ExitCode::from(exit.code()),
    };
    ExitCode::from(kca::app::run(cli).code())
}
