//! The API server's strategic merge patch (`kubectl patch` without `--type`) of a
//! built-in object (k8s.io/apimachinery pkg/util/strategicpatch/patch.go
//! `StrategicMergePatch`): maps merge and a null deletes, and each list goes by the
//! `patchStrategy`/`patchMergeKey` tags of its field in k8s.io/api — replaced, merged by
//! a key, or (a list of scalars) joined without duplicates. The table below names the
//! common fields; a list in the patch whose field it does not name, a patch directive
//! (`$patch`, `$retainKeys`, `$setElementOrder/…`, `$deleteFromPrimitiveList/…`), and a
//! custom resource (the API server takes no strategic patch for one) are skips.

use serde_json::{Map, Value};

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    /// No `patchStrategy` (or `atomic`): the patch's list replaces.
    Replace,
    /// `patchStrategy:"merge"` with `patchMergeKey`: elements merge by the key.
    MergeBy(&'static str),
    /// `patchStrategy:"merge"` on a list of scalars: a union, first occurrence first.
    Union,
}

use Strategy::*;

/// List fields of a PodSpec (k8s.io/api core/v1 types.go), relative to it.
const POD_SPEC: &[(&str, Strategy)] = &[
    ("containers", MergeBy("name")),
    ("initContainers", MergeBy("name")),
    ("ephemeralContainers", MergeBy("name")),
    ("volumes", MergeBy("name")),
    ("imagePullSecrets", MergeBy("name")),
    ("hostAliases", MergeBy("ip")),
    ("topologySpreadConstraints", MergeBy("topologyKey")),
    ("schedulingGates", MergeBy("name")),
    ("resourceClaims", MergeBy("name")),
    ("tolerations", Replace),
    ("readinessGates", Replace),
    ("containers[].ports", MergeBy("containerPort")),
    ("containers[].env", MergeBy("name")),
    ("containers[].volumeMounts", MergeBy("mountPath")),
    ("containers[].volumeDevices", MergeBy("devicePath")),
    ("containers[].envFrom", Replace),
    ("containers[].command", Replace),
    ("containers[].args", Replace),
    ("containers[].resizePolicy", Replace),
];

/// List fields of ObjectMeta, relative to `metadata`.
const OBJECT_META: &[(&str, Strategy)] =
    &[("finalizers", Union), ("ownerReferences", MergeBy("uid"))];

/// List fields of other kinds' `spec`, by kind.
const SPEC: &[(&str, &str, Strategy)] = &[
    ("Service", "ports", MergeBy("port")),
    ("Service", "externalIPs", Replace),
    ("Service", "ipFamilies", Replace),
    ("Service", "clusterIPs", Replace),
    ("Service", "loadBalancerSourceRanges", Replace),
];

/// Where a kind keeps its PodSpec.
fn pod_spec_root(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("spec"),
        "Deployment"
        | "StatefulSet"
        | "DaemonSet"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController" => Some("spec.template.spec"),
        "CronJob" => Some("spec.jobTemplate.spec.template.spec"),
        _ => None,
    }
}

/// The strategy of the list at `path` (fields joined by `.`, list elements as `[]`) in
/// a `kind` object; `None` when the table does not know it.
fn strategy(kind: &str, path: &str) -> Option<Strategy> {
    if let Some(rest) = path.strip_prefix("metadata.") {
        return OBJECT_META
            .iter()
            .find(|(p, _)| *p == rest)
            .map(|(_, s)| *s);
    }
    if let Some(root) = pod_spec_root(kind)
        && let Some(rest) = path.strip_prefix(root).and_then(|r| r.strip_prefix('.'))
    {
        // Init and ephemeral containers have a container's lists.
        let rest = ["initContainers[].", "ephemeralContainers[]."]
            .iter()
            .find_map(|p| rest.strip_prefix(p).map(|r| format!("containers[].{r}")))
            .unwrap_or_else(|| rest.to_string());
        return POD_SPEC.iter().find(|(p, _)| *p == rest).map(|(_, s)| *s);
    }
    let rest = path.strip_prefix("spec.")?;
    SPEC.iter()
        .find(|(k, p, _)| *k == kind && *p == rest)
        .map(|(_, _, s)| *s)
}

/// Most nesting a patch may have.
const MAX_DEPTH: usize = 64;

/// `original` with `patch` applied strategically, for an object of `kind`; `Err` says
/// what is not modelled.
pub(super) fn patch(original: &Value, patch: &Value, kind: &str) -> Result<Value, String> {
    let mut out = original.clone();
    merge_value(&mut out, patch, kind, "", 0)?;
    Ok(out)
}

fn merge_value(
    target: &mut Value,
    patch: &Value,
    kind: &str,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("a strategic merge patch nested too deep".into());
    }
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => merge_map(t, p, kind, path, depth),
        (t, p) => {
            *t = cleaned(p, kind, path, depth)?;
            Ok(())
        }
    }
}

