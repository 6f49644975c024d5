use serde_json::{Value, json};

use super::*;

fn built(objects: &[Value], features: Features) -> Built {
    build(objects, features, &Mapper::built_in())
}

fn config<'a>(b: &'a Built, name: &str) -> &'a Value {
    b.configurations
        .iter()
        .find(|c| text(c, "/metadata/name") == name)
        .expect("configuration")
}

fn hooks<'a>(b: &'a Built, name: &str) -> Vec<&'a Value> {
    config(b, name)
        .get("webhooks")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn vpol(name: &str, extra: Value) -> Value {
    let mut p = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
            "resources": ["deployments"], "resourceNames": ["x"]}]},
            "validations": [{"expression": "true"}]}});
    if let (Some(spec), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    p
}

fn cpol(failure_policy: Option<&str>) -> Value {
    let mut p = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "c"},
        "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["ConfigMap"]}}]},
            "validate": {"pattern": {"metadata": {"name": "?*"}}}},
            {"name": "m", "match": {"any": [{"resources": {"kinds": ["Secret"]}}]},
            "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"a": "b"}}}}}]}});
    if let Some(fp) = failure_policy {
        p["spec"]["webhookConfiguration"] = json!({"failurePolicy": fp, "timeoutSeconds": 15});
    }
    p
}

#[test]
fn without_policies_the_resource_configurations_have_no_webhooks() {
    let b = built(&[], Features::default());
    assert_eq!(b.configurations.len(), 5);
    assert!(hooks(&b, RESOURCE_VALIDATING).is_empty());
    assert!(hooks(&b, RESOURCE_MUTATING).is_empty());
    let policy = hooks(&b, "kyverno-policy-validating-webhook-cfg");
    assert_eq!(policy[0]["name"], "validate-policy.kyverno.svc");
    assert_eq!(
        policy[0]["clientConfig"]["service"]["path"],
        "/policyvalidate"
    );
    assert_eq!(
        policy[0]["namespaceSelector"],
        json!({}),
        "the API server's default"
    );
    let c = config(&b, RESOURCE_VALIDATING);
    assert_eq!(
        c["metadata"]["annotations"]["admissions.enforcer/disabled"],
        "true"
    );
}

#[test]
fn a_cluster_policy_gets_the_webhook_of_its_failure_policy_on_each_side() {
    let b = built(&[cpol(None)], Features::default());
    let v = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0]["name"], "validate.kyverno.svc-fail");
    assert_eq!(v[0]["clientConfig"]["service"]["path"], "/validate/fail");
    assert_eq!(v[0]["rules"][0]["resources"], json!(["configmaps"]));
    assert_eq!(v[0]["sideEffects"], "NoneOnDryRun");
    assert_eq!(v[0]["timeoutSeconds"], 10);
    assert_eq!(
        v[0]["namespaceSelector"]["matchExpressions"][1]["values"],
        json!(["kyverno"])
    );
    let m = hooks(&b, RESOURCE_MUTATING);
    assert_eq!(m[0]["name"], "mutate.kyverno.svc-fail");
    assert_eq!(m[0]["rules"][0]["resources"], json!(["secrets"]));
    assert_eq!(m[0]["rules"][0]["operations"], json!(["CREATE", "UPDATE"]));
    assert_eq!(m[0]["reinvocationPolicy"], "IfNeeded");
    // Ignore, with a longer timeout; forced to Ignore by the suite's configuration.
    let b = built(&[cpol(Some("Ignore"))], Features::default());
    let v = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(v[0]["name"], "validate.kyverno.svc-ignore");
    assert_eq!(v[0]["timeoutSeconds"], 15);
    let forced = Features {
        force_failure_ignore: true,
        ..Features::default()
    };
    let b = built(&[cpol(Some("Fail"))], forced);
    assert_eq!(hooks(&b, RESOURCE_MUTATING)[0]["failurePolicy"], "Ignore");
}

