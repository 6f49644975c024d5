use serde_json::json;

use super::*;

fn ctx_for(rules: Value, params: Option<Value>, variables: Option<Value>) -> TypeContext {
    let rules: Vec<Value> = rules.as_array().cloned().unwrap_or_default();
    context(
        &rules,
        params.as_ref(),
        variables.as_ref(),
        &Mapper::built_in(),
    )
    .expect("built-in kinds")
}

fn deployments() -> TypeContext {
    ctx_for(
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]),
        None,
        None,
    )
}

fn secrets_and_pods() -> TypeContext {
    ctx_for(
        json!([{"apiGroups": [""], "apiVersions": ["v1"],
                "resources": ["secrets", "pods", "pods/ephemeralcontainers"]}]),
        None,
        None,
    )
}

fn known(ctx: &TypeContext, expr: &str) -> String {
    match check_expression(ctx, expr) {
        TypeCheck::Known(s) => s,
        TypeCheck::Unknown(why) => panic!("{expr}: unknown: {why}"),
    }
}

#[test]
fn right_expressions_give_no_finding() {
    let d = deployments();
    for expr in [
        "object.spec.replicas > 1",
        "has(object.spec.replicas) && object.spec.replicas > 0",
        "!has(object.spec.template.spec.volumes) || object.spec.template.spec.volumes.all(volume, !has(volume.hostPath))",
        "object.spec.template.spec.containers.all(c, !has(c.ports) || c.ports.all(p, !has(p.hostPort) || (p.hostPort >= 5000 && p.hostPort <= 6000)))",
        "'app' in object.metadata.labels",
        "object.metadata.labels['app'] == 'x'",
        "object.metadata.name.matches('nginx-pod')",
        "namespaceObject.metadata.name == 'production'",
        "request.userInfo.username.startsWith('system:')",
        "size(object.spec.template.spec.containers) <= 3",
        "object.spec.template.spec.containers.map(c, c.image).all(i, i.contains('/'))",
        "object.spec.template.spec.containers.filter(c, c.image.endsWith(':latest')).size() == 0",
        "authorizer.serviceAccount('default', 'sa').group('apps').resource('deployments').namespace('default').check('delete').allowed()",
        "object.spec.replicas <= 3.5",
        "oldObject == null || object.spec.replicas == oldObject.spec.replicas",
        "object.spec.strategy.rollingUpdate.maxSurge == 1",
        "object.metadata.creationTimestamp < timestamp('2020-01-01T00:00:00Z') || true",
    ] {
        let got = check_expression(&d, expr);
        assert!(
            matches!(&got, TypeCheck::Known(s) if s.is_empty())
                || matches!(&got, TypeCheck::Unknown(_)),
            "{expr}: {got:?}"
        );
    }
    // These must be decided, not only not wrong.
    for expr in [
        "object.spec.replicas > 1",
        "'app' in object.metadata.labels",
        "object.spec.template.spec.containers.filter(c, c.image.endsWith(':latest')).size() == 0",
        "authorizer.serviceAccount('default', 'sa').group('apps').resource('deployments').namespace('default').check('delete').allowed()",
    ] {
        assert_eq!(known(&d, expr), "", "{expr}");
    }
}

