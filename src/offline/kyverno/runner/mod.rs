//! Kyverno CLI test files (`kyverno-test.yaml`): loading policies, resources, values and
//! user info, evaluating, and comparing every result row. It must not print.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

mod cel;
mod classic;
mod compare;
pub mod reads;
pub mod testfile;
mod values;

use super::entries::Options;
use super::{Policy, UserInfo, load_policies};
use cel::{CelActionRow, VapRow, gpol_row, mpol_row, vap_row, vpol_row};
use testfile::{Flagged, ResultRow, TestFile};
pub(crate) use values::{Values, ValuesError, parse_user, parse_values};

pub const TEST_FILE_NAMES: &[&str] = &["kyverno-test.yaml", "kyverno-test.yml"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Fail,
    Skipped,
}

/// One expanded result row (one resource) and how it came out.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub file: String,
    pub policy: String,
    pub rule: String,
    pub resource: String,
    pub kind: String,
    pub expected: String,
    pub actual: String,
    pub verdict: Verdict,
    pub reason: String,
    /// `classic` (ClusterPolicy/Policy evaluable offline), `vap` (a
    /// ValidatingAdmissionPolicy, measured apart), `cel` (a `validate.cel` rule, measured
    /// apart), `vpol` (a Kyverno ValidatingPolicy, measured apart), `mpol`/`gpol` (a Kyverno
    /// MutatingPolicy/GeneratingPolicy, measured apart), or why a row is outside them:
    /// `other-kind`, `registry`, `cluster`.
    pub scope: &'static str,
}

/// `--test-case-selector "policy=a*, rule=b, resource=c"`: every named field must match
/// (wildcards allowed); unnamed fields match anything.
pub fn selects(selector: &str, row: &Row) -> bool {
    selector.split(',').all(|part| {
        let Some((key, pattern)) = part.split_once('=') else {
            return true;
        };
        let pattern = pattern.trim();
        let value = match key.trim() {
            "policy" => &row.policy,
            "rule" => &row.rule,
            "resource" => &row.resource,
            _ => return true,
        };
        super::matching::wildcard_match(pattern, value)
    })
}

/// Which fidelity set a skip reason puts a row in.
fn scope_of(reason: &str) -> &'static str {
    if reason.contains("registry") || reason.contains("verifyImages") {
        "registry"
    } else if reason.contains("apiCall") || reason.contains("globalReference") {
        "cluster"
    } else if reason.contains("CEL") {
        "cel"
    } else {
        "classic"
    }
}

/// Every test file under `roots` (a file is taken as is).
pub fn find_tests(roots: &[PathBuf]) -> Vec<PathBuf> {
    find_tests_named(roots, TEST_FILE_NAMES)
}

/// Every file called one of `names` under `roots` (a file is taken as is).
pub fn find_tests_named(roots: &[PathBuf], names: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for root in roots {
        if root.is_file() {
            out.push(root.clone());
        } else {
            walk(root, names, &mut out);
        }
    }
    out.sort();
    out
}

fn walk(dir: &Path, names: &[&str], out: &mut Vec<PathBuf>) {
    // Links to folders are not followed (`ln -s . tests/a` ran each test 41 times).
    let Ok(entries) = crate::offline::manifest::listing(dir) else {
        return;
    };
    for (p, is_dir) in entries {
        if is_dir {
            walk(&p, names, out);
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| names.contains(&n))
        {
            out.push(p);
        }
    }
}

/// Why a test file, or a file it names, cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    #[error("{}: not UTF-8 text", .0.display())]
    NotUtf8(PathBuf),
    #[error("{}: {source}", path.display())]
    Yaml {
        path: PathBuf,
        source: crate::yaml::YamlError,
        /// The line and a caret under the column (`diag::excerpt`), for the text report.
        excerpt: Vec<String>,
    },
    #[error("{}: empty test file", .0.display())]
    Empty(PathBuf),
    #[error("{}: {source}", path.display())]
    NotATest {
        path: PathBuf,
        source: testfile::DecodeError,
    },
    /// As `kyverno test` ("failed to decode yaml"), a values file of the wrong shape
    /// fails the whole test.
    #[error("{}: {source}", path.display())]
    Values { path: PathBuf, source: ValuesError },
}

