//! Kyverno 1.19's `MutatingPolicy` and `GeneratingPolicy` (policies.kyverno.io) on one
//! request, on the same CEL evaluator as a ValidatingAdmissionPolicy: match constraints,
//! variables, match conditions, then the policy's mutations (apply configurations and
//! JSON patches, in order, each seeing the object the previous one produced) or its
//! `generate` expressions (`generator.Apply(namespace, objects)`). Kyverno's sources:
//! `pkg/cel/policies/mpol/compiler/policy.go` and `pkg/cel/policies/gpol/compiler/policy.go`.
//! What the interpreter cannot evaluate comes back as `Unsupported`, never as a result.

use std::sync::Mutex;

use super::*;

/// How a MutatingPolicy or GeneratingPolicy came out on one request.
#[derive(Debug, Clone, PartialEq)]
pub enum CelPolicyOutcome<T> {
    /// The policy does not select the request (constraints or a false condition).
    NotMatched,
    /// The mutated object, or the generated objects.
    Applied(T),
    /// An evaluation error Kyverno would hit too.
    Error(String),
    /// What the offline interpreter cannot evaluate (never a result): the text reported
    /// and the reason as a value.
    Unsupported { message: String, why: Unsupported },
}

impl<T> CelPolicyOutcome<T> {
    pub(super) fn from_eval(e: EvalError, what: &str) -> Self {
        Self::from_error(e.within(what))
    }

    /// An error whose message already says where and why.
    pub(super) fn from_error(e: EvalError) -> Self {
        match e.unsupported {
            Some(why) => Self::Unsupported {
                message: e.message,
                why,
            },
            None => Self::Error(e.message),
        }
    }

    /// What the interpreter cannot evaluate, at `at` (a mutation or a generation).
    fn unsupported_at(at: impl std::fmt::Display, why: Unsupported) -> Self {
        Self::Unsupported {
            message: format!("{at}: {why}"),
            why,
        }
    }
}

/// Why a mutation's result could not be applied to the object.
#[derive(Debug, thiserror::Error)]
enum MutationError {
    #[error(transparent)]
    Patch(#[from] crate::offline::kyverno::jsonpatch::PatchError),
    /// The strategic merge's message.
    #[error("{0}")]
    Merge(String),
}

/// The context a policy's actions run in, once it has matched: the request's variables,
/// `variables` bound, match conditions held.
pub(super) fn prepare<T>(
    policy: &Value,
    namespaced_kind: &str,
    req: &VapRequest,
) -> Result<Scope<'static>, CelPolicyOutcome<T>> {
    prepare_matched(policy, namespaced_kind, req, true)
}

/// [`prepare`], the match constraints checked only when `constraints` says so (a
/// mutate-existing target is selected apart).
pub(super) fn prepare_matched<T>(
    policy: &Value,
    namespaced_kind: &str,
    req: &VapRequest,
    constraints: bool,
) -> Result<Scope<'static>, CelPolicyOutcome<T>> {
    if kind_of(policy) == namespaced_kind
        && let Some(ns) = policy
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        && request_namespace(req).as_deref() != Some(ns)
    {
        return Err(CelPolicyOutcome::NotMatched);
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let match_constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    if constraints && !matches_resources(match_constraints, req, true) {
        return Err(CelPolicyOutcome::NotMatched);
    }
    if let Err(e) = check_spec_cost(spec) {
        return Err(CelPolicyOutcome::Error(format!(
            "{} {}: {e}",
            kind_of(policy),
            name_of(policy)
        )));
    }
    let mut ctx = base_context(req, &Value::Null);
    // Kyverno binds the (lazy) variables before the match conditions, which may use them.
    ctx.define_variables(spec);
    match conditions_hold(&ctx, spec.get("matchConditions").unwrap_or(&Value::Null)) {
        Ok(true) => Ok(ctx),
        Ok(false) => Err(CelPolicyOutcome::NotMatched),
        Err(e) => Err(CelPolicyOutcome::from_error(e)),
    }
}