#[test]
fn an_undefined_field_is_reported_as_cel_go_prints_it() {
    let d = deployments();
    assert_eq!(
        known(&d, "object.replicas > 1"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"
    );
    // `has()` is placed at its `(`.
    let s = secrets_and_pods();
    let got = known(&s, "!has(object.automountServiceAccountToken)");
    assert_eq!(
        got,
        "/v1, Kind=Pod: ERROR: <input>:1:5: undefined field 'automountServiceAccountToken'\n | !has(object.automountServiceAccountToken)\n | ....^\n\n\
         /v1, Kind=Secret: ERROR: <input>:1:5: undefined field 'automountServiceAccountToken'\n | !has(object.automountServiceAccountToken)\n | ....^\n"
    );
    // The Pod's field is in its spec: one result, for Secrets only.
    assert_eq!(
        known(
            &s,
            "!has(object.spec.automountServiceAccountToken) || object.kind == 'Pod'"
        ),
        "/v1, Kind=Secret: ERROR: <input>:1:12: undefined field 'spec'\n | !has(object.spec.automountServiceAccountToken) || object.kind == 'Pod'\n | ...........^\n"
    );
}

#[test]
fn overload_and_logic_mismatches_name_the_types() {
    let d = deployments();
    assert_eq!(
        known(&d, "object.metadata.name > 1"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(string, int)'\n | object.metadata.name > 1\n | .....................^\n"
    );
    assert_eq!(
        known(&d, "object.metadata.name && true"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:16: expected type 'bool' but found 'string'\n | object.metadata.name && true\n | ...............^\n"
    );
    assert_eq!(
        known(&d, "authorizer.allowed()"),
        "apps/v1, Kind=Deployment: ERROR: <input>:1:19: found no matching overload for 'allowed' applied to 'kubernetes.authorization.Authorizer.()'\n | authorizer.allowed()\n | ..................^\n"
    );
}

#[test]
fn what_kca_does_not_model_is_unknown() {
    let d = deployments();
    for expr in [
        // A function kca does not declare.
        "object.metadata.name.quantity()",
        "isSorted([1, 2])",
        // Quantity's schema differs between the OpenAPI documents.
        "has(object.spec.template.spec.containers[0].resources.limits)",
        // An identifier kca does not declare.
        "foo == 1",
        // A mismatch that names a schema object (its type name is made per policy).
        "object.spec == 1",
        "object.spec.template.spec.containers[0] == object.spec.template.spec.initContainers[0]",
        // A parse failure.
        "object.spec.(",
    ] {
        assert!(
            matches!(check_expression(&d, expr), TypeCheck::Unknown(_)),
            "{expr}"
        );
    }
}

#[test]
fn variables_and_params_are_typed_as_the_api_server_declares_them() {
    let rules =
        json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]);
    let vars = json!([
        {"name": "containers", "expression": "object.spec.template.spec.containers"},
        {"name": "bad", "expression": "object.nope"},
        {"name": "env", "expression": "'environment' in namespaceObject.metadata.labels ? namespaceObject.metadata.labels['environment'] : 'prod'"},
    ]);
    let ctx = ctx_for(rules.clone(), None, Some(vars));
    assert_eq!(
        known(
            &ctx,
            "variables.containers.all(c, c.image.startsWith(variables.env))"
        ),
        ""
    );
    // A variable that fails is `dyn`, and not reported here.
    assert_eq!(known(&ctx, "variables.bad == 1"), "");
    assert!(known(&ctx, "variables.env > 1").contains("'(string, int)'"));
    // Params of a kind the cluster does not serve are `dyn`; without a param kind
    // `params` is not declared.
    let p = ctx_for(
        rules.clone(),
        Some(json!({"apiVersion": "rules.example.com/v1", "kind": "ReplicaLimit"})),
        None,
    );
    assert_eq!(known(&p, "object.spec.replicas <= params.maxReplicas"), "");
    let none = ctx_for(rules.clone(), None, None);
    assert!(matches!(
        check_expression(&none, "params.x"),
        TypeCheck::Unknown(_)
    ));
    // A conversion of `dyn` params is a string.
    assert_eq!(known(&p, "'at most ' + string(params.maxReplicas)"), "");
    assert!(known(&p, "string(params.maxReplicas) > 1").contains("'(string, int)'"));
    // A built-in param kind is typed.
    let cm = ctx_for(
        rules,
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap"})),
        None,
    );
    assert!(known(&cm, "params.maxReplicas == 1").contains("undefined field 'maxReplicas'"));
}

#[test]
fn kinds_without_a_schema_are_refused_and_wildcards_skipped() {
    let m = Mapper::built_in();
    let crd = json!([{"apiGroups": ["kyverno.io"], "apiVersions": ["v1"], "resources": ["clusterpolicies"]}]);
    assert!(context(crd.as_array().unwrap(), None, None, &m).is_err());
    let any = json!([{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]);
    let ctx = context(any.as_array().unwrap(), None, None, &m).unwrap();
    assert_eq!(known(&ctx, "object.whatever"), "");
}

#[test]
fn escaped_property_names() {
    assert_eq!(
        schema::escape("namespace").as_deref(),
        Some("__namespace__")
    );
    assert_eq!(
        schema::escape("a-b.c/d").as_deref(),
        Some("a__dash__b__dot__c__slash__d")
    );
    assert_eq!(schema::escape("a__b").as_deref(), Some("a__underscores__b"));
    assert_eq!(schema::escape("1a"), None);
    let d = deployments();
    // A reserved word reaches its escaped property (Kubernetes 1.31 on).
    assert_eq!(known(&d, "object.metadata.namespace == 'x'"), "");
    assert_eq!(known(&d, "object.metadata.__namespace__ == 'x'"), "");
    assert!(known(&d, "object.metadata.__name__ == 'x'").contains("undefined field '__name__'"));
}

#[test]
fn the_embedded_schemas_load_and_resolve_references() {
    for (g, v, k) in [
        ("", "v1", "Pod"),
        ("apps", "v1", "Deployment"),
        ("batch", "v1", "CronJob"),
    ] {
        assert!(
            matches!(schema::kind_type(g, v, k), Some(Ty::Struct(_))),
            "{g}/{v}/{k}"
        );
    }
    assert!(schema::kind_type("apps", "v1beta1", "Deployment").is_none());
    let c = ctx_for(
        json!([{"apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["cronjobs"]}]),
        None,
        None,
    );
    assert_eq!(
        known(
            &c,
            "object.spec.jobTemplate.spec.template.spec.containers.all(c, c.name != '')"
        ),
        ""
    );
}
