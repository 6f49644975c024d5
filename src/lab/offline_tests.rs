//! Unit tests of `lab/offline.rs`.

use super::*;
use serde_json::json;

fn set(objects: Vec<Value>) -> Offline {
    Offline::new(
        objects,
        vec![workspace::FileProblem {
            path: "broken.yaml".into(),
            lines: vec!["broken.yaml:3:1: bad".into()],
        }],
    )
}

#[test]
fn resource_present_absent_and_status() {
    let o = set(vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "a"}, "data": {"k": "v"}})]);
    let sel = ObjSel {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        namespace: Some("a".into()),
        name: "c".into(),
    };
    assert_eq!(o.resource(&sel, true, None).verdict, check::Verdict::Pass);
    assert_eq!(o.resource(&sel, false, None).verdict, check::Verdict::Fail);
    let bad = o.resource(&sel, true, Some(&json!({"data": {"k": "w"}})));
    assert!(
        bad.detail
            .to_string()
            .contains("`data.k` is `v`, expected `w`"),
        "{bad:?}"
    );
    let st = o.resource(&sel, true, Some(&json!({"status": {"ready": true}})));
    assert_eq!(st.verdict, check::Verdict::Skipped);
    let other_ns = ObjSel {
        namespace: Some("b".into()),
        ..sel
    };
    let lab = super::blocked_tests::admission_lab();
    let on_set = super::blocked_tests::check_of(&lab, "vap-binding");
    let gone = o.with_problems(on_set, o.resource(&other_ns, true, None));
    assert_eq!(
        gone.verdict,
        check::Verdict::Error,
        "blocked by the file problem"
    );
    assert!(
        gone.detail.file_problems()[0].starts_with("broken.yaml:3:1"),
        "{gone:?}"
    );
}

fn vap(expression: &str, selector: Value) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "v"}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "need-team"},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]},
                     "validations": [{"expression": expression, "message": "team label"}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "need-team-b"},
            "spec": {"policyName": "need-team", "validationActions": ["Deny"],
                     "matchResources": {"namespaceSelector": selector}}}),
    ]
}

#[test]
fn offline_admission_runs_validating_admission_policies_where_bound() {
    let objects = vap(
        "has(object.metadata.labels) && 'team' in object.metadata.labels",
        json!({"matchLabels": {"kubernetes.io/metadata.name": "v"}}),
    );
    let pod = |ns: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "x", "namespace": ns},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}})
    };
    match engine::admit(&objects, &pod("v"), false, None).unwrap() {
        crate::target::Admission::Denied(d) => {
            assert_eq!(
                d.by,
                crate::target::DeniedBy::ValidatingAdmissionPolicy {
                    policy: "need-team".into(),
                    binding: "need-team-b".into()
                }
            );
            let again = crate::target::parse_denial(d.code, "Invalid", &d.message);
            assert_eq!(again.by, d.by, "{}", d.message);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        engine::admit(&objects, &pod("a"), false, None).unwrap(),
        crate::target::Admission::Allowed { .. }
    ));
    let in_default = vap(
        "has(object.metadata.labels)",
        json!({"matchLabels": {"kubernetes.io/metadata.name": "default"}}),
    );
    let mut bare = pod("x");
    bare["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    assert!(matches!(
        engine::admit(&in_default, &bare, false, None).unwrap(),
        crate::target::Admission::Denied(_)
    ));
    let authz = vap(
        "authorizer.requestResource.check('get').allowed()",
        json!({}),
    );
    let skipped = engine::admit(&authz, &pod("v"), false, None).unwrap_err();
    assert!(skipped.contains("authorizer"), "{skipped}");
}

fn policy(rules: Value) -> Value {
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
           "metadata": {"name": "p"}, "spec": {"rules": rules}})
}

#[test]
fn offline_admission_names_the_denying_policy_and_rule() {
    let objects = vec![policy(json!([{
        "name": "need-team",
        "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"failureAction": "Enforce", "message": "team label",
                     "pattern": {"metadata": {"labels": {"team": "?*"}}}}
    }]))];
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "x", "namespace": "a"},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}});
    match engine::admit(&objects, &pod, false, None).unwrap() {
        crate::target::Admission::Denied(d) => {
            assert!(d.denied_by_kyverno("p", Some("need-team")), "{d:?}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn offline_admission_evaluates_kyverno_cel_rules() {
    let cel = |expr: &str| {
        vec![policy(json!([{
            "name": "need-team",
            "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"failureAction": "Enforce",
                "cel": {"expressions": [{"expression": expr, "message": "team label"}]}}
        }]))]
    };
    let pod = |labels: Value| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "x", "namespace": "a", "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i"}]}})
    };
    let need_team = cel("'team' in object.metadata.labels");
    match engine::admit(&need_team, &pod(json!({})), false, None).unwrap() {
        crate::target::Admission::Denied(d) => {
            assert!(d.denied_by_kyverno("p", Some("need-team")), "{d:?}");
            assert!(d.message.contains("team label"), "{d:?}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        engine::admit(&need_team, &pod(json!({"team": "t"})), false, None).unwrap(),
        crate::target::Admission::Allowed { .. }
    ));
    // A rule the engine cannot evaluate is not an allow.
    let authz = cel("authorizer.requestResource.check('get').allowed()");
    let skipped = engine::admit(&authz, &pod(json!({})), false, None).unwrap_err();
    assert!(skipped.contains("authorizer"), "{skipped}");
}

