//! `kca completions bash|zsh|fish` and the hidden `kca __complete`: the shell scripts
//! (clap_complete's static script for commands and flags, plus a small hook) and the
//! dynamic values they ask kca for — lab ids, quiz ids, task ids, lessons and their
//! section anchors. The hook hands the whole command line to `kca __complete line`, which
//! reads it against the clap tree (what takes a value, which positional is being typed)
//! and prints the candidates one per line; nothing printed means "let the static script
//! answer". The shells stay thin, and the logic is tested here, in-process.

use std::path::{Path, PathBuf};

use clap::CommandFactory;

use crate::cli::{CompleteArgs, CompletionsArgs, Shell};
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;

/// What a value on the command line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Labs,
    Quizzes,
    Tasks,
    Lessons,
    Sections,
}

impl Kind {
    fn parse(word: &str) -> Option<Kind> {
        Some(match word {
            "labs" => Kind::Labs,
            "quizzes" => Kind::Quizzes,
            "tasks" => Kind::Tasks,
            "lessons" => Kind::Lessons,
            "sections" => Kind::Sections,
            _ => return None,
        })
    }
}

/// Where candidates come from: the content folder and the learner's progress (the lab
/// a task belongs to when none is named).
pub struct Source<'a> {
    pub content_dir: PathBuf,
    pub store: &'a crate::state::Store,
}

/// The candidates of `kind` starting with `prefix`. `context` is the lab (for tasks) or
/// the lesson (for sections) they belong to, when the command line names one.
pub fn candidates(
    src: &Source<'_>,
    kind: Kind,
    prefix: &str,
    context: Option<&str>,
) -> Vec<String> {
    let all = match kind {
        Kind::Labs => crate::lab::lifecycle::lab_ids_in(&src.content_dir),
        Kind::Quizzes => {
            let (quizzes, _) = crate::content::load_quizzes(&src.content_dir);
            quizzes.into_iter().map(|q| q.id).collect()
        }
        Kind::Tasks => {
            let lab = context.map(str::to_string).or_else(|| {
                crate::lab::progress::read(src.store)
                    .ok()
                    .and_then(|p| crate::lab::here::default_lab(&p))
            });
            lab.map(|id| task_ids(&src.content_dir, &id))
                .unwrap_or_default()
        }
        Kind::Lessons => lessons(&src.content_dir),
        Kind::Sections => context
            .and_then(|l| crate::lesson::parse_ref(l).ok())
            .map(|(module, _)| anchors(&src.content_dir, module))
            .unwrap_or_default(),
    };
    all.into_iter().filter(|c| c.starts_with(prefix)).collect()
}

fn task_ids(content: &Path, lab: &str) -> Vec<String> {
    match crate::content::load_file(&content.join("labs").join(lab).join("lab.yaml")) {
        Ok(crate::content::Document::Lab(l)) => l.tasks.into_iter().map(|t| t.id).collect(),
        _ => Vec::new(),
    }
}

