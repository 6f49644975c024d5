//! One `mutate` rule applied to a resource that the rule already matched:
//! `patchStrategicMerge`, `patchesJson6902` and `foreach`, with variables substituted
//! first. It does not match rules or check rule-level preconditions.

use serde_json::{Value, json};

use super::entries::{self, Options};
use super::outcome::{Outcome, Unsupported};
use super::rule::Rule;
use super::{Context, conditions, jsonpatch, smp, vars};

/// What Kyverno reports when a mutate rule leaves the resource as it was.
pub const NO_CHANGE: &str = "skip: no patches applied";

/// Applies the rule's `mutate` block to `resource`. `Ok` is the changed object (the rule
/// passes); `Err` is the rule's outcome otherwise: a skip ([`NO_CHANGE`]), a feature the
/// offline engine does not evaluate ([`Unsupported`]), or a rule error (bad patch,
/// unresolvable variable).
pub fn apply_rule(rule: &Value, resource: &Value, ctx: &Context) -> Result<Value, Outcome> {
    apply_rule_with(&Rule::decode(rule), resource, ctx, &Options::default())
}

/// [`apply_rule`] with what the engine knows beyond the request, for `context` entries
/// inside `foreach` (configMaps from `opts.cluster`).
pub fn apply_rule_with(
    rule: &Rule,
    resource: &Value,
    ctx: &Context,
    opts: &Options,
) -> Result<Value, Outcome> {
    let patched = patch_rule(rule, resource, ctx, opts)?;
    if patched == *resource {
        return Err(Outcome::skip(NO_CHANGE));
    }
    Ok(patched)
}

fn patch_rule(
    rule: &Rule,
    resource: &Value,
    ctx: &Context,
    opts: &Options,
) -> Result<Value, Outcome> {
    let mutate = rule
        .mutate
        .as_ref()
        .filter(|m| m.is_object())
        .ok_or("the rule has no mutate block")?;
    if mutate
        .get("targets")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
    {
        return Err(Outcome::unsupported(Unsupported::MutateTargets));
    }
    if let Some(foreach) = mutate.get("foreach").filter(|f| !f.is_null()) {
        let entries = foreach.as_array().ok_or("mutate.foreach must be a list")?;
        return apply_foreach(entries, resource, ctx, 0, opts);
    }
    Ok(apply_patches(mutate, resource, ctx, "mutate")?)
}

