use super::*;
use serde_json::json;

fn walk(resource: Value, pattern: Value) -> Verdict {
    match_pattern(&resource, &pattern)
}

#[test]
fn skipped_siblings_combine_in_key_order() {
    // Both lists skip: their conditional errors join with "; ", containers (sorted
    // first) before initContainers (pkg/engine/validate/validate.go validateMap).
    let pod = json!({"spec": {
        "initContainers": [{"image": "test/foo:1.2.3"}],
        "containers": [{"image": "test/foo:1.2.3"}, {"image": "test/foo:1.2.3"}]}});
    let pattern = json!({"spec": {
        "=(initContainers)": [{"(image)": "!*/foo:*.*.*", "securityContext": {"allowPrivilegeEscalation": "false"}}],
        "=(containers)": [{"(image)": "!*/foo:*.*.*", "securityContext": {"allowPrivilegeEscalation": "false"}}]}});
    let Verdict::Skip(m) = walk(pod, pattern) else {
        panic!("expected a skip")
    };
    let one = |p: &str| {
        format!(
            "conditional anchor mismatch: resource value 'test/foo:1.2.3' does not match '!*/foo:*.*.*' at path {p}"
        )
    };
    assert_eq!(
        m,
        [
            one("/spec/containers/0/image/"),
            one("/spec/containers/1/image/"),
            one("/spec/initContainers/0/image/")
        ]
        .join("; ")
    );
}

#[test]
fn failures_name_kyvernos_path_and_words() {
    let Verdict::Fail { path, message } = walk(
        json!({"metadata": {"name": "x"}}),
        json!({"metadata": {"labels": {"app": "?*"}}}),
    ) else {
        panic!("expected a failure")
    };
    assert_eq!(path, "/metadata/labels/");
    assert_eq!(
        message,
        "pattern and resource have different structures. Path: /metadata/labels/. Expected map[string]interface {}, found <nil>"
    );
    let Verdict::Fail { path, message } = walk(
        json!({"spec": {"replicas": 1}}),
        json!({"spec": {"replicas": ">1"}}),
    ) else {
        panic!("expected a failure")
    };
    assert_eq!(path, "/spec/replicas/");
    assert_eq!(
        message,
        "resource value '1' does not match '>1' at path /spec/replicas/"
    );
}

#[test]
fn negation_fails_and_missing_anchor_keys_make_an_error() {
    let Verdict::Fail { path, message } = walk(
        json!({"spec": {"hostPID": true}}),
        json!({"spec": {"X(hostPID)": "null"}}),
    ) else {
        panic!("expected a failure")
    };
    assert_eq!(path, "/spec/hostPID/");
    assert_eq!(
        message,
        "negation anchor matched in resource: /spec/hostPID/ is not allowed"
    );
    // A failure while an existence anchor's key is absent is an error (empty path):
    // anchor.AnchorMap.KeysAreMissing.
    let Verdict::Fail { path, .. } = walk(
        json!({"spec": {"x": 1}}),
        json!({"spec": {"^(volumes)": [{"name": "a"}], "x": 2}}),
    ) else {
        panic!("expected a failure")
    };
    assert_eq!(path, "");
}

#[test]
fn a_conditional_that_holds_lets_the_rest_decide() {
    let pod = json!({"spec": {"containers": [
        {"image": "nginx:latest", "imagePullPolicy": "IfNotPresent"},
        {"image": "nginx:1.2"}]}});
    let pattern =
        json!({"spec": {"containers": [{"(image)": "*:latest", "imagePullPolicy": "Always"}]}});
    let Verdict::Fail { path, .. } = walk(pod, pattern) else {
        panic!("expected a failure")
    };
    assert_eq!(path, "/spec/containers/0/imagePullPolicy/");
}
