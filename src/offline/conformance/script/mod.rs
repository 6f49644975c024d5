//! Chainsaw's `script` and `command` operations in the replay: the script runs in a
//! bounded POSIX-shell subset ([`shell`], [`exec`], [`tools`]) whose outside programs
//! are `kubectl` against the simulated cluster ([`kubectl`]) and `kyverno apply
//! --cluster` ([`kyverno`]); then the operation is judged as Chainsaw judges it
//! (kyverno/chainsaw pkg/runner/operations/script and command: without `check`, a
//! non-zero exit fails it; with `check`, `$stdout`, `$stderr` and `$error` — `exit
//! status N` or null — are bound and the check is asserted). A check that reads output
//! known only in part is decided where that is enough ([`partial`]). What the subset
//! does not model, or output the replay knows only in part that the check or the script
//! reads, is a skip naming it; objects a controller the replay does not run makes, a
//! `Controller` skip naming it.

pub mod arith;
pub mod exec;
pub mod jsonpath;
pub mod kubectl;
pub mod kyverno;
pub mod partial;
pub mod shell;
pub mod tools;
pub mod words;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::assert::{Judged, judge};
use super::chainsaw::{Bindings, Script, ScriptBody};
use super::cluster::{Cluster, Key};
use exec::{Files, Io, Shell};

/// How a script operation came out.
#[derive(Debug)]
pub enum Ran {
    /// As the test expects; the keys of what it wrote.
    Agree(Vec<Key>),
    Disagree(String),
    Skip(String),
    /// It reads objects a controller the replay does not run makes.
    Controller(super::controllers::Maker),
}

/// Exit statuses a program whose status is unknown may have (`kyverno apply`: 0, or 1
/// for a failure or an error).
const POSSIBLE_STATUSES: [i32; 2] = [0, 1];

/// Runs `script` in the test's folder `dir` against `cluster`. When a program's exit
/// status is unknown, the script runs again from the same cluster under each status it
/// may have: the verdict stands when every run agrees (leaving the same objects) or every
/// run disagrees; else it is a skip naming the status.
pub fn run(script: &Script, cluster: &mut Cluster, dir: &Path, bindings: &Bindings) -> Ran {
    let before = cluster.clone();
    let why = match run_once(script, cluster, dir, bindings, None) {
        Ok(ran) => return ran,
        Err(why) => why,
    };
    let mut runs = Vec::new();
    for status in POSSIBLE_STATUSES {
        let mut c = before.clone();
        match run_once(script, &mut c, dir, bindings, Some(status)) {
            Ok(ran) => runs.push((ran, c)),
            Err(_) => return Ran::Skip(format!("{}: {why}", script.op)),
        }
    }
    let undecided = || Ran::Skip(format!("{}: {why}", script.op));
    if runs.iter().all(|(r, _)| matches!(r, Ran::Disagree(_))) {
        return runs.swap_remove(0).0;
    }
    let same_end = runs.windows(2).all(|w| w[0].1.objects == w[1].1.objects);
    if !same_end || !runs.iter().all(|(r, _)| matches!(r, Ran::Agree(_))) {
        return undecided();
    }
    let (ran, c) = runs.swap_remove(0);
    *cluster = c;
    ran
}

/// One run of `script`; `Err` (why) when a program's exit status is unknown and
/// `assume_status` gives none.
fn run_once(
    script: &Script,
    cluster: &mut Cluster,
    dir: &Path,
    bindings: &Bindings,
    assume_status: Option<i32>,
) -> Result<Ran, String> {
    let mut unknown = None;
    let ran = run_body(script, cluster, dir, bindings, assume_status, &mut unknown);
    match unknown {
        Some(why) => Err(why),
        None => Ok(ran),
    }
}

