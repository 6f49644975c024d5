use serde_json::{Value, json};

use super::admission::{Generation, generate};
use super::*;
use crate::offline::conformance::cluster::Cluster;

fn cpol(generate_vap: bool, extra_rule: bool) -> Value {
    let rule = json!({"name": "host-path",
        "match": {"any": [{"resources": {"kinds": ["StatefulSet", "Deployment", "Pod"],
            "operations": ["CREATE", "UPDATE"]}}]},
        "validate": {"cel": {"generate": generate_vap,
            "expressions": [{"expression": "true", "message": "m"}]}}});
    let mut rules = vec![rule.clone()];
    if extra_rule {
        let mut r = rule;
        r["name"] = json!("other");
        rules.push(r);
    }
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "p", "uid": "u1"},
        "spec": {"validationFailureAction": "Enforce", "rules": rules}})
}

fn exception(resources: Value) -> Value {
    json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
        "metadata": {"name": "e", "namespace": "default"},
        "spec": {"exceptions": [{"policyName": "p", "ruleNames": ["host-path"]}],
            "match": {"any": [{"resources": resources}]}}})
}

fn made(g: Generation) -> Vec<Value> {
    match g {
        Generation::Made(objs) => objs,
        other => panic!("expected objects, got {other:?}"),
    }
}

fn declined(g: Generation) -> String {
    match g {
        Generation::Declined(m) => m,
        other => panic!("expected a declined generation, got {other:?}"),
    }
}

#[test]
fn a_cel_rule_becomes_a_vap_with_rules_per_group_and_version() {
    let p = cpol(true, false);
    let objs = made(generate(&p, std::slice::from_ref(&p), &Mapper::built_in()));
    let vap = &objs[0];
    assert_eq!(vap["metadata"]["name"], "cpol-p");
    assert_eq!(vap["metadata"]["ownerReferences"][0]["name"], "p");
    let rules = vap["spec"]["matchConstraints"]["resourceRules"]
        .as_array()
        .unwrap();
    assert_eq!(rules.len(), 2, "{rules:?}");
    assert_eq!(rules[0]["apiGroups"], json!(["apps"]));
    assert_eq!(
        rules[0]["resources"],
        json!(["deployments", "statefulsets"])
    );
    assert_eq!(
        rules[1]["resources"],
        json!(["pods", "pods/ephemeralcontainers"])
    );
    assert_eq!(vap["spec"]["failurePolicy"], "Fail");
    let binding = &objs[1];
    assert_eq!(binding["spec"]["policyName"], "cpol-p");
    assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
}

#[test]
fn what_a_vap_cannot_say_declines_with_kyvernos_reason() {
    let two = cpol(true, true);
    assert!(declined(generate(&two, &[], &Mapper::built_in())).contains("multiple rules"));
    let off = cpol(false, false);
    assert!(declined(generate(&off, &[], &Mapper::built_in())).contains("generate is not set"));
    let p = cpol(true, false);
    let ex = exception(json!({"kinds": ["Deployment"], "namespaces": ["prod"]}));
    assert!(
        declined(generate(&p, &[p.clone(), ex], &Mapper::built_in()))
            .contains("excluding a resource within a namespace")
    );
}

#[test]
fn an_exception_becomes_excluded_resources() {
    let p = cpol(true, false);
    let ex = exception(json!({"kinds": ["Deployment"], "names": ["tool"]}));
    let objs = made(generate(&p, &[p.clone(), ex], &Mapper::built_in()));
    let excluded = &objs[0]["spec"]["matchConstraints"]["excludeResourceRules"];
    assert_eq!(excluded[0]["resourceNames"], json!(["tool"]));
    assert_eq!(excluded[0]["resources"], json!(["deployments"]));
    // No operations named: all four.
    assert_eq!(excluded[0]["operations"].as_array().unwrap().len(), 4);
}

