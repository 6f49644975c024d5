//! Parses an API server's refusal (status code, reason, message) into who refused it:
//! Kyverno, a ValidatingAdmissionPolicy, RBAC, or another admission plugin. Pure text work;
//! it never decides whether a refusal was expected.

use serde_json::Value;

use super::{Denial, DeniedBy};

/// What Kyverno's webhooks put between the resource and the YAML map of
/// `policy: {rule: message}`; older releases said "policy … for resource …" instead.
const KYVERNO_BLOCKED: &str = " was blocked due to the following policies";
const KYVERNO_LEGACY: &str = "\n\npolicy ";

/// Reads who denied a request from the `Status` the API server returned.
///
/// The order matters: a ValidatingAdmissionPolicy denial can carry reason `Forbidden` and
/// the words "is forbidden", as RBAC's does, so the policy forms are recognised first.
pub fn parse_denial(code: u16, reason: &str, message: &str) -> Denial {
    let all = if let Some(vap) = parse_vap(message) {
        vec![vap]
    } else if let Some(webhook) = webhook_name(message) {
        if webhook.contains("kyverno") {
            let found = parse_kyverno(message);
            if found.is_empty() {
                vec![DeniedBy::Other]
            } else {
                found
            }
        } else {
            vec![DeniedBy::Other]
        }
    } else if is_rbac(code, reason, message) {
        vec![DeniedBy::Rbac]
    } else {
        vec![DeniedBy::Other]
    };
    Denial {
        by: all[0].clone(),
        message: message.to_string(),
        code,
        all,
    }
}

/// `… ValidatingAdmissionPolicy 'P' with binding 'B' denied request: …`, or without a
/// binding (`ValidatingAdmissionPolicy 'P' denied request: …`).
fn parse_vap(message: &str) -> Option<DeniedBy> {
    let start = message.find("ValidatingAdmissionPolicy '")?;
    let rest = &message[start + "ValidatingAdmissionPolicy '".len()..];
    let (policy, rest) = rest.split_once('\'')?;
    let binding = if let Some(after) = rest.strip_prefix(" with binding '") {
        let (binding, tail) = after.split_once('\'')?;
        if !tail.starts_with(" denied request") {
            return None;
        }
        binding
    } else if rest.starts_with(" denied request") {
        ""
    } else {
        return None;
    };
    Some(DeniedBy::ValidatingAdmissionPolicy {
        policy: policy.to_string(),
        binding: binding.to_string(),
    })
}

/// The name in `admission webhook "NAME" denied the request`.
fn webhook_name(message: &str) -> Option<&str> {
    let start = message.find("admission webhook \"")? + "admission webhook \"".len();
    let rest = &message[start..];
    let (name, tail) = rest.split_once('"')?;
    tail.starts_with(" denied the request").then_some(name)
}

/// Every (policy, rule) pair in a Kyverno webhook denial, in message order. The text after
/// the heading is YAML (a map of policy to a map of rule to message); long messages are
/// folded over several lines, so it is read as YAML, not line by line, when it parses.
fn parse_kyverno(message: &str) -> Vec<DeniedBy> {
    let body = if let Some(i) = message.find(KYVERNO_BLOCKED) {
        &message[i + KYVERNO_BLOCKED.len()..]
    } else if let Some(i) = message.find(KYVERNO_LEGACY) {
        // "policy Kind/ns/name for resource violation: \n\nYAML"
        match message[i..].find(": \n\n") {
            Some(j) => &message[i + j + 1..],
            None => return Vec::new(),
        }
    } else {
        return kyverno_cel_policies(message);
    };
    let body = body.trim_start_matches([' ', ':']).trim_start_matches('\n');
    match crate::yaml::parse_json_stream(body) {
        Ok(docs) => match docs.first() {
            Some(Value::Object(policies)) => policies
                .iter()
                .flat_map(|(policy, rules)| {
                    let names: Vec<String> = match rules {
                        Value::Object(rules) => rules.keys().cloned().collect(),
                        _ => vec![String::new()],
                    };
                    names.into_iter().map(move |rule| DeniedBy::Kyverno {
                        policy: policy.clone(),
                        rule,
                    })
                })
                .collect(),
            _ => kyverno_by_lines(body),
        },
        Err(_) => kyverno_by_lines(body),
    }
}

