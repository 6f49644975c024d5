//! The `Lab` content model and its lint: metadata, workspace, starter/solution files,
//! fixtures, tasks with checks of six kinds, mutants and reset rules. Pure: reads the lab's
//! own files (to prove references exist and parse), never a cluster or the workspace.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::decode::{Decoder, Fields, Text, closest};
use crate::yaml::{Node, Pos, Yaml};

/// Label every object a lab creates carries, with the lab id as value.
pub const LAB_LABEL: &str = "kca.dev/lab";
/// The standard "who manages this" label, set to [`MANAGED_BY`].
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "kca";

#[derive(Debug, Clone)]
pub struct Lab {
    pub id: String,
    pub title: Text,
    pub module: Option<i64>,
    pub concepts: Vec<String>,
    pub description: Option<Text>,
    /// The folder holding `lab.yaml`; every file reference is relative to it.
    pub dir: PathBuf,
    /// Name of the workspace folder under the learner's home (default: the id).
    pub workspace_name: String,
    /// Workspace files or folders the learner applies to the cluster (empty: every YAML file).
    pub apply: Vec<String>,
    /// Template variables for starter files, besides `lab`, `workspace` and `lab_dir`.
    pub vars: BTreeMap<String, String>,
    /// From `starter/<path>` to `<workspace>/<path>`.
    pub starter: Vec<FileRef>,
    /// Files under the lab folder applied at start (and after reset), labelled as owned.
    pub fixtures: Vec<String>,
    pub tasks: Vec<Task>,
    /// From `solution/<path>` onto the starter.
    pub solution: Vec<FileRef>,
    pub mutants: Vec<Mutant>,
    pub reset: Reset,
}

/// A workspace-relative file; `template` files are rendered with tera.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRef {
    pub path: String,
    pub template: bool,
}

#[derive(Debug, Clone)]
pub struct Task {
    pub id: String,
    pub title: Text,
    pub instructions: Text,
    pub hints: Vec<Text>,
    pub checks: Vec<Check>,
}

impl Task {
    pub fn max_points(&self) -> u32 {
        self.checks.iter().map(|c| c.points).sum()
    }
}

#[derive(Debug, Clone)]
pub struct Check {
    pub id: String,
    pub title: Option<Text>,
    pub points: u32,
    /// How long the check may wait (generated objects, policy readiness, commands).
    pub timeout: Duration,
    /// Learner-facing feedback when the check fails (and, optionally, when it passes).
    pub on_fail: Option<Text>,
    pub on_pass: Option<Text>,
    pub spec: Spec,
}

/// What to look for on an object or in a file, with the reference of each kind's fields.
#[derive(Debug, Clone)]
pub enum Spec {
    File {
        path: String,
        /// Every document must parse (YAML, or JSON for `.json`).
        parses: bool,
        /// Kinds that must be among the file's documents.
        kinds: Vec<String>,
        /// A partial tree at least one document must match.
        matches: Option<Value>,
    },
    Resource {
        target: ObjSel,
        present: bool,
        matches: Option<Value>,
        /// `installed: true`: the object belongs to the cluster's installation (Kyverno's
        /// own Lease, webhook configuration, Deployment), not to the lab; an offline object
        /// set that lacks it cannot judge the check, so it is `skipped`, not failed.
        installed: bool,
    },
    /// The question `kubectl auth can-i --as` asks, and the answer expected.
    CanI {
        query: crate::target::AccessQuery,
        expect: bool,
    },
    Admission {
        probe: Probe,
        update: bool,
        user: Option<(String, Vec<String>)>,
        expect: Expect,
        /// A partial tree the admitted (mutated) object must match.
        assert: Option<Value>,
        /// Policies to wait for (Ready) before probing; a named denier is added.
        policies: Vec<String>,
    },
    Generated {
        trigger: Probe,
        expect: ObjSel,
        matches: Option<Value>,
        /// The generating policy, to narrow the UpdateRequest search when explaining.
        policy: Option<String>,
    },
    Command {
        run: Vec<String>,
        env: BTreeMap<String, String>,
        stdin: Option<String>,
        exit: ExitWant,
        stdout: Vec<Regex>,
        stderr: Vec<Regex>,
        /// `skipExit: N`: the program ending with N means "cannot judge here" (a tool or a
        /// chart is missing); the verdict is `skipped` with the program's last words.
        skip_exit: Option<i32>,
    },
}

impl Spec {
    pub fn kind(&self) -> &'static str {
        match self {
            Spec::File { .. } => "file",
            Spec::Resource { .. } => "resource",
            Spec::CanI { .. } => "can-i",
            Spec::Admission { .. } => "admission",
            Spec::Generated { .. } => "generated",
            Spec::Command { .. } => "command",
        }
    }
}

const KINDS: &str = "file, resource, can-i, admission, generated, command";

/// An object by apiVersion, kind, namespace and name. For generated objects an empty
/// namespace means "the trigger's namespace" (a Namespace trigger's own name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjSel {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

