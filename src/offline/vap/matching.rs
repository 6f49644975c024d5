//! Which requests a policy's `matchConstraints` or a binding's `matchResources` select:
//! resource rules, exclusions, namespace and object selectors; and the request's
//! resource and namespace object.

use super::*;
use crate::offline::labels::labels_of;
pub use crate::offline::labels::selector_matches;
use crate::offline::rbac::resource::plural_of;

/// `(group, version, resource)` of an object: the resource is its kind's plural.
pub fn resource_of(obj: &Value) -> (String, String, String) {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    (group, version, plural_of(api_version, kind_of(obj)))
}

/// The group, version, resource and kind a request is for: the object's, or its
/// parent's for a subresource whose object is of another kind.
pub(super) fn request_resource(req: &VapRequest) -> (String, String, String, String) {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    match &req.parent {
        Some((api_version, kind)) => {
            let stand_in = json!({"apiVersion": api_version, "kind": kind});
            let (g, v, r) = resource_of(&stand_in);
            (g, v, r, kind.clone())
        }
        None => {
            let (g, v, r) = resource_of(obj);
            (g, v, r, kind_of(obj).to_string())
        }
    }
}

/// The resource name of a kind (group unknown: the first group serving it).
#[cfg(test)]
pub(super) fn plural(kind: &str) -> String {
    plural_of("", kind)
}

/// The `namespaceObject` of a request in `ns`: its manifest among `objects` (or a bare
/// Namespace), with `labels` laid over its own, as the admission request would carry it.
pub fn namespace_object<'a>(
    objects: impl IntoIterator<Item = &'a Value>,
    ns: &str,
    labels: BTreeMap<String, String>,
) -> Value {
    let mut nso = objects
        .into_iter()
        .find(|o| kind_of(o) == "Namespace" && name_of(o) == ns)
        .cloned()
        .unwrap_or_else(
            || json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        );
    for (k, v) in labels {
        nso["metadata"]["labels"][k] = Value::String(v);
    }
    nso
}

/// The policy's `matchConstraints` or a binding's `matchResources` against a request.
/// A binding without resource rules does not narrow the policy's; a policy without any
/// matches nothing.
pub(super) fn matches_resources(mr: &Value, req: &VapRequest, is_policy: bool) -> bool {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let (group, version, resource, _) = request_resource(req);
    let namespaced = obj.pointer("/metadata/namespace").is_some();
    let exact = mr.get("matchPolicy").and_then(Value::as_str) == Some("Exact");
    let rule_hits = |rule: &Value| {
        rule_matches(
            rule,
            &RuleInput {
                group: &group,
                version: &version,
                resource: &resource,
                sub_resource: &req.sub_resource,
                operation: &req.operation,
                name: name_of(obj),
                namespaced,
                exact,
            },
        )
    };
    let rules: Vec<&Value> = list(mr, "resourceRules").collect();
    if rules.is_empty() {
        if is_policy {
            return false;
        }
    } else if !rules.iter().any(|r| rule_hits(r)) {
        return false;
    }
    if list(mr, "excludeResourceRules").any(rule_hits) {
        return false;
    }
    if let Some(sel) = mr.get("namespaceSelector") {
        // Cluster-scoped objects other than Namespaces are not selected by namespace.
        let labels = if kind_of(obj) == "Namespace" {
            Some(labels_of(obj))
        } else if namespaced {
            Some(labels_of(&req.namespace_object))
        } else {
            None
        };
        if let Some(labels) = labels
            && !selector_matches(sel, &labels)
        {
            return false;
        }
    }
    if let Some(sel) = mr.get("objectSelector") {
        let hit = |o: &Value| !o.is_null() && selector_matches(sel, &labels_of(o));
        if !hit(&req.object) && !hit(&req.old_object) {
            return false;
        }
    }
    true
}