#[test]
fn a_cluster_policy_with_match_conditions_gets_a_webhook_of_its_own() {
    let mut p = cpol(None);
    p["spec"]["webhookConfiguration"] =
        json!({"matchConditions": [{"name": "n", "expression": "true"}]});
    let b = built(&[p], Features::default());
    let v = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["name"], "validate.kyverno.svc-fail-finegrained-c");
    assert_eq!(
        v[0]["clientConfig"]["service"]["path"],
        "/validate/fail/finegrained/c"
    );
    assert_eq!(v[0]["matchConditions"][0]["name"], "n");
}

#[test]
fn validating_policies_share_a_webhook_unless_they_need_their_own() {
    let b = built(
        &[vpol("b", json!({})), vpol("a", json!({}))],
        Features::default(),
    );
    let v = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0]["name"], "vpol.validate.kyverno.svc-fail");
    assert_eq!(v[0]["clientConfig"]["service"]["path"], "/vpol/a/b");
    assert_eq!(v[0]["rules"].as_array().unwrap().len(), 1, "deduplicated");
    assert!(v[0]["rules"][0].get("resourceNames").is_none());
    assert_eq!(v[0]["matchPolicy"], "Equivalent");
    // Exact matching, a timeout or match conditions: a webhook of its own.
    let exact = vpol(
        "e",
        json!({"failurePolicy": "Ignore",
        "matchConditions": [{"name": "c", "expression": "object.metadata.name != 'x'"},
            {"name": "ns", "expression": "namespaceObject.metadata.name != 'y'"}]}),
    );
    let b = built(&[exact], Features::default());
    let v = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(
        v[0]["name"],
        "vpol.validate.kyverno.svc-ignore-finegrained-e"
    );
    assert_eq!(v[0]["clientConfig"]["service"]["path"], "/vpol/e");
    let names: Vec<&Value> = v[0]["matchConditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, vec!["c"], "namespaceObject stays with Kyverno");
    // A condition the API server cannot compile: back to the shared webhook.
    let unknown = vpol(
        "u",
        json!({"matchConditions": [{"name": "c",
        "expression": "variables.x"}]}),
    );
    let b = built(&[unknown], Features::default());
    assert_eq!(
        hooks(&b, RESOURCE_VALIDATING)[0]["name"],
        "vpol.validate.kyverno.svc-fail"
    );
}

#[test]
fn generated_and_background_only_policies_have_no_webhook() {
    let mut g = vpol("g", json!({}));
    g["status"] = json!({"generated": true});
    let off = vpol(
        "o",
        json!({"evaluation": {"admission": {"enabled": false}}}),
    );
    let b = built(&[g, off], Features::default());
    assert!(hooks(&b, RESOURCE_VALIDATING).is_empty());
}

