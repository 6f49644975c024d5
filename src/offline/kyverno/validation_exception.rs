//! Kyverno's validation of a `PolicyException` (kyverno.io/v2) when it is created
//! (pkg/webhooks/exception/validate.go calling api/kyverno/v2 `PolicyExceptionSpec.
//! Validate`): an exception processed in the background (`spec.background`, true by
//! default) may not match on user information (api/kyverno/v1 user_info_types.go
//! `ValidateNoUserInfo`), which a background scan does not have; each exception names
//! its policy (`Exception.Validate`); each `podSecurity` entry passes
//! `PodSecurityStandard.Validate` (see `validation_pss.rs`). (The `match` block's own
//! `Validate`, whose messages dump Go values, is not modelled.)

use serde_json::Value;

use super::{Problem, pss_checks};

/// The webhook that validates exceptions, as the API server names it in a denial: the
/// one webhook of `kyverno-exception-validating-webhook-cfg`, named after Kyverno's
/// service (pkg/controllers/generic/webhook/controller.go `build`).
pub const EXCEPTION_WEBHOOK: &str = "kyverno-svc.kyverno.svc";

/// The problems Kyverno reports for a kyverno.io `PolicyException`, empty when accepted.
pub fn validate_exception(exception: &Value) -> Vec<Problem> {
    let spec = exception.get("spec").unwrap_or(&Value::Null);
    let background = spec
        .get("background")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut out = Vec::new();
    for list in ["any", "all"].into_iter().filter(|_| background) {
        let filters = spec
            .pointer(&format!("/match/{list}"))
            .and_then(Value::as_array);
        for (i, f) in filters.into_iter().flatten().enumerate() {
            for key in ["roles", "clusterRoles", "subjects"] {
                if f.get(key)
                    .and_then(Value::as_array)
                    .is_some_and(|v| !v.is_empty())
                {
                    out.push(Problem {
                        message: format!(
                            "spec.match.{list}[{i}].{key}: Forbidden: Usage of user info is forbidden"
                        ),
                    });
                }
            }
        }
    }
    let exceptions = spec.get("exceptions").and_then(Value::as_array);
    for (i, e) in exceptions.into_iter().flatten().enumerate() {
        if e.get("policyName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            out.push(Problem {
                message: format!(
                    "spec.exceptions[{i}].policyName: Required value: An exception requires a policy name"
                ),
            });
        }
    }
    let pss = spec.get("podSecurity").and_then(Value::as_array);
    for (i, entry) in pss.into_iter().flatten().enumerate() {
        out.extend(pss_checks::exclusion_problems(
            entry,
            &format!("spec.podSecurity[{i}]"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn polex(background: Option<bool>) -> Value {
        let mut spec = json!({"exceptions": [{"policyName": "p", "ruleNames": ["r"]}],
            "match": {"any": [{"resources": {"kinds": ["Pod"]}, "subjects": [{"kind": "User", "name": "chip"}]}]}});
        if let Some(b) = background {
            spec["background"] = json!(b);
        }
        json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException", "metadata": {"name": "e"}, "spec": spec})
    }

    /// An exception matching on subjects while processed in the background was accepted.
    #[test]
    fn user_info_in_a_background_exception_is_refused() {
        let e = validate_exception(&polex(None));
        assert_eq!(
            e[0].message,
            "spec.match.any[0].subjects: Forbidden: Usage of user info is forbidden"
        );
        assert!(!validate_exception(&polex(Some(true))).is_empty());
        assert!(validate_exception(&polex(Some(false))).is_empty());
    }

    /// An exception's Pod Security entries were admitted unchecked.
    #[test]
    fn pod_security_entries_of_an_exception_are_checked_as_a_rules_exclusions() {
        let mut e = polex(Some(false));
        e["spec"]["podSecurity"] = json!([
            {"controlName": "Sysctls"},
            {"controlName": "Host Ports", "images": ["x"], "values": ["1"]}]);
        assert_eq!(
            validate_exception(&e)
                .into_iter()
                .map(|p| p.message)
                .collect::<Vec<_>>(),
            vec!["spec.podSecurity[1].restrictedField: Forbidden: restrictedField is required"]
        );
    }
}
