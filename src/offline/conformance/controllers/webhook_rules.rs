//! The `rules` of the webhooks Kyverno 1.19 keeps for ClusterPolicies and Policies, as its
//! webhook controller derives them (pkg/controllers/webhook/controller.go `mergeWebhook`,
//! utils.go `collectResourceDescriptions`, utils_webhook.go `webhook`): the kinds each
//! rule matches with their operations (the rule's own, or the defaults of its type, less
//! what a plain `exclude.any` entry takes away), resolved to resources through discovery
//! (pkg/clients/dclient/discovery.go `FindResources`), collapsed where a wider entry
//! already covers a narrower one, and grouped by group, version, scope and operations.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::super::cluster::text;
use crate::offline::kyverno::matching::wildcard_match;
use crate::offline::rbac::resource::Mapper;

/// The four admission operations Kyverno's rules name.
pub const ALL_OPERATIONS: [&str; 4] = ["CREATE", "UPDATE", "DELETE", "CONNECT"];
const CREATE_UPDATE_DELETE: [&str; 3] = ["CREATE", "UPDATE", "DELETE"];

/// One (group, version, resource, subresource, scope, operation) a webhook is called for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Entry {
    group: String,
    version: String,
    resource: String,
    sub: String,
    scope: &'static str,
    op: &'static str,
}

/// The entries of one webhook.
#[derive(Debug, Clone, Default)]
pub struct RuleSet(BTreeSet<Entry>);

fn op_name(op: &str) -> Option<&'static str> {
    ALL_OPERATIONS.iter().copied().find(|o| *o == op)
}

pub(super) use crate::offline::str_items as strings;

/// Kinds → operations of one policy rule (`collectResourceDescriptions`).
fn kinds_of(rule: &Value, defaults: &[&'static str]) -> BTreeMap<String, BTreeSet<&'static str>> {
    let mut out: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
    let m = rule.get("match").unwrap_or(&Value::Null);
    let mut descriptions: Vec<&Value> = m.get("resources").into_iter().collect();
    for key in ["all", "any"] {
        for f in m.get(key).and_then(Value::as_array).into_iter().flatten() {
            descriptions.extend(f.get("resources"));
        }
    }
    for d in descriptions {
        let ops: Vec<&'static str> = strings(d.get("operations")).filter_map(op_name).collect();
        let ops = if ops.is_empty() {
            defaults.to_vec()
        } else {
            ops
        };
        for kind in strings(d.get("kinds")) {
            out.entry(kind.to_string()).or_default().extend(ops.iter());
        }
    }
    // Only `exclude.any` entries with nothing but kinds and operations count.
    let excludes = rule.pointer("/exclude/any").and_then(Value::as_array);
    for f in excludes.into_iter().flatten() {
        let user = ["subjects", "roles", "clusterRoles"].iter().any(|k| {
            f.get(k)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        });
        let r = f.get("resources").unwrap_or(&Value::Null);
        let narrowed = ["name", "names", "namespaces", "annotations"]
            .iter()
            .any(|k| match r.get(k) {
                Some(Value::String(s)) => !s.is_empty(),
                Some(Value::Array(a)) => !a.is_empty(),
                Some(Value::Object(o)) => !o.is_empty(),
                _ => false,
            })
            || r.get("selector").is_some_and(|v| !v.is_null())
            || r.get("namespaceSelector").is_some_and(|v| !v.is_null());
        if user || narrowed {
            continue;
        }
        let mut kinds: Vec<String> = strings(r.get("kinds")).map(str::to_string).collect();
        if kinds.is_empty() {
            kinds = out.keys().cloned().collect();
        }
        let ops: Vec<&'static str> = strings(r.get("operations")).filter_map(op_name).collect();
        let ops = if ops.is_empty() {
            ALL_OPERATIONS.to_vec()
        } else {
            ops
        };
        for k in kinds {
            if let Some(set) = out.get_mut(&k) {
                for o in &ops {
                    set.remove(o);
                }
            }
        }
    }
    out
}

/// Which of a rule's parts a webhook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The validating webhook: validate, generate, mutate-existing, image checks.
    Validate,
    /// The mutating webhook: standard mutation, image verification, manifests.
    Mutate,
}

fn non_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    }
}

