//! Unit tests of `offline/kyverno/smp.rs`.

use super::*;
use crate::offline::kyverno::Request;
use serde_json::json;

fn ctx() -> Context {
    Context::from_request(&Request::default())
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

#[test]
fn merge_follows_strategic_merge_rules() {
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "maps merge and scalars override",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}, "data": {"x": "1"}}),
            json!({"metadata": {"labels": {"b": "2"}}, "data": {"x": "2"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "2"}}),
        ),
        (
            "null deletes a key",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}}),
            json!({"metadata": {"labels": {"a": null}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"b": "2"}}}),
        ),
        (
            "containers merge by name, new ones first",
            pod(
                json!({"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}),
            ),
            json!({"spec": {"containers": [{"name": "c", "image": "c:1"}, {"name": "b", "imagePullPolicy": "Always"}]}}),
            pod(json!({"containers": [
                {"name": "c", "image": "c:1"},
                {"name": "b", "image": "b:1", "imagePullPolicy": "Always"},
                {"name": "a", "image": "a:1"}]})),
        ),
        (
            "env merges by name inside a container",
            pod(json!({"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]})),
            json!({"spec": {"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}]}]}}),
            pod(
                json!({"containers": [{"name": "a", "env": [{"name": "Y", "value": "2"}, {"name": "X", "value": "1"}]}]}),
            ),
        ),
        (
            "$patch: delete removes a list element",
            pod(json!({"containers": [{"name": "a"}, {"name": "b"}]})),
            json!({"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}),
            pod(json!({"containers": [{"name": "b"}]})),
        ),
        (
            "$patch: replace swaps a map",
            pod(
                json!({"containers": [{"name": "a"}], "securityContext": {"runAsUser": 1, "fsGroup": 2}}),
            ),
            json!({"spec": {"securityContext": {"$patch": "replace", "runAsNonRoot": true}}}),
            pod(json!({"containers": [{"name": "a"}], "securityContext": {"runAsNonRoot": true}})),
        ),
        (
            "lists without a merge key are replaced",
            pod(
                json!({"containers": [{"name": "a", "args": ["1", "2"]}], "tolerations": [{"key": "x"}]}),
            ),
            json!({"spec": {"tolerations": [{"key": "y"}], "containers": [{"name": "a", "args": ["3"]}]}}),
            pod(
                json!({"containers": [{"name": "a", "args": ["3"]}], "tolerations": [{"key": "y"}]}),
            ),
        ),
        (
            "custom resources replace lists",
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "spec": {"templates": [{"name": "a", "container": {"image": "x"}}]}}),
            json!({"spec": {"templates": [{"name": "a", "container": {"args": ["x"]}}]}}),
            json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow", "spec": {"templates": [{"name": "a", "container": {"args": ["x"]}}]}}),
        ),
        (
            "finalizers are a set, patch values first",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "finalizers": ["a", "b"]}}),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "finalizers": ["c", "a", "b"]}}),
        ),
        (
            "deployment template containers merge by name",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}}),
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "imagePullPolicy": "Always"}]}}}}),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always"}]}}}}),
        ),
        (
            "container ports merge by containerPort",
            pod(
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}),
            ),
            json!({"spec": {"containers": [{"name": "a", "ports": [{"containerPort": 80, "name": "http"}]}]}}),
            pod(
                json!({"containers": [{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}]}),
            ),
        ),
        (
            "a null field in the resource is dropped by the merge",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": null}}),
            json!({"metadata": {"labels": {"a": "1"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"a": "1"}}}),
        ),
    ];
    for (name, resource, patch, want) in cases {
        let got = apply(&resource, &patch, &ctx()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn type_conflicts_are_errors() {
    let resource =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": "1"}}});
    let err = apply(&resource, &json!({"metadata": {"labels": "x"}}), &ctx())
        .unwrap_err()
        .to_string();
    assert!(err.contains("disagree"), "{err}");
}

#[test]
fn anchors_that_need_no_condition_check() {
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "+() adds when absent",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            json!({"metadata": {"labels": {"+(team)": "core"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"team": "core"}}}),
        ),
        (
            "+() keeps an existing value",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"team": "web"}}}),
            json!({"metadata": {"labels": {"+(team)": "core"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {"team": "web"}}}),
        ),
        (
            "+() on a map adds the whole map only when absent",
            pod(json!({"containers": [{"name": "a"}], "securityContext": {"runAsUser": 1}})),
            json!({"spec": {"+(securityContext)": {"runAsNonRoot": true}}}),
            pod(json!({"containers": [{"name": "a"}], "securityContext": {"runAsUser": 1}})),
        ),
        (
            "condition on a missing key skips the patch",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            json!({"metadata": {"(labels)": {"x": "y"}, "annotations": {"a": "b"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        ),
        (
            "list element anchored on a missing list adds nothing",
            pod(json!({"containers": [{"name": "a"}]})),
            json!({"spec": {"initContainers": [{"(name)": "*", "imagePullPolicy": "Always"}]}}),
            pod(json!({"containers": [{"name": "a"}]})),
        ),
    ];
    for (name, resource, patch, want) in cases {
        let got = apply(&resource, &patch, &ctx()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

/// The patch that reaches the merge once anchors are resolved against `resource`.
fn resolved(patch: Value, resource: &Value) -> Value {
    let mut p = patch;
    match preprocess(&mut p, Some(resource), &ctx()) {
        Ok(()) => {
            delete_condition_elements(&mut p).unwrap();
            p
        }
        Err(Pre::Condition | Pre::Global(_)) => json!({}),
        Err(Pre::Other(e)) => panic!("{e}"),
    }
}

#[test]
fn anchor_resolution_table() {
    let volumes_pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nginx"},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}],
                 "volumes": [{"name": "cache", "hostPath": {"path": "/data", "type": "Directory"}}]}});
    let two_latest = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "annotations": {"a1": "x"}, "labels": {"l1": "y"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}, {"name": "busybox", "image": "busybox:latest"}],
                 "volumes": [{"name": "v", "hostPath": {"path": "/var/run/docker.sock"}}]}});
    let limited = json!({"apiVersion": "v1", "kind": "Pod",
        "spec": {"containers": [{"name": "nginx", "resources": {"limits": {"cpu": "50m"}}}]}});
    let cases: Vec<(&str, Value, &Value, Value)> = vec![
        (
            "global anchor in a list passes and leaves only the rest",
            json!({"metadata": {"annotations": {"+(safe)": "true"}}, "spec": {"volumes": [{"<(hostPath)": {"path": "*"}}]}}),
            &volumes_pod,
            json!({"metadata": {"annotations": {"safe": "true"}}}),
        ),
        (
            "nested global anchor inside a list element",
            json!({"metadata": {"annotations": {"+(safe)": true}}, "spec": {"volumes": [{"hostPath": {"<(path)": "*data"}}]}}),
            &volumes_pod,
            json!({"metadata": {"annotations": {"safe": true}}}),
        ),
        (
            "failing global anchor empties the patch",
            json!({"metadata": {"annotations": {"+(safe)": true}}, "spec": {"volumes": [{"<(emptyDir)": {}}]}}),
            &volumes_pod,
            json!({}),
        ),
        (
            "conditions on a map key and on list elements",
            json!({"metadata": {"annotations": {"+(a1)": "new", "+(a2)": "new"}, "labels": {"+(l1)": "new"}},
                   "spec": {"(volumes)": [{"(hostPath)": {"path": "/var/run/docker.sock"}}],
                            "containers": [{"(image)": "*:latest", "imagePullPolicy": "Always"}]}}),
            &two_latest,
            json!({"metadata": {"annotations": {"a2": "new"}},
                   "spec": {"containers": [{"imagePullPolicy": "Always", "name": "nginx"},
                                           {"imagePullPolicy": "Always", "name": "busybox"}]}}),
        ),
        (
            "a condition element that matches adds nothing but its name",
            json!({"spec": {"containers": [{"(image)": "*:latest"}], "imagePullSecrets": [{"name": "regcred"}]}}),
            &two_latest,
            json!({"spec": {"imagePullSecrets": [{"name": "regcred"}]}}),
        ),
        (
            "add-if-absent inside a wildcard element",
            json!({"spec": {"containers": [{"(name)": "*", "resources": {"limits": {"+(memory)": "300Mi", "+(cpu)": "1"}}}]}}),
            &limited,
            json!({"spec": {"containers": [{"resources": {"limits": {"memory": "300Mi"}}, "name": "nginx"}]}}),
        ),
        (
            "explicit null survives for the merge to delete",
            json!({"metadata": {"annotations": {"a1": null}}}),
            &two_latest,
            json!({"metadata": {"annotations": {"a1": null}}}),
        ),
    ];
    for (name, patch, resource, want) in cases {
        assert_eq!(resolved(patch, resource), want, "{name}");
    }
}

