//! Kyverno's auto-generated rules for Pod controllers: a `ClusterPolicy`/`Policy` whose
//! rules match Pods gains `autogen-<rule>` (Deployment, DaemonSet, StatefulSet, Job,
//! ReplicaSet, ReplicationController) and `autogen-cronjob-<rule>` (CronJob) with patterns,
//! patches and variables moved under the pod template. It only rewrites the policy; it
//! never evaluates a rule.

use serde_json::{Map, Value, json};

use super::matching::wildcard_match;

pub const ANNOTATION: &str = "pod-policies.kyverno.io/autogen-controllers";

/// The controllers Kyverno generates for when the annotation does not say otherwise.
const CONTROLLERS: [&str; 6] = [
    "DaemonSet",
    "Deployment",
    "Job",
    "StatefulSet",
    "ReplicaSet",
    "ReplicationController",
];
const CRONJOB: &str = "CronJob";

/// The policy with its auto-generated rules appended (existing `autogen-*` rules are
/// replaced). A policy that does not qualify comes back unchanged.
pub fn expand(policy_raw: &Value) -> Value {
    let Some(rules) = policy_raw.pointer("/spec/rules").and_then(Value::as_array) else {
        return policy_raw.clone();
    };
    let generated = compute_rules(policy_raw, rules);
    if generated.is_empty() {
        return policy_raw.clone();
    }
    let mut out = policy_raw.clone();
    let mut all: Vec<Value> = rules
        .iter()
        .filter(|r| !is_autogen_name(rule_name(r)))
        .cloned()
        .collect();
    all.extend(generated);
    out["spec"]["rules"] = Value::Array(all);
    out
}

fn rule_name(rule: &Value) -> &str {
    rule.get("name").and_then(Value::as_str).unwrap_or("")
}

fn is_autogen_name(name: &str) -> bool {
    name.starts_with("autogen-")
}

/// The generated rules only (empty when autogen does not apply).
fn compute_rules(policy: &Value, rules: &[Value]) -> Vec<Value> {
    let Some(supported) = supported_controllers(rules) else {
        return Vec::new();
    };
    let requested = policy
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str);
    let controllers: Vec<String> = match requested {
        Some(list) => list.split(',').map(str::to_string).collect(),
        None => supported,
    };
    let joined = controllers.join(",");
    if joined == "none" {
        return Vec::new();
    }
    let mut out = Vec::new();
    for rule in rules {
        if let Some(r) = rule_for_controllers(rule, &strip_cronjob(&controllers)) {
            out.push(rewrite_references(r, Shift::Template));
        }
        if let Some(r) = rule_for_cronjob(rule, &joined) {
            out.push(rewrite_references(r, Shift::CronJob));
        }
    }
    out
}

/// `None` when no rule may be auto-generated: a generate rule or a JSON patch anywhere in
/// the policy, or a match/exclude block that names, selects or annotates resources, or
/// mixes Pod with other kinds; also when no rule is about Pods or their controllers.
fn supported_controllers(rules: &[Value]) -> Option<Vec<String>> {
    let mut needed = false;
    for rule in rules {
        if rule
            .get("generate")
            .and_then(Value::as_object)
            .is_some_and(|g| !g.is_empty())
        {
            return None;
        }
        if let Some(m) = rule.get("mutate") {
            if non_empty_str(m.get("patchesJson6902")) {
                return None;
            }
            let foreach = m.get("foreach").and_then(Value::as_array);
            if foreach
                .into_iter()
                .flatten()
                .any(|f| non_empty_str(f.get("patchesJson6902")))
            {
                return None;
            }
        }
        for block in ["match", "exclude"] {
            for description in resource_descriptions(rule.get(block)) {
                if !supports_autogen(description, &mut needed) {
                    return None;
                }
            }
        }
    }
    if !needed {
        return None;
    }
    let mut all: Vec<String> = CONTROLLERS.iter().map(|s| s.to_string()).collect();
    all.push(CRONJOB.to_string());
    Some(all)
}

