//! Check verdicts and the target-independent check kinds (`file`, `command`): what a check
//! found, as a result rather than an error. Reads the workspace and runs local programs;
//! never talks to a cluster (that is `lab::live`) and never prints.

use std::path::Path;
use std::process::Command;

use serde::Serialize;
use serde_json::Value;

pub use super::detail::{By, Change, Detail, Diff, Probe, Ran};
use super::equiv::semantic_match as partial_match;
use super::tree::short;
pub use super::tree::{inverse_patch, merge_patch};
use crate::content::Text;
use crate::content::lab::{Check, ExitWant, Lab, Spec, Task};

/// How a check ended. `Error` is the environment's fault (cluster down, timeout), never
/// the learner's; `Skipped` means the target cannot evaluate the check, with the reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Error,
    Skipped,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Error => "ERROR",
            Verdict::Skipped => "SKIP",
        }
    }
}

/// A verdict and what was found (typed: `lab::detail` says it in the learner's language).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub detail: Detail,
}

impl Outcome {
    pub fn pass(detail: Detail) -> Self {
        Outcome {
            verdict: Verdict::Pass,
            detail,
        }
    }
    pub fn fail(detail: Detail) -> Self {
        Outcome {
            verdict: Verdict::Fail,
            detail,
        }
    }
    pub fn error(detail: Detail) -> Self {
        Outcome {
            verdict: Verdict::Error,
            detail,
        }
    }
    pub fn skipped(detail: Detail) -> Self {
        Outcome {
            verdict: Verdict::Skipped,
            detail,
        }
    }
    /// A check handed to the wrong evaluator (a bug in kca, never the learner's).
    pub fn internal(what: &'static str) -> Self {
        Outcome::error(Detail::Internal { what })
    }
}

/// One graded check, ready for a report.
#[derive(Debug, Clone, Serialize)]
pub struct CheckResult {
    pub task: String,
    pub id: String,
    pub kind: &'static str,
    pub verdict: Verdict,
    pub points: u32,
    pub earned: u32,
    pub detail: Detail,
    #[serde(rename = "detailKind")]
    /// The detail's kind (`lab::detail::Detail::kind`), for tools reading the JSON.
    pub detail_kind: &'static str,
    /// The lab's learner-facing feedback for this verdict, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<Text>,
    pub seconds: f64,
}

impl CheckResult {
    pub fn new(task: &Task, check: &Check, outcome: Outcome, seconds: f64) -> Self {
        let feedback = match outcome.verdict {
            Verdict::Pass => check.on_pass.clone(),
            Verdict::Fail => check.on_fail.clone(),
            _ => None,
        }
        // A file in the wrong place or broken: the lab's words about its content would
        // mislead; the detail says where the file is and where it should be.
        .filter(|_| !outcome.detail.is_location());
        CheckResult {
            task: task.id.clone(),
            id: check.id.clone(),
            kind: check.spec.kind(),
            verdict: outcome.verdict,
            points: check.points,
            earned: if outcome.verdict == Verdict::Pass {
                check.points
            } else {
                0
            },
            detail_kind: outcome.detail.kind(),
            detail: outcome.detail,
            feedback,
            seconds,
        }
    }
}

/// What a check grades: the lab, and the learner's workspace for it.
#[derive(Clone, Copy)]
pub struct Submission<'a> {
    pub lab: &'a Lab,
    pub workspace: &'a Path,
}

/// Evaluates the kinds that do not depend on the target; `None` for the others.
pub fn local(env: Submission<'_>, check: &Check) -> Option<Outcome> {
    match &check.spec {
        Spec::File {
            path,
            parses,
            kinds,
            matches,
        } => Some(file(env.workspace, path, *parses, kinds, matches.as_ref())),
        Spec::Command { .. } => Some(command(env, check)),
        _ => None,
    }
}