/// The rule-type predicates of api/kyverno/v1/rule_types.go.
pub mod has {
    use super::*;
    pub fn validate(r: &Value) -> bool {
        non_empty(r.get("validate"))
    }
    pub fn generate(r: &Value) -> bool {
        non_empty(r.get("generate"))
    }
    pub fn mutate_existing(r: &Value) -> bool {
        r.pointer("/mutate/targets").is_some_and(|t| !t.is_null())
    }
    pub fn mutate_standard(r: &Value) -> bool {
        !mutate_existing(r) && non_empty(r.get("mutate"))
    }
    pub fn verify_images(r: &Value) -> bool {
        r.get("verifyImages")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| non_empty(Some(v))))
    }
    pub fn verify_image_checks(r: &Value) -> bool {
        let on = |v: &Value, k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
        r.get("verifyImages")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| on(v, "verifyDigest") || on(v, "required")))
    }
    pub fn verify_manifests(r: &Value) -> bool {
        r.pointer("/validate/manifests/attestors")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    }
}

/// The kinds → operations the `side` webhook gets from one (autogen-expanded) rule.
fn rule_kinds(rule: &Value, side: Side) -> BTreeMap<String, BTreeSet<&'static str>> {
    let v = side == Side::Validate;
    if has::generate(rule) {
        let mut out = kinds_of(rule, &ALL_OPERATIONS);
        let mut add = |kind: &str| {
            if !kind.is_empty() {
                out.entry(kind.to_string())
                    .or_default()
                    .extend(CREATE_UPDATE_DELETE);
            }
        };
        let g = rule.get("generate").unwrap_or(&Value::Null);
        let patterns = std::iter::once(g).chain(
            g.get("foreach")
                .and_then(Value::as_array)
                .into_iter()
                .flatten(),
        );
        for p in patterns {
            let kind = text(p, "/kind");
            if !kind.is_empty() {
                add(&kind);
            } else {
                for k in strings(p.pointer("/cloneList/kinds")) {
                    add(k);
                }
            }
        }
        return out;
    }
    let wanted = (v && has::validate(rule) || has::verify_image_checks(rule))
        || (v && has::mutate_existing(rule))
        || (!v && has::mutate_standard(rule))
        || (!v && has::verify_images(rule))
        || (!v && has::verify_manifests(rule));
    if !wanted {
        return BTreeMap::new();
    }
    let defaults: &[&'static str] = if v {
        &ALL_OPERATIONS
    } else {
        &["CREATE", "UPDATE"]
    };
    kinds_of(rule, defaults)
}

/// `ParseKindSelector` (pkg/utils/kube/kind.go): group, version, kind, subresource.
fn parse_kind(input: &str) -> (String, String, String, String) {
    let mut parts: Vec<&str> = input.split('/').collect();
    if let Some(last) = parts.pop() {
        parts.extend(last.split('.'));
    }
    let s = |x: &str| x.to_string();
    let version = |x: &str| {
        x == "*"
            || x.strip_prefix('v').is_some_and(|r| {
                r.starts_with(|c: char| c.is_ascii_digit())
                    && r.chars().all(|c| c.is_ascii_alphanumeric())
            })
    };
    match parts.as_slice() {
        [k] => (s("*"), s("*"), s(k), String::new()),
        ["*", "*"] => (s("*"), s("*"), s("*"), s("*")),
        ["*", sub] if sub.to_lowercase() == *sub => (s("*"), s("*"), s("*"), s(sub)),
        [v, k] if version(v) => (s("*"), s(v), s(k), String::new()),
        [k, sub] => (s("*"), s("*"), s(k), s(sub)),
        [v, k, sub] if version(v) => (s("*"), s(v), s(k), s(sub)),
        [g, v, k] => (s(g), s(v), s(k), String::new()),
        [g, v, k, sub] => (s(g), s(v), s(k), s(sub)),
        _ => Default::default(),
    }
}

