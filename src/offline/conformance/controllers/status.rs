//! The status Kyverno's controllers give a policy, and the API server a
//! CustomResourceDefinition, computed from the object:
//! - ClusterPolicy/Policy (pkg/controllers/webhook/controller.go `updatePolicyStatuses`):
//!   ready, the Ready condition, `autogen.rules` (the rules autogen adds, `autogen-…`);
//!   the admission-policy generator adds `validatingadmissionpolicy` (generated, message);
//! - the policies.kyverno.io kinds (pkg/controllers/policystatus `reconcileConditions`,
//!   `reconcileBeta1Conditions`): `WebhookConfigured` unless the policy runs in the
//!   background only, `RBACPermissionsGranted` (its message says when background scans are
//!   off; the chart's reports controller may read every resource), ready when all hold,
//!   `generated` from the admission-policy generator, and the autogen configs of the
//!   (image) validating kinds (an image policy's of its CRD-defaulted spec);
//! - a CRD (the API server's naming controller): accepted names, `NamesAccepted` and
//!   `Established`, stored versions.
//!
//! Which parts of an asserted status this models is [`modelled`]'s answer; the rest stays a
//! controller skip.

use serde_json::{Value, json};

use super::super::cluster::text;
use crate::offline::kyverno::autogen;
use crate::offline::rbac::resource::Mapper;
use crate::offline::rbac::{AccessRequest, Authorizer};
use crate::offline::vap;

/// Whether a ValidatingPolicy/MutatingPolicy gets Pod-controller autogen copies
/// (`status.autogen.configs` not empty).
pub fn has_autogen(policy: &Value) -> bool {
    !vap::autogen_kinds(policy).is_empty()
}

fn flag(policy: &Value, pointer: &str) -> bool {
    policy
        .pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// The status of `obj` as its controller sets it; `generation` is the admission-policy
/// generator's verdict for it (generated, message), when it has one; `reports` what the
/// reports controller may do (for the RBAC condition).
pub fn status(
    obj: &Value,
    generation: Option<(bool, String)>,
    reports: &Authorizer,
) -> Option<Value> {
    let kind = text(obj, "/kind");
    match kind.as_str() {
        "ClusterPolicy" | "Policy" => {
            let mut stored = obj.clone();
            crd_defaults(&mut stored);
            let expanded = autogen::expand(&stored);
            let rules: Vec<Value> = expanded
                .pointer("/spec/rules")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| text(r, "/name").starts_with("autogen-"))
                .cloned()
                .collect();
            let mut autogen = json!({});
            if !rules.is_empty() {
                autogen["rules"] = Value::Array(rules);
            }
            let mut s = json!({"ready": true, "conditions": [
                {"type": "Ready", "status": "True", "reason": "Succeeded", "message": "Ready"}],
                "autogen": autogen});
            if kind == "ClusterPolicy" {
                let (generated, message) = generation.unwrap_or_default();
                s["validatingadmissionpolicy"] =
                    json!({"generated": generated, "message": message});
            }
            Some(s)
        }
        // The policies.kyverno.io kinds.
        k if super::super::is_policy_kind(k) => {
            let admission = flag(obj, "/spec/evaluation/admission/enabled");
            // GeneratingPolicies have no background switch; they are checked as on.
            let background =
                kind.contains("Generating") || flag(obj, "/spec/evaluation/background/enabled");
            let background_only = if kind.contains("Mutating") {
                !admission
            } else if kind.contains("Generating") {
                false
            } else {
                !admission && background
            };
            let mut conditions = Vec::new();
            if !background_only {
                conditions.push(condition("WebhookConfigured", "Webhook configured."));
            }
            conditions.push(if !background {
                condition(
                    "RBACPermissionsGranted",
                    "Background scanning disabled; reporting permissions not required.",
                )
            } else {
                let missing = missing_permissions(obj, reports);
                if missing.is_empty() {
                    condition("RBACPermissionsGranted", "Policy is ready for reporting.")
                } else {
                    json!({"type": "RBACPermissionsGranted", "status": "False", "reason": "Failed",
                        "message": format!("Policy is not ready for reporting, missing permissions: {}.",
                            missing.join("; "))})
                }
            });
            let ready = conditions.iter().all(|c| text(c, "/status") == "True");
            let (generated, message) = generation.unwrap_or_default();
            // `ConditionStatus.Message` has no `omitempty` (kyverno/api
            // api/policies.kyverno.io/v1beta1/conditions.go): stored as "" when empty.
            let cs = json!({"ready": ready, "conditions": conditions, "message": message});
            let mut s = json!({"conditionStatus": cs, "autogen": {}});
            if kind.contains("ImageValidatingPolicy") {
                // pkg/controllers/policystatus/ivpol.go, nivpol.go: the copies of the
                // stored (CRD-defaulted) policy, made as a ValidatingPolicy's are
                // (pkg/cel/policies/ivpol/autogen).
                let mut stored = obj.clone();
                image_crd_defaults(&mut stored);
                s["autogen"] = validating_autogen(&stored);
            } else if kind.contains("ValidatingPolicy") {
                s["autogen"] = validating_autogen(obj);
            }
            if matches!(kind.as_str(), "ValidatingPolicy" | "MutatingPolicy") {
                s["generated"] = json!(generated);
            }
            Some(s)
        }
        "CustomResourceDefinition" => Some(crd_status(obj)),
        _ => None,
    }
}