#[test]
fn a_validating_policy_generates_only_when_asked_and_negates_exception_conditions() {
    let mut vpol = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ValidatingPolicy",
        "metadata": {"name": "v"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "true"}]}});
    assert!(declined(generate(&vpol, &[], &Mapper::built_in())).contains("not enabled"));
    vpol["spec"]["autogen"] = json!({"validatingAdmissionPolicy": {"enabled": true}});
    let ex = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "PolicyException",
        "metadata": {"name": "x"}, "spec": {"policyRefs": [{"name": "v", "kind": "ValidatingPolicy"}],
        "matchConditions": [{"name": "skip", "expression": "object.metadata.name == 'a'"}]}});
    let objs = made(generate(&vpol, &[ex], &Mapper::built_in()));
    assert_eq!(
        objs[0]["spec"]["matchConditions"][0]["expression"],
        "!(object.metadata.name == 'a')"
    );
    assert_eq!(objs[1]["spec"]["validationActions"], json!(["Deny"]));
}

#[test]
fn reconcile_makes_and_collects_generated_policies_and_sets_status() {
    let mut c = Cluster::new("t");
    c.store(cpol(true, false));
    reconcile(&mut c);
    let vap = |c: &Cluster| {
        c.objects
            .iter()
            .any(|o| o["kind"] == "ValidatingAdmissionPolicy")
    };
    assert!(vap(&c));
    let p = c
        .objects
        .iter()
        .find(|o| o["kind"] == "ClusterPolicy")
        .unwrap();
    assert_eq!(
        p.pointer("/status/validatingadmissionpolicy/generated"),
        Some(&json!(true))
    );
    assert!(left_to_generated(p));
    let key = Key::of(p);
    c.remove(&key);
    reconcile(&mut c);
    assert!(!vap(&c), "the owner is gone: garbage collected");
}

#[test]
fn a_cel_policy_is_not_ready_when_the_reports_controller_cannot_read_its_resources() {
    let mut c = Cluster::new("t");
    c.store(
        json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "ValidatingPolicy",
        "metadata": {"name": "v"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]}}}),
    );
    reconcile(&mut c);
    let p = c
        .objects
        .iter()
        .find(|o| o["kind"] == "ValidatingPolicy")
        .unwrap();
    let cs = &p["status"]["conditionStatus"];
    assert_eq!(cs["ready"], false);
    assert_eq!(cs["conditions"][1]["status"], "False");
    assert!(
        cs["conditions"][1]["message"]
            .as_str()
            .unwrap()
            .contains("get apps/v1, Resource=configmaps: ")
    );
    assert_eq!(p["status"]["generated"], false);
}

#[test]
fn makers_name_the_controller_a_skip_waits_for() {
    assert_eq!(
        Maker::of_objects("Pod").to_string(),
        "kube-controller-manager (Deployment → Pods)"
    );
    assert_eq!(
        Maker::of_status("Deployment").to_string(),
        "kube-controller-manager (Deployment → status)"
    );
    assert_eq!(Maker::of_status("Pod"), Maker::Kubelet);
}

#[test]
fn an_image_policy_status_has_its_autogen_configs_of_the_defaulted_spec() {
    let mut c = Cluster::new("t");
    c.store(json!({"apiVersion": "policies.kyverno.io/v1beta1",
        "kind": "NamespacedImageValidatingPolicy",
        "metadata": {"name": "i", "namespace": "default"},
        "spec": {"autogen": {"podControllers": {"controllers": ["deployments", "cronjobs"]}},
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "matchConditions": [{"name": "prod",
                "expression": "object.metadata.labels.prod == 'true'"}],
            "validations": [{"expression": "true"}]}}));
    reconcile(&mut c);
    let p = c
        .objects
        .iter()
        .find(|o| o["kind"] == "NamespacedImageValidatingPolicy")
        .unwrap();
    let configs = &p["status"]["autogen"]["configs"];
    let defaults = &configs["defaults"]["spec"];
    assert_eq!(
        defaults["matchConstraints"]["resourceRules"][0]["resources"],
        json!(["deployments"])
    );
    assert_eq!(
        defaults["matchConditions"][0]["expression"],
        "object.spec.template.metadata.labels.prod == 'true'"
    );
    assert_eq!(
        defaults["validationConfigurations"],
        json!({"mutateDigest": true, "required": true, "verifyDigest": true})
    );
    assert_eq!(
        configs["cronjobs"]["targets"][0]["resource"],
        json!("cronjobs")
    );
    assert!(status::modelled(
        "NamespacedImageValidatingPolicy",
        &json!({"autogen": {}}),
        Some(p)
    ));
}