#[test]
fn a_pod_policy_has_its_controllers_rules_and_fine_grained_autogen_is_a_skip() {
    let mut p = vpol("p", json!({}));
    p["spec"]["matchConstraints"] = json!({"resourceRules": [{"apiGroups": [""],
        "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]});
    let b = built(std::slice::from_ref(&p), Features::default());
    let rules = hooks(&b, RESOURCE_VALIDATING)[0]["rules"]
        .as_array()
        .unwrap()
        .clone();
    let resources: Vec<&Value> = rules.iter().map(|r| &r["resources"]).collect();
    assert!(resources.contains(&&json!(["pods"])), "{resources:?}");
    assert!(resources.contains(&&json!(["cronjobs"])), "{resources:?}");
    assert!(b.unmodelled(RESOURCE_VALIDATING).is_none());
    // Its own webhook: the conditions guarded per target, the copies' own after them.
    p["spec"]["webhookConfiguration"] = json!({"timeoutSeconds": 5});
    let b = built(std::slice::from_ref(&p), Features::default());
    assert!(b.unmodelled(RESOURCE_VALIDATING).is_none());
    assert!(
        hooks(&b, RESOURCE_VALIDATING)[0]
            .get("matchConditions")
            .is_none()
    );
    p["spec"]["matchConditions"] =
        json!([{"name": "c", "expression": "object.metadata.name != 'x'"}]);
    let b = built(std::slice::from_ref(&p), Features::default());
    let w = hooks(&b, RESOURCE_VALIDATING)[0];
    assert_eq!(w["name"], "vpol.validate.kyverno.svc-fail-finegrained-p");
    let mc = w["matchConditions"].as_array().unwrap();
    let names: Vec<&str> = mc.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["autogen-c", "autogen-cronjobs-c", "autogen-defaults-c"]
    );
    assert_eq!(
        mc[0]["expression"],
        "!((object.apiVersion == 'v1' && object.kind =='Pod')) || (object.metadata.name != 'x')"
    );
    let cron = mc[1]["expression"].as_str().unwrap();
    assert!(
        cron.contains("object.spec.jobTemplate.spec.template.metadata.name"),
        "{cron}"
    );
    assert!(mc[2]["expression"].as_str().unwrap().starts_with(
        "!((object.apiVersion == 'apps/v1' && object.kind =='DaemonSet') || (object.apiVersion == 'apps/v1' && object.kind =='Deployment') || (object.apiVersion == 'apps/v1' && object.kind =='ReplicaSet')"
    ));
    // A MutatingPolicy's copies rewrite differently: not modelled, said so.
    p["kind"] = json!("MutatingPolicy");
    let b = built(&[p], Features::default());
    assert!(b.unmodelled(RESOURCE_MUTATING).is_some());
}

#[test]
fn mutating_and_generating_policies_webhooks() {
    let m = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "MutatingPolicy",
        "metadata": {"name": "m"}, "spec": {"failurePolicy": "Ignore",
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["namespaces"]}]}}});
    let g = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "NamespacedGeneratingPolicy",
        "metadata": {"name": "g", "namespace": "team"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["configmaps"]}]}}});
    let b = built(&[m, g], Features::default());
    let mh = hooks(&b, RESOURCE_MUTATING);
    assert_eq!(mh[0]["name"], "mpol.validate.kyverno.svc-ignore");
    assert_eq!(
        mh[0]["reinvocationPolicy"], "Never",
        "the API server's default"
    );
    let vh = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(
        vh[0]["name"], "ngpol.validate.kyverno.svc-ignore",
        "always Ignore"
    );
    assert_eq!(
        vh[0]["rules"][0]["operations"],
        json!(["CONNECT", "CREATE", "DELETE", "UPDATE"])
    );
    // A namespaced policy's webhook is pinned to its namespace.
    let first = &vh[0]["namespaceSelector"]["matchExpressions"][0];
    assert_eq!(first["operator"], "In");
    assert_eq!(first["values"], json!(["team"]));
}

fn ivpol(kind: &str, name: &str, extra: Value) -> Value {
    let mut p = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": kind,
        "metadata": {"name": name},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
            "matchImageReferences": [{"glob": "ghcr.io/*"}],
            "validations": [{"expression": "true"}]}});
    if kind.starts_with("Namespaced") {
        p["metadata"]["namespace"] = json!("team");
    }
    if let (Some(spec), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    p
}

fn names(hooks: &[&Value]) -> Vec<String> {
    hooks.iter().map(|w| text(w, "/name")).collect()
}

