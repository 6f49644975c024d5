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
fn validate_cel_is_not_type_checked_without_a_cluster() {
    let p = validate_policy_with(
        json!({"cel": {"expressions": [{"expression": "object.nope"}]}}),
        json!({}),
    );
    assert!(admission(&p, None, Mode::Cli).1.unknown.is_none());
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

fn cel_policy(kinds: Value, expressions: Value, rules: usize) -> Value {
    let rule = json!({"name": "r", "match": {"any": [{"resources": {"kinds": kinds}}]},
        "validate": {"failureAction": "Enforce", "cel": {"expressions": expressions}}});
    json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "p"}, "spec": {"rules": vec![rule; rules]}})
}

fn type_warnings(policy: &Value) -> (Vec<String>, Option<String>) {
    let authorizer = crate::offline::rbac::Authorizer::new(&[]);
    let mapper = crate::offline::rbac::resource::Mapper::built_in();
    let mode = Mode::Cluster {
        authorizer: &authorizer,
        mapper: &mapper,
    };
    let w = admission(policy, None, mode).1;
    let lines = w
        .lines
        .into_iter()
        .filter(|l| l.starts_with("spec.rules[0].validate.cel"))
        .collect();
    (lines, w.unknown)
}

#[test]
fn the_cel_type_checker_warns_on_an_undefined_field_of_the_matched_kind() {
    let p = cel_policy(
        json!(["Deployment"]),
        json!([{"expression": "object.spec.replicas > 1"},
               {"expression": "object.replicas > 1", "messageExpression": "object.metadata.name + 1"}]),
        1,
    );
    let (lines, unknown) = type_warnings(&p);
    assert_eq!(unknown, None);
    assert_eq!(
        lines,
        [
            "spec.rules[0].validate.cel.expressions[1].expression:apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'; | object.replicas > 1; | ......^;",
            "spec.rules[0].validate.cel.expressions[1].messageExpression:apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_+_' applied to '(string, int)'; | object.metadata.name + 1; | .....................^;",
        ]
    );
}

#[test]
fn the_cel_type_checker_runs_only_where_kyverno_runs_it() {
    let bad = json!([{"expression": "object.replicas > 1"}]);
    // Two rules: no VAP, no check.
    assert_eq!(
        type_warnings(&cel_policy(json!(["Deployment"]), bad.clone(), 2)),
        (vec![], None)
    );
    // The CLI has no cluster.
    let p = cel_policy(json!(["Deployment"]), bad.clone(), 1);
    assert!(!lines(&p).iter().any(|l| l.contains("validate.cel")));
    // A kind whose schema kca lacks, an expression it does not model: unknown.
    assert!(
        type_warnings(&cel_policy(json!(["ClusterPolicy"]), bad, 1))
            .1
            .is_some()
    );
    let unmodelled = json!([{"expression": "quantity(object.metadata.name).isInteger()"}]);
    assert!(
        type_warnings(&cel_policy(json!(["Deployment"]), unmodelled, 1))
            .1
            .is_some()
    );
}