fn non_empty_str(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    }
}

/// The `resources` descriptions of a match/exclude block: the legacy single form and
/// every `any`/`all` entry.
fn resource_descriptions(block: Option<&Value>) -> Vec<&Value> {
    let Some(block) = block else {
        return Vec::new();
    };
    let mut out: Vec<&Value> = Vec::new();
    if let Some(r) = block.get("resources") {
        out.push(r);
    }
    for key in ["any", "all"] {
        for filter in block
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(r) = filter.get("resources") {
                out.push(r);
            }
        }
    }
    out
}

fn kinds_of(description: &Value) -> Vec<&str> {
    description
        .get("kinds")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn supports_autogen(description: &Value, needed: &mut bool) -> bool {
    let set = |k: &str| description.get(k).is_some_and(|v| !v.is_null());
    let has_name = description
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    let has_names = description
        .get("names")
        .and_then(Value::as_array)
        .is_some_and(|n| !n.is_empty());
    let kinds = kinds_of(description);
    let mixed = kinds.len() > 1 && contains_kind(&kinds, "Pod");
    if has_name || has_names || set("selector") || set("annotations") || mixed {
        return false;
    }
    *needed = *needed
        || kinds
            .iter()
            .any(|k| *k == "Pod" || *k == CRONJOB || CONTROLLERS.contains(k));
    true
}

/// The kind part of `Kind`, `v1/Kind`, `group/v1/Kind` (a subresource suffix ignored),
/// compared with wildcards as Kyverno does.
fn contains_kind(kinds: &[&str], kind: &str) -> bool {
    kinds.iter().any(|k| wildcard_match(kind_name(k), kind))
}

fn kind_name(gvk: &str) -> &str {
    let parts: Vec<&str> = gvk.split('/').collect();
    let looks_like_version = |s: &str| {
        s == "*" || (s.starts_with('v') && s[1..].starts_with(|c: char| c.is_ascii_digit()))
    };
    match parts.as_slice() {
        [kind] => kind,
        [first, second] if looks_like_version(first) => second,
        [kind, _subresource] => kind,
        [_, version, kind] if looks_like_version(version) => kind,
        [_, kind, _subresource] => kind,
        [_, _, kind, ..] => kind,
        [] => "",
    }
}

fn strip_cronjob(controllers: &[String]) -> String {
    controllers
        .iter()
        .filter(|c| c.as_str() != CRONJOB)
        .cloned()
        .collect::<Vec<_>>()
        .join(",")
}

/// Kyverno sorts the requested kinds before writing them into the rule.
fn split_kinds(controllers: &str) -> Vec<String> {
    let mut kinds: Vec<String> = controllers.split(',').map(str::to_string).collect();
    kinds.sort();
    kinds
}

fn rule_for_controllers(rule: &Value, controllers: &str) -> Option<Value> {
    if is_autogen_name(rule_name(rule)) || controllers.is_empty() {
        return None;
    }
    let match_kinds: Vec<&str> = resource_descriptions(rule.get("match"))
        .into_iter()
        .flat_map(kinds_of)
        .collect();
    let exclude_kinds: Vec<&str> = resource_descriptions(rule.get("exclude"))
        .into_iter()
        .flat_map(kinds_of)
        .collect();
    if !contains_kind(&match_kinds, "Pod")
        || (!exclude_kinds.is_empty() && !contains_kind(&exclude_kinds, "Pod"))
    {
        return None;
    }
    let controllers = if controllers == "all" {
        CONTROLLERS.join(",")
    } else {
        let valid: Vec<&str> = controllers
            .split(',')
            .filter(|c| CONTROLLERS.contains(c))
            .collect();
        if valid.is_empty() {
            controllers.to_string()
        } else {
            valid.join(",")
        }
    };
    generate_rule(
        &autogen_name("autogen", rule_name(rule)),
        rule,
        "template",
        "spec/template",
        &split_kinds(&controllers),
        |filters, kinds| {
            for f in filters {
                let pod = f
                    .get("resources")
                    .map(kinds_of)
                    .is_some_and(|ks| contains_kind(&ks, "Pod"));
                if pod {
                    f["resources"]["kinds"] = gvk_kinds(kinds);
                }
            }
        },
    )
}

fn rule_for_cronjob(rule: &Value, controllers: &str) -> Option<Value> {
    if !controllers.contains(CRONJOB) && !controllers.contains("all") {
        return None;
    }
    let intermediate = rule_for_controllers(rule, controllers)?;
    generate_rule(
        &autogen_name("autogen-cronjob", rule_name(rule)),
        &intermediate,
        "jobTemplate",
        "spec/jobTemplate/spec/template",
        &[CRONJOB.to_string()],
        |filters, kinds| {
            for f in filters {
                if f.get("resources").is_some_and(Value::is_object) {
                    f["resources"]["kinds"] = gvk_kinds(kinds);
                }
            }
        },
    )
}

fn autogen_name(prefix: &str, name: &str) -> String {
    let mut full = format!("{prefix}-{name}");
    if full.len() > 63 {
        let mut cut = 63;
        while !full.is_char_boundary(cut) {
            cut -= 1;
        }
        full.truncate(cut);
    }
    full
}

fn gvk_kinds(kinds: &[String]) -> Value {
    Value::Array(
        kinds
            .iter()
            .map(|k| {
                let gvk = match k.as_str() {
                    "DaemonSet" | "Deployment" | "StatefulSet" | "ReplicaSet" => {
                        format!("apps/v1/{k}")
                    }
                    "Job" | "CronJob" => format!("batch/v1/{k}"),
                    "ReplicationController" | "Pod" => format!("v1/{k}"),
                    other => other.to_string(),
                };
                Value::String(gvk)
            })
            .collect(),
    )
}

/// Builds the controller rule: the same match/exclude with Pod kinds swapped for the
/// controllers, and the rule body wrapped under `spec.<template_key>`. `None` when the
/// body has nothing autogen knows how to move (a mutate with neither a strategic merge
/// nor a foreach, for instance).
fn generate_rule(
    name: &str,
    rule: &Value,
    template_key: &str,
    shift: &str,
    kinds: &[String],
    swap_kinds: impl Fn(&mut Vec<Value>, &[String]),
) -> Option<Value> {
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    let mut matched = rule.get("match").cloned().unwrap_or_else(|| json!({}));
    retarget(&mut matched, kinds, &swap_kinds, true);
    out.insert("match".into(), matched);
    if let Some(exclude) = rule.get("exclude").filter(|e| is_set(e)) {
        let mut exclude = exclude.clone();
        retarget(&mut exclude, kinds, &swap_kinds, false);
        out.insert("exclude".into(), exclude);
    }
    for key in [
        "celPreconditions",
        "context",
        "preconditions",
        "skipBackgroundRequests",
    ] {
        if let Some(v) = rule.get(key).filter(|v| is_set(v)) {
            out.insert(key.into(), v.clone());
        }
    }
    let wrap = |v: &Value| json!({"spec": {template_key: v}});
    if let Some(mutate) = rule
        .get("mutate")
        .filter(|m| is_set(m))
        .and_then(|m| mutate_body(m, &wrap))
    {
        out.insert("mutate".into(), mutate);
        return Some(Value::Object(out));
    }
    if let Some(body) = rule
        .get("validate")
        .filter(|v| is_set(v))
        .and_then(|v| validate_body(v, template_key, shift, &wrap))
    {
        out.insert("validate".into(), Value::Object(body));
        if let Some(vi) = rule.get("verifyImages").filter(|v| is_set(v)) {
            out.insert("verifyImages".into(), vi.clone());
        }
        return Some(Value::Object(out));
    }
    if let Some(vi) = rule.get("verifyImages").filter(|v| is_set(v)) {
        out.insert("verifyImages".into(), vi.clone());
        return Some(Value::Object(out));
    }
    None
}

/// A mutate body under the template: its strategic merge, or each foreach entry's.
fn mutate_body(mutate: &Value, wrap: &impl Fn(&Value) -> Value) -> Option<Value> {
    if let Some(smp) = mutate.get("patchStrategicMerge").filter(|p| !p.is_null()) {
        return Some(json!({"patchStrategicMerge": wrap(smp)}));
    }
    let foreach = mutate
        .get("foreach")
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())?;
    let entries: Vec<Value> = foreach
        .iter()
        .map(|f| {
            let mut e = Map::new();
            for key in ["list", "context", "preconditions"] {
                if let Some(v) = f.get(key).filter(|v| !v.is_null()) {
                    e.insert(key.into(), v.clone());
                }
            }
            let smp = f.get("patchStrategicMerge").cloned().unwrap_or(Value::Null);
            e.insert("patchStrategicMerge".into(), wrap(&smp));
            Value::Object(e)
        })
        .collect();
    Some(json!({"foreach": entries}))
}