fn run_body(
    script: &Script,
    cluster: &mut Cluster,
    dir: &Path,
    bindings: &Bindings,
    assume_status: Option<i32>,
    unknown: &mut Option<String>,
) -> Ran {
    if let Some(opt) = &script.unmodelled {
        return Ran::Skip(format!("{} with `{opt}`", script.op));
    }
    let mut vars = BTreeMap::new();
    let ns = bindings
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or(&cluster.namespace)
        .to_string();
    vars.insert("NAMESPACE".to_string(), ns);
    // Chainsaw runs every script with `KUBECONFIG` naming the temporary kubeconfig it
    // wrote for the target cluster (chainsaw's script operation; its docs' "Kubectl
    // helpers": one cluster, user and context, all named `chainsaw`).
    vars.insert(
        "KUBECONFIG".to_string(),
        exec::CHAINSAW_KUBECONFIG.to_string(),
    );
    for (name, value) in &script.env {
        let v = match value {
            Value::String(s) if s.starts_with("($") && s.ends_with(')') => {
                match super::assert::evaluate(&s[1..s.len() - 1], &Value::Null, bindings) {
                    Ok(Value::String(v)) => v,
                    Ok(other) => other.to_string(),
                    Err(e) => return Ran::Skip(format!("{} env {name}: {e}", script.op)),
                }
            }
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        vars.insert(name.clone(), v);
    }
    let files = Files {
        dir: dir.to_path_buf(),
        written: BTreeMap::new(),
    };
    let mut host = kubectl::Kubectl {
        cluster,
        written: Vec::new(),
        assume_status,
    };
    let mut io = Io::default();
    let status = {
        let mut sh = Shell::new(vars, files, &mut host);
        match &script.body {
            ScriptBody::Shell(src) => sh.run_script(src, &mut io),
            ScriptBody::Command { entrypoint, args } => {
                let mut argv = vec![entrypoint.clone()];
                argv.extend(args.iter().cloned());
                sh.run_argv(&argv, &mut io)
            }
        }
    };
    let status = match status {
        Ok(s) => s,
        Err(exec::Unwind::Controller(m)) => return Ran::Controller(m),
        Err(exec::Unwind::UnknownStatus(why)) => {
            let skip = Ran::Skip(format!("{}: {why}", script.op));
            *unknown = Some(why);
            return skip;
        }
        Err(exec::Unwind::Skip(why)) => return Ran::Skip(format!("{}: {why}", script.op)),
        Err(_) => return Ran::Skip(format!("{}: a stray `exit` or `break`", script.op)),
    };
    let written = std::mem::take(&mut host.written);
    let error = if status == 0 {
        Value::Null
    } else {
        Value::String(format!("exit status {status}"))
    };
    let Some(check) = &script.check else {
        return if status == 0 {
            Ran::Agree(written)
        } else {
            Ran::Disagree(format!("{} exited with {status}", script.op))
        };
    };
    let mut b = bindings.clone();
    b.insert("error".into(), error);
    let check_text = check.to_string();
    let mut check = check.clone();
    for (name, fd) in [("stdout", 1u8), ("stderr", 2u8)] {
        let t = io.stream(fd);
        if check_text.contains(&format!("${name}")) {
            if t.unknown.is_some() && words::decided(&check_text, name, &t) {
                b.insert(name.into(), Value::String(t.s.clone()));
                continue;
            }
            match t.exact(&format!("the check's ${name}")) {
                Ok(s) => {
                    b.insert(name.into(), Value::String(s.to_string()));
                }
                Err(exec::Unwind::Skip(why)) => {
                    let pieces: Vec<&exec::Text> = io
                        .out
                        .iter()
                        .filter(|(f, _)| *f == fd)
                        .map(|(_, t)| t)
                        .collect();
                    match partial::bind(&check, name, &pieces, &mut b) {
                        Ok(c) => check = c,
                        Err(p) => return Ran::Skip(format!("{}: {why} ({p})", script.op)),
                    }
                }
                Err(_) => return Ran::Skip(format!("{}: ${name}", script.op)),
            }
        } else {
            b.insert(name.into(), Value::String(t.s.clone()));
        }
    }
    match judge(&check, &Value::Null, &b) {
        Judged::Match => Ran::Agree(written),
        Judged::Mismatch(why) => Ran::Disagree(format!("{} check {why}", script.op)),
        Judged::Undecidable(why) => Ran::Skip(format!("{} check: {why}", script.op)),
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
