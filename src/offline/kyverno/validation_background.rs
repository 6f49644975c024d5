//! `ValidateVariables`' background check (pkg/validation/policy/background.go
//! `containsUserVariables`, Kyverno 1.19.0): a policy the background controller also
//! applies may not select on, nor read, who made the request, since a background scan
//! has no request. Match/exclude `roles`, `clusterRoles` or `subjects` are refused
//! first; then, unless a rule mutates existing resources, the first `{{…}}` of the
//! policy's JSON that names `serviceAccountName`, `serviceAccountNamespace`,
//! `request.userInfo`, `request.roles` or `request.clusterRoles`.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// Kyverno's variable pattern (pkg/engine/variables/regex/vars.go `RegexVariables`).
fn variables() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(^|[^\\])(\{\{(?:\{[^{}]*\}|[^{}])*\}\})").expect("a valid pattern")
    })
}

fn forbidden() -> &'static [Regex] {
    static RE: OnceLock<Vec<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        [
            "serviceAccountName",
            "serviceAccountNamespace",
            r"request\.userInfo",
            r"request\.roles",
            r"request\.clusterRoles",
        ]
        .iter()
        .map(|v| Regex::new(&format!(r"[^.]({v})\b")).expect("a valid pattern"))
        .collect()
    })
}

/// The refusal's text for a background policy, `None` when it passes.
pub(super) fn background_problem(policy: &Value, rules: &[Value]) -> Option<String> {
    let background = policy
        .pointer("/spec/background")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !background {
        return None;
    }
    let found = user_match(rules).or_else(|| user_variable(policy, rules))?;
    Some(format!(
        "only select variables are allowed in background mode. Set spec.background=false to disable background mode for this policy rule: {found} "
    ))
}

/// `hasUserMatchExclude`, in Kyverno's order of blocks.
fn user_match(rules: &[Value]) -> Option<String> {
    let defined = |ui: &Value| {
        ["roles", "clusterRoles", "subjects"].into_iter().find(|k| {
            ui.get(*k)
                .and_then(Value::as_array)
                .is_some_and(|v| !v.is_empty())
        })
    };
    for (idx, rule) in rules.iter().enumerate() {
        // Kyverno reads match's `any` before `all`, exclude's `all` before `any`.
        let mut places: Vec<(String, &Value)> = Vec::new();
        for (name, lists) in [("match", ["any", "all"]), ("exclude", ["all", "any"])] {
            let Some(block) = rule.get(name) else {
                continue;
            };
            places.push((name.to_string(), block));
            for list in lists {
                let entries = block.get(list).and_then(Value::as_array);
                for (i, f) in entries.into_iter().flatten().enumerate() {
                    places.push((format!("{name}/{list}[{i}]"), f));
                }
            }
        }
        for (at, f) in places {
            if let Some(path) = defined(f) {
                return Some(format!(
                    "invalid variable used at path: spec/rules[{idx}]/{at}/{path}"
                ));
            }
        }
    }
    None
}

/// The first forbidden variable of the policy (without its last-applied annotation),
/// unless a rule mutates existing resources.
fn user_variable(policy: &Value, rules: &[Value]) -> Option<String> {
    if rules
        .iter()
        .any(|r| r.pointer("/mutate/targets").is_some_and(|t| !t.is_null()))
    {
        return None;
    }
    let mut copy = policy.clone();
    if let Some(a) = copy
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
        && a.contains_key("kubectl.kubernetes.io/last-applied-configuration")
    {
        a.insert(
            "kubectl.kubernetes.io/last-applied-configuration".into(),
            Value::String(String::new()),
        );
    }
    copy.as_object_mut().map(|m| m.shift_remove("status"));
    let raw = serde_json::to_string(&copy).ok()?;
    for c in variables().captures_iter(&raw) {
        let var = c.get(2)?.as_str();
        if forbidden().iter().any(|re| re.is_match(var)) {
            return Some(format!("variable {var} is not allowed"));
        }
    }
    None
}