/// A probe or trigger object: a file beside lab.yaml (read at load time) or inline.
#[derive(Debug, Clone)]
pub struct Probe {
    pub source: Option<String>,
    pub object: Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    Allowed,
    /// Denied; by a named Kyverno policy (and rule) or ValidatingAdmissionPolicy when given.
    Denied(Option<Denier>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denier {
    Kyverno {
        policy: String,
        rule: Option<String>,
    },
    Vap {
        policy: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitWant {
    Code(i32),
    NonZero,
}

/// A realistic wrong answer: the solution with some files replaced, edited or removed.
#[derive(Debug, Clone)]
pub struct Mutant {
    pub id: String,
    pub description: Text,
    /// From `mutants/<id>/<path>` over the solution.
    pub files: Vec<FileRef>,
    pub edits: Vec<Edit>,
    pub remove: Vec<String>,
    /// Checks that must fail on this mutant (others may fail too).
    pub fails: Vec<String>,
}

/// Replace the first occurrence of `find` in a solution file with `replace`.
#[derive(Debug, Clone)]
pub struct Edit {
    pub path: String,
    pub find: String,
    pub replace: String,
}

#[derive(Debug, Clone, Default)]
pub struct Reset {
    /// Kinds swept by the lab label besides those of the fixtures and solution manifests.
    pub kinds: Vec<(String, String)>,
}

impl Lab {
    pub fn checks(&self) -> impl Iterator<Item = (&Task, &Check)> {
        self.tasks
            .iter()
            .flat_map(|t| t.checks.iter().map(move |c| (t, c)))
    }

    pub fn check(&self, id: &str) -> Option<&Check> {
        self.checks().map(|(_, c)| c).find(|c| c.id == id)
    }

    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn max_points(&self) -> u32 {
        self.tasks.iter().map(Task::max_points).sum()
    }

    /// Whether grading or setting up the lab involves a cluster at all (some labs are about
    /// files and commands only).
    pub fn needs_cluster(&self) -> bool {
        !self.fixtures.is_empty()
            || self
                .checks()
                .any(|(_, c)| !matches!(c.spec, Spec::File { .. } | Spec::Command { .. }))
    }

    /// The labels that mark an object as owned by this lab.
    pub fn owner_labels(&self) -> [(&'static str, &str); 2] {
        [(LAB_LABEL, &self.id), (MANAGED_BY_LABEL, MANAGED_BY)]
    }

    /// The selector that finds this lab's objects (and nothing else).
    pub fn selector(&self) -> String {
        format!("{LAB_LABEL}={},{MANAGED_BY_LABEL}={MANAGED_BY}", self.id)
    }

    /// The source of a starter, solution or mutant file.
    pub fn source(&self, section: &str, path: &str) -> PathBuf {
        self.dir.join(section).join(path)
    }
}

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub fn decode(d: &mut Decoder<'_>, top: &Fields<'_>, path: &Path) -> Option<Lab> {
    let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
    let meta = top.req(d, "metadata").and_then(|n| d.fields(n));
    let (mut id, mut title, mut module, mut concepts, mut description) =
        (None, None, None, Vec::new(), None);
    if let Some(m) = meta {
        id = m.req(d, "id").and_then(|n| lab_id(d, n));
        title = m.req(d, "title").and_then(|n| d.text(n));
        module = m.opt("module").and_then(|n| d.int_in(n, 0..=99));
        concepts = m.opt("concepts").map(|n| d.strings(n)).unwrap_or_default();
        description = m.opt("description").and_then(|n| d.text(n));
        m.finish(d, "lab metadata");
    }
    if let (Some(id), Some(name)) = (&id, dir.file_name().and_then(|n| n.to_str()))
        && name != id
        && path.file_name().is_some_and(|f| f == "lab.yaml")
    {
        let pos = top.opt("metadata").map_or(top.pos(), |n| n.pos);
        d.error_hint(
            pos,
            format!("lab id `{id}` differs from its folder `{name}`"),
            "name the folder after the id, so `kca lab start ID` finds it",
        );
    }
    let mut workspace_name = id.clone().unwrap_or_default();
    let mut apply = Vec::new();
    if let Some(w) = top.opt("workspace").and_then(|n| d.fields(n)) {
        if let Some(n) = w.opt("dir") {
            workspace_name = lab_id(d, n).unwrap_or_default();
        }
        if let Some(list) = w.opt("apply").and_then(|n| d.list(n)) {
            for n in list {
                apply.extend(rel_path(d, n));
            }
        }
        w.finish(d, "workspace");
    }
    let mut vars = BTreeMap::new();
    if let Some(v) = top.opt("vars") {
        if let Yaml::Map(entries) = &v.value {
            for (k, val) in entries {
                if let (Some(k), Some(val)) = (d.ident(k), d.string(val)) {
                    vars.insert(k, val);
                }
            }
        } else {
            d.error(
                v.pos,
                format!("expected a mapping, found {}", v.type_name()),
            );
        }
    }
    // Templates are rendered in lint with the variables they will get, so a misspelt
    // variable is a content error rather than a learner's crash.
    let mut tctx = tera::Context::new();
    tctx.insert("lab", id.as_deref().unwrap_or(""));
    tctx.insert("workspace", &format!("/root/{workspace_name}"));
    tctx.insert("lab_dir", &dir.display().to_string());
    for (k, v) in &vars {
        tctx.insert(k, v);
    }
    let starter = top
        .opt("starter")
        .map(|n| file_refs(d, n, &dir, "starter", &tctx))
        .unwrap_or_default();
    let fixtures = top
        .opt("fixtures")
        .map(|n| fixture_files(d, n, &dir))
        .unwrap_or_default();
    let solution = top
        .req(d, "solution")
        .map(|n| file_refs(d, n, &dir, "solution", &tctx))
        .unwrap_or_default();
    let mut tasks = Vec::new();
    if let Some(list) = top.req(d, "tasks").and_then(|n| d.list(n)) {
        if list.is_empty() {
            d.error(top.pos(), "a lab needs at least one task");
        }
        for n in list {
            tasks.extend(decode_task(d, n, &dir, &tctx));
        }
    }
    unique_ids(d, "task", &item_ids(top.opt("tasks"), None));
    unique_ids(d, "check", &item_ids(top.opt("tasks"), Some("checks")));
    let check_ids: Vec<&str> = tasks
        .iter()
        .flat_map(|t| t.checks.iter().map(|c| c.id.as_str()))
        .collect();
    let sol_paths: BTreeSet<&str> = solution.iter().map(|f| f.path.as_str()).collect();
    let start_paths: BTreeSet<&str> = starter.iter().map(|f| f.path.as_str()).collect();
    let mut mutants = Vec::new();
    if let Some(list) = top.opt("mutants").and_then(|n| d.list(n)) {
        for n in list {
            mutants.extend(decode_mutant(
                d,
                n,
                &dir,
                &tctx,
                &check_ids,
                &sol_paths,
                &start_paths,
            ));
        }
        unique_ids(d, "mutant", &item_ids(top.opt("mutants"), None));
    }
    let mut reset = Reset::default();
    if let Some(r) = top.opt("reset").and_then(|n| d.fields(n)) {
        if let Some(list) = r.opt("kinds").and_then(|n| d.list(n)) {
            for n in list {
                let Some(k) = d.fields(n) else { continue };
                let api = k.req(d, "apiVersion").and_then(|n| d.ident(n));
                let kind = k.req(d, "kind").and_then(|n| d.ident(n));
                k.finish(d, "a reset kind");
                if let (Some(a), Some(k)) = (api, kind) {
                    reset.kinds.push((a, k));
                }
            }
        }
        r.finish(d, "reset");
    }
    Some(Lab {
        id: id?,
        title: title?,
        module,
        concepts,
        description,
        dir,
        workspace_name,
        apply,
        vars,
        starter,
        fixtures,
        tasks,
        solution,
        mutants,
        reset,
    })
}

/// Lab ids become folder names and label values: lowercase letters, digits and dashes.
fn lab_id(d: &mut Decoder<'_>, n: &Node) -> Option<String> {
    let s = d.ident(n)?;
    let ok = s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if !ok {
        d.error_hint(
            n.pos,
            format!("`{s}` is not a valid lab id"),
            "use lowercase letters, digits and `-` (it becomes a folder name and a label value)",
        );
        return None;
    }
    Some(s)
}

/// A relative path that stays inside its folder.
fn rel_path(d: &mut Decoder<'_>, n: &Node) -> Option<String> {
    let s = d.ident(n)?;
    let p = Path::new(&s);
    if p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        d.error_hint(
            n.pos,
            format!("`{s}` must be a relative path inside the lab"),
            "drop leading `/` and any `..`",
        );
        return None;
    }
    Some(s)
}

/// `- path` or `- {path: …, template: true}`; each `<section>/<path>` must exist.
fn file_refs(
    d: &mut Decoder<'_>,
    node: &Node,
    dir: &Path,
    section: &str,
    tctx: &tera::Context,
) -> Vec<FileRef> {
    let mut out: Vec<FileRef> = Vec::new();
    let Some(list) = d.list(node) else {
        return out;
    };
    for n in list {
        let (path, template, at) = if matches!(n.value, Yaml::Map(_)) {
            let Some(f) = d.fields(n) else { continue };
            let path = f.req(d, "path").and_then(|p| rel_path(d, p));
            let template = f.opt("template").and_then(|t| d.bool(t)).unwrap_or(false);
            let at = f.opt("path").map_or(n.pos, |p| p.pos);
            f.finish(d, "a file entry");
            (path, template, at)
        } else {
            (rel_path(d, n), false, n.pos)
        };
        let Some(path) = path else { continue };
        let src = dir.join(section).join(&path);
        if !src.is_file() {
            d.error_hint(
                at,
                format!("missing {section} file `{section}/{path}`"),
                format!("create {} or remove this entry", src.display()),
            );
        } else if template {
            check_template(d, at, &src, tctx);
        }
        if out.iter().any(|f| f.path == path) {
            d.error(at, format!("`{path}` is listed twice"));
        }
        out.push(FileRef { path, template });
    }
    out
}

fn check_template(d: &mut Decoder<'_>, at: Pos, src: &Path, tctx: &tera::Context) {
    let text = match crate::input::read_text(src) {
        Ok(t) => t,
        Err(e) => return d.error_hint(at, e.to_string(), e.hint()),
    };
    if let Err(e) = crate::lab::template::render(&text, tctx) {
        d.error_hint(
            at,
            format!("template {} does not render: {e}", src.display()),
            "templates know `lab`, `workspace`, `lab_dir` and the lab's `vars`; drop \
             `template: true` if the file is not a template",
        );
    }
}

pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        parts.push(c.to_string());
        cur = c.source();
    }
    parts.join(": ")
}

fn fixture_files(d: &mut Decoder<'_>, node: &Node, dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Some(list) = d.list(node) else {
        return out;
    };
    for n in list {
        let Some(path) = rel_path(d, n) else { continue };
        let src = dir.join(&path);
        match crate::input::read_text(&src) {
            Err(_) => d.error_hint(
                n.pos,
                format!("missing fixture file `{path}`"),
                format!("create {} or remove this entry", src.display()),
            ),
            Ok(text) => match crate::yaml::parse_json_stream(&text) {
                Err(e) => d.error(
                    n.pos,
                    format!("fixture `{path}` is not valid YAML: {}:{e}", src.display()),
                ),
                Ok(docs) => {
                    for doc in &docs {
                        if crate::target::ObjRef::of(doc).is_none() {
                            d.error_hint(
                                n.pos,
                                format!("fixture `{path}` holds a document that is not a Kubernetes object"),
                                "every document needs apiVersion, kind and metadata.name",
                            );
                            break;
                        }
                    }
                    out.push(path);
                }
            },
        }
    }
    out
}

/// The `id` nodes of the items of `list` (or, with `nested`, of the items of each item's
/// `nested` list), so a duplicate is reported where it is written.
fn item_ids<'n>(list: Option<&'n Node>, nested: Option<&str>) -> Vec<&'n Node> {
    let items = |n: &'n Node| match &n.value {
        Yaml::Seq(items) => items.as_slice(),
        _ => &[],
    };
    let outer = list.map(items).unwrap_or_default();
    match nested {
        None => outer.iter().filter_map(|n| n.get("id")).collect(),
        Some(key) => outer
            .iter()
            .filter_map(|n| n.get(key))
            .flat_map(items)
            .filter_map(|n| n.get("id"))
            .collect(),
    }
}

