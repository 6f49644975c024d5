//! Tests of `engine`: rule evaluation through `admit_with`.

use super::*;
use crate::offline::kyverno::load_policies;

fn policy(rules: Value) -> Policy {
    let raw = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "p"}, "spec": {"rules": rules}});
    load_policies(&[raw]).0.remove(0)
}

fn pod(image: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": image}]}})
}

fn status(p: &Policy, obj: Value) -> Vec<RuleStatus> {
    let req = Request {
        object: obj,
        ..Request::default()
    };
    admit_with(std::slice::from_ref(p), &req, &Options::default())
        .results
        .iter()
        .map(|r| r.status)
        .collect()
}

#[test]
fn pattern_rule_passes_and_fails() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"message": "no latest", "pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}}]),
    );
    assert_eq!(status(&p, pod("nginx:1")), vec![RuleStatus::Pass]);
    assert_eq!(status(&p, pod("nginx:latest")), vec![RuleStatus::Fail]);
}

#[test]
fn cel_rules_pass_fail_skip_and_deny() {
    let rule = |expr: &str| {
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"failureAction": "Enforce", "message": "ignored for CEL",
                "cel": {"expressions": [{"expression": expr, "message": "no latest"}]}}}])
    };
    let p = policy(rule(
        "object.spec.containers.all(c, !c.image.endsWith(':latest'))",
    ));
    assert_eq!(status(&p, pod("nginx:1")), vec![RuleStatus::Pass]);
    let req = Request {
        object: pod("nginx:latest"),
        ..Request::default()
    };
    let resp = admit_with(std::slice::from_ref(&p), &req, &Options::default());
    assert_eq!(resp.results[0].status, RuleStatus::Fail);
    assert_eq!(resp.results[0].message, "no latest");
    assert_eq!(
        super::super::denial(std::slice::from_ref(&p), &resp),
        Some(("p".into(), "r".into(), "no latest".into()))
    );
    let delete = Request {
        operation: "DELETE".into(),
        old_object: pod("nginx:latest"),
        ..Request::default()
    };
    // A DELETE is validated too: `object` is null, `oldObject` the deleted pod.
    let resp = admit_with(std::slice::from_ref(&p), &delete, &Options::default());
    assert_eq!(resp.results.len(), 1, "CEL runs on DELETE: {resp:?}");
    let p = policy(rule(
        "object == null && oldObject.spec.containers.size() == 1",
    ));
    let resp = admit_with(std::slice::from_ref(&p), &delete, &Options::default());
    assert_eq!(resp.results[0].status, RuleStatus::Pass, "{resp:?}");
    // What the interpreter cannot evaluate is a skip with a reason, never a pass.
    let p = policy(rule(
        "authorizer.group('').resource('pods').check('get').allowed()",
    ));
    let resp = admit_with(std::slice::from_ref(&p), &req, &Options::default());
    assert_eq!(resp.results[0].status, RuleStatus::Skip);
    assert!(
        resp.results[0].message.starts_with("unsupported: "),
        "{resp:?}"
    );
    assert!(resp.results[0].unsupported.is_some(), "{resp:?}");
}

#[test]
fn cel_rules_apply_to_pod_controllers_through_autogen() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"cel": {"expressions": [{"expression":
                "object.spec.containers.all(c, c.image != 'bad')", "message": "bad"}]}}}]),
    );
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "bad"}]}}}});
    let req = Request {
        object: deploy,
        ..Request::default()
    };
    let resp = admit_with(std::slice::from_ref(&p), &req, &Options::default());
    let r = resp
        .results
        .iter()
        .find(|r| r.rule == "autogen-r")
        .expect("autogen rule ran");
    assert_eq!((r.status, r.message.as_str()), (RuleStatus::Fail, "bad"));
}

#[test]
fn deny_and_preconditions() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "preconditions": {"all": [{"key": "{{request.object.metadata.labels.skip}}", "operator": "NotEquals", "value": "yes"}]},
        "validate": {"deny": {"conditions": {"any": [{"key": "{{ request.object.spec.containers[0].image }}", "operator": "Equals", "value": "*:latest"}]}}}}]),
    );
    assert_eq!(status(&p, pod("nginx:latest")), vec![RuleStatus::Fail]);
    assert_eq!(status(&p, pod("nginx:1")), vec![RuleStatus::Pass]);
    let mut skipped = pod("nginx:latest");
    skipped["metadata"]["labels"] = json!({"skip": "yes"});
    assert_eq!(status(&p, skipped), vec![RuleStatus::Skip]);
}

#[test]
fn nested_foreach_names_each_level() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"foreach": [{"list": "request.object.spec.containers",
            "foreach": [{"list": "element.ports",
                "deny": {"conditions": {"all": [
                    {"key": "{{ element0.name }}", "operator": "Equals", "value": "web"},
                    {"key": "{{ element1.containerPort }}", "operator": "LessThan", "value": 1024}]}}}]}]}}]),
    );
    let mut low = pod("nginx:1");
    low["spec"]["containers"][0]["name"] = json!("web");
    low["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80}]);
    assert_eq!(status(&p, low.clone()), vec![RuleStatus::Fail]);
    low["spec"]["containers"][0]["ports"] = json!([{"containerPort": 8080}]);
    assert_eq!(status(&p, low), vec![RuleStatus::Pass]);
}