/// Kyverno's CEL policy kinds (ValidatingPolicy, ImageValidatingPolicy and their namespaced
/// forms, served by `vpol.`/`ivpol.`/`nvpol.` webhooks) name no rules: `Policy NAME failed:
/// MESSAGE`, or `Policy NAME error: …` when evaluation itself broke. Rule is empty.
fn kyverno_cel_policies(message: &str) -> Vec<DeniedBy> {
    let mut out = Vec::new();
    let mut rest = message;
    while let Some(i) = rest.find("Policy ") {
        let after = &rest[i + "Policy ".len()..];
        let name_end = after.find(' ').unwrap_or(after.len());
        let (name, tail) = after.split_at(name_end);
        let valid_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-./".contains(c));
        if valid_name && (tail.starts_with(" failed") || tail.starts_with(" error")) {
            let d = DeniedBy::Kyverno {
                policy: name.to_string(),
                rule: String::new(),
            };
            if !out.contains(&d) {
                out.push(d);
            }
        }
        rest = after;
    }
    out
}

/// Fallback for a body that does not parse as YAML (e.g. a message cut short by a proxy):
/// a policy is an unindented `name:` line, a rule an indented `name: …` line below it.
fn kyverno_by_lines(body: &str) -> Vec<DeniedBy> {
    let mut out = Vec::new();
    let mut policy: Option<String> = None;
    for line in body.lines() {
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if indent == 0 {
            policy = trimmed.strip_suffix(':').map(str::to_string);
        } else if indent == 2
            && let (Some(p), Some((rule, _))) = (&policy, trimmed.split_once(':'))
            && !rule.contains(' ')
        {
            out.push(DeniedBy::Kyverno {
                policy: p.clone(),
                rule: rule.to_string(),
            });
        }
    }
    out
}

