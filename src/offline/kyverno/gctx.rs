//! Kyverno's global context as a rule reads it, and the API server's answer to a
//! SubjectAccessReview an `apiCall` posts. A `globalReference` entry reads the store the
//! globalcontext controller fills (pkg/engine/context/loaders/globalcontext.go: the
//! name's first dot-separated part is the GlobalContextEntry, the second a projection,
//! then the entry's `jmesPath`); the store's data is the caller's (the conformance
//! cluster builds it from its GlobalContextEntries, `src/offline/conformance/cluster/gctx.rs`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::context::Context;
use super::entries::ApiCallError;
use super::outcome::{ContextSource, Outcome, Unsupported, Upstream};
use super::vars;
use crate::offline::rbac::{AccessRequest, Authorizer};
use crate::offline::vap::GlobalData;

/// GlobalContextEntry name → its data, or the error its `Get` returns. An entry the
/// controller could not start is absent.
pub type Store = BTreeMap<String, Result<GlobalData, String>>;

/// One `globalReference` context entry's value.
pub fn global_reference(
    name: &str,
    reference: &Value,
    ctx: &Context,
    store: &Store,
) -> Result<Value, Outcome> {
    // Kyverno's words (pkg/engine/context/loaders/globalcontext.go `LoadData`).
    let fail = |e: String| {
        let text = format!("failed to marshal APICall data for context entry {name}: {e}");
        Outcome::error(text.clone()).worded(Upstream::Verbatim(text))
    };
    let reference = vars::substitute(reference, ctx).map_err(|e| fail(e.to_string()))?;
    let full = reference.get("name").and_then(Value::as_str).unwrap_or("");
    let mut parts = full.split('.');
    let entry = parts.next().unwrap_or("");
    let projection = parts.next().unwrap_or("");
    let data = match store.get(entry) {
        None => return Err(fail(format!("failed to fetch entry key={entry}"))),
        Some(Err(e)) => return Err(fail(e.clone())),
        Some(Ok(GlobalData::Unreachable(_))) => {
            return Err(Outcome::unsupported(Unsupported::ContextEntry {
                name: name.to_string(),
                source: ContextSource::GlobalReference,
            }));
        }
        Some(Ok(GlobalData::Live { all, projections })) => match projection {
            "" => all.clone(),
            p => match projections.get(p) {
                Some(v) => v.clone(),
                None => return Err(fail(format!("projection {p:?} not found"))),
            },
        },
        Some(Ok(GlobalData::Mock(v))) => match projection {
            "" => v.clone(),
            p => match v.get(p) {
                Some(v) => v.clone(),
                None => return Err(fail(format!("projection {p:?} not found"))),
            },
        },
    };
    match reference.get("jmesPath").and_then(Value::as_str) {
        Some(expr) if !expr.is_empty() => {
            vars::query(expr, &Context::from_document(data)).map_err(|e| {
                fail(format!(
                    "failed to apply JMESPath {expr} for context entry {name}: {e}"
                ))
            })
        }
        _ => Ok(data),
    }
}

/// An entry's data with its `projections` (`{name, jmesPath}`) computed, as the store
/// keeps it (pkg/globalcontext/k8sresource and externalapi `entry`).
pub fn with_projections(all: Value, projections: &[Value]) -> Result<GlobalData, String> {
    let mut out = BTreeMap::new();
    let doc = Context::from_document(all.clone());
    for p in projections {
        let pname = p.get("name").and_then(Value::as_str).unwrap_or("");
        let path = p.get("jmesPath").and_then(Value::as_str).unwrap_or("");
        let v = vars::query(path, &doc).map_err(|e| e.to_string())?;
        out.insert(pname.to_string(), v);
    }
    Ok(GlobalData::Live {
        all,
        projections: out,
    })
}

