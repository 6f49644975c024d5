//! Kyverno CLI test files (`kyverno-test.yaml`): loading policies, resources, values and
//! user info, evaluating, and comparing every result row. It must not print.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

mod cel;

use super::engine::{Options, admit_with};
use super::{Policy, Request, RuleResult, RuleStatus, UserInfo, load_policies};
use cel::{CelActionRow, VapRow, gpol_row, mpol_row, vap_row, vpol_row};

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
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
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

pub(crate) fn read_docs(path: &Path) -> Result<Vec<Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let docs =
        crate::yaml::parse_json_stream(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for d in docs {
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

fn str_list(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// The list under `key` (empty when absent).
fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// The string under `key` (empty when absent).
fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

/// The test's values file, digested.
#[derive(Debug, Default)]
pub(crate) struct Values {
    pub(crate) global: Map<String, Value>,
    pub(crate) per_resource: BTreeMap<(String, String), Map<String, Value>>,
    pub(crate) per_rule: BTreeMap<(String, String), Map<String, Value>>,
    pub(crate) namespaces: BTreeMap<String, BTreeMap<String, String>>,
    /// Whole Namespace objects the values file states (`namespaces`), for CEL's
    /// `namespaceObject`.
    pub(crate) namespace_objects: Vec<Value>,
    /// Subresource kind (`Scale`) → its parent and name.
    pub(crate) subresources: BTreeMap<String, super::Subresource>,
}

pub(crate) fn parse_values(doc: &Value) -> Values {
    let map_at = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let mut v = Values {
        global: map_at(doc, "globalValues"),
        ..Values::default()
    };
    for p in list(doc, "policies") {
        let pname = text(p, "name");
        for r in list(p, "rules") {
            let mut vals = map_at(r, "values");
            for (k, val) in map_at(r, "foreachValues") {
                vals.entry(k).or_insert(val);
            }
            v.per_rule.insert((pname.clone(), text(r, "name")), vals);
        }
        for r in list(p, "resources") {
            v.per_resource
                .insert((pname.clone(), text(r, "name")), map_at(r, "values"));
        }
    }
    for sr in list(doc, "subresources") {
        let parent = sr.get("parentResource").unwrap_or(&Value::Null);
        let sub = sr.get("subresource").unwrap_or(&Value::Null);
        let (group, version) = (text(parent, "group"), text(parent, "version"));
        let name = text(sub, "name");
        v.subresources.insert(
            text(sub, "kind"),
            super::Subresource {
                parent_api_version: if group.is_empty() {
                    version
                } else {
                    format!("{group}/{version}")
                },
                parent_kind: text(parent, "kind"),
                name: name.rsplit('/').next().unwrap_or("").to_string(),
            },
        );
    }
    v.namespace_objects = list(doc, "namespaces").cloned().collect();
    for ns in list(doc, "namespaceSelector") {
        let labels = map_at(ns, "labels")
            .iter()
            .map(|(k, v)| (k.clone(), super::vars::to_text(v)))
            .collect();
        v.namespaces.insert(text(ns, "name"), labels);
    }
    v
}

pub(crate) fn parse_user(doc: &Value) -> UserInfo {
    let ui = doc.get("userInfo").unwrap_or(&Value::Null);
    UserInfo {
        username: text(ui, "username"),
        groups: str_list(ui.get("groups")),
        roles: str_list(doc.get("roles")),
        cluster_roles: str_list(doc.get("clusterRoles")),
    }
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

const ROW_FLAGS: &[(&str, &str)] = &[
    (
        "isValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicy (CEL) is not evaluated offline",
    ),
    (
        "isValidatingPolicy",
        "ValidatingPolicy not found among the test's policies",
    ),
    (
        "isImageValidatingPolicy",
        "ImageValidatingPolicy needs registry access",
    ),
    (
        "isMutatingPolicy",
        "MutatingPolicy not found among the test's policies",
    ),
    (
        "isMUtatingPolicy",
        "MutatingPolicy not found among the test's policies",
    ),
    (
        "isMutatingAdmissionPolicy",
        "MutatingAdmissionPolicy (CEL) is not evaluated offline",
    ),
    (
        "isGeneratingPolicy",
        "GeneratingPolicy not found among the test's policies",
    ),
    (
        "isDeletingPolicy",
        "DeletingPolicy is not evaluated offline",
    ),
];

/// Runs one test file and returns its rows; `Err` when the file itself cannot be read.
pub fn run_test(path: &Path) -> Result<Vec<Row>, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let docs = read_docs(path)?;
    let test = docs
        .into_iter()
        .next()
        .ok_or_else(|| format!("{}: empty test file", path.display()))?;
    let file = path.display().to_string();
    let rel = |p: &str| dir.join(p);

    // Policies, noting every kind we will not evaluate.
    let mut policy_objs = Vec::new();
    let mut load_problems = Vec::new();
    for p in str_list(test.get("policies")) {
        if p.starts_with("http://") || p.starts_with("https://") {
            load_problems.push(format!("remote policy {p} is not fetched"));
            continue;
        }
        match read_docs(&rel(&p)) {
            Ok(d) => policy_objs.extend(d),
            Err(e) => load_problems.push(e),
        }
    }
    let mut other_kinds: BTreeMap<String, &'static str> = BTreeMap::new();
    for o in &policy_objs {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
        let name = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if let Some(why) = unsupported_kind(kind) {
            other_kinds.insert(name.to_string(), why);
        }
    }
    // As `kyverno test`, a policy Kyverno refuses is skipped with its validation error.
    let (policies, invalid) = super::split_invalid(load_policies(&policy_objs).0);

    let mut resources = Vec::new();
    for r in str_list(test.get("resources")) {
        match read_docs(&rel(&r)) {
            Ok(d) => resources.extend(d),
            Err(e) => load_problems.push(e),
        }
    }
    resources.iter_mut().for_each(default_namespace);
    let mut opts = Options::default();
    for e in str_list(test.get("exceptions")) {
        match read_docs(&rel(&e)) {
            Ok(d) => opts.exceptions.extend(d),
            Err(e) => load_problems.push(e),
        }
    }
    // ValidatingAdmissionPolicies with their bindings, and their params.
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
    for e in str_list(test.get("paramResources")) {
        match read_docs(&rel(&e)) {
            Ok(d) => vap_objs.extend(d),
            Err(e) => load_problems.push(e),
        }
    }
    let mut targets = Vec::new();
    for key in ["clusterResources", "targetResources"] {
        for e in str_list(test.get(key)) {
            if let Ok(d) = read_docs(&rel(&e)) {
                if key == "targetResources" {
                    targets.extend(d.iter().cloned());
                }
                opts.cluster.extend(d);
            }
        }
    }
    if let Some(c) = test.get("context").and_then(Value::as_str)
        && let Ok(d) = read_docs(&rel(c))
    {
        opts.cluster.extend(d);
    }
    let values = match test.get("variables").and_then(Value::as_str) {
        Some(v) => match read_docs(&rel(v)) {
            Ok(d) => d.first().map(parse_values).unwrap_or_default(),
            Err(e) => {
                load_problems.push(e);
                Values::default()
            }
        },
        None => test.get("values").map(parse_values).unwrap_or_default(),
    };
    opts.rule_values = values.per_rule.clone();
    opts.api_responses = test
        .get("apiCallResponses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let user = match test.get("userinfo").and_then(Value::as_str) {
        Some(u) => match read_docs(&rel(u)) {
            Ok(d) => d.first().map(parse_user).unwrap_or_default(),
            Err(e) => {
                load_problems.push(e);
                UserInfo::default()
            }
        },
        None => UserInfo::default(),
    };

    // Clone sources named by rows are objects of the (fake) cluster, as are the resources.
    for row in test
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(f) = row.get("cloneSourceResource").and_then(Value::as_str)
            && let Ok(d) = read_docs(&rel(f))
        {
            opts.cluster.extend(d);
        }
    }
    opts.cluster.extend(resources.iter().cloned());
    let mut cache: BTreeMap<(usize, String), EvalOut> = BTreeMap::new();
    let readable = std::cell::OnceCell::new();
    let mut rows = Vec::new();
    for row in test
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let policy_ref = row.get("policy").and_then(Value::as_str).unwrap_or("");
        let policy_name = policy_ref.rsplit('/').next().unwrap_or(policy_ref);
        let rule = row
            .get("rule")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = row
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let expected = row
            .get("result")
            .or_else(|| row.get("status"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut names = str_list(row.get("resources"));
        names.extend(str_list(row.get("resource")));
        let row_ns = row.get("namespace").and_then(Value::as_str);
        let flag_reason = ROW_FLAGS
            .iter()
            .find(|(k, _)| row.get(*k).and_then(Value::as_bool) == Some(true))
            .map(|(_, why)| *why);
        for name in names {
            let mut out = Row {
                file: file.clone(),
                policy: policy_ref.to_string(),
                rule: rule.clone(),
                resource: name.clone(),
                kind: kind.clone(),
                expected: expected.clone(),
                actual: String::new(),
                verdict: Verdict::Skipped,
                reason: String::new(),
                scope: "classic",
            };
            let is_vap = |o: &Value| {
                o.get("kind").and_then(Value::as_str) == Some("ValidatingAdmissionPolicy")
                    && o.pointer("/metadata/name").and_then(Value::as_str) == Some(policy_name)
            };
            let vap_flagged = flag_reason.is_none_or(|w| w.starts_with("ValidatingAdmission"));
            if vap_flagged && let Some(vap) = vap_objs.iter().find(|o| is_vap(o)) {
                let ctx = VapRow {
                    objects: &vap_objs,
                    policy: vap,
                    resources: &resources,
                    cluster: &opts.cluster,
                    values: &values,
                    user: &user,
                };
                vap_row(&mut out, row, &ctx, row_ns);
                rows.push(out);
                continue;
            }
            let is_vpol = |o: &Value| {
                matches!(
                    o.get("kind").and_then(Value::as_str),
                    Some("ValidatingPolicy" | "NamespacedValidatingPolicy")
                ) && o.pointer("/metadata/name").and_then(Value::as_str) == Some(policy_name)
            };
            let vpol_flagged = flag_reason.is_none_or(|w| w.starts_with("ValidatingPolicy"));
            if vpol_flagged && let Some(vpol) = policy_objs.iter().find(|o| is_vpol(o)) {
                let ctx = VapRow {
                    objects: &vap_objs,
                    policy: vpol,
                    resources: &resources,
                    cluster: &opts.cluster,
                    values: &values,
                    user: &user,
                };
                // Built once per file: `resource.get` reads the test's cluster (its
                // cluster and context resources, and its resources).
                let readable = readable.get_or_init(|| readable_objects(&opts.cluster));
                vpol_row(&mut out, row, &ctx, row_ns, &opts.exceptions, readable);
                rows.push(out);
                continue;
            }
            let action_kind = |o: &Value| -> Option<bool> {
                if o.pointer("/metadata/name").and_then(Value::as_str) != Some(policy_name) {
                    return None;
                }
                match o.get("kind").and_then(Value::as_str) {
                    Some("MutatingPolicy" | "NamespacedMutatingPolicy") => Some(true),
                    Some("GeneratingPolicy" | "NamespacedGeneratingPolicy") => Some(false),
                    _ => None,
                }
            };
            if let Some((policy, mutating)) = policy_objs
                .iter()
                .find_map(|o| action_kind(o).map(|m| (o, m)))
                && flag_reason.is_none_or(|w| {
                    w.starts_with(if mutating {
                        "MutatingPolicy"
                    } else {
                        "GeneratingPolicy"
                    })
                })
            {
                let ctx = VapRow {
                    objects: &vap_objs,
                    policy,
                    resources: &resources,
                    cluster: &opts.cluster,
                    values: &values,
                    user: &user,
                };
                let a = CelActionRow {
                    row,
                    row_ns,
                    exceptions: &opts.exceptions,
                    readable: readable.get_or_init(|| readable_objects(&opts.cluster)),
                    dir,
                };
                if mutating {
                    mpol_row(&mut out, &ctx, &a);
                } else {
                    gpol_row(&mut out, &ctx, &a);
                }
                rows.push(out);
                continue;
            }
            if let Some(why) = flag_reason.or_else(|| other_kinds.get(policy_name).copied()) {
                out.reason = why.to_string();
                out.scope = "other-kind";
                rows.push(out);
                continue;
            }
            let Some(pi) = policies.iter().position(|p| p.name == policy_name) else {
                out.verdict = Verdict::Fail;
                out.reason = if let Some((_, why)) = invalid.iter().find(|i| i.0 == policy_name) {
                    format!("policy {policy_name} is invalid: {why}")
                } else if load_problems.is_empty() {
                    format!("policy {policy_name} not found in the test's policies")
                } else {
                    load_problems.join("; ")
                };
                rows.push(out);
                continue;
            };
            let (ns, rname) = match name.rsplit_once('/') {
                Some((n, r)) => (Some(n), r),
                None => (row_ns, name.as_str()),
            };
            let names_it = |r: &Value| {
                r.pointer("/metadata/name").and_then(Value::as_str) == Some(rname)
                    && (kind.is_empty()
                        || r.get("kind").and_then(Value::as_str) == Some(kind.as_str()))
                    && ns.is_none_or(|n| {
                        r.pointer("/metadata/namespace")
                            .and_then(Value::as_str)
                            .unwrap_or("default")
                            == n
                    })
            };
            let op = row
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if !resources.iter().any(names_it) && targets.iter().any(names_it) {
                // A mutate-existing target: the rule runs on a trigger from `resources`.
                for (ri, trigger) in resources.iter().enumerate() {
                    cache.entry((ri, op.clone())).or_insert_with(|| {
                        evaluate(&policies, trigger, &values, &user, &opts, &op)
                    });
                }
                let hit = (0..resources.len())
                    .filter_map(|ri| cache.get(&(ri, op.clone())))
                    .find(|e| e.results.iter().any(|r| r.policy == policy_name));
                match hit {
                    Some(eval) => judge(&mut out, row, eval, dir),
                    None => {
                        out.verdict = Verdict::Fail;
                        out.actual = "skip".into();
                        out.reason = "no trigger in the test's resources fires this rule".into();
                    }
                }
                rows.push(out);
                continue;
            }
            let Some(ri) = resources.iter().position(names_it) else {
                out.verdict = Verdict::Fail;
                out.reason = format!("resource {kind} {name} not found in the test's resources");
                rows.push(out);
                continue;
            };
            // `validate.cel` rows are measured apart from the classic set.
            let is_cel_rule = |r: &Value| {
                r.pointer("/validate/cel").is_some_and(|c| !c.is_null())
                    && r.get("name").and_then(Value::as_str).is_some_and(|n| {
                        rule.is_empty()
                            || n == rule
                            || n.strip_prefix("autogen-cronjob-")
                                .or_else(|| n.strip_prefix("autogen-"))
                                == Some(rule.as_str())
                    })
            };
            if policies[pi].rules.iter().any(is_cel_rule) {
                out.scope = "cel";
            }
            let eval = cache
                .entry((ri, op.clone()))
                .or_insert_with(|| evaluate(&policies, &resources[ri], &values, &user, &opts, &op));
            judge(&mut out, row, eval, dir);
            rows.push(out);
        }
    }
    Ok(rows)
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

struct EvalOut {
    results: Vec<RuleResult>,
    patched: Value,
    /// The object right after each policy (policies apply in the test's order).
    patched_after: BTreeMap<String, Value>,
    generated: Vec<Value>,
    /// Existing resources patched by mutate rules with `targets`.
    targets: Vec<Value>,
}

/// Applies every policy of the test to one resource in order; each policy sees the object
/// the previous ones mutated, as `kyverno test` does.
fn evaluate(
    policies: &[Policy],
    resource: &Value,
    values: &Values,
    user: &UserInfo,
    opts: &Options,
    row_operation: &str,
) -> EvalOut {
    let res_name = resource
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ns = resource
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut out = EvalOut {
        results: Vec::new(),
        patched: resource.clone(),
        patched_after: BTreeMap::new(),
        generated: Vec::new(),
        targets: Vec::new(),
    };
    for policy in policies {
        let mut vals = values.global.clone();
        if let Some(rv) = values
            .per_resource
            .get(&(policy.name.clone(), res_name.to_string()))
        {
            for (k, v) in rv {
                vals.insert(k.clone(), v.clone());
            }
        }
        let operation = if row_operation.is_empty() {
            vals.get("request.operation")
                .and_then(Value::as_str)
                .unwrap_or("CREATE")
                .to_string()
        } else {
            vals.insert(
                "request.operation".into(),
                Value::String(row_operation.into()),
            );
            row_operation.to_string()
        };
        // Values for `request.object.…` change the object itself, so match sees them too.
        let mut subject = out.patched.clone();
        for (k, v) in &vals {
            if let Some(path) = k.strip_prefix("request.object.") {
                super::context::set_path(
                    &mut subject,
                    &super::context::split_path(path),
                    v.clone(),
                );
            }
        }
        let (object, old_object) = if operation == "DELETE" {
            (Value::Null, subject)
        } else {
            (subject, Value::Null)
        };
        let req = Request {
            operation,
            object,
            old_object,
            user_info: user.clone(),
            namespace_labels: values.namespaces.get(ns).cloned().unwrap_or_default(),
            values: Value::Object(vals),
            subresource: resource
                .get("kind")
                .and_then(Value::as_str)
                .and_then(|k| values.subresources.get(k))
                .cloned(),
        };
        let resp = admit_with(std::slice::from_ref(policy), &req, opts);
        out.results.extend(resp.results);
        if !resp.patched.is_null() {
            out.patched = resp.patched;
        }
        out.patched_after
            .insert(policy.name.clone(), out.patched.clone());
        out.generated.extend(resp.generated);
        out.targets.extend(resp.patched_targets);
    }
    out
}

fn judge(out: &mut Row, row: &Value, eval: &EvalOut, dir: &Path) {
    // A row names the rule as written; on Pod controllers it means the autogen copy.
    let policy_name = out
        .policy
        .rsplit('/')
        .next()
        .unwrap_or(&out.policy)
        .to_string();
    let found = eval
        .results
        .iter()
        .filter(|r| r.policy == policy_name)
        .find(|r| {
            out.rule.is_empty()
                || r.rule == out.rule
                || r.rule == format!("autogen-{}", out.rule)
                || r.rule == format!("autogen-cronjob-{}", out.rule)
        });
    let (actual, message) = match found {
        Some(r) => (r.status, r.message.clone()),
        None => (
            RuleStatus::Skip,
            "rule does not apply to this resource".to_string(),
        ),
    };
    out.actual = actual.as_str().to_string();
    let unsupported = found.and_then(|r| r.unsupported.as_ref());
    if let Some(why) = unsupported
        && out.expected != "skip"
    {
        out.verdict = Verdict::Skipped;
        out.reason = why.to_string();
        if out.scope == "classic" {
            out.scope = scope_of(&out.reason);
        }
        return;
    }
    let mut reason = message;
    // A rule that ran but produced something other than the expected object counts as
    // failed, as in `kyverno test`.
    if actual == RuleStatus::Pass {
        let patched = eval
            .patched_after
            .get(&policy_name)
            .unwrap_or(&eval.patched);
        // A mutate-existing rule patched its targets, not the trigger.
        let produced = if eval.targets.is_empty() {
            std::slice::from_ref(patched)
        } else {
            eval.targets.as_slice()
        };
        for key in ["patchedResources", "patchedResource"] {
            if let Some(f) = row.get(key).and_then(Value::as_str)
                && let Err(why) = compare_file(&dir.join(f), produced, patched, false)
            {
                out.actual = "fail".into();
                reason = format!("patched resource differs: {why}");
            }
        }
        if let Some(f) = row.get("generatedResource").and_then(Value::as_str) {
            let first = eval.generated.first().cloned().unwrap_or(Value::Null);
            if let Err(why) = compare_file(&dir.join(f), &eval.generated, &first, true) {
                out.actual = "fail".into();
                reason = format!("generated resource differs: {why}");
            }
        }
    }
    out.verdict = if out.actual == out.expected {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    out.reason = reason;
}

/// Compares the expected object(s) in `file` with what we produced.
fn compare_file(
    file: &Path,
    produced: &[Value],
    fallback: &Value,
    generated: bool,
) -> Result<(), String> {
    let expected = read_docs(file)?;
    for want in &expected {
        let key = identity(want);
        let got = produced
            .iter()
            .find(|p| identity(p) == key)
            .unwrap_or(fallback);
        let (a, mut b) = (normalize(want), normalize(got));
        // The namespace `kyverno test` fills in and the labels Kyverno puts on generated
        // objects are not part of what a test file states.
        if a.pointer("/metadata/namespace").is_none()
            && let Some(m) = b.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.remove("namespace");
        }
        let (a, b) = if generated {
            (fixup_generate_labels(a), fixup_generate_labels(b))
        } else {
            (a, b)
        };
        let a = if got.pointer("/metadata/namespace").is_none() {
            let mut a = a;
            if let Some(m) = a.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("namespace");
            }
            a
        } else {
            a
        };
        if a != b {
            return Err(first_difference(&a, &b, ""));
        }
    }
    Ok(())
}

/// What `kyverno test` does before comparing generated objects: Kyverno's own
/// `generate.kyverno.io/*` labels go, the managed-by label is always Kyverno.
fn fixup_generate_labels(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(labels) = labels.as_object_mut() {
            labels.retain(|k, _| !k.starts_with("generate.kyverno.io/"));
            labels.insert(
                super::generate::MANAGED_BY.to_string(),
                Value::String("kyverno".into()),
            );
        }
    }
    v
}

fn identity(v: &Value) -> (String, String, String) {
    let s = |p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (s("/kind"), s("/metadata/name"), s("/metadata/namespace"))
}

/// Drops nulls and empty maps/lists, which Kyverno's comparison also ignores.
fn normalize(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "creationTimestamp")
                .map(|(k, v)| (k.clone(), normalize(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalize).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

fn first_difference(want: &Value, got: &Value, path: &str) -> String {
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (x, y) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                if x != y {
                    return first_difference(x, y, &format!("{path}/{k}"));
                }
            }
            path.to_string()
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if x != y {
                    return first_difference(x, y, &format!("{path}/{i}"));
                }
            }
            path.to_string()
        }
        _ => format!(
            "at {}: expected {}, got {}",
            if path.is_empty() { "/" } else { path },
            want,
            got
        ),
    }
}
