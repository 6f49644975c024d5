//! The `generator` library's overloads by policy scope. Kyverno v1.19.0 builds a
//! GeneratingPolicy's CEL environment with the policy's namespace
//! (pkg/cel/policies/gpol/compiler/compiler.go `createBaseGpolEnv`, `generator.Lib(…,
//! namespace, …)`), and the kyverno/sdk its go.mod names declares a different member
//! overload for each (extensions/cel/libs/generator/lib.go, commit 36ef997681cf:
//! `clusterEnv` has only `apply`/`Apply(namespace, objects)`, `namespacedEnv` only
//! `apply`/`Apply(objects)`, into the policy's own namespace). A call with the other
//! arity has no overload, so the expression does not compile and the policy webhook
//! refuses the policy (pkg/cel/policies/gpol/validate.go `Validate`: the compiler's
//! errors; compiler.go compiles match conditions, then variables, then generations).

use serde_json::Value;

use super::cel_env::compiled;

/// The arguments `generator.apply` takes in a policy of this scope (besides the target).
fn generator_arity(namespaced: bool) -> usize {
    if namespaced { 1 } else { 2 }
}

/// A `generator.apply`/`Apply` call with no overload in the policy's scope: the field
/// path of the first expression (in the compiler's order) and the call's name and
/// arity. `None` for other kinds, or when every call fits. An expression the offline
/// parser cannot read is not judged here (its evaluation reports it).
pub fn generator_overload_mismatch(policy: &Value) -> Option<(String, String, usize)> {
    let kind = policy.get("kind").and_then(Value::as_str).unwrap_or("");
    let namespaced = match kind {
        "GeneratingPolicy" => false,
        "NamespacedGeneratingPolicy" => true,
        _ => return None,
    };
    let want = generator_arity(namespaced);
    let spec = policy.get("spec")?;
    for key in ["matchConditions", "variables", "generate"] {
        let Some(items) = spec.get(key).and_then(Value::as_array) else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let Some(expr) = item.get("expression").and_then(Value::as_str) else {
                continue;
            };
            let Ok(c) = compiled(expr) else {
                continue;
            };
            if let Some((name, n)) = wrong_call(c.program.expression(), want, 0) {
                return Some((format!("spec.{key}[{i}].expression"), name, n));
            }
        }
    }
    None
}

/// The first `generator.apply(…)`/`generator.Apply(…)` in `e` whose argument count is not
/// `want` (to a bounded depth: deeper parts are not searched, and a parse that deep is
/// refused by the evaluator anyway).
fn wrong_call(e: &cel::IdedExpr, want: usize, depth: usize) -> Option<(String, usize)> {
    use cel::common::ast::{EntryExpr, Expr};
    if depth > 256 {
        return None;
    }
    let deeper = |x: &cel::IdedExpr| wrong_call(x, want, depth + 1);
    let entry = |en: &EntryExpr| match en {
        EntryExpr::MapEntry(me) => deeper(&me.key).or_else(|| deeper(&me.value)),
        EntryExpr::StructField(f) => deeper(&f.value),
    };
    match &e.expr {
        Expr::Call(c) => {
            let on_generator = c
                .target
                .as_deref()
                .is_some_and(|t| matches!(&t.expr, Expr::Ident(n) if n == "generator"));
            if on_generator
                && matches!(c.func_name.as_str(), "apply" | "Apply")
                && c.args.len() != want
            {
                return Some((c.func_name.clone(), c.args.len()));
            }
            c.target
                .as_deref()
                .and_then(&deeper)
                .or_else(|| c.args.iter().find_map(&deeper))
        }
        Expr::Select(s) => deeper(&s.operand),
        Expr::List(l) => l.elements.iter().find_map(&deeper),
        Expr::Map(m) => m.entries.iter().find_map(|en| entry(&en.expr)),
        Expr::Struct(st) => st.entries.iter().find_map(|en| entry(&en.expr)),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .find_map(deeper),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gpol(kind: &str, expr: &str) -> Value {
        json!({"apiVersion": "policies.kyverno.io/v1beta1", "kind": kind,
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"variables": [{"name": "cms", "expression": "[]"}],
                "generate": [{"expression": expr}]}})
    }

    #[test]
    fn a_cluster_policy_has_only_the_two_argument_apply() {
        let p = gpol("GeneratingPolicy", "generator.apply(variables.cms)");
        assert_eq!(
            generator_overload_mismatch(&p),
            Some(("spec.generate[0].expression".into(), "apply".into(), 1))
        );
        let ok = gpol("GeneratingPolicy", "generator.Apply('ns', variables.cms)");
        assert_eq!(generator_overload_mismatch(&ok), None);
    }

    #[test]
    fn a_namespaced_policy_has_only_the_one_argument_apply() {
        let p = gpol(
            "NamespacedGeneratingPolicy",
            "generator.apply('ns', variables.cms)",
        );
        assert_eq!(
            generator_overload_mismatch(&p),
            Some(("spec.generate[0].expression".into(), "apply".into(), 2))
        );
        let ok = gpol(
            "NamespacedGeneratingPolicy",
            "generator.apply(variables.cms)",
        );
        assert_eq!(generator_overload_mismatch(&ok), None);
    }

    #[test]
    fn calls_inside_macros_and_other_kinds_are_found_or_ignored() {
        let p = gpol(
            "GeneratingPolicy",
            "variables.cms.all(c, generator.apply([c]))",
        );
        assert!(generator_overload_mismatch(&p).is_some());
        let other = gpol("MutatingPolicy", "generator.apply(variables.cms)");
        assert_eq!(generator_overload_mismatch(&other), None);
        // Another receiver's `apply` is not the library's.
        let p = gpol("GeneratingPolicy", "x.apply(variables.cms) || true");
        assert_eq!(generator_overload_mismatch(&p), None);
    }
}
