//! A rule's `context:` entries loaded into its JMESPath context (variables, configMaps,
//! `apiCall`s served from mocks or the given objects), and the `Options` that say what the
//! caller knows beyond the request. Layering: runner → engine → {mutate, generate} →
//! entries → context → vars. It must not decide rule outcomes beyond a failed entry.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Value, json};

use super::context::Context;
use super::outcome::{ContextSource, Outcome, Unsupported, Upstream};
use super::rule::ContextEntry;
use super::vars::{self, VarError};
use crate::offline::rbac::resource::resource_for_kind;

/// What the caller knows beyond the request: exceptions, cluster objects and values
/// supplied for individual rules (a test's values file).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `PolicyException` objects.
    pub exceptions: Vec<Value>,
    /// Existing objects (clone sources for generate, configMaps for context), shared by
    /// every request of a run (a lab check's cluster is not copied per check).
    pub cluster: std::sync::Arc<Vec<Value>>,
    /// Values per (policy, rule): context entry names and variables.
    pub rule_values: BTreeMap<(String, String), serde_json::Map<String, Value>>,
    /// Mocked `apiCall` responses (`url`, optional `method`, `response.body`).
    pub api_responses: Vec<Value>,
    /// The background controller's permissions in the modelled cluster: generate then
    /// creates only what they allow. `None` allows everything (the kyverno CLI's view).
    pub background: Option<std::sync::Arc<super::background::Access>>,
    /// The modelled cluster's RBAC: an `apiCall` POST of a SubjectAccessReview is
    /// answered from it, as the API server would. `None`: such a call is unsupported.
    pub authorizer: Option<std::sync::Arc<crate::offline::rbac::Authorizer>>,
    /// The modelled cluster's global context store (GlobalContextEntry name → its data):
    /// what `globalReference` entries read. `None`: they are unsupported.
    pub global_context: Option<std::sync::Arc<super::gctx::Store>>,
}

/// Evaluates the `context:` entries of a foreach declaration or a target in order into
/// `ctx` (a rule's own entries are decoded with it: [`load_entries`]).
pub fn load_context(
    holder: &Value,
    ctx: &mut Context,
    opts: &Options,
    supplied: Option<&serde_json::Map<String, Value>>,
) -> Result<(), Outcome> {
    load_entries(&ContextEntry::list(holder), ctx, opts, supplied)
}

/// Adds `context:` entries to `ctx`, each loaded when an expression first reads it
/// (Kyverno's deferred loading, pkg/engine/factories/contextloaderfactory.go: an entry no
/// evaluated expression names is never loaded); a name in `supplied` (the test's values)
/// stands in for its entry. Failures surface where the entry is read.
pub fn load_entries(
    entries: &[ContextEntry],
    ctx: &mut Context,
    opts: &Options,
    supplied: Option<&serde_json::Map<String, Value>>,
) -> Result<(), Outcome> {
    let env = std::rc::Rc::new(Sources {
        cluster: opts.cluster.clone(),
        api_responses: opts.api_responses.clone(),
        authorizer: opts.authorizer.clone(),
        global_context: opts.global_context.clone(),
    });
    for entry in entries {
        let name = entry.name.as_str();
        let prefix = format!("{name}.");
        if supplied.is_some_and(|s| s.keys().any(|k| k == name || k.starts_with(&prefix))) {
            continue;
        }
        let known = entry.variable.is_some()
            || entry.config_map.is_some()
            || entry.api_call.is_some()
            || entry.image_registry.is_some()
            || entry.global_reference.is_some();
        if !known {
            continue;
        }
        let (entry, env) = (entry.clone(), env.clone());
        ctx.defer(name, Box::new(move |ctx| load_one(&entry, ctx, &env)));
    }
    Ok(())
}

/// What an entry may read: the cluster's objects and the mocked API responses.
struct Sources {
    cluster: std::sync::Arc<Vec<Value>>,
    api_responses: Vec<Value>,
    authorizer: Option<std::sync::Arc<crate::offline::rbac::Authorizer>>,
    global_context: Option<std::sync::Arc<super::gctx::Store>>,
}