/// A `MutatingPolicy`/`NamespacedMutatingPolicy` on `req`: the object after its
/// mutations. An `ApplyConfiguration` is merged into the object (maps merge, lists of
/// known Kubernetes fields merge by their key, as the strategic merge `kyverno` already
/// models); a `JSONPatch` expression yields the operations applied in order.
pub fn evaluate_mutating_policy(policy: &Value, req: &VapRequest) -> CelPolicyOutcome<Value> {
    // On a Pod controller, a policy written for Pods runs as its autogen copy (Kyverno's
    // provider evaluates the policy and its copies; only the copy matches a controller).
    let kind = kind_of(if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    });
    if let Some(copy) =
        super::autogen::autogen_policy(policy, kind, super::autogen::Rewrite::Mutating)
    {
        return mutate(&copy, req);
    }
    mutate(policy, req)
}

/// One MutatingPolicy (or its autogen copy) on `req`.
pub(super) fn mutate(policy: &Value, req: &VapRequest) -> CelPolicyOutcome<Value> {
    match prepare(policy, "NamespacedMutatingPolicy", req) {
        Ok(ctx) => mutations(policy, req, ctx),
        Err(outcome) => outcome,
    }
}

/// The policy's `mutations` on `req.object`, in order, in the prepared context.
pub(super) fn mutations(
    policy: &Value,
    req: &VapRequest,
    mut ctx: Scope<'static>,
) -> CelPolicyOutcome<Value> {
    let mut object = if req.object.is_null() {
        let why = Unsupported::MutateOnDelete;
        return CelPolicyOutcome::Unsupported {
            message: why.to_string(),
            why,
        };
    } else {
        req.object.clone()
    };
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    for (i, m) in list(spec, "mutations").enumerate() {
        let patch_type = m.get("patchType").and_then(Value::as_str).unwrap_or("");
        let (key, what) = match patch_type {
            "ApplyConfiguration" => ("/applyConfiguration/expression", "applyConfiguration"),
            "JSONPatch" => ("/jsonPatch/expression", "jsonPatch"),
            other => {
                let why = Unsupported::PatchType(other.to_string());
                return CelPolicyOutcome::unsupported_at(format_args!("mutation {i}"), why);
            }
        };
        let expr = m.pointer(key).and_then(Value::as_str).unwrap_or("");
        let result = match eval(&ctx, expr) {
            Ok(v) => v,
            Err(e) => return CelPolicyOutcome::from_eval(e, &format!("mutation {i} ({what})")),
        };
        let result = match from_cel(&result) {
            Ok(v) => v,
            Err(e) => return CelPolicyOutcome::Error(format!("mutation {i} ({what}): {e}")),
        };
        let next = if patch_type == "JSONPatch" {
            let Value::Array(ops) = &result else {
                return CelPolicyOutcome::Error(format!(
                    "mutation {i} (jsonPatch): the expression must return a list of JSONPatch, got {result}"
                ));
            };
            crate::offline::kyverno::jsonpatch::apply(&object, ops).map_err(MutationError::from)
        } else {
            if !result.is_object() {
                return CelPolicyOutcome::Error(format!(
                    "mutation {i} (applyConfiguration): the expression must return an Object, got {result}"
                ));
            }
            apply_configuration(&object, &result)
        };
        object = match next {
            Ok(o) => o,
            Err(e) => return CelPolicyOutcome::Error(format!("mutation {i} ({what}): {e}")),
        };
        // The next mutation sees this one's result.
        ctx.set("object", &object);
    }
    CelPolicyOutcome::Applied(object)
}

/// Merges an apply configuration into `object`.
fn apply_configuration(object: &Value, config: &Value) -> Result<Value, MutationError> {
    use crate::offline::kyverno::{Request, context::Context as KyvernoContext, smp};
    // The merge needs no variables: an apply configuration carries no anchors.
    smp::apply(
        object,
        config,
        &KyvernoContext::from_request(&Request::default()),
    )
    .map_err(|e| MutationError::Merge(e.to_string()))
}

