//! JSON-mode ValidatingPolicies (`evaluate_json_policy`).

use super::*;

#[test]
fn a_json_mode_policy_runs_on_the_payload_without_match_constraints() {
    let policy = json!({"kind": "ValidatingPolicy", "metadata": {"name": "p"}, "spec": {
        "evaluation": {"mode": "JSON"},
        "matchConditions": [{"name": "tf", "expression": "has(object.resource_changes)"}],
        "variables": [{"name": "roots", "expression":
            "object.resource_changes.filter(rc, rc.after.type == 'ROOT')"}],
        "validations": [{"expression": "size(variables.roots) == 0", "message": "no roots"}]}});
    let run = |payload: Value| {
        let mut out = VapOutcome::default();
        let applied = evaluate_json_policy(
            &policy,
            &payload,
            &Arc::new(Vec::new()),
            &Arc::new(CliServices::default()),
            &mut out,
        );
        (applied, out)
    };
    let (applied, _) = run(json!({"resource_changes": [{"after": {"type": "SUB"}}]}));
    assert_eq!(applied, Applied::Passed);
    let (applied, out) = run(json!({"resource_changes": [{"after": {"type": "ROOT"}}]}));
    assert_eq!(applied, Applied::Failed);
    assert_eq!(out.denials[0].message, "no roots");
    // A false match condition: the policy does not apply.
    let (applied, _) = run(json!({"other": 1}));
    assert_eq!(applied, Applied::NotMatched);
}
