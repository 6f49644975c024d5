//! Kyverno 1.19's `DeletingPolicy`/`NamespacedDeletingPolicy` (policies.kyverno.io) on one
//! existing object, as the deleting controller's engine runs it at a tick
//! (pkg/cel/policies/dpol/engine/engine.go `Handle`, compiler/policy.go `Evaluate`): the
//! match constraints with every operation allowed, then `variables` and `conditions` on
//! the same CEL evaluator as the other policy kinds. It also holds the compile step of the
//! policy webhook for these kinds (compiler/compiler.go `Compile`), as far as the offline
//! interpreter parses CEL. It deletes nothing.

use super::*;

/// Whether the policy deletes the object `req.object` (`Applied(true)`), keeps it
/// (`Applied(false)`: a condition is false) or does not select it (`NotMatched`).
pub fn evaluate_deleting_policy(policy: &Value, req: &VapRequest) -> CelPolicyOutcome<bool> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    // engine.go `matchPolicy`: the controller is not answering a request, so the rules
    // hold for every operation.
    let mut constraints = spec.get("matchConstraints").cloned().unwrap_or(Value::Null);
    if let Some(rules) = constraints
        .get_mut("resourceRules")
        .and_then(Value::as_array_mut)
    {
        for r in rules.iter_mut().filter_map(Value::as_object_mut) {
            r.insert("operations".into(), json!(["*"]));
        }
    }
    if constraints.is_null() || !matches_resources(&constraints, req, true) {
        return CelPolicyOutcome::NotMatched;
    }
    if let Err(e) = check_spec_cost(spec) {
        return CelPolicyOutcome::Error(format!("{} {}: {e}", kind_of(policy), name_of(policy)));
    }
    let mut ctx = base_context(req, &Value::Null);
    ctx.define_variables(spec);
    // policy.go `match`: a false condition keeps the object; otherwise any error is the
    // evaluation's.
    match conditions_hold(&ctx, spec.get("conditions").unwrap_or(&Value::Null)) {
        Ok(b) => CelPolicyOutcome::Applied(b),
        Err(e) => CelPolicyOutcome::from_error(e),
    }
}

/// The expressions of a DeletingPolicy's `variables` and `conditions` the offline
/// interpreter cannot parse, with the parser's message (the first one, by its field
/// path); `None` when every one parses.
pub fn deleting_policy_unparsed(policy: &Value) -> Option<String> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    for key in ["variables", "conditions"] {
        for (i, v) in list(spec, key).enumerate() {
            let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
            if let Err(e) = compiled(expr) {
                return Some(format!("spec.{key}[{i}].expression: {}", e.message));
            }
        }
    }
    None
}

/// `compiler.ExpressionsUseHTTP` (pkg/cel/compiler/http.go) over the policy's
/// `variables` and `conditions`: an identifier `http` anywhere in a parsed expression
/// (one that does not parse is not counted).
pub fn deleting_policy_uses_http(policy: &Value) -> bool {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    ["variables", "conditions"].iter().any(|key| {
        list(spec, key).any(|v| {
            let expr = v.get("expression").and_then(Value::as_str).unwrap_or("");
            compiled(expr).is_ok_and(|c| has_ident(c.program.expression(), "http", 0))
        })
    })
}

/// Whether `name` is an identifier in `e` (to a bounded depth: deeper parts are not
/// searched, and a parse that deep is refused by the evaluator anyway).
fn has_ident(e: &cel::IdedExpr, name: &str, depth: usize) -> bool {
    use cel::common::ast::{EntryExpr, Expr};
    if depth > 256 {
        return false;
    }
    let deeper = |x: &cel::IdedExpr| has_ident(x, name, depth + 1);
    let entry = |en: &cel::common::ast::EntryExpr| match en {
        EntryExpr::MapEntry(me) => deeper(&me.key) || deeper(&me.value),
        EntryExpr::StructField(f) => deeper(&f.value),
    };
    match &e.expr {
        Expr::Ident(n) => n == name,
        Expr::Select(s) => deeper(&s.operand),
        Expr::Call(c) => c.target.as_deref().is_some_and(&deeper) || c.args.iter().any(&deeper),
        Expr::List(l) => l.elements.iter().any(&deeper),
        Expr::Map(m) => m.entries.iter().any(|en| entry(&en.expr)),
        Expr::Struct(st) => st.entries.iter().any(|en| entry(&en.expr)),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(&deeper),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ns: &str, name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    }

    fn policy(conditions: Value) -> Value {
        json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": "DeletingPolicy",
            "metadata": {"name": "p"},
            "spec": {"schedule": "*/1 * * * *", "conditions": conditions,
                "matchConstraints": {"resourceRules": [{"apiGroups": [""],
                    "apiVersions": ["v1"], "resources": ["pods"]}]}}})
    }

    fn req(obj: Value, ns_labels: Value) -> VapRequest {
        let ns = obj["metadata"]["namespace"].clone();
        VapRequest {
            operation: "CREATE".into(),
            object: obj,
            namespace_object: json!({"metadata": {"name": ns, "labels": ns_labels}}),
            ..Default::default()
        }
    }

    #[test]
    fn conditions_on_object_and_namespace_object_select_what_is_deleted() {
        let p = policy(json!([
            {"name": "a", "expression": "object.metadata.name == 'example'"},
            {"name": "b", "expression": "namespaceObject.metadata.labels.env == 'test'"}
        ]));
        let hit = evaluate_deleting_policy(&p, &req(pod("t", "example"), json!({"env": "test"})));
        assert_eq!(hit, CelPolicyOutcome::Applied(true));
        let other = evaluate_deleting_policy(&p, &req(pod("t", "other"), json!({"env": "test"})));
        assert_eq!(other, CelPolicyOutcome::Applied(false));
        let ns = evaluate_deleting_policy(&p, &req(pod("t", "example"), json!({"env": "prod"})));
        assert_eq!(ns, CelPolicyOutcome::Applied(false));
    }

    #[test]
    fn a_rule_without_operations_still_selects_at_a_tick() {
        let p = policy(json!([]));
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"}});
        assert_eq!(
            evaluate_deleting_policy(&p, &req(pod("default", "x"), json!({}))),
            CelPolicyOutcome::Applied(true)
        );
        assert_eq!(
            evaluate_deleting_policy(&p, &req(cm, json!({}))),
            CelPolicyOutcome::NotMatched
        );
    }

    #[test]
    fn an_unparsable_condition_is_reported_by_its_path() {
        let p = policy(json!([{"name": "a", "expression": "object.metadata.name =="}]));
        let why = deleting_policy_unparsed(&p).unwrap_or_default();
        assert!(why.starts_with("spec.conditions[0].expression"), "{why}");
        assert_eq!(deleting_policy_unparsed(&policy(json!([]))), None);
    }

    #[test]
    fn http_counts_as_an_identifier_not_as_text() {
        let call = policy(json!([{"name": "h", "expression": "http.Get('x').ok == true"}]));
        assert!(deleting_policy_uses_http(&call));
        let text = policy(json!([{"name": "t", "expression": "object.metadata.name == 'http'"}]));
        assert!(!deleting_policy_uses_http(&text));
    }
}