/// A validate body under the template, its message's `$(...)` references shifted; CEL
/// and assertion bodies as Kyverno moves them. `None` when autogen cannot move it.
fn validate_body(
    validate: &Value,
    template_key: &str,
    shift: &str,
    wrap: &impl Fn(&Value) -> Value,
) -> Option<Map<String, Value>> {
    let message = validate
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("");
    let present = |key: &str| validate.get(key).filter(|x| !x.is_null());
    // Which body the rule has, where its `$(...)` references point, and the body as it
    // reads under the template.
    let moved: Option<(&str, &str, Value)> = if let Some(pattern) = present("pattern") {
        Some(("pattern", "pattern", wrap(pattern)))
    } else if let Some(deny) = present("deny") {
        Some(("deny", "deny", deny.clone()))
    } else if let Some(pss) = present("podSecurity") {
        Some(("podSecurity", "podSecurity", pss.clone()))
    } else if let Some(any) = validate.get("anyPattern").and_then(Value::as_array) {
        Some((
            "anyPattern",
            "anyPattern",
            Value::Array(any.iter().map(wrap).collect()),
        ))
    } else {
        validate
            .get("foreach")
            .and_then(Value::as_array)
            .filter(|f| !f.is_empty())
            .map(|f| ("foreach", "pattern", Value::Array(f.clone())))
    };
    if let Some((key, pivot, value)) = moved {
        let mut v = Map::new();
        v.insert(
            "message".into(),
            json!(shift_references(message, shift, pivot)),
        );
        v.insert(key.into(), value);
        for kept in [
            "failureAction",
            "failureActionOverrides",
            "allowExistingViolations",
            "validationFailureAction",
        ] {
            if let Some(x) = present(kept) {
                v.insert(kept.into(), x.clone());
            }
        }
        Some(v)
    } else if validate.get("cel").is_some_and(|c| !c.is_null()) {
        validate.as_object().cloned()
    } else if let Some(assert) = validate.get("assert").filter(|a| !a.is_null()) {
        let mut whole = validate.as_object().cloned().unwrap_or_default();
        whole.insert("assert".into(), autogen_assertion(assert, template_key));
        Some(whole)
    } else {
        None
    }
}