/// One entry's value, evaluated against the context as it is when the entry is read.
fn load_one(entry: &ContextEntry, ctx: &Context, env: &Sources) -> Result<Value, Outcome> {
    let name = entry.name.as_str();
    if let Some(var) = &entry.variable {
        // Kyverno's variable loader says its failure as it is
        // (pkg/engine/context/loaders/variable.go).
        return variable_entry(name, var, ctx).map_err(|e| {
            let kyverno = e.kyverno_text();
            let o = Outcome::error(format!("context entry {name}: {e}"));
            match kyverno {
                Some(k) => o.worded(Upstream::Verbatim(k)),
                None => o,
            }
        });
    }
    if let Some(cm) = &entry.config_map {
        let cm = vars::substitute(cm, ctx)
            .map_err(|e| Outcome::error(format!("context entry {name}: {e}")))?;
        let want_name = cm.get("name").and_then(Value::as_str).unwrap_or("");
        let want_ns = cm.get("namespace").and_then(Value::as_str).unwrap_or("");
        let found = env.cluster.iter().find(|o| {
            o.get("kind").and_then(Value::as_str) == Some("ConfigMap")
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(want_name)
                && (want_ns.is_empty()
                    || o.pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("default")
                        == want_ns)
        });
        return found.cloned().ok_or_else(|| {
            Outcome::error(format!(
                "context entry {name}: configMap {want_ns}/{want_name} not found (supply it as a cluster resource or in the values file)"
            ))
        });
    }
    if let (Some(reference), Some(store)) = (&entry.global_reference, &env.global_context) {
        return super::gctx::global_reference(name, reference, ctx, store);
    }
    if let Some(call) = &entry.api_call
        && let Some(found) = api_mock(call, ctx, &env.api_responses)
            .or_else(|| {
                let authorizer = env.authorizer.as_deref()?;
                super::gctx::access_review(call, ctx, authorizer)
            })
            .or_else(|| api_get(call, ctx, &env.cluster))
    {
        // A call the API server fails (not found) takes the entry's `default`, stored
        // as written (pkg/engine/apicall/apiCall.go `Fetch`, `transformAndStore`).
        return match (found, call.get("default")) {
            (Err(ApiCallError::NotFound(_)), Some(default)) => Ok(default.clone()),
            (found, _) => found.map_err(|e| Outcome::error(format!("context entry {name}: {e}"))),
        };
    }
    let source = if entry.api_call.is_some() {
        ContextSource::ApiCall
    } else if entry.image_registry.is_some() {
        ContextSource::ImageRegistry
    } else {
        ContextSource::GlobalReference
    };
    Err(Outcome::unsupported(Unsupported::ContextEntry {
        name: name.to_string(),
        source,
    }))
}