/// A file's YAML documents as written.
fn read_raw_docs(path: &Path) -> Result<Vec<Value>, FileError> {
    let bytes = reads::read(path)?;
    let text = String::from_utf8(bytes).map_err(|_| FileError::NotUtf8(path.to_path_buf()))?;
    crate::yaml::parse_json_stream(&text).map_err(|source| FileError::Yaml {
        path: path.to_path_buf(),
        excerpt: crate::diag::excerpt(&text, source.pos, crate::diag::LINE_WINDOW),
        source,
    })
}

/// A file's objects: a CLI wrapper's `spec.resources` and a `List`'s `items` each count.
pub(crate) fn read_docs(path: &Path) -> Result<Vec<Value>, FileError> {
    let mut out = Vec::new();
    for d in read_raw_docs(path)? {
        // `kind: List` files hold their objects under `items`.
        let wrapper = d
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|a| a.starts_with("cli.kyverno.io"));
        if wrapper && let Some(items) = d.pointer("/spec/resources").and_then(Value::as_array) {
            out.extend(items.iter().cloned());
        } else if d.get("kind").and_then(Value::as_str) == Some("List")
            && let Some(items) = d.get("items").and_then(Value::as_array)
        {
            out.extend(items.iter().cloned());
        } else if d.is_object() {
            out.push(d);
        }
    }
    Ok(out)
}

/// The list under `key` (empty when absent).
fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// The string under `key` (empty when absent).
fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// Kinds whose rows we report as skipped, and why.
fn unsupported_kind(kind: &str) -> Option<&'static str> {
    Some(match kind {
        // Evaluated (scope `vpol`) unless a row flags it as another kind.
        "ValidatingPolicy" | "NamespacedValidatingPolicy" => {
            "ValidatingPolicy named by a row flagged as another kind"
        }
        "ImageValidatingPolicy" | "NamespacedImageValidatingPolicy" => {
            "ImageValidatingPolicy needs registry access"
        }
        "ValidatingAdmissionPolicy" => "ValidatingAdmissionPolicy (CEL) is not evaluated offline",
        "MutatingAdmissionPolicy" => "MutatingAdmissionPolicy (CEL) is not evaluated offline",
        // Evaluated (scopes `mpol`, `gpol`) unless a row flags them as another kind.
        "MutatingPolicy" | "NamespacedMutatingPolicy" => {
            "MutatingPolicy named by a row flagged as another kind"
        }
        "GeneratingPolicy" | "NamespacedGeneratingPolicy" => {
            "GeneratingPolicy named by a row flagged as another kind"
        }
        "DeletingPolicy" | "NamespacedDeletingPolicy" => "DeletingPolicy is not evaluated offline",
        "CleanupPolicy" | "ClusterCleanupPolicy" => "CleanupPolicy is not evaluated offline",
        _ => return None,
    })
}

/// Like the Kyverno CLI, a namespaced object without a namespace lands in `default`.
pub(crate) fn default_namespace(r: &mut Value) {
    let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
    if !CLUSTER_SCOPED.contains(&kind)
        && r.pointer("/metadata/namespace").is_none()
        && let Some(meta) = r.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.insert("namespace".into(), Value::String("default".into()));
    }
}

