//! `match`/`exclude` of a rule against a request: kinds, names, namespaces, selectors,
//! operations and user info. It must not evaluate conditions or variables.

use std::collections::BTreeMap;

use serde_json::Value;

use super::rule::{Filter, KindEntry, List, MatchBlock, ResourceDesc, Rule, Selector};
use super::{Policy, Request};

/// A selector Kyverno cannot evaluate (the only way matching fails).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("unknown selector operator {0}")]
    UnknownOperator(String),
}

/// What matching reads of the request's object, read once per request (not per rule).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub kind: String,
    pub api_version: String,
    /// `metadata.name`, else `generateName`.
    pub name: String,
    pub namespace: String,
    pub labels: BTreeMap<String, String>,
}

impl Facts {
    pub fn of(req: &Request) -> Facts {
        let obj = subject(req);
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let meta = obj.get("metadata");
        let field = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
        Facts {
            kind: text(obj.get("kind")),
            api_version: text(obj.get("apiVersion")),
            name: field("name")
                .or_else(|| field("generateName"))
                .unwrap_or("")
                .to_string(),
            // The request's namespace stands in for a subresource object's own
            // (pkg/utils/admission/resource.go `ConvertResource`: a PodExecOptions).
            namespace: field("namespace")
                .map(str::to_string)
                .or_else(|| req.subresource.as_ref().map(|s| s.parent_namespace.clone()))
                .unwrap_or_default(),
            labels: labels_of(meta.and_then(|m| m.get("labels"))),
        }
    }
}

/// `Ok(true)` when the rule applies to the request (matched and not excluded).
pub fn rule_matches(rule: &Rule, policy: &Policy, req: &Request) -> Result<bool, SelectorError> {
    rule_matches_with(rule, policy, req, &Facts::of(req))
}

/// [`rule_matches`] with the request's [`Facts`] read beforehand.
pub fn rule_matches_with(
    rule: &Rule,
    policy: &Policy,
    req: &Request,
    facts: &Facts,
) -> Result<bool, SelectorError> {
    if let Some(ns) = &policy.namespace
        && facts.namespace != *ns
    {
        return Ok(false);
    }
    let Some(m) = &rule.match_ else {
        return Ok(false);
    };
    let on = On { req, facts };
    if !block_matches(m, on, true)? {
        return Ok(false);
    }
    if let Some(ex) = &rule.exclude
        && block_matches(ex, on, false)?
    {
        return Ok(false);
    }
    Ok(true)
}

/// The request and what was read of it.
#[derive(Clone, Copy)]
struct On<'a> {
    req: &'a Request,
    facts: &'a Facts,
}

/// The object the request is about (the old one for a DELETE).
pub fn subject(req: &Request) -> &Value {
    if req.operation == "DELETE" && !req.old_object.is_null() {
        &req.old_object
    } else {
        &req.object
    }
}

