//! `match`/`exclude` of a rule against a request: kinds, names, namespaces, selectors,
//! operations and user info. It must not evaluate conditions or variables.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{Policy, Request};

/// `Ok(true)` when the rule applies to the request (matched and not excluded).
pub fn rule_matches(rule: &Value, policy: &Policy, req: &Request) -> Result<bool, String> {
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
    let Some(m) = rule.get("match") else {
        return Ok(false);
    };
    if !block_matches(m, req, true)? {
        return Ok(false);
    }
    if let Some(ex) = rule.get("exclude")
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

fn block_matches(block: &Value, req: &Request, is_match: bool) -> Result<bool, String> {
    let any = block.get("any").and_then(Value::as_array);
    let all = block.get("all").and_then(Value::as_array);
    if any.is_none() && all.is_none() {
        // Legacy form: resources plus user info side by side.
        if block.get("resources").is_none()
            && block.get("subjects").is_none()
            && block.get("roles").is_none()
            && block.get("clusterRoles").is_none()
        {
            return Ok(false);
        }
        return filter_matches(block, req, is_match);
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

fn filter_matches(filter: &Value, req: &Request, is_match: bool) -> Result<bool, String> {
    // Without any user information (a background scan, a test without userinfo) Kyverno
    // drops the user conditions of a filter.
    let ui = &req.user_info;
    let anonymous = ui.username.is_empty()
        && ui.groups.is_empty()
        && ui.roles.is_empty()
        && ui.cluster_roles.is_empty();
    let res = filter.get("resources");
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
    user_matches(filter, req)
}

fn resource_matches(res: &Value, req: &Request) -> Result<bool, String> {
    let obj = subject(req);
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .or_else(|| {
            obj.pointer("/metadata/generateName")
                .and_then(Value::as_str)
        })
        .unwrap_or("");
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if let Some(kinds) = res.get("kinds").and_then(Value::as_array)
        && !kinds.is_empty()
        && !kinds
            .iter()
            .filter_map(Value::as_str)
            .any(|k| kind_matches(k, kind, api_version, req))
    {
        return Ok(false);
    }
    if let Some(n) = res.get("name").and_then(Value::as_str)
        && !n.is_empty()
        && !wildcard_match(n, name)
    {
        return Ok(false);
    }
    if let Some(names) = res.get("names").and_then(Value::as_array)
        && !names.is_empty()
        && !names
            .iter()
            .filter_map(Value::as_str)
            .any(|n| wildcard_match(n, name))
    {
        return Ok(false);
    }
    if let Some(nss) = res.get("namespaces").and_then(Value::as_array)
        && !nss.is_empty()
    {
        // A Namespace is matched against `namespaces` by its own name.
        let ns = if kind == "Namespace" { name } else { namespace };
        if !nss
            .iter()
            .filter_map(Value::as_str)
            .any(|n| wildcard_match(n, ns))
        {
            return Ok(false);
        }
    }
    if let Some(ops) = res.get("operations").and_then(Value::as_array)
        && !ops.is_empty()
        && !ops
            .iter()
            .filter_map(Value::as_str)
            .any(|o| o == req.operation)
    {
        return Ok(false);
    }
    if let Some(ann) = res.get("annotations").and_then(Value::as_object) {
        let have = obj.pointer("/metadata/annotations");
        for (k, v) in ann {
            let want = v.as_str().unwrap_or("");
            let found = have.and_then(Value::as_object).is_some_and(|m| {
                m.iter().any(|(hk, hv)| {
                    wildcard_match(k, hk) && wildcard_match(want, hv.as_str().unwrap_or(""))
                })
            });
            if !found {
                return Ok(false);
            }
        }
    }
    if let Some(sel) = res.get("selector") {
        let labels = labels_of(obj.pointer("/metadata/labels"));
        if !selector_matches(sel, &labels)? {
            return Ok(false);
        }
    }
    if let Some(sel) = res.get("namespaceSelector") {
        if kind == "Namespace" {
            let labels = labels_of(obj.pointer("/metadata/labels"));
            if !selector_matches(sel, &labels)? {
                return Ok(false);
            }
        } else if namespace.is_empty() || !selector_matches(sel, &req.namespace_labels)? {
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
fn kind_matches(entry: &str, kind: &str, api_version: &str, req: &Request) -> bool {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let parts: Vec<&str> = entry.split('/').collect();
    // A subresource request matches `Parent/sub` entries with the parent's kind/version.
    let (kind, group, version, sub) = match &req.subresource {
        Some(s) => {
            let (g, v) = match s.parent_api_version.split_once('/') {
                Some((g, v)) => (g, v),
                None => ("", s.parent_api_version.as_str()),
            };
            (s.parent_kind.as_str(), g, v, s.name.as_str())
        }
        None => (kind, group, version, ""),
    };
    let (g, v, k, s) = match parts.as_slice() {
        [k] => ("*", "*", *k, ""),
        [a, b] => {
            // `Pod/exec` (kind + subresource) versus `v1/Pod` (version + kind).
            if a.chars().next().is_some_and(char::is_uppercase)
                || *a == "*" && b.chars().next().is_some_and(char::is_lowercase)
            {
                ("*", "*", *a, *b)
            } else {
                ("*", *a, *b, "")
            }
        }
        [a, b, c] => {
            if b.chars().next().is_some_and(char::is_uppercase) {
                ("*", *a, *b, *c)
            } else {
                (*a, *b, *c, "")
            }
        }
        [a, b, c, d] => (*a, *b, *c, *d),
        _ => return false,
    };
    if s != sub && (s != "*" || sub.is_empty()) {
        return false;
    }
    wildcard_match(k, kind) && wildcard_match(v, version) && wildcard_match(g, group)
}

/// A label selector (`matchLabels` with wildcards, `matchExpressions`).
pub fn selector_matches(sel: &Value, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            let want = v.as_str().unwrap_or("");
            let ok = labels
                .iter()
                .any(|(lk, lv)| wildcard_match(k, lk) && wildcard_match(want, lv));
            if !ok {
                return Ok(false);
            }
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let have = labels.get(key);
            let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(&h.as_str())),
                "NotIn" => have.is_none_or(|h| !values.contains(&h.as_str())),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                other => return Err(format!("unknown selector operator {other}")),
            };
            if !ok {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn user_matches(filter: &Value, req: &Request) -> Result<bool, String> {
    let ui = &req.user_info;
    if let Some(roles) = filter.get("roles").and_then(Value::as_array)
        && !roles.is_empty()
        && !roles
            .iter()
            .filter_map(Value::as_str)
            .any(|r| ui.roles.iter().any(|have| wildcard_match(r, have)))
    {
        return Ok(false);
    }
    if let Some(roles) = filter.get("clusterRoles").and_then(Value::as_array)
        && !roles.is_empty()
        && !roles
            .iter()
            .filter_map(Value::as_str)
            .any(|r| ui.cluster_roles.iter().any(|have| wildcard_match(r, have)))
    {
        return Ok(false);
    }
    if let Some(subjects) = filter.get("subjects").and_then(Value::as_array)
        && !subjects.is_empty()
        && !subjects.iter().any(|s| subject_matches(s, req))
    {
        return Ok(false);
    }
    Ok(true)
}

fn subject_matches(s: &Value, req: &Request) -> bool {
    let ui = &req.user_info;
    let name = s.get("name").and_then(Value::as_str).unwrap_or("");
    match s.get("kind").and_then(Value::as_str).unwrap_or("") {
        "ServiceAccount" => {
            let ns = s.get("namespace").and_then(Value::as_str).unwrap_or("");
            wildcard_match(&format!("system:serviceaccount:{ns}:{name}"), &ui.username)
        }
        "User" => wildcard_match(name, &ui.username),
        "Group" => ui.groups.iter().any(|g| wildcard_match(name, g)),
        _ => false,
    }
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
