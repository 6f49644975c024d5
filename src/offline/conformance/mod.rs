//! Kyverno's Chainsaw conformance suite (test/conformance/chainsaw at v1.19.0) replayed
//! offline: each test's steps in order against a simulated cluster ([`cluster`]), each
//! `apply`/`create`/`update`/`patch`/`delete` an admission request through the offline
//! engines, each `assert`/`error` judged with Chainsaw's rules ([`assert`]), `expect`
//! checks with `$error` bound. What a static replay cannot decide — scripts, registries,
//! reports, events, controllers' work, cleanup — makes the test `Skipped` with a typed
//! reason, never an agreement. See docs/FIDELITY.md.

pub mod assert;
pub mod chainsaw;
mod chainsaw_timeouts;
mod clock;
pub mod cluster;
pub mod controllers;
pub mod script;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use assert::{Judged, judge};
use chainsaw::{Bindings, Expectation, Op, Resources, Test};
use cluster::{Answer, Cluster, Key, text};

use crate::offline::kyverno::RuleKind;

/// The namespace Chainsaw creates for a test (a random `chainsaw-…` live).
pub const TEST_NAMESPACE: &str = "chainsaw-kca";

/// Why a test cannot be decided offline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// `spec.skip: true`.
    Marked,
    /// A `script`, `command`, `wait`, … operation (its name).
    Operation(String),
    /// Image verification or image data from a registry (or another outside service).
    Registry(String),
    /// Policy reports the model does not make (what of them).
    Reports(String),
    /// Kubernetes events the model does not make (what of them).
    Events(String),
    /// Objects or status a controller the replay does not run makes (a Deployment's Pods,
    /// a Pod's status, `UpdateRequest`s, the webhooks of webhook configurations).
    Controller(controllers::Maker),
    /// The cleanup controller's scheduled work the replay cannot place in time, or does
    /// not model (what of it).
    Cleanup(String),
    /// Kyverno's own ConfigMap or flags.
    KyvernoConfig,
    /// A kind discovery does not know (a CRD the test does not apply).
    UnknownKind(String),
    /// A JMESPath expression the replay cannot evaluate.
    Expression(String),
    /// The offline engine declined a request (its typed reason).
    Engine(String),
    /// A file the test names could not be read.
    Unreadable(String),
}

impl Skip {
    /// The reason's class, for the tables.
    pub fn class(&self) -> &'static str {
        match self {
            Skip::Marked => "marked skip",
            Skip::Operation(_) => "script/command",
            Skip::Registry(_) => "registry",
            Skip::Reports(_) => "reports",
            Skip::Events(_) => "events",
            Skip::Controller(_) => "controller",
            Skip::Cleanup(_) => "cleanup",
            Skip::KyvernoConfig => "kyverno config",
            Skip::UnknownKind(_) => "unknown kind",
            Skip::Expression(_) => "expression",
            Skip::Engine(_) => "engine",
            Skip::Unreadable(_) => "unreadable",
        }
    }

    /// A CEL expression the offline evaluator did not evaluate, by what it needed: image
    /// data and outside URLs are a registry's and the network's, the rest the engine's.
    pub fn from_cel(why: &crate::offline::vap::Unsupported) -> Skip {
        if why.needs_registry() {
            Skip::Registry(why.to_string())
        } else {
            Skip::Engine(why.to_string())
        }
    }

    /// A rule the engine did not evaluate, by what it needed.
    pub fn from_unsupported(kind: RuleKind, why: String) -> Skip {
        if kind == RuleKind::VerifyImages || why.contains("registry") || why.contains("network") {
            Skip::Registry(why)
        } else {
            Skip::Engine(why)
        }
    }
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let detail = match self {
            Skip::Controller(m) => return write!(f, "{}: {m}", self.class()),
            Skip::Operation(s)
            | Skip::Registry(s)
            | Skip::Cleanup(s)
            | Skip::Reports(s)
            | Skip::Events(s)
            | Skip::UnknownKind(s)
            | Skip::Expression(s)
            | Skip::Engine(s)
            | Skip::Unreadable(s) => s.as_str(),
            _ => "",
        };
        if detail.is_empty() {
            f.write_str(self.class())
        } else {
            write!(f, "{}: {detail}", self.class())
        }
    }
}

