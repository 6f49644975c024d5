//! CEL PolicyExceptions that name `images` or `allowedValues` exempt only what they name
//! (Kyverno's `pkg/cel/policies/vpol/compiler/policy.go`); one naming neither exempts
//! the request whole.

use super::*;

fn exception(images: &[&str], values: &[&str], condition: &str) -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1", "kind": "PolicyException",
        "metadata": {"name": "exc"},
        "spec": {"policyRefs": [{"name": "no-escalation", "kind": "ValidatingPolicy"}],
            "images": images, "allowedValues": values,
            "matchConditions": [{"name": "c", "expression": condition}]}})
}

fn policy() -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
        "metadata": {"name": "no-escalation"},
        "spec": {"validationActions": ["Deny"],
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "validations": [{"expression":
                "object.spec.containers.all(c, c.image in exceptions.allowedImages || \
                 !c.securityContext.allowPrivilegeEscalation) && \
                 object.metadata.labels.tier in ['web'] + exceptions.allowedValues"}]}})
}

fn pod(images: &[&str], tier: &str) -> VapRequest {
    let containers: Vec<Value> = images
        .iter()
        .map(|i| json!({"name": "c", "image": i, "securityContext": {"allowPrivilegeEscalation": true}}))
        .collect();
    VapRequest {
        operation: "CREATE".into(),
        object: json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a", "labels": {"tier": tier}},
            "spec": {"containers": containers}}),
        ..Default::default()
    }
}

fn run(objects: &[Value], req: &VapRequest) -> Applied {
    let mut out = VapOutcome::default();
    evaluate_validating_policy(objects, &policy(), req, &mut out)
}

#[test]
fn an_exception_with_images_exempts_only_those_images() {
    // kca dropped the whole policy (or knew no `exceptions` variable: skipped).
    let objects = [policy(), exception(&["busybox"], &[], "true")];
    assert_eq!(run(&objects, &pod(&["busybox"], "web")), Applied::Passed);
    assert_eq!(
        run(&objects, &pod(&["busybox", "ubuntu"], "web")),
        Applied::Failed
    );
    // Without the exception, the allowed image fails too.
    assert_eq!(run(&[policy()], &pod(&["busybox"], "web")), Applied::Failed);
}

#[test]
fn an_exception_with_allowed_values_allows_only_those_values() {
    let objects = [policy(), exception(&["busybox"], &["batch"], "true")];
    assert_eq!(run(&objects, &pod(&["busybox"], "batch")), Applied::Passed);
    assert_eq!(run(&objects, &pod(&["busybox"], "db")), Applied::Failed);
}

#[test]
fn an_exception_naming_nothing_exempts_whole_and_wins_over_partial_ones() {
    let objects = [
        policy(),
        exception(&["busybox"], &[], "true"),
        exception(&[], &[], "object.metadata.labels.tier == 'db'"),
    ];
    assert_eq!(run(&objects, &pod(&["ubuntu"], "db")), Applied::NotMatched);
    assert_eq!(run(&objects, &pod(&["ubuntu"], "web")), Applied::Failed);
    // An exception for another kind of policy with this name does not apply.
    let mut other = exception(&[], &[], "true");
    other["spec"]["policyRefs"][0]["kind"] = json!("MutatingPolicy");
    assert_eq!(
        run(&[policy(), other], &pod(&["ubuntu"], "web")),
        Applied::Failed
    );
    assert_eq!(
        exemption(&policy(), &objects, &pod(&["ubuntu"], "web")),
        Ok(Exemption::Partial(Allowances {
            images: vec!["busybox".into()],
            values: vec![]
        }))
    );
}
