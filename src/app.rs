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

/// A command line clap refused. Help and version print as clap prints them; an error
/// under `-o json|junit` (read from the raw arguments, as parsing failed) also leaves its
/// one document on stdout, so a CI step with a typo still gets something to parse.
pub fn parse_failed(err: clap::Error) -> Exit {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = err.print();
        return if err.use_stderr() {
            Exit::Usage
        } else {
            Exit::Success
        };
    }
    let _ = err.print();
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let output = settings::output_in_args(&args);
    if output != settings::OutputFormat::Text {
        let env = Env::from_process();
        let lang = settings::resolve_lang(None, &env);
        let printer = crate::ui::Printer::new(&Settings {
            output,
            lang,
            ..settings_from_defaults(&env)
        });
        let text = err.render().to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error:")
            .trim();
        printer.error(&crate::error::Error::usage(
            first.to_string(),
            "`kca --help` lists the commands and options",
        ));
    }
    Exit::Usage
}

fn settings_from_defaults(env: &Env) -> Settings {
    Settings {
        color: false,
        output: settings::OutputFormat::Text,
        lang: settings::resolve_lang(None, env),
        verbosity: 0,
        content_dir: settings::content_dir(None, env),
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
    crate::document::install(settings.output, settings.lang);
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

/// Whether a command has a JUnit rendering (one suite per lab, quiz or test file).
/// The others refuse `-o junit` up front, as a JUnit document with the error: a CI step
/// that asked for JUnit always gets JUnit.
pub fn has_junit(command: &Command) -> bool {
    use crate::cli::{lab::LabCommand, policy::PolicyCommand, quiz::QuizCommand};
    matches!(
        command,
        Command::Lab(LabCommand::Check(_))
            | Command::Quiz(QuizCommand::Grade(_) | QuizCommand::Run(_))
            | Command::Policy(PolicyCommand::Test(_))
            | Command::Grade(_)
    )
}

fn dispatch(ctx: &Ctx, command: Option<Command>) -> Result<Exit> {
    if ctx.settings.output == crate::settings::OutputFormat::Junit
        && command.as_ref().is_none_or(|c| !has_junit(c))
    {
        return Err(crate::error::Error::usage(
            crate::ui::tr(
                ctx.settings.lang,
                "このコマンドには JUnit 形式の出力がありません",
                "this command has no JUnit output",
            ),
            crate::ui::tr(
                ctx.settings.lang,
                "`-o json` を使います(JUnit は lab check、grade、quiz grade|run、policy test)",
                "use `-o json` (JUnit is offered by lab check, grade, quiz grade|run, policy test)",
            ),
        ));
    }
    let Some(command) = command else {
        return status(ctx);
    };
    match command {
        Command::Status => status(ctx),
        Command::Lesson(args) => crate::lesson::command::run(ctx, &args),
        Command::Report(args) => crate::report::run(ctx, &args.results, args.strict),
        Command::Grade(args) => crate::lab::submission::grade(ctx, &args),
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
