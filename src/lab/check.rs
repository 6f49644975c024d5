//! Check verdicts and the target-independent check kinds (`file`, `command`): what a check
//! found, as a result rather than an error. Reads the workspace and runs local programs;
//! never talks to a cluster (that is `lab::live`) and never prints.

use std::path::Path;
use std::process::Command;

use serde::Serialize;
use serde_json::Value;

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

/// A verdict and what was found (technical detail beside the lab's feedback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub detail: String,
}

impl Outcome {
    pub fn pass(detail: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Pass,
            detail: detail.into(),
        }
    }
    pub fn fail(detail: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Fail,
            detail: detail.into(),
        }
    }
    pub fn error(detail: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Error,
            detail: detail.into(),
        }
    }
    pub fn skipped(detail: impl Into<String>) -> Self {
        Outcome {
            verdict: Verdict::Skipped,
            detail: detail.into(),
        }
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
    pub detail: String,
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
        };
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
    if !is_data && kinds.is_empty() && matches.is_none() {
        return Outcome::pass(format!("`{path}` exists"));
    }
    let docs = match crate::yaml::parse_json_stream(&text) {
        Ok(d) => d,
        Err(e) if parses || !kinds.is_empty() || matches.is_some() => {
            return Outcome::fail(format!("{path}:{}: not valid YAML: {}", e.pos, e.message));
        }
        Err(_) => return Outcome::pass(format!("`{path}` exists")),
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
            return Outcome::fail(format!(
                "`{path}` holds no `{k}` (found: {})",
                if found.is_empty() {
                    "no kinds".to_string()
                } else {
                    found.join(", ")
                }
            ));
        }
    }
    if let Some(want) = matches {
        return match best_match(want, &docs) {
            Ok(()) => Outcome::pass(format!("`{path}` holds what was asked")),
            Err(e) => Outcome::fail(format!("`{path}`: {e}")),
        };
    }
    Outcome::pass(format!("`{path}` is valid ({} document(s))", docs.len()))
}

/// `Ok` when some document matches; else the difference in the most similar one (same
/// kind and name first), so feedback points at the right object.
pub fn best_match(want: &Value, docs: &[Value]) -> Result<(), String> {
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
    Err(first_err.unwrap_or_else(|| format!("no document to compare with {}", short(want))))
}