fn unique_ids(d: &mut Decoder<'_>, what: &str, ids: &[&Node]) {
    let mut seen: std::collections::HashMap<&str, Pos> = Default::default();
    for n in ids {
        let Some(id) = n.as_str() else { continue };
        if let Some(first) = seen.get(id) {
            d.error_hint(
                n.pos,
                format!("duplicate {what} id `{id}` (first at line {})", first.line),
                format!("give every {what} its own id"),
            );
        } else {
            seen.insert(id, n.pos);
        }
    }
}

fn decode_task(d: &mut Decoder<'_>, node: &Node, dir: &Path, tctx: &tera::Context) -> Option<Task> {
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| d.ident(n));
    let title = f.req(d, "title").and_then(|n| d.text(n));
    let instructions = f.req(d, "instructions").and_then(|n| d.text(n));
    let hints = f.opt("hints").map(|n| d.texts(n)).unwrap_or_default();
    let mut checks = Vec::new();
    if let Some(list) = f.req(d, "checks").and_then(|n| d.list(n)) {
        if list.is_empty() {
            d.error(f.pos(), "a task needs at least one check");
        }
        for n in list {
            checks.extend(decode_check(d, n, dir, tctx));
        }
    }
    f.finish(d, "a task");
    Some(Task {
        id: id?,
        title: title?,
        instructions: instructions?,
        hints,
        checks,
    })
}

