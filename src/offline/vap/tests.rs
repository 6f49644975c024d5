//! Tests of the ValidatingAdmissionPolicy evaluator and Kyverno's CEL policies.

use super::*;

fn policy(spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("matchConstraints").is_none() {
        spec["matchConstraints"] = json!({"resourceRules": [{
            "apiGroups": ["apps"], "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]});
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
           "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"}, "spec": spec})
}

fn binding(spec: Value) -> Value {
    let mut spec = spec;
    spec["policyName"] = json!("p");
    if spec.get("validationActions").is_none() {
        spec["validationActions"] = json!(["Deny"]);
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
           "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"}, "spec": spec})
}

fn deploy(ns: &str, replicas: i64, labels: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "d", "namespace": ns, "labels": labels},
           "spec": {"replicas": replicas}})
}

fn create(obj: Value) -> VapRequest {
    let ns = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_string();
    VapRequest {
        operation: "CREATE".into(),
        object: obj,
        namespace_object: json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"env": ns, "kubernetes.io/metadata.name": ns}}}),
        user: VapUser {
            username: "alice".into(),
            groups: vec!["dev".into()],
            ..Default::default()
        },
        ..Default::default()
    }
}

const REPLICAS: &str = "object.spec.replicas <= 3";

/// (case, policy spec, binding spec, request, denied, message contains)
#[test]
fn table() {
    let v = |e: &str| json!({"validations": [{"expression": e}]});
    let cases: Vec<(&str, Value, Value, VapRequest, bool, &str)> = vec![
        (
            "passes",
            v(REPLICAS),
            json!({}),
            create(deploy("a", 2, json!({}))),
            false,
            "",
        ),
        (
            "fails with the default message",
            v(REPLICAS),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "failed expression: object.spec.replicas <= 3",
        ),
        (
            "message",
            json!({"validations": [{"expression": REPLICAS, "message": "too many"}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "too many",
        ),
        (
            "messageExpression wins over message",
            json!({"validations": [{"expression": REPLICAS, "message": "m",
            "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 3'"}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "replicas 5 > 3",
        ),
        (
            "a failing messageExpression falls back to message",
            json!({"validations": [{"expression": REPLICAS, "message": "m",
            "messageExpression": "object.nope"}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "m",
        ),
        (
            "operation not matched",
            v(REPLICAS),
            json!({}),
            VapRequest {
                operation: "DELETE".into(),
                ..create(deploy("a", 5, json!({})))
            },
            false,
            "",
        ),
        (
            "other resource",
            v(REPLICAS),
            json!({}),
            create(
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "a"}}),
            ),
            false,
            "",
        ),
        (
            "namespace selector out",
            v(REPLICAS),
            json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}),
            create(deploy("a", 5, json!({}))),
            false,
            "",
        ),
        (
            "namespace selector in",
            v(REPLICAS),
            json!({"matchResources": {"namespaceSelector": {"matchExpressions": [
             {"key": "env", "operator": "In", "values": ["prod", "a"]}]}}}),
            create(deploy("a", 5, json!({}))),
            true,
            "failed expression",
        ),
        (
            "object selector out",
            v(REPLICAS),
            json!({"matchResources": {"objectSelector": {"matchLabels": {"app": "x"}}}}),
            create(deploy("a", 5, json!({"app": "y"}))),
            false,
            "",
        ),
        (
            "excluded by the binding",
            v(REPLICAS),
            json!({"matchResources": {"excludeResourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
             "operations": ["*"], "resources": ["deployments"], "resourceNames": ["d"]}]}}),
            create(deploy("a", 5, json!({}))),
            false,
            "",
        ),
        (
            "warn does not deny",
            v(REPLICAS),
            json!({"validationActions": ["Warn"]}),
            create(deploy("a", 5, json!({}))),
            false,
            "",
        ),
        (
            "match condition false skips",
            json!({"matchConditions": [{"name": "only-prod", "expression": "request.namespace == 'prod'"}],
                "validations": [{"expression": REPLICAS}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            false,
            "",
        ),
        (
            "match condition true applies",
            json!({"matchConditions": [{"name": "alice", "expression": "request.userInfo.username == 'alice'"}],
                "validations": [{"expression": REPLICAS}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "failed expression",
        ),
        (
            "variables",
            json!({"variables": [{"name": "max", "expression": "3"},
                              {"name": "over", "expression": "object.spec.replicas > variables.max"}],
                "validations": [{"expression": "!variables.over", "message": "over"}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "over",
        ),
        (
            "an error fails closed by default",
            v("object.spec.missing == 1"),
            json!({}),
            create(deploy("a", 1, json!({}))),
            true,
            "resulted in error",
        ),
        (
            "an error is ignored under Ignore",
            json!({"failurePolicy": "Ignore", "validations": [{"expression": "object.spec.missing == 1"}]}),
            json!({}),
            create(deploy("a", 1, json!({}))),
            false,
            "",
        ),
        (
            "reason Forbidden",
            json!({"validations": [{"expression": REPLICAS, "reason": "Forbidden"}]}),
            json!({}),
            create(deploy("a", 5, json!({}))),
            true,
            "failed expression",
        ),
        (
            "strings and macros",
            json!({"validations": [{"expression":
            "object.metadata.name.upperAscii() == 'D' && ['a','b'].join('-') == 'a-b' && 'x,y'.split(',').size() == 2 && object.metadata.name.matches('^d$') && [1,2,3].isSorted() && [1,2].exists_one(x, x == 2) && [1,2].map(x, x * 2).filter(x, x > 2) == [4]"}]}),
            json!({}),
            create(deploy("a", 1, json!({}))),
            false,
            "",
        ),
        (
            "quantities",
            json!({"validations": [{"expression": "quantity('1Gi').isGreaterThan(quantity('512Mi')) && quantity('100m').compareTo(quantity('0.1')) == 0"}]}),
            json!({}),
            create(deploy("a", 1, json!({}))),
            false,
            "",
        ),
        (
            "optional fields",
            json!({"validations": [{"expression": "object.spec.?template.orValue('none') == 'none'"}]}),
            json!({}),
            create(deploy("a", 1, json!({}))),
            false,
            "",
        ),
    ];
    for (name, pspec, bspec, req, denied, msg) in cases {
        let objs = vec![policy(pspec), binding(bspec)];
        let out = evaluate(&objs, &req);
        assert_eq!(!out.allowed, denied, "{name}: {out:?}");
        if denied {
            assert!(out.denials[0].message.contains(msg), "{name}: {out:?}");
        }
    }
}

#[test]
fn actions_reason_and_status_text() {
    let objs = vec![
        policy(
            json!({"validations": [{"expression": REPLICAS, "message": "too many", "reason": "Forbidden"}]}),
        ),
        binding(json!({"validationActions": ["Deny", "Warn", "Audit"]})),
    ];
    let req = create(deploy("a", 5, json!({})));
    let out = evaluate(&objs, &req);
    assert_eq!(out.denials[0].code, 403);
    assert_eq!(out.warnings.len(), 1);
    assert_eq!(out.audits.len(), 1);
    assert_eq!(
        out.denials[0].status_message(&req.object),
        "deployments.apps \"d\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' \
         denied request: too many"
    );
}

#[test]
fn denial_text_round_trips_through_the_live_parser() {
    let objs = vec![
        policy(json!({"validations": [{"expression": REPLICAS}]})),
        binding(json!({})),
    ];
    let req = create(deploy("a", 5, json!({})));
    let d = &evaluate(&objs, &req).denials[0];
    let parsed = crate::target::parse_denial(d.code, "Invalid", &d.status_message(&req.object));
    assert_eq!(
        parsed.by,
        crate::target::DeniedBy::ValidatingAdmissionPolicy {
            policy: "p".into(),
            binding: "b".into()
        }
    );
}

#[test]
fn params_by_name_selector_and_missing() {
    let p = policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
                         "messageExpression": "'max is ' + params.data.max"}]}));
    let cm = |name: &str, ns: &str, max: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"role": "limits"}}, "data": {"max": max}})
    };
    let req = create(deploy("a", 5, json!({})));
    let cases: Vec<(&str, Value, Vec<Value>, bool, &str)> = vec![
        (
            "by name",
            json!({"paramRef": {"name": "lim", "namespace": "cfg"}}),
            vec![cm("lim", "cfg", "3")],
            true,
            "max is 3",
        ),
        (
            "by name, allows",
            json!({"paramRef": {"name": "lim", "namespace": "cfg"}}),
            vec![cm("lim", "cfg", "9")],
            false,
            "",
        ),
        (
            "namespaced params default to the request's namespace",
            json!({"paramRef": {"name": "lim"}}),
            vec![cm("lim", "a", "2")],
            true,
            "max is 2",
        ),
        (
            "selector, any denies",
            json!({"paramRef": {"selector": {"matchLabels": {"role": "limits"}}, "namespace": "cfg"}}),
            vec![cm("x", "cfg", "9"), cm("y", "cfg", "1")],
            true,
            "max is 1",
        ),
        (
            "missing denies by default",
            json!({"paramRef": {"name": "nope", "namespace": "cfg"}}),
            vec![],
            true,
            "no params found",
        ),
        (
            "missing with Allow",
            json!({"paramRef": {"name": "nope", "namespace": "cfg",
            "parameterNotFoundAction": "Allow"}}),
            vec![],
            false,
            "",
        ),
        (
            "a binding without paramRef is misconfigured",
            json!({}),
            vec![],
            true,
            "failed to configure binding",
        ),
    ];
    let mut ignoring = p.clone();
    ignoring["spec"]["failurePolicy"] = json!("Ignore");
    let missing = binding(json!({"paramRef": {"name": "nope", "namespace": "cfg"}}));
    let out = evaluate(&[ignoring, missing], &req);
    assert!(out.allowed && out.errors.len() == 1, "{out:?}");
    for (name, bspec, params, denied, msg) in cases {
        let mut objs = vec![p.clone(), binding(bspec)];
        objs.extend(params);
        let out = evaluate(&objs, &req);
        assert_eq!(!out.allowed, denied, "{name}: {out:?}");
        if denied {
            assert!(out.denials[0].message.contains(msg), "{name}: {out:?}");
        }
    }
}

#[test]
fn authorizer_and_unknown_functions_are_unsupported_not_allowed() {
    for expr in [
        "authorizer.group('').resource('pods').check('get').allowed()",
        "object.metadata.name.noSuchFunction()",
        "url('https://x').getHost() == 'x'",
        "ip('10.0.0.1').family() == 4",
    ] {
        let objs = vec![
            policy(json!({"validations": [{"expression": expr}]})),
            binding(json!({})),
        ];
        let out = evaluate(&objs, &create(deploy("a", 1, json!({}))));
        assert!(!out.allowed, "{expr}: {out:?}");
        assert!(out.unsupported().is_some(), "{expr}: {out:?}");
    }
    // Through a chain of variables the reason survives; an unused one does not matter.
    let chained = json!({"variables": [
            {"name": "a", "expression": "authorizer.group('').resource('pods').check('get').allowed()"},
            {"name": "b", "expression": "variables.a && true"},
            {"name": "unused", "expression": "url('x')"}],
        "validations": [{"expression": "variables.b"}]});
    let out = evaluate(
        &[policy(chained), binding(json!({}))],
        &create(deploy("a", 1, json!({}))),
    );
    let e = out.unsupported().expect("unsupported");
    assert!(
        e.unsupported
            .as_ref()
            .unwrap()
            .to_string()
            .contains("authorizer"),
        "{out:?}"
    );
    let unused = json!({"variables": [{"name": "unused", "expression": "url('x')"}],
        "validations": [{"expression": "true"}]});
    let out = evaluate(
        &[policy(unused), binding(json!({}))],
        &create(deploy("a", 1, json!({}))),
    );
    assert!(out.allowed && out.errors.is_empty(), "{out:?}");
}

/// (case, cel block, celPreconditions, params objects, expected verdict)
type CelCase = (&'static str, Value, Option<Value>, Vec<Value>, CelVerdict);

#[test]
fn kyverno_cel_blocks() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "lim", "namespace": "a"}, "data": {"max": "3"}});
    let with_params = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "paramRef": {"name": "lim"},
        "expressions": [{"expression": "object.spec.replicas <= int(params.data.max)",
                         "messageExpression": "'at most ' + params.data.max"}]});
    let cases: Vec<CelCase> = vec![
        (
            "passes",
            json!({"expressions": [{"expression": "object.spec.replicas >= 1"}]}),
            None,
            vec![],
            CelVerdict::Pass,
        ),
        (
            "fails with its message",
            json!({"expressions": [{"expression": "true"},
                {"expression": REPLICAS, "message": "too many"}]}),
            None,
            vec![],
            CelVerdict::Fail("too many".into()),
        ),
        (
            "variables and namespaceObject",
            json!({"variables": [{"name": "env", "expression": "namespaceObject.metadata.labels.env"}],
                "expressions": [{"expression": "variables.env != 'a'",
                                 "messageExpression": "'not in ' + variables.env"}]}),
            None,
            vec![],
            CelVerdict::Fail("not in a".into()),
        ),
        (
            "a false celPrecondition skips",
            json!({"expressions": [{"expression": "false"}]}),
            Some(json!([{"name": "prod", "expression": "request.namespace == 'prod'"}])),
            vec![],
            CelVerdict::Skip("celPreconditions not met".into()),
        ),
        (
            "a true celPrecondition applies",
            json!({"expressions": [{"expression": "false", "message": "no"}]}),
            Some(json!([{"name": "alice", "expression": "request.userInfo.username == 'alice'"}])),
            vec![],
            CelVerdict::Fail("no".into()),
        ),
        (
            "an evaluation error fails",
            json!({"expressions": [{"expression": "object.spec.missing == 1"}]}),
            None,
            vec![],
            CelVerdict::Fail(
                "expression 'object.spec.missing == 1' resulted in error: no such key: missing"
                    .into(),
            ),
        ),
        (
            "params from the request's namespace",
            with_params.clone(),
            None,
            vec![cm],
            CelVerdict::Fail("at most 3".into()),
        ),
        (
            "a missing named param is an error",
            with_params,
            None,
            vec![],
            CelVerdict::Error("error in parameterized resource: ConfigMap lim not found".into()),
        ),
        (
            "none selected under Deny is an error",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "paramRef": {"selector": {"matchLabels": {"x": "y"}},
                             "parameterNotFoundAction": "Deny"},
                "expressions": [{"expression": "false"}]}),
            None,
            vec![],
            CelVerdict::Error("error in parameterized resource: no params found".into()),
        ),
        (
            "none selected otherwise leaves nothing to validate",
            json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                "paramRef": {"selector": {"matchLabels": {"x": "y"}}},
                "expressions": [{"expression": "false"}]}),
            None,
            vec![],
            CelVerdict::Pass,
        ),
    ];
    let req = create(deploy("a", 5, json!({})));
    for (name, cel, pre, objects, want) in cases {
        let got = evaluate_kyverno_cel(&objects, &cel, None, pre.as_ref(), &req);
        assert_eq!(got, want, "{name}");
    }
    let untitled = json!({"expressions": [{"expression": "false"}]});
    assert_eq!(
        evaluate_kyverno_cel(&[], &untitled, Some("rule says no"), None, &req),
        CelVerdict::Fail("rule says no".into())
    );
    let auth = json!({"expressions": [{"expression":
        "authorizer.group('').resource('pods').check('get').allowed()"}]});
    match evaluate_kyverno_cel(&[], &auth, None, None, &req) {
        CelVerdict::Unsupported(why) => assert!(why.to_string().contains("authorizer"), "{why}"),
        other => panic!("authorizer: {other:?}"),
    }
}