fn file(
    workspace: &Path,
    path: &str,
    parses: bool,
    kinds: &[String],
    matches: Option<&Value>,
) -> Outcome {
    let full = workspace.join(path);
    // Inside the workspace, a regular file, capped: a link elsewhere or a FIFO is the
    // learner's to fix, not something to follow or block on.
    let text = match workspace_text(workspace, path) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let is_data = matches!(
        full.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    );
    let exists = || Outcome::pass(Detail::FileExists { path: path.into() });
    if !is_data && kinds.is_empty() && matches.is_none() {
        return exists();
    }
    let docs = match crate::yaml::parse_json_stream(&text) {
        Ok(d) => d,
        Err(e) if parses || !kinds.is_empty() || matches.is_some() => {
            return Outcome::fail(not_yaml(path, &text, &e));
        }
        Err(_) => return exists(),
    };
    for k in kinds {
        if !docs
            .iter()
            .any(|d| d.get("kind").and_then(Value::as_str) == Some(k))
        {
            let found: Vec<&str> = docs
                .iter()
                .filter_map(|d| d.get("kind").and_then(Value::as_str))
                .collect();
            let elsewhere = |d: &Value| d.get("kind").and_then(Value::as_str) == Some(k);
            return Outcome::fail(elsewhere_in(workspace, path, elsewhere).unwrap_or_else(|| {
                Detail::NoKind {
                    path: path.into(),
                    kind: k.clone(),
                    found: found.iter().map(|s| s.to_string()).collect(),
                }
            }));
        }
    }
    if let Some(want) = matches {
        return match best_match(want, &docs) {
            Ok(()) => Outcome::pass(Detail::FileHolds { path: path.into() }),
            Err(diff) => Outcome::fail(
                elsewhere_in(workspace, path, |d| partial_match(want, d).is_ok()).unwrap_or_else(
                    || Detail::FileDiffers {
                        path: path.into(),
                        diff,
                    },
                ),
            ),
        };
    }
    Outcome::pass(Detail::FileValid {
        path: path.into(),
        documents: docs.len(),
    })
}

/// A YAML syntax error of a workspace file (one file problem: `file:line:col`).
pub fn not_yaml(path: &str, source: &str, e: &crate::yaml::YamlError) -> Detail {
    Detail::not_yaml(path, source, e)
}

/// When the file a check reads lacks what it asks for: another YAML file of the
/// workspace that has it (a policy saved beside `policies/`, or under another name).
fn elsewhere_in(workspace: &Path, path: &str, holds: impl Fn(&Value) -> bool) -> Option<Detail> {
    super::workspace::list_files(workspace)
        .into_iter()
        .filter(|rel| rel != Path::new(path))
        .filter(|rel| {
            matches!(
                rel.extension().and_then(|e| e.to_str()),
                Some("yaml" | "yml" | "json")
            )
        })
        .find(|rel| {
            crate::input::read_within(workspace, rel)
                .ok()
                .and_then(|b| crate::yaml::parse_json_stream(&String::from_utf8_lossy(&b)).ok())
                .is_some_and(|docs| docs.iter().any(&holds))
        })
        .map(|rel| Detail::Elsewhere {
            path: path.into(),
            found_in: crate::escape::escape(&rel.to_string_lossy()).into_owned(),
        })
}

/// `Ok` when some document matches; else the difference in the most similar one (same
/// kind and name first), so feedback points at the right object.
pub fn best_match(want: &Value, docs: &[Value]) -> Result<(), Diff> {
    let mut first_err = None;
    let key = |v: &Value, p: &str| v.pointer(p).cloned();
    let mut ranked: Vec<&Value> = docs.iter().collect();
    ranked.sort_by_key(|d| {
        let same_kind = key(want, "/kind").is_some() && key(want, "/kind") == key(d, "/kind");
        let same_name = key(want, "/metadata/name").is_some()
            && key(want, "/metadata/name") == key(d, "/metadata/name");
        std::cmp::Reverse((same_kind && same_name, same_kind))
    });
    for d in ranked {
        match partial_match(want, d) {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| Diff::NoDocument { want: short(want) }))
}

/// Runs a `command` check's program (through `crate::exec`: own process group, killed
/// whole at the timeout, output capped) and judges its exit code and output. kca's own
/// graders (`run: [kca, …, policy, grader, …]`) run in this process instead
/// (`inproc`), with the same arguments, workspace, environment and captured output.
fn command(env: Submission<'_>, check: &Check) -> Outcome {
    let Spec::Command {
        run,
        env: vars,
        stdin,
        ..
    } = &check.spec
    else {
        return Outcome::internal("not a command check");
    };
    let prog = match program(env, run, vars) {
        Ok(c) => c,
        Err(ProgramError::Render { what, reason }) => {
            return Outcome::error(Detail::CannotRender { what, reason });
        }
        Err(ProgramError::Empty) => return Outcome::error(Detail::EmptyCommand),
    };
    let shown = prog.argv.join(" ");
    if let Some(f) = super::inproc::run(&prog, check.timeout) {
        return finished(check, &shown, f);
    }
    let name = prog.argv[0].clone();
    let mut job = crate::exec::Job::new(prog.command(), check.timeout);
    job.stdin = Some(stdin.clone().unwrap_or_default().into_bytes());
    match crate::exec::run(job) {
        Err(e) => Outcome::error(Detail::CannotRun {
            program: name,
            error: e.to_string(),
        }),
        Ok(f) => finished(check, &shown, f),
    }
}