fn decode_check(
    d: &mut Decoder<'_>,
    node: &Node,
    dir: &Path,
    tctx: &tera::Context,
) -> Option<Check> {
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| d.ident(n));
    let kind_node = f.req(d, "kind");
    let kind = kind_node.and_then(|n| d.string(n));
    let title = f.opt("title").and_then(|n| d.text(n));
    let points = f.opt("points").map_or(Some(1), |n| d.int_in(n, 0..=100));
    let timeout = f.opt("timeout").map_or(Some(DEFAULT_TIMEOUT), |n| {
        d.int_in(n, 1..=600).map(|s| Duration::from_secs(s as u64))
    });
    let (mut on_fail, mut on_pass) = (None, None);
    if let Some(fb) = f.opt("feedback").and_then(|n| d.fields(n)) {
        on_fail = fb.opt("fail").and_then(|n| d.text(n));
        on_pass = fb.opt("pass").and_then(|n| d.text(n));
        fb.finish(d, "check feedback");
    }
    let spec = match kind.as_deref() {
        Some("file") => decode_file(d, &f),
        Some("resource") => decode_resource(d, &f),
        Some("can-i") => decode_can_i(d, &f),
        Some("admission") => decode_admission(d, &f, dir),
        Some("generated") => decode_generated(d, &f, dir),
        Some("command") => decode_command(d, &f, tctx),
        Some(other) => {
            let near = closest(other, KINDS.split(", "))
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            d.error_hint(
                kind_node.map_or(f.pos(), |n| n.pos),
                format!("unknown check kind `{other}`"),
                format!("{near}use one of: {KINDS}"),
            );
            None
        }
        None => None,
    };
    // Fields of an unknown kind cannot be judged; one error for the kind is enough.
    let unknown_kind = kind
        .as_deref()
        .is_some_and(|k| !KINDS.split(", ").any(|x| x == k));
    if !unknown_kind {
        let context = format!("a `{}` check", kind.as_deref().unwrap_or("?"));
        f.finish(d, &context);
    }
    Some(Check {
        id: id?,
        title,
        points: points? as u32,
        timeout: timeout?,
        on_fail,
        on_pass,
        spec: spec?,
    })
}

fn tree(n: &Node) -> Value {
    n.to_json()
}

fn decode_file(d: &mut Decoder<'_>, f: &Fields<'_>) -> Option<Spec> {
    let path = f.req(d, "path").and_then(|n| rel_path(d, n));
    let parses = f.opt("parses").and_then(|n| d.bool(n)).unwrap_or(true);
    let kinds = f.opt("kinds").map(|n| d.strings(n)).unwrap_or_default();
    let matches = f.opt("matches").map(tree);
    Some(Spec::File {
        path: path?,
        parses,
        kinds,
        matches,
    })
}