fn vpol(spec: Value) -> Value {
    let mut spec = spec;
    spec["matchConstraints"] = json!({"resourceRules": [{
        "apiGroups": [""], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["pods"]}]});
    json!({"apiVersion": "policies.kyverno.io/v1alpha1", "kind": "ValidatingPolicy",
           "metadata": {"name": "vp"}, "spec": spec})
}

fn pod_spec(host_network: bool) -> Value {
    json!({"hostNetwork": host_network, "containers": [{"name": "c", "image": "nginx"}]})
}

/// (case, policy, object, expected)
type VpolCase = (&'static str, Value, Value, Applied);

#[test]
fn validating_policies_and_their_autogen_copies() {
    let no_host = json!({"validations": [
        {"expression": "object.spec.?hostNetwork.orValue(false) == false", "message": "no"}]});
    let pod = |h: bool| {
        json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "a"}, "spec": pod_spec(h)})
    };
    let deployment = |h: bool| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "a"},
        "spec": {"template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec(h)}}})
    };
    let cronjob = |h: bool| {
        json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "c", "namespace": "a"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": pod_spec(h)}}}}})
    };
    let mut only_deployments = no_host.clone();
    only_deployments["autogen"] = json!({"podControllers": {"controllers": ["deployments"]}});
    // The controller's own namespace stays; its labels (and name) move to the
    // template's (`pkg/cel/autogen/replacement.go` protects only `.namespace`).
    let named = json!({"validations": [{"expression":
        "object.metadata.namespace == 'a' && object.metadata.labels.app == 'x'"}]});
    let mut namespaced = vpol(no_host.clone());
    namespaced["kind"] = json!("NamespacedValidatingPolicy");
    namespaced["metadata"]["namespace"] = json!("other");
    let cases: Vec<VpolCase> = vec![
        (
            "pod passes",
            vpol(no_host.clone()),
            pod(false),
            Applied::Passed,
        ),
        (
            "pod fails",
            vpol(no_host.clone()),
            pod(true),
            Applied::Failed,
        ),
        (
            "deployment by autogen",
            vpol(no_host.clone()),
            deployment(true),
            Applied::Failed,
        ),
        (
            "deployment passes",
            vpol(no_host.clone()),
            deployment(false),
            Applied::Passed,
        ),
        (
            "cronjob by autogen",
            vpol(no_host.clone()),
            cronjob(true),
            Applied::Failed,
        ),
        (
            "controllers limited",
            vpol(only_deployments.clone()),
            cronjob(true),
            Applied::NotMatched,
        ),
        (
            "listed controller",
            vpol(only_deployments),
            deployment(true),
            Applied::Failed,
        ),
        (
            "template labels, own name",
            vpol(named),
            deployment(false),
            Applied::Passed,
        ),
        (
            "another namespace's policy",
            namespaced,
            pod(true),
            Applied::NotMatched,
        ),
    ];
    for (name, policy, obj, want) in cases {
        let mut out = VapOutcome::default();
        let got = evaluate_validating_policy(&[], &policy, &create(obj), &mut out);
        assert_eq!(got, want, "{name}: {out:?}");
    }
    // Audit-only policies fail without denying.
    let mut audit = vpol(no_host);
    audit["spec"]["validationActions"] = json!(["Audit"]);
    let mut out = VapOutcome::default();
    let got = evaluate_validating_policy(&[], &audit, &create(pod(true)), &mut out);
    assert_eq!(got, Applied::Failed);
    assert!(out.denials.is_empty() && out.audits.len() == 1, "{out:?}");
}