fn is_set(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => true,
    }
}

/// Swaps kinds in `any`, else `all`, else the legacy `resources` (for exclude only when
/// it names kinds).
fn retarget(
    block: &mut Value,
    kinds: &[String],
    swap_kinds: &impl Fn(&mut Vec<Value>, &[String]),
    is_match: bool,
) {
    for key in ["any", "all"] {
        if let Some(filters) = block
            .get_mut(key)
            .and_then(Value::as_array_mut)
            .filter(|f| !f.is_empty())
        {
            swap_kinds(filters, kinds);
            return;
        }
    }
    let legacy_has_kinds = block
        .pointer("/resources/kinds")
        .and_then(Value::as_array)
        .is_some_and(|k| !k.is_empty());
    if is_match || legacy_has_kinds {
        if !block.is_object() {
            *block = json!({});
        }
        if !block.get("resources").is_some_and(Value::is_object) {
            block["resources"] = json!({});
        }
        block["resources"]["kinds"] = gvk_kinds(kinds);
    }
}

fn autogen_assertion(tree: &Value, template_key: &str) -> Value {
    let Value::Object(map) = tree else {
        return tree.clone();
    };
    let mut out = map.clone();
    for node in ["object", "oldObject"] {
        if let Some(obj @ Value::Object(_)) = map.get(node) {
            out.insert(node.into(), json!({"spec": {template_key: obj}}));
        }
    }
    Value::Object(out)
}