/// A `GeneratingPolicy`/`NamespacedGeneratingPolicy` on a trigger: the objects its
/// `generate` expressions hand to `generator.Apply(namespace, objects)` (a list object's
/// `items` each count), each placed in that namespace (cluster-scoped ones for `""`).
/// YAML `template` generations render their documents (`template`).
pub fn evaluate_generating_policy(
    policy: &Value,
    req: &VapRequest,
) -> CelPolicyOutcome<Vec<Value>> {
    let mut ctx = match prepare(policy, "NamespacedGeneratingPolicy", req) {
        Ok(p) => p,
        Err(outcome) => return outcome,
    };
    let generated: Arc<Mutex<Vec<Value>>> = Arc::default();
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let own_namespace = (kind_of(policy) == "NamespacedGeneratingPolicy")
        .then(|| {
            policy
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
        })
        .flatten();
    add_generator_library(
        ctx.cel_mut(),
        generated.clone(),
        own_namespace.map(str::to_string),
    );
    for (i, g) in list(spec, "generate").enumerate() {
        let at = format!("generate {i}");
        if let Some(expr) = g.get("expression").and_then(Value::as_str) {
            if let Err(e) = eval(&ctx, expr) {
                return CelPolicyOutcome::from_eval(e, &at);
            }
            continue;
        }
        let Some(template) = g.get("template") else {
            return CelPolicyOutcome::unsupported_at(at, Unsupported::TemplateGeneration);
        };
        // Each rendered resource goes to its own `metadata.namespace`; a namespaced
        // policy's default to, and stay in, the policy's (`applyTemplate`).
        let rendered = match super::template::render(&ctx, template) {
            Ok(r) => r,
            Err(e) => {
                let e = e.within("failed to render generation template");
                return CelPolicyOutcome::from_eval(e, &at);
            }
        };
        let mut made = Vec::new();
        for mut item in rendered {
            let ns = item
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let ns = match own_namespace {
                Some(own) if ns.is_empty() => own.to_string(),
                Some(own) if ns != own => {
                    return CelPolicyOutcome::from_eval(
                        EvalError::failed(format!(
                            "cross-namespace generation denied: a policy in namespace {own:?} cannot generate resources into namespace {ns:?}"
                        )),
                        &at,
                    );
                }
                _ => ns,
            };
            place(&mut item, &ns);
            made.push(item);
        }
        generated
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(made);
    }
    let out = std::mem::take(&mut *generated.lock().unwrap_or_else(|e| e.into_inner()));
    CelPolicyOutcome::Applied(out)
}

/// The `auditAnnotations` of a MutatingPolicy or GeneratingPolicy that ran on `req`
/// (for a MutatingPolicy `req.object` is the mutated object), as the properties of its
/// report result: each `valueExpression` that gives a non-empty string, by key; one that
/// fails or gives no string is the policy's error
/// (pkg/cel/policies/{mpol,gpol}/compiler/policy.go `evaluateAuditAnnotations`).
pub fn audit_annotations(
    policy: &Value,
    req: &VapRequest,
) -> Result<Vec<(String, String)>, EvalError> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let mut out = Vec::new();
    if list(spec, "auditAnnotations").next().is_none() {
        return Ok(out);
    }
    let mut ctx = base_context(req, &Value::Null);
    ctx.define_variables(spec);
    for a in list(spec, "auditAnnotations") {
        let key = a.get("key").and_then(Value::as_str).unwrap_or("");
        let expr = a
            .get("valueExpression")
            .and_then(Value::as_str)
            .unwrap_or("");
        let at = format!("failed to evaluate auditAnnotation {key:?}");
        match eval(&ctx, expr).map_err(|e| e.within(&at))? {
            cel::Value::String(s) if s.is_empty() => {}
            cel::Value::String(s) => out.push((key.to_string(), s.to_string())),
            other => {
                return Err(EvalError::failed(format!(
                    "failed to convert auditAnnotation {key:?} expression: {other:?} is not a string"
                )));
            }
        }
    }
    Ok(out)
}

const GENERATOR_LIBRARY: &str = "kca.dev/generator-library";