/// The versions discovery serves a resource in. Most built-in resources are served in
/// `v1` alone; the exceptions are listed (Kubernetes 1.33, Kyverno 1.19's CRDs), and a
/// CustomResourceDefinition among the objects serves its own `versions`.
fn served_versions(group: &str, plural: &str, objects: &[Value]) -> Vec<String> {
    if let Some(crd) = crd_of(group, plural, objects) {
        return crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
            .map(|v| text(v, "/name"))
            .collect();
    }
    let versions: &[&str] = match (group, plural) {
        ("autoscaling", _) => &["v1", "v2"],
        ("admissionregistration.k8s.io", p) if p.starts_with("mutatingadmissionpolic") => {
            &["v1alpha1"]
        }
        ("kyverno.io", "clusterpolicies" | "policies") => &["v1", "v2beta1"],
        ("kyverno.io", "updaterequests") => &["v2", "v1beta1"],
        ("kyverno.io", "globalcontextentries") => &["v2alpha1", "v2beta1"],
        ("kyverno.io", _) => &["v2", "v2beta1"],
        ("policies.kyverno.io", p) if p.starts_with("namespaced") => &["v1beta1", "v1"],
        ("policies.kyverno.io", _) => &["v1alpha1", "v1beta1", "v1"],
        ("wgpolicyk8s.io", _) => &["v1alpha2"],
        _ => &["v1"],
    };
    versions.iter().map(|v| v.to_string()).collect()
}

fn crd_of<'a>(group: &str, plural: &str, objects: &'a [Value]) -> Option<&'a Value> {
    objects.iter().find(|o| {
        text(o, "/kind") == "CustomResourceDefinition"
            && text(o, "/spec/group") == group
            && text(o, "/spec/names/plural") == plural
    })
}

/// The subresources discovery lists for a built-in resource (Kubernetes 1.33), or that a
/// CustomResourceDefinition declares.
fn subresources(group: &str, plural: &str, objects: &[Value]) -> Vec<&'static str> {
    if let Some(crd) = crd_of(group, plural, objects) {
        let subs = |k: &str| {
            crd.pointer("/spec/versions")
                .and_then(Value::as_array)
                .is_some_and(|vs| {
                    vs.iter()
                        .any(|v| v.pointer(&format!("/subresources/{k}")).is_some())
                })
        };
        return [("status", subs("status")), ("scale", subs("scale"))]
            .into_iter()
            .filter(|(_, on)| *on)
            .map(|(s, _)| s)
            .collect();
    }
    match (group, plural) {
        ("", "pods") => vec![
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status",
        ],
        ("", "nodes" | "services") => vec!["proxy", "status"],
        ("", "namespaces") => vec!["finalize", "status"],
        ("", "serviceaccounts") => vec!["token"],
        ("", "replicationcontrollers")
        | ("apps", "deployments" | "replicasets" | "statefulsets") => {
            vec!["scale", "status"]
        }
        ("", "persistentvolumeclaims" | "persistentvolumes" | "resourcequotas")
        | ("apps", "daemonsets")
        | ("batch", _)
        | ("autoscaling", _)
        | ("policy", "poddisruptionbudgets")
        | ("networking.k8s.io", "ingresses" | "servicecidrs")
        | ("apiextensions.k8s.io", _)
        | ("apiregistration.k8s.io", _)
        | ("storage.k8s.io", "volumeattachments")
        | ("flowcontrol.apiserver.k8s.io", _)
        | ("admissionregistration.k8s.io", "validatingadmissionpolicies")
        | ("kyverno.io", "clusterpolicies" | "policies" | "updaterequests")
        | ("policies.kyverno.io", _) => vec!["status"],
        ("certificates.k8s.io", _) => vec!["approval", "status"],
        _ => Vec::new(),
    }
}