#[test]
fn enforce_failure_denies_and_audit_does_not() {
    let rules = json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}}]);
    let mut raw = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "p"}, "spec": {"validationFailureAction": "Enforce", "rules": rules}});
    let req = Request {
        object: pod("nginx:latest"),
        ..Request::default()
    };
    let enforce = load_policies(std::slice::from_ref(&raw)).0;
    let resp = crate::offline::kyverno::admit(&enforce, &req);
    let denied = crate::offline::kyverno::denial(&enforce, &resp);
    assert_eq!(denied.map(|d| (d.0, d.1)), Some(("p".into(), "r".into())));
    raw["spec"]["validationFailureAction"] = json!("Audit");
    let audit = load_policies(&[raw]).0;
    let resp = crate::offline::kyverno::admit(&audit, &req);
    assert!(crate::offline::kyverno::denial(&audit, &resp).is_none());
}

#[test]
fn policy_exception_skips_the_named_rule() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}}]),
    );
    let ex = json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
        "metadata": {"name": "allow-x"},
        "spec": {"exceptions": [{"policyName": "p", "ruleNames": ["r"]}],
                 "match": {"any": [{"resources": {"kinds": ["Pod"], "names": ["x"]}}]}}});
    let opts = Options {
        exceptions: vec![ex],
        ..Options::default()
    };
    let req = Request {
        object: pod("nginx:latest"),
        ..Request::default()
    };
    let resp = admit_with(std::slice::from_ref(&p), &req, &opts);
    assert_eq!(resp.results[0].status, RuleStatus::Skip);
    assert!(resp.results[0].message.contains("allow-x"));
}

#[test]
fn namespace_selector_and_exclude() {
    let p = policy(json!([{"name": "r",
        "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaceSelector": {"matchLabels": {"env": "prod"}}}}]},
        "exclude": {"any": [{"resources": {"names": ["skip-*"]}}]},
        "validate": {"deny": {}}}]));
    let run = |name: &str, env: &str| {
        let mut obj = pod("nginx:1");
        obj["metadata"]["name"] = json!(name);
        let req = Request {
            object: obj,
            namespace_labels: [("env".to_string(), env.to_string())].into(),
            ..Request::default()
        };
        admit_with(std::slice::from_ref(&p), &req, &Options::default())
            .results
            .iter()
            .map(|r| r.status)
            .collect::<Vec<_>>()
    };
    assert_eq!(run("a", "prod"), vec![RuleStatus::Fail]);
    assert_eq!(run("a", "dev"), Vec::<RuleStatus>::new());
    assert_eq!(run("skip-me", "prod"), Vec::<RuleStatus>::new());
}

#[test]
fn foreach_context_reads_the_element() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"foreach": [{"list": "request.object.spec.containers",
            "context": [{"name": "tag", "variable": {"jmesPath": "split(element.image, ':')[1]"}}],
            "deny": {"conditions": {"any": [{"key": "{{ tag }}", "operator": "Equals", "value": "latest"}]}}}]}}]),
    );
    assert_eq!(status(&p, pod("nginx:latest")), vec![RuleStatus::Fail]);
    assert_eq!(status(&p, pod("nginx:1.2")), vec![RuleStatus::Pass]);
}

#[test]
fn foreach_over_containers() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"foreach": [{"list": "request.object.spec.containers",
            "deny": {"conditions": {"any": [{"key": "{{ element.image }}", "operator": "Equals", "value": "*:latest"}]}}}]}}]),
    );
    assert_eq!(status(&p, pod("nginx:latest")), vec![RuleStatus::Fail]);
    assert_eq!(status(&p, pod("nginx:2")), vec![RuleStatus::Pass]);
}

