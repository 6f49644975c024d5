//! What Kyverno's CEL environment declares: `variables` in a ValidatingPolicy's match
//! conditions (declared, not yet bound), every library bound (a call without its data
//! is `unsupported` with the reason), and cel-go's wording of a missing key.

use super::*;

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.21"}]}})
}

fn request() -> VapRequest {
    VapRequest {
        operation: "CREATE".into(),
        object: pod(),
        namespace_object: json!({"metadata": {"name": "a"}}),
        ..Default::default()
    }
}

fn vpol(kind: &str, condition: &str, failure_policy: &str) -> Value {
    json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": kind,
        "metadata": {"name": "vp"},
        "spec": {"failurePolicy": failure_policy,
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "matchConditions": [{"name": "uses-vars", "expression": condition}],
            "variables": [{"name": "ok", "expression": "true"}],
            "validations": [{"expression": "false", "message": "denied"}]}})
}

/// pkg/cel/policies/vpol/compiler/compiler.go declares `variables` for match conditions;
/// policy.go binds it only after they held: reading it is cel-go's evaluation error.
#[test]
fn a_validating_policy_match_condition_reading_variables_is_an_evaluation_error() {
    let mut out = VapOutcome::default();
    let p = vpol("ValidatingPolicy", "variables.ok", "Fail");
    let applied = evaluate_validating_policy(&[], &p, &request(), &mut out);
    assert_eq!(applied, Applied::Failed, "{out:?}");
    assert!(out.unsupported().is_none(), "{out:?}");
    assert!(
        out.denials[0]
            .message
            .contains("no such attribute(s): variables"),
        "{out:?}"
    );
    // Under `Ignore` the policy does not apply.
    let mut out = VapOutcome::default();
    let p = vpol("ValidatingPolicy", "variables.ok", "Ignore");
    assert_eq!(
        evaluate_validating_policy(&[], &p, &request(), &mut out),
        Applied::Errored
    );
    assert!(
        out.denials.is_empty() && out.unsupported().is_none(),
        "{out:?}"
    );
    // Not read (short-circuit): no error, as cel-go.
    let mut out = VapOutcome::default();
    let p = vpol("ValidatingPolicy", "true || variables.ok", "Fail");
    assert_eq!(
        evaluate_validating_policy(&[], &p, &request(), &mut out),
        Applied::Failed
    );
    assert_eq!(out.denials[0].message, "denied");
}

#[test]
fn library_calls_without_their_data_say_what_they_need() {
    let ctx = base_context(&request(), &Value::Null);
    let why = |expr: &str| eval(&ctx, expr).unwrap_err().unsupported;
    assert!(
        matches!(
            why("image.GetMetadata(object.spec.containers[0].image).config"),
            Some(Unsupported::Registry(_))
        ),
        "image"
    );
    assert!(matches!(
        why("http.Get('https://example.com/x')"),
        Some(Unsupported::Network(_))
    ));
    for e in [
        "globalContext.Get('e', '') == null",
        "resource.Get('v1', 'configmaps', 'a', 'x') == null",
        "resource.List('v1', 'configmaps', 'a') == null",
    ] {
        assert!(matches!(why(e), Some(Unsupported::Library(_))), "{e}");
    }
}

#[test]
fn a_missing_key_is_reported_in_cel_gos_words() {
    let ctx = base_context(&request(), &Value::Null);
    let e = eval(&ctx, "object.spec.missing == 1").unwrap_err();
    assert_eq!(e.message, "no such key: missing");
    assert!(e.unsupported.is_none());
}