fn scope(namespaced: bool) -> &'static str {
    if namespaced { "Namespaced" } else { "*" }
}

/// `FindResources`: (group, version, resource, subresource, scope) of what discovery
/// serves for the selector; empty when nothing is found.
fn find_resources(
    mapper: &Mapper,
    objects: &[Value],
    (group, version, kind, sub): (&str, &str, &str, &str),
) -> Vec<(String, String, String, String, &'static str)> {
    let mut parents = Vec::new();
    for r in mapper.resources() {
        if !(wildcard_match(group, &r.group) && wildcard_match(kind, &r.kind)) {
            continue;
        }
        for v in served_versions(&r.group, &r.plural, objects) {
            if wildcard_match(version, &v) {
                parents.push((r.group.clone(), v, r.plural.clone(), r.namespaced));
            }
        }
    }
    let mut out = Vec::new();
    for (g, v, plural, namespaced) in parents {
        if sub.is_empty() {
            out.push((g, v, plural, String::new(), scope(namespaced)));
            continue;
        }
        for s in subresources(&g, &plural, objects) {
            if wildcard_match(&format!("{plural}/{sub}"), &format!("{plural}/{s}")) {
                // A subresource is as namespaced as its resource.
                out.push((
                    g.clone(),
                    v.clone(),
                    plural.clone(),
                    s.to_string(),
                    scope(namespaced),
                ));
            }
        }
    }
    out
}

impl RuleSet {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `mergeWebhook`: adds what the `side` webhook needs of `policy` (its rules with
    /// their autogen copies).
    pub fn merge_policy(&mut self, policy: &Value, side: Side, mapper: &Mapper, objects: &[Value]) {
        let expanded = crate::offline::kyverno::autogen::expand(policy);
        let mut matched: BTreeMap<String, BTreeSet<&'static str>> = BTreeMap::new();
        for rule in expanded
            .pointer("/spec/rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for (k, ops) in rule_kinds(rule, side) {
                matched.entry(k).or_default().extend(ops);
            }
        }
        let policy_scope = scope(text(policy, "/kind") == "Policy");
        for (selector, ops) in matched {
            let (g, v, k, sub) = parse_kind(&selector);
            let found = if k == "*" {
                vec![(g, v, k, sub, policy_scope)]
            } else {
                find_resources(mapper, objects, (&g, &v, &k, &sub))
            };
            for (group, version, resource, sub, scope) in found {
                for op in &ops {
                    self.0.insert(Entry {
                        group: group.clone(),
                        version: version.clone(),
                        resource: resource.clone(),
                        sub: sub.clone(),
                        scope,
                        op,
                    });
                }
            }
        }
    }

