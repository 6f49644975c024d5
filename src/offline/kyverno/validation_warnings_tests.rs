use serde_json::{Value, json};

use super::super::{Mode, admission, validate_policy};

fn validate_policy_with(validate: Value, spec: Value) -> Value {
    let mut spec = spec;
    spec["rules"] = json!([{"name": "r",
        "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": validate}]);
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "p"}, "spec": spec})
}

fn lines(policy: &Value) -> Vec<String> {
    admission(policy, None, Mode::Cli).1.lines
}

#[test]
fn every_legacy_policy_carries_the_deprecation_notice_last() {
    let p = validate_policy_with(
        json!({"failureAction": "audit", "pattern": {"spec": {"replicas": ">1"}}}),
        json!({}),
    );
    let got = lines(&p);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got[0].starts_with("Validation failure actions enforce/audit are deprecated"));
    assert!(got[1].starts_with("You are matching on replicas"));
    assert!(got[2].starts_with("ClusterPolicy (kyverno.io) is deprecated"));
}

#[test]
fn a_clean_policy_has_only_the_notice_and_a_scale_kind_silences_the_hint() {
    let mut p = validate_policy_with(
        json!({"failureAction": "Enforce", "pattern": {"spec": {"replicas": ">1"}}}),
        json!({}),
    );
    p["spec"]["rules"][0]["match"]["any"][0]["resources"]["kinds"] = json!(["Deployment/scale"]);
    p["spec"]["background"] = json!(false);
    assert_eq!(lines(&p).len(), 1, "{:?}", lines(&p));
}

#[test]
fn deprecated_operators_are_named_with_their_alternatives() {
    let p = validate_policy_with(
        json!({"deny": {"conditions": {"any": [
            {"key": "a", "operator": "In", "value": ["a"]},
            {"key": "b", "operator": "AnyIn", "value": ["b"]}]}}}),
        json!({}),
    );
    let got = lines(&p);
    assert!(got.contains(&"Operator In has been deprecated and will be removed soon. Use these instead: [\"AllIn\" \"AnyIn\"]".to_string()), "{got:?}");
    assert!(!got.iter().any(|l| l.contains("AnyIn has been")));
}

#[test]
fn validate_cel_leaves_the_warnings_unknown() {
    let p = validate_policy_with(
        json!({"cel": {"expressions": [{"expression": "true"}]}}),
        json!({}),
    );
    assert!(admission(&p, None, Mode::Cli).1.unknown.is_some());
}

#[test]
fn background_policies_may_not_read_the_requester() {
    for (var, refused) in [
        ("{{request.userInfo.username}}", true),
        ("{{serviceAccountName}}", true),
        ("{{request.object.spec.serviceAccountName}}", false),
        ("{{request.object.metadata.name}}", false),
    ] {
        let p = validate_policy_with(
            json!({"message": "m", "pattern": {"metadata": {"labels": {"o": var}}}}),
            json!({}),
        );
        let problems = validate_policy(&p, Mode::Cli);
        assert_eq!(!problems.is_empty(), refused, "{var}: {problems:?}");
        let mut off = p.clone();
        off["spec"]["background"] = json!(false);
        assert!(validate_policy(&off, Mode::Cli).is_empty(), "{var}");
    }
}

#[test]
fn background_policies_may_not_match_roles() {
    let mut p = validate_policy_with(json!({"message": "m", "pattern": {"x": "y"}}), json!({}));
    p["spec"]["rules"][0]["match"]["any"][0]["clusterRoles"] = json!(["admin"]);
    let problems = validate_policy(&p, Mode::Cli);
    assert!(
        problems[0]
            .message
            .ends_with("invalid variable used at path: spec/rules[0]/match/any[0]/clusterRoles "),
        "{problems:?}"
    );
}
