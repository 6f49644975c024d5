//! Kyverno's `resource` library over the cluster's objects (kyverno/sdk
//! `extensions/cel/libs/resource`: `lib.go` declares the overloads, `impl.go` and
//! `namespaced_impl.go` run them; Kyverno's provider, pkg/cel/libs/context.go, reads
//! through the dynamic client and maps kinds with the REST mapper). A policy's
//! environment has the cluster-wide overloads, a namespaced policy's those without a
//! namespace argument, which read in its own namespace — the namespace of every request
//! it sees, which this library is given. Both sets are told apart here by their
//! argument types, as the overloads do not overlap.
//!
//! - `get(apiVersion, resource, namespace, name)`, `get(gvr, namespace, name)`;
//!   namespaced `get(apiVersion, resource, name)`, `get(gvr, name)`: the object, or
//!   `null` when there is none (the library ignores NotFound).
//! - `list(apiVersion, resource, namespace[, labels])`, `list(gvr, namespace[, labels])`;
//!   namespaced `list(apiVersion, resource[, labels])`, `list(gvr[, labels])`: a list
//!   object whose `items` have every label of `labels` (`labels.SelectorFromSet`).
//! - `toGVR(apiVersion, kind)`: the GroupVersionResource the REST mapper resolves, an
//!   opaque value only the GVR overloads take.

use super::services::string_at;
use super::*;

/// The key of the map that stands for an opaque GroupVersionResource value.
const GVR: &str = "kca.dev/group-version-resource";

