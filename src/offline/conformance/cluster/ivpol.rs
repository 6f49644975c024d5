//! Kyverno's ImageValidatingPolicies at admission, as far as they are decided without a
//! registry. The engine (pkg/cel/policies/ivpol/engine/engine.go `matchPolicy`,
//! `filterPolicies`, `evaluatePolicies`) takes up a policy for a request its
//! `matchConstraints` select; a NamespacedImageValidatingPolicy only for requests in its
//! namespace (pkg/webhooks/resource/ivpol/handler.go `NamespacedPolicy`). The compiled
//! policy (pkg/image/verification/evaluator/policy.go `Evaluate`) then checks its
//! `matchConditions` and PolicyExceptions, and fetches the images `matchImageReferences`
//! selects (`ictx.AddImages`; the mutating webhook, `MutateDigest`, resolves their
//! digests before) — a registry's work, so such a request is a registry skip. What comes
//! before that fetch is decided here ([`vap::image_policy_check`]): a policy the request's
//! conditions or an exception leave out, an undigested image when the policy neither pins
//! nor lets it pass (`checkDigests`), and the validations when no image is selected
//! (`AddImages` of nothing fetches nothing). A failure under `Deny` is the handler's
//! `Policy NAME failed: MESSAGE` from the policy's validating webhook.

use serde_json::Value;

use super::super::Skip;
use super::super::controllers::{Features, validating_webhook_name};
use super::text;
use crate::offline::vap::{self, ImageCheck, VapRequest};

/// The ImageValidatingPolicy kinds.
pub(crate) fn is_image_policy(kind: &str) -> bool {
    matches!(
        kind,
        "ImageValidatingPolicy" | "NamespacedImageValidatingPolicy"
    )
}

/// What the image policies (with admission on) among `objects` make of `req`: `None`
/// lets it through, `Some(Ok(message))` refuses it, `Some(Err(skip))` is not decided here.
/// `exceptions` holds the PolicyExceptions Kyverno reads (none when they are disabled).
pub(super) fn admission(
    objects: &[Value],
    exceptions: &[Value],
    req: &VapRequest,
    features: Features,
) -> Option<Result<String, Skip>> {
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let ns = text(obj, "/metadata/namespace");
    let mut denials = Vec::new();
    for p in objects
        .iter()
        .filter(|o| is_image_policy(&text(o, "/kind")))
    {
        if text(p, "/kind").starts_with("Namespaced") && text(p, "/metadata/namespace") != ns {
            continue;
        }
        let admission = p
            .pointer("/spec/evaluation/admission/enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        if !admission {
            continue;
        }
        let name = text(p, "/metadata/name");
        match vap::image_policy_check(p, exceptions, req) {
            ImageCheck::NotTaken | ImageCheck::Excepted(_) | ImageCheck::Pass => {}
            ImageCheck::Registry(images) if images.is_empty() => {
                return Some(Err(Skip::Registry(format!(
                    "ImageValidatingPolicy {name} reads image data or signatures from a registry"
                ))));
            }
            ImageCheck::Registry(_) => {
                return Some(Err(Skip::Registry(format!(
                    "ImageValidatingPolicy {name} verifies the request's images"
                ))));
            }
            ImageCheck::Undecided(why) => {
                return Some(Err(Skip::Engine(format!(
                    "ImageValidatingPolicy {name}: {why}"
                ))));
            }
            ImageCheck::Fail(message) => {
                let actions = validation_actions(p);
                if actions.contains(&"Warn") {
                    return Some(Err(Skip::Engine(format!(
                        "the warning of ImageValidatingPolicy {name}"
                    ))));
                }
                if actions.contains(&"Deny") {
                    denials.push(format!(
                        "admission webhook \"{}\" denied the request: Policy {name} failed: {message}",
                        validating_webhook_name(p, features)
                    ));
                }
            }
        }
    }
    match denials.len() {
        0 => None,
        1 => denials.pop().map(Ok),
        // Webhooks run in parallel, a shared one joins its policies' errors in map order.
        _ => Some(Err(Skip::Engine(
            "the denial of several ImageValidatingPolicies".into(),
        ))),
    }
}

