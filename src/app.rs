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
        lang: settings::announce(settings::resolve_lang(g.lang, env)),
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
    crate::document::install(settings.output, settings.lang);
    let mut ctx = Ctx::new(settings);
    ctx.printer = ctx
        .printer
        .clone()
        .with_stderr_color(err_color)
        .with_err_wrap(std::io::stderr().is_terminal())
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
        Command::Report(args) => crate::report::run(ctx, &args),
        Command::Grade(args) => crate::lab::submission::grade(ctx, &args),
        Command::Validate(args) => crate::validate::run(ctx, &args),
        Command::Quiz(cmd) => crate::quiz::command::run(ctx, cmd),
        Command::Lab(cmd) => crate::lab::command::run(ctx, cmd),
        Command::Cluster(cmd) => crate::cluster::run(ctx, cmd),
        Command::Auth(cmd) => crate::offline::rbac::command::run(ctx, cmd),
        Command::Policy(cmd) => crate::offline::kyverno::command::run(ctx, cmd),
        Command::Jp(cmd) => crate::jp::run(ctx, cmd),
        Command::Schema(args) => crate::schema::command(ctx, args.kind),
        Command::Completions(args) => crate::completions::completions(ctx, &args),
        Command::Complete(args) => crate::completions::complete(ctx, &args),
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

/// Parses the command line. clap's own words come out in the learner's language: a
/// usage error is rendered as kca renders any error (`エラー:` … `ヒント:`, a JSON
/// object under `-o json`, exit 2), and help keeps clap's layout with its headings
/// localised. `Err` carries the exit code when the process should end there.
pub fn parse<I, T>(args: I) -> std::result::Result<Cli, Exit>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser as _;
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    match Cli::try_parse_from(&args) {
        Ok(cli) => Ok(cli),
        Err(e) => Err(clap_error(&e, &early_settings(&args))),
    }
}

/// What the global flags say before clap has parsed them (`--lang`, `--output`,
/// `--color`, each as `--flag v` or `--flag=v`; `-o v`, `-ov`), for rendering clap's
/// errors and help.
fn early_settings(args: &[std::ffi::OsString]) -> Settings {
    let env = Env::from_process();
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let value = |long: &str, short: Option<&str>| -> Option<String> {
        let mut found = None;
        for (i, w) in words.iter().enumerate() {
            if w == "--" {
                break;
            }
            if w == long || short.is_some_and(|s| w == s) {
                found = words.get(i + 1).cloned();
            } else if let Some(v) = w.strip_prefix(&format!("{long}=")) {
                found = Some(v.to_string());
            } else if let Some(v) = short
                .and_then(|s| w.strip_prefix(s))
                .filter(|v| !v.is_empty())
            {
                found = Some(v.trim_start_matches('=').to_string());
            }
        }
        found
    };
    let lang = match value("--lang", None).as_deref() {
        Some("en") => Some(crate::settings::Lang::En),
        Some("ja") => Some(crate::settings::Lang::Ja),
        _ => None,
    };
    let output = match value("--output", Some("-o")).as_deref() {
        Some("json") => crate::settings::OutputFormat::Json,
        Some("junit") => crate::settings::OutputFormat::Junit,
        _ => crate::settings::OutputFormat::Text,
    };
    let color = match value("--color", None).as_deref() {
        Some("always") => settings::ColorChoice::Always,
        Some("never") => settings::ColorChoice::Never,
        _ => settings::ColorChoice::Auto,
    };
    Settings {
        color: settings::resolve_color(color, &env, std::io::stderr().is_terminal()),
        output,
        lang: settings::resolve_lang(lang, &env),
        verbosity: 0,
        content_dir: std::path::PathBuf::new(),
        state_dir: std::path::PathBuf::new(),
        home: std::path::PathBuf::new(),
    }
}

/// Renders a clap error or help request and returns the exit code.
fn clap_error(e: &clap::Error, s: &Settings) -> Exit {
    use clap::error::ErrorKind;
    // Wrapped to the terminal as every other error is (a long usage line broke `--help`
    // over two lines at column 80).
    let terminal =
        terminal_size::terminal_size_of(std::io::stderr()).map(|(w, _)| usize::from(w.0));
    let printer = crate::ui::Printer::new(s)
        .with_stderr_color(s.color)
        .with_err_wrap(std::io::stderr().is_terminal())
        .with_width(settings::resolve_width(terminal, &Env::from_process()));
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let text = if s.color {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            printer.out(localise_help(s.lang, &text).trim_end());
            Exit::Success
        }
        _ => {
            let (message, hint) = usage_words(s.lang, e);
            printer.error(&crate::error::Error::usage(message, hint));
            Exit::Usage
        }
    }
}

