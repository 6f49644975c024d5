//! Autogen for Kyverno's CEL policies, as Kyverno 1.19 does it (`pkg/cel/autogen/`): a
//! ValidatingPolicy or MutatingPolicy written for Pods alone also runs on the Pod
//! controllers, as a copy whose match constraints name the controllers and whose
//! expressions read the Pod template. One decision (which policies, which controllers,
//! which constraints) for both kinds; the expressions are rewritten as each kind's
//! autogen does (`pkg/cel/policies/vpol/autogen`, `pkg/cel/policies/mpol/autogen`).

use super::*;

/// A Pod controller autogen knows: kind, API group, resource, and whether its Pod
/// template is a CronJob's (`spec.jobTemplate.spec.template`) rather than
/// `spec.template`. ReplicationControllers are not among them (`data.go`).
struct Controller {
    kind: &'static str,
    group: &'static str,
    resource: &'static str,
    cronjob: bool,
}

const CONTROLLERS: &[Controller] = &[
    Controller {
        kind: "DaemonSet",
        group: "apps",
        resource: "daemonsets",
        cronjob: false,
    },
    Controller {
        kind: "Deployment",
        group: "apps",
        resource: "deployments",
        cronjob: false,
    },
    Controller {
        kind: "ReplicaSet",
        group: "apps",
        resource: "replicasets",
        cronjob: false,
    },
    Controller {
        kind: "StatefulSet",
        group: "apps",
        resource: "statefulsets",
        cronjob: false,
    },
    Controller {
        kind: "Job",
        group: "batch",
        resource: "jobs",
        cronjob: false,
    },
    Controller {
        kind: "CronJob",
        group: "batch",
        resource: "cronjobs",
        cronjob: true,
    },
];

/// How a kind's autogen rewrites its expressions.
#[derive(Clone, Copy)]
pub(super) enum Rewrite {
    /// ValidatingPolicy: every string of the spec, `object.spec`/`object.metadata` (and
    /// `oldObject.…`) moved to the template, `….metadata.namespace` kept.
    Validating,
    /// MutatingPolicy: match conditions and apply configurations only, `spec`,
    /// `metadata.labels` and `metadata.annotations` of `object`/`oldObject`/`Object`
    /// moved, and the root `Object{…}` wrapped in the controller's template.
    Mutating,
}

/// `CanAutoGen` (`support.go`): one resource rule for `pods` alone in the core group
/// v1, without resource names, exclusions or an object selector.
fn can_autogen(constraints: &Value) -> bool {
    if constraints.is_null() {
        return false;
    }
    if let Some(sel) = constraints.get("objectSelector") {
        let some = |k: &str| {
            sel.get(k).is_some_and(|v| {
                v.as_object().is_some_and(|m| !m.is_empty())
                    || v.as_array().is_some_and(|a| !a.is_empty())
            })
        };
        if some("matchLabels") || some("matchExpressions") {
            return false;
        }
    }
    if list(constraints, "excludeResourceRules").next().is_some() {
        return false;
    }
    let rules: Vec<&Value> = list(constraints, "resourceRules").collect();
    let [rule] = rules.as_slice() else {
        return false;
    };
    let strs = |k: &str| -> Vec<&str> { list(rule, k).filter_map(Value::as_str).collect() };
    strs("resourceNames").is_empty()
        && strs("apiGroups") == [""]
        && strs("apiVersions") == ["v1"]
        && strs("resources") == ["pods"]
}

/// The Pod-controller kinds `policy` (a ValidatingPolicy or MutatingPolicy) gets autogen
/// copies for — what `status.autogen.configs` covers; empty when it has none.
/// The autogen copy of a ValidatingPolicy for the Pod controller `kind` (what
/// `status.autogen.configs` describes), `None` when it has none for that kind.
pub fn validating_autogen_copy(policy: &Value, kind: &str) -> Option<Value> {
    autogen_policy(policy, kind, Rewrite::Validating)
}

pub fn autogen_kinds(policy: &Value) -> Vec<&'static str> {
    CONTROLLERS
        .iter()
        .filter(|c| autogen_policy(policy, c.kind, Rewrite::Validating).is_some())
        .map(|c| c.kind)
        .collect()
}