const CLUSTER_SCOPED: &[&str] = &[
    "Namespace",
    "Node",
    "PersistentVolume",
    "StorageClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "ClusterPolicy",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "PriorityClass",
    "IngressClass",
    "RuntimeClass",
    "APIService",
    "CSIDriver",
    "CSINode",
    "VolumeAttachment",
    "CertificateSigningRequest",
    "ClusterIssuer",
    "PodSecurityPolicy",
    "TokenReview",
    "SubjectAccessReview",
    "SelfSubjectAccessReview",
];
/// Everything a test file's rows are evaluated against, loaded once per file.
pub(crate) struct Suite {
    pub(super) dir: PathBuf,
    pub(super) file: String,
    /// Every object in the policy files, of any kind.
    pub(super) policy_objs: Vec<Value>,
    /// Policies of kinds kca does not evaluate, by name, with the reason.
    other_kinds: BTreeMap<String, &'static str>,
    /// The ClusterPolicies and Policies.
    pub(super) policies: Vec<Policy>,
    /// Policies Kyverno's CLI refuses (name, Kyverno's message): left out, as `kyverno test` does.
    pub(super) invalid: Vec<(String, String)>,
    pub(super) resources: Vec<Value>,
    /// `targetResources`: what mutate-existing rules patch.
    pub(super) targets: Vec<Value>,
    /// ValidatingAdmissionPolicies with their bindings and params.
    pub(super) vap_objs: Vec<Value>,
    pub(super) opts: Options,
    pub(super) values: Values,
    pub(super) user: UserInfo,
    /// Files that could not be read, named in the rows they leave unresolved.
    pub(super) load_problems: Vec<String>,
    /// What `kyverno test` serves CEL's `globalContext`, `http` and `image` libraries.
    pub(super) services: std::sync::Arc<crate::offline::vap::CliServices>,
    /// The test's `jsonPayloads`, by the name it gives them (an unreadable one is left out).
    pub(super) json_payloads: Vec<(String, Value)>,
}

