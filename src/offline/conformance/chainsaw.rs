//! A Chainsaw `Test` (chainsaw.kyverno.io/v1alpha1) read into the operations the replay
//! runs: steps in order, each step's `try` operations, step templates (`use.template`)
//! expanded with their bindings. `catch`, `finally` and `cleanup` are diagnostics and
//! clean-up on a live cluster: they are not read.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::chainsaw_timeouts::{Timeouts, seconds};

/// A name bound for the test's expressions (`$name`, `$file`, …).
pub type Bindings = Map<String, Value>;

/// One `try` operation.
#[derive(Debug, Clone)]
pub enum Op {
    /// `apply` (create or update) or `create` (create only) of the resources.
    Apply {
        create_only: bool,
        resources: Resources,
        expect: Vec<Expectation>,
    },
    /// `update`: the resources must exist.
    Update {
        resources: Resources,
        expect: Vec<Expectation>,
    },
    /// `patch`: merged into the existing resources.
    Patch {
        resources: Resources,
        expect: Vec<Expectation>,
    },
    /// `assert` (`present`) or `error` (must not match), retried for `timeout` seconds.
    Assert {
        present: bool,
        resources: Resources,
        timeout: f64,
    },
    /// `delete` of a `ref` or of a file's resources.
    Delete {
        resources: Resources,
        expect: Vec<Expectation>,
    },
    /// `sleep` for its `duration` in seconds (`None`: unreadable); it advances the
    /// replay's clock.
    Sleep(Option<f64>),
    /// `script` or `command`, run by the replay's shell subset (`script/`).
    Script(Script),
    /// An operation whose outcome a static replay cannot decide (`script`, `command`,
    /// `wait`, `events`, `podLogs`, `get`, `describe`, `proxy`), by its name.
    Opaque(String),
}

/// A `script` (`content` run by `sh -c`) or `command` (`entrypoint` + `args`).
#[derive(Debug, Clone)]
pub struct Script {
    /// `script` or `command`.
    pub op: &'static str,
    pub body: ScriptBody,
    /// `env` entries: name and value (an expression over the bindings or a string).
    pub env: Vec<(String, Value)>,
    /// `check`, judged with `$stdout`, `$stderr` and `$error` bound.
    pub check: Option<Value>,
    /// An option the replay does not model (`shell`, `workDir`, `outputs`…), by name.
    pub unmodelled: Option<String>,
}

#[derive(Debug, Clone)]
pub enum ScriptBody {
    Shell(String),
    Command {
        entrypoint: String,
        args: Vec<String>,
    },
}

/// Where an operation's resources come from.
#[derive(Debug, Clone)]
pub enum Resources {
    /// `file:` relative to the test's folder (a glob pattern is allowed).
    File(PathBuf),
    /// An inline `resource:` (or a delete `ref:`).
    Inline(Value),
}

/// One `expect` entry: `match` (optional) selects the resources, `check` is judged with
/// `$error` bound.
#[derive(Debug, Clone)]
pub struct Expectation {
    pub matches: Option<Value>,
    pub check: Value,
}

/// A test, read.
#[derive(Debug, Clone)]
pub struct Test {
    pub name: String,
    /// The folder its files are relative to.
    pub dir: PathBuf,
    /// `spec.skip: true`.
    pub skip: bool,
    /// `spec.namespace`, else none (the replay picks one).
    pub namespace: Option<String>,
    pub bindings: Bindings,
    /// Each step's operations with the bindings in force there.
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    pub ops: Vec<Op>,
    pub bindings: Bindings,
}

/// Why a test file could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
}