#[test]
fn offline_admission_returns_the_mutated_object() {
    let objects = vec![policy(json!([{
        "name": "add-team",
        "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"team": "x"}}}}
    }]))];
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "x", "namespace": "a"},
                     "spec": {"containers": [{"name": "c", "image": "i"}]}});
    match engine::admit(&objects, &pod, false, None).unwrap() {
        crate::target::Admission::Allowed { object, .. } => {
            assert_eq!(object.pointer("/metadata/labels/team"), Some(&json!("x")));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn offline_generate_creates_in_the_trigger_namespace() {
    let objects = vec![policy(json!([{
        "name": "gen",
        "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]},
        "generate": {"apiVersion": "v1", "kind": "ConfigMap", "name": "g",
                     "namespace": "{{request.object.metadata.name}}",
                     "data": {"data": {"k": "v"}}}
    }]))];
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t-1"}});
    let mut cluster = super::parity_tests::grant_background("configmaps", "", &["*"]);
    cluster.extend(objects.iter().cloned());
    let access = Arc::new(Access::new(&cluster));
    let out = engine::generate(&objects, &ns, &access).unwrap().generated;
    assert!(
        out.iter()
            .any(|o| o.pointer("/metadata/namespace") == Some(&json!("t-1"))
                && o.pointer("/metadata/name") == Some(&json!("g"))),
        "{out:?}"
    );
}

#[test]
fn generated_objects_land_in_the_trigger_namespace() {
    let mut trig =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "t-"}});
    name_offline_trigger(&mut trig);
    let sel = ObjSel {
        api_version: "networking.k8s.io/v1".into(),
        kind: "NetworkPolicy".into(),
        namespace: None,
        name: "default-deny".into(),
    };
    let r = expected_generated(&sel, &trig);
    assert_eq!(r.namespace.as_deref(), Some("t-offline"));
}

#[test]
fn a_probe_with_generate_name_has_a_name_when_a_vap_reads_it() {
    let objects = vap(
        "object.metadata.name.startsWith('web-')",
        json!({"matchLabels": {"kubernetes.io/metadata.name": "v"}}),
    );
    let probe = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "web-", "namespace": "v"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let adm = engine::admit(&objects, &probe, false, None).unwrap();
    assert!(
        matches!(adm, crate::target::Admission::Allowed { .. }),
        "{adm:?}"
    );
}

#[test]
fn mutating_policies_mutate_the_probe_before_validation() {
    let mut objects = vap(
        "has(object.metadata.labels) && 'team' in object.metadata.labels",
        json!({"matchLabels": {"kubernetes.io/metadata.name": "v"}}),
    );
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "x", "namespace": "v"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    assert!(matches!(
        engine::admit(&objects, &pod, false, None).unwrap(),
        crate::target::Admission::Denied(_)
    ));
    objects.push(
        json!({"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy",
        "metadata": {"name": "add-team"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["pods"]}]},
                 "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {
                    "expression": "Object{metadata: Object.metadata{labels: {'team': 'a'}}}"}}]}}),
    );
    match engine::admit(&objects, &pod, false, None).unwrap() {
        crate::target::Admission::Allowed { object, .. } => {
            assert_eq!(object["metadata"]["labels"]["team"], "a");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn generating_policies_generate_for_a_trigger() {
    let objects = vec![
        json!({"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy",
        "metadata": {"name": "default-deny"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["namespaces"]}]},
                 "generate": [{"expression": "generator.Apply(object.metadata.name, [{'apiVersion': 'networking.k8s.io/v1', 'kind': 'NetworkPolicy', 'metadata': {'name': 'default-deny'}, 'spec': {'podSelector': {}}}])"}]}}),
    ];
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "t-1"}});
    let access = Arc::new(Access::new(&objects));
    let out = engine::generate(&objects, &ns, &access).unwrap().generated;
    assert!(
        out.iter().any(|o| o["kind"] == "NetworkPolicy"
            && o.pointer("/metadata/namespace") == Some(&json!("t-1"))),
        "{out:?}"
    );
}