/// Runs a `command` check's program (through `crate::exec`: own process group, killed
/// whole at the timeout, output capped) and judges its exit code and output.
fn command(env: Submission<'_>, check: &Check) -> Outcome {
    let Spec::Command {
        run,
        env: vars,
        stdin,
        ..
    } = &check.spec
    else {
        return Outcome::error("not a command check");
    };
    let cmd = match program(env, run, vars) {
        Ok(c) => c,
        Err(e) => return Outcome::error(e.to_string()),
    };
    let shown = cmd.get_args().fold(
        cmd.get_program().to_string_lossy().into_owned(),
        |mut s, a| {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
            s
        },
    );
    let name = cmd.get_program().to_string_lossy().into_owned();
    let mut job = crate::exec::Job::new(cmd, check.timeout);
    job.stdin = Some(stdin.clone().unwrap_or_default().into_bytes());
    match crate::exec::run(job) {
        Err(e) => Outcome::error(format!(
            "cannot run `{name}`: {e} (is it installed and on PATH?)"
        )),
        Ok(f) if f.end == crate::exec::End::TimedOut => Outcome::error(format!(
            "`{shown}` did not finish within {}s",
            check.timeout.as_secs()
        )),
        Ok(f) => {
            let mut o = judge_run(check, &shown, &f);
            o.detail.push_str(&f.truncation_note());
            o
        }
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

/// The check's program: arguments and environment rendered (tera), run in the workspace
/// with the lab's variables and the running kca first on PATH.
fn program(
    env: Submission<'_>,
    run: &[String],
    vars: &std::collections::BTreeMap<String, String>,
) -> Result<Command, ProgramError> {
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
    let Some((first, rest)) = argv.split_first() else {
        return Err(ProgramError::Empty);
    };
    let mut cmd = Command::new(first);
    cmd.args(rest)
        .current_dir(env.workspace)
        .env("KCA_LAB", &env.lab.id)
        .env("KCA_LAB_DIR", super::workspace::lab_dir(env.lab))
        .env("KCA_WORKSPACE", env.workspace);
    // The learner's scripts call `kca …`: the running kca comes first on PATH.
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut parts = vec![dir];
        parts.extend(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(parts) {
            cmd.env("PATH", joined);
        }
    }
    for (k, v) in vars {
        cmd.env(
            k,
            render(v).map_err(|reason| ProgramError::Render {
                what: format!("env `{k}`"),
                reason,
            })?,
        );
    }
    Ok(cmd)
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
        return Outcome::error("not a command check");
    };
    let (out, err) = (f.stdout.text(), f.stderr.text());
    let code = f.code();
    if code.is_some() && code == *skip_exit {
        let why = last_line(&err, &out);
        return Outcome::skipped(format!("`{shown}` cannot judge here: {why}"));
    }
    let code_ok = match (exit, code) {
        (ExitWant::Code(want), Some(c)) => *want == c,
        (ExitWant::NonZero, Some(c)) => c != 0,
        (_, None) => false,
    };
    let got = code.map_or("a signal".to_string(), |c| format!("exit code {c}"));
    if !code_ok {
        let want = match exit {
            ExitWant::Code(c) => format!("exit code {c}"),
            ExitWant::NonZero => "a non-zero exit code".into(),
        };
        return Outcome::fail(format!(
            "`{shown}` ended with {got}, expected {want}{}",
            tail(&err, &out)
        ));
    }
    for r in stdout {
        if !r.is_match(&out) {
            return Outcome::fail(format!(
                "`{shown}`: its output does not match /{r}/{}",
                tail("", &out)
            ));
        }
    }
    for r in stderr {
        if !r.is_match(&err) {
            return Outcome::fail(format!(
                "`{shown}`: its error output does not match /{r}/{}",
                tail(&err, "")
            ));
        }
    }
    Outcome::pass(format!("`{shown}` ended with {got}"))
}

/// Judges a `can-i` answer against the expected one (shared by both targets).
pub fn judge_can_i(check: &Check, answer: &crate::target::AccessAnswer) -> Outcome {
    let Spec::CanI { query, expect } = &check.spec else {
        return Outcome::error("not a can-i check");
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
    let mut what = format!("{verb} {resource}");
    if !subresource.is_empty() {
        what.push('/');
        what.push_str(subresource);
    }
    if !group.is_empty() {
        what.push_str(&format!(" (group {group})"));
    }
    if !name.is_empty() {
        what.push_str(&format!(" named {name}"));
    }
    if !namespace.is_empty() {
        what.push_str(&format!(" in namespace {namespace}"));
    }
    let said = if answer.allowed { "yes" } else { "no" };
    let reason = if answer.reason.is_empty() {
        String::new()
    } else {
        format!(" ({})", answer.reason)
    };
    let line = format!("can {user} {what}? {said}{reason}");
    if answer.allowed == *expect {
        Outcome::pass(line)
    } else {
        Outcome::fail(format!(
            "{line}; expected {}",
            if *expect { "yes" } else { "no" }
        ))
    }
}

/// Judges an admission outcome for the probe as it was `sent` (varied, `lab::vary`):
/// allowed (keeping what kca added to it, and the returned object's assertions), left
/// alone (admitted and unchanged), or denied by the named policy/rule, from the parsed
/// denial rather than its text.
pub fn judge_admission(check: &Check, sent: &Value, got: &crate::target::Admission) -> Outcome {
    let mut o = judge_admission_as_sent(check, sent, got);
    if o.verdict == Verdict::Fail {
        o.detail.push_str(&super::vary::note());
    }
    o
}

fn judge_admission_as_sent(check: &Check, sent: &Value, got: &crate::target::Admission) -> Outcome {
    use crate::content::lab::{Denier, Expect};
    use crate::target::{Admission, DeniedBy};
    let Spec::Admission {
        expect,
        assert,
        left_alone,
        ..
    } = &check.spec
    else {
        return Outcome::error("not an admission check");
    };
    let what = probe_name(sent);
    match (expect, got) {
        (Expect::Allowed, Admission::Allowed { object, .. }) => {
            if let Some(lost) = super::vary::lost(sent, object, assert.as_ref()) {
                return Outcome::fail(format!(
                    "{what} was admitted, but lost what it was sent with: {lost} \
                     (a mutation must keep the object's other labels and annotations)"
                ));
            }
            match (assert, *left_alone) {
                (None, false) => Outcome::pass(format!("{what} was admitted")),
                (None, true) => match changes(sent, object) {
                    None => Outcome::pass(format!(
                        "{what} lies outside the scope and came through unchanged"
                    )),
                    Some(c) => Outcome::fail(format!(
                        "{what} lies outside the scope the task asks for, but was changed: \
                         {c} (the rule matches more than it should)"
                    )),
                },
                (Some(want), alone) => match partial_match(want, object) {
                    Ok(()) if alone => {
                        Outcome::pass(format!("{what} lies outside the scope and was left alone"))
                    }
                    Ok(()) => Outcome::pass(format!("{what} was admitted as expected")),
                    Err(e) if alone => Outcome::fail(format!(
                        "{what} lies outside the scope the task asks for, but {e} \
                         (the rule matches more than it should)"
                    )),
                    Err(e) => Outcome::fail(format!("{what} was admitted, but {e}")),
                },
            }
        }
        (Expect::Allowed, Admission::Denied(d)) if *left_alone => Outcome::fail(format!(
            "{what} lies outside the scope the task asks for, but was denied (the rule \
             matches more than it should): {}",
            d.message.trim()
        )),
        (Expect::Allowed, Admission::Denied(d)) => {
            Outcome::fail(format!("{what} was denied: {}", d.message.trim()))
        }
        (Expect::Denied(_), Admission::Allowed { .. }) => {
            Outcome::fail(format!("{what} was admitted; it should have been denied"))
        }
        (Expect::Denied(None), Admission::Denied(d)) => {
            Outcome::pass(format!("{what} was denied: {}", d.message.trim()))
        }
        (Expect::Denied(Some(want)), Admission::Denied(d)) => {
            let ok = match want {
                Denier::Kyverno { policy, rule } => d.denied_by_kyverno(policy, rule.as_deref()),
                Denier::Vap { policy } => d.all.iter().chain([&d.by]).any(|b| {
                    matches!(b, DeniedBy::ValidatingAdmissionPolicy { policy: p, .. } if p == policy)
                }),
            };
            let by = match want {
                Denier::Kyverno {
                    policy,
                    rule: Some(rule),
                } => format!("policy `{policy}` rule `{rule}`"),
                Denier::Kyverno { policy, rule: None } => format!("policy `{policy}`"),
                Denier::Vap { policy } => format!("ValidatingAdmissionPolicy `{policy}`"),
            };
            if ok {
                Outcome::pass(format!("{what} was denied by {by}"))
            } else {
                Outcome::fail(format!(
                    "{what} was denied, but not by {by}: {}",
                    d.message.trim()
                ))
            }
        }
    }
}

/// Labels kca itself puts on what it sends (never the learner's mutation).
fn kca_key(k: &str) -> bool {
    k.starts_with("kca.dev/") || k == crate::content::lab::MANAGED_BY_LABEL
}

/// How the admitted object differs from the probe as sent, where a mutation shows and
/// the API server's defaulting does not: a label or annotation added, changed or
/// removed; a named list item (container, volume…) added or removed; a value the probe
/// had changed. `None`: unchanged.
pub fn changes(sent: &Value, got: &Value) -> Option<String> {
    let mut out = Vec::new();
    for key in ["labels", "annotations"] {
        let empty = serde_json::Map::new();
        let m = |v: &Value| {
            v.pointer(&format!("/metadata/{key}"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_else(|| empty.clone())
        };
        let (a, b) = (m(sent), m(got));
        for (k, v) in &b {
            if !kca_key(k) && a.get(k) != Some(v) {
                out.push(format!("{key} `{k}` is {}", short(v)));
            }
        }
        for k in a.keys() {
            if !b.contains_key(k) {
                out.push(format!("{key} `{k}` was removed"));
            }
        }
    }
    named_items(sent, got, "", &mut out);
    if out.is_empty()
        && let Err(e) = super::tree::partial_match(&without_meta_maps(sent), got)
    {
        out.push(e);
    }
    (!out.is_empty()).then(|| out.join("; "))
}

fn without_meta_maps(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in ["labels", "annotations", "name", "generateName"] {
            m.remove(k);
        }
    }
    v
}

/// Lists of named items (containers, volumes…) whose names differ between the two.
fn named_items(sent: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (sent, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in a {
                if let Some(w) = b.get(k) {
                    named_items(v, w, &format!("{path}.{k}"), out);
                }
            }
            // A named list the probe did not have at all (initContainers injected).
            for (k, w) in b {
                if !a.contains_key(k)
                    && let Value::Array(items) = w
                    && items.iter().any(|i| i.get("name").is_some())
                {
                    out.push(format!(
                        "`{}` was added",
                        format!("{path}.{k}").trim_start_matches('.')
                    ));
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            let names = |l: &[Value]| -> Vec<String> {
                l.iter()
                    .filter_map(|i| i.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect()
            };
            let (na, nb) = (names(a), names(b));
            if !na.is_empty() || !nb.is_empty() {
                let at = path.trim_start_matches('.');
                for n in nb.iter().filter(|n| !na.contains(n)) {
                    out.push(format!("`{at}` gained `{n}`"));
                }
                for n in na.iter().filter(|n| !nb.contains(n)) {
                    out.push(format!("`{at}` lost `{n}`"));
                }
                for x in a {
                    let n = x.get("name");
                    if let Some(y) = b.iter().find(|y| y.get("name") == n && n.is_some()) {
                        named_items(
                            x,
                            y,
                            &format!("{path}[{}]", n.and_then(Value::as_str).unwrap_or("")),
                            out,
                        );
                    }
                }
            }
        }
        _ => {}
    }
}

/// "Pod kca-mutate/kca-probe-…" for a probe that may only have a `generateName`.
pub fn probe_name(obj: &Value) -> String {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str);
    let name = s("/metadata/name")
        .map(str::to_string)
        .or_else(|| s("/metadata/generateName").map(|g| format!("{g}…")))
        .unwrap_or_else(|| "(unnamed)".into());
    let kind = s("/kind").unwrap_or("object");
    match s("/metadata/namespace") {
        Some(ns) => format!("the probe {kind} {ns}/{name}"),
        None => format!("the probe {kind} {name}"),
    }
}

/// Judges the object a `generated` check awaited (`None`: it never appeared).
pub fn judge_generated(check: &Check, what: &str, found: Option<&Value>) -> Outcome {
    let Spec::Generated { matches, .. } = &check.spec else {
        return Outcome::error("not a generated check");
    };
    match (found, matches) {
        (None, _) => Outcome::fail(format!("{what} was not generated")),
        (Some(_), None) => Outcome::pass(format!("{what} was generated")),
        (Some(obj), Some(want)) => match partial_match(want, obj) {
            Ok(()) => Outcome::pass(format!("{what} was generated as expected")),
            Err(e) => Outcome::fail(format!("{what} was generated, but {e}")),
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
pub fn workspace_file(workspace: &Path, path: &str) -> Result<String, Outcome> {
    workspace_text(workspace, path)
}

/// A workspace file's text for a check: inside the workspace, a regular file, capped (a
/// link elsewhere or a FIFO is the learner's to fix, not something to follow or block on);
/// `Err` is the verdict when it cannot be read.
fn workspace_text(workspace: &Path, path: &str) -> Result<String, Outcome> {
    match crate::input::read_within(workspace, Path::new(path)) {
        Ok(b) => Ok(String::from_utf8_lossy(&b).into_owned()),
        Err(e) if e.is_not_found() => Err(Outcome::fail(format!(
            "`{}` does not exist in the workspace",
            crate::escape::escape(path)
        ))),
        Err(e) => Err(Outcome::fail(
            crate::escape::escape(&e.to_string()).into_owned(),
        )),
    }
}

/// The learner's policy an `accepted` check sends: the document of `path` with the given
/// kind and name, else the file's first document. `Err` is the verdict when there is none.
pub fn accepted_document(env: Submission<'_>, check: &Check) -> Result<Value, Outcome> {
    let Spec::Accepted { path, document, .. } = &check.spec else {
        return Err(Outcome::error("not an accepted check"));
    };
    let text = workspace_text(env.workspace, path)?;
    let docs = crate::yaml::parse_json_stream(&text)
        .map_err(|e| Outcome::fail(format!("{path}:{}: not valid YAML: {}", e.pos, e.message)))?;
    let s = |d: &Value, p: &str| d.pointer(p).and_then(Value::as_str).map(str::to_string);
    let found = match document {
        Some((kind, name)) => docs.into_iter().find(|d| {
            s(d, "/kind").as_ref() == Some(kind) && s(d, "/metadata/name").as_ref() == Some(name)
        }),
        None => docs.into_iter().next(),
    };
    found.ok_or_else(|| match document {
        Some((kind, name)) => Outcome::fail(format!("`{path}` holds no {kind} `{name}`")),
        None => Outcome::fail(format!("`{path}` is empty")),
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
        return Outcome::error("not an accepted check");
    };
    match (got, *accepted) {
        (Admission::Allowed { warnings, .. }, true) => {
            let said = if warnings.is_empty() {
                String::new()
            } else {
                format!(" (warnings: {})", warnings.join("; "))
            };
            Outcome::pass(format!("{what} is accepted{said}"))
        }
        (Admission::Allowed { .. }, false) => {
            Outcome::fail(format!("{what} is accepted; it should be rejected"))
        }
        (Admission::Denied(d), true) => {
            Outcome::fail(format!("{what} is rejected: {}", d.message.trim()))
        }
        (Admission::Denied(d), false) => match message {
            Some(re) if !re.is_match(&d.message) => Outcome::fail(format!(
                "{what} is rejected, but not for the expected reason (/{re}/): {}",
                d.message.trim()
            )),
            _ => Outcome::pass(format!("{what} is rejected: {}", d.message.trim())),
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
        return Outcome::error("not a generated check with a sync step");
    };
    let src = &step.source;
    let source = format!(
        "{} {}/{}",
        src.kind,
        src.namespace.as_deref().unwrap_or(""),
        src.name
    );
    match copy {
        None => Outcome::fail(format!("{what} disappeared after {source} changed")),
        Some(obj) => match partial_match(&step.matches, obj) {
            Ok(()) => Outcome::pass(format!(
                "{what} was generated and followed the change of {source}"
            )),
            Err(e) => Outcome::fail(format!(
                "{what} was generated, but did not follow the change of {source} \
                 (is `synchronize: true` set?): {e}"
            )),
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
    format!("; last output:\n{}", lines[start..].join("\n"))
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