/// A test's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every operation came out as the test expects.
    Agree,
    /// The first operation that did not (step, operation, why).
    Disagree(String),
    Skipped(Skip),
}

#[derive(Debug, Clone)]
pub struct TestResult {
    /// The test folder, relative to the suite's root.
    pub path: String,
    /// The first folder under the root (`validate`, `generate`, …).
    pub area: String,
    pub verdict: Verdict,
}

/// Replays every test under `root`.
pub fn run_suite(root: &Path) -> Vec<TestResult> {
    chainsaw::find_tests(root)
        .iter()
        .map(|f| run_test(root, f))
        .collect()
}

/// Replays one `chainsaw-test.yaml`.
pub fn run_test(root: &Path, file: &Path) -> TestResult {
    let dir = file.parent().unwrap_or(root);
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let path = rel.display().to_string();
    let area = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .unwrap_or_default();
    let verdict = match chainsaw::read_test(file) {
        Ok(test) => replay(&test),
        Err(e) => Verdict::Skipped(Skip::Unreadable(e.to_string())),
    };
    TestResult {
        path,
        area,
        verdict,
    }
}

/// Judged, agreeing, disagreeing and skipped tests of one area.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub agree: usize,
    pub disagree: usize,
    /// By reason class.
    pub skipped: BTreeMap<&'static str, usize>,
}

impl Tally {
    pub fn judged(&self) -> usize {
        self.agree + self.disagree
    }
    pub fn skipped_total(&self) -> usize {
        self.skipped.values().sum()
    }
    pub fn add(&mut self, v: &Verdict) {
        match v {
            Verdict::Agree => self.agree += 1,
            Verdict::Disagree(_) => self.disagree += 1,
            Verdict::Skipped(s) => *self.skipped.entry(s.class()).or_default() += 1,
        }
    }
}

/// The results tallied per area (and `all`).
pub fn tally(results: &[TestResult]) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for r in results {
        out.entry(r.area.clone()).or_default().add(&r.verdict);
    }
    out
}

/// Runs a test's steps in order; the first operation that does not come out as expected
/// decides.
fn replay(test: &Test) -> Verdict {
    if test.skip {
        return Verdict::Skipped(Skip::Marked);
    }
    let ns = test.namespace.as_deref().unwrap_or(TEST_NAMESPACE);
    let mut run = Run {
        cluster: Cluster::new(ns),
        applied: Vec::new(),
        dir: test.dir.clone(),
        clock: clock::Clock::default(),
    };
    // That area of the suite runs on a Kyverno started with policy exceptions disabled.
    run.cluster.exceptions_disabled =
        (test.dir.components()).any(|c| c.as_os_str() == "policy-exceptions-disabled");
    run.cluster.features = controllers::Features::for_test(&test.dir);
    for (si, step) in test.steps.iter().enumerate() {
        // Chainsaw's built-in bindings, unless the test binds the name itself.
        let mut bindings = step.bindings.clone();
        bindings
            .entry("namespace")
            .or_insert_with(|| Value::String(ns.to_string()));
        bindings
            .entry("test")
            .or_insert_with(|| serde_json::json!({"metadata": {"name": test.name}}));
        // A binding's value may itself be an expression over the others.
        let resolved: Bindings = bindings
            .iter()
            .map(|(k, v)| (k.clone(), template(v.clone(), &bindings)))
            .collect();
        let bindings = resolved;
        for (oi, op) in step.ops.iter().enumerate() {
            match run.timed(op, &bindings) {
                Ok(()) => {}
                Err(Stop::Skip(s)) => return Verdict::Skipped(s),
                Err(Stop::Disagree(why)) => {
                    return Verdict::Disagree(format!(
                        "step {} `{}`, operation {}: {why}",
                        si + 1,
                        step.name,
                        oi + 1
                    ));
                }
            }
        }
    }
    Verdict::Agree
}