#[test]
fn resource_get_reads_the_given_objects_only() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "regs", "namespace": "default"}, "data": {"r": "ghcr.io"}});
    let p = vpol(json!({"validations": [{"expression":
        "resource.get('v1', 'configmaps', 'default', 'regs').data.r == 'ghcr.io' && \
         resource.Get('v1', 'configmaps', 'default', 'regs') == \
         resource.get('v1', 'configmaps', 'default', 'regs')"}]}));
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "a"}, "spec": pod_spec(false)});
    let run = |cluster: Option<Vec<Value>>| {
        let mut req = create(pod.clone());
        req.cluster = cluster.map(Arc::new);
        let mut out = VapOutcome::default();
        let applied = evaluate_validating_policy(&[], &p, &req, &mut out);
        (applied, out)
    };
    assert_eq!(run(Some(vec![cm])).0, Applied::Passed);
    // Missing: null (the library ignores NotFound), whose field is an evaluation
    // error, which fails closed.
    let (applied, out) = run(Some(vec![]));
    assert_eq!(applied, Applied::Failed);
    assert!(
        out.unsupported().is_none() && !out.errors.is_empty(),
        "{out:?}"
    );
    // Without the library (a VAP) the call cannot be evaluated: never a pass.
    assert!(run(None).1.unsupported().is_some());
}

