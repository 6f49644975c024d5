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

/// `Ok(true)` when the rule applies to the request (matched and not excluded).
pub fn rule_matches(rule: &Rule, policy: &Policy, req: &Request) -> Result<bool, SelectorError> {
    let obj = subject(req);
    if let Some(ns) = &policy.namespace {
        let res_ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        if res_ns != ns {
            return Ok(false);
        }
    }
    let Some(m) = &rule.match_ else {
        return Ok(false);
    };
    if !block_matches(m, req, true)? {
        return Ok(false);
    }
    if let Some(ex) = &rule.exclude
        && block_matches(ex, req, false)?
    {
        return Ok(false);
    }
    Ok(true)
}

/// The object the request is about (the old one for a DELETE).
pub fn subject(req: &Request) -> &Value {
    if req.operation == "DELETE" && !req.old_object.is_null() {
        &req.old_object
    } else {
        &req.object
    }
}

fn block_matches(block: &MatchBlock, req: &Request, is_match: bool) -> Result<bool, SelectorError> {
    let (any, all) = (block.any.as_deref(), block.all.as_deref());
    if any.is_none() && all.is_none() {
        // Legacy form: resources plus user info side by side.
        if !block.legacy.is_given() {
            return Ok(false);
        }
        return filter_matches(&block.legacy, req, is_match);
    }
    if let Some(any) = any
        && !any.is_empty()
    {
        let mut hit = false;
        for f in any {
            if filter_matches(f, req, is_match)? {
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
            if !filter_matches(f, req, is_match)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn filter_matches(filter: &Filter, req: &Request, is_match: bool) -> Result<bool, SelectorError> {
    // Without any user information (a background scan, a test without userinfo) Kyverno
    // drops the user conditions of a filter.
    let ui = &req.user_info;
    let anonymous = ui.username.is_empty()
        && ui.groups.is_empty()
        && ui.roles.is_empty()
        && ui.cluster_roles.is_empty();
    let res = filter.resources.as_ref();
    if anonymous && !is_match && res.is_none() {
        return Ok(false);
    }
    if let Some(res) = res
        && !resource_matches(res, req)?
    {
        return Ok(false);
    }
    if anonymous {
        return Ok(true);
    }
    Ok(user_matches(filter, req))
}

/// A restricting list is satisfied by one of its items.
fn any_of<T>(list: &List<T>, hit: impl FnMut(&T) -> bool) -> bool {
    !list.restricts || list.items.iter().any(hit)
}

fn resource_matches(res: &ResourceDesc, req: &Request) -> Result<bool, SelectorError> {
    let obj = subject(req);
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !any_of(&res.kinds, |k| entry_matches(k, kind, api_version, req)) {
        return Ok(false);
    }
    let meta = obj.get("metadata");
    let field = |key: &str| meta.and_then(|m| m.get(key)).and_then(Value::as_str);
    let name = field("name")
        .or_else(|| field("generateName"))
        .unwrap_or("");
    let namespace = field("namespace").unwrap_or("");
    if let Some(n) = &res.name
        && !wildcard_match(n, name)
    {
        return Ok(false);
    }
    if !any_of(&res.names, |n| wildcard_match(n, name)) {
        return Ok(false);
    }
    // A Namespace is matched against `namespaces` by its own name.
    let ns = if kind == "Namespace" { name } else { namespace };
    if !any_of(&res.namespaces, |n| wildcard_match(n, ns)) {
        return Ok(false);
    }
    if !any_of(&res.operations, |o| *o == req.operation) {
        return Ok(false);
    }
    if let Some(ann) = &res.annotations {
        let have = meta
            .and_then(|m| m.get("annotations"))
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
    if let Some(sel) = &res.selector {
        let labels = labels_of(meta.and_then(|m| m.get("labels")));
        if !typed_selector_matches(sel, &labels)? {
            return Ok(false);
        }
    }
    if let Some(sel) = &res.namespace_selector {
        if kind == "Namespace" {
            let labels = labels_of(meta.and_then(|m| m.get("labels")));
            if !typed_selector_matches(sel, &labels)? {
                return Ok(false);
            }
        } else if namespace.is_empty() || !typed_selector_matches(sel, &req.namespace_labels)? {
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
    if e.sub != sub && (e.sub != "*" || sub.is_empty()) {
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
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = s.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
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
    while pi < p.len() && p[pi] == '*' {
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
    fn selector_expressions() {
        let labels: BTreeMap<String, String> = [("app".to_string(), "web".to_string())].into();
        let sel =
            json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]});
        assert!(selector_matches(&sel, &labels).unwrap());
        let sel = json!({"matchLabels": {"app": "w*"}});
        assert!(selector_matches(&sel, &labels).unwrap());
    }
}