enum Stop {
    Skip(Skip),
    Disagree(String),
}

struct Run {
    cluster: Cluster,
    /// Keys of the objects the test itself wrote or tried to write.
    applied: Vec<Key>,
    dir: PathBuf,
    /// The time, and the deletions scheduled policies owe.
    clock: clock::Clock,
}

impl Run {
    fn resources(&self, r: &Resources, bindings: &Bindings) -> Result<Vec<Value>, Stop> {
        let docs = match r {
            Resources::Inline(v) => vec![v.clone()],
            Resources::File(f) => {
                let files = chainsaw::expand_file(&self.dir, f);
                let mut docs = Vec::new();
                for file in files {
                    docs.extend(
                        chainsaw::read_documents(&file)
                            .map_err(|e| Stop::Skip(Skip::Unreadable(e.to_string())))?,
                    );
                }
                docs
            }
        };
        // A list document (`items`, whatever its kind) stands for its items, as
        // Chainsaw loads it (`unstructured.IsList`, then each list item).
        let docs = docs.into_iter().flat_map(|d| match d.get("items") {
            Some(Value::Array(items)) => items.clone(),
            _ => vec![d],
        });
        // Templating: `($name)` values are bound before the operation.
        Ok(docs.map(|d| template(d, bindings)).collect())
    }

    fn op(&mut self, op: &Op, bindings: &Bindings) -> Result<(), Stop> {
        match op {
            Op::Sleep(_) => Ok(()),
            Op::Opaque(name) => Err(Stop::Skip(Skip::Operation(name.clone()))),
            Op::Script(s) => match script::run(s, &mut self.cluster, &self.dir, bindings) {
                script::Ran::Agree(written) => {
                    self.applied.extend(written);
                    Ok(())
                }
                script::Ran::Disagree(why) => Err(Stop::Disagree(why)),
                script::Ran::Skip(why) => Err(Stop::Skip(Skip::Operation(why))),
                script::Ran::Controller(m) => Err(Stop::Skip(Skip::Controller(m))),
            },
            Op::Apply {
                create_only,
                resources,
                expect,
            } => {
                for obj in self.resources(resources, bindings)? {
                    let answer = self.cluster.apply(&obj, *create_only);
                    self.settle(&obj, answer, expect, bindings)?;
                }
                Ok(())
            }
            Op::Update { resources, expect } | Op::Patch { resources, expect } => {
                let patch = matches!(op, Op::Patch { .. });
                for obj in self.resources(resources, bindings)? {
                    let answer = self.cluster.update(&obj, patch);
                    self.settle(&obj, answer, expect, bindings)?;
                }
                Ok(())
            }
            Op::Delete { resources, expect } => {
                for obj in self.resources(resources, bindings)? {
                    let answer = self.cluster.delete(&obj);
                    self.settle(&obj, answer, expect, bindings)?;
                }
                Ok(())
            }
            Op::Assert {
                present, resources, ..
            } => {
                for obj in self.resources(resources, bindings)? {
                    self.assert(&obj, *present, bindings)?;
                }
                Ok(())
            }
        }
    }