/// clap's help headings and its own option texts in `lang`; the rest as written.
pub fn localise_help(lang: crate::settings::Lang, text: &str) -> String {
    if lang == crate::settings::Lang::En {
        return text.to_string();
    }
    const HEADINGS: [(&str, &str); 11] = [
        ("Usage:", "使い方:"),
        ("Commands:", "コマンド:"),
        ("Arguments:", "引数:"),
        ("Global options:", "共通オプション:"),
        ("Options:", "オプション:"),
        ("Examples:", "例:"),
        ("Exit codes:", "終了コード:"),
        (
            "Print help (see more with '--help')",
            "ヘルプを表示 ('--help' で詳しく)",
        ),
        (
            "Print help (see a summary with '-h')",
            "ヘルプを表示 ('-h' で要約)",
        ),
        ("Print help", "ヘルプを表示"),
        ("Print version", "バージョンを表示"),
    ];
    let mut out = text.to_string();
    for (en, ja) in HEADINGS {
        out = out.replace(en, ja);
    }
    out.replace(
        "Print this message or the help of the given subcommand(s)",
        "このメッセージ、または指定したサブコマンドのヘルプを表示",
    )
}

/// A clap usage error as a message and a hint, in `lang`, naming what was typed and
/// what clap suggests.
fn usage_words(lang: crate::settings::Lang, e: &clap::Error) -> (String, String) {
    use crate::ui::tr_s;
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let get = |k: ContextKind| -> Option<String> {
        match e.get(k)? {
            ContextValue::String(s) => Some(s.clone()),
            ContextValue::Strings(v) => Some(v.join(", ")),
            ContextValue::StyledStr(s) => Some(s.to_string()),
            ContextValue::StyledStrs(v) => Some(
                v.iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            ContextValue::Number(n) => Some(n.to_string()),
            _ => None,
        }
    };
    let esc = |s: String| crate::escape::escape(&s).into_owned();
    let arg = get(ContextKind::InvalidArg).map(esc).unwrap_or_default();
    let sub = get(ContextKind::InvalidSubcommand)
        .map(esc)
        .unwrap_or_default();
    let value = get(ContextKind::InvalidValue).map(esc).unwrap_or_default();
    let message = match e.kind() {
        ErrorKind::InvalidSubcommand => tr_s(
            lang,
            format!("サブコマンド '{sub}' はありません"),
            format!("unrecognized subcommand '{sub}'"),
        ),
        ErrorKind::UnknownArgument => tr_s(
            lang,
            format!("引数 '{arg}' は使えません"),
            format!("unexpected argument '{arg}'"),
        ),
        // clap says a value left out (`--task` at the end) is an invalid empty one.
        ErrorKind::InvalidValue if value.is_empty() => tr_s(
            lang,
            format!("{arg} に値がありません"),
            format!("a value is required for '{arg}' but none was supplied"),
        ),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => tr_s(
            lang,
            format!("'{value}' は {arg} の値として使えません"),
            format!("invalid value '{value}' for '{arg}'"),
        ),
        ErrorKind::MissingRequiredArgument => tr_s(
            lang,
            format!("必須の引数がありません: {arg}"),
            format!("the following required arguments were not provided: {arg}"),
        ),
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => tr_s(
            lang,
            "サブコマンドを指定してください".to_string(),
            "a subcommand is required".to_string(),
        ),
        ErrorKind::ArgumentConflict => {
            let other = get(ContextKind::PriorArg).map(esc).unwrap_or_default();
            tr_s(
                lang,
                format!("{arg} と {other} は一緒に使えません"),
                format!("the argument '{arg}' cannot be used with '{other}'"),
            )
        }
        ErrorKind::TooManyValues | ErrorKind::WrongNumberOfValues | ErrorKind::TooFewValues => {
            tr_s(
                lang,
                format!("{arg} の値の数が合いません"),
                format!("wrong number of values for '{arg}'"),
            )
        }
        _ => {
            // Kinds without context (invalid UTF-8, …): clap's own line, escaped.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            esc(first.trim_start_matches("error: ").to_string())
        }
    };
    let suggested = get(ContextKind::SuggestedSubcommand)
        .or_else(|| get(ContextKind::SuggestedArg))
        .map(esc);
    let valid = get(ContextKind::ValidValue)
        .filter(|v| !v.is_empty())
        .map(esc);
    let usage = get(ContextKind::Usage)
        .map(|u| u.trim_start_matches("Usage: ").to_string())
        .map(esc);
    let mut hint = match (suggested, valid) {
        (Some(s), _) => tr_s(
            lang,
            format!("'{s}' のことですか? "),
            format!("did you mean '{s}'? "),
        ),
        (None, Some(v)) => tr_s(
            lang,
            format!("使える値: {v}。"),
            format!("possible values: {v}. "),
        ),
        _ => String::new(),
    };
    if let Some(u) = usage {
        hint.push_str(&tr_s(
            lang,
            format!("使い方: {u} (詳しくは --help)"),
            format!("usage: {u} (more with --help)"),
        ));
    } else {
        hint.push_str(&tr_s(
            lang,
            "詳しくは --help".into(),
            "more with --help".into(),
        ));
    }
    (message, hint)
}