/// A `(apiVersion, resource)` pair read from a GVR value.
fn gvr_of(v: &cel::Value) -> Option<(String, String)> {
    let cel::Value::Map(m) = v else {
        return None;
    };
    if m.map.len() != 1 {
        return None;
    }
    let inner = from_cel(
        m.map
            .get(&cel::objects::Key::String(Arc::new(GVR.into())))?,
    )
    .ok()?;
    let s = |k: &str| {
        inner
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (group, version) = (s("group"), s("version"));
    let api_version = match group.as_str() {
        "" => version,
        g => format!("{g}/{version}"),
    };
    Some((api_version, s("resource")))
}

/// An argument list with a leading GVR value read as its `apiVersion` and `resource`
/// strings; other arguments as they are.
fn expanded(args: &[cel::Value]) -> Vec<cel::Value> {
    match args.first().and_then(gvr_of) {
        Some((api_version, resource)) => {
            let mut out = vec![
                cel::Value::String(Arc::new(api_version)),
                cel::Value::String(Arc::new(resource)),
            ];
            out.extend(args[1..].iter().cloned());
            out
        }
        None => args.to_vec(),
    }
}

fn is_string(args: &[cel::Value], i: usize) -> bool {
    matches!(args.get(i), Some(cel::Value::String(_)))
}

/// `toGVR(apiVersion, kind)`.
pub(super) fn to_gvr(cluster: &[Value], api_version: &str, kind: &str) -> cel::ResolveResult {
    let mapper = crate::offline::rbac::resource::Mapper::built_in().with_crds(cluster);
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    match mapper.for_kind(api_version, kind) {
        Some(r) => Ok(to_cel(&json!({GVR: {
            "group": r.group, "version": version, "resource": r.plural
        }}))),
        None => Err(ExecutionError::function_error(
            "resource.toGVR",
            format!(
                "failed to map kind to resource: no matches for kind \"{kind}\" in version \"{api_version}\""
            ),
        )),
    }
}

/// Whether `o` is an object of `resource` (its first segment: `pods/status` reads pods)
/// served at `api_version`.
fn is_of(o: &Value, api_version: &str, resource: &str) -> bool {
    let resource = resource.split('/').next().unwrap_or(resource);
    o.get("apiVersion").and_then(Value::as_str) == Some(api_version)
        && crate::offline::rbac::resource::plural_of(api_version, kind_of(o)) == resource
}

fn namespace_of(o: &Value) -> &str {
    o.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `get`, either set of overloads; `None` for arguments neither declares.
pub(super) fn get(
    cluster: &[Value],
    own_namespace: &str,
    args: &[cel::Value],
) -> Option<cel::ResolveResult> {
    let args = expanded(args);
    let strings = args.len();
    if !(0..strings).all(|i| is_string(&args, i)) {
        return None;
    }
    let s = |i: usize| string_at(&args, i).unwrap_or_default();
    let (api_version, resource, namespace, name) = match strings {
        4 => (s(0), s(1), s(2), s(3)),
        3 => (s(0), s(1), own_namespace, s(2)),
        _ => return None,
    };
    let found = cluster.iter().find(|o| {
        is_of(o, api_version, resource) && name_of(o) == name && namespace_of(o) == namespace
    });
    Some(Ok(found.map(to_cel).unwrap_or(cel::Value::Null)))
}

/// `list`, either set of overloads; `None` for arguments neither declares.
pub(super) fn list(
    cluster: &[Value],
    own_namespace: &str,
    args: &[cel::Value],
) -> Option<cel::ResolveResult> {
    let mut args = expanded(args);
    let labels = match args.last() {
        Some(cel::Value::Map(_)) => {
            let m = from_cel(&args.pop()?).ok()?;
            let mut labels = BTreeMap::new();
            for (k, v) in m.as_object()? {
                labels.insert(k.clone(), v.as_str()?.to_string());
            }
            labels
        }
        _ => BTreeMap::new(),
    };
    if !(0..args.len()).all(|i| is_string(&args, i)) {
        return None;
    }
    let s = |i: usize| string_at(&args, i).unwrap_or_default();
    let (api_version, resource, namespace) = match args.len() {
        3 => (s(0), s(1), s(2)),
        2 => (s(0), s(1), own_namespace),
        _ => return None,
    };
    let mut items: Vec<&Value> = cluster
        .iter()
        .filter(|o| {
            is_of(o, api_version, resource)
                && (namespace.is_empty() || namespace_of(o) == namespace)
                && labels.iter().all(|(k, v)| {
                    o.pointer("/metadata/labels")
                        .and_then(|l| l.get(k))
                        .and_then(Value::as_str)
                        == Some(v)
                })
        })
        .collect();
    // The API server lists in its storage's key order: namespace, then name.
    items.sort_by(|a, b| (namespace_of(a), name_of(a)).cmp(&(namespace_of(b), name_of(b))));
    Some(Ok(to_cel(
        &json!({"apiVersion": api_version, "kind": "List", "items": items}),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "b", "namespace": "n", "labels": {"app": "x"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "n"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "m"}}),
        ]
    }

    fn eval_with(expr: &str) -> Result<cel::Value, EvalError> {
        let req = VapRequest {
            operation: "CREATE".into(),
            object: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}),
            cluster: Some(Arc::new(cluster())),
            ..Default::default()
        };
        eval(&base_context(&req, &Value::Null), expr)
    }

    fn json_of(expr: &str) -> Value {
        from_cel(&eval_with(expr).unwrap_or_else(|e| panic!("{expr}: {e:?}"))).unwrap()
    }

    /// `resource.ToGVR` was an undeclared reference, and a GVR could not be passed to
    /// `get` or `list`.
    #[test]
    fn a_gvr_from_to_gvr_reads_like_its_strings() {
        assert_eq!(
            json_of("resource.get(resource.ToGVR('v1', 'ConfigMap'), 'n', 'a').metadata.name"),
            json!("a")
        );
        assert_eq!(
            json_of("resource.list(resource.toGVR('v1', 'ConfigMap'), '').items.size()"),
            json!(3)
        );
        assert!(eval_with("resource.toGVR('v1', 'NoSuchKind')").is_err());
    }

    /// A missing object was an error; the library answers null.
    #[test]
    fn get_of_a_missing_object_is_null_and_lists_select_labels() {
        assert_eq!(
            json_of("resource.get('v1', 'configmaps', 'n', 'zz')"),
            Value::Null
        );
        assert_eq!(
            json_of("resource.list('v1', 'configmaps', 'n').items.map(i, i.metadata.name)"),
            json!(["a", "b"])
        );
        assert_eq!(
            json_of("resource.List('v1', 'configmaps', 'n', {'app': 'x'}).items.size()"),
            json!(1)
        );
        // The namespaced overloads read in the request's namespace.
        assert_eq!(
            json_of("resource.get('v1', 'configmaps', 'b').metadata.name"),
            json!("b")
        );
        assert_eq!(
            json_of("resource.list('v1', 'configmaps').items.size()"),
            json!(2)
        );
    }
}