fn merge_map(
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    kind: &str,
    path: &str,
    depth: usize,
) -> Result<(), String> {
    for (k, v) in patch {
        if k.starts_with('$') {
            return Err(format!("the strategic merge patch directive `{k}`"));
        }
        let here = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        if v.is_null() {
            target.shift_remove(k);
            continue;
        }
        match (target.get_mut(k), v) {
            (Some(Value::Array(old)), Value::Array(new)) => {
                let merged = merge_list(old, new, kind, &here, depth)?;
                target.insert(k.clone(), Value::Array(merged));
            }
            (Some(t @ Value::Object(_)), Value::Object(_)) => {
                merge_value(t, v, kind, &here, depth + 1)?;
            }
            _ => {
                target.insert(k.clone(), cleaned(v, kind, &here, depth + 1)?);
            }
        }
    }
    Ok(())
}

/// A patch value set where there was none: nulls inside it are dropped, as merging it
/// onto nothing does; a list in it must still be one the table knows.
fn cleaned(v: &Value, kind: &str, path: &str, depth: usize) -> Result<Value, String> {
    let mut out = Value::Object(Map::new());
    match v {
        Value::Object(m) => {
            let mut t = Map::new();
            merge_map(&mut t, m, kind, path, depth + 1)?;
            out = Value::Object(t);
        }
        Value::Array(items) => {
            let mut empty = Vec::new();
            out = Value::Array(merge_list(&mut empty, items, kind, path, depth)?);
        }
        other => out.clone_from(other),
    }
    Ok(out)
}

fn merge_list(
    old: &mut [Value],
    new: &[Value],
    kind: &str,
    path: &str,
    depth: usize,
) -> Result<Vec<Value>, String> {
    let Some(s) = strategy(kind, path) else {
        return Err(format!(
            "a strategic merge patch of the list `{path}` (its merge strategy is not modelled)"
        ));
    };
    let element = format!("{path}[]");
    match s {
        Replace => new
            .iter()
            .map(|v| cleaned(v, kind, &element, depth + 1))
            .collect(),
        Union => {
            let mut out: Vec<Value> = Vec::new();
            for v in old.iter().chain(new) {
                if v.is_object() || v.is_array() {
                    return Err(format!("a list of objects at `{path}` merged as scalars"));
                }
                if !out.contains(v) {
                    out.push(v.clone());
                }
            }
            Ok(out)
        }
        MergeBy(key) => {
            let mut out: Vec<Value> = old.to_vec();
            for v in new {
                let Some(id) = v.get(key).filter(|id| !id.is_null()) else {
                    return Err(format!(
                        "an element of `{path}` without its merge key `{key}`"
                    ));
                };
                match out.iter_mut().find(|o| o.get(key) == Some(id)) {
                    Some(o) => merge_value(o, v, kind, &element, depth + 1)?,
                    None => out.push(cleaned(v, kind, &element, depth + 1)?),
                }
            }
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_merge_by_their_key_scalars_join_and_unknown_lists_skip() {
        let svc = json!({"metadata": {"name": "s"}, "spec": {"type": "ClusterIP",
            "ports": [{"name": "http", "port": 80}, {"name": "grpc", "port": 90}]}});
        let p = json!({"spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30000},
            {"port": 100}]}, "metadata": {"finalizers": ["a"]}});
        let out = patch(&svc, &p, "Service").unwrap_or_default();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"name": "http", "port": 80, "nodePort": 30000},
                {"name": "grpc", "port": 90}, {"port": 100}])
        );
        assert_eq!(out["spec"]["type"], "NodePort");
        assert_eq!(out["metadata"]["finalizers"], json!(["a"]));
        let again = patch(
            &out,
            &json!({"metadata": {"finalizers": ["b", "a"]}}),
            "Service",
        );
        assert_eq!(
            again.unwrap_or_default()["metadata"]["finalizers"],
            json!(["a", "b"])
        );
        let gone = patch(&out, &json!({"metadata": {"finalizers": null}}), "Service");
        assert!(
            gone.unwrap_or_default()["metadata"]
                .get("finalizers")
                .is_none()
        );
        // A Deployment's containers merge by name, their env by name.
        let d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}]}}}});
        let p = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "env": [{"name": "F", "value": "2"}]}]}}}});
        let out = patch(&d, &p, "Deployment").unwrap_or_default();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["env"],
            json!([{"name": "E", "value": "1"}, {"name": "F", "value": "2"}])
        );
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"][0]["image"],
            "x"
        );
        for p in [
            json!({"spec": {"selector": {"matchExpressions": []}}}),
            json!({"spec": {"ports": [{"$patch": "delete", "port": 80}]}}),
            json!({"spec": {"ports": [{"name": "no-key"}]}}),
        ] {
            assert!(patch(&svc, &p, "Service").is_err(), "{p}");
        }
    }
}