/// An Enforce rule failing an UPDATE whose old object already failed is skipped
/// (`allowExistingViolations`, true by default); `false` keeps the failure.
#[test]
fn update_keeping_an_existing_violation_is_allowed() {
    let rule = |allow: Option<bool>| {
        let mut r = json!({"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"failureAction": "Enforce",
                "pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}});
        if let Some(a) = allow {
            r["validate"]["allowExistingViolations"] = json!(a);
        }
        policy(json!([r]))
    };
    let update = |old: &str, new: &str| Request {
        operation: "UPDATE".into(),
        object: pod(new),
        old_object: pod(old),
        ..Request::default()
    };
    let run = |p: &Policy, req: &Request| {
        admit_with(std::slice::from_ref(p), req, &Options::default()).results[0].status
    };
    let p = rule(None);
    assert_eq!(run(&p, &update("a:latest", "b:latest")), RuleStatus::Skip);
    assert_eq!(run(&p, &update("a:1", "b:latest")), RuleStatus::Fail);
    let strict = rule(Some(false));
    assert_eq!(
        run(&strict, &update("a:latest", "b:latest")),
        RuleStatus::Fail
    );
}

/// A podSecurity rule with a matching PolicyException that lists controls applies
/// them; an exception without controls skips the rule.
#[test]
fn pod_security_exception_exempts_only_its_controls() {
    let p = policy(
        json!([{"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"failureAction": "Enforce", "podSecurity": {"level": "baseline", "version": "latest"}}}]),
    );
    let ex = |pss: Value| {
        json!({"apiVersion": "kyverno.io/v2", "kind": "PolicyException",
        "metadata": {"name": "e", "namespace": "x"},
        "spec": {"exceptions": [{"policyName": "p", "ruleNames": ["r"]}],
                 "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "podSecurity": pss}})
    };
    let run = |ex: Value, spec: Value| {
        let mut obj = pod("nginx:1");
        obj["spec"]
            .as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        let req = Request {
            object: obj,
            ..Request::default()
        };
        let opts = Options {
            exceptions: vec![ex],
            ..Options::default()
        };
        admit_with(std::slice::from_ref(&p), &req, &opts).results[0].status
    };
    let host_net = json!([{"controlName": "Host Namespaces", "restrictedField": "spec.hostNetwork", "values": ["true"]}]);
    assert_eq!(
        run(ex(host_net.clone()), json!({"hostNetwork": true})),
        RuleStatus::Skip
    );
    assert_eq!(
        run(ex(host_net), json!({"hostPID": true})),
        RuleStatus::Fail
    );
    assert_eq!(
        run(ex(Value::Null), json!({"hostPID": true})),
        RuleStatus::Skip
    );
}

/// Kyverno's own words for a validate rule's result, beside kca's
/// (pkg/engine/handlers/validation/validate_resource.go).
#[test]
fn results_carry_kyvernos_wording() {
    let upstream = |rules: Value, obj: Value| {
        let p = policy(rules);
        let req = Request {
            object: obj,
            ..Request::default()
        };
        admit_with(std::slice::from_ref(&p), &req, &Options::default()).results[0]
            .upstream
            .clone()
    };
    let m = json!({"any": [{"resources": {"kinds": ["Pod"]}}]});
    let pattern = json!({"spec": {"containers": [{"image": "!*:latest"}]}});
    let r = json!([{"name": "r", "match": m, "validate": {"message": "no latest", "pattern": pattern}}]);
    assert_eq!(
        upstream(r.clone(), pod("nginx:latest")).as_deref(),
        Some("validation error: no latest. rule r failed at path /spec/containers/0/image/")
    );
    assert_eq!(
        upstream(r, pod("nginx:1")).as_deref(),
        Some("validation rule 'r' passed.")
    );
    let any = json!([{"name": "r", "match": m, "validate": {"message": "pin it.",
        "anyPattern": [pattern, {"spec": {"containers": [{"image": "*@sha256:*"}]}}]}}]);
    assert_eq!(
        upstream(any, pod("nginx:latest")).as_deref(),
        Some(
            "validation error: pin it. rule r[0] failed at path /spec/containers/0/image/ rule r[1] failed at path /spec/containers/0/image/"
        )
    );
    let deny = json!([{"name": "r", "match": m, "validate": {"deny": {"conditions": {"any": [
        {"key": "{{ request.object.metadata.name }}", "operator": "Equals", "value": "x"}]}}}}]);
    assert_eq!(
        upstream(deny, pod("nginx")).as_deref(),
        Some("validation error: rule r failed")
    );
    // A context entry that fails to load, read by a deny condition's key or value: the
    // failure in Kyverno's chain of wrappers (variables/vars.go, variables/evaluate.go,
    // validate_resource.go).
    for (side, key, value) in [
        ("key", json!("{{ image }}"), json!("x")),
        ("value", json!("x"), json!(["a", "{{ image }}"])),
    ] {
        let path = if side == "key" { "" } else { "/1" };
        let broken = json!([{"name": "r", "match": m,
            "context": [{"name": "image", "variable": {"jmesPath": "{{ request.object.spec.containers }}"}}],
            "validate": {"deny": {"conditions": {"all": [
                {"key": key, "operator": "AnyNotIn", "value": value}]}}}}]);
        assert_eq!(
            upstream(broken, pod("nginx")).as_deref(),
            Some(format!(
                "failed to check deny conditions: failed to substitute variables in condition {side}: failed to resolve image at path {path}: jmespath value must be a string image {{{{ request.object.spec.containers }}}}: <nil>"
            ).as_str())
        );
    }
    let each = json!([{"name": "r", "match": m, "validate": {"message": "no latest",
        "foreach": [{"list": "request.object.spec.containers", "pattern": {"image": "!*:latest"}}]}}]);
    assert_eq!(
        upstream(each, pod("nginx:latest")).as_deref(),
        Some("validation failure: validation error: no latest. rule r failed at path /image/")
    );
}