/// Kyverno's `generator.Apply(namespace, objects)` (also spelt `apply`), collecting
/// what it would create into `sink`. A NamespacedGeneratingPolicy's library has only
/// `Apply(objects)`, into the policy's namespace `own_namespace` (kyverno/sdk
/// extensions/cel/libs/generator/lib.go `namespacedEnv`; see `generator.rs`).
fn add_generator_library(
    ctx: &mut Context<'_, '_>,
    sink: Arc<Mutex<Vec<Value>>>,
    own_namespace: Option<String>,
) {
    ctx.add_variable_from_value("generator", to_cel(&json!({GENERATOR_LIBRARY: true})));
    let apply = move |This(target): This<cel::Value>,
                      cel::extractors::Arguments(args): cel::extractors::Arguments|
          -> cel::ResolveResult {
        if target != to_cel(&json!({GENERATOR_LIBRARY: true})) {
            return Err(ExecutionError::function_error(
                "apply",
                "only the `generator` library has `apply` offline",
            ));
        }
        let (namespace, objects) = match (own_namespace.as_deref(), args.as_slice()) {
            (None, [cel::Value::String(ns), cel::Value::List(objects)]) => {
                (ns.to_string(), objects.clone())
            }
            (Some(own), [cel::Value::List(objects)]) => (own.to_string(), objects.clone()),
            _ => {
                return Err(ExecutionError::function_error(
                    "generator.Apply",
                    format!(
                        "no overload for {} arguments in this policy's scope",
                        args.len()
                    ),
                ));
            }
        };
        let mut made = Vec::new();
        for o in objects.iter() {
            let o =
                from_cel(o).map_err(|e| ExecutionError::function_error("generator.Apply", e))?;
            let items = match o.get("items").and_then(Value::as_array) {
                Some(items) => items.clone(),
                None => vec![o],
            };
            for mut item in items {
                if !item.is_object() {
                    return Err(ExecutionError::function_error(
                        "generator.Apply",
                        format!("not an object: {item}"),
                    ));
                }
                place(&mut item, &namespace);
                made.push(item);
            }
        }
        sink.lock().unwrap_or_else(|e| e.into_inner()).extend(made);
        // True, so that `list.all(x, generator.Apply(…))` applies to every element.
        Ok(cel::Value::Bool(true))
    };
    let added = [
        ctx.add_function("apply", apply.clone()),
        ctx.add_function("Apply", apply),
    ];
    debug_assert!(added.iter().all(Result::is_ok), "{added:?}");
}

/// A generated copy in `namespace`, without the source's server-set fields.
fn place(item: &mut Value, namespace: &str) {
    let Some(meta) = item
        .as_object_mut()
        .map(|m| m.entry("metadata").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    // A copy of an object read from the cluster is labelled with its source's uid, which
    // synchronization follows (pkg/cel/libs/context.go `addGenerateLabels` tests the
    // resourceVersion; kca's simulated API server sets only the uid).
    if let Some(uid) = meta
        .get("uid")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
    {
        let uid = Value::String(uid.to_string());
        if let Some(labels) = meta
            .entry("labels")
            .or_insert_with(|| json!({}))
            .as_object_mut()
        {
            labels.insert(crate::offline::kyverno::generate::SOURCE_UID.into(), uid);
        }
    }
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
    ] {
        meta.remove(key);
    }
    if namespace.is_empty() {
        meta.remove("namespace");
    } else {
        meta.insert("namespace".into(), Value::String(namespace.to_string()));
    }
}

/// Every `MutatingPolicy` among `objects` on `req`, in the order given, each on the object
/// the previous one produced: the object admission goes on with. `Err` names the policy
/// that failed or that the interpreter cannot evaluate (never a silent pass).
pub fn mutate_with_policies(objects: &[Value], req: &VapRequest) -> Result<Value, PolicyError> {
    let mut req = req.clone();
    for policy in objects
        .iter()
        .filter(|o| matches!(kind_of(o), "MutatingPolicy" | "NamespacedMutatingPolicy"))
    {
        let outcome = match super::kyverno::with_exemptions(objects, policy, &req) {
            Ok(Some(r)) => evaluate_mutating_policy(policy, &r),
            Ok(None) => CelPolicyOutcome::NotMatched,
            Err(e) => CelPolicyOutcome::from_error(e.within("PolicyException")),
        };
        if let Some(object) = settle("MutatingPolicy", policy, outcome)? {
            req.object = object;
        }
    }
    Ok(req.object)
}