#[test]
fn an_image_policy_gets_a_validating_and_a_mutating_webhook_with_its_autogen_rules() {
    let b = built(
        &[ivpol("ImageValidatingPolicy", "basic", json!({}))],
        Features::default(),
    );
    assert!(b.unmodelled.is_empty(), "{:?}", b.unmodelled);
    let v = hooks(&b, RESOURCE_VALIDATING);
    let m = hooks(&b, RESOURCE_MUTATING);
    assert_eq!(names(&v), ["ivpol.validate.kyverno.svc-fail"]);
    assert_eq!(names(&m), ["ivpol.mutate.kyverno.svc-fail"]);
    assert_eq!(
        v[0]["clientConfig"]["service"]["path"],
        "/ivpol/validate/basic"
    );
    assert_eq!(
        m[0]["clientConfig"]["service"]["path"],
        "/ivpol/mutate/basic"
    );
    // Pods first, then the autogen copies' controllers (sorted rules).
    let resources: Vec<Value> = v[0]["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["resources"].clone())
        .collect();
    assert_eq!(
        resources,
        [
            json!(["pods"]),
            json!(["daemonsets", "deployments", "replicasets", "statefulsets"]),
            json!(["cronjobs"]),
            json!(["jobs"])
        ]
    );
    assert_eq!(m[0]["rules"], v[0]["rules"]);
    assert_eq!(
        m[0]["matchPolicy"], "Equivalent",
        "the API server's default"
    );
}

#[test]
fn an_image_policy_that_does_not_pin_digests_has_no_mutating_webhook() {
    let p = ivpol(
        "ImageValidatingPolicy",
        "p",
        json!({"validationConfigurations": {"mutateDigest": false}}),
    );
    let b = built(&[p], Features::default());
    assert_eq!(hooks(&b, RESOURCE_VALIDATING).len(), 1);
    assert!(hooks(&b, RESOURCE_MUTATING).is_empty());
}

#[test]
fn a_fine_grained_image_policy_webhook_guards_its_conditions_per_autogen_config() {
    let p = ivpol(
        "ImageValidatingPolicy",
        "fine",
        json!({"failurePolicy": "Ignore",
            "webhookConfiguration": {"timeoutSeconds": 20},
            "matchConditions": [{"name": "prod",
                "expression": "object.metadata.labels.prod == 'true'"}]}),
    );
    let b = built(&[p], Features::default());
    for (cfg, name) in [
        (
            RESOURCE_VALIDATING,
            "ivpol.validate.kyverno.svc-ignore-finegrained-fine",
        ),
        (
            RESOURCE_MUTATING,
            "ivpol.mutate.kyverno.svc-ignore-finegrained-fine",
        ),
    ] {
        let h = hooks(&b, cfg);
        assert_eq!(names(&h), [name]);
        assert_eq!(h[0]["timeoutSeconds"], 20);
        let conditions: Vec<String> = h[0]["matchConditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| text(c, "/name"))
            .collect();
        assert_eq!(
            conditions,
            [
                "autogen-prod",
                "autogen-cronjobs-prod",
                "autogen-defaults-prod"
            ]
        );
    }
}

#[test]
fn a_namespaced_image_policy_is_pinned_to_its_namespace_without_autogen_on_its_own_webhook() {
    let p = ivpol(
        "NamespacedImageValidatingPolicy",
        "n",
        json!({"matchConstraints": {"matchPolicy": "Exact", "resourceRules": [{"apiGroups": [""],
            "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]}}),
    );
    let b = built(&[p], Features::default());
    assert!(b.unmodelled.is_empty(), "{:?}", b.unmodelled);
    let v = hooks(&b, RESOURCE_VALIDATING);
    assert_eq!(
        names(&v),
        ["ivpol.validate.kyverno.svc-fail-finegrained-team-n"]
    );
    assert_eq!(
        v[0]["clientConfig"]["service"]["path"],
        "/nivpol/validate/n"
    );
    assert_eq!(v[0]["matchPolicy"], "Exact");
    assert_eq!(v[0]["rules"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        v[0]["namespaceSelector"]["matchExpressions"][0]["values"],
        json!(["team"])
    );
}

#[test]
fn unsorted_or_colliding_image_policy_webhooks_are_not_modelled() {
    // The namespaced kind's shared validating webhook keeps its autogen rules unsorted.
    let n = ivpol("NamespacedImageValidatingPolicy", "n", json!({}));
    let b = built(std::slice::from_ref(&n), Features::default());
    assert_eq!(
        b.unmodelled(RESOURCE_VALIDATING),
        Some(super::ivpol::UNSORTED)
    );
    assert_eq!(b.unmodelled(RESOURCE_MUTATING), None);
    // Both kinds' shared webhooks are named alike.
    let c = ivpol("ImageValidatingPolicy", "c", json!({}));
    let b = built(&[c, n], Features::default());
    assert_eq!(
        b.unmodelled(RESOURCE_MUTATING),
        Some(super::ivpol::DUPLICATE)
    );
}
