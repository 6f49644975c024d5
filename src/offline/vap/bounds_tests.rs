//! CEL values kca keeps shared and bounded (issue #18): variables evaluated lazily, never
//! copied to JSON, measured without walking shared parts twice, and what the interpreter
//! would copy charged against kca's budget.

use super::*;

/// A ValidatingPolicy whose variables double a list `n` times (`v_i = [v_(i-1), v_(i-1)]`)
/// and whose validation is `check`.
fn doubling_policy(n: usize, check: &str) -> Value {
    let mut vars = vec![json!({"name": "v0", "expression": "[object.metadata.name]"})];
    for i in 1..=n {
        vars.push(json!({"name": format!("v{i}"),
            "expression": format!("[variables.v{0}, variables.v{0}]", i - 1)}));
    }
    json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
        "metadata": {"name": "doubling"},
        "spec": {"validationActions": ["Deny"],
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "variables": vars,
            "validations": [{"expression": check}]}})
}

fn pod() -> VapRequest {
    VapRequest {
        operation: "CREATE".into(),
        object: json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "a"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
        ..Default::default()
    }
}

fn run(policy: &Value) -> (Applied, VapOutcome, std::time::Duration) {
    let mut out = VapOutcome::default();
    let started = std::time::Instant::now();
    let applied = evaluate_validating_policy(&[], policy, &pod(), &mut out);
    (applied, out, started.elapsed())
}

#[test]
fn doubled_list_variables_are_not_copied_to_json_and_stop_at_the_budget() {
    // Converting each variable to JSON copied the shared halves: n=16 took 348 MB, n=20
    // aborted at 3.6 GB.
    for n in [20, 40] {
        let (applied, out, took) = run(&doubling_policy(n, &format!("size(variables.v{n}) == 2")));
        // Well under a second in a release build; a debug build on a busy machine gets
        // some slack.
        assert!(took.as_secs_f64() < 2.0, "n={n} took {took:?}");
        assert_eq!(applied, Applied::Failed, "n={n}: {out:?}");
        assert!(
            out.errors[0].message.contains("kca stops it there"),
            "n={n}: {out:?}"
        );
        assert!(out.unsupported().is_none(), "n={n}: {out:?}");
    }
    // A few doublings are an ordinary value.
    let (applied, out, _) = run(&doubling_policy(
        8,
        "size(variables.v8) == 2 && variables.v8[0][1][0][0][1][0][0][1][0] == 'p'",
    ));
    assert_eq!(applied, Applied::Passed, "{out:?}");
}

#[test]
fn variables_an_expression_does_not_use_are_not_evaluated() {
    // The API server evaluates variables lazily: a doubling nobody reads costs nothing,
    // and one that fails matters only where it is used.
    let mut policy = doubling_policy(60, "object.metadata.name == 'p'");
    policy["spec"]["variables"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "broken", "expression": "object.spec.noSuchField"}));
    let (applied, out, took) = run(&policy);
    assert!(took.as_secs_f64() < 1.0, "took {took:?}");
    assert_eq!(applied, Applied::Passed, "{out:?}");
    policy["spec"]["validations"] = json!([{"expression": "variables.broken == 1"}]);
    let (applied, out, _) = run(&policy);
    assert_eq!(applied, Applied::Failed, "{out:?}");
    assert!(
        out.errors[0].message.contains("variable 'broken'"),
        "{out:?}"
    );
}

#[test]
fn shared_values_are_measured_once_per_part() {
    let mut v = cel::Value::List(Arc::new(vec![cel::Value::Int(1)]));
    for _ in 0..60 {
        v = cel::Value::List(Arc::new(vec![v.clone(), v]));
    }
    let started = std::time::Instant::now();
    let shape = cost::shape_of(&v);
    assert!(started.elapsed().as_secs_f64() < 0.1);
    assert_eq!(shape.size, 2.0);
    assert!(shape.total > 1e18, "{shape:?}");
    // Turning it into JSON would copy every part: refused before anything is copied.
    assert!(matches!(from_cel(&v), Err(NoJsonForm::TooLarge(_))));
}

/// Two lists doubled `n` times alike but apart (`v` and `w`), compared.
fn two_doublings(n: usize) -> Value {
    let mut policy = doubling_policy(n, &format!("variables.v{n} == variables.w{n}"));
    let vars = policy["spec"]["variables"].as_array_mut().unwrap();
    vars.push(json!({"name": "w0", "expression": "[object.metadata.name]"}));
    for i in 1..=n {
        vars.push(json!({"name": format!("w{i}"),
            "expression": format!("[variables.w{0}, variables.w{0}]", i - 1)}));
    }
    policy
}

#[test]
fn comparing_two_doubled_values_stays_within_the_budget() {
    // Built apart, they share nothing with each other: `==` walks both whole.
    let (applied, out, took) = run(&two_doublings(10));
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
    assert_eq!(
        applied,
        Applied::Passed,
        "1024 leaves each compare: {out:?}"
    );
    // Apart at 2^40 leaves each: refused at load by its estimated cost (the
    // comparison's walk), never made.
    let (applied, out, took) = run(&two_doublings(40));
    assert!(took.as_secs_f64() < 2.0, "took {took:?}");
    assert_ne!(applied, Applied::Passed, "{out:?}");
    assert!(
        out.errors[0]
            .message
            .contains("estimated rule cost exceeds budget"),
        "{out:?}"
    );
}

/// A policy whose variables are `defs` (name, expression) and whose validation is `check`.
fn policy_with(defs: &[(&str, &str)], check: &str) -> Value {
    let mut policy = doubling_policy(0, check);
    policy["spec"]["variables"] = defs
        .iter()
        .map(|(n, e)| json!({"name": n, "expression": e}))
        .collect();
    policy
}

#[test]
fn a_variable_reading_the_variables_map_sees_those_before_it_and_never_itself() {
    // `has(variables.x)` reads the map, not a name: it once made `b` evaluate itself
    // without end (a stack overflow, found on a MutatingPolicy's match condition).
    let p = policy_with(
        &[
            ("a", "object.metadata.name"),
            ("b", "has(variables.a) ? variables.a + '!' : 'none'"),
            ("c", "variables.b + '?'"),
        ],
        "variables.c == 'p!?' && variables.b == 'p!'",
    );
    let (applied, out, _) = run(&p);
    assert_eq!(applied, Applied::Passed, "{out:?}");
    // Reading itself or a later one through the map: not there, as the API server
    // compiles each variable with only those before it.
    for (defs, check) in [
        (vec![("a", "has(variables.a) ? 1 : 2")], "variables.a == 2"),
        (
            vec![("a", "has(variables.b) ? 1 : 2"), ("b", "3")],
            "variables.a == 2 && variables.b == 3",
        ),
        (vec![("a", "size(variables) == 0")], "variables.a"),
    ] {
        let (applied, out, _) = run(&policy_with(&defs, check));
        assert_eq!(applied, Applied::Passed, "{defs:?}: {out:?}");
    }
    // The map read after more were evaluated holds them all.
    let p = policy_with(
        &[("a", "1"), ("b", "has(variables.a)"), ("c", "2")],
        "variables.b && variables.c == 2 && size(variables) == 3",
    );
    let (applied, out, _) = run(&p);
    assert_eq!(applied, Applied::Passed, "{out:?}");
}