/// Why an `apiCall` entry could not be served from what the test supplies.
#[derive(Debug, thiserror::Error)]
pub enum ApiCallError {
    #[error(transparent)]
    Query(#[from] VarError),
    #[error("urlPath is not a string")]
    UrlNotText,
    #[error("cannot serve urlPath {0} offline")]
    Unservable(String),
    #[error("{0}: not found among the test's cluster resources")]
    NotFound(String),
}

/// Serves an `apiCall` from the test's mocked responses, matched by URL (and method).
fn api_mock(call: &Value, ctx: &Context, mocks: &[Value]) -> Option<Result<Value, ApiCallError>> {
    let raw = call
        .pointer("/service/url")
        .or_else(|| call.get("urlPath"))?;
    let url = match vars::substitute(raw, ctx) {
        Ok(Value::String(u)) => u,
        _ => return None,
    };
    let method = call.get("method").and_then(Value::as_str).unwrap_or("GET");
    let hit = mocks.iter().find(|m| {
        m.get("url").and_then(Value::as_str) == Some(url.as_str())
            && m.get("method")
                .and_then(Value::as_str)
                .is_none_or(|mm| mm.eq_ignore_ascii_case(method))
    })?;
    let body = hit
        .pointer("/response/body")
        .cloned()
        .unwrap_or(Value::Null);
    match call.get("jmesPath").and_then(Value::as_str) {
        Some(expr) if !expr.is_empty() => {
            Some(vars::query(expr, &Context::from_document(body)).map_err(ApiCallError::from))
        }
        _ => Some(Ok(body)),
    }
}

/// Serves a GET `apiCall` from the objects the test supplies, as Kyverno's CLI does with its
/// fake client. `None` when nothing could serve it (no cluster objects, POST, a service).
fn api_get(call: &Value, ctx: &Context, cluster: &[Value]) -> Option<Result<Value, ApiCallError>> {
    if cluster.is_empty()
        || call.get("service").is_some()
        || call
            .get("method")
            .and_then(Value::as_str)
            .is_some_and(|m| m != "GET")
    {
        return None;
    }
    let url = match vars::substitute(call.get("urlPath")?, ctx) {
        Ok(Value::String(u)) => u,
        Ok(_) => return Some(Err(ApiCallError::UrlNotText)),
        Err(e) => return Some(Err(e.into())),
    };
    let path = url.split('?').next().unwrap_or("");
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (api_version, rest) = match parts.as_slice() {
        ["api", v, rest @ ..] => ((*v).to_string(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return Some(Err(ApiCallError::Unservable(url))),
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some(*ns), tail),
        other => (None, other),
    };
    let (plural, name) = match rest {
        [p] => (*p, None),
        [p, n] => (*p, Some(*n)),
        _ => return Some(Err(ApiCallError::Unservable(url))),
    };
    fn kind_of(o: &Value) -> &str {
        o.get("kind").and_then(Value::as_str).unwrap_or("")
    }
    let in_version = |o: &&Value| o.get("apiVersion").and_then(Value::as_str) == Some(&api_version);
    // The kinds of this version that `plural` names, resolved once each rather than once
    // per object (resolving an unknown kind reads every CRD in the cluster).
    let mut serving: HashSet<&str> = cluster.iter().filter(in_version).map(kind_of).collect();
    serving.retain(|k| resource_for_kind(&api_version, k, cluster) == plural);
    let matches = |o: &&Value| {
        in_version(o)
            && serving.contains(kind_of(o))
            && namespace.is_none_or(|ns| {
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("default")
                    == ns
            })
    };
    // The API server answers 404 for a resource discovery does not serve.
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    if name.is_none()
        && crate::offline::rbac::resource::Mapper::built_in()
            .with_crds(cluster)
            .namespaced(group, plural)
            .is_none()
    {
        return Some(Err(ApiCallError::NotFound(url)));
    }
    let result = match name {
        Some(n) => match cluster
            .iter()
            .filter(matches)
            .find(|o| o.pointer("/metadata/name").and_then(Value::as_str) == Some(n))
        {
            Some(o) => o.clone(),
            None => {
                return Some(Err(ApiCallError::NotFound(url)));
            }
        },
        None => json!({"apiVersion": "v1", "kind": "List",
            "items": cluster.iter().filter(matches).cloned().collect::<Vec<_>>()}),
    };
    match call.get("jmesPath").and_then(Value::as_str) {
        Some(expr) if !expr.is_empty() => {
            Some(vars::query(expr, &Context::from_document(result)).map_err(ApiCallError::from))
        }
        _ => Some(Ok(result)),
    }
}

/// A `variable` entry as Kyverno loads it (pkg/engine/context/loaders/variable.go
/// `loadVariable`): `jmesPath` substituted first and a string or an error, `default` when
/// the query fails or finds nothing, and an entry that comes out `null` is an error.
fn variable_entry(name: &str, var: &Value, ctx: &Context) -> Result<Value, VarError> {
    let path = match var.get("jmesPath").and_then(Value::as_str) {
        Some(expr) if !expr.is_empty() => match vars::substitute(&json!(expr), ctx)? {
            Value::String(s) => Some(s),
            _ => {
                return Err(VarError::Load(format!(
                    "jmespath value must be a string {name} {expr}: <nil>"
                )));
            }
        },
        _ => None,
    };
    let default = match var.get("default") {
        Some(d) if !d.is_null() => Some(vars::substitute(d, ctx)?),
        _ => None,
    };
    let mut output = default.clone().unwrap_or(Value::Null);
    match (var.get("value").filter(|v| !v.is_null()), path) {
        (Some(v), Some(path)) => {
            let v = vars::substitute(v, ctx)?;
            match vars::query(&path, &Context::from_document(v)) {
                Ok(found) => output = found,
                Err(e) if default.is_none() => return Err(e),
                Err(_) => {}
            }
        }
        (Some(v), None) => output = vars::substitute(v, ctx)?,
        (None, Some(path)) => match vars::query(&path, ctx) {
            Ok(found) if !found.is_null() => output = found,
            Ok(_) => {}
            Err(e) if default.is_none() => return Err(e),
            Err(_) => {}
        },
        (None, None) => {}
    }
    if output.is_null() {
        return Err(VarError::Load(format!(
            "failed to add context entry for variable {name} since it evaluated to nil"
        )));
    }
    Ok(output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_call_default_stands_in_for_an_object_not_found() {
        let entry: ContextEntry = serde_json::from_value(json!({"name": "podname",
            "apiCall": {"urlPath": "/api/v1/namespaces/a/configmaps/missing",
                        "jmesPath": "metadata.name", "default": "example"}}))
        .unwrap();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "other", "namespace": "a"}});
        let opts = Options {
            cluster: std::sync::Arc::new(vec![cm]),
            ..Default::default()
        };
        let mut ctx = Context::from_document(json!({}));
        assert!(load_entries(std::slice::from_ref(&entry), &mut ctx, &opts, None).is_ok());
        assert_eq!(vars::query("podname", &ctx).unwrap(), json!("example"));
        // A resource the API server does not serve is a 404 too.
        let mut unserved = entry.clone();
        unserved.api_call.as_mut().unwrap()["urlPath"] = json!("/api/v1/namespaces/a/invalid");
        let mut ctx = Context::from_document(json!({}));
        assert!(load_entries(&[unserved], &mut ctx, &opts, None).is_ok());
        assert_eq!(vars::query("podname", &ctx).unwrap(), json!("example"));
        let mut no_default = entry;
        no_default
            .api_call
            .as_mut()
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove("default");
        let mut ctx = Context::from_document(json!({}));
        assert!(load_entries(&[no_default], &mut ctx, &opts, None).is_ok());
        assert!(matches!(
            vars::query("podname", &ctx),
            Err(VarError::Load(_))
        ));
        assert_eq!(
            ctx.load_failure().unwrap().status,
            super::super::RuleStatus::Error
        );
    }