/// Section anchors of a module, in the order of its Japanese lesson (then any only the
/// English one has).
fn anchors(content: &Path, module: i64) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (_, found) in crate::lesson::anchors(content, module) {
        for a in found.unwrap_or_default() {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// `N` for each module, then `N#anchor` for each of its sections (`kca lesson 1#x`).
fn lessons(content: &Path) -> Vec<String> {
    let modules = crate::lesson::modules(content);
    let mut out: Vec<String> = modules.iter().map(i64::to_string).collect();
    for m in modules {
        out.extend(anchors(content, m).into_iter().map(|a| format!("{m}#{a}")));
    }
    out
}

/// What the word under the cursor is, read from the words before it against the clap
/// tree: a value of `kind` (with the lab or lesson named on the line), or nothing kca
/// completes dynamically. `words` are the words after `kca`; the last one is being typed.
pub fn at_cursor(words: &[String]) -> Option<(Kind, Option<String>, Option<PathBuf>)> {
    let (cur, before) = words.split_last()?;
    if cur.starts_with('-') {
        return None;
    }
    let root = crate::cli::Cli::command();
    let globals: Vec<&clap::Arg> = root.get_arguments().collect();
    let mut cmd = &root;
    let mut positionals: Vec<String> = Vec::new();
    let mut named: Vec<(String, String)> = Vec::new();
    let mut pending: Option<String> = None;
    let mut only_values = false;
    for w in before {
        if let Some(id) = pending.take() {
            named.push((id, w.clone()));
            continue;
        }
        if !only_values && w == "--" {
            only_values = true;
            continue;
        }
        if !only_values && w.starts_with('-') && w.len() > 1 {
            let (flag, inline) = match w.split_once('=') {
                Some((f, v)) => (f, Some(v)),
                None => (w.as_str(), None),
            };
            let arg = cmd
                .get_arguments()
                .chain(globals.iter().copied())
                .find(|a| matches_flag(a, flag));
            if let Some(a) = arg.filter(|a| takes_value(a)) {
                match inline {
                    Some(v) => named.push((a.get_id().to_string(), v.to_string())),
                    None => pending = Some(a.get_id().to_string()),
                }
            }
            continue;
        }
        match cmd.find_subcommand(w) {
            Some(sub) if positionals.is_empty() => cmd = sub,
            _ => positionals.push(w.clone()),
        }
    }
    let content = named
        .iter()
        .find(|(id, _)| id == "content_dir")
        .map(|(_, v)| PathBuf::from(v));
    let value_of = |id: &str| {
        named
            .iter()
            .rev()
            .find(|(k, _)| k == id)
            .map(|(_, v)| v.clone())
    };
    let positional_id = |i: usize| -> Option<String> {
        let list: Vec<&clap::Arg> = cmd.get_positionals().collect();
        let a = list.get(i).or_else(|| {
            list.last()
                .filter(|a| a.get_num_args().is_some_and(|n| n.max_values() > 1))
        })?;
        Some(a.get_id().to_string())
    };
    let lab_on_line = || {
        positional_id(0)
            .filter(|id| id == "lab")
            .and_then(|_| positionals.first().cloned())
            .or_else(|| value_of("lab"))
    };
    let id = match pending {
        Some(id) => id,
        None => positional_id(positionals.len())?,
    };
    let kind = match (cmd.get_name(), id.as_str()) {
        (_, "lab" | "labs") => (Kind::Labs, None),
        (_, "quiz") => (Kind::Quizzes, None),
        (_, "task") => (Kind::Tasks, lab_on_line()),
        ("lesson", "lesson") => (Kind::Lessons, None),
        ("lesson", "section") => (Kind::Sections, positionals.first().cloned()),
        _ => return None,
    };
    Some((kind.0, kind.1, content))
}

fn matches_flag(a: &clap::Arg, flag: &str) -> bool {
    match flag.strip_prefix("--") {
        Some(long) => a.get_long() == Some(long),
        None => flag.len() == 2 && a.get_short().map(|c| c.to_string()).as_deref() == flag.get(1..),
    }
}

fn takes_value(a: &clap::Arg) -> bool {
    a.get_action().takes_values()
}

/// `kca __complete KIND [PREFIX] [CONTEXT]` or `kca __complete line -- WORDS…`.
pub fn complete(ctx: &Ctx, args: &CompleteArgs) -> Result<Exit> {
    let store = crate::state::Store::new(&ctx.settings.state_dir);
    let mut src = Source {
        content_dir: ctx.settings.content_dir.clone(),
        store: &store,
    };
    let (first, rest) = (&args.what, &args.rest);
    let found = if first == "line" {
        let words = &args.words;
        match at_cursor(words) {
            Some((kind, context, content)) => {
                if let Some(c) = content {
                    src.content_dir = c;
                }
                let prefix = words.last().map(String::as_str).unwrap_or("");
                candidates(&src, kind, prefix, context.as_deref())
            }
            None => Vec::new(),
        }
    } else {
        let kind = Kind::parse(first).ok_or_else(|| {
            Error::usage(
                crate::error::msg(
                    format!("`{first}` は補完できません"),
                    format!("cannot complete `{first}`"),
                ),
                crate::error::msg(
                    "labs・quizzes・tasks・lessons・sections・line のどれかを使います",
                    "use labs, quizzes, tasks, lessons, sections or line",
                ),
            )
        })?;
        let (context, prefix) = match kind {
            // `sections LESSON [PREFIX]`; the others `KIND [PREFIX] [LAB]`.
            Kind::Sections => (rest.first(), rest.get(1)),
            _ => (rest.get(1), rest.first()),
        };
        candidates(
            &src,
            kind,
            prefix.map_or("", String::as_str),
            context.map(String::as_str),
        )
    };
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&serde_json::json!({"candidates": found}));
    } else {
        for c in &found {
            ctx.printer.out(&crate::escape::escape(c));
        }
    }
    Ok(Exit::Success)
}

