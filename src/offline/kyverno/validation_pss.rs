//! Kyverno's checks of a Pod Security exclusion when a policy or an exception is
//! created: `PodSecurityStandard.Validate` (api/kyverno/v1/common_types.go), shared by a
//! rule's `validate.podSecurity.exclude` and a `PolicyException`'s `podSecurity`, and the
//! rule's `ValidatePSaControlNames` (api/kyverno/v1/rule_types.go). The control lists are
//! pkg/pss/utils/mapping.go's.

use serde_json::Value;

use super::{Problem, forbidden};

/// Controls checked per container: an exclusion names the images it covers.
const CONTAINER_LEVEL: &[&str] = &[
    "Capabilities",
    "Privileged Containers",
    "Host Ports",
    "/proc Mount Type",
    "Privilege Escalation",
];
/// Controls checked on the Pod as a whole: an exclusion names no images.
const POD_LEVEL: &[&str] = &[
    "Host Namespaces",
    "HostPath Volumes",
    "Sysctls",
    "Volume Types",
];
/// Controls of the restricted level only (`PSS_restricted_control_names`).
const RESTRICTED_ONLY: &[&str] = &[
    "Volume Types",
    "Privilege Escalation",
    "Running as Non-root",
    "Running as Non-root user",
    "Seccomp",
    "Capabilities",
];

/// `PodSecurityStandard.Validate` on one exclusion at `at`.
pub(super) fn exclusion_problems(entry: &Value, at: &str) -> Vec<Problem> {
    let control = entry
        .get("controlName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let non_empty = |k: &str| {
        entry
            .get(k)
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty())
    };
    let mut out = Vec::new();
    let images = non_empty("images");
    let wrong_images = if CONTAINER_LEVEL.contains(&control) && !images {
        Some("exclude.images must be specified for the container level control")
    } else if POD_LEVEL.contains(&control) && images {
        Some("exclude.images must not be specified for the pod level control")
    } else {
        None
    };
    if let Some(why) = wrong_images {
        out.push(invalid(&format!("{at}.controlName"), control, why));
    }
    let field = entry
        .get("restrictedField")
        .and_then(Value::as_str)
        .is_some_and(|f| !f.is_empty());
    let values = non_empty("values");
    if field && !values {
        out.push(forbidden(&format!("{at}.values"), "values is required"));
    }
    if !field && values {
        out.push(forbidden(
            &format!("{at}.restrictedField"),
            "restrictedField is required",
        ));
    }
    out
}

/// `ValidatePSaControlNames` for rule `i`: each exclusion's own checks, and at the
/// baseline level no exclusion of a restricted-only control (Seccomp and Capabilities
/// have a baseline part, so they stay allowed).
pub(super) fn rule_problems(i: usize, rule: &Value) -> Vec<Problem> {
    let Some(pss) = rule
        .pointer("/validate/podSecurity")
        .filter(|p| p.is_object())
    else {
        return Vec::new();
    };
    let baseline = pss.get("level").and_then(Value::as_str) == Some("baseline");
    let excludes = pss.get("exclude").and_then(Value::as_array);
    let mut out = Vec::new();
    for (j, e) in excludes.into_iter().flatten().enumerate() {
        let at = format!("spec.rules[{i}].podSecurity.exclude[{j}]");
        out.extend(exclusion_problems(e, &at));
        let control = e.get("controlName").and_then(Value::as_str).unwrap_or("");
        if baseline
            && !["Seccomp", "Capabilities"].contains(&control)
            && RESTRICTED_ONLY.contains(&control)
        {
            out.push(invalid(
                &format!("{at}.controlName"),
                control,
                "Invalid control name defined at the given level",
            ));
        }
    }
    out
}

/// `field.Invalid` on a string value, which Go prints quoted.
fn invalid(path: &str, value: &str, detail: &str) -> Problem {
    Problem {
        message: format!("{path}: Invalid value: {value:?}: {detail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_exclusion_names_images_exactly_for_container_level_controls() {
        let no_images = json!({"controlName": "Host Ports"});
        assert_eq!(
            exclusion_problems(&no_images, "x")[0].message,
            "x.controlName: Invalid value: \"Host Ports\": exclude.images must be specified for the container level control"
        );
        let pod_with_images = json!({"controlName": "Sysctls", "images": ["a"]});
        assert!(
            exclusion_problems(&pod_with_images, "x")[0]
                .message
                .contains("must not be specified for the pod level control")
        );
        let either = json!({"controlName": "Seccomp", "images": ["a"]});
        assert!(exclusion_problems(&either, "x").is_empty());
    }

    #[test]
    fn a_baseline_rule_excludes_no_restricted_only_control() {
        let rule = |control: &str| {
            json!({"validate": {"podSecurity": {"level": "baseline", "version": "latest",
                "exclude": [{"controlName": control}]}}})
        };
        assert_eq!(
            rule_problems(0, &rule("Running as Non-root"))[0].message,
            "spec.rules[0].podSecurity.exclude[0].controlName: Invalid value: \"Running as Non-root\": Invalid control name defined at the given level"
        );
        assert!(rule_problems(0, &rule("Seccomp")).is_empty());
    }
}