/// The autogen copy of `policy` that applies to a `kind` object, or `None` when the
/// policy has no autogen or none for that controller (`spec.autogen.podControllers
/// .controllers` names resources, `deployments`, …; all six by default).
pub(super) fn autogen_policy(policy: &Value, kind: &str, rewrite: Rewrite) -> Option<Value> {
    let c = CONTROLLERS.iter().find(|c| c.kind == kind)?;
    let spec = policy.get("spec")?;
    let constraints = spec.get("matchConstraints").unwrap_or(&Value::Null);
    if !can_autogen(constraints) {
        return None;
    }
    if let Some(wanted) = spec
        .pointer("/autogen/podControllers/controllers")
        .and_then(Value::as_array)
        && !wanted.iter().any(|w| w.as_str() == Some(c.resource))
    {
        return None;
    }
    let operations = constraints
        .pointer("/resourceRules/0/operations")
        .cloned()
        .unwrap_or(json!([]));
    let mut copy = policy.clone();
    let cspec = &mut copy["spec"];
    if let Value::Object(m) = cspec {
        m.remove("matchConstraints");
    }
    let template = if c.cronjob {
        "spec.jobTemplate.spec.template"
    } else {
        "spec.template"
    };
    match rewrite {
        Rewrite::Validating => rewrite_strings(cspec, &|s| replace_fields(s, template)),
        Rewrite::Mutating => {
            for key in ["/matchConditions", "/mutations"] {
                let Some(items) = cspec.pointer_mut(key).and_then(Value::as_array_mut) else {
                    continue;
                };
                for item in items {
                    let field = if key == "/mutations" {
                        "/applyConfiguration/expression"
                    } else {
                        "/expression"
                    };
                    if let Some(Value::String(e)) = item.pointer_mut(field) {
                        *e = to_template_expression(e, c.cronjob);
                    }
                }
            }
        }
    }
    // `CreateMatchConstraints` (`match.go`): the controller's resource with the Pod
    // rule's operations and namespace selector; nothing else of the original.
    let mut mc = json!({"resourceRules": [{
        "apiGroups": [c.group], "apiVersions": ["v1"],
        "resources": [c.resource], "operations": operations}]});
    if let Some(sel) = constraints.get("namespaceSelector") {
        mc["namespaceSelector"] = sel.clone();
    }
    cspec["matchConstraints"] = mc;
    Some(copy)
}

fn rewrite_strings(v: &mut Value, f: &dyn Fn(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(a) => a.iter_mut().for_each(|x| rewrite_strings(x, f)),
        Value::Object(m) => m.values_mut().for_each(|x| rewrite_strings(x, f)),
        _ => {}
    }
}

/// A ValidatingPolicy's replacements (`replacement.go`, `data.go`): `object.spec` and
/// `object.metadata` (and `oldObject.…`) become the template's, as plain text, except an
/// occurrence followed by `.namespace` (the workload's own namespace stays).
pub(super) fn replace_fields(text: &str, template: &str) -> String {
    let mut out = text.to_string();
    for field in ["spec", "metadata"] {
        for root in ["object", "oldObject"] {
            let from = format!("{root}.{field}");
            let to = format!("{root}.{template}.{field}");
            out = replace_unprotected(&out, &from, &to);
        }
    }
    out
}