#[test]
fn cel_policy_exceptions() {
    let exc = |expr: &str| {
        json!({"apiVersion": "policies.kyverno.io/v1alpha1",
        "kind": "PolicyException", "metadata": {"name": "e"},
        "spec": {"matchConditions": [{"name": "c", "expression": expr}]}})
    };
    let req = create(deploy("test-ns", 1, json!({})));
    assert_eq!(
        exception_applies(&exc("object.metadata.namespace == 'test-ns'"), &req),
        Ok(true)
    );
    assert_eq!(
        exception_applies(&exc("object.metadata.namespace == 'x'"), &req),
        Ok(false)
    );
    assert!(exception_applies(&exc("resource.Get('v1', 'x', 'y', 'z') != null"), &req).is_err());
}

#[test]
fn plurals() {
    for (k, p) in [
        ("Pod", "pods"),
        ("Ingress", "ingresses"),
        ("NetworkPolicy", "networkpolicies"),
        ("Endpoints", "endpoints"),
        ("Gateway", "gateways"),
    ] {
        assert_eq!(plural(k), p);
    }
}

/// `[0, 1, …, n-1]` as CEL.
fn range_literal(n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn run_one(spec: Value, req: &VapRequest) -> (VapOutcome, std::time::Duration) {
    let objects = vec![policy(spec), binding(json!({}))];
    let start = std::time::Instant::now();
    let out = evaluate(&objects, req);
    (out, start.elapsed())
}

#[test]
fn nested_loops_over_literals_are_refused_at_load_by_their_estimated_cost() {
    let r = range_literal(1000);
    let expr = format!("{r}.all(x, {r}.all(y, {r}.all(z, true)))");
    let (out, took) = run_one(
        json!({"validations": [{"expression": expr}]}),
        &create(deploy("a", 1, json!({}))),
    );
    // Unbounded, these loops run for minutes; a loaded debug build needs a few seconds.
    assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    let e = &out.errors[0];
    assert!(
        e.message.contains(
            "spec.validations[0].expression: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"
        ),
        "{out:?}"
    );
    assert_eq!(e.unsupported, None);
    // A policy the API server refuses does not exist: it denies nothing.
    assert!(out.denials.is_empty() && out.allowed, "{out:?}");
}

#[test]
fn nested_loops_over_a_large_object_are_cancelled_by_the_runtime_limit() {
    let items: Vec<i64> = (0..1000).collect();
    let mut obj = deploy("a", 1, json!({}));
    obj["spec"]["items"] = json!(items);
    let expr = "object.spec.items.all(x, object.spec.items.all(y, object.spec.items.all(z, true)))";
    let (out, took) = run_one(
        json!({"validations": [{"expression": expr}]}),
        &create(obj.clone()),
    );
    // Unbounded, these loops run for minutes; a loaded debug build needs a few seconds.
    assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    assert_eq!(
        out.denials[0].message,
        format!(
            "expression '{expr}' resulted in error: operation cancelled: actual cost limit exceeded"
        ),
        "{out:?}"
    );
    // The same loop over a small list runs.
    obj["spec"]["items"] = json!([1, 2, 3]);
    let (out, _) = run_one(json!({"validations": [{"expression": expr}]}), &create(obj));
    assert!(out.allowed && out.errors.is_empty(), "{out:?}");
}

#[test]
fn string_doubling_through_variables_stops_at_the_limit() {
    // v0 is `seed`; each of v1..v40 doubles the one before.
    fn doubling(seed: &str) -> Value {
        let mut vars = vec![json!({"name": "v0", "expression": seed})];
        for i in 1..=40 {
            vars.push(json!({"name": format!("v{i}"),
                "expression": format!("variables.v{0} + variables.v{0}", i - 1)}));
        }
        json!({"variables": vars,
            "validations": [{"expression": "size(variables.v40) > 0"}]})
    }
    // From the request's data, so only evaluation can know the sizes.
    let spec = doubling("object.metadata.name");
    let (out, took) = run_one(spec, &create(deploy("a", 1, json!({}))));
    // Unbounded, these loops run for minutes; a loaded debug build needs a few seconds.
    assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    assert!(
        out.denials[0]
            .message
            .ends_with("operation cancelled: actual cost limit exceeded"),
        "{out:?}"
    );
    // From a literal, the estimate at load already refuses it.
    let spec = doubling("'xxxxxxxxxxxxxxxx'");
    let (out, took) = run_one(spec, &create(deploy("a", 1, json!({}))));
    // Unbounded, these loops run for minutes; a loaded debug build needs a few seconds.
    assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    assert!(
        out.errors[0]
            .message
            .contains("estimated rule cost exceeds budget by factor of"),
        "{out:?}"
    );
}

#[test]
fn many_cheap_expressions_run_out_of_the_policy_budget() {
    let items: Vec<i64> = (0..300).collect();
    let mut obj = deploy("a", 1, json!({}));
    obj["spec"]["items"] = json!(items);
    // Each estimated at about 300 × 300 steps: under the per-expression limit, together
    // over the budget (they stop at the first element when they do run).
    let expr = "object.spec.items.exists(x, object.spec.items.exists(y, y == x))";
    let validations: Vec<Value> = (0..30).map(|_| json!({"expression": expr})).collect();
    let (out, took) = run_one(json!({"validations": validations}), &create(obj));
    assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    assert!(
        out.errors.iter().any(|e| e.message.ends_with(
            "validation failed due to running out of cost budget, no further validation rules will be run"
        )),
        "{out:?}"
    );
}

#[test]
fn why_an_expression_is_not_evaluated_offline_is_a_typed_reason() {
    let reason = |expr: &str| {
        let objs = vec![
            policy(json!({"validations": [{"expression": expr}]})),
            binding(json!({})),
        ];
        let out = evaluate(&objs, &create(deploy("a", 1, json!({}))));
        let e = out.unsupported().cloned().expect("unsupported");
        // The error's message ends with the reason's own text.
        let why = e.unsupported.clone().unwrap();
        assert!(e.message.ends_with(&why.to_string()), "{e:?}");
        why
    };
    assert_eq!(
        reason("authorizer.group('').resource('pods').check('get').allowed()"),
        Unsupported::Authorizer
    );
    assert!(matches!(
        reason("object.metadata.name.noSuchFunction()"),
        Unsupported::Interpreter(_)
    ));
    assert!(matches!(
        reason("object.metadata.("),
        Unsupported::Compile(_)
    ));
    // An error the API server would hit too is no reason to skip.
    let objs = vec![
        policy(json!({"validations": [{"expression": "object.spec.noSuchField == 1"}]})),
        binding(json!({})),
    ];
    let out = evaluate(&objs, &create(deploy("a", 1, json!({}))));
    assert!(
        out.unsupported().is_none() && !out.errors.is_empty(),
        "{out:?}"
    );
}