/// An `apiCall` POST of a `SubjectAccessReview` (or a `LocalSubjectAccessReview` in its
/// namespace), answered as the API server's authorizer would (k8s.io/kubernetes
/// pkg/registry/authorization/subjectaccessreview/rest.go: the review's own user and
/// groups, nothing added; `status.allowed`, and the authorizer's reason when allowed).
/// `None` for any other call.
pub fn access_review(
    call: &Value,
    ctx: &Context,
    authorizer: &Authorizer,
) -> Option<Result<Value, ApiCallError>> {
    if !call
        .get("method")
        .and_then(Value::as_str)
        .is_some_and(|m| m.eq_ignore_ascii_case("POST"))
        || call.get("service").is_some()
    {
        return None;
    }
    let url = match vars::substitute(call.get("urlPath")?, ctx) {
        Ok(Value::String(u)) => u,
        Ok(_) => return Some(Err(ApiCallError::UrlNotText)),
        Err(e) => return Some(Err(e.into())),
    };
    let parts: Vec<&str> = url.trim_matches('/').split('/').collect();
    let local_namespace = match parts.as_slice() {
        ["apis", "authorization.k8s.io", "v1", "subjectaccessreviews"] => None,
        [
            "apis",
            "authorization.k8s.io",
            "v1",
            "namespaces",
            ns,
            "localsubjectaccessreviews",
        ] => Some((*ns).to_string()),
        _ => return None,
    };
    let data = match vars::substitute(call.get("data").unwrap_or(&Value::Null), ctx) {
        Ok(d) => d,
        Err(e) => return Some(Err(e.into())),
    };
    // `data` is a list of `{key, value}`: the request body's fields.
    let mut body = serde_json::Map::new();
    for item in data.as_array().into_iter().flatten() {
        if let Some(k) = item.get("key").and_then(Value::as_str) {
            body.insert(
                k.to_string(),
                item.get("value").cloned().unwrap_or(Value::Null),
            );
        }
    }
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let text = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let resource = spec.get("resourceAttributes").unwrap_or(&Value::Null);
    let non_resource = spec.get("nonResourceAttributes");
    let request = AccessRequest {
        user: text(&spec, "/user"),
        groups: spec
            .get("groups")
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        verb: match non_resource {
            Some(n) => text(n, "/verb"),
            None => text(resource, "/verb"),
        },
        api_group: text(resource, "/group"),
        resource: text(resource, "/resource"),
        subresource: text(resource, "/subresource"),
        namespace: local_namespace.unwrap_or_else(|| text(resource, "/namespace")),
        name: text(resource, "/name"),
        non_resource_path: non_resource.map(|n| text(n, "/path")),
    };
    let decision = authorizer.authorize(&request);
    let mut status = json!({"allowed": decision.allowed});
    if decision.allowed {
        status["reason"] = json!(decision.reason);
    }
    body.insert("status".into(), status);
    let result = Value::Object(body);
    Some(match call.get("jmesPath").and_then(Value::as_str) {
        Some(expr) if !expr.is_empty() => {
            vars::query(expr, &Context::from_document(result)).map_err(ApiCallError::from)
        }
        _ => Ok(result),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::kyverno::entries::{Options, load_entries};
    use crate::offline::kyverno::rule::ContextEntry;

    fn entries(v: Value) -> Vec<ContextEntry> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_subject_access_review_is_answered_from_the_clusters_rbac() {
        let rbac = [
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "ns-delete"},
                "rules": [{"apiGroups": [""], "resources": ["namespaces"],
                           "resourceNames": ["mine"], "verbs": ["delete"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "b"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "ns-delete"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "k"}]}),
        ];
        let opts = Options {
            authorizer: Some(std::sync::Arc::new(Authorizer::new(&rbac))),
            ..Default::default()
        };
        let list = entries(json!([{"name": "sar", "apiCall": {
            "method": "POST", "urlPath": "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "data": [{"key": "kind", "value": "SubjectAccessReview"},
                     {"key": "spec", "value": {"user": "system:serviceaccount:k:sa",
                        "resourceAttributes": {"group": "", "resource": "namespaces",
                            "verb": "delete", "name": "{{ request.namespace }}"}}}]}}]));
        for (ns, allowed) in [("mine", true), ("default", false)] {
            let mut ctx = Context::from_document(json!({"request": {"namespace": ns}}));
            load_entries(&list, &mut ctx, &opts, None).unwrap();
            assert_eq!(
                vars::query("sar.status.allowed", &ctx).unwrap(),
                json!(allowed),
                "{ns}"
            );
            assert_eq!(
                vars::query("sar.kind", &ctx).unwrap(),
                json!("SubjectAccessReview")
            );
        }
        // Without the cluster's RBAC the call stays unsupported.
        let mut ctx = Context::from_document(json!({"request": {"namespace": "mine"}}));
        load_entries(&list, &mut ctx, &Options::default(), None).unwrap();
        assert!(vars::query("sar.status.allowed", &ctx).is_err());
        assert!(ctx.load_failure().unwrap().unsupported.is_some());
    }

    #[test]
    fn a_global_reference_reads_the_store_by_entry_and_projection() {
        let mut store = Store::new();
        let all = json!([{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]);
        let projections = [json!({"name": "names", "jmesPath": "[].metadata.name"})];
        store.insert("deps".into(), with_projections(all, &projections));
        store.insert("broken".into(), Err("failed to GET resource".into()));
        let opts = Options {
            global_context: Some(std::sync::Arc::new(store)),
            ..Default::default()
        };
        let list = entries(json!([
            {"name": "count", "globalReference": {"name": "deps", "jmesPath": "length(@)"}},
            {"name": "names", "globalReference": {"name": "deps.names"}},
            {"name": "gone", "globalReference": {"name": "nothere"}},
            {"name": "bad", "globalReference": {"name": "broken"}}]));
        let mut ctx = Context::from_document(json!({}));
        load_entries(&list, &mut ctx, &opts, None).unwrap();
        assert_eq!(vars::query("count", &ctx).unwrap(), json!(2));
        assert_eq!(vars::query("names", &ctx).unwrap(), json!(["a", "b"]));
        assert!(vars::query("gone", &ctx).is_err());
        let failure = ctx.load_failure().unwrap();
        assert!(failure.unsupported.is_none(), "{failure:?}");
        assert!(
            failure
                .message
                .contains("failed to fetch entry key=nothere"),
            "{failure:?}"
        );
        let mut ctx = Context::from_document(json!({}));
        load_entries(&list[3..], &mut ctx, &opts, None).unwrap();
        assert!(vars::query("bad", &ctx).is_err());
    }
}