/// What every `GeneratingPolicy` among `objects` generates for the trigger in `req`.
/// `Err` names the policy that failed or that the interpreter cannot evaluate.
pub fn generate_with_policies(
    objects: &[Value],
    req: &VapRequest,
) -> Result<Vec<Value>, PolicyError> {
    let mut out = Vec::new();
    for policy in objects.iter().filter(|o| {
        matches!(
            kind_of(o),
            "GeneratingPolicy" | "NamespacedGeneratingPolicy"
        )
    }) {
        let outcome = match super::kyverno::with_exemptions(objects, policy, req) {
            Ok(Some(r)) => evaluate_generating_policy(policy, &r),
            Ok(None) => CelPolicyOutcome::NotMatched,
            Err(e) => CelPolicyOutcome::from_error(e.within("PolicyException")),
        };
        out.extend(settle("GeneratingPolicy", policy, outcome)?.unwrap_or_default());
    }
    Ok(out)
}

/// What a policy's outcome gives admission: the object or objects it produced (`None`
/// when it does not select the request), or the error that stops admission (a failure,
/// or what the interpreter cannot evaluate).
fn settle<T>(
    kind: &'static str,
    policy: &Value,
    outcome: CelPolicyOutcome<T>,
) -> Result<Option<T>, PolicyError> {
    let name = || name_of(policy).to_string();
    match outcome {
        CelPolicyOutcome::NotMatched => Ok(None),
        CelPolicyOutcome::Applied(x) => Ok(Some(x)),
        CelPolicyOutcome::Error(message) => Err(PolicyError::Failed {
            kind,
            name: name(),
            message,
        }),
        CelPolicyOutcome::Unsupported { message, why } => Err(PolicyError::Unsupported {
            kind,
            name: name(),
            message,
            why,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(object: Value) -> VapRequest {
        VapRequest {
            operation: "CREATE".into(),
            object,
            ..Default::default()
        }
    }

    fn pod(ns: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
               "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    }

    fn mpol(mutations: Value) -> Value {
        json!({"apiVersion": "policies.kyverno.io/v1", "kind": "MutatingPolicy",
               "metadata": {"name": "add-team"},
               "spec": {
                 "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["pods"]}]},
                 "matchConditions": [{"name": "dev", "expression": "request.namespace == 'dev'"}],
                 "variables": [{"name": "team", "expression": "'platform'"}],
                 "mutations": mutations}})
    }

    #[test]
    fn a_mutating_policy_adds_a_label_with_an_apply_configuration() {
        let policy = mpol(
            json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": "Object{metadata: Object.metadata{labels: {'team': variables.team}}}"}}]),
        );
        let CelPolicyOutcome::Applied(out) = evaluate_mutating_policy(&policy, &create(pod("dev")))
        else {
            panic!("not applied");
        };
        assert_eq!(out["metadata"]["labels"], json!({"team": "platform"}));
        assert_eq!(
            out["spec"],
            pod("dev")["spec"],
            "the rest of the object stays"
        );
        assert_eq!(
            evaluate_mutating_policy(&policy, &create(pod("prod"))),
            CelPolicyOutcome::NotMatched
        );
    }

    #[test]
    fn a_mutating_policy_applies_json_patches_in_order() {
        let policy = mpol(json!([
            {"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'add', path: '/metadata/labels', value: {}}]"}},
            {"patchType": "JSONPatch", "jsonPatch": {"expression":
                "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b'), value: string(size(object.metadata.labels))}]"}},
        ]));
        let CelPolicyOutcome::Applied(out) = evaluate_mutating_policy(&policy, &create(pod("dev")))
        else {
            panic!("not applied");
        };
        assert_eq!(out["metadata"]["labels"], json!({"a/b": "0"}));
    }

    #[test]
    fn what_cannot_be_evaluated_is_unsupported_never_applied() {
        let policy = mpol(
            json!([{"patchType": "ApplyConfiguration", "applyConfiguration": {
            "expression": "Object{metadata: Object.metadata{labels: {'x': string(image.GetMetadata('nginx').config.created)}}}"}}]),
        );
        assert!(matches!(
            evaluate_mutating_policy(&policy, &create(pod("dev"))),
            CelPolicyOutcome::Unsupported { .. }
        ));
        let gpol = json!({"kind": "GeneratingPolicy", "metadata": {"name": "g"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["namespaces"]}]},
            "generate": [{"template": {"interpolate": "cel",
                "value": "kind: ConfigMap\nmetadata:\n  name: (( string(image.GetMetadata('nginx').config.created) ))"}}]}});
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}});
        assert!(matches!(
            evaluate_generating_policy(&gpol, &create(ns.clone())),
            CelPolicyOutcome::Unsupported { .. }
        ));
        // A template the interpreter can render is generated, in its own namespace.
        let mut gpol = gpol;
        gpol["spec"]["generate"][0]["template"]["value"] =
            json!("kind: ConfigMap\nmetadata:\n  name: c\n  namespace: (( object.metadata.name ))");
        match evaluate_generating_policy(&gpol, &create(ns)) {
            CelPolicyOutcome::Applied(made) => {
                assert_eq!(
                    made,
                    vec![json!({"kind": "ConfigMap",
                    "metadata": {"name": "c", "namespace": "team-a"}})]
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unsupported_match_condition_says_its_reason_once() {
        let mut policy = mpol(json!([]));
        policy["spec"]["matchConditions"] = json!([{"name": "allowed", "expression": "authorizer.requestResource.check('get').allowed()"}]);
        let CelPolicyOutcome::Unsupported { message, why } =
            evaluate_mutating_policy(&policy, &create(pod("dev")))
        else {
            panic!("an authorizer condition is not evaluated offline");
        };
        assert_eq!(why, Unsupported::Authorizer);
        assert_eq!(
            message,
            format!("failed to evaluate matchCondition 'allowed': {why}")
        );
    }

    #[test]
    fn a_generating_policy_creates_a_network_policy_in_each_new_namespace() {
        let gpol = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "GeneratingPolicy",
            "metadata": {"name": "default-deny"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["namespaces"]}]},
            "variables": [{"name": "np", "expression":
                "[{'apiVersion': 'networking.k8s.io/v1', 'kind': 'NetworkPolicy', 'metadata': {'name': 'default-deny'}, 'spec': {'podSelector': {}, 'policyTypes': ['Ingress']}}]"}],
            "generate": [{"expression": "generator.Apply(object.metadata.name, variables.np)"}]}});
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}});
        let CelPolicyOutcome::Applied(made) = evaluate_generating_policy(&gpol, &create(ns)) else {
            panic!("not applied");
        };
        assert_eq!(made.len(), 1);
        assert_eq!(made[0]["kind"], "NetworkPolicy");
        assert_eq!(made[0]["metadata"]["namespace"], "team-a");
        assert_eq!(
            evaluate_generating_policy(&gpol, &create(pod("dev"))),
            CelPolicyOutcome::NotMatched
        );
    }

    #[test]
    fn audit_annotations_give_their_non_empty_strings_and_fail_on_other_values() {
        let with = |exprs: Value| {
            let mut p = mpol(json!([]));
            p["spec"]["auditAnnotations"] = exprs;
            audit_annotations(&p, &create(pod("dev")))
        };
        let got = with(json!([
            {"key": "who", "valueExpression": "variables.team + '/' + object.metadata.name"},
            {"key": "empty", "valueExpression": "''"}
        ]))
        .unwrap();
        assert_eq!(got, vec![("who".to_string(), "platform/p".to_string())]);
        let err = with(json!([{"key": "n", "valueExpression": "1"}])).unwrap_err();
        assert!(
            err.message.contains("auditAnnotation \"n\""),
            "{}",
            err.message
        );
        assert!(with(json!([])).unwrap().is_empty());
    }
}