#[test]
fn sidecar_goes_before_existing_containers() {
    let resource = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "wp"},
        "spec": {"template": {"spec": {"containers": [{"name": "wordpress", "image": "wordpress"}]}}}});
    let patch = json!({"spec": {"template": {"spec": {
        "containers": [{"name": "nginx", "image": "nginx"}, {"name": "wordpress", "env": [{"name": "A", "value": "1"}]}],
        "initContainers": [{"name": "init", "image": "debian"}]}}}});
    let got = apply(&resource, &patch, &ctx()).unwrap();
    assert_eq!(
        got.pointer("/spec/template/spec").unwrap(),
        &json!({"containers": [{"name": "nginx", "image": "nginx"},
                               {"name": "wordpress", "image": "wordpress", "env": [{"name": "A", "value": "1"}]}],
                "initContainers": [{"name": "init", "image": "debian"}]})
    );
}

#[test]
fn two_condition_elements_shift_like_kyverno() {
    // Kyverno deletes the second condition element at a stale index, which removes
    // the copy made for the first container; only the second container is patched.
    let resource =
        pod(json!({"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]}));
    let patch = json!({"spec": {"containers": [
        {"(image)": "a:*", "x": "1"},
        {"(image)": "b:*", "y": "2"}
    ]}});
    assert_eq!(
        resolved(patch, &resource),
        json!({"spec": {"containers": [{"(image)": "b:*", "y": "2"}, {"y": "2", "name": "b"}]}})
    );
}

#[test]
fn anchors_parse_with_their_modifier() {
    assert_eq!(parse_anchor("(name)"), Some((Anchor::Condition, "name")));
    assert_eq!(parse_anchor("<(image)"), Some((Anchor::Global, "image")));
    assert_eq!(
        parse_anchor("+(a.b/c)"),
        Some((Anchor::AddIfAbsent, "a.b/c"))
    );
    assert_eq!(
        parse_anchor("X(hostPath)"),
        Some((Anchor::Negation, "hostPath"))
    );
    assert_eq!(parse_anchor("=(x)"), Some((Anchor::Equality, "x")));
    assert_eq!(parse_anchor("Xylophone"), None);
    assert_eq!(parse_anchor("()"), None);
    assert_eq!(parse_anchor("name"), None);
}

#[test]
fn cleaning_drops_condition_only_elements_and_empty_maps() {
    let mut patch =
        json!({"spec": {"containers": [{"(name)": "*", "x": 1}, {"name": "a", "y": {}}]}});
    delete_condition_elements(&mut patch).unwrap();
    assert_eq!(patch, json!({"spec": {"containers": [{"name": "a"}]}}));
}