    /// A variable's `jmesPath` is substituted first and must come out a string; an entry
    /// that comes out null is an error; `default` stands in for a query that finds
    /// nothing (pkg/engine/context/loaders/variable.go).
    #[test]
    fn variable_entries_load_as_kyverno_loads_them() {
        let value = |var: Value| {
            let entry: ContextEntry =
                serde_json::from_value(json!({"name": "v", "variable": var})).unwrap();
            let mut ctx = Context::from_document(json!({"request": {"object": {"a": [1, 2]}}}));
            load_entries(&[entry], &mut ctx, &Options::default(), None).unwrap();
            vars::query("v", &ctx)
        };
        assert_eq!(
            value(json!({"jmesPath": "request.object.a"})).unwrap(),
            json!([1, 2])
        );
        let e = value(json!({"jmesPath": "{{ request.object.a }}"})).unwrap_err();
        assert!(
            e.to_string()
                .contains("jmespath value must be a string v {{ request.object.a }}"),
            "{e}"
        );
        let e = value(json!({"jmesPath": "request.object.missing"})).unwrap_err();
        assert!(e.to_string().contains("evaluated to nil"), "{e}");
        assert_eq!(
            value(json!({"jmesPath": "request.object.missing", "default": "d"})).unwrap(),
            json!("d")
        );
        assert_eq!(
            value(json!({"value": {"x": 1}, "jmesPath": "x"})).unwrap(),
            json!(1)
        );
    }

