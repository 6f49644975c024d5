//! Runs a parsed command line: resolves settings once, dispatches, and returns the exit
//! code. Errors are rendered here through `ui`.

use std::io::IsTerminal;

use crate::cli::{Cli, Command};
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit::Exit;
use crate::settings::{self, Env, Settings};

pub fn settings_from(cli: &Cli, env: &Env) -> Settings {
    let g = &cli.global;
    Settings {
        color: settings::resolve_color(g.color, env, std::io::stdout().is_terminal()),
        output: g.output,
        lang: settings::resolve_lang(g.lang, env),
        verbosity: if g.quiet { -1 } else { g.verbose.min(3) as i8 },
        content_dir: settings::content_dir(g.content_dir.as_deref(), env),
        state_dir: settings::state_dir(env),
        home: env.home.clone().unwrap_or_else(|| "/root".into()),
    }
}

/// Runs `cli` and renders any error; the returned code is the process's exit code.
pub fn run(cli: Cli) -> Exit {
    let env = Env::from_process();
    let settings = settings_from(&cli, &env);
    let terminal = terminal_size::terminal_size_of(std::io::stdout())
        .or_else(|| terminal_size::terminal_size_of(std::io::stderr()))
        .map(|(w, _)| usize::from(w.0));
    let err_color =
        settings::resolve_color(cli.global.color, &env, std::io::stderr().is_terminal());
    let mut ctx = Ctx::new(settings);
    ctx.printer = ctx
        .printer
        .clone()
        .with_stderr_color(err_color)
        .with_tty(std::io::stdout().is_terminal())
        .with_pager(env.pager.clone())
        .with_width(settings::resolve_width(terminal, &env));
    match dispatch(&ctx, cli.command) {
        Ok(exit) => exit,
        Err(err) => {
            ctx.printer.error(&err);
            err.exit()
        }
    }
}

fn dispatch(ctx: &Ctx, command: Option<Command>) -> Result<Exit> {
    let Some(command) = command else {
        return status(ctx);
    };
    match command {
        Command::Status => status(ctx),
        Command::Lesson(args) => crate::lesson::command::run(ctx, &args),
        Command::Report(args) => crate::report::run(ctx, &args.results),
        Command::Validate(args) => crate::validate::run(ctx, &args),
        Command::Quiz(cmd) => crate::quiz::command::run(ctx, cmd),
        Command::Lab(cmd) => crate::lab::command::run(ctx, cmd),
        Command::Cluster(cmd) => crate::cluster::run(ctx, cmd),
        Command::Auth(cmd) => crate::offline::rbac::command::run(ctx, cmd),
        Command::Policy(cmd) => crate::offline::kyverno::command::run(ctx, cmd),
        Command::Jp(cmd) => crate::jp::run(ctx, cmd),
        Command::Values(crate::cli::values::ValuesCommand::Render(args)) => {
            crate::helm::run(ctx, &args.chart, &args.values)
        }
    }
}

fn status(ctx: &Ctx) -> Result<Exit> {
    let store = crate::state::Store::new(&ctx.settings.state_dir);
    let r = crate::course::status(ctx, &store);
    for w in store.take_warnings() {
        ctx.printer.warn(&w);
    }
    r
}