fn replace_unprotected(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        out.push_str(&rest[..i]);
        let after = &rest[i + from.len()..];
        let protected = after.strip_prefix(".namespace").is_some_and(|tail| {
            !tail
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        out.push_str(if protected { from } else { to });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A MutatingPolicy's rewriting of one expression (`convertPodToTemplateExpression`):
/// `object.spec`, `….metadata.labels` and `….metadata.annotations` of `object`,
/// `oldObject` and `Object` (a whole word: `namespaceObject` stays) move to the
/// template, then a root `Object{…}` is wrapped in the controller's template.
pub(super) fn to_template_expression(expr: &str, cronjob: bool) -> String {
    let template = if cronjob {
        "spec.jobTemplate.spec.template"
    } else {
        "spec.template"
    };
    let mut out = expr.to_string();
    for (from, to) in [
        ("spec", format!("{template}.spec")),
        ("metadata.labels", format!("{template}.metadata.labels")),
        (
            "metadata.annotations",
            format!("{template}.metadata.annotations"),
        ),
    ] {
        for root in ["object", "oldObject", "Object"] {
            out = replace_words(&out, &format!("{root}.{from}"), &format!("{root}.{to}"));
        }
    }
    wrap_root_object(&out, cronjob)
}

/// `from` replaced where it starts a word (`\b` before it, as the regex has).
fn replace_words(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(from) {
        let before = rest[..i].chars().next_back().or(prev);
        let word_start = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..i]);
        out.push_str(if word_start { to } else { from });
        prev = from.chars().next_back();
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    out
}

/// `Object{…}` at the root becomes `Object{spec: Object.spec{template: …{…}}}`; the
/// braces are counted as upstream counts them (not skipping string literals).
fn wrap_root_object(expr: &str, cronjob: bool) -> String {
    let Some(rest) = expr.trim().strip_prefix("Object") else {
        return expr.to_string();
    };
    let Some(content) = rest.trim_start().strip_prefix('{') else {
        return expr.to_string();
    };
    let mut depth = 1;
    let mut end = None;
    for (i, ch) in content.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    end = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(end) = end.filter(|e| *e > 0) else {
        return expr.to_string();
    };
    let (inner, remaining) = (&content[..end], &content[end + 1..]);
    let (open, close) = if cronjob {
        (
            "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: \
             Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{",
            "}}}}}",
        )
    } else {
        (
            "Object{spec: Object.spec{template: Object.spec.template{",
            "}}}",
        )
    };
    format!("{open}{inner}{close}{remaining}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validating_replacements_are_plain_text_and_keep_the_namespace() {
        for (from, to) in [
            ("object.spec.x", "object.spec.template.spec.x"),
            ("oldObject.spec.x", "oldObject.spec.template.spec.x"),
            (
                "object.metadata.labels",
                "object.spec.template.metadata.labels",
            ),
            // Only the namespace is protected (`replacement.go`): the name moves.
            ("object.metadata.name", "object.spec.template.metadata.name"),
            ("object.metadata.namespace", "object.metadata.namespace"),
            (
                "object.metadata.namespaces",
                "object.spec.template.metadata.namespaces",
            ),
            // Plain text, as upstream replaces it.
            ("params.object.spec", "params.object.spec.template.spec"),
        ] {
            assert_eq!(replace_fields(from, "spec.template"), to, "{from}");
        }
    }

    #[test]
    fn mutating_policy_autogen_was_missing_and_wraps_the_root_object() {
        assert_eq!(
            to_template_expression(
                "Object{metadata: Object.metadata{labels: {'a': object.metadata.labels.b}}}",
                false
            ),
            "Object{spec: Object.spec{template: Object.spec.template{metadata: \
             Object.metadata{labels: {'a': object.spec.template.metadata.labels.b}}}}}"
        );
        assert_eq!(
            to_template_expression("namespaceObject.spec.x == object.metadata.name", true),
            "namespaceObject.spec.x == object.metadata.name"
        );
        assert_eq!(
            to_template_expression("Object {spec: Object.spec{x: 1}}", true),
            "Object{spec: Object.spec{jobTemplate: Object.spec.jobTemplate{spec: \
             Object.spec.jobTemplate.spec{template: Object.spec.jobTemplate.spec.template{\
             spec: Object.spec.jobTemplate.spec.template.spec{x: 1}}}}}}"
        );
    }

    #[test]
    fn only_a_pod_only_policy_has_autogen_and_only_for_the_listed_controllers() {
        let policy = |rules: Value, controllers: Option<Value>| {
            let mut p = json!({"kind": "MutatingPolicy", "metadata": {"name": "m"},
                "spec": {"matchConstraints": {"resourceRules": rules}}});
            if let Some(c) = controllers {
                p["spec"]["autogen"] = json!({"podControllers": {"controllers": c}});
            }
            p
        };
        let pods = json!([{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["pods"]}]);
        let copy = autogen_policy(&policy(pods.clone(), None), "CronJob", Rewrite::Mutating)
            .expect("a copy for CronJobs");
        assert_eq!(
            copy["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
            json!(["cronjobs"])
        );
        assert!(
            autogen_policy(
                &policy(pods.clone(), None),
                "ReplicationController",
                Rewrite::Mutating
            )
            .is_none()
        );
        let only = policy(pods.clone(), Some(json!(["deployments"])));
        assert!(autogen_policy(&only, "Deployment", Rewrite::Mutating).is_some());
        assert!(autogen_policy(&only, "Job", Rewrite::Mutating).is_none());
        let none = policy(pods, Some(json!([])));
        assert!(autogen_policy(&none, "Deployment", Rewrite::Mutating).is_none());
        let two =
            json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods", "services"]}]);
        assert!(autogen_policy(&policy(two, None), "Deployment", Rewrite::Mutating).is_none());
    }
}
