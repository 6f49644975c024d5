//! Kyverno's admission-policy generator (pkg/controllers/admissionpolicygenerator,
//! pkg/admissionpolicy at v1.19.0): the ValidatingAdmissionPolicy and binding made from a
//! ClusterPolicy whose one rule is `validate.cel` with `generate: true`
//! (`kyvernopolicy_checker.go` says when it must not be, `builder.go` what it holds,
//! PolicyExceptions folded in as excluded resources) or from a ValidatingPolicy with
//! `autogen.validatingAdmissionPolicy.enabled`; the MutatingAdmissionPolicy and binding of
//! a MutatingPolicy with `autogen.mutatingAdmissionPolicy.enabled` (`generate-map.go`).
//! Pure: it computes what the controller would write; the cluster stores it.

use serde_json::{Map, Value, json};

use super::super::cluster::text;
use crate::offline::kyverno::matching::wildcard_match;
use crate::offline::kyverno::vap_candidate::{self, SKIP};
use crate::offline::rbac::resource::Mapper;

/// `app.kubernetes.io/managed-by: kyverno` (`controllerutils.SetManagedByKyvernoLabel`).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kyverno");

/// What the generator decided for one policy.
#[derive(Debug, Clone, PartialEq)]
pub enum Generation {
    /// The policy is not the generator's business (no validate rule, not enabled
    /// globally): nothing made, the status untouched.
    Untouched,
    /// Not generated, with the status message the controller sets.
    Declined(String),
    /// The objects made (policy, binding).
    Made(Vec<Value>),
}

/// The decision for `policy` (a ClusterPolicy, ValidatingPolicy or MutatingPolicy) given
/// every object in the cluster (its exceptions, CRDs for discovery).
pub fn generate(policy: &Value, objects: &[Value], mapper: &Mapper) -> Generation {
    match text(policy, "/kind").as_str() {
        "ClusterPolicy" => from_cluster_policy(policy, objects, mapper),
        "ValidatingPolicy" => from_validating_policy(policy, objects),
        "MutatingPolicy" => from_mutating_policy(policy, objects),
        _ => Generation::Untouched,
    }
}

fn owner(policy: &Value) -> Value {
    json!([{
        "apiVersion": text(policy, "/apiVersion"),
        "kind": text(policy, "/kind"),
        "name": text(policy, "/metadata/name"),
        "uid": text(policy, "/metadata/uid"),
    }])
}

/// Labels of a generated object: managed by Kyverno, and the policy's
/// `reports.kyverno.io/disabled` carried over (`builder.go`).
fn labels(policy: &Value, binding: bool) -> Value {
    let mut l = Map::new();
    l.insert(MANAGED_BY.0.into(), json!(MANAGED_BY.1));
    let excluded = "reports.kyverno.io/disabled";
    if !binding
        && policy
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(excluded))
    {
        l.insert(excluded.into(), json!("true"));
    }
    Value::Object(l)
}

/// The API server's defaults for an admission policy's spec (failurePolicy `Fail`,
/// matchPolicy `Equivalent`, empty selectors, rule scope `*`).
fn defaulted(mut spec: Value) -> Value {
    if let Some(m) = spec.as_object_mut() {
        m.retain(|_, v| !v.is_null());
        m.entry("failurePolicy").or_insert(json!("Fail"));
        let mc = m.entry("matchConstraints").or_insert(json!({}));
        if let Some(mc) = mc.as_object_mut() {
            mc.entry("matchPolicy").or_insert(json!("Equivalent"));
            mc.entry("namespaceSelector").or_insert(json!({}));
            mc.entry("objectSelector").or_insert(json!({}));
            for key in ["resourceRules", "excludeResourceRules"] {
                if let Some(rules) = mc.get_mut(key).and_then(Value::as_array_mut) {
                    for r in rules.iter_mut().filter_map(Value::as_object_mut) {
                        r.entry("scope").or_insert(json!("*"));
                    }
                }
            }
        }
    }
    spec
}