fn obj_sel(d: &mut Decoder<'_>, n: &Node, need_name: bool) -> Option<ObjSel> {
    let f = d.fields(n)?;
    let api = f.req(d, "apiVersion").and_then(|n| d.ident(n));
    let kind = f.req(d, "kind").and_then(|n| d.ident(n));
    let namespace = f.opt("namespace").and_then(|n| d.ident(n));
    let name = if need_name {
        f.req(d, "name").and_then(|n| d.ident(n))
    } else {
        f.opt("name")
            .and_then(|n| d.ident(n))
            .or(Some(String::new()))
    };
    f.finish(d, "an object reference");
    Some(ObjSel {
        api_version: api?,
        kind: kind?,
        namespace,
        name: name?,
    })
}

fn decode_resource(d: &mut Decoder<'_>, f: &Fields<'_>) -> Option<Spec> {
    let target = f.req(d, "object").and_then(|n| obj_sel(d, n, true));
    let present = match f.opt("state") {
        None => Some(true),
        Some(n) => match d.string(n).as_deref() {
            Some("present") => Some(true),
            Some("absent") => Some(false),
            Some(other) => {
                d.error_hint(
                    n.pos,
                    format!("unknown state `{other}`"),
                    "use `present` or `absent`",
                );
                None
            }
            None => None,
        },
    };
    let matches = f.opt("matches").map(tree);
    if present == Some(false) && matches.is_some() {
        d.error(f.pos(), "`matches` makes no sense with `state: absent`");
    }
    let installed = f.opt("installed").and_then(|n| d.bool(n)).unwrap_or(false);
    Some(Spec::Resource {
        target: target?,
        present: present?,
        matches,
        installed,
    })
}

/// `as: {user, groups}` or `as: {serviceAccount: NS:NAME}` (with the service-account groups).
fn identity(d: &mut Decoder<'_>, n: &Node) -> Option<(String, Vec<String>)> {
    let f = d.fields(n)?;
    let user = f.opt("user").and_then(|n| d.ident(n));
    let groups = f.opt("groups").map(|n| d.strings(n)).unwrap_or_default();
    let sa_node = f.opt("serviceAccount");
    let sa = sa_node.and_then(|n| d.ident(n));
    f.finish(d, "an identity (`as`)");
    // The groups the API server gives `kubectl --as` (and `--as-group`), so both targets
    // ask the same question.
    let as_kubectl = |u: &str, g: &[String]| crate::offline::rbac::impersonated(u, g);
    match (user, sa) {
        (Some(u), None) => Some(as_kubectl(&u, &groups)),
        (None, Some(sa)) => match sa.split_once(':') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains(':') => {
                let id = crate::target::Identity::service_account(ns, name);
                let mut all = id.groups;
                all.extend(groups);
                Some(as_kubectl(&id.user, &all))
            }
            _ => {
                d.error_hint(
                    sa_node.map_or(n.pos, |n| n.pos),
                    format!("`{sa}` is not NAMESPACE:NAME"),
                    "write e.g. `serviceAccount: kyverno:kyverno-background-controller`",
                );
                None
            }
        },
        (Some(_), Some(_)) => {
            d.error(n.pos, "give either `user` or `serviceAccount`, not both");
            None
        }
        (None, None) => {
            d.error_hint(
                n.pos,
                "no identity",
                "add `user:` (with `groups:`) or `serviceAccount: NS:NAME`",
            );
            None
        }
    }
}

fn decode_can_i(d: &mut Decoder<'_>, f: &Fields<'_>) -> Option<Spec> {
    let who = f.req(d, "as").and_then(|n| identity(d, n));
    let verb = f.req(d, "verb").and_then(|n| d.ident(n));
    let resource = f.req(d, "resource").and_then(|n| d.ident(n));
    let mut s = |k: &str| f.opt(k).and_then(|n| d.string(n)).unwrap_or_default();
    let (group, subresource, namespace, name) =
        (s("group"), s("subresource"), s("namespace"), s("name"));
    let expect = f.req(d, "expect").and_then(|n| d.bool(n));
    let (user, groups) = who?;
    Some(Spec::CanI {
        query: crate::target::AccessQuery {
            user,
            groups,
            verb: verb?,
            group,
            resource: resource?,
            subresource,
            namespace,
            name,
        },
        expect: expect?,
    })
}

/// `probe: FILE` (one object, beside lab.yaml) or `probe: {object}` inline.
fn decode_probe(d: &mut Decoder<'_>, n: &Node, dir: &Path) -> Option<Probe> {
    let (source, object) = match &n.value {
        Yaml::Str(_) => {
            let path = rel_path(d, n)?;
            let src = dir.join(&path);
            let Ok(text) = crate::input::read_text(&src) else {
                d.error_hint(
                    n.pos,
                    format!("missing probe file `{path}`"),
                    format!("create {} or write the object inline", src.display()),
                );
                return None;
            };
            match crate::yaml::parse_json_stream(&text) {
                Ok(mut docs) if docs.len() == 1 => (Some(path), docs.remove(0)),
                Ok(docs) => {
                    d.error(
                        n.pos,
                        format!("probe `{path}` must hold one object, found {}", docs.len()),
                    );
                    return None;
                }
                Err(e) => {
                    d.error(n.pos, format!("probe `{path}` is not valid YAML: {e}"));
                    return None;
                }
            }
        }
        Yaml::Map(_) => (None, n.to_json()),
        _ => {
            d.error(
                n.pos,
                format!("expected a file name or an object, found {}", n.type_name()),
            );
            return None;
        }
    };
    let has = |p: &str| object.pointer(p).and_then(Value::as_str).is_some();
    if !has("/apiVersion") || !has("/kind") {
        d.error_hint(
            n.pos,
            "the probe object has no apiVersion or kind",
            "write a whole Kubernetes object",
        );
        return None;
    }
    Some(Probe { source, object })
}

