//! Kyverno's validation of a `PolicyException` (kyverno.io/v2) when it is created
//! (pkg/webhooks/exception/validate.go calling api/kyverno/v2 `PolicyExceptionSpec.
//! Validate`): an exception processed in the background (`spec.background`, true by
//! default) may not match on user information (api/kyverno/v1 user_info_types.go
//! `ValidateNoUserInfo`), which a background scan does not have.

use serde_json::Value;

use super::Problem;

/// The webhook configuration that validates exceptions (pkg/config/config.go).
pub const EXCEPTION_WEBHOOK: &str = "kyverno-exception-validating-webhook-cfg";

/// The problems Kyverno reports for a kyverno.io `PolicyException`, empty when accepted.
pub fn validate_exception(exception: &Value) -> Vec<Problem> {
    let spec = exception.get("spec").unwrap_or(&Value::Null);
    let background = spec
        .get("background")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let mut out = Vec::new();
    if !background {
        return out;
    }
    for list in ["any", "all"] {
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
}