/// The policy's `validationActions`, `Deny` when it names none (kyverno/api
/// api/policies.kyverno.io/v1beta1/imagevalidating_policy.go
/// `ImageValidatingPolicySpec.ValidationActions`).
fn validation_actions(policy: &Value) -> Vec<&str> {
    let named: Vec<&str> = policy
        .pointer("/spec/validationActions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if named.is_empty() {
        vec!["Deny"]
    } else {
        named
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(extra: Value) -> Value {
        let mut p = json!({"apiVersion": "policies.kyverno.io/v1beta1",
            "kind": "ImageValidatingPolicy", "metadata": {"name": "iv"},
            "spec": {"validationActions": ["Deny"],
                "matchConstraints": {"resourceRules": [{"apiGroups": [""],
                    "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]},
                "matchImageReferences": [{"glob": "ghcr.io/*"}],
                "attestors": [{"name": "notary", "notary": {"certs": {"value": "x"}}}],
                "validations": [{"expression":
                    "images.containers.map(i, verifyImageSignatures(i, [attestors.notary])).all(e, e > 0)",
                    "message": "unsigned"},
                    {"expression": "object.metadata.name != 'bad'", "message": "bad name"}]}});
        if let (Some(spec), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        p
    }

    fn pod(name: &str, image: &str) -> VapRequest {
        VapRequest {
            operation: "CREATE".into(),
            object: json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": image}]}}),
            ..Default::default()
        }
    }

    fn decide(objects: &[Value], req: &VapRequest) -> Option<Result<String, Skip>> {
        admission(objects, objects, req, Features::default())
    }

    #[test]
    fn a_selected_image_needs_the_registry() {
        let r = decide(&[policy(json!({}))], &pod("ok", "ghcr.io/a:1"));
        assert!(matches!(r, Some(Err(Skip::Registry(_)))), "{r:?}");
    }

    #[test]
    fn without_a_selected_image_the_validations_decide() {
        let p = policy(json!({}));
        assert_eq!(
            decide(std::slice::from_ref(&p), &pod("ok", "docker.io/a:1")),
            None
        );
        assert_eq!(
            decide(&[p], &pod("bad", "docker.io/a:1")),
            Some(Ok(
                "admission webhook \"ivpol.validate.kyverno.svc-fail\" denied the request: \
                 Policy iv failed: bad name"
                    .into()
            ))
        );
    }

    /// A policy that named no `validationActions` let its failures through; the API
    /// defaults them to `Deny`.
    #[test]
    fn a_policy_without_validation_actions_denies() {
        let mut p = policy(json!({}));
        p["spec"]
            .as_object_mut()
            .map(|s| s.remove("validationActions"));
        let r = decide(&[p], &pod("bad", "docker.io/a:1"));
        assert!(
            matches!(&r, Some(Ok(m)) if m.ends_with("Policy iv failed: bad name")),
            "{r:?}"
        );
    }

    #[test]
    fn an_exception_or_a_false_condition_leaves_the_policy_out() {
        let p = policy(json!({"matchConditions": [{"name": "prod",
            "expression": "has(object.metadata.labels)"}]}));
        assert_eq!(
            decide(std::slice::from_ref(&p), &pod("x", "ghcr.io/a:1")),
            None
        );
        let p = policy(json!({}));
        let e = json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "PolicyException",
            "metadata": {"name": "e"},
            "spec": {"policyRefs": [{"name": "iv", "kind": "ImageValidatingPolicy"}],
                "matchConditions": [{"name": "n", "expression": "object.metadata.name == 'skipped'"}]}});
        let objects = [p, e];
        assert_eq!(decide(&objects, &pod("skipped", "ghcr.io/a:1")), None);
        assert!(matches!(
            decide(&objects, &pod("other", "ghcr.io/a:1")),
            Some(Err(Skip::Registry(_)))
        ));
        // Exceptions disabled: not read.
        assert!(matches!(
            admission(
                &objects,
                &[],
                &pod("skipped", "ghcr.io/a:1"),
                Features::default()
            ),
            Some(Err(Skip::Registry(_)))
        ));
    }

    #[test]
    fn an_undigested_image_fails_before_any_fetch_when_digests_are_not_pinned() {
        let p = policy(json!({"validationConfigurations": {"mutateDigest": false},
            "webhookConfiguration": {"timeoutSeconds": 20}}));
        assert_eq!(
            decide(std::slice::from_ref(&p), &pod("x", "ghcr.io/a:1")),
            Some(Ok(
                "admission webhook \"ivpol.validate.kyverno.svc-fail-finegrained-iv\" \
                 denied the request: Policy iv failed: image ghcr.io/a:1 does not have a digest"
                    .into()
            ))
        );
        let digested = pod("x", "ghcr.io/a@sha256:0123");
        assert!(matches!(
            decide(&[p], &digested),
            Some(Err(Skip::Registry(_)))
        ));
    }

    #[test]
    fn image_data_read_in_a_variable_is_the_registry_s() {
        let p = policy(json!({"variables": [{"name": "m",
            "expression": "image.GetMetadata('ghcr.io/a:1')"}],
            "validations": [{"expression": "variables.m != null"}]}));
        let r = decide(&[p], &pod("ok", "docker.io/a:1"));
        assert!(
            matches!(&r, Some(Err(Skip::Registry(why))) if why.contains("image data")),
            "{r:?}"
        );
    }
}