/// `$(./../pattern/...)` references in a message point into the pattern, which moved.
fn shift_references(message: &str, shift: &str, pivot: &str) -> String {
    let mut out = String::new();
    let mut rest = message;
    while let Some(start) = rest.find("$(") {
        let escaped = start > 0 && rest[..start].ends_with('\\');
        let after = &rest[start..];
        let end = after.find(')');
        let body_ok = end.is_some_and(|e| e > 2 && !after[..e].contains(char::is_whitespace));
        out.push_str(&rest[..start]);
        match end {
            Some(e) if body_ok && !escaped => {
                let reference = &after[..=e];
                let mut pivot_full = pivot.to_string();
                if pivot == "anyPattern"
                    && let Some(i) = reference.find(pivot)
                {
                    let tail = &reference[(i + pivot.len() + 1).min(reference.len())..];
                    let index = tail.split('/').next().unwrap_or("");
                    pivot_full = format!("{pivot}/{index}");
                }
                out.push_str(&reference.replace(&pivot_full, &format!("{pivot_full}/{shift}")));
                rest = &after[e + 1..];
            }
            _ => {
                out.push_str("$(");
                rest = &after[2..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[derive(Clone, Copy)]
enum Shift {
    Template,
    CronJob,
}

/// Kyverno rewrites variable paths by plain text replacement over the whole rule, so a
/// `request.object.spec` anywhere (patterns, messages, preconditions) moves too.
fn rewrite_references(rule: Value, shift: Shift) -> Value {
    let cel = rule.pointer("/validate/cel").is_some_and(|c| !c.is_null());
    let (prefix, pairs): (&str, [(&str, &str); 4]) = match shift {
        Shift::Template => (
            if cel { "" } else { "request." },
            [
                ("object.spec", "object.spec.template.spec"),
                ("oldObject.spec", "oldObject.spec.template.spec"),
                ("object.metadata", "object.spec.template.metadata"),
                ("oldObject.metadata", "oldObject.spec.template.metadata"),
            ],
        ),
        Shift::CronJob => (
            if cel { "" } else { "request." },
            [
                ("object.spec", "object.spec.jobTemplate.spec.template.spec"),
                (
                    "oldObject.spec",
                    "oldObject.spec.jobTemplate.spec.template.spec",
                ),
                (
                    "object.metadata",
                    "object.spec.jobTemplate.spec.template.metadata",
                ),
                (
                    "oldObject.metadata",
                    "oldObject.spec.jobTemplate.spec.template.metadata",
                ),
            ],
        ),
    };
    let mut text = serde_json::to_string(&rule).expect("a JSON value serializes");
    for (from, to) in pairs {
        text = text.replace(&format!("{prefix}{from}"), &format!("{prefix}{to}"));
    }
    serde_json::from_str(&text).unwrap_or(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(annotations: Value, rules: Value) -> Value {
        json!({
            "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "p", "annotations": annotations},
            "spec": {"rules": rules}
        })
    }

    fn names(p: &Value) -> Vec<String> {
        p["spec"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    }

    fn pod_rule(name: &str, extra: Value) -> Value {
        let mut r = json!({
            "name": name,
            "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
            "validate": {"message": "need label on {{request.object.metadata.name}}",
                         "pattern": {"metadata": {"labels": {"app": "?*"}}}}
        });
        if let (Value::Object(r), Value::Object(e)) = (&mut r, extra) {
            r.extend(e);
        }
        r
    }

    #[test]
    fn which_policies_get_autogen_rules() {
        let cases: Vec<(&str, Value, Vec<&str>)> = vec![
            (
                "pod rule",
                policy(json!({}), json!([pod_rule("r", json!({}))])),
                vec!["r", "autogen-r", "autogen-cronjob-r"],
            ),
            (
                "annotation none",
                policy(
                    json!({ANNOTATION: "none"}),
                    json!([pod_rule("r", json!({}))]),
                ),
                vec!["r"],
            ),
            (
                "annotation Deployment only",
                policy(
                    json!({ANNOTATION: "Deployment"}),
                    json!([pod_rule("r", json!({}))]),
                ),
                vec!["r", "autogen-r"],
            ),
            (
                "annotation CronJob only",
                policy(
                    json!({ANNOTATION: "CronJob"}),
                    json!([pod_rule("r", json!({}))]),
                ),
                vec!["r", "autogen-cronjob-r"],
            ),
            (
                "names block autogen",
                policy(
                    json!({}),
                    json!([pod_rule(
                        "r",
                        json!({"match": {"any": [{"resources": {"kinds": ["Pod"], "names": ["x"]}}]}})
                    )]),
                ),
                vec!["r"],
            ),
            (
                "selector blocks autogen",
                policy(
                    json!({}),
                    json!([pod_rule(
                        "r",
                        json!({"match": {"any": [{"resources": {"kinds": ["Pod"], "selector": {"matchLabels": {"a": "b"}}}}]}})
                    )]),
                ),
                vec!["r"],
            ),
            (
                "mixed kinds block autogen",
                policy(
                    json!({}),
                    json!([pod_rule(
                        "r",
                        json!({"match": {"any": [{"resources": {"kinds": ["Pod", "Deployment"]}}]}})
                    )]),
                ),
                vec!["r"],
            ),
            (
                "non-pod rule",
                policy(
                    json!({}),
                    json!([pod_rule(
                        "r",
                        json!({"match": {"any": [{"resources": {"kinds": ["Service"]}}]}})
                    )]),
                ),
                vec!["r"],
            ),
            (
                "json patch anywhere blocks",
                policy(
                    json!({}),
                    json!([
                       pod_rule("r", json!({})),
                       {"name": "m", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}, "mutate": {"patchesJson6902": "- op: add\n  path: /x\n  value: 1"}}
                    ]),
                ),
                vec!["r", "m"],
            ),
            (
                "generate blocks",
                policy(
                    json!({}),
                    json!([
                       pod_rule("r", json!({})),
                       {"name": "g", "match": {"any": [{"resources": {"kinds": ["Namespace"]}}]}, "generate": {"kind": "ConfigMap", "name": "x", "data": {}}}
                    ]),
                ),
                vec!["r", "g"],
            ),
            (
                "stale autogen rules are replaced",
                policy(
                    json!({}),
                    json!([pod_rule("r", json!({})), pod_rule("autogen-old", json!({}))]),
                ),
                vec!["r", "autogen-r", "autogen-cronjob-r"],
            ),
        ];
        for (name, p, want) in cases {
            assert_eq!(names(&expand(&p)), want, "{name}");
        }
    }

    #[test]
    fn controller_rule_moves_pattern_and_variables() {
        let out = expand(&policy(json!({}), json!([pod_rule("r", json!({}))])));
        let rules = out["spec"]["rules"].as_array().unwrap();
        let ctrl = &rules[1];
        assert_eq!(
            ctrl["match"]["any"][0]["resources"]["kinds"],
            json!([
                "apps/v1/DaemonSet",
                "apps/v1/Deployment",
                "batch/v1/Job",
                "apps/v1/ReplicaSet",
                "v1/ReplicationController",
                "apps/v1/StatefulSet"
            ])
        );
        assert_eq!(
            ctrl["validate"]["pattern"],
            json!({"spec": {"template": {"metadata": {"labels": {"app": "?*"}}}}})
        );
        assert_eq!(
            ctrl["validate"]["message"],
            json!("need label on {{request.object.spec.template.metadata.name}}")
        );
        let cron = &rules[2];
        assert_eq!(
            cron["match"]["any"][0]["resources"]["kinds"],
            json!(["batch/v1/CronJob"])
        );
        assert_eq!(
            cron["validate"]["pattern"],
            json!({"spec": {"jobTemplate": {"spec": {"template": {"metadata": {"labels": {"app": "?*"}}}}}}})
        );
        assert_eq!(
            cron["validate"]["message"],
            json!("need label on {{request.object.spec.jobTemplate.spec.template.metadata.name}}")
        );
    }

    #[test]
    fn legacy_match_and_exclude_kinds_are_retargeted() {
        let out = expand(&policy(
            json!({ANNOTATION: "Deployment,StatefulSet"}),
            json!([{
                "name": "r",
                "match": {"resources": {"kinds": ["Pod"]}},
                "exclude": {"resources": {"kinds": ["Pod"], "namespaces": ["kube-system"]}},
                "validate": {"message": "m", "deny": {"conditions": {"any": [
                    {"key": "{{request.object.spec.hostNetwork}}", "operator": "Equals", "value": true}]}}}
            }]),
        ));
        let ctrl = &out["spec"]["rules"][1];
        let kinds = json!(["apps/v1/Deployment", "apps/v1/StatefulSet"]);
        assert_eq!(ctrl["match"]["resources"]["kinds"], kinds);
        assert_eq!(ctrl["exclude"]["resources"]["kinds"], kinds);
        assert_eq!(
            ctrl["exclude"]["resources"]["namespaces"],
            json!(["kube-system"])
        );
        assert_eq!(
            ctrl["validate"]["deny"]["conditions"]["any"][0]["key"],
            json!("{{request.object.spec.template.spec.hostNetwork}}")
        );
        assert_eq!(out["spec"]["rules"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn mutate_rules_wrap_their_patches() {
        let out = expand(&policy(
            json!({}),
            json!([{
                "name": "m",
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "mutate": {"foreach": [{"list": "request.object.spec.containers", "order": "Ascending",
                                        "patchStrategicMerge": {"spec": {"containers": [{"name": "{{element.name}}"}]}}}]}
            }]),
        ));
        let ctrl = &out["spec"]["rules"][1];
        assert_eq!(
            ctrl["mutate"]["foreach"][0],
            json!({"list": "request.object.spec.template.spec.containers",
                   "patchStrategicMerge": {"spec": {"template": {"spec": {"containers": [{"name": "{{element.name}}"}]}}}}})
        );
    }

    #[test]
    fn references_in_messages_follow_the_pattern() {
        assert_eq!(
            shift_references(
                "bad $(./../pattern/spec/x) here",
                "spec/template",
                "pattern"
            ),
            "bad $(./../pattern/spec/template/spec/x) here"
        );
        assert_eq!(
            shift_references("no refs", "spec/template", "pattern"),
            "no refs"
        );
    }

    #[test]
    fn long_names_are_cut_to_63() {
        let long = "x".repeat(70);
        assert_eq!(autogen_name("autogen", &long).len(), 63);
    }
}