/// `kca completions SHELL`: the script on stdout (inside a JSON document under `-o json`).
pub fn completions(ctx: &Ctx, args: &CompletionsArgs) -> Result<Exit> {
    let text = script(args.shell);
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer
            .json(&serde_json::json!({"shell": shell_name(args.shell), "script": text}));
    } else {
        ctx.printer.document(&text);
    }
    Ok(Exit::Success)
}

fn shell_name(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => "bash",
        Shell::Zsh => "zsh",
        Shell::Fish => "fish",
    }
}

/// The completion script for `shell`: clap_complete's, with the hook that asks
/// `kca __complete line` first.
pub fn script(shell: Shell) -> String {
    let mut cmd = crate::cli::Cli::command();
    let mut buf = Vec::new();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut cmd, "kca", &mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    match shell {
        Shell::Bash => format!(
            "{}\n{BASH_HOOK}",
            text.replace("complete -F _kca ", "complete -F _kca_dynamic ")
                .replace(
                    "\nif [[ \"${BASH_VERSINFO[0]}\" -eq 4",
                    &format!("\n{BASH_FN}\nif [[ \"${{BASH_VERSINFO[0]}}\" -eq 4")
                )
        ),
        Shell::Zsh => {
            let dispatch = "if [ \"$funcstack[1]\" = \"_kca\" ]; then";
            let (body, _) = text.split_once(dispatch).unwrap_or((&text, ""));
            format!(
                "{}{ZSH_HOOK}",
                body.replacen("\n_kca() {", "\n_kca_static() {", 1)
            )
        }
        Shell::Fish => format!("{text}{FISH_HOOK}"),
    }
}

/// Asks kca for the word under the cursor; clap's `_kca` answers when kca prints nothing.
const BASH_FN: &str = r#"_kca_dynamic() {
    local cur="${COMP_WORDS[COMP_CWORD]}" found
    found="$("${COMP_WORDS[0]}" __complete line -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)"
    if [[ -n "$found" ]]; then
        local IFS=$'\n'
        COMPREPLY=( $(compgen -W "$found" -- "$cur") )
        return 0
    fi
    _kca "$@"
}
"#;

const BASH_HOOK: &str =
    "# kca: lab, quiz and task ids and lesson anchors come from `kca __complete line`.\n";

const ZSH_HOOK: &str = r#"_kca() {
    local -a found
    found=("${(@f)$("${words[1]}" __complete line -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    if [[ -n "${found[1]}" ]]; then
        compadd -- "${found[@]}"
        return 0
    fi
    _kca_static "$@"
}

if [ "$funcstack[1]" = "_kca" ]; then
    _kca "$@"
else
    compdef _kca kca
fi
"#;

const FISH_HOOK: &str = r#"
# kca: lab, quiz and task ids and lesson anchors come from `kca __complete line`.
function __kca_dynamic
    set -l cur (commandline -ct)
    set -l words (commandline -opc) "$cur"
    $words[1] __complete line -- $words[2..-1] 2>/dev/null
end
function __kca_has_dynamic
    test (count (__kca_dynamic)) -gt 0
end
complete -c kca -f -n __kca_has_dynamic -a '(__kca_dynamic)'
for opt in task lab section
    complete -c kca -l $opt -r -f -n __kca_has_dynamic -a '(__kca_dynamic)'
end
"#;

#[cfg(test)]
#[path = "completions_tests.rs"]
mod tests;