    /// Judges a write's answer against the operation's `expect` (no `expect`: it must
    /// succeed).
    fn settle(
        &mut self,
        obj: &Value,
        answer: Answer,
        expect: &[Expectation],
        bindings: &Bindings,
    ) -> Result<(), Stop> {
        let error = match answer {
            Answer::Undecidable(s) => return Err(Stop::Skip(s)),
            Answer::Ok => {
                self.tried(obj);
                Value::Null
            }
            Answer::Refused(m) => {
                self.tried(obj);
                Value::String(m)
            }
        };
        let mut b = bindings.clone();
        b.insert("error".into(), error.clone());
        let mut applicable = 0;
        for e in expect {
            if let Some(m) = &e.matches {
                match judge(m, obj, &b) {
                    Judged::Match => {}
                    Judged::Mismatch(_) => continue,
                    Judged::Undecidable(why) => return Err(Stop::Skip(Skip::Expression(why))),
                }
            }
            applicable += 1;
            match judge(&e.check, obj, &b) {
                Judged::Match => {}
                Judged::Mismatch(why) => {
                    return Err(Stop::Disagree(format!(
                        "{}: check {why} ($error: {})",
                        describe(obj),
                        error_text(&error)
                    )));
                }
                Judged::Undecidable(why) => return Err(Stop::Skip(Skip::Expression(why))),
            }
        }
        if applicable == 0 && !error.is_null() {
            return Err(Stop::Disagree(format!(
                "{}: expected to be admitted, was refused: {}",
                describe(obj),
                error_text(&error)
            )));
        }
        Ok(())
    }

    /// `assert` (`present`) or `error` of one expected object.
    fn assert(&self, expected: &Value, present: bool, bindings: &Bindings) -> Result<(), Stop> {
        let kind = text(expected, "/kind");
        match kind.as_str() {
            k if controllers::reports::is_report_kind(k) => {
                let found = controllers::reports::candidates(&self.cluster, expected, present)
                    .map_err(Stop::Skip)?;
                return self.judged(expected, found.iter(), present, bindings);
            }
            "Event" => {
                let mut placed = expected.clone();
                self.cluster.place(&mut placed).map_err(Stop::Skip)?;
                let found = controllers::events::candidates(&self.cluster, &placed, present)
                    .map_err(|why| Stop::Skip(Skip::Events(why)))?;
                return self.judged(&placed, found.iter(), present, bindings);
            }
            "UpdateRequest" => {
                return Err(Stop::Skip(Skip::Controller(controllers::Maker::Kyverno(
                    "UpdateRequests of the background controller".into(),
                ))));
            }
            k => {
                if let Some(why) = controllers::unmodelled_part(&self.cluster, k, expected) {
                    return Err(Stop::Skip(Skip::Controller(controllers::Maker::Kyverno(
                        why,
                    ))));
                }
            }
        }
        let mut placed = expected.clone();
        if let Err(s) = self.cluster.place(&mut placed) {
            return Err(Stop::Skip(s));
        }
        let key = Key::of(&placed);
        if let Some(status) = expected.get("status")
            && !controllers::status::modelled(&kind, status, self.cluster.find(&key))
        {
            return Err(Stop::Skip(Skip::Controller(controllers::Maker::of_status(
                &kind,
            ))));
        }
        let written_by_test = self
            .applied
            .iter()
            .any(|k| k.kind == key.kind && k.group == key.group);
        let held_in_part = self
            .cluster
            .find(&key)
            .is_some_and(|o| cluster::kindstate::partly_held(o).is_some());
        if !written_by_test && !controllers::makes(&kind) && !self.generates() && !held_in_part {
            // Nothing in this replay makes such objects: a controller does, live.
            return Err(Stop::Skip(Skip::Controller(
                controllers::Maker::of_objects(&kind),
            )));
        }
        let candidates: Vec<&Value> = if key.name.is_empty() {
            self.cluster.list(&key).collect()
        } else {
            self.cluster.find(&key).into_iter().collect()
        };
        self.judged(&placed, candidates.into_iter(), present, bindings)
    }

    /// Records that the test wrote (or tried to write) `obj`: a missing object of its
    /// kind is then the test's doing, not a controller's.
    fn tried(&mut self, obj: &Value) {
        let mut placed = obj.clone();
        if self.cluster.place(&mut placed).is_ok() {
            self.applied.push(Key::of(&placed));
        }
    }