    /// `hasRule`: whether a wider entry than `e` is in the set.
    fn covered(&self, e: &Entry) -> bool {
        let scopes: &[&'static str] = if e.scope == "*" {
            &["*"]
        } else {
            &[e.scope, "*"]
        };
        let widen = |x: &str| -> Vec<String> {
            if x == "*" {
                vec!["*".into()]
            } else {
                vec![x.into(), "*".into()]
            }
        };
        let (r, s) = (e.resource.as_str(), e.sub.as_str());
        let resources: Vec<(&str, &str)> = match (r, s) {
            ("*", "") => vec![("*", ""), ("*", "*")],
            (_, "") => vec![(r, ""), ("*", ""), ("*", "*")],
            ("*", "*") => vec![("*", "*")],
            (_, "*") => vec![(r, "*"), ("*", "*")],
            ("*", _) => vec![("*", s), ("*", "*")],
            _ => vec![(r, s), (r, "*"), ("*", s), ("*", "*")],
        };
        for sc in scopes {
            for g in widen(&e.group) {
                for v in widen(&e.version) {
                    for (rr, ss) in &resources {
                        let t = Entry {
                            group: g.clone(),
                            version: v.clone(),
                            resource: rr.to_string(),
                            sub: ss.to_string(),
                            scope: sc,
                            op: e.op,
                        };
                        if t != *e && self.0.contains(&t) {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }

    /// `buildRulesWithOperations`: the webhook's `rules`, sorted as Kyverno sorts them.
    pub fn rules(&self) -> Vec<Value> {
        type Gvs = (String, String, &'static str);
        let mut by_gvs: BTreeMap<Gvs, BTreeMap<String, BTreeSet<&'static str>>> = BTreeMap::new();
        for e in self.0.iter().filter(|e| !self.covered(e)) {
            let resource = if e.sub.is_empty() {
                e.resource.clone()
            } else {
                format!("{}/{}", e.resource, e.sub)
            };
            by_gvs
                .entry((e.group.clone(), e.version.clone(), e.scope))
                .or_default()
                .entry(resource)
                .or_default()
                .insert(e.op);
        }
        let mut out = Vec::new();
        for ((group, version, scope), resources) in by_gvs {
            let mut by_ops: BTreeMap<BTreeSet<&'static str>, BTreeSet<String>> = BTreeMap::new();
            for (r, ops) in resources {
                by_ops.entry(ops).or_default().insert(r);
            }
            for (ops, mut resources) in by_ops {
                if (group.is_empty() || group == "*")
                    && (version == "v1" || version == "*")
                    && (resources.contains("pods") || resources.contains("*"))
                {
                    resources.insert("pods/ephemeralcontainers".into());
                }
                out.push(json!({"apiGroups": [group], "apiVersions": [version],
                    "operations": ops.into_iter().collect::<Vec<_>>(),
                    "resources": resources.into_iter().collect::<Vec<_>>(), "scope": scope}));
            }
        }
        sorted_rules(out)
    }
}

/// `deDuplicatedRules` then `sortedRules` (utils.go): each rule's lists sorted, duplicates
/// dropped, rules ordered by groups, versions, resources, operations (shorter lists
/// first), then scope. A rule without a scope gets the API server's default, `*`.
pub fn sorted_rules(rules: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for mut r in rules {
        for k in ["apiGroups", "apiVersions", "resources", "operations"] {
            let mut items: Vec<String> = strings(r.get(k)).map(str::to_string).collect();
            items.sort();
            r[k] = json!(items);
        }
        if r.get("scope").and_then(Value::as_str).is_none() {
            r["scope"] = json!("*");
        }
        if !out.contains(&r) {
            out.push(r);
        }
    }
    let key = |r: &Value| {
        let l = |k: &str| -> (usize, Vec<String>) {
            let v: Vec<String> = strings(r.get(k)).map(str::to_string).collect();
            (v.len(), v)
        };
        (
            l("apiGroups"),
            l("apiVersions"),
            l("resources"),
            l("operations"),
            text(r, "/scope"),
        )
    };
    out.sort_by_key(key);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules_of(policy: Value, side: Side) -> Vec<Value> {
        let mut set = RuleSet::default();
        set.merge_policy(&policy, side, &Mapper::built_in(), &[]);
        set.rules()
    }

    fn cpol(kind: &str, rule: Value) -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": kind, "metadata": {"name": "p",
            "annotations": {"pod-policies.kyverno.io/autogen-controllers": "none"}},
            "spec": {"rules": [rule]}})
    }

    fn validate(kinds: Value, ops: Option<Value>) -> Value {
        let mut res = json!({"kinds": kinds});
        if let Some(o) = ops {
            res["operations"] = o;
        }
        json!({"name": "r", "match": {"any": [{"resources": res}]},
            "validate": {"pattern": {"metadata": {"labels": {"a": "?*"}}}}})
    }

    #[test]
    fn kind_selectors_parse_as_kyverno_does() {
        let p = |s| {
            let (g, v, k, sub) = parse_kind(s);
            format!("{g}|{v}|{k}|{sub}")
        };
        assert_eq!(p("Pod"), "*|*|Pod|");
        assert_eq!(p("*/*"), "*|*|*|*");
        assert_eq!(p("*/scale"), "*|*|*|scale");
        assert_eq!(p("v1/Pod"), "*|v1|Pod|");
        assert_eq!(p("Pod/exec"), "*|*|Pod|exec");
        assert_eq!(p("apps/v1/Deployment"), "apps|v1|Deployment|");
        assert_eq!(p("v1/Pod/status"), "*|v1|Pod|status");
    }

    #[test]
    fn a_wildcard_kind_keeps_the_policy_scope_and_adds_ephemeral_containers() {
        let r = rules_of(
            cpol("ClusterPolicy", validate(json!(["*"]), None)),
            Side::Validate,
        );
        assert_eq!(
            r,
            vec![json!({"apiGroups": ["*"], "apiVersions": ["*"],
                "operations": ["CONNECT", "CREATE", "DELETE", "UPDATE"],
                "resources": ["*", "pods/ephemeralcontainers"], "scope": "*"})]
        );
        let r = rules_of(cpol("Policy", validate(json!(["*"]), None)), Side::Validate);
        assert_eq!(r[0]["scope"], "Namespaced");
        // A validate rule gives the mutating webhook nothing.
        assert!(
            rules_of(
                cpol("ClusterPolicy", validate(json!(["*"]), None)),
                Side::Mutate
            )
            .is_empty()
        );
    }

    #[test]
    fn kinds_resolve_through_discovery_with_their_scope_and_subresources() {
        let r = rules_of(
            cpol(
                "ClusterPolicy",
                validate(json!(["ConfigMap", "CustomResourceDefinition"]), None),
            ),
            Side::Validate,
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0]["resources"], json!(["configmaps"]));
        assert_eq!(r[0]["scope"], "Namespaced");
        assert_eq!(r[1]["apiGroups"], json!(["apiextensions.k8s.io"]));
        assert_eq!(r[1]["scope"], "*");
        let r = rules_of(
            cpol("ClusterPolicy", validate(json!(["Pod/*"]), None)),
            Side::Validate,
        );
        let res: Vec<&str> = strings(r[0].get("resources")).collect();
        assert!(
            res.contains(&"pods/exec") && res.contains(&"pods/status"),
            "{res:?}"
        );
        assert!(!res.contains(&"pods"));
    }

    #[test]
    fn excluded_operations_are_dropped_and_rules_sort_core_first() {
        let mut rule = validate(json!(["ConfigMap"]), None);
        rule["exclude"] = json!({"any": [{"resources": {"operations": ["DELETE"]}}]});
        let mut p = cpol("ClusterPolicy", rule);
        let scale = validate(json!(["*/scale"]), Some(json!(["CREATE"])));
        p["spec"]["rules"].as_array_mut().unwrap().push(scale);
        let r = rules_of(p, Side::Validate);
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[0]["operations"], json!(["CONNECT", "CREATE", "UPDATE"]));
        assert_eq!(r[1]["resources"], json!(["*/scale"]));
        assert_eq!(r[1]["operations"], json!(["CREATE"]));
    }

    #[test]
    fn a_wider_entry_swallows_a_narrower_one() {
        let mut p = cpol("ClusterPolicy", validate(json!(["*"]), None));
        let pod = validate(json!(["Pod"]), None);
        p["spec"]["rules"].as_array_mut().unwrap().push(pod);
        let r = rules_of(p, Side::Validate);
        assert_eq!(r.len(), 1, "{r:?}");
    }
}