pub(super) struct RuleInput<'a> {
    pub(super) group: &'a str,
    pub(super) version: &'a str,
    pub(super) resource: &'a str,
    pub(super) sub_resource: &'a str,
    pub(super) operation: &'a str,
    pub(super) name: &'a str,
    pub(super) namespaced: bool,
    pub(super) exact: bool,
}

pub(super) fn rule_matches(rule: &Value, r: &RuleInput<'_>) -> bool {
    let strs = |k: &str| -> Vec<&str> { list(rule, k).filter_map(Value::as_str).collect() };
    // The API server rejects a rule without these fields, so none reaches a live request;
    // `kyverno test` matches such a rule on what it does list.
    let any_or = |k: &str, v: &str| {
        let l = strs(k);
        rule.get(k).is_none() || l.contains(&"*") || l.contains(&v)
    };
    if !any_or("apiGroups", r.group) || !any_or("operations", r.operation) {
        return false;
    }
    // Under `Equivalent` a request for another version of a listed resource is
    // converted and matched; offline every listed version is taken as equivalent.
    if r.exact && !any_or("apiVersions", r.version) {
        return false;
    }
    let full = if r.sub_resource.is_empty() {
        r.resource.to_string()
    } else {
        format!("{}/{}", r.resource, r.sub_resource)
    };
    let res_hit = strs("resources").iter().any(|p| {
        *p == "*" && r.sub_resource.is_empty()
            || *p == "*/*"
            || *p == full
            || p.strip_suffix("/*")
                .is_some_and(|base| base == r.resource && !r.sub_resource.is_empty())
            || p.strip_prefix("*/")
                .is_some_and(|sub| sub == r.sub_resource)
    });
    if !res_hit {
        return false;
    }
    let names = strs("resourceNames");
    if !names.is_empty() && !names.contains(&r.name) {
        return false;
    }
    match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => !r.namespaced,
        "Namespaced" => r.namespaced,
        _ => true,
    }
}

/// How `kyverno test` reports a ValidatingPolicy or MutatingPolicy whose match
/// constraints do not select the request (`cmd/cli/kubectl-kyverno/processor/
/// policy_processor.go`, `hasSelector`; `commands/test/output.go`): constraints of one
/// plain resource rule leave no response; constraints with an object or namespace
/// selector, exclusions, several rules or resource names leave an empty one, which the
/// CLI prints as a pass, "excluded", whatever the row expects.
/// `None` when the constraints select the request (its autogen copy's, on a Pod
/// controller).
pub fn unselected_in_cli(policy: &Value, req: &VapRequest) -> Option<CliUnselected> {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let rewrite = if kind_of(policy).contains("MutatingPolicy") {
        super::autogen::Rewrite::Mutating
    } else {
        super::autogen::Rewrite::Validating
    };
    let copy = super::autogen::autogen_policy(policy, kind_of(obj), rewrite);
    let constraints = copy
        .as_ref()
        .unwrap_or(policy)
        .pointer("/spec/matchConstraints")
        .unwrap_or(&Value::Null);
    if matches_resources(constraints, req, true) {
        return None;
    }
    let selects = |key: &str| {
        constraints.get(key).is_some_and(|s| {
            ["matchLabels", "matchExpressions"].iter().any(|k| {
                s.get(*k).is_some_and(|v| {
                    !v.as_object().is_some_and(|m| m.is_empty())
                        && !v.as_array().is_some_and(|a| a.is_empty())
                })
            })
        })
    };
    let rules: Vec<&Value> = list(constraints, "resourceRules").collect();
    let plain = !selects("objectSelector")
        && !selects("namespaceSelector")
        && list(constraints, "excludeResourceRules").next().is_none()
        && rules.len() == 1
        && list(rules[0], "resourceNames").next().is_none();
    Some(if plain {
        CliUnselected::NoResponse
    } else {
        CliUnselected::Excluded
    })
}

/// What `kyverno test` prints for a policy that does not select the row's resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CliUnselected {
    /// No response for the policy.
    NoResponse,
    /// An empty response: the row passes, "excluded".
    Excluded,
}