fn decode_admission(d: &mut Decoder<'_>, f: &Fields<'_>, dir: &Path) -> Option<Spec> {
    let probe = f.req(d, "probe").and_then(|n| decode_probe(d, n, dir));
    let update = match f.opt("operation") {
        None => Some(false),
        Some(n) => match d.string(n).as_deref() {
            Some("create") => Some(false),
            Some("update") => Some(true),
            Some(o) => {
                d.error_hint(
                    n.pos,
                    format!("unknown operation `{o}`"),
                    "use `create` or `update`",
                );
                None
            }
            None => None,
        },
    };
    let user = match f.opt("as") {
        Some(n) => Some(identity(d, n)?),
        None => None,
    };
    let expect_node = f.req(d, "expect");
    let expect = expect_node.and_then(|n| d.string(n));
    let mut denier = None;
    if let Some(n) = f.opt("deniedBy") {
        let b = d.fields(n)?;
        let policy = b.opt("policy").and_then(|n| d.ident(n));
        let rule = b.opt("rule").and_then(|n| d.ident(n));
        let vap = b.opt("validatingAdmissionPolicy").and_then(|n| d.ident(n));
        b.finish(d, "`deniedBy`");
        denier = match (policy, vap) {
            (Some(policy), None) => Some(Denier::Kyverno { policy, rule }),
            (None, Some(policy)) if rule.is_none() => Some(Denier::Vap { policy }),
            _ => {
                d.error_hint(
                    n.pos,
                    "`deniedBy` needs `policy` (with optional `rule`) or `validatingAdmissionPolicy`",
                    "name exactly one denier",
                );
                return None;
            }
        };
    }
    let expect = match expect.as_deref() {
        Some("allowed") => {
            if denier.is_some() {
                d.error(f.pos(), "`deniedBy` needs `expect: denied`");
            }
            Expect::Allowed
        }
        Some("denied") => Expect::Denied(denier.clone()),
        Some(o) => {
            d.error_hint(
                expect_node.map_or(f.pos(), |n| n.pos),
                format!("unknown expectation `{o}`"),
                "use `allowed` or `denied`",
            );
            return None;
        }
        None => return None,
    };
    let assert = f.opt("assert").map(tree);
    if assert.is_some() && expect != Expect::Allowed {
        d.error(
            f.pos(),
            "`assert` checks the admitted object: it needs `expect: allowed`",
        );
    }
    let mut policies = f.opt("policies").map(|n| d.strings(n)).unwrap_or_default();
    if let Some(Denier::Kyverno { policy, .. }) = &denier
        && !policies.contains(policy)
    {
        policies.push(policy.clone());
    }
    Some(Spec::Admission {
        probe: probe?,
        update: update?,
        user,
        expect,
        assert,
        policies,
    })
}

fn decode_generated(d: &mut Decoder<'_>, f: &Fields<'_>, dir: &Path) -> Option<Spec> {
    let trigger = f.req(d, "trigger").and_then(|n| decode_probe(d, n, dir));
    let expect = f.req(d, "expect").and_then(|n| obj_sel(d, n, true));
    let matches = f.opt("matches").map(tree);
    let policy = f.opt("policy").and_then(|n| d.ident(n));
    Some(Spec::Generated {
        trigger: trigger?,
        expect: expect?,
        matches,
        policy,
    })
}

fn regexes(d: &mut Decoder<'_>, n: Option<&Node>) -> Vec<Regex> {
    let mut out = Vec::new();
    let Some(n) = n else { return out };
    let items: Vec<&Node> = match &n.value {
        Yaml::Seq(items) => items.iter().collect(),
        _ => vec![n],
    };
    for item in items {
        if let Some(s) = d.string(item) {
            // Line anchors: `^ok$` should find a line of output, as grep would.
            match regex::RegexBuilder::new(&s)
                .multi_line(true)
                .size_limit(1 << 20)
                .build()
            {
                Ok(r) => out.push(r),
                Err(e) => d.error(item.pos, format!("invalid regular expression: {e}")),
            }
        }
    }
    out
}