fn object(api_version: &str, kind: &str, name: &str, policy: &Value, spec: Value) -> Value {
    let binding = kind.ends_with("Binding");
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": name, "labels": labels(policy, binding), "ownerReferences": owner(policy)},
        "spec": spec,
    })
}

// --- ClusterPolicy -------------------------------------------------------------

fn from_cluster_policy(policy: &Value, objects: &[Value], mapper: &Mapper) -> Generation {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let rules = list(spec, "rules");
    // controller.go `reconcile`: only policies with a validate rule.
    if !rules.iter().any(|r| r.get("validate").is_some()) {
        return Generation::Untouched;
    }
    let name = text(policy, "/metadata/name");
    let rule_name = rules.first().map(|r| text(r, "/name")).unwrap_or_default();
    let exceptions: Vec<&Value> = objects
        .iter()
        .filter(|o| {
            text(o, "/kind") == "PolicyException"
                && text(o, "/apiVersion").starts_with("kyverno.io/")
                && list(o.get("spec").unwrap_or(&Value::Null), "exceptions")
                    .iter()
                    .any(|e| {
                        text(e, "/policyName") == name
                            && list(e, "ruleNames")
                                .iter()
                                .filter_map(|r| r.as_str())
                                .any(|r| wildcard_match(r, &rule_name))
                    })
        })
        .collect();
    if let Err(msg) =
        vap_candidate::check_policy(spec, false).and_then(|()| check_exceptions(&exceptions))
    {
        return Generation::Declined(msg);
    }
    let rule = rules[0];
    let Some(mut constraints) = match_constraints(rule, &exceptions, mapper) else {
        // `BuildValidatingAdmissionPolicy` fails (no unique resource for a kind): the
        // controller retries and never generates.
        return Generation::Untouched;
    };
    if let Some(m) = constraints.as_object_mut() {
        m.retain(|_, v| !v.is_null());
    }
    let cel = rule.pointer("/validate/cel").unwrap_or(&Value::Null);
    let vap_name = format!("cpol-{name}");
    let vap_spec = defaulted(json!({
        "matchConstraints": constraints,
        "paramKind": cel.get("paramKind"),
        "variables": cel.get("variables"),
        "validations": cel.get("expressions"),
        "auditAnnotations": cel.get("auditAnnotations"),
        "matchConditions": rule.get("celPreconditions"),
    }));
    // `BuildValidatingAdmissionPolicyBinding`: the rule's failureAction, else the
    // policy's validationFailureAction.
    let action = match rule
        .pointer("/validate/failureAction")
        .and_then(Value::as_str)
    {
        Some(a) => a.to_string(),
        None => text(spec, "/validationFailureAction"),
    };
    let actions = match action.to_lowercase().as_str() {
        "enforce" => json!(["Deny"]),
        "audit" | "" => json!(["Audit", "Warn"]),
        _ => json!([]),
    };
    let mut binding = json!({"policyName": vap_name, "validationActions": actions});
    if let Some(p) = cel.get("paramRef") {
        binding["paramRef"] = p.clone();
    }
    Generation::Made(vec![
        object(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            &vap_name,
            policy,
            vap_spec,
        ),
        object(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            &format!("{vap_name}-binding"),
            policy,
            binding,
        ),
    ])
}

fn list<'a>(v: &'a Value, key: &str) -> Vec<&'a Value> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    list(v, key).into_iter().filter_map(Value::as_str).collect()
}

