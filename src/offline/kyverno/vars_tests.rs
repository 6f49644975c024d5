//! Unit tests of `offline/kyverno/vars.rs`.

use super::*;
use crate::offline::kyverno::Request;
use serde_json::json;

fn ctx(obj: Value) -> Context {
    Context::from_request(&Request {
        object: obj,
        ..Request::default()
    })
}

#[test]
fn whole_string_variable_keeps_type() {
    let c = ctx(json!({"spec": {"replicas": 3}}));
    assert_eq!(
        substitute(&json!("{{request.object.spec.replicas}}"), &c).unwrap(),
        json!(3)
    );
    assert_eq!(
        substitute(&json!("n={{ request.object.spec.replicas }}"), &c).unwrap(),
        json!("n=3")
    );
}

#[test]
fn missing_key_is_not_resolved_but_lenient_is_empty() {
    let c = ctx(json!({"metadata": {}}));
    assert!(substitute(&json!("{{request.object.metadata.labels.app}}"), &c).is_err());
    assert_eq!(
        substitute_lenient(&json!("{{request.object.metadata.labels.app}}"), &c).unwrap(),
        json!("")
    );
    assert_eq!(
        substitute(&json!("{{request.object.metadata.labels.app || 'x'}}"), &c).unwrap(),
        json!("x")
    );
    // A missing last key is simply null.
    assert_eq!(
        substitute(&json!("{{request.object.metadata.name}}"), &c).unwrap(),
        Value::Null
    );
}

#[test]
fn nested_variables_resolve_inside_out() {
    let mut c = ctx(json!({"metadata": {"name": "a"}}));
    c.add_variable("key", json!("name"));
    assert_eq!(
        substitute(&json!("{{ request.object.metadata.{{key}} }}"), &c).unwrap(),
        json!("a")
    );
}

#[test]
fn escaped_variable_stays_literal() {
    let c = ctx(json!({}));
    assert_eq!(
        substitute(&json!("\\{{ x }}"), &c).unwrap(),
        json!("{{ x }}")
    );
}

#[test]
fn custom_functions_work() {
    let c = ctx(json!({"a": "Hello", "img": "nginx:1.2"}));
    let q = |e: &str| query(e, &c).unwrap();
    assert_eq!(q("to_upper(request.object.a)"), json!("HELLO"));
    assert_eq!(q("split(request.object.img, ':')[1]"), json!("1.2"));
    assert_eq!(q("add('1Gi', '512Mi')"), json!("1536Mi"));
    assert_eq!(q("divide('1Gi', '512Mi')"), json!(2));
    assert_eq!(
        q("base64_decode(base64_encode('hi there'))"),
        json!("hi there")
    );
    assert_eq!(q("regex_match('^nginx', request.object.img)"), json!(true));
    assert_eq!(q("pattern_match('ng*', 'nginx')"), json!(true));
    assert_eq!(q("items(`{\"b\":1,\"a\":2}`, 'k', 'v')[0].k"), json!("a"));
    assert_eq!(q("semver_compare('1.2.3', '>=1.2.0')"), json!(true));
    // A pre-release orders before its release (the hand-written parser dropped it).
    assert_eq!(q("semver_compare('1.2.0-rc.1', '<1.2.0')"), json!(true));
    assert_eq!(q("semver_compare('1.2.0-rc.1', '=1.2.0')"), json!(false));
    assert_eq!(q("base64_decode('aGk')"), json!("hi"));
    assert_eq!(q("path_canonicalize('/a/../b//c')"), json!("/b/c"));
    assert_eq!(q("add(`1`, `2`)"), json!(3));
    assert_eq!(q("{\n a: `1`\n b: `2`\n}.b"), json!(2));
    assert_eq!(
        q("time_parse('2006-01-02', '2024-03-05')"),
        json!("2024-03-05T00:00:00Z")
    );
    assert_eq!(
        q("time_truncate('2024-03-05T10:47:12Z', '1h')"),
        json!("2024-03-05T10:00:00Z")
    );
    assert_eq!(
        q("time_to_cron('2024-03-05T10:47:12Z')"),
        json!("47 10 5 3 2")
    );
}

#[test]
fn time_add_past_the_calendar_is_an_error_not_a_panic() {
    // Adding 99,999,999,999,999 h overflowed chrono's `DateTime + TimeDelta` (exit 101).
    let c = ctx(json!({}));
    let t = "'2020-01-01T00:00:00Z'";
    for d in ["'99999999999999h'", "'-99999999999999h'", "'1e300h'"] {
        let err = query(&format!("time_add({t}, {d})"), &c).map(|v| v.to_string());
        assert!(err.is_err(), "{d}: {err:?}");
    }
    assert_eq!(
        query(&format!("time_add({t}, '1h')"), &c).unwrap(),
        json!("2020-01-01T01:00:00Z")
    );
}

/// `{{@}}` in a patch is the current value at the same place in the object (it was
/// `null`), under `target` for a mutate-existing target.
#[test]
fn at_in_a_patch_is_the_current_value_there() {
    let c = ctx(
        json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "tier": "a"}},
        "spec": {"containers": [{"image": "nginx"}]}}),
    );
    let patch = json!({"metadata": {"labels": {"app.kubernetes.io/name": "{{@}}-x", "tier": "{{ @ }}"}},
        "spec": {"containers": [{"image": "{{@}}"}]}});
    let resolved = resolve_current_value(&patch, &c);
    assert_eq!(
        substitute(&resolved, &c).unwrap(),
        json!({"metadata": {"labels": {"app.kubernetes.io/name": "web-x", "tier": "a"}},
            "spec": {"containers": [{"image": "nginx"}]}})
    );
    let mut t = ctx(json!({}));
    t.add_variable("target", json!({"data": {"k": "v"}}));
    let resolved = resolve_current_value(&json!({"data": {"k": "{{@}}!"}}), &t);
    assert_eq!(
        substitute(&resolved, &t).unwrap(),
        json!({"data": {"k": "v!"}})
    );
}

#[test]
fn a_resolving_failure_names_its_path_as_kyverno_walks_it() {
    let mut c = ctx(json!({}));
    c.defer(
        "broken",
        Box::new(|_| Err(crate::offline::kyverno::Outcome::error("it broke"))),
    );
    let doc = json!({"a/b~c": [{"k": "x"}, {"k": "{{ broken }}"}]});
    let err = substitute(&doc, &c).expect_err("the entry fails to load");
    assert_eq!(
        err.kyverno_text().as_deref(),
        Some("failed to resolve broken at path /a\\/b~c/1/k: it broke")
    );
    assert!(matches!(err.root(), VarError::Load(_)));
}