/// The reports controller's ServiceAccount.
const REPORTS_CONTROLLER: &str = "system:serviceaccount:kyverno:kyverno-reports-controller";

/// `permissionsCheck` over `resolveGVRs` of the policy's match constraints: each
/// group × version × resource and verb (get, list, watch) the reports controller may not
/// use, as `verb group/version, Resource=resource: reason` (a denial's reason is empty).
fn missing_permissions(policy: &Value, reports: &Authorizer) -> Vec<String> {
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    let strs = |r: &Value, k: &str| -> Vec<String> {
        r.get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let mut out = Vec::new();
    for rule in rules.into_iter().flatten() {
        for g in strs(rule, "apiGroups") {
            for v in strs(rule, "apiVersions") {
                for r in strs(rule, "resources") {
                    for verb in ["get", "list", "watch"] {
                        let (resource, sub) = match r.split_once('/') {
                            Some((r, s)) => (r.to_string(), s.to_string()),
                            None => (r.clone(), String::new()),
                        };
                        let req = AccessRequest {
                            user: REPORTS_CONTROLLER.into(),
                            groups: vec![
                                "system:serviceaccounts".into(),
                                "system:serviceaccounts:kyverno".into(),
                                "system:authenticated".into(),
                            ],
                            verb: verb.into(),
                            api_group: g.clone(),
                            resource,
                            subresource: sub,
                            namespace: String::new(),
                            name: String::new(),
                            non_resource_path: None,
                        };
                        if !reports.authorize(&req).allowed {
                            out.push(format!("{verb} {g}/{v}, Resource={r}: "));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The defaults Kyverno's CRDs give a ClusterPolicy's or Policy's rules
/// (api/kyverno/v1 `+kubebuilder:default=true` on `Rule.SkipBackgroundRequests` and
/// `Validation.AllowExistingViolations`), which the API server writes into the stored
/// object and autogen copies (kept out of the replay's stored spec, where the policy
/// webhook compares rules as written).
fn crd_defaults(obj: &mut Value) {
    if !matches!(text(obj, "/kind").as_str(), "ClusterPolicy" | "Policy")
        || !text(obj, "/apiVersion").starts_with("kyverno.io/")
    {
        return;
    }
    let Some(rules) = obj.pointer_mut("/spec/rules").and_then(Value::as_array_mut) else {
        return;
    };
    for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
        rule.entry("skipBackgroundRequests").or_insert(json!(true));
        if let Some(v) = rule.get_mut("validate").and_then(Value::as_object_mut) {
            v.entry("allowExistingViolations").or_insert(json!(true));
        }
    }
}

/// The defaults the (Namespaced)ImageValidatingPolicy CRD gives a stored policy
/// (config/crds/policies.kyverno.io/policies.kyverno.io_imagevalidatingpolicies.yaml):
/// `validationConfigurations` (itself defaulted to `{}`) pins, verifies and requires
/// unless told otherwise; a given `evaluation.admission`/`background` is enabled.
fn image_crd_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let vc = spec
        .entry("validationConfigurations")
        .or_insert_with(|| json!({}));
    if let Some(vc) = vc.as_object_mut() {
        for k in ["mutateDigest", "required", "verifyDigest"] {
            vc.entry(k).or_insert(json!(true));
        }
    }
    for side in ["admission", "background"] {
        if let Some(m) = spec
            .get_mut("evaluation")
            .and_then(|e| e.get_mut(side))
            .and_then(Value::as_object_mut)
        {
            m.entry("enabled").or_insert(json!(true));
        }
    }
}

/// `status.autogen` of a ValidatingPolicy (pkg/cel/policies/vpol/autogen `Autogen`):
/// one config per replacement set — `defaults` (the controllers whose Pod template is
/// `spec.template`, one resource rule per API group) and `cronjobs` — each with its
/// targets and the rewritten spec.
fn validating_autogen(policy: &Value) -> Value {
    let mapper = Mapper::built_in();
    let mut configs = serde_json::Map::new();
    for (config, cron) in [("cronjobs", true), ("defaults", false)] {
        let kinds: Vec<&str> = vap::autogen_kinds(policy)
            .into_iter()
            .filter(|k| (*k == "CronJob") == cron)
            .collect();
        let Some(mut copy) = kinds
            .first()
            .and_then(|k| vap::validating_autogen_copy(policy, k))
        else {
            continue;
        };
        let mut targets: Vec<(String, String, String)> = kinds
            .iter()
            .filter_map(|k| mapper.for_bare_kind(k))
            .map(|r| (r.group.clone(), r.plural.clone(), r.kind.clone()))
            .collect();
        targets.sort();
        let operations = copy
            .pointer("/spec/matchConstraints/resourceRules/0/operations")
            .cloned()
            .unwrap_or(json!([]));
        let mut groups: Vec<&str> = targets.iter().map(|t| t.0.as_str()).collect();
        groups.dedup();
        let rules: Vec<Value> = groups
            .iter()
            .map(|g| {
                let resources: Vec<&str> = targets
                    .iter()
                    .filter(|t| t.0 == *g)
                    .map(|t| t.1.as_str())
                    .collect();
                json!({"apiGroups": [g], "apiVersions": ["v1"], "resources": resources,
                    "operations": operations})
            })
            .collect();
        let selector = copy
            .pointer("/spec/matchConstraints/namespaceSelector")
            .cloned();
        let mut mc = json!({"resourceRules": rules});
        if let Some(sel) = selector {
            mc["namespaceSelector"] = sel;
        }
        copy["spec"]["matchConstraints"] = mc;
        let targets: Vec<Value> = targets
            .iter()
            .map(|(g, r, k)| json!({"group": g, "version": "v1", "resource": r, "kind": k}))
            .collect();
        configs.insert(
            config.into(),
            json!({"targets": targets, "spec": copy["spec"].take()}),
        );
    }
    if configs.is_empty() {
        json!({})
    } else {
        json!({ "configs": configs })
    }
}

fn condition(kind: &str, message: &str) -> Value {
    json!({"type": kind, "status": "True", "reason": "Succeeded", "message": message})
}

/// What the API server's naming and establishing controllers set on a valid CRD.
fn crd_status(crd: &Value) -> Value {
    let names = crd.pointer("/spec/names").cloned().unwrap_or(json!({}));
    let mut accepted = names.clone();
    let kind = text(&names, "/kind");
    if let Some(m) = accepted.as_object_mut() {
        m.entry("listKind")
            .or_insert_with(|| json!(format!("{kind}List")));
        m.entry("singular")
            .or_insert_with(|| json!(kind.to_lowercase()));
    }
    let stored: Vec<Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .filter_map(|v| v.get("name").cloned())
        .collect();
    json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found"},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted"}
        ],
        "storedVersions": stored,
    })
}

/// Whether the replay models every part of the `status` an assertion names for `kind`
/// (`obj` is the stored object). Not modelled: a MutatingPolicy's `autogen` configs (when it
/// has any), the full condition list of a ClusterPolicy's other conditions, anything else.
pub fn modelled(kind: &str, expected: &Value, stored: Option<&Value>) -> bool {
    let Some(status) = expected.as_object() else {
        return false;
    };
    // A (Namespaced)(Image)ValidatingPolicy's autogen configs are computed; a
    // MutatingPolicy's only when it has none.
    let cel_autogen = kind.contains("ValidatingPolicy") || stored.is_none_or(|o| !has_autogen(o));
    status.iter().all(|(k, v)| match (kind, k.as_str()) {
        ("ClusterPolicy" | "Policy", "ready" | "conditions" | "autogen") => true,
        ("ClusterPolicy", "validatingadmissionpolicy") => true,
        ("CustomResourceDefinition", "acceptedNames" | "conditions" | "storedVersions") => true,
        ("CustomResourceDefinition", k) => k.starts_with("(conditions") && k.ends_with(')'),
        (k, "conditionStatus") if super::super::is_policy_kind(k) => {
            condition_keys(v) && !stored.is_some_and(reports_subresource_access)
        }
        ("ValidatingPolicy" | "MutatingPolicy", "generated") => true,
        // Set when an `apiCall` entry was answered (cluster/gctx.rs).
        ("GlobalContextEntry", "lastRefreshTime") => {
            stored.is_some_and(|o| o.pointer("/status/lastRefreshTime").is_some())
        }
        (k, "autogen") if super::super::is_policy_kind(k) => cel_autogen,
        // Held in part: an expectation the stored Node does not meet is a skip
        // (cluster/kindstate.rs `partly_held`).
        ("Node", _) => stored.is_some(),
        _ => false,
    })
}

/// Whether the RBAC condition of `policy` turns on the reports controller's access to a
/// subresource (`pods/ephemeralcontainers`): the replay's copy of the kind cluster's
/// roles denies it where the upstream runs grant it, by a grant not yet located — so
/// that condition is left a controller skip rather than judged.
fn reports_subresource_access(policy: &Value) -> bool {
    flag(policy, "/spec/evaluation/background/enabled")
        && policy
            .pointer("/spec/matchConstraints/resourceRules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("resources").and_then(Value::as_array))
            .flatten()
            .any(|r| r.as_str().is_some_and(|r| r.contains('/')))
}

/// `ready`, `message`, `conditions`, conditions picked by type, their count.
fn condition_keys(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.keys().all(|k| {
            matches!(
                k.as_str(),
                "ready" | "conditions" | "message" | "(length(conditions))"
            ) || (k.starts_with("(conditions") && k.ends_with(')'))
        })
    })
}