fn non_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// `checkExceptions`.
fn check_exceptions(exceptions: &[&Value]) -> Result<(), String> {
    for ex in exceptions {
        let spec = ex.get("spec").unwrap_or(&Value::Null);
        if list(spec, "exceptions")
            .iter()
            .any(|e| list(e, "ruleNames").len() > 1)
        {
            return Err(format!(
                "{SKIP}: multiple ruleNames in PolicyException is not applicable."
            ));
        }
        if spec.get("conditions").is_some_and(|c| !c.is_null()) {
            return Err(format!(
                "{SKIP}: Conditions in PolicyException is not applicable."
            ));
        }
        let m = spec.get("match").unwrap_or(&Value::Null);
        vap_candidate::check_filters(&list(m, "any"), false)?;
        if list(m, "all").len() > 1 {
            return Err(format!(
                "{SKIP}: multiple 'all' in the PolicyException's match block is not applicable."
            ));
        }
        vap_candidate::check_filters(&list(m, "all"), false)?;
    }
    Ok(())
}

/// `matchConstraints` of the VAP (`builder.go`: the match block, the exclude block and
/// the exceptions' match blocks as excluded resources). `None` when a kind has no unique
/// resource.
fn match_constraints(rule: &Value, exceptions: &[&Value], mapper: &Mapper) -> Option<Value> {
    let mut out = Map::new();
    let mut matched: Vec<Value> = Vec::new();
    let mut excluded: Vec<Value> = Vec::new();
    let empty = json!({});
    let m = rule.get("match").unwrap_or(&empty);
    let descriptions = |block: &Value| -> Vec<Value> {
        let mut d = Vec::new();
        if let Some(r) = block.get("resources").filter(|r| non_empty(Some(r))) {
            d.push(r.clone());
        }
        for key in ["any", "all"] {
            for f in list(block, key) {
                d.push(f.get("resources").cloned().unwrap_or(json!({})));
            }
        }
        d
    };
    for res in descriptions(m) {
        translate(&mut out, &mut matched, &res, true, mapper)?;
    }
    if let Some(x) = rule.get("exclude").filter(|x| x.is_object()) {
        for res in descriptions(x) {
            translate(&mut out, &mut excluded, &res, false, mapper)?;
        }
    }
    for ex in exceptions {
        let block = ex.pointer("/spec/match").unwrap_or(&empty);
        for key in ["any", "all"] {
            for f in list(block, key) {
                let res = f.get("resources").cloned().unwrap_or(json!({}));
                translate(&mut out, &mut excluded, &res, false, mapper)?;
            }
        }
    }
    Some(Value::Object(out))
}