fn decode_command(d: &mut Decoder<'_>, f: &Fields<'_>, tctx: &tera::Context) -> Option<Spec> {
    let run_node = f.req(d, "run");
    let run = run_node.map(|n| d.strings(n)).unwrap_or_default();
    if let Some(n) = run_node {
        for arg in run.iter().filter(|a| a.contains("{{")) {
            if let Err(e) = crate::lab::template::render(arg, tctx) {
                d.error_hint(
                    n.pos,
                    format!("argument `{arg}` does not render: {e}"),
                    "arguments know `lab`, `workspace`, `lab_dir` and the lab's `vars`",
                );
            }
        }
    }
    if run.is_empty() && run_node.is_some() {
        d.error(
            f.pos(),
            "`run` needs a program (a list: program, then arguments)",
        );
    }
    let mut env = BTreeMap::new();
    if let Some(n) = f.opt("env") {
        if let Yaml::Map(entries) = &n.value {
            for (k, v) in entries {
                if let (Some(k), Some(v)) = (d.ident(k), d.string(v)) {
                    env.insert(k, v);
                }
            }
        } else {
            d.error(
                n.pos,
                format!("expected a mapping, found {}", n.type_name()),
            );
        }
    }
    let stdin = f.opt("stdin").and_then(|n| d.string(n));
    let exit = match f.opt("exit") {
        None => Some(ExitWant::Code(0)),
        Some(n) => match &n.value {
            Yaml::Int(i) if (0..=255).contains(i) => Some(ExitWant::Code(*i as i32)),
            Yaml::Str(s) if s == "nonzero" => Some(ExitWant::NonZero),
            _ => {
                d.error_hint(
                    n.pos,
                    "`exit` must be a code 0..=255 or `nonzero`",
                    "e.g. `exit: 0` or `exit: nonzero`",
                );
                None
            }
        },
    };
    let stdout = regexes(d, f.opt("stdout"));
    let stderr = regexes(d, f.opt("stderr"));
    let skip_exit = f
        .opt("skipExit")
        .and_then(|n| d.int_in(n, 1..=255))
        .map(|c| c as i32);
    if run.is_empty() {
        return None;
    }
    Some(Spec::Command {
        run,
        env,
        stdin,
        exit: exit?,
        stdout,
        stderr,
        skip_exit,
    })
}

