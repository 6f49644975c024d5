//! A MutatingPolicy's `targetMatchConstraints.expression` in the background: on a
//! trigger the policy matches, the expression names the objects to mutate; each is
//! routed through the target rules' (sub)resource, checked against those rules and
//! `targetMatchConditions`, then mutated (Kyverno pkg/background/mpol/processor.go
//! `getTargetsFromExpression`, `resolveTargetRoute`;
//! pkg/cel/policies/mpol/compiler/policy.go `EvaluateTargetExpression`, `EvaluateTarget`).
//! `request.*` on a target describe the trigger's admission request, as Kyverno keeps
//! it there (processor.go `Process`: the UpdateRequest's admission request).

use super::cel_policy::{mutations, prepare, prepare_matched};
use super::*;

/// The targets `policy` mutates, each as it becomes (those its mutations leave as
/// they were included). With a `trigger`, the policy must match it and an expression
/// names the targets (each then seen with the trigger's namespace); without an
/// expression, or without a trigger (the scan when the policy is created), the targets
/// are the `candidates` the target rules select.
pub fn mutate_targets(
    policy: &Value,
    trigger: Option<&VapRequest>,
    candidates: Vec<VapRequest>,
) -> CelPolicyOutcome<Vec<Value>> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let expression = spec
        .pointer("/targetMatchConstraints/expression")
        .and_then(Value::as_str)
        .filter(|e| !e.is_empty());
    let targets = match trigger {
        Some(req) => {
            // On a DELETE the trigger's old object is the attributes' object the match
            // conditions and the expression see (processor.go `getTargetsFromExpression`
            // reads `OldObject` then).
            let deleted;
            let req = if req.operation == "DELETE" && req.object.is_null() {
                deleted = VapRequest {
                    object: req.old_object.clone(),
                    ..req.clone()
                };
                &deleted
            } else {
                req
            };
            let ctx = match prepare(policy, "NamespacedMutatingPolicy", req) {
                Ok(ctx) => ctx,
                Err(outcome) => return outcome,
            };
            match expression {
                Some(expr) => {
                    let found = match eval(&ctx, expr).map(|v| from_cel(&v)) {
                        Ok(Ok(v)) => v,
                        Ok(Err(e)) => {
                            return CelPolicyOutcome::Error(format!("targetMatchConstraints: {e}"));
                        }
                        Err(e) => {
                            return CelPolicyOutcome::from_error(
                                e.within("targetMatchConstraints"),
                            );
                        }
                    };
                    let objects = match found.get("items").and_then(Value::as_array) {
                        Some(items) => items.clone(),
                        None if found.is_object() && found.get("kind").is_some() => vec![found],
                        None => Vec::new(),
                    };
                    objects
                        .into_iter()
                        .map(|o| VapRequest {
                            object: o,
                            ..req.clone()
                        })
                        .collect()
                }
                None => candidates,
            }
        }
        None if expression.is_some() => return CelPolicyOutcome::NotMatched,
        None => candidates,
    };
    let mut constraints = spec
        .get("targetMatchConstraints")
        .cloned()
        .unwrap_or(json!({}));
    if let Some(m) = constraints.as_object_mut() {
        m.remove("expression");
    }
    let mut runnable = policy.clone();
    runnable["spec"]["matchConstraints"] = constraints.clone();
    runnable["spec"]["matchConditions"] = spec
        .get("targetMatchConditions")
        .cloned()
        .unwrap_or(json!([]));
    // The target runs as written: no pod-controller copies.
    runnable["spec"]["autogen"] = json!({"podControllers": {"controllers": []}});
    // Objects an expression names are not matched against any constraints: the
    // background controller's engine has no matcher (cmd/background-controller/main.go
    // passes nil to mpolengine.NewEngine; engine.go `handlePolicy` matches only with
    // one), so only `targetMatchConditions` select among them. The candidates of a scan
    // are what the target rules list (processor.go `collectGVK`).
    let by_expression = trigger.is_some() && expression.is_some();
    let mut out = Vec::new();
    let trigger = trigger.map(|t| std::sync::Arc::new(t.clone()));
    for mut treq in targets {
        treq.trigger = trigger.clone();
        treq.operation = "UPDATE".into();
        treq.old_object = treq.object.clone();
        treq.sub_resource = route(&constraints, &treq.object);
        let outcome =
            match prepare_matched(&runnable, "NamespacedMutatingPolicy", &treq, !by_expression) {
                Ok(ctx) => mutations(&runnable, &treq, ctx),
                Err(outcome) => outcome,
            };
        match outcome {
            CelPolicyOutcome::Applied(o) => out.push(o),
            CelPolicyOutcome::NotMatched => {}
            CelPolicyOutcome::Error(e) => return CelPolicyOutcome::Error(e),
            CelPolicyOutcome::Unsupported { message, why } => {
                return CelPolicyOutcome::Unsupported { message, why };
            }
        }
    }
    CelPolicyOutcome::Applied(out)
}