impl Suite {
    /// Reads every file `test` names, relative to `dir`; a file that cannot be read is a
    /// load problem, reported on the rows that need it.
    fn load(path: &Path, test: &TestFile) -> Result<Suite, FileError> {
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let mut problems = Vec::new();
        let mut read = |names: &[String], out: &mut Vec<Value>| {
            for n in names {
                if n.starts_with("http://") || n.starts_with("https://") {
                    problems.push(format!("remote file {n} is not fetched"));
                    continue;
                }
                match read_docs(&dir.join(n)) {
                    Ok(d) => out.extend(d),
                    Err(e) => problems.push(e.to_string()),
                }
            }
        };
        let mut policy_objs = Vec::new();
        read(&test.policies, &mut policy_objs);
        let mut resources = Vec::new();
        read(&test.resources, &mut resources);
        resources.iter_mut().for_each(default_namespace);
        let mut opts = Options::default();
        read(&test.exceptions, &mut opts.exceptions);
        let mut vap_objs: Vec<Value> = policy_objs
            .iter()
            .filter(|o| {
                matches!(
                    o.get("kind").and_then(Value::as_str),
                    Some("ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding")
                )
            })
            .cloned()
            .collect();
        read(&test.param_resources, &mut vap_objs);
        let (values_at, values_doc) = match test.variables.as_str() {
            "" => (path.to_path_buf(), test.values.clone()),
            file => {
                let mut docs = Vec::new();
                read(&[file.to_string()], &mut docs);
                (dir.join(file), docs.into_iter().next())
            }
        };
        let values = match values_doc.as_ref().map(parse_values).transpose() {
            Ok(v) => v.unwrap_or_default(),
            Err(source) => {
                return Err(FileError::Values {
                    path: values_at,
                    source,
                });
            }
        };
        let user = match test.userinfo.as_str() {
            "" => UserInfo::default(),
            file => {
                let mut docs = Vec::new();
                read(&[file.to_string()], &mut docs);
                docs.first().map(parse_user).unwrap_or_default()
            }
        };
        // The (fake) cluster: cluster, target and context resources, clone sources named
        // by rows, and the resources. Unreadable ones only leave objects out, as in
        // `kyverno test`.
        let quiet = |names: &[&str], out: &mut Vec<Value>| {
            for n in names.iter().filter(|n| !n.is_empty()) {
                if let Ok(d) = read_docs(&dir.join(n)) {
                    out.extend(d);
                }
            }
        };
        let mut targets = Vec::new();
        fn names(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        quiet(&names(&test.target_resources), &mut targets);
        quiet(
            &names(&test.cluster_resources),
            std::sync::Arc::make_mut(&mut opts.cluster),
        );
        std::sync::Arc::make_mut(&mut opts.cluster).extend(targets.iter().cloned());
        quiet(
            &[test.context.as_str()],
            std::sync::Arc::make_mut(&mut opts.cluster),
        );
        let clone_sources: Vec<&str> = test
            .results
            .iter()
            .map(|r| r.clone_source_resource.as_str())
            .collect();
        quiet(&clone_sources, std::sync::Arc::make_mut(&mut opts.cluster));
        std::sync::Arc::make_mut(&mut opts.cluster).extend(resources.iter().cloned());
        opts.rule_values = values.per_rule.clone();
        opts.api_responses = test.api_call_responses.clone();
        // The Context file as written (its `images` besides its resources).
        let contexts: Vec<Value> = match test.context.as_str() {
            "" => Vec::new(),
            file => read_raw_docs(&dir.join(file)).unwrap_or_default(),
        };
        let json_payloads = test
            .json_payloads
            .iter()
            .filter_map(|f| {
                let doc = read_raw_docs(&dir.join(f)).ok()?.into_iter().next()?;
                doc.is_object().then(|| (f.clone(), doc))
            })
            .collect();
        let services = std::sync::Arc::new(crate::offline::vap::CliServices::from_test(
            &test.api_call_responses,
            &test.global_context_entries,
            &contexts,
            &|f| read_docs(&dir.join(f)).unwrap_or_default(),
        ));
        let other_kinds = policy_objs
            .iter()
            .filter_map(|o| {
                let why = unsupported_kind(o.get("kind").and_then(Value::as_str)?)?;
                Some((text(&o["metadata"], "name"), why))
            })
            .collect();
        // As `kyverno test`, a policy Kyverno refuses is skipped with its validation error.
        let (policies, invalid) = super::split_invalid(load_policies(&policy_objs).0);
        Ok(Suite {
            file: path.display().to_string(),
            dir,
            policy_objs,
            other_kinds,
            policies,
            invalid,
            resources,
            targets,
            vap_objs,
            opts,
            values,
            user,
            load_problems: problems,
            services,
            json_payloads,
        })
    }

    /// The CEL policy of `kind`s named `name` among the test's policies.
    fn cel_policy(&self, name: &str, kinds: &[&str]) -> Option<&Value> {
        let objs = if kinds == ["ValidatingAdmissionPolicy"] {
            &self.vap_objs
        } else {
            &self.policy_objs
        };
        objs.iter().find(|o| {
            o.get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| kinds.contains(&k))
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
    }

    fn vap_row<'a>(&'a self, policy: &'a Value) -> VapRow<'a> {
        VapRow {
            objects: &self.vap_objs,
            policy,
            resources: &self.resources,
            cluster: &self.opts.cluster,
            values: &self.values,
            user: &self.user,
            services: &self.services,
            json_payloads: &self.json_payloads,
        }
    }
}

/// What rows of one file share: classic evaluations per (resource, operation), and the
/// objects CEL's `resource.get` reads.
#[derive(Default)]
pub(crate) struct Shared {
    cache: BTreeMap<(usize, String), classic::EvalOut>,
    readable: std::cell::OnceCell<std::sync::Arc<Vec<Value>>>,
}

impl Shared {
    fn readable(&self, suite: &Suite) -> &std::sync::Arc<Vec<Value>> {
        self.readable
            .get_or_init(|| readable_objects(&suite.opts.cluster))
    }
}

/// Runs one test file and returns its rows; `Err` when the file itself cannot be read.
pub fn run_test(path: &Path) -> Result<Vec<Row>, FileError> {
    let docs = read_docs(path)?;
    let first = docs
        .into_iter()
        .next()
        .ok_or_else(|| FileError::Empty(path.to_path_buf()))?;
    let test = testfile::decode(first).map_err(|source| FileError::NotATest {
        path: path.to_path_buf(),
        source,
    })?;
    let suite = Suite::load(path, &test)?;
    let mut shared = Shared::default();
    let mut rows = Vec::new();
    for row in &test.results {
        for name in row.resource_names() {
            rows.push(run_row(&suite, &mut shared, row, name));
        }
    }
    Ok(rows)
}

/// One row on one resource, by the kind of its policy: ValidatingAdmissionPolicy,
/// ValidatingPolicy, MutatingPolicy, GeneratingPolicy (the CEL kinds), a kind kca does
/// not evaluate, or a ClusterPolicy/Policy.
fn run_row(suite: &Suite, shared: &mut Shared, row: &ResultRow, name: String) -> Row {
    let policy_name = row.policy.rsplit('/').next().unwrap_or(&row.policy);
    let mut out = Row {
        file: suite.file.clone(),
        policy: row.policy.clone(),
        rule: row.rule.clone(),
        resource: name,
        kind: row.kind.clone(),
        expected: row.expected().to_string(),
        actual: String::new(),
        verdict: Verdict::Skipped,
        reason: String::new(),
        scope: "classic",
    };
    let flagged = row.flagged();
    let flagged_as = |f: Flagged| flagged.is_none_or(|x| x == f);
    if flagged_as(Flagged::ValidatingAdmissionPolicy)
        && let Some(p) = suite.cel_policy(policy_name, &["ValidatingAdmissionPolicy"])
    {
        vap_row(&mut out, row, &suite.vap_row(p));
        return out;
    }
    let exceptions = &suite.opts.exceptions;
    if flagged_as(Flagged::ValidatingPolicy)
        && let Some(p) = suite.cel_policy(
            policy_name,
            &["ValidatingPolicy", "NamespacedValidatingPolicy"],
        )
    {
        let readable = shared.readable(suite);
        vpol_row(&mut out, row, &suite.vap_row(p), exceptions, readable);
        return out;
    }
    for (flag, kinds) in [
        (
            Flagged::MutatingPolicy,
            ["MutatingPolicy", "NamespacedMutatingPolicy"],
        ),
        (
            Flagged::GeneratingPolicy,
            ["GeneratingPolicy", "NamespacedGeneratingPolicy"],
        ),
    ] {
        if flagged_as(flag)
            && let Some(p) = suite.cel_policy(policy_name, &kinds)
        {
            let a = CelActionRow {
                row,
                exceptions,
                readable: shared.readable(suite),
                dir: &suite.dir,
                targets: &suite.targets,
            };
            if flag == Flagged::MutatingPolicy {
                mpol_row(&mut out, &suite.vap_row(p), &a);
            } else {
                gpol_row(&mut out, &suite.vap_row(p), &a);
            }
            return out;
        }
    }
    // A CEL policy that is not there because a file of the test could not be read (a
    // YAML error, a missing file) is that error, as a classic one is (`classic_row`):
    // `kyverno test` fails a test whose policies do not load, it does not skip it.
    if flagged.is_some_and(Flagged::needs_its_policy)
        && !suite.load_problems.is_empty()
        && !suite.other_kinds.contains_key(policy_name)
    {
        out.verdict = Verdict::Fail;
        out.reason = suite.load_problems.join("; ");
        out.scope = match flagged {
            Some(Flagged::ValidatingAdmissionPolicy) => "vap",
            Some(Flagged::MutatingPolicy) => "mpol",
            Some(Flagged::GeneratingPolicy) => "gpol",
            _ => "vpol",
        };
        return out;
    }
    if let Some(why) = flagged
        .map(Flagged::reason)
        .or_else(|| suite.other_kinds.get(policy_name).copied())
    {
        out.reason = why.to_string();
        out.scope = "other-kind";
        return out;
    }
    classic::classic_row(&mut out, suite, shared, row, policy_name);
    out
}

/// The objects Kyverno's `resource.get`/`List` read in a CEL policy: the test's cluster
/// (its cluster and context resources, and its resources), a CLI `Context` file's
/// `spec.resources` each counting.
fn readable_objects(cluster: &[Value]) -> std::sync::Arc<Vec<Value>> {
    let mut out = Vec::with_capacity(cluster.len());
    for o in cluster {
        if o.get("kind").and_then(Value::as_str) == Some("Context")
            && text(o, "apiVersion").starts_with("cli.kyverno.io/")
        {
            out.extend(list(&o["spec"], "resources").cloned());
        } else {
            out.push(o.clone());
        }
    }
    std::sync::Arc::new(out)
}
