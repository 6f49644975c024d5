//! Unit tests of the background controller simulation (`background.rs`).
use super::super::{Answer, Cluster, Key};
use serde_json::{Value, json};

pub(in crate::offline::conformance) fn ok(a: Answer) {
    assert!(matches!(a, Answer::Ok), "{a:?}");
}

pub(in crate::offline::conformance) fn key(kind: &str, ns: &str, name: &str) -> Key {
    Key {
        group: String::new(),
        kind: kind.into(),
        namespace: ns.into(),
        name: name.into(),
    }
}

fn ns(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

/// A ClusterPolicy generating a ConfigMap into each new Namespace.
fn data_policy(sync: bool, value: &str) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "gen"},
        "spec": {"rules": [{"name": "cm",
            "match": {"any": [{"resources": {"kinds": ["Namespace"], "selector": {"matchLabels": {"team": "a"}}}}]},
            "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
                "namespace": "{{request.object.metadata.name}}", "synchronize": sync,
                "data": {"data": {"v": value}}}}]}})
}

fn team_ns(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": "a"}}})
}

fn value_of(c: &Cluster, ns: &str) -> Option<String> {
    c.find(&key("ConfigMap", ns, "cm"))
        .and_then(|o| o.pointer("/data/v"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Synchronize was not simulated: deleting or editing the downstream, a trigger that
/// stops matching, a policy update or deletion left the downstream as it was.
#[test]
fn a_synchronized_data_downstream_follows_its_trigger_and_policy() {
    let mut c = Cluster::new("t");
    ok(c.apply(&data_policy(true, "1"), false));
    ok(c.apply(&team_ns("a"), false));
    assert_eq!(value_of(&c, "a").as_deref(), Some("1"));
    // Deleted or edited by a user: regenerated.
    ok(c.delete(&json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "a"})));
    assert_eq!(value_of(&c, "a").as_deref(), Some("1"));
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "a"}, "data": {"v": "edited"}}),
        false,
    ));
    assert_eq!(value_of(&c, "a").as_deref(), Some("1"));
    // The policy's data changes: the downstream is rewritten.
    ok(c.apply(&data_policy(true, "2"), false));
    assert_eq!(value_of(&c, "a").as_deref(), Some("2"));
    // The trigger no longer matches: the downstream goes.
    ok(c.update(&ns("a"), false));
    assert_eq!(value_of(&c, "a"), None);
    // The policy is deleted: its downstreams go.
    ok(c.apply(&team_ns("b"), false));
    assert_eq!(value_of(&c, "b").as_deref(), Some("2"));
    ok(c.delete(&json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "name": "gen"})));
    assert_eq!(value_of(&c, "b"), None);
}

/// Without synchronize, a deleted downstream stays deleted.
#[test]
fn an_unsynchronized_downstream_is_not_regenerated() {
    let mut c = Cluster::new("t");
    ok(c.apply(&data_policy(false, "1"), false));
    ok(c.apply(&team_ns("a"), false));
    ok(c.delete(&json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "a"})));
    assert_eq!(value_of(&c, "a"), None);
}

/// `generateExisting` did nothing on policy creation.
#[test]
fn generate_existing_runs_over_existing_triggers() {
    let mut c = Cluster::new("t");
    ok(c.apply(&team_ns("a"), false));
    let mut p = data_policy(false, "1");
    p["spec"]["rules"][0]["generate"]["generateExisting"] = json!(true);
    ok(c.apply(&p, false));
    assert_eq!(value_of(&c, "a").as_deref(), Some("1"));
}

/// A synchronized clone follows its source: updated with it, deleted with it.
#[test]
fn a_synchronized_clone_follows_its_source() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "src", "namespace": "default"}, "data": {"v": "1"}}),
        false,
    ));
    let mut p = data_policy(true, "");
    let g = &mut p["spec"]["rules"][0]["generate"];
    g.as_object_mut().unwrap().shift_remove("data");
    g["clone"] = json!({"namespace": "default", "name": "src"});
    ok(c.apply(&p, false));
    ok(c.apply(&team_ns("a"), false));
    assert_eq!(value_of(&c, "a").as_deref(), Some("1"));
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "src", "namespace": "default"}, "data": {"v": "2"}}),
        false,
    ));
    assert_eq!(value_of(&c, "a").as_deref(), Some("2"));
    ok(c.delete(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "src", "namespace": "default"}),
    ));
    assert_eq!(value_of(&c, "a"), None);
}

/// `mutateExistingOnPolicyUpdate` did nothing when the policy was created.
#[test]
fn mutate_existing_on_policy_creation_patches_targets() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "target", "namespace": "default"}}),
        false,
    ));
    let p = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "m"},
        "spec": {"rules": [{"name": "r",
            "match": {"any": [{"resources": {"kinds": ["Namespace"], "names": ["default"]}}]},
            "mutate": {"mutateExistingOnPolicyUpdate": true,
                "targets": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "{{request.object.metadata.name}}"}],
                "patchStrategicMerge": {"metadata": {"labels": {"done": "yes"}}}}}]}});
    ok(c.apply(&p, false));
    let t = c.find(&key("ConfigMap", "default", "target")).unwrap();
    assert_eq!(t.pointer("/metadata/labels/done"), Some(&json!("yes")));
}

/// A Secret's `stringData` is folded into `data`, as the API server stores it.
#[test]
fn secret_string_data_is_stored_as_data() {
    let mut c = Cluster::new("t");
    ok(c.apply(
        &json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"}, "stringData": {"k": "v"}}),
        false,
    ));
    let s = c.find(&key("Secret", "default", "s")).unwrap();
    assert_eq!(s.pointer("/data/k"), Some(&json!("dg==")));
    assert!(s.get("stringData").is_none());
}