/// A program that ran (or an in-process grader): out of time, or judged.
fn finished(check: &Check, shown: &str, f: crate::exec::Finished) -> Outcome {
    if f.end == crate::exec::End::TimedOut {
        return Outcome::error(Detail::TimedOut {
            ran: ran(shown, &f, &f.stderr.text(), &f.stdout.text()),
            seconds: check.timeout.as_secs(),
        });
    }
    judge_run(check, shown, &f)
}

/// The program as run, for a detail: its command line, its last lines and what was cut.
fn ran(shown: &str, f: &crate::exec::Finished, err: &str, out: &str) -> Ran {
    Ran {
        command: shown.to_string(),
        output: tail(err, out),
        cut: f
            .truncation_note()
            .trim()
            .trim_matches(['(', ')', ';'])
            .trim()
            .to_string(),
    }
}

/// Why a `command` check's program could not be built (an ERROR of the check).
#[derive(Debug, thiserror::Error)]
enum ProgramError {
    /// `what` is ``argument `…` `` or ``env `…` ``; `reason` is the template's message.
    #[error("cannot render {what}: {reason}")]
    Render { what: String, reason: String },
    #[error("the command is empty")]
    Empty,
}

/// A `command` check's program, ready to run: arguments and environment rendered.
pub(super) struct Program {
    pub argv: Vec<String>,
    /// The workspace: the program's working directory.
    pub cwd: std::path::PathBuf,
    /// What kca adds to its own environment for the program (`KCA_LANG`, `PATH`, …).
    pub env: Vec<(String, std::ffi::OsString)>,
    /// Whether the check sets variables of its own (`env:`), beyond kca's.
    pub own_env: bool,
}

impl Program {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.argv[0]);
        cmd.args(&self.argv[1..])
            .current_dir(&self.cwd)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd
    }
}