fn decode_mutant(
    d: &mut Decoder<'_>,
    node: &Node,
    dir: &Path,
    tctx: &tera::Context,
    check_ids: &[&str],
    solution: &BTreeSet<&str>,
    starter: &BTreeSet<&str>,
) -> Option<Mutant> {
    let f = d.fields(node)?;
    let id = f.req(d, "id").and_then(|n| lab_id(d, n));
    let description = f.req(d, "description").and_then(|n| d.text(n));
    let files = match (&id, f.opt("files")) {
        (Some(id), Some(n)) => file_refs(d, n, &dir.join("mutants"), id, tctx),
        _ => Vec::new(),
    };
    let mut edits = Vec::new();
    if let Some(list) = f.opt("edits").and_then(|n| d.list(n)) {
        for n in list {
            let Some(e) = d.fields(n) else { continue };
            let path_node = e.req(d, "path");
            let path = path_node.and_then(|p| rel_path(d, p));
            let find = e.req(d, "find").and_then(|n| d.string(n));
            let replace = e.req(d, "replace").and_then(|n| d.string(n));
            e.finish(d, "an edit");
            let (Some(path), Some(find), Some(replace)) = (path, find, replace) else {
                continue;
            };
            let at = path_node.map_or(n.pos, |p| p.pos);
            // The edit applies to the solution's copy when it has one, else the starter's.
            let section = if solution.contains(path.as_str()) {
                "solution"
            } else if starter.contains(path.as_str()) {
                "starter"
            } else {
                d.error_hint(
                    at,
                    format!("edit of `{path}`, which neither the solution nor the starter has"),
                    "edit a file listed under `solution:` or `starter:`",
                );
                continue;
            };
            let src = dir.join(section).join(&path);
            match crate::input::read_text(&src) {
                Ok(text) if text.contains(&find) => {}
                Ok(_) => d.error_hint(
                    at,
                    format!("`find` text does not occur in {section}/{path}"),
                    "copy the exact text (spaces and line breaks included) from the file",
                ),
                Err(_) => {}
            }
            edits.push(Edit {
                path,
                find,
                replace,
            });
        }
    }
    let remove: Vec<String> = f
        .opt("remove")
        .and_then(|n| d.list(n))
        .map(|l| l.iter().filter_map(|n| rel_path(d, n)).collect())
        .unwrap_or_default();
    let mut fails = Vec::new();
    if let Some(n) = f.req(d, "fails") {
        let ids = d.strings(n);
        if ids.is_empty() {
            d.error(n.pos, "a mutant must name at least one check it fails");
        }
        for c in ids {
            if !check_ids.contains(&c.as_str()) {
                let near = closest(&c, check_ids.iter().copied())
                    .map(|k| format!("did you mean `{k}`?"))
                    .unwrap_or_else(|| format!("checks are: {}", check_ids.join(", ")));
                d.error_hint(n.pos, format!("mutant names unknown check `{c}`"), near);
            }
            fails.push(c);
        }
    }
    if files.is_empty() && edits.is_empty() && remove.is_empty() {
        d.error_hint(
            f.pos(),
            "this mutant changes nothing",
            "add `files:`, `edits:` or `remove:`",
        );
    }
    f.finish(d, "a mutant");
    Some(Mutant {
        id: id?,
        description: description?,
        files,
        edits,
        remove,
        fails,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{Document, load_file};
    use std::path::Path;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn problems(dir: &Path) -> Vec<String> {
        match load_file(&dir.join("lab.yaml")) {
            Ok(_) => vec![],
            Err(d) => d
                .iter()
                .map(|d| format!("{}:{} {}", d.pos.line, d.pos.col, d.message))
                .collect(),
        }
    }

    const GOOD: &str = r#"apiVersion: kca.dev/v1alpha1
kind: Lab
metadata: {id: demo, title: {ja: デモ, en: Demo}, module: 0, concepts: [mutate]}
vars: {namespace: demo}
starter: [{path: README.md, template: true}, policy.yaml]
fixtures: [fixtures/ns.yaml]
solution: [policy.yaml]
tasks:
  - id: t1
    title: T
    instructions: I
    hints: [first, second]
    checks:
      - {id: c-file, kind: file, path: policy.yaml, kinds: [ClusterPolicy]}
      - {id: c-res, kind: resource, object: {apiVersion: v1, kind: Namespace, name: demo}}
      - {id: c-cani, kind: can-i, as: {serviceAccount: "kyverno:bg"}, verb: get, resource: configmaps, expect: true}
      - {id: c-adm, kind: admission, probe: probes/pod.yaml, expect: denied, deniedBy: {policy: p, rule: r}}
      - {id: c-gen, kind: generated, trigger: {apiVersion: v1, kind: Namespace, metadata: {generateName: x-}}, expect: {apiVersion: v1, kind: ConfigMap, name: c}}
      - {id: c-cmd, kind: command, run: [sh, -c, "exit 1"], exit: nonzero, stdout: ["^$"]}
mutants:
  - {id: m1, description: D, edits: [{path: policy.yaml, find: Enforce, replace: Audit}], fails: [c-file]}
"#;

    fn good_lab(dir: &Path) {
        write(dir, "lab.yaml", GOOD);
        write(dir, "starter/README.md", "workspace {{ workspace }}\n");
        write(dir, "starter/policy.yaml", "# write here\n");
        write(
            dir,
            "solution/policy.yaml",
            "kind: ClusterPolicy # Enforce\n",
        );
        write(
            dir,
            "fixtures/ns.yaml",
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n",
        );
        write(
            dir,
            "probes/pod.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
        );
    }

    #[test]
    fn a_lab_with_every_check_kind_loads() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        good_lab(&dir);
        match load_file(&dir.join("lab.yaml")) {
            Ok(Document::Lab(lab)) => {
                let kinds: Vec<&str> = lab.checks().map(|(_, c)| c.spec.kind()).collect();
                assert_eq!(
                    kinds,
                    [
                        "file",
                        "resource",
                        "can-i",
                        "admission",
                        "generated",
                        "command"
                    ]
                );
                assert_eq!(lab.max_points(), 6);
                assert!(lab.starter[0].template && !lab.starter[1].template);
                let super::Spec::CanI { query, .. } = &lab.check("c-cani").unwrap().spec else {
                    panic!()
                };
                assert_eq!(query.user, "system:serviceaccount:kyverno:bg");
                assert!(
                    query
                        .groups
                        .contains(&"system:serviceaccounts:kyverno".to_string())
                );
            }
            Err(d) => panic!("{d:?}"),
            Ok(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_files_unknown_kinds_and_mutant_checks_are_all_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        good_lab(&dir);
        let src = GOOD
            .replace("fixtures/ns.yaml", "fixtures/gone.yaml")
            .replace(
                "starter: [{path: README.md, template: true}, policy.yaml]",
                "starter: [nope.yaml]",
            )
            .replace("kind: command", "kind: comand")
            .replace("fails: [c-file]", "fails: [c-fil]")
            .replace("find: Enforce", "find: Nowhere");
        write(&dir, "lab.yaml", &src);
        std::fs::remove_file(dir.join("solution/policy.yaml")).unwrap();
        let p = problems(&dir);
        let want = [
            "5:11 missing starter file `starter/nope.yaml`",
            "6:12 missing fixture file `fixtures/gone.yaml`",
            "7:12 missing solution file `solution/policy.yaml`",
            "unknown check kind `comand`",
            "mutant names unknown check `c-fil`",
        ];
        for w in want {
            assert!(p.iter().any(|m| m.contains(w)), "{w} not in {p:?}");
        }
    }

    #[test]
    fn mutant_edit_must_find_its_text_and_ids_must_be_unique() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        good_lab(&dir);
        let src = GOOD
            .replace("find: Enforce", "find: Nowhere")
            .replace("id: c-res", "id: c-file");
        write(&dir, "lab.yaml", &src);
        let p = problems(&dir);
        assert!(
            p.iter().any(|m| m.contains("`find` text does not occur")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|m| m.contains("duplicate check id `c-file`")),
            "{p:?}"
        );
    }

    #[test]
    fn folder_must_match_id_and_paths_stay_inside() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("other");
        good_lab(&dir);
        write(
            &dir,
            "lab.yaml",
            &GOOD.replace("solution: [policy.yaml]", "solution: [../x.yaml]"),
        );
        let p = problems(&dir);
        assert!(
            p.iter().any(|m| m.contains("differs from its folder")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|m| m.contains("must be a relative path")),
            "{p:?}"
        );
    }

    #[test]
    fn a_misspelt_template_variable_is_a_content_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        good_lab(&dir);
        write(
            &dir,
            "starter/README.md",
            "ns {{ namespace }} ws {{ workspce }}\n",
        );
        let p = problems(&dir);
        assert!(
            p.iter()
                .any(|m| m.contains("does not render") && m.contains("workspce")),
            "{p:?}"
        );
    }

    #[test]
    fn broken_template_syntax_is_a_content_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("demo");
        good_lab(&dir);
        write(&dir, "starter/README.md", "{% if %}\n");
        let p = problems(&dir);
        assert!(p.iter().any(|m| m.contains("does not render")), "{p:?}");
    }
}