/// The subresource a target is updated through: the first target rule naming one of
/// the target's resource (`pods/resize`), else none.
fn route(constraints: &Value, target: &Value) -> String {
    let (_, _, plural) = resource_of(target);
    list(constraints, "resourceRules")
        .flat_map(|r| list(r, "resources"))
        .filter_map(Value::as_str)
        .filter_map(|r| r.split_once('/'))
        .find(|(parent, sub)| *parent == plural && *sub != "*")
        .map(|(_, sub)| sub.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A target is `object`; `request` is the trigger's admission request
    /// (pkg/background/mpol/processor.go `Process`).
    #[test]
    fn a_target_sees_its_triggers_request() {
        let policy = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy",
            "metadata": {"name": "bind"},
            "spec": {"evaluation": {"mutateExisting": {"enabled": true}},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["serviceaccounts"]}]},
                "targetMatchConstraints": {"resourceRules": [{"apiGroups": ["rbac.authorization.k8s.io"],
                    "apiVersions": ["v1"], "resources": ["clusterrolebindings"]}]},
                "variables": [{"name": "sa", "expression": "request.object.metadata.name"},
                    {"name": "ns", "expression": "request.object.metadata.namespace"}],
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression":
                    "[JSONPatch{op: 'add', path: '/subjects/-', value: dyn({'kind': 'ServiceAccount', 'name': variables.sa, 'namespace': variables.ns})}]"}}]}});
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "robot", "namespace": "team"}});
        let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "crb"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole", "name": "view"}, "subjects": []});
        let trigger = VapRequest {
            operation: "CREATE".into(),
            object: sa,
            ..Default::default()
        };
        let target = VapRequest {
            object: crb,
            ..Default::default()
        };
        let CelPolicyOutcome::Applied(out) = mutate_targets(&policy, Some(&trigger), vec![target])
        else {
            panic!("expected the target mutated")
        };
        assert_eq!(
            out[0]["subjects"],
            json!([{"kind": "ServiceAccount", "name": "robot", "namespace": "team"}])
        );
    }

    /// Objects an expression names are mutated whatever the constraints say (the
    /// background engine has no matcher); `targetMatchConditions` still select, and on a
    /// DELETE the expression sees the deleted trigger as `object`.
    #[test]
    fn objects_an_expression_names_skip_the_constraints_but_not_the_conditions() {
        let policy = |operation: &str, condition: &str| {
            json!({"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy",
            "metadata": {"name": "by-expression"},
            "spec": {"evaluation": {"mutateExisting": {"enabled": true}},
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": [operation], "resources": ["secrets"]}]},
                "targetMatchConstraints": {"expression":
                    "{'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'settings', 'namespace': object.metadata.namespace}}"},
                "targetMatchConditions": [{"name": "c", "expression": condition}],
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression":
                    "Object{metadata: Object.metadata{labels: Object.metadata.labels{seen: 'yes'}}}"}}]}})
        };
        let secret = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "team"}});
        let created = VapRequest {
            operation: "CREATE".into(),
            object: secret.clone(),
            ..Default::default()
        };
        let deleted = VapRequest {
            operation: "DELETE".into(),
            old_object: secret,
            ..Default::default()
        };
        for (op, trigger) in [("CREATE", &created), ("DELETE", &deleted)] {
            let CelPolicyOutcome::Applied(out) =
                mutate_targets(&policy(op, "true"), Some(trigger), Vec::new())
            else {
                panic!("{op}: expected the named object mutated")
            };
            assert_eq!(out.len(), 1, "{op}: {out:?}");
            assert_eq!(out[0]["metadata"]["namespace"], "team", "{op}");
            assert_eq!(out[0]["metadata"]["labels"]["seen"], "yes", "{op}");
            let CelPolicyOutcome::Applied(out) = mutate_targets(
                &policy(op, "object.metadata.name != 'settings'"),
                Some(trigger),
                Vec::new(),
            ) else {
                panic!("{op}: expected nothing mutated")
            };
            assert!(out.is_empty(), "{op}: {out:?}");
        }
    }
}