/// The check's program: arguments and environment rendered (tera), run in the workspace
/// with the lab's variables and the running kca first on PATH.
fn program(
    env: Submission<'_>,
    run: &[String],
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<Program, ProgramError> {
    let ctx = super::workspace::template_context(env.lab, env.workspace);
    let render = |s: &str| -> Result<String, String> {
        if s.contains("{{") {
            super::template::render(s, &ctx)
        } else {
            Ok(s.to_string())
        }
    };
    let argv = run
        .iter()
        .map(|a| {
            render(a).map_err(|reason| ProgramError::Render {
                what: format!("argument `{a}`"),
                reason,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if argv.is_empty() {
        return Err(ProgramError::Empty);
    }
    let mut added: Vec<(String, std::ffi::OsString)> = vec![
        ("KCA_LAB".into(), env.lab.id.clone().into()),
        ("KCA_LANG".into(), crate::settings::chosen().code().into()),
        (
            "KCA_LAB_DIR".into(),
            super::workspace::lab_dir(env.lab).into_os_string(),
        ),
        ("KCA_WORKSPACE".into(), env.workspace.as_os_str().to_owned()),
    ];
    // The learner's scripts call `kca …`: the running kca comes first on PATH.
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut parts = vec![dir];
        parts.extend(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(parts) {
            added.push(("PATH".into(), joined));
        }
    }
    for (k, v) in vars {
        let v = render(v).map_err(|reason| ProgramError::Render {
            what: format!("env `{k}`"),
            reason,
        })?;
        added.push((k.clone(), v.into()));
    }
    Ok(Program {
        argv,
        cwd: env.workspace.to_path_buf(),
        env: added,
        own_env: !vars.is_empty(),
    })
}

/// Judges a finished program against the check's exit code and output patterns.
fn judge_run(check: &Check, shown: &str, f: &crate::exec::Finished) -> Outcome {
    let Spec::Command {
        exit,
        stdout,
        stderr,
        skip_exit,
        ..
    } = &check.spec
    else {
        return Outcome::internal("not a command check");
    };
    let (out, err) = (f.stdout.text(), f.stderr.text());
    let code = f.code();
    if code.is_some() && code == *skip_exit {
        let why = last_line(&err, &out);
        return Outcome::skipped(Detail::CommandCannotJudge {
            ran: ran(shown, f, &err, &out),
            why,
        });
    }
    let code_ok = match (exit, code) {
        (ExitWant::Code(want), Some(c)) => *want == c,
        (ExitWant::NonZero, Some(c)) => c != 0,
        (_, None) => false,
    };
    if !code_ok {
        let want = match exit {
            ExitWant::Code(c) => Some(*c),
            ExitWant::NonZero => None,
        };
        return Outcome::fail(Detail::ExitCode {
            ran: ran(shown, f, &err, &out),
            got: code,
            want,
        });
    }
    for r in stdout {
        if !r.is_match(&out) {
            return Outcome::fail(Detail::OutputMismatch {
                ran: ran(shown, f, "", &out),
                stderr: false,
                re: r.to_string(),
            });
        }
    }
    for r in stderr {
        if !r.is_match(&err) {
            return Outcome::fail(Detail::OutputMismatch {
                ran: ran(shown, f, &err, ""),
                stderr: true,
                re: r.to_string(),
            });
        }
    }
    Outcome::pass(Detail::CommandPassed {
        ran: ran(shown, f, &err, &out),
        got: code,
    })
}

/// Judges a `can-i` answer against the expected one (shared by both targets).
pub fn judge_can_i(check: &Check, answer: &crate::target::AccessAnswer) -> Outcome {
    let Spec::CanI { query, expect } = &check.spec else {
        return Outcome::internal("not a can-i check");
    };
    let crate::target::AccessQuery {
        user,
        verb,
        group,
        resource,
        subresource,
        namespace,
        name,
        ..
    } = query;
    let mut resource = resource.clone();
    if !subresource.is_empty() {
        resource.push('/');
        resource.push_str(subresource);
    }
    let access = super::detail::Access {
        verb: verb.clone(),
        resource,
        group: group.clone(),
        name: name.clone(),
        namespace: namespace.clone(),
    };
    let ok = answer.allowed == *expect;
    let d = Detail::CanI {
        user: user.clone(),
        access,
        allowed: answer.allowed,
        reason: answer.reason.clone(),
        expected: (!ok).then_some(*expect),
    };
    if ok {
        Outcome::pass(d)
    } else {
        Outcome::fail(d)
    }
}

#[path = "check_admission.rs"]
mod admission;
pub use admission::{changes, judge_admission, probe, probe_name};

/// Judges the object a `generated` check awaited (`None`: it never appeared).
pub fn judge_generated(check: &Check, what: &str, found: Option<&Value>) -> Outcome {
    let Spec::Generated { matches, .. } = &check.spec else {
        return Outcome::internal("not a generated check");
    };
    let what = what.to_string();
    match (found, matches) {
        (None, _) => Outcome::fail(Detail::NotGenerated { what }),
        (Some(_), None) => Outcome::pass(Detail::Generated { what }),
        (Some(obj), Some(want)) => match partial_match(want, obj) {
            Ok(()) => Outcome::pass(Detail::GeneratedAsExpected { what }),
            Err(diff) => Outcome::fail(Detail::GeneratedBut { what, diff }),
        },
    }
}

/// The last non-empty line a program printed (its error output first): why it skipped.
fn last_line(err: &str, out: &str) -> String {
    [err, out]
        .iter()
        .find_map(|t| t.lines().rev().find(|l| !l.trim().is_empty()))
        .map_or_else(|| "(it said nothing)".to_string(), |l| l.trim().to_string())
}

/// A workspace file's text for a check (see [`workspace_text`]).
#[allow(clippy::result_large_err)] // the verdict itself, made once per check
pub fn workspace_file(workspace: &Path, path: &str) -> Result<String, Outcome> {
    workspace_text(workspace, path)
}

/// A workspace file's text for a check: inside the workspace, a regular file, capped (a
/// link elsewhere or a FIFO is the learner's to fix, not something to follow or block on);
/// `Err` is the verdict when it cannot be read.
#[allow(clippy::result_large_err)] // the verdict itself, made once per check
fn workspace_text(workspace: &Path, path: &str) -> Result<String, Outcome> {
    match crate::input::read_within(workspace, Path::new(path)) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.is_not_found() => Err(Outcome::fail(Detail::FileMissing {
            path: crate::escape::escape(path).into_owned(),
        })),
        Err(e) => Err(Outcome::fail(Detail::FileUnreadable {
            error: crate::escape::escape(&e.to_string()).into_owned(),
        })),
    }
}

/// The learner's policy an `accepted` check sends: the document of `path` with the given
/// kind and name, else the file's first document. `Err` is the verdict when there is none.
#[allow(clippy::result_large_err)] // the verdict itself, made once per check
pub fn accepted_document(env: Submission<'_>, check: &Check) -> Result<Value, Outcome> {
    let Spec::Accepted { path, document, .. } = &check.spec else {
        return Err(Outcome::internal("not an accepted check"));
    };
    let text = workspace_text(env.workspace, path)?;
    let docs = crate::yaml::parse_json_stream(&text).map_err(|e| blocked_by(path, &text, &e))?;
    let s = |d: &Value, p: &str| d.pointer(p).and_then(Value::as_str).map(str::to_string);
    let found = match document {
        Some((kind, name)) => docs.into_iter().find(|d| {
            s(d, "/kind").as_ref() == Some(kind) && s(d, "/metadata/name").as_ref() == Some(name)
        }),
        None => docs.into_iter().next(),
    };
    found.ok_or_else(|| match document {
        Some((kind, name)) => Outcome::fail(Detail::NoDocumentNamed {
            path: path.clone(),
            kind: kind.clone(),
            name: name.clone(),
        }),
        None => Outcome::fail(Detail::FileEmpty { path: path.clone() }),
    })
}

/// A check that reads a file with a YAML syntax error: not judged (`error`), pointing at
/// the one file problem the report shows once.
pub fn blocked_by(path: &str, source: &str, e: &crate::yaml::YamlError) -> Outcome {
    Outcome::error(Detail::Blocked {
        problems: not_yaml(path, source, e).file_problems(),
    })
}

/// Judges Kyverno's answer to creating the learner's policy (a dry run): accepted, or
/// rejected with a message matching the check's.
pub fn judge_accepted(check: &Check, what: &str, got: &crate::target::Admission) -> Outcome {
    use crate::target::Admission;
    let Spec::Accepted {
        accepted, message, ..
    } = &check.spec
    else {
        return Outcome::internal("not an accepted check");
    };
    let what = what.to_string();
    let message_of = |d: &crate::target::Denial| d.message.trim().to_string();
    match (got, *accepted) {
        (Admission::Allowed { warnings, .. }, true) => Outcome::pass(Detail::Accepted {
            what,
            warnings: warnings.clone(),
        }),
        (Admission::Allowed { .. }, false) => Outcome::fail(Detail::AcceptedShouldReject { what }),
        (Admission::Denied(d), true) => Outcome::fail(Detail::Rejected {
            what,
            message: message_of(d),
        }),
        (Admission::Denied(d), false) => match message {
            Some(re) if !re.is_match(&d.message) => Outcome::fail(Detail::RejectedOtherReason {
                what,
                re: re.to_string(),
                message: message_of(d),
            }),
            _ => Outcome::pass(Detail::RejectedAsExpected {
                what,
                message: message_of(d),
            }),
        },
    }
}

/// "ClusterPolicy kca-default-deny (policies/default-deny.yaml)".
pub fn document_name(check: &Check, doc: &Value) -> String {
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str).unwrap_or("?");
    let path = match &check.spec {
        Spec::Accepted { path, .. } => path.as_str(),
        _ => "",
    };
    format!("{} `{}` ({path})", s("/kind"), s("/metadata/name"))
}

/// Judges the generated copy after the `sync` step changed its source: with
/// `synchronize: true` the copy follows.
pub fn judge_synced(check: &Check, what: &str, copy: Option<&Value>) -> Outcome {
    let Spec::Generated {
        sync: Some(step), ..
    } = &check.spec
    else {
        return Outcome::internal("not a generated check with a sync step");
    };
    let src = &step.source;
    let source = format!(
        "{} {}/{}",
        src.kind,
        src.namespace.as_deref().unwrap_or(""),
        src.name
    );
    let what = what.to_string();
    match copy {
        None => Outcome::fail(Detail::SyncGone { what, source }),
        Some(obj) => match partial_match(&step.matches, obj) {
            Ok(()) => Outcome::pass(Detail::SyncFollowed { what, source }),
            Err(diff) => Outcome::fail(Detail::SyncNotFollowed { what, source, diff }),
        },
    }
}

/// The last lines a program printed, for the report.
fn tail(err: &str, out: &str) -> String {
    let text = if err.trim().is_empty() { out } else { err };
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(5);
    // A line is cut at 200 characters: the tail is for reading, not a copy of the output.
    lines[start..]
        .iter()
        .map(|l| match l.char_indices().nth(200) {
            Some((i, _)) => format!("{}…", &l[..i]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