/// Why a rule's (or a foreach element's) patch could not be applied: a rule error.
#[derive(Debug, thiserror::Error)]
pub enum PatchFailure {
    #[error("variable substitution failed in {at}.{field}: {source}")]
    Substitution {
        at: &'static str,
        field: &'static str,
        #[source]
        source: vars::VarError,
    },
    #[error("failed to apply {at}.patchStrategicMerge: {source}")]
    Merge {
        at: &'static str,
        #[source]
        source: smp::SmpError,
    },
    #[error("invalid {at}.patchesJson6902: {source}")]
    Decode {
        at: &'static str,
        #[source]
        source: JsonPatchText,
    },
    #[error("failed to apply {at}.patchesJson6902: {source}")]
    Json {
        at: &'static str,
        #[source]
        source: Box<jsonpatch::PatchError>,
    },
    #[error("{0} has neither patchStrategicMerge nor patchesJson6902")]
    NoPatch(&'static str),
}

impl From<PatchFailure> for Outcome {
    fn from(e: PatchFailure) -> Outcome {
        Outcome::error(e.to_string())
    }
}

/// A `patchesJson6902` that is not a list of operations.
#[derive(Debug, thiserror::Error)]
pub enum JsonPatchText {
    #[error(transparent)]
    Yaml(#[from] crate::yaml::YamlError),
    #[error("expected one YAML document, found {0}")]
    Documents(usize),
    #[error("operation {0} is not a map")]
    NotMap(usize),
    #[error("expected a list of operations, found {0}")]
    NotList(Value),
}

/// The patch of a rule or of one foreach element; the strategic merge wins when both
/// are given, as in Kyverno.
fn apply_patches(
    spec: &Value,
    resource: &Value,
    ctx: &Context,
    at: &'static str,
) -> Result<Value, PatchFailure> {
    let substituted = |patch: &Value, field: &'static str| {
        vars::substitute(patch, ctx).map_err(|source| PatchFailure::Substitution {
            at,
            field,
            source,
        })
    };
    if let Some(patch) = spec.get("patchStrategicMerge").filter(|p| !p.is_null()) {
        let patch = substituted(
            &vars::resolve_current_value(patch, ctx),
            "patchStrategicMerge",
        )?;
        return smp::apply(resource, &patch, ctx)
            .map_err(|source| PatchFailure::Merge { at, source });
    }
    let json_patch = spec.get("patchesJson6902").filter(|p| match p {
        Value::String(s) => !s.trim().is_empty(),
        Value::Null => false,
        _ => true,
    });
    if let Some(patch) = json_patch {
        let patch = substituted(patch, "patchesJson6902")?;
        let ops =
            decode_json_patch(&patch).map_err(|source| PatchFailure::Decode { at, source })?;
        return jsonpatch::apply(resource, &ops).map_err(|source| PatchFailure::Json {
            at,
            source: Box::new(source),
        });
    }
    Err(PatchFailure::NoPatch(at))
}

/// `patchesJson6902` is a YAML (or JSON) string holding a list of operations; a list
/// written inline is accepted too.
fn decode_json_patch(patch: &Value) -> Result<Vec<Value>, JsonPatchText> {
    let parsed = match patch {
        Value::String(text) => {
            let docs = crate::yaml::parse_json_stream(text)?;
            match docs.len() {
                0 => Value::Array(Vec::new()),
                1 => docs.into_iter().next().expect("one document"),
                n => return Err(JsonPatchText::Documents(n)),
            }
        }
        other => other.clone(),
    };
    match parsed {
        Value::Array(ops) => {
            if let Some(bad) = ops.iter().position(|op| !op.is_object()) {
                return Err(JsonPatchText::NotMap(bad));
            }
            Ok(ops)
        }
        other => Err(JsonPatchText::NotList(other)),
    }
}

/// Each foreach entry runs over its list in turn; later entries see the resource as the
/// earlier ones left it (`request.object` included).
fn apply_foreach(
    entries: &[Value],
    resource: &Value,
    ctx: &Context,
    nesting: usize,
    opts: &Options,
) -> Result<Value, Outcome> {
    let mut current = resource.clone();
    let mut ctx = ctx.clone();
    for (i, entry) in entries.iter().enumerate() {
        let expr = entry
            .get("list")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("mutate.foreach[{i}] has no list expression"))?;
        let elements = foreach_elements(expr, &ctx)
            .map_err(|e| format!("failed to evaluate list {expr}: {e}"))?;
        let patched = mutate_elements(entry, &elements, &current, &ctx, nesting, opts)?;
        if patched != current {
            current = patched;
            ctx.add_variable("request.object", current.clone());
        }
    }
    Ok(current)
}

fn mutate_elements(
    entry: &Value,
    elements: &[Value],
    resource: &Value,
    ctx: &Context,
    nesting: usize,
    opts: &Options,
) -> Result<Value, Outcome> {
    // Kustomize places new list items from a strategic merge first, so Kyverno walks the
    // elements backwards by default to keep their order in the result.
    let mut reverse = entry
        .get("patchStrategicMerge")
        .is_some_and(|p| !p.is_null());
    if let Some(order) = entry.get("order").and_then(Value::as_str) {
        reverse = order == "Descending";
    }
    let mut order: Vec<usize> = (0..elements.len()).collect();
    if reverse {
        order.reverse();
    }
    let mut patched = resource.clone();
    for index in order {
        let element = &elements[index];
        if element.is_null() {
            continue;
        }
        let mut el_ctx = ctx.with_element(element, index);
        el_ctx.add_variable(&format!("element{nesting}"), element.clone());
        el_ctx.add_variable(&format!("elementIndex{nesting}"), json!(index));
        entries::load_context(entry, &mut el_ctx, opts, None)
            .map_err(|o| context_failure(o, index))?;
        if let Some(pre) = entry.get("preconditions").filter(|p| !p.is_null()) {
            let pass = conditions::evaluate_preconditions(pre, &el_ctx).map_err(|e| {
                format!("failed to evaluate mutate.foreach[{index}].preconditions: {e}")
            })?;
            if !pass {
                continue;
            }
        }
        patched = match entry.get("foreach").filter(|f| !f.is_null()) {
            Some(nested) => {
                let nested = nested.as_array().ok_or("a nested foreach must be a list")?;
                apply_foreach(nested, &patched, &el_ctx, nesting + 1, opts)?
            }
            None => apply_patches(entry, &patched, &el_ctx, "mutate.foreach")?,
        };
    }
    Ok(patched)
}