/// `translateResource`: the description's rules appended to `rules`; the match block's
/// last description sets the selectors.
fn translate(
    out: &mut Map<String, Value>,
    rules: &mut Vec<Value>,
    res: &Value,
    is_match: bool,
    mapper: &Mapper,
) -> Option<()> {
    construct_rules(rules, res, is_match, mapper)?;
    if is_match {
        out.insert("resourceRules".into(), Value::Array(rules.clone()));
        let namespaces = strings(res, "namespaces");
        let ns_selector = if namespaces.is_empty() {
            res.get("namespaceSelector").cloned().unwrap_or(Value::Null)
        } else {
            json!({"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                "operator": "In", "values": namespaces}]})
        };
        out.insert("namespaceSelector".into(), ns_selector);
        out.insert(
            "objectSelector".into(),
            res.get("selector").cloned().unwrap_or(Value::Null),
        );
    } else {
        out.insert("excludeResourceRules".into(), Value::Array(rules.clone()));
    }
    Some(())
}

/// `translateOperations`: Kyverno's operations, all four when none is named.
fn operations(res: &Value) -> Value {
    let ops: Vec<&str> = strings(res, "operations")
        .into_iter()
        .filter(|o| matches!(*o, "CREATE" | "UPDATE" | "CONNECT" | "DELETE"))
        .collect();
    if ops.is_empty() {
        json!(["CREATE", "UPDATE", "CONNECT", "DELETE"])
    } else {
        json!(ops)
    }
}

/// `constructValidatingAdmissionPolicyRules`.
fn construct_rules(
    rules: &mut Vec<Value>,
    res: &Value,
    is_match: bool,
    mapper: &Mapper,
) -> Option<()> {
    let ops = operations(res);
    let mut names: Vec<String> = strings(res, "names")
        .into_iter()
        .map(str::to_string)
        .collect();
    let name = text(res, "/name");
    if !name.is_empty() {
        names.push(name);
    }
    let rule = |group: &str, version: &str, mut resources: Vec<String>| {
        resources.sort();
        let mut r = json!({"apiGroups": [group], "apiVersions": [version],
            "resources": resources, "operations": ops});
        if !names.is_empty() {
            r["resourceNames"] = json!(names);
        }
        r
    };
    for kind in strings(res, "kinds") {
        if kind == "*" {
            rules.push(rule("*", "*", vec!["*".into()]));
            continue;
        }
        let (group, version, resource) = vap_candidate::discover(kind, mapper)?;
        let mut resources = vec![resource.clone()];
        if resource == "pods" {
            resources.push("pods/ephemeralcontainers".into());
        }
        // A rule of the same group and version takes the resources.
        let same = rules.iter_mut().find(|r| {
            strings(r, "apiGroups").contains(&group.as_str())
                && strings(r, "apiVersions").contains(&version.as_str())
        });
        match same {
            Some(r) => {
                let mut all: Vec<String> = strings(r, "resources")
                    .into_iter()
                    .map(str::to_string)
                    .chain(resources)
                    .collect();
                all.sort();
                r["resources"] = json!(all);
            }
            None => rules.push(rule(&group, &version, resources)),
        }
    }
    let namespaces = strings(res, "namespaces");
    if !is_match && !namespaces.is_empty() && !non_empty(res.get("kinds")) {
        rules.push(
            json!({"resourceNames": namespaces, "resources": ["namespaces"],
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ops}),
        );
    }
    Some(())
}

// --- ValidatingPolicy / MutatingPolicy ----------------------------------------

fn enabled(policy: &Value, which: &str) -> bool {
    policy
        .pointer(&format!("/spec/autogen/{which}/enabled"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The CEL PolicyExceptions naming the policy (`getCELExceptions`).
fn cel_exceptions<'a>(policy: &Value, objects: &'a [Value]) -> Vec<&'a Value> {
    let name = text(policy, "/metadata/name");
    objects
        .iter()
        .filter(|o| {
            text(o, "/kind") == "PolicyException"
                && text(o, "/apiVersion").starts_with("policies.kyverno.io/")
                && list(o.get("spec").unwrap_or(&Value::Null), "policyRefs")
                    .iter()
                    .any(|r| text(r, "/name") == name)
        })
        .collect()
}

/// The exceptions' match conditions negated (`negateExceptionMatchConditions`).
fn negated(exceptions: &[&Value]) -> Vec<Value> {
    exceptions
        .iter()
        .flat_map(|e| list(e.get("spec").unwrap_or(&Value::Null), "matchConditions"))
        .map(|mc| {
            json!({"name": text(mc, "/name"),
                "expression": format!("!({})", text(mc, "/expression"))})
        })
        .collect()
}

fn quoted(items: &[&str]) -> String {
    let q: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("[{}]", q.join(", "))
}

fn from_validating_policy(policy: &Value, objects: &[Value]) -> Generation {
    // generate-vap.go: not enabled, or autogen for Pod controllers → deleted.
    if !enabled(policy, "validatingAdmissionPolicy") {
        return Generation::Declined(format!("{SKIP}: not enabled."));
    }
    if super::status::has_autogen(policy) {
        return Generation::Declined(format!("{SKIP}: pod controllers autogen is enabled."));
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let exceptions = cel_exceptions(policy, objects);
    let mut conditions: Vec<Value> = list(spec, "matchConditions").into_iter().cloned().collect();
    let mut variables: Vec<Value> = list(spec, "variables").into_iter().cloned().collect();
    for ex in &exceptions {
        let es = ex.get("spec").unwrap_or(&Value::Null);
        conditions.extend(negated(&[ex]));
        for (field, var) in [
            ("images", "allowedImages"),
            ("allowedValues", "allowedValues"),
        ] {
            let items = strings(es, field);
            if !items.is_empty() {
                variables.push(json!({"name": var, "expression": quoted(&items)}));
            }
        }
    }
    let validations: Vec<Value> = list(spec, "validations")
        .into_iter()
        .map(|v| {
            let mut v = v.clone();
            if let Some(Value::String(e)) = v.get_mut("expression") {
                *e = e
                    .replace("exceptions.allowedImages", "variables.allowedImages")
                    .replace("exceptions.allowedValues", "variables.allowedValues");
            }
            v
        })
        .collect();
    let nonempty = |v: Vec<Value>| (!v.is_empty()).then_some(Value::Array(v));
    let vap_spec = defaulted(json!({
        "matchConstraints": spec.get("matchConstraints").cloned().unwrap_or(json!({})),
        "matchConditions": nonempty(conditions),
        "validations": nonempty(validations),
        "auditAnnotations": spec.get("auditAnnotations"),
        "variables": nonempty(variables),
    }));
    let actions = match spec.get("validationActions").and_then(Value::as_array) {
        Some(a) if !a.is_empty() => Value::Array(a.clone()),
        _ => json!(["Deny"]),
    };
    let name = format!("vpol-{}", text(policy, "/metadata/name"));
    Generation::Made(vec![
        object(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            &name,
            policy,
            vap_spec,
        ),
        object(
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            &format!("{name}-binding"),
            policy,
            json!({"policyName": name, "validationActions": actions}),
        ),
    ])
}

fn from_mutating_policy(policy: &Value, objects: &[Value]) -> Generation {
    // controller.go: the global toggle (on in the suite's
    // `generate-mutating-admission-policy` configuration) or the policy's own flag.
    // Without either, nothing is touched; with it, mapGenerationSkipReason decides.
    if !enabled(policy, "mutatingAdmissionPolicy") {
        return Generation::Declined(
            "skip generating MutatingAdmissionPolicy: not enabled.".into(),
        );
    }
    // `EvaluationConfiguration.UseServerSideApply` (json name as the CRD serves it).
    if policy
        .pointer("/spec/evaluation/useServerSideApply")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return Generation::Declined("skip generating MutatingAdmissionPolicy: useServerSideApply is enabled, which mutates atomic fields that a native MutatingAdmissionPolicy rejects.".into());
    }
    if super::status::has_autogen(policy) {
        return Generation::Declined(
            "skip generating MutatingAdmissionPolicy: pod controllers autogen is enabled.".into(),
        );
    }
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let exceptions = cel_exceptions(policy, objects);
    let mut conditions = negated(&exceptions);
    conditions.extend(list(spec, "matchConditions").into_iter().cloned());
    let rules: Vec<Value> = list(
        spec.get("matchConstraints").unwrap_or(&Value::Null),
        "resourceRules",
    )
    .into_iter()
    .cloned()
    .collect();
    let nonempty = |v: Vec<Value>| (!v.is_empty()).then_some(Value::Array(v));
    let map_spec = json!({
        "matchConstraints": {"resourceRules": rules},
        "matchConditions": nonempty(conditions),
        "mutations": spec.get("mutations"),
        "variables": spec.get("variables"),
        "failurePolicy": spec.get("failurePolicy"),
        // `GetReinvocationPolicy`: Never unless the policy says otherwise.
        "reinvocationPolicy": spec.get("reinvocationPolicy").cloned().unwrap_or(json!("Never")),
    });
    let name = format!("mpol-{}", text(policy, "/metadata/name"));
    let av = "admissionregistration.k8s.io/v1";
    Generation::Made(vec![
        object(
            av,
            "MutatingAdmissionPolicy",
            &name,
            policy,
            defaulted(map_spec),
        ),
        object(
            av,
            "MutatingAdmissionPolicyBinding",
            &format!("{name}-binding"),
            policy,
            json!({"policyName": name}),
        ),
    ])
}