    /// `assert` (`present`) or `error` of `placed` against the objects that could be it.
    fn judged<'a>(
        &self,
        placed: &Value,
        candidates: impl Iterator<Item = &'a Value>,
        present: bool,
        bindings: &Bindings,
    ) -> Result<(), Stop> {
        let expected = placed;
        let mut last = format!("no {} found", describe(placed));
        let mut any = false;
        // A candidate held only in part that does not match may match live.
        let mut partly: Option<&'static str> = None;
        for c in candidates {
            // The API server serves an object in the version asked for.
            let mut c = c.clone();
            if let (Some(av), Some(m)) = (expected.get("apiVersion"), c.as_object_mut()) {
                m.insert("apiVersion".into(), av.clone());
            }
            match judge(placed, &c, bindings) {
                Judged::Match => {
                    any = true;
                    break;
                }
                Judged::Mismatch(why) => {
                    partly = partly.or(cluster::kindstate::partly_held(&c));
                    last = why;
                }
                Judged::Undecidable(why) => return Err(Stop::Skip(Skip::Expression(why))),
            }
        }
        if let (false, Some(why)) = (any, partly) {
            return Err(Stop::Skip(Skip::Controller(controllers::Maker::Other(
                why.into(),
            ))));
        }
        match (present, any) {
            (true, true) | (false, false) => Ok(()),
            (true, false) => Err(Stop::Disagree(format!(
                "assert {}: {last}",
                describe(placed)
            ))),
            (false, true) => Err(Stop::Disagree(format!(
                "error {}: a matching object exists",
                describe(placed)
            ))),
        }
    }

    /// Whether something in the cluster makes objects in the background (generate
    /// rules, GeneratingPolicies, mutate-existing targets).
    fn generates(&self) -> bool {
        self.cluster.made_in_background
            || self.cluster.objects.iter().any(|o| {
                let kind = text(o, "/kind");
                matches!(
                    kind.as_str(),
                    "GeneratingPolicy" | "NamespacedGeneratingPolicy"
                ) || (matches!(kind.as_str(), "ClusterPolicy" | "Policy")
                    && o.pointer("/spec/rules")
                        .and_then(Value::as_array)
                        .is_some_and(|rs| {
                            rs.iter().any(|r| {
                                r.get("generate").is_some()
                                    || r.pointer("/mutate/targets").is_some()
                            })
                        }))
            })
    }
}

/// Kyverno's policy kinds, whose status its controllers set.
pub(crate) fn is_policy_kind(kind: &str) -> bool {
    matches!(
        kind,
        "ClusterPolicy"
            | "Policy"
            | "ValidatingPolicy"
            | "NamespacedValidatingPolicy"
            | "MutatingPolicy"
            | "NamespacedMutatingPolicy"
            | "GeneratingPolicy"
            | "NamespacedGeneratingPolicy"
            | "ImageValidatingPolicy"
            | "NamespacedImageValidatingPolicy"
            | "DeletingPolicy"
            | "NamespacedDeletingPolicy"
    )
}

/// Evaluates string values that are expressions over bindings alone (`($name)`) before
/// the object is written or asserted; other expressions stay for the assertion.
fn template(v: Value, b: &Bindings) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, template(v, b))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(|v| template(v, b)).collect()),
        Value::String(s) => {
            // An expression over bindings alone (`($name)`, `($test.metadata.name)`).
            if s.starts_with("($")
                && s.ends_with(')')
                && !s.contains('@')
                && let Ok(val) = assert::evaluate(&s[1..s.len() - 1], &Value::Null, b)
                && !val.is_null()
            {
                return val;
            }
            Value::String(s)
        }
        other => other,
    }
}

fn describe(obj: &Value) -> String {
    let ns = text(obj, "/metadata/namespace");
    let name = text(obj, "/metadata/name");
    let kind = text(obj, "/kind");
    match (ns.is_empty(), name.is_empty()) {
        (_, true) => kind,
        (true, false) => format!("{kind} {name}"),
        (false, false) => format!("{kind} {ns}/{name}"),
    }
}

fn error_text(e: &Value) -> String {
    match e {
        Value::String(s) => {
            let one = s.split_whitespace().collect::<Vec<_>>().join(" ");
            match one.char_indices().nth(300) {
                Some((i, _)) => format!("{}…", &one[..i]),
                None => one,
            }
        }
        _ => "none".into(),
    }
}