/// The elements a foreach walks: a list, or any other value as a single element. Kyverno
/// queries the list without the variable check, so a missing path is one null element
/// (skipped), not an error.
pub(crate) fn foreach_elements(expr: &str, ctx: &Context) -> Result<Vec<Value>, vars::VarError> {
    match vars::query(expr, ctx) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(other) => Ok(vec![other]),
        Err(vars::VarError::NotResolved(_)) => Ok(vec![Value::Null]),
        Err(e) => Err(e),
    }
}

/// A context entry the offline engine cannot load skips the rule (with the engine's
/// reason); a broken one is a rule error, as in Kyverno.
pub(crate) fn context_failure(outcome: Outcome, index: usize) -> Outcome {
    if outcome.is_skip() {
        outcome
    } else {
        Outcome::error(format!(
            "failed to load the context of foreach element {index}: {}",
            outcome.message
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::kyverno::Request;

    fn ctx_for(object: &Value) -> Context {
        Context::from_request(&Request {
            object: object.clone(),
            ..Request::default()
        })
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "prod", "labels": {"app": "web"}},
            "spec": {"containers": [
                {"name": "nginx", "image": "nginx:latest"},
                {"name": "sidecar", "image": "ghcr.io/x/sidecar:1.0"}
            ]}
        })
    }

    fn run(mutate: Value, resource: &Value) -> Result<Value, String> {
        let rule = json!({"name": "r", "mutate": mutate});
        match apply_rule(&rule, resource, &ctx_for(resource)) {
            Err(e) if e.message == NO_CHANGE => Ok(resource.clone()),
            other => other.map_err(|e| e.message),
        }
    }

    #[test]
    fn strategic_merge_rules() {
        let resource = pod();
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "label from a variable",
                json!({"patchStrategicMerge": {"metadata": {"labels": {"ns": "{{request.object.metadata.namespace}}"}}}}),
                json!({"/metadata/labels/ns": "prod", "/metadata/labels/app": "web"}),
            ),
            (
                "conditional anchor on image picks one container",
                json!({"patchStrategicMerge": {"spec": {"containers": [{"(image)": "*:latest", "imagePullPolicy": "Always"}]}}}),
                json!({"/spec/containers/0/imagePullPolicy": "Always", "/spec/containers/1/imagePullPolicy": null}),
            ),
            (
                "global anchor gates the whole patch",
                json!({"patchStrategicMerge": {"metadata": {"labels": {"gated": "yes"}}, "spec": {"containers": [{"<(image)": "*:latest"}]}}}),
                json!({"/metadata/labels/gated": "yes"}),
            ),
            (
                "failing global anchor skips everything",
                json!({"patchStrategicMerge": {"metadata": {"labels": {"gated": "yes"}}, "spec": {"containers": [{"<(image)": "*:v9"}]}}}),
                json!({"/metadata/labels/gated": null}),
            ),
        ];
        for (name, mutate, expect) in cases {
            let got = run(mutate, &resource).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (pointer, want) in expect.as_object().unwrap() {
                let actual = got.pointer(pointer).cloned().unwrap_or(Value::Null);
                assert_eq!(&actual, want, "{name}: {pointer} in {got}");
            }
        }
    }

    #[test]
    fn json6902_string_with_variables() {
        let got = run(
            json!({"patchesJson6902": "- op: add\n  path: /metadata/annotations\n  value:\n    owner: \"{{request.object.metadata.labels.app}}\"\n- op: remove\n  path: /spec/containers/1\n"}),
            &pod(),
        )
        .unwrap();
        assert_eq!(
            got.pointer("/metadata/annotations/owner"),
            Some(&json!("web"))
        );
        assert_eq!(
            got.pointer("/spec/containers")
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn foreach_patches_each_element_in_order() {
        let got = run(
            json!({"foreach": [{
                "list": "request.object.spec.containers",
                "patchesJson6902": "- op: add\n  path: /spec/containers/{{elementIndex}}/env\n  value: [{name: IDX, value: \"{{elementIndex}}\"}]"
            }]}),
            &pod(),
        )
        .unwrap();
        assert_eq!(
            got.pointer("/spec/containers/0/env/0/value"),
            Some(&json!("0"))
        );
        assert_eq!(
            got.pointer("/spec/containers/1/env/0/value"),
            Some(&json!("1"))
        );
    }

    #[test]
    fn foreach_preconditions_filter_elements() {
        let got = run(
            json!({"foreach": [{
                "list": "request.object.spec.containers",
                "preconditions": {"all": [{"key": "{{element.image}}", "operator": "Equals", "value": "*:latest"}]},
                "patchStrategicMerge": {"spec": {"containers": [{"name": "{{element.name}}", "imagePullPolicy": "Always"}]}}
            }]}),
            &pod(),
        )
        .unwrap();
        let containers = got.pointer("/spec/containers").unwrap().as_array().unwrap();
        let names: Vec<&str> = containers
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["nginx", "sidecar"]);
        assert_eq!(containers[0]["imagePullPolicy"], json!("Always"));
        assert!(containers[1].get("imagePullPolicy").is_none());
    }

    #[test]
    fn nested_foreach_sees_both_elements() {
        let resource = json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}
        });
        let got = run(
            json!({"foreach": [{
                "list": "request.object.spec.containers",
                "foreach": [{
                    "list": "element.env",
                    "patchesJson6902": "- op: replace\n  path: /spec/containers/{{elementIndex0}}/env/{{elementIndex1}}/value\n  value: \"{{element0.name}}-{{element1.name}}\""
                }]
            }]}),
            &resource,
        )
        .unwrap();
        assert_eq!(
            got.pointer("/spec/containers/0/env/0/value"),
            Some(&json!("a-X"))
        );
    }

    #[test]
    fn foreach_context_variables_are_loaded_per_element() {
        let got = run(
            json!({"foreach": [{
                "list": "request.object.spec.containers",
                "context": [{"name": "path", "variable": {"value": "/spec/containers/{{elementIndex}}"}}],
                "patchesJson6902": "- op: add\n  path: \"{{path}}/tty\"\n  value: true"
            }]}),
            &pod(),
        )
        .unwrap();
        assert_eq!(got.pointer("/spec/containers/0/tty"), Some(&json!(true)));
        assert_eq!(got.pointer("/spec/containers/1/tty"), Some(&json!(true)));
    }

    #[test]
    fn foreach_over_a_missing_list_changes_nothing() {
        let resource = pod();
        let rule = json!({"name": "r", "mutate": {"foreach": [{
            "list": "request.object.spec.initContainers",
            "patchStrategicMerge": {"spec": {"initContainers": [{"name": "{{element.name}}", "tty": true}]}}
        }]}});
        let got = apply_rule(&rule, &resource, &ctx_for(&resource));
        assert_eq!(got, Err(Outcome::skip(NO_CHANGE)));
    }

    #[test]
    fn no_change_is_a_skip() {
        let resource = pod();
        let rule = json!({"name": "r", "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"+(app)": "other"}}}}});
        let got = apply_rule(&rule, &resource, &ctx_for(&resource));
        assert_eq!(got, Err(Outcome::skip(NO_CHANGE)));
    }

    #[test]
    fn errors_and_unsupported() {
        let resource = pod();
        let cases: Vec<(&str, Value, &str)> = vec![
            (
                "targets",
                json!({"targets": [{"apiVersion": "v1", "kind": "ConfigMap"}], "patchStrategicMerge": {}}),
                "unsupported:",
            ),
            ("empty", json!({}), "neither"),
            (
                "bad json patch",
                json!({"patchesJson6902": "- op: replace\n  path: /nope/x\n  value: 1"}),
                "failed to apply",
            ),
            (
                "unresolved variable",
                json!({"patchStrategicMerge": {"metadata": {"labels": {"x": "{{request.object.nope.deeper}}"}}}}),
                "variable substitution failed",
            ),
        ];
        for (name, mutate, want) in cases {
            let err = run(mutate, &resource).unwrap_err();
            assert!(err.contains(want), "{name}: {err}");
        }
    }
}