/// The authorizer's refusal: `… is forbidden: User "U" cannot VERB resource …`. Admission
/// plugins (ResourceQuota, LimitRanger, NamespaceLifecycle, PodSecurity) also answer 403
/// "is forbidden", but never with `User "…" cannot`.
fn is_rbac(code: u16, reason: &str, message: &str) -> bool {
    let forbidden = code == 403 || reason == "Forbidden";
    forbidden
        && message
            .split_once("is forbidden: User \"")
            .is_some_and(|(_, rest)| rest.contains("\" cannot "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kyverno(policy: &str, rule: &str) -> DeniedBy {
        DeniedBy::Kyverno {
            policy: policy.into(),
            rule: rule.into(),
        }
    }

    // Shapes as the API server returns them: Kyverno's webhook message (a YAML map after a
    // heading), wrapped by the API server's "admission webhook … denied the request: ".
    const KYVERNO_ONE: &str = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/team-a/web was blocked due to the following policies \n\nrequire-labels:\n  check-team: 'validation error: label team is required. rule check-team failed\n    at path /metadata/labels/team/'\n";

    const KYVERNO_MANY: &str = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Deployment/default/nginx-deployment was blocked due to the following policies \n\ndisallow-privileged:\n  autogen-check-privileged: 'validation error: Privileged containers are not allowed.\n    rule autogen-check-privileged failed at path /spec/template/spec/containers/0/securityContext/privileged/'\nrequire-labels:\n  autogen-check-app: 'validation error: label app is required. rule autogen-check-app\n    failed at path /spec/template/metadata/labels/app/'\n  autogen-check-team: 'validation error: label team is required.'\n";

    const KYVERNO_VERIFY_IMAGES: &str = "admission webhook \"mutate.kyverno.svc-fail\" denied the request: \n\nresource Pod/default/demo was blocked due to the following policies\n\nsigstore-image-verification:\n  sigstore-image-verification: 'failed to verify image docker.io/nginx:latest: .attestors[0].entries[0].keyless:\n    sigstore bundle verification failed: no matching signatures found'\n";

    const KYVERNO_CLUSTER_SCOPED: &str = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Namespace//scratch was blocked due to the following policies \n\nrequire-ns-owner:\n  owner-label: 'validation error: every namespace needs an owner label. rule owner-label\n    failed at path /metadata/labels/owner/'\n";

    const KYVERNO_LEGACY_TEXT: &str = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\npolicy Pod/default/web for resource violation: \n\ndisallow-latest-tag:\n  validate-image-tag: 'validation error: Using a mutable image tag e.g. ''latest'' is not allowed. rule validate-image-tag failed at path /spec/containers/0/image/'\n";

    #[test]
    fn kyverno_single_policy_and_rule() {
        let d = parse_denial(400, "", KYVERNO_ONE);
        assert_eq!(d.by, kyverno("require-labels", "check-team"));
        assert_eq!(d.all.len(), 1);
        assert_eq!(d.code, 400);
        assert_eq!(d.message, KYVERNO_ONE);
    }

    #[test]
    fn kyverno_several_policies_and_rules_in_message_order() {
        let d = parse_denial(400, "", KYVERNO_MANY);
        assert_eq!(
            d.all,
            vec![
                kyverno("disallow-privileged", "autogen-check-privileged"),
                kyverno("require-labels", "autogen-check-app"),
                kyverno("require-labels", "autogen-check-team"),
            ]
        );
        assert!(d.denied_by_kyverno("require-labels", Some("autogen-check-team")));
        assert!(d.denied_by_kyverno("require-labels", None));
        assert!(!d.denied_by_kyverno("require-labels", Some("check-team")));
        assert!(!d.denied_by_kyverno("other", None));
    }

    #[test]
    fn kyverno_mutate_webhook_verify_images() {
        let d = parse_denial(400, "", KYVERNO_VERIFY_IMAGES);
        assert_eq!(
            d.by,
            kyverno("sigstore-image-verification", "sigstore-image-verification")
        );
    }

    #[test]
    fn kyverno_cluster_scoped_resource() {
        let d = parse_denial(400, "", KYVERNO_CLUSTER_SCOPED);
        assert_eq!(d.by, kyverno("require-ns-owner", "owner-label"));
    }

    #[test]
    fn kyverno_legacy_heading() {
        let d = parse_denial(400, "", KYVERNO_LEGACY_TEXT);
        assert_eq!(d.by, kyverno("disallow-latest-tag", "validate-image-tag"));
    }

    #[test]
    fn kyverno_body_that_is_not_yaml_falls_back_to_lines() {
        // Cut mid-way through a quoted scalar, so the YAML does not parse.
        let cut = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource Pod/a/b was blocked due to the following policies \n\np1:\n  r1: 'validation error: x\np2:\n  r2: 'never closed";
        let d = parse_denial(400, "", cut);
        assert!(d.denied_by_kyverno("p1", Some("r1")), "{:?}", d.all);
        assert!(d.denied_by_kyverno("p2", Some("r2")), "{:?}", d.all);
    }

    #[test]
    fn kyverno_cel_validating_policy_names_the_policy_without_a_rule() {
        for (msg, policy) in [
            (
                "admission webhook \"vpol.validate.kyverno.svc-fail\" denied the request: Policy check-labels failed: label 'environment' is required",
                "check-labels",
            ),
            (
                "admission webhook \"ivpol.validate.kyverno.svc-fail-finegrained-verify-images-prod\" denied the request: Policy verify-images-prod failed: the image is not signed",
                "verify-images-prod",
            ),
            (
                "admission webhook \"ivpol.validate.kyverno.svc-fail\" denied the request: Policy require-signed-images error: failed to evaluate policy: GET https://index.docker.io/v2/library/alpine/manifests/3.24.1: unexpected status code 429",
                "require-signed-images",
            ),
        ] {
            let d = parse_denial(400, "", msg);
            assert_eq!(d.by, kyverno(policy, ""), "{msg}");
            assert!(d.denied_by_kyverno(policy, None));
            assert!(!d.denied_by_kyverno(policy, Some("some-rule")));
        }
    }

    #[test]
    fn kyverno_webhook_without_policy_list_is_other() {
        let msg = "admission webhook \"validate.kyverno.svc-fail\" denied the request: failed to load policy cache";
        assert_eq!(parse_denial(400, "", msg).by, DeniedBy::Other);
    }

    #[test]
    fn other_webhooks_are_other() {
        let msg = "admission webhook \"validation.gatekeeper.sh\" denied the request: [must-have-owner] you must provide labels: {\"owner\"}";
        assert_eq!(parse_denial(403, "", msg).by, DeniedBy::Other);
    }

    #[test]
    fn vap_with_binding_invalid() {
        let msg = "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed expression: object.spec.replicas <= 5";
        let d = parse_denial(422, "Invalid", msg);
        assert_eq!(
            d.by,
            DeniedBy::ValidatingAdmissionPolicy {
                policy: "replica-limit".into(),
                binding: "replica-limit-binding".into()
            }
        );
        assert_eq!(d.code, 422);
    }

    #[test]
    fn vap_with_reason_forbidden_is_not_rbac() {
        let msg = "secrets \"s\" is forbidden: ValidatingAdmissionPolicy 'boundary' with binding 'boundary' denied request: User \"bob\" cannot move it";
        let d = parse_denial(403, "Forbidden", msg);
        assert_eq!(
            d.by,
            DeniedBy::ValidatingAdmissionPolicy {
                policy: "boundary".into(),
                binding: "boundary".into()
            }
        );
    }

    #[test]
    fn vap_without_binding() {
        let msg = "pods \"p\" is forbidden: ValidatingAdmissionPolicy 'no-host' denied request: hostNetwork is not allowed";
        assert_eq!(
            parse_denial(422, "Invalid", msg).by,
            DeniedBy::ValidatingAdmissionPolicy {
                policy: "no-host".into(),
                binding: String::new()
            }
        );
    }

    #[test]
    fn rbac_forbidden_forms() {
        for msg in [
            "pods is forbidden: User \"alice\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\"",
            "configmaps \"cm\" is forbidden: User \"system:serviceaccount:lab:builder\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"lab\"",
            "clusterpolicies.kyverno.io is forbidden: User \"dev\" cannot list resource \"clusterpolicies\" in API group \"kyverno.io\" at the cluster scope",
            "pods is forbidden: User \"alice\" cannot create resource \"pods\" in API group \"\" in the namespace \"x\": RBAC: role.rbac.authorization.k8s.io \"gone\" not found",
        ] {
            assert_eq!(
                parse_denial(403, "Forbidden", msg).by,
                DeniedBy::Rbac,
                "{msg}"
            );
        }
    }

    #[test]
    fn built_in_admission_plugins_are_other() {
        for (code, reason, msg) in [
            (
                403,
                "Forbidden",
                "pods \"probe\" is forbidden: exceeded quota: kca-quota, requested: pods=1, used: pods=0, limited: pods=0",
            ),
            (
                403,
                "Forbidden",
                "pods \"probe\" is forbidden: unable to create new content in namespace lab because it is being terminated",
            ),
            (404, "NotFound", "namespaces \"gone\" not found"),
            (
                403,
                "Forbidden",
                "pods \"big\" is forbidden: [maximum cpu usage per Container is 500m, but limit is 1]",
            ),
            (
                403,
                "Forbidden",
                "pods \"priv\" is forbidden: violates PodSecurity \"restricted:latest\": privileged (container \"c\" must not set securityContext.privileged=true)",
            ),
        ] {
            assert_eq!(parse_denial(code, reason, msg).by, DeniedBy::Other, "{msg}");
        }
    }
}