fn block_matches(block: &MatchBlock, on: On<'_>, is_match: bool) -> Result<bool, SelectorError> {
    let (any, all) = (block.any.as_deref(), block.all.as_deref());
    if any.is_none() && all.is_none() {
        // Legacy form: resources plus user info side by side.
        if !block.legacy.is_given() {
            return Ok(false);
        }
        return filter_matches(&block.legacy, on, is_match);
    }
    if let Some(any) = any
        && !any.is_empty()
    {
        let mut hit = false;
        for f in any {
            if filter_matches(f, on, is_match)? {
                hit = true;
                break;
            }
        }
        if !hit {
            return Ok(false);
        }
    }
    if let Some(all) = all {
        if all.is_empty() && any.is_none_or(|a| a.is_empty()) {
            return Ok(false);
        }
        for f in all {
            if !filter_matches(f, on, is_match)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn filter_matches(filter: &Filter, on: On<'_>, is_match: bool) -> Result<bool, SelectorError> {
    // Without any user information (a background scan, a test without userinfo) Kyverno
    // drops the user conditions of a filter.
    let ui = &on.req.user_info;
    let anonymous = ui.username.is_empty()
        && ui.groups.is_empty()
        && ui.roles.is_empty()
        && ui.cluster_roles.is_empty();
    let res = filter.resources.as_ref();
    if anonymous && !is_match && res.is_none() {
        return Ok(false);
    }
    if let Some(res) = res
        && !resource_matches(res, on)?
    {
        return Ok(false);
    }
    if anonymous {
        return Ok(true);
    }
    Ok(user_matches(filter, on.req))
}

/// A restricting list is satisfied by one of its items.
fn any_of<T>(list: &List<T>, hit: impl FnMut(&T) -> bool) -> bool {
    !list.restricts || list.items.iter().any(hit)
}

fn resource_matches(res: &ResourceDesc, on: On<'_>) -> Result<bool, SelectorError> {
    let (req, f) = (on.req, on.facts);
    let kind = f.kind.as_str();
    if !any_of(&res.kinds, |k| entry_matches(k, kind, &f.api_version, req)) {
        return Ok(false);
    }
    let name = f.name.as_str();
    if let Some(n) = &res.name
        && !wildcard_match(n, name)
    {
        return Ok(false);
    }
    if !any_of(&res.names, |n| wildcard_match(n, name)) {
        return Ok(false);
    }
    // A Namespace is matched against `namespaces` by its own name.
    let ns = if kind == "Namespace" {
        name
    } else {
        &f.namespace
    };
    if !any_of(&res.namespaces, |n| wildcard_match(n, ns)) {
        return Ok(false);
    }
    if !any_of(&res.operations, |o| *o == req.operation) {
        return Ok(false);
    }
    if let Some(ann) = &res.annotations {
        let have = subject(req)
            .pointer("/metadata/annotations")
            .and_then(Value::as_object);
        for (k, want) in ann {
            let found = have.is_some_and(|m| {
                m.iter().any(|(hk, hv)| {
                    wildcard_match(k, hk) && wildcard_match(want, hv.as_str().unwrap_or(""))
                })
            });
            if !found {
                return Ok(false);
            }
        }
    }
    if let Some(sel) = &res.selector
        && !typed_selector_matches(sel, &f.labels)?
    {
        return Ok(false);
    }
    if let Some(sel) = &res.namespace_selector {
        // Kyverno does not apply a namespaceSelector to a Namespace itself: the filter
        // does not match it ("namespace selector is not applicable for namespace
        // resource", pkg/engine/utils/match.go).
        if kind == "Namespace"
            || f.namespace.is_empty()
            || !typed_selector_matches(sel, &req.namespace_labels)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

fn labels_of(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `kinds` entry against an object: `Kind`, `version/Kind`, `group/version/Kind`, with
/// wildcards, and `Kind/subresource` which only matches subresource requests.
#[cfg(test)]
fn kind_matches(entry: &str, kind: &str, api_version: &str, req: &Request) -> bool {
    entry_matches(&KindEntry::parse(entry), kind, api_version, req)
}

/// [`KindEntry`] (split when the policy was loaded) against an object.
fn entry_matches(entry: &KindEntry, kind: &str, api_version: &str, req: &Request) -> bool {
    let Some(e) = &entry.parts else {
        return false;
    };
    // A subresource request matches `Parent/sub` entries with the parent's kind/version.
    let (kind, api_version, sub) = match &req.subresource {
        Some(s) => (
            s.parent_kind.as_str(),
            s.parent_api_version.as_str(),
            s.name.as_str(),
        ),
        None => (kind, api_version, ""),
    };
    // The engine lets a plain `Pod` entry match the `pods/ephemeralcontainers`
    // subresource of a core v1 Pod too (pkg/engine/utils/match.go calls
    // pkg/utils/match/kind.go `CheckKind` with `allowEphemeralContainers`), which is how
    // a Pod rule sees `kubectl debug`.
    let ephemeral =
        e.sub.is_empty() && sub == "ephemeralcontainers" && kind == "Pod" && api_version == "v1";
    if e.sub != sub && (e.sub != "*" || sub.is_empty()) && !ephemeral {
        return false;
    }
    if !wildcard_match(&e.kind, kind) {
        return false;
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    wildcard_match(&e.version, version) && wildcard_match(&e.group, group)
}

/// A label selector (`matchLabels` with wildcards, `matchExpressions`).
pub fn selector_matches(
    sel: &Value,
    labels: &BTreeMap<String, String>,
) -> Result<bool, SelectorError> {
    typed_selector_matches(&Selector::decode(sel), labels)
}

/// [`selector_matches`] on a selector decoded with its policy.
fn typed_selector_matches(
    sel: &Selector,
    labels: &BTreeMap<String, String>,
) -> Result<bool, SelectorError> {
    for (k, want) in sel.match_labels.iter().flatten() {
        let ok = labels
            .iter()
            .any(|(lk, lv)| wildcard_match(k, lk) && wildcard_match(want, lv));
        if !ok {
            return Ok(false);
        }
    }
    for e in &sel.match_expressions.items {
        let values = &e.values.items;
        let have = labels.get(&e.key);
        let ok = match e.operator.as_str() {
            "In" => have.is_some_and(|h| values.contains(h)),
            "NotIn" => have.is_none_or(|h| !values.contains(h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            other => return Err(SelectorError::UnknownOperator(other.to_string())),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn user_matches(filter: &Filter, req: &Request) -> bool {
    let ui = &req.user_info;
    any_of(&filter.roles, |r| {
        ui.roles.iter().any(|have| wildcard_match(r, have))
    }) && any_of(&filter.cluster_roles, |r| {
        ui.cluster_roles.iter().any(|have| wildcard_match(r, have))
    }) && any_of(&filter.subjects, |s| {
        let name = &s.name;
        match s.kind.as_str() {
            "ServiceAccount" => wildcard_match(
                &format!("system:serviceaccount:{}:{name}", s.namespace),
                &ui.username,
            ),
            "User" => wildcard_match(name, &ui.username),
            "Group" => ui.groups.iter().any(|g| wildcard_match(name, g)),
            _ => false,
        }
    })
}

/// Shell-style wildcard: `*` any run of characters, `?` exactly one.
pub fn wildcard_match(pattern: &str, s: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return pattern == s;
    }
    if pattern == "*" {
        return true;
    }
    // `?` is one character: bytes stand for characters in ASCII text.
    if pattern.is_ascii() && s.is_ascii() {
        return glob(pattern.as_bytes(), s.as_bytes());
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = s.chars().collect();
    glob(&p, &t)
}

/// `*` and `?` over a sequence of characters, with one backtracking point.
fn glob<C: Copy + PartialEq + From<u8>>(p: &[C], t: &[C]) -> bool {
    let (star_c, one_c) = (C::from(b'*'), C::from(b'?'));
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == one_c || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == star_c {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == star_c {
        pi += 1;
    }
    pi == p.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*", ""));
        assert!(wildcard_match("kube-*", "kube-system"));
        assert!(wildcard_match("a?c", "abc"));
        assert!(!wildcard_match("a?c", "ac"));
        assert!(wildcard_match("*.io/*", "ghcr.io/x"));
        // `?` is one character, in any script.
        assert!(wildcard_match("?-テスト", "a-テスト"));
        assert!(wildcard_match("テ?ト", "テスト"));
        assert!(!wildcard_match("テ?ト", "テスsト"));
    }

    #[test]
    fn namespace_selector_does_not_select_a_namespace_itself() {
        let policy = crate::offline::kyverno::load_policies(&[json!({
            "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "p"},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {
                "kinds": ["Namespace", "ConfigMap"],
                "namespaceSelector": {"matchLabels": {"team": "a"}}}}]},
                "validate": {"deny": {}}}]}})])
        .0
        .remove(0);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "x", "labels": {"team": "a"}}});
        let req = |object: Value| Request {
            object,
            namespace_labels: [("team".to_string(), "a".to_string())].into(),
            ..Default::default()
        };
        assert!(!rule_matches(&policy.rules[0], &policy, &req(ns)).unwrap());
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "x"}});
        assert!(rule_matches(&policy.rules[0], &policy, &req(cm)).unwrap());
    }

    #[test]
    fn kinds_with_group_version_and_subresource() {
        let req = Request::default();
        assert!(kind_matches("Pod", "Pod", "v1", &req));
        assert!(kind_matches("v1/Pod", "Pod", "v1", &req));
        assert!(kind_matches(
            "apps/v1/Deployment",
            "Deployment",
            "apps/v1",
            &req
        ));
        assert!(!kind_matches(
            "batch/v1/Deployment",
            "Deployment",
            "apps/v1",
            &req
        ));
        assert!(!kind_matches("Pod/exec", "Pod", "v1", &req));
        assert!(kind_matches("*", "Pod", "v1", &req));
    }

    #[test]
    fn a_pod_entry_matches_the_ephemeralcontainers_subresource_only() {
        let sub = |name: &str| Request {
            subresource: Some(super::super::Subresource {
                parent_api_version: "v1".into(),
                parent_kind: "Pod".into(),
                name: name.into(),
                parent_namespace: "t".into(),
                parent_name: "p".into(),
            }),
            ..Default::default()
        };
        assert!(kind_matches(
            "Pod",
            "Pod",
            "v1",
            &sub("ephemeralcontainers")
        ));
        assert!(kind_matches(
            "v1/Pod",
            "Pod",
            "v1",
            &sub("ephemeralcontainers")
        ));
        assert!(!kind_matches("Pod", "Pod", "v1", &sub("exec")));
        assert!(!kind_matches(
            "Pod/exec",
            "Pod",
            "v1",
            &sub("ephemeralcontainers")
        ));
    }

    #[test]
    fn selector_expressions() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let sel =
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]});
        assert!(selector_matches(&sel, &labels).unwrap());
        let sel = json!({"matchLabels": {"app": "w*"}});
        assert!(selector_matches(&sel, &labels).unwrap());
    }
}
