use super::*;
use serde_json::json;

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

fn status(pss: &Value, spec: Value) -> RuleStatus {
    validate(pss, &pod(spec)).status
}

#[test]
fn baseline_controls() {
    let pss = json!({"level": "baseline", "version": "latest"});
    let good = json!({"containers": [{"name": "c", "image": "nginx"}]});
    assert_eq!(status(&pss, good), RuleStatus::Pass);
    let bad = json!({"hostNetwork": true, "containers": [{"name": "c", "image": "nginx"}]});
    assert_eq!(status(&pss, bad), RuleStatus::Fail);
    let caps = json!({"containers": [{"name": "c", "image": "nginx",
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]});
    assert_eq!(status(&pss, caps), RuleStatus::Fail);
}

#[test]
fn restricted_with_image_exclusion() {
    let spec = json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "redis:7",
        "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["SYS_TIME"]}}}]});
    let pss = json!({"level": "restricted", "version": "latest"});
    assert_eq!(status(&pss, spec.clone()), RuleStatus::Fail);
    let pss = json!({"level": "restricted", "version": "latest",
        "exclude": [{"controlName": "Capabilities", "images": ["redis*"]}]});
    assert_eq!(status(&pss, spec), RuleStatus::Pass);
}

/// An exclusion naming a field and values exempts only errors whose values it lists:
/// `spec.hostNetwork=true` excluded leaves `hostPID` failing.
#[test]
fn exclusion_restricted_field_leaves_other_fields_of_the_control() {
    let pss = json!({"level": "baseline", "version": "latest", "exclude": [{
        "controlName": "Host Namespaces", "restrictedField": "spec.hostNetwork",
        "values": ["true"]}]});
    let c = json!([{"name": "c", "image": "nginx"}]);
    assert_eq!(
        status(&pss, json!({"hostNetwork": true, "containers": c})),
        RuleStatus::Pass
    );
    assert_eq!(
        status(&pss, json!({"hostPID": true, "containers": c})),
        RuleStatus::Fail
    );
}

/// Per container group and value: a `containers[*]` exclusion of type `foo` does not
/// cover an init container with `foo`, nor a container with `bar`.
#[test]
fn selinux_exclusion_by_image_field_and_value() {
    let pss = json!({"level": "baseline", "version": "latest", "exclude": [
        {"controlName": "SELinux", "images": ["nginx"],
         "restrictedField": "spec.containers[*].securityContext.seLinuxOptions.type", "values": ["foo"]},
        {"controlName": "SELinux", "images": ["nginx"],
         "restrictedField": "spec.initContainers[*].securityContext.seLinuxOptions.type", "values": ["bar"]}]});
    let spec = |a: &str, b: &str| {
        json!({"containers": [{"name": "a", "image": "nginx", "securityContext": {"seLinuxOptions": {"type": a}}}],
               "initContainers": [{"name": "b", "image": "nginx", "securityContext": {"seLinuxOptions": {"type": b}}}]})
    };
    assert_eq!(status(&pss, spec("foo", "bar")), RuleStatus::Pass);
    assert_eq!(status(&pss, spec("bar", "foo")), RuleStatus::Fail);
}

/// A restricted volume type's error carries no value, so `values` cannot narrow it; the
/// field alone decides (`flexVolume` exempt, `gcePersistentDisk` not).
#[test]
fn volume_type_exclusion_matches_the_volume_field() {
    let ok_container = json!([{"name": "c", "image": "nginx", "securityContext": {
        "seccompProfile": {"type": "RuntimeDefault"}, "runAsNonRoot": true,
        "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]);
    let pss = json!({"level": "restricted", "version": "latest"});
    let exceptions = [json!({"controlName": "Volume Types",
        "restrictedField": "spec.volumes[*].flexVolume", "values": ["driver"]})];
    let flex = pod(
        json!({"volumes": [{"name": "f", "flexVolume": {"driver": "/x"}}],
        "containers": ok_container}),
    );
    let gce = pod(
        json!({"volumes": [{"name": "g", "gcePersistentDisk": {"pdName": "x"}}],
        "containers": ok_container}),
    );
    assert_eq!(validate(&pss, &flex).status, RuleStatus::Fail);
    assert_eq!(
        validate_with(&pss, &flex, &exceptions, "ns/ex").status,
        RuleStatus::Skip
    );
    assert_eq!(
        validate_with(&pss, &gce, &exceptions, "ns/ex").status,
        RuleStatus::Fail
    );
}

/// An image exclusion exempts the containers running that image only.
#[test]
fn host_port_exclusion_by_value_per_container() {
    let pss = json!({"level": "baseline", "version": "latest", "exclude": [
        {"controlName": "Host Ports", "images": ["nginx"],
         "restrictedField": "spec.containers[*].ports[*].hostPort", "values": ["10"]}]});
    let spec = |port: i64| json!({"containers": [{"name": "a", "image": "nginx", "ports": [{"hostPort": port}]}]});
    assert_eq!(status(&pss, spec(10)), RuleStatus::Pass);
    assert_eq!(status(&pss, spec(20)), RuleStatus::Fail);
}

#[test]
fn a_kind_without_a_pod_spec_is_an_error_and_a_bad_version_too() {
    let pss = json!({"level": "baseline", "version": "latest"});
    let cm = json!({"kind": "ConfigMap", "metadata": {"name": "x"}});
    assert_eq!(validate(&pss, &cm).status, RuleStatus::Error);
    let bad = json!({"level": "baseline", "version": "1.2"});
    assert_eq!(
        validate(&bad, &pod(json!({"containers": []}))).status,
        RuleStatus::Error
    );
}

#[test]
fn field_errors_name_indexes_and_values() {
    let spec = json!({"containers": [{"name": "a", "image": "x", "ports": [{"hostPort": 0}, {"hostPort": 8}]}]});
    let lv = LevelVersion {
        baseline_only: true,
        version: u32::MAX,
    };
    let found = checks::evaluate(lv, &Value::Null, &spec);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].errs.as_ref().unwrap()[0].field,
        "spec.containers[0].ports[1].hostPort"
    );
    assert_eq!(
        starred("spec.initContainers[2].ports[1].hostPort"),
        (
            "spec.initContainers[*].ports[*].hostPort".to_string(),
            Some(("initContainers".to_string(), 2))
        )
    );
}