/// Reads files for the replay with a size bound (the corpus's files are small).
pub fn read_text(path: &Path) -> Result<String, ReadError> {
    const MAX: u64 = 4 << 20;
    let err = |reason: String| ReadError::File {
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    if meta.len() > MAX {
        return Err(err(format!("larger than {MAX} bytes")));
    }
    std::fs::read_to_string(path).map_err(|e| err(e.to_string()))
}

/// The YAML documents of a file, as JSON.
pub fn read_documents(path: &Path) -> Result<Vec<Value>, ReadError> {
    let text = read_text(path)?;
    crate::yaml::parse_json_stream(&text).map_err(|e| ReadError::File {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Reads the `Test` in `path` (a `chainsaw-test.yaml`). A file holding several documents
/// takes the first `Test`.
pub fn read_test(path: &Path) -> Result<Test, ReadError> {
    let docs = read_documents(path)?;
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let bad = |reason: &str| ReadError::File {
        path: path.display().to_string(),
        reason: reason.to_string(),
    };
    let doc = docs
        .into_iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some("Test"))
        .ok_or_else(|| bad("no chainsaw Test in the file"))?;
    let spec = doc.get("spec").cloned().unwrap_or(Value::Null);
    let bindings = bindings_of(spec.get("bindings"));
    let timeouts = Timeouts::configured(&dir).over(spec.get("timeouts"));
    let mut steps = Vec::new();
    for (i, step) in spec
        .get("steps")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = step
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("step {}", i + 1));
        let timeouts = timeouts.over(step.get("timeouts"));
        let mut step_bindings = bindings.clone();
        step_bindings.extend(bindings_of(step.get("bindings")));
        let ops = if let Some(template) = step.pointer("/use/template").and_then(Value::as_str) {
            let with = bindings_of(step.pointer("/use/with/bindings"));
            step_bindings.extend(with);
            // Chainsaw resolves a template path against the test's folder, a leading `/`
            // included.
            let tpath = dir.join(template.trim_start_matches('/'));
            let tdocs = read_documents(&tpath)?;
            let tspec = tdocs
                .into_iter()
                .find(|d| d.get("kind").and_then(Value::as_str) == Some("StepTemplate"))
                .and_then(|d| d.get("spec").cloned())
                .ok_or_else(|| bad(&format!("{template}: no StepTemplate")))?;
            step_bindings.extend(bindings_of(tspec.get("bindings")));
            ops_of(tspec.get("try"), &step_bindings, timeouts)
        } else {
            ops_of(step.get("try"), &step_bindings, timeouts)
        };
        steps.push(Step {
            name,
            ops,
            bindings: step_bindings,
        });
    }
    Ok(Test {
        name: doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        dir,
        skip: spec.get("skip").and_then(Value::as_bool).unwrap_or(false),
        namespace: spec
            .get("namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        bindings,
        steps,
    })
}

fn bindings_of(v: Option<&Value>) -> Bindings {
    let mut out = Map::new();
    for b in v.and_then(Value::as_array).into_iter().flatten() {
        if let Some(name) = b.get("name").and_then(Value::as_str) {
            out.insert(
                name.to_string(),
                b.get("value").cloned().unwrap_or(Value::Null),
            );
        }
    }
    out
}

/// A string bound by a template (`file: ($file)`) resolved against the bindings.
fn resolve_str(s: &str, bindings: &Bindings) -> String {
    if let Some(inner) = s.strip_prefix("($").and_then(|r| r.strip_suffix(')'))
        && let Some(Value::String(v)) = bindings.get(inner)
    {
        return v.clone();
    }
    s.to_string()
}

fn ops_of(v: Option<&Value>, bindings: &Bindings, timeouts: Timeouts) -> Vec<Op> {
    let mut ops = Vec::new();
    for op in v.and_then(Value::as_array).into_iter().flatten() {
        let Some(map) = op.as_object() else { continue };
        // One operation per entry; extra keys are options (description, timeout…).
        let Some((name, body)) = map.iter().find(|(k, _)| OPERATIONS.contains(&k.as_str())) else {
            let first = map.keys().next().cloned().unwrap_or_default();
            ops.push(Op::Opaque(first));
            continue;
        };
        let resources = || -> Option<Resources> {
            if let Some(f) = body.get("file").and_then(Value::as_str) {
                return Some(Resources::File(PathBuf::from(resolve_str(f, bindings))));
            }
            body.get("resource")
                .or_else(|| body.get("ref"))
                .cloned()
                .map(Resources::Inline)
        };
        let expect = || expectations(body.get("expect"));
        let op = match (name.as_str(), resources()) {
            ("apply" | "create", Some(r)) => Op::Apply {
                create_only: name == "create",
                resources: r,
                expect: expect(),
            },
            ("update", Some(r)) => Op::Update {
                resources: r,
                expect: expect(),
            },
            ("patch", Some(r)) => Op::Patch {
                resources: r,
                expect: expect(),
            },
            ("assert" | "error", Some(r)) => {
                let base = if name == "assert" {
                    timeouts.assert
                } else {
                    timeouts.error
                };
                Op::Assert {
                    present: name == "assert",
                    resources: r,
                    timeout: (body.get("timeout").and_then(Value::as_str))
                        .and_then(seconds)
                        .unwrap_or(base),
                }
            }
            ("delete", Some(r)) => Op::Delete {
                resources: r,
                expect: expect(),
            },
            ("sleep", _) => Op::Sleep(
                body.get("duration")
                    .and_then(Value::as_str)
                    .and_then(seconds),
            ),
            ("script" | "command", _) => script_of(name, body),
            (other, _) => Op::Opaque(other.to_string()),
        };
        ops.push(op);
    }
    ops
}

fn script_of(name: &str, body: &Value) -> Op {
    let op = if name == "script" {
        "script"
    } else {
        "command"
    };
    let body_of = if op == "script" {
        ScriptBody::Shell(text_at(body, "content"))
    } else {
        ScriptBody::Command {
            entrypoint: text_at(body, "entrypoint"),
            args: (body
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten())
            .map(|a| match a {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        }
    };
    let env = (body
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten())
    .filter_map(|e| {
        let name = e.get("name").and_then(Value::as_str)?;
        Some((
            name.to_string(),
            e.get("value").cloned().unwrap_or(Value::Null),
        ))
    })
    .collect();
    let unmodelled = ["shell", "shellArgs", "workDir", "outputs"]
        .into_iter()
        .find(|k| body.get(*k).is_some_and(|v| !v.is_null()))
        .map(str::to_string);
    Op::Script(Script {
        op,
        body: body_of,
        env,
        check: body.get("check").filter(|c| !c.is_null()).cloned(),
        unmodelled,
    })
}

fn text_at(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

const OPERATIONS: &[&str] = &[
    "apply", "create", "update", "patch", "assert", "error", "delete", "sleep", "script",
    "command", "wait", "events", "podLogs", "get", "describe", "proxy",
];

fn expectations(v: Option<&Value>) -> Vec<Expectation> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| Expectation {
            matches: e.get("match").cloned(),
            check: e.get("check").cloned().unwrap_or(Value::Null),
        })
        .collect()
}

/// Every `chainsaw-test.yaml` under `root`, sorted, left out folders starting with `_`
/// (step templates).
pub fn find_tests(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in rd.flatten() {
            let path = entry.path();
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                let name = entry.file_name();
                if !name.to_string_lossy().starts_with('_') {
                    stack.push(path);
                }
            } else if ft.is_file()
                && matches!(
                    path.file_name().and_then(|n| n.to_str()),
                    Some("chainsaw-test.yaml" | "chainsaw-test.yml")
                )
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The files a `file:` names: the path itself, or the files a `*` pattern in its last
/// component matches (sorted).
pub fn expand_file(dir: &Path, file: &Path) -> Vec<PathBuf> {
    let full = dir.join(file);
    let Some(name) = full.file_name().and_then(|n| n.to_str()) else {
        return vec![full];
    };
    if !name.contains('*') {
        return vec![full];
    }
    let parent = full.parent().unwrap_or(dir).to_path_buf();
    let mut out: Vec<PathBuf> = std::fs::read_dir(&parent)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| crate::offline::kyverno::matching::wildcard_match(name, n))
        })
        .collect();
    out.sort();
    out
}
