//! The status Kyverno's controllers give a policy they accepted; the `*-policy-ready`
//! step templates assert it. For the CEL kinds, `RBACPermissionsGranted` is the
//! policy status controller's check that the reports controller's service account may
//! get, list and watch every (group, version, resource) of `matchConstraints`, unless
//! background processing is off (pkg/controllers/policystatus/controller.go
//! `reconcileRBACPermissionsCondition`, `permissionsCheck`).

use serde_json::{Value, json};

use super::{Cluster, text};
use crate::offline::rbac::{AccessRequest, impersonated};

const REPORTS_SA: &str = "system:serviceaccount:kyverno:kyverno-reports-controller";

impl Cluster {
    /// Sets the status the controllers set on an accepted policy.
    pub(super) fn ready_status(&self, obj: &mut Value) {
        let kind = text(obj, "/kind");
        let status = match kind.as_str() {
            "ClusterPolicy" | "Policy" => json!({"ready": true, "conditions": [
                {"type": "Ready", "status": "True", "reason": "Succeeded", "message": "Ready"}]}),
            k if super::super::is_policy_kind(k) => {
                let (granted, message) = self.reporting_permissions(obj);
                let rbac = json!({"type": "RBACPermissionsGranted",
                    "status": if granted { "True" } else { "False" },
                    "reason": if granted { "Succeeded" } else { "Failed" },
                    "message": message});
                json!({"conditionStatus": {"ready": granted, "conditions": [
                    {"type": "WebhookConfigured", "status": "True", "reason": "Succeeded",
                     "message": "Webhook configured."},
                    rbac]}})
            }
            _ => return,
        };
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), status);
        }
    }

    /// Whether the reports controller may read what the policy matches, and the
    /// condition's message.
    fn reporting_permissions(&self, policy: &Value) -> (bool, String) {
        let background = policy
            .pointer("/spec/evaluation/background/enabled")
            .and_then(Value::as_bool)
            .unwrap_or(true);
        let has_toggle = !matches!(
            text(policy, "/kind").as_str(),
            "GeneratingPolicy" | "NamespacedGeneratingPolicy"
        );
        if has_toggle && !background {
            return (
                true,
                "Background scanning disabled; reporting permissions not required.".into(),
            );
        }
        let authorizer = self.kyverno_authorizer();
        let (user, groups) = impersonated(REPORTS_SA, &[]);
        let rules = policy
            .pointer("/spec/matchConstraints/resourceRules")
            .and_then(Value::as_array);
        let names = |r: &'_ Value, k: &str| -> Vec<String> {
            let items = r.get(k).and_then(Value::as_array).into_iter().flatten();
            items.filter_map(Value::as_str).map(str::to_owned).collect()
        };
        let mut missing = Vec::new();
        for r in rules.into_iter().flatten() {
            for g in names(r, "apiGroups") {
                for v in names(r, "apiVersions") {
                    for res in names(r, "resources") {
                        let (resource, sub) = res.split_once('/').unwrap_or((&res, ""));
                        for verb in ["get", "list", "watch"] {
                            let decision = authorizer.authorize(&AccessRequest {
                                user: user.clone(),
                                groups: groups.clone(),
                                verb: verb.into(),
                                api_group: g.clone(),
                                resource: resource.into(),
                                subresource: sub.into(),
                                ..AccessRequest::default()
                            });
                            if !decision.allowed {
                                // metav1.GroupVersionResource's String(); the
                                // authorizer's reason is empty for RBAC's no-opinion.
                                missing.push(format!("{verb} {g}/{v}, Resource={res}: "));
                            }
                        }
                    }
                }
            }
        }
        if missing.is_empty() {
            (true, "Policy is ready for reporting.".into())
        } else {
            (
                false,
                format!(
                    "Policy is not ready for reporting, missing permissions: {}.",
                    missing.join("; ")
                ),
            )
        }
    }
}
