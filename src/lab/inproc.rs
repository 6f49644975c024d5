//! kca's own graders, run by a lab's `command` checks (`run: [kca, …, policy, grader, …]`),
//! in this process instead of a new one: the same argument parsing (clap), the same
//! settings a child would resolve (its `--color`/`--lang`/`-q`/`-v`, `KCA_LANG` from the
//! check, stdout and stderr not terminals), the workspace as working directory and the
//! check's environment for the programs the grader starts (`gates::Place`), stdout and
//! stderr captured and capped as `exec` caps a program's, and the exit code it would end
//! with. A start-up saved per check: a variant of kca-gates runs eleven of them.
//!
//! Anything else stays a process: other commands, a command line clap refuses (its
//! rendering is the binary's), `-o json|junit` (one document per process), a check that
//! sets variables of its own (kca might read them). The learner's own scripts always run
//! as programs, and so does every `kca` they call.

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use super::check::Program;
use crate::cli::policy::{GraderCommand, PolicyCommand};
use crate::cli::{Cli, Command};
use crate::exec::{Captured, End, Finished};
use crate::settings::{self, Env, OutputFormat, Settings};

/// The grader a check's program names, when it can run in this process.
fn grader(prog: &Program) -> Option<(Cli, GraderCommand)> {
    if prog.own_env || prog.argv.first().map(String::as_str) != Some("kca") {
        return None;
    }
    use clap::Parser as _;
    let mut cli = Cli::try_parse_from(&prog.argv).ok()?;
    if cli.global.output != OutputFormat::Text {
        return None;
    }
    match cli.command.take()? {
        Command::Policy(PolicyCommand::Grader(g)) => Some((cli, g)),
        _ => None,
    }
}

/// Runs the check's program here when it is one of kca's graders (`None`: start it).
pub(super) fn run(prog: &Program, timeout: Duration) -> Option<Finished> {
    let (cli, cmd) = grader(prog)?;
    let env = child_env(prog);
    let g = &cli.global;
    // What the child would resolve: pipes, not terminals, on both streams.
    let settings = Settings {
        color: settings::resolve_color(g.color, &env, false),
        output: g.output,
        lang: settings::resolve_lang(g.lang, &env),
        verbosity: if g.quiet { -1 } else { g.verbose.min(3) as i8 },
        content_dir: settings::content_dir(g.content_dir.as_deref(), &env),
        state_dir: settings::state_dir(&env),
        home: env.home.clone().unwrap_or_else(|| "/root".into()),
    };
    let (printer, captured) = crate::ui::Printer::buffered(&settings);
    let printer = printer
        .with_stderr_color(settings.color)
        .with_width(settings::resolve_width(None, &env));
    let ctx = crate::ctx::Ctx { settings, printer };
    let place = super::gates::Place {
        cwd: prog.cwd.clone(),
        env: prog.env.clone(),
    };
    let start = Instant::now();
    let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        super::gates::run_in(&ctx, cmd, &place)
    })) {
        Ok(Ok(exit)) => i32::from(exit.code()),
        Ok(Err(err)) => {
            ctx.printer.error(&err);
            i32::from(err.exit().code())
        }
        // As a process that panicked: Rust's exit code 101.
        Err(_) => {
            ctx.printer.say_err("kca panicked while grading");
            101
        }
    };
    let end = if start.elapsed() > timeout {
        End::TimedOut
    } else {
        End::Exited(std::process::ExitStatus::from_raw(code << 8))
    };
    Some(Finished {
        end,
        stdout: capped(captured.stdout()),
        stderr: capped(captured.stderr()),
    })
}

/// The environment the child would read: kca's own, with what the check adds
/// (`KCA_LANG` first among the language variables) and the workspace as working directory.
fn child_env(prog: &Program) -> Env {
    let mut env = Env::from_process();
    if let Some((_, lang)) = prog.env.iter().find(|(k, _)| k == "KCA_LANG") {
        env.lang = Some(lang.to_string_lossy().into_owned());
    }
    env.cwd = Some(prog.cwd.clone());
    env
}

/// A stream as `exec` keeps a program's: the first `DEFAULT_CAP` bytes, the rest counted.
fn capped(text: String) -> Captured {
    let mut bytes = text.into_bytes();
    let cap = crate::exec::DEFAULT_CAP;
    let dropped = bytes.len().saturating_sub(cap) as u64;
    bytes.truncate(cap);
    Captured { bytes, dropped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog(argv: &[&str], cwd: &std::path::Path) -> Program {
        Program {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: cwd.to_path_buf(),
            env: vec![("KCA_LANG".into(), "en".into())],
            own_env: false,
        }
    }

    #[test]
    fn only_kca_graders_in_text_run_here() {
        let dir = tempfile::tempdir().unwrap();
        let here = |argv: &[&str]| grader(&prog(argv, dir.path())).is_some();
        assert!(here(&[
            "kca", "--color", "never", "policy", "grader", "gate", "pass", "prod"
        ]));
        assert!(!here(&[
            "kca",
            "policy",
            "apply",
            "p.yaml",
            "--resource",
            "r.yaml"
        ]));
        assert!(!here(&[
            "kca", "-o", "json", "policy", "grader", "gate", "pass", "prod"
        ]));
        assert!(!here(&["kca", "policy", "grader", "nonsense"]));
        assert!(!here(&["bash", "ci/gate.sh"]));
        let mut own = prog(
            &["kca", "policy", "grader", "gate", "pass", "prod"],
            dir.path(),
        );
        own.own_env = true;
        assert!(grader(&own).is_none());
    }

    /// The same exit code, stdout and language as `kca policy grader selects` run as a
    /// program in the workspace.
    #[test]
    fn a_grader_reads_the_workspace_and_speaks_the_checks_language() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("svc.yaml"),
            "kind: Service\nmetadata: {name: s}\nspec: {selector: {app: a}}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("w.yaml"),
            "kind: Deployment\nmetadata: {name: d}\nspec: {template: {metadata: {labels: {app: a}}}}\n",
        )
        .unwrap();
        let argv = [
            "kca",
            "--color",
            "never",
            "policy",
            "grader",
            "selects",
            "--services",
            "svc.yaml",
            "--workloads",
            "w.yaml",
            "--want",
        ];
        let run_with = |want: &str, lang: &str| {
            let mut p = prog(&[&argv[..], &[want]].concat(), dir.path());
            p.env = vec![("KCA_LANG".into(), lang.into())];
            run(&p, Duration::from_secs(60)).unwrap()
        };
        let ok = run_with("s=Deployment/d", "en");
        assert_eq!(ok.code(), Some(0));
        assert_eq!(
            ok.stdout.text(),
            "each Service selects the Pods of its own workload only\n"
        );
        let bad = run_with("s=Deployment/other", "ja");
        assert_eq!(bad.code(), Some(1));
        assert!(
            bad.stdout
                .text()
                .ends_with("Service は1つのワークロードの Pod だけを選ぶべきです\n"),
            "{}",
            bad.stdout.text()
        );
    }

    #[test]
    fn output_beyond_the_cap_is_counted_as_a_program_s_is() {
        let c = capped("x".repeat(crate::exec::DEFAULT_CAP + 5));
        assert_eq!(c.bytes.len(), crate::exec::DEFAULT_CAP);
        assert_eq!(c.dropped, 5);
    }
}
