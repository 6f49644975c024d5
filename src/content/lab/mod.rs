//! The `Lab` content model and its lint: metadata, workspace, starter/solution files,
//! fixtures, tasks with checks of six kinds, mutants and reset rules. Pure: reads the lab's
//! own files (to prove references exist and parse), never a cluster or the workspace.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use regex::Regex;
use serde_json::Value;

use super::decode::Text;

mod behaviour;
mod checks;
mod files;
mod mutant;
mod setup;
mod top;

pub use files::error_chain;
pub use top::decode;

/// Label every object a lab creates carries, with the lab id as value.
pub const LAB_LABEL: &str = "kca.dev/lab";
/// The standard "who manages this" label, set to [`MANAGED_BY`].
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
pub const MANAGED_BY: &str = "kca";

#[derive(Debug, Clone, Default)]
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
    /// Derived mutants declared equivalent (`equivalentMutants`), with the reason.
    pub equivalent_mutants: Vec<Equivalent>,
    pub reset: Reset,
    /// Advice for the author found while decoding (never stops the lab from loading):
    /// position in lab.yaml, message, hint. `kca validate` shows them as warnings.
    pub advice: Vec<(crate::yaml::Pos, crate::error::Msg, crate::error::Msg)>,
}

/// A derived mutant (`kca lab verify`) that the author declares equivalent, and why.
#[derive(Debug, Clone)]
pub struct Equivalent {
    pub id: String,
    pub reason: Text,
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
    /// The lesson section the task relies on: `module-N#anchor` (`kca lesson N`).
    pub lesson: Option<String>,
    /// Changes kca makes to the lab's own objects when the learner reaches this task
    /// (every earlier task passes): an incident to diagnose, applied once, undone by reset.
    pub setup: Vec<SetupAction>,
}

/// One declarative setup step. Only objects the lab owns are touched: an applied object is
/// labelled as the lab's, and a deleted or patched one must be declared by the lab
/// (fixtures, starter, solution or an earlier setup) with the lab's labels.
#[derive(Debug, Clone, PartialEq)]
pub enum SetupAction {
    /// Apply the objects of a file beside lab.yaml (labelled as owned).
    Apply { file: String, objects: Vec<Value> },
    /// Delete an owned object (absent is fine).
    Delete(ObjSel),
    /// JSON merge patch (RFC 7386) on an owned object (`null` removes a key).
    Patch { target: ObjSel, merge: Value },
    /// Takes a permission away from a subject, wherever the learner granted it: every
    /// Role or ClusterRole of the learner's workspace that gives the subject `verb` on
    /// `resource` (of `group`) is deleted, whatever its name (`lab::privilege` finds them
    /// through bindings and aggregation).
    Revoke {
        user: String,
        groups: Vec<String>,
        verb: String,
        group: String,
        resource: String,
    },
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
    /// `guard: true`: the check holds before the learner does anything (a policy the
    /// starter ships, a rule the learner must keep); see [`Check::is_guard`].
    pub guard: bool,
    pub spec: Spec,
}