    /// Entries load when an expression names them, not before: an entry nothing reads
    /// never fails; one loads after the entries it reads, and a later entry of the same
    /// name overrides an earlier one.
    #[test]
    fn context_entries_load_when_an_expression_reads_them() {
        let entries: Vec<ContextEntry> = serde_json::from_value(json!([
            {"name": "nothere", "configMap": {"name": "missing", "namespace": "x"}},
            {"name": "foo", "variable": {"value": "foo"}},
            {"name": "one", "variable": {"jmesPath": "foo"}},
            {"name": "foo", "variable": {"value": "baz"}},
            {"name": "img", "imageRegistry": {"reference": "nginx"}}]))
        .unwrap();
        let mut ctx = Context::from_document(json!({"request": {"name": "x"}}));
        load_entries(&entries, &mut ctx, &Options::default(), None).unwrap();
        assert_eq!(vars::query("request.name", &ctx).unwrap(), json!("x"));
        assert!(ctx.load_failure().is_none());
        assert_eq!(vars::query("one", &ctx).unwrap(), json!("foo"));
        assert_eq!(vars::query("foo", &ctx).unwrap(), json!("baz"));
        assert!(vars::query("nothere.data", &ctx).is_err());
        assert!(vars::query("img.digest", &ctx).is_err());
        // The first failure is kept; an unsupported entry's reason travels with it.
        assert!(ctx.load_failure().unwrap().unsupported.is_none());
        let mut ctx = Context::from_document(json!({}));
        load_entries(&entries[4..], &mut ctx, &Options::default(), None).unwrap();
        assert!(vars::query("img", &ctx).is_err());
        assert!(ctx.load_failure().unwrap().unsupported.is_some());
    }

    #[test]
    fn a_name_is_mentioned_at_word_boundaries_only() {
        use super::super::context::mentions;
        assert!(mentions("foo", "foo"));
        assert!(mentions("to_upper(foo.bar)", "foo"));
        assert!(mentions("{{ foo }}", "foo"));
        assert!(!mentions("request.foo", "foo"));
        assert!(!mentions("foobar", "foo"));
        assert!(!mentions("xfoo", "foo"));
    }

    #[test]
    fn api_get_serves_the_objects_of_the_named_resource() {
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "spec": {"group": "x.io", "scope": "Namespaced",
                     "names": {"plural": "gizmata", "kind": "Gizmo"}}});
        let gizmo = |ns: &str| {
            json!({"apiVersion": "x.io/v1", "kind": "Gizmo",
            "metadata": {"name": "g", "namespace": ns}})
        };
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "a"}});
        let cluster = [crd, gizmo("a"), gizmo("b"), deploy.clone()];
        let ctx = Context::from_document(json!({}));
        let get = |url: &str| api_get(&json!({"urlPath": url}), &ctx, &cluster).unwrap();
        let list = get("/apis/x.io/v1/namespaces/a/gizmata").unwrap();
        assert_eq!(list["items"], json!([gizmo("a")]));
        assert_eq!(
            get("/apis/x.io/v1/gizmata").unwrap()["items"],
            json!([gizmo("a"), gizmo("b")])
        );
        assert_eq!(
            get("/apis/apps/v1/namespaces/a/deployments/d").unwrap(),
            deploy
        );
        assert!(get("/apis/apps/v1/namespaces/a/replicasets/d").is_err());
    }
}