impl Check {
    /// A guard holds when nothing acts: a probe that must be left alone or let through,
    /// a permission that must be absent, a policy Kyverno must accept, an object that must
    /// be absent, or a check the lab declares `guard: true`. Its points are earned only
    /// once the task's other checks (those proving the behaviour) pass
    /// (`lab::grade::count_guards`), so an empty answer earns nothing.
    pub fn is_guard(&self) -> bool {
        self.guard
            || match &self.spec {
                Spec::Admission {
                    left_alone,
                    expect,
                    assert,
                    ..
                } => *left_alone || (*expect == Expect::Allowed && assert.is_none()),
                Spec::Generated { left_alone, .. } => *left_alone,
                Spec::CanI { expect, .. } => !expect,
                Spec::Accepted { accepted, .. } => *accepted,
                Spec::Resource { present, .. } => !present,
                _ => false,
            }
    }
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
        /// `leftAlone: true`: the probe lies outside the scope the task asks for; it must
        /// be admitted and come through unchanged (`assert`, when given, narrows what
        /// "unchanged" looks at, e.g. `{metadata: {labels: {team: null}}}`).
        left_alone: bool,
    },
    Generated {
        trigger: Probe,
        expect: ObjSel,
        matches: Option<Value>,
        /// The generating policy, to narrow the UpdateRequest search when explaining.
        policy: Option<String>,
        /// `synchronize: true` exercised: after generation the source changes and the
        /// generated copy must follow.
        sync: Option<Box<SyncStep>>,
        /// `leftAlone: true`: the trigger lies outside the rule's scope; nothing may be
        /// generated for it (the `expect` object must not appear).
        left_alone: bool,
    },
    /// The effective permissions the learner's objects give a subject: each `required`
    /// grant must be there, and no rule the learner's objects bring to the subject may
    /// reach beyond `allowed` (the feedback names the excess rule and its object).
    LeastPrivilege {
        user: String,
        groups: Vec<String>,
        required: Vec<Grant>,
        allowed: Vec<Grant>,
    },
    /// A learner's recorded observation (a YAML file of key: value) compared with what
    /// the same run's target returned for the same situation, not with a constant.
    Observed {
        path: String,
        source: ObservedSource,
        /// Learner's key → the fact it must hold (`state`, `verb`, `resource`, `path`,
        /// `container`, `message`).
        fields: Vec<(String, Fact)>,
    },
    /// Kyverno's answer when the learner's own policy is created (a server-side dry run of
    /// a workspace file: the policy validation webhook decides, e.g. the generate
    /// permission check of pkg/policy/generate/validate.go).
    Accepted {
        path: String,
        /// Which document of the file: by kind and name (default: the first policy).
        document: Option<(String, String)>,
        /// Accepted (true) or rejected (false).
        accepted: bool,
        /// With `rejected`: the rejection message must match this.
        message: Option<Regex>,
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
            Spec::Accepted { .. } => "accepted",
            Spec::LeastPrivilege { .. } => "least-privilege",
            Spec::Observed { .. } => "observed",
        }
    }
}

pub(crate) const KINDS: &str =
    "file, resource, can-i, admission, generated, command, accepted, least-privilege, observed";

/// One grant of a `least-privilege` check: verbs on resources of API groups (`*` allowed),
/// in a namespace (`required` only; empty: cluster-wide).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
    pub namespace: String,
}

impl Grant {
    /// Whether this grant holds `verb` on `resource` of `group` (its `*` covers any).
    pub fn covers(&self, group: &str, resource: &str, verb: &str) -> bool {
        let has = |list: &[String], x: &str| list.iter().any(|i| i == "*" || i == x);
        has(&self.groups, group) && has(&self.resources, resource) && has(&self.verbs, verb)
    }
}

/// What an `observed` check asks the target for: the denial of an admission probe, or
/// the UpdateRequest a generate trigger leaves.
#[derive(Debug, Clone)]
pub enum ObservedSource {
    /// `starter`: workspace files taken as the starter has them for this situation (the
    /// observation is of the state before the task's fix).
    Denial { probe: Probe, starter: Vec<String> },
    UpdateRequest {
        trigger: Probe,
        policy: Option<String>,
    },
}

/// A fact an observation may record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    /// The UpdateRequest's `status.state` (Failed or Pending: both are what a learner may
    /// honestly see, pkg/background/update_request_controller.go reconcileURStatus).
    State,
    /// The verb and resource of the "cannot VERB resource \"RES\"" in the message.
    Verb,
    Resource,
    /// The path after "failed at path" in a denial, and the container at its index in the
    /// mutated object.
    Path,
    Container,
}

impl Fact {
    pub const NAMES: &'static str = "state, verb, resource, path, container";
    pub fn parse(s: &str) -> Option<Fact> {
        Some(match s {
            "state" => Fact::State,
            "verb" => Fact::Verb,
            "resource" => Fact::Resource,
            "path" => Fact::Path,
            "container" => Fact::Container,
            _ => return None,
        })
    }
}

/// An object by apiVersion, kind, namespace and name. For generated objects an empty
/// namespace means "the trigger's namespace" (a Namespace trigger's own name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjSel {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjSel {
    /// The object this selects, as the targets name objects.
    pub fn obj_ref(&self) -> crate::target::ObjRef {
        crate::target::ObjRef {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

/// After a `generated` check finds its object: merge-patch `source` (an owned object) with
/// `patch`, then the generated object must come to match `matches`; the source is
/// restored afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncStep {
    pub source: ObjSel,
    pub patch: Value,
    pub matches: Value,
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

#[cfg(test)]
mod tests;
