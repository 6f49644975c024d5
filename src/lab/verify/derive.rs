//! Mutants kca derives itself: wrong answers made from the solution by mutation operators
//! over its parsed YAML (and its gate scripts), so a lab is tested against the mistakes its
//! author did not think of. Each operator is a shape of wrong answer a Kyverno course meets:
//!
//! | operator | change |
//! |---|---|
//! | `drop-namespaces`, `namespaces-wildcard` | a rule's `namespaces` removed, or `"*"` added |
//! | `drop-selector` | a `namespaceSelector`/`objectSelector`/`selector` of a match removed |
//! | `drop-matchConditions` | `matchConditions` removed |
//! | `enforce-to-audit`, `deny-to-audit` | `Enforce` → `Audit`; `validationActions: [Deny]` → `[Audit]` |
//! | `drop-pattern-field` | one required leaf of a validate `pattern` removed |
//! | `drop-conjunct` | one `&&` part of a CEL validation expression removed |
//! | `drop-condition` | one of several deny/precondition conditions removed |
//! | `verbs-wildcard`, `resources-wildcard`, `apiGroups-wildcard` | an RBAC rule widened to `*` |
//! | `role-to-clusterrole`, `rename` | a Role made a ClusterRole; a role renamed (its references not) |
//! | `netpol-allow-all` | a NetworkPolicy that allows all traffic it names (`[{}]`) |
//! | `jsonpatch-parent` | a JSON Patch op that writes the whole parent map instead of one key |
//! | `zero-pause` | a canary pause of zero length |
//! | `gate-exit-0`, `gate-grep-digest`, `gate-grep-latest` | a gate script that exits 0, or greps instead of running the policy |
//!
//! A mutant's id is `operator:file#document/json/pointer` (`operator:file` for a whole
//! file): the same solution gives the same ids, so `equivalentMutants` declarations stay
//! valid as long as the part they name does.

use serde_json::{Map, Value, json};

/// One derived wrong answer: the solution with one file replaced.
#[derive(Debug, Clone)]
pub struct Derived {
    pub id: String,
    /// What was changed, in a few words.
    pub change: String,
    pub file: String,
    pub text: String,
}

/// Every mutant the operators derive from the solution's files (`(path, text)`), in a
/// stable order, without duplicates (two operators giving the same file keep the first).
pub fn derive(files: &[(String, String)]) -> Vec<Derived> {
    let mut out: Vec<Derived> = Vec::new();
    for (path, text) in files {
        if path.ends_with(".sh") {
            out.extend(gate_mutants(path, text));
            continue;
        }
        if !(path.ends_with(".yaml") || path.ends_with(".yml")) {
            continue;
        }
        let Ok(docs) = crate::yaml::parse_json_stream(text) else {
            continue;
        };
        for (i, doc) in docs.iter().enumerate() {
            for m in doc_mutants(doc) {
                let mut all = docs.clone();
                all[i] = m.doc;
                out.push(Derived {
                    id: format!("{}:{path}#{i}{}", m.op, m.ptr),
                    change: format!("{path}: {}", m.change),
                    file: path.clone(),
                    text: crate::yaml::to_stream(&all),
                });
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|d| seen.insert((d.file.clone(), d.text.clone())));
    out
}

/// One mutation of one document.
struct DocMutant {
    op: &'static str,
    ptr: String,
    change: String,
    doc: Value,
}

fn escape(seg: &str) -> String {
    seg.replace('~', "~0").replace('/', "~1")
}

/// Every node of a document with its JSON pointer, parents first.
fn nodes(v: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), v)];
    while let Some((p, v)) = stack.pop() {
        match v {
            Value::Object(m) => {
                for (k, c) in m.iter().rev() {
                    stack.push((format!("{p}/{}", escape(k)), c));
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate().rev() {
                    stack.push((format!("{p}/{i}"), c));
                }
            }
            _ => {}
        }
        out.push((p, v));
    }
    out
}

/// The last segment of a pointer, unescaped.
fn last(ptr: &str) -> String {
    ptr.rsplit('/')
        .next()
        .unwrap_or("")
        .replace("~1", "/")
        .replace("~0", "~")
}

fn parent(ptr: &str) -> &str {
    ptr.rsplit_once('/').map_or("", |(p, _)| p)
}

fn with(doc: &Value, ptr: &str, new: Value) -> Value {
    let mut d = doc.clone();
    if let Some(slot) = d.pointer_mut(ptr) {
        *slot = new;
    }
    d
}

fn without(doc: &Value, ptr: &str) -> Value {
    let mut d = doc.clone();
    let key = last(ptr);
    match d.pointer_mut(parent(ptr)) {
        Some(Value::Object(m)) => {
            m.shift_remove(&key);
        }
        Some(Value::Array(a)) => {
            if let Ok(i) = key.parse::<usize>()
                && i < a.len()
            {
                a.remove(i);
            }
        }
        _ => {}
    }
    d
}

/// Inside a match, where widening the scope is the mistake (not a Deployment's selector).
fn in_match(ptr: &str) -> bool {
    ptr.split('/').any(|s| {
        matches!(
            s,
            "match" | "matchConstraints" | "matchResources" | "exclude" | "any" | "all"
        )
    }) && !ptr.contains("/exclude")
}

fn is_anchor(key: &str) -> bool {
    key.contains('(') || key.starts_with('+') || key.starts_with('^')
}

const RBAC_ROLES: [&str; 2] = ["Role", "ClusterRole"];

fn doc_mutants(doc: &Value) -> Vec<DocMutant> {
    let mut out = Vec::new();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let mut push = |op: &'static str, ptr: &str, change: String, d: Value| {
        if &d != doc {
            out.push(DocMutant {
                op,
                ptr: ptr.to_string(),
                change,
                doc: d,
            });
        }
    };
    for (ptr, v) in nodes(doc) {
        let key = last(&ptr);
        match (key.as_str(), v) {
            ("namespaces", Value::Array(list)) if in_match(&ptr) => {
                push(
                    "drop-namespaces",
                    &ptr,
                    format!("removed {ptr}"),
                    without(doc, &ptr),
                );
                if !list.iter().any(|x| x == "*") {
                    let mut l = list.clone();
                    l.push(json!("*"));
                    push(
                        "namespaces-wildcard",
                        &ptr,
                        format!("added \"*\" to {ptr}"),
                        with(doc, &ptr, Value::Array(l)),
                    );
                }
            }
            ("namespaceSelector" | "objectSelector" | "selector", Value::Object(_))
                if in_match(&ptr) =>
            {
                push(
                    "drop-selector",
                    &ptr,
                    format!("removed {ptr}"),
                    without(doc, &ptr),
                );
            }
            ("matchConditions", Value::Array(_)) => push(
                "drop-matchConditions",
                &ptr,
                format!("removed {ptr}"),
                without(doc, &ptr),
            ),
            ("validationFailureAction" | "failureAction", Value::String(s))
                if s.eq_ignore_ascii_case("enforce") =>
            {
                push(
                    "enforce-to-audit",
                    &ptr,
                    format!("{ptr}: Enforce → Audit"),
                    with(doc, &ptr, json!("Audit")),
                )
            }
            ("validationActions", Value::Array(list)) if list.iter().any(|x| x == "Deny") => push(
                "deny-to-audit",
                &ptr,
                format!("{ptr}: [Deny] → [Audit]"),
                with(doc, &ptr, json!(["Audit"])),
            ),
            ("expression", Value::String(e)) if ptr.contains("/validations/") => {
                let parts = conjuncts(e);
                if parts.len() > 1 {
                    for i in 0..parts.len() {
                        let kept: Vec<&str> = parts
                            .iter()
                            .enumerate()
                            .filter(|(j, _)| *j != i)
                            .map(|(_, p)| p.trim())
                            .collect();
                        push(
                            "drop-conjunct",
                            &format!("{ptr}/{i}"),
                            format!("{ptr}: dropped `{}`", parts[i].trim()),
                            with(doc, &ptr, json!(kept.join(" && "))),
                        );
                    }
                }
            }
            ("any" | "all", Value::Array(list))
                if list.len() > 1
                    && (ptr.contains("/conditions/") || ptr.contains("/preconditions/")) =>
            {
                for i in 0..list.len() {
                    let p = format!("{ptr}/{i}");
                    push(
                        "drop-condition",
                        &p,
                        format!("removed {p}"),
                        without(doc, &p),
                    );
                }
            }
            ("verbs" | "resources" | "apiGroups", Value::Array(list))
                if RBAC_ROLES.contains(&kind)
                    && ptr.starts_with("/rules/")
                    && !list.iter().any(|x| x == "*") =>
            {
                let op = match key.as_str() {
                    "verbs" => "verbs-wildcard",
                    "resources" => "resources-wildcard",
                    _ => "apiGroups-wildcard",
                };
                push(
                    op,
                    &ptr,
                    format!("{ptr} → [\"*\"]"),
                    with(doc, &ptr, json!(["*"])),
                );
            }
            ("policyTypes", Value::Array(types)) => {
                let spec = parent(&ptr);
                let mut d = doc.clone();
                if let Some(Value::Object(m)) = d.pointer_mut(spec) {
                    for t in types.iter().filter_map(Value::as_str) {
                        m.insert(t.to_lowercase(), json!([{}]));
                    }
                }
                push(
                    "netpol-allow-all",
                    spec,
                    format!("{spec}: every policy type allows all ([{{}}])"),
                    d,
                );
            }
            ("patchesJson6902", Value::String(text)) => {
                for (i, new) in parent_patches(text) {
                    push(
                        "jsonpatch-parent",
                        &format!("{ptr}/{i}"),
                        format!("{ptr}: op {i} writes its parent map whole"),
                        with(doc, &ptr, json!(new)),
                    );
                }
            }
            ("pause", _) if ptr.contains("/steps/") => push(
                "zero-pause",
                &ptr,
                format!("{ptr} → {{duration: 0s}}"),
                with(doc, &ptr, json!({"duration": "0s"})),
            ),
            _ => {}
        }
        // A required leaf of a validate pattern.
        if (ptr.contains("/pattern/") || ptr.contains("/anyPattern/"))
            && !matches!(v, Value::Object(_) | Value::Array(_))
            && !is_anchor(&key)
            && key.parse::<usize>().is_err()
        {
            push(
                "drop-pattern-field",
                &ptr,
                format!("removed {ptr}"),
                without(doc, &ptr),
            );
        }
    }
    if RBAC_ROLES.contains(&kind) {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let renamed = with(doc, "/metadata/name", json!(format!("{name}-renamed")));
        push(
            "rename",
            "/metadata/name",
            format!("{kind} {name} renamed {name}-renamed (references unchanged)"),
            renamed,
        );
        if kind == "Role" {
            let mut d = with(doc, "/kind", json!("ClusterRole"));
            if let Some(Value::Object(m)) = d.get_mut("metadata") {
                m.remove("namespace");
            }
            push(
                "role-to-clusterrole",
                "/kind",
                format!("Role {name} made a ClusterRole"),
                d,
            );
        }
    }
    out
}

/// The top-level `&&` parts of a CEL expression (outside brackets and strings).
fn conjuncts(e: &str) -> Vec<&str> {
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0);
    let mut parts = Vec::new();
    let bytes: Vec<(usize, char)> = e.char_indices().collect();
    let mut i = 0;
    while i < bytes.len() {
        let (at, c) = bytes[i];
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') => i += 1,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            (None, '&') if depth == 0 && e[at..].starts_with("&&") => {
                parts.push(&e[start..at]);
                start = at + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&e[start..]);
    parts
}

/// For each op of a JSON Patch (YAML or JSON text) whose path is two segments deep or
/// more: the patch with that op writing the parent map whole (`add` of `{last: value}`).
fn parent_patches(text: &str) -> Vec<(usize, String)> {
    let Ok(docs) = crate::yaml::parse_json_stream(text) else {
        return Vec::new();
    };
    let Some(Value::Array(ops)) = docs.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let path = op.get("path").and_then(Value::as_str).unwrap_or("");
        let (Some(value), Some((par, leaf))) = (op.get("value"), path.rsplit_once('/')) else {
            continue;
        };
        if par.is_empty()
            || !matches!(
                op.get("op").and_then(Value::as_str),
                Some("add" | "replace")
            )
        {
            continue;
        }
        let key = leaf.replace("~1", "/").replace("~0", "~");
        let mut map = Map::new();
        map.insert(key, value.clone());
        let mut new = ops.clone();
        new[i] = json!({"op": "add", "path": par, "value": Value::Object(map)});
        out.push((i, crate::yaml::to_string(&Value::Array(new))));
    }
    out
}

/// A gate script (one that runs a policy) replaced by one that never runs it.
fn gate_mutants(path: &str, text: &str) -> Vec<Derived> {
    if !(text.contains("policy apply") || text.contains("kyverno apply")) {
        return Vec::new();
    }
    let shebang = "#!/usr/bin/env bash\n";
    [
        ("gate-exit-0", "exits 0 whatever the render", "exit 0\n"),
        (
            "gate-grep-digest",
            "greps the render for @sha256: instead of running the policy",
            "grep -q '@sha256:' \"${1:?}\"\n",
        ),
        (
            "gate-grep-latest",
            "greps the render for :latest instead of running the policy",
            "! grep -q ':latest' \"${1:?}\"\n",
        ),
    ]
    .into_iter()
    .map(|(op, what, body)| Derived {
        id: format!("{op}:{path}"),
        change: format!("{path} {what}"),
        file: path.to_string(),
        text: format!("{shebang}{body}"),
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(files: &[(&str, &str)]) -> Vec<String> {
        let owned: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        derive(&owned).into_iter().map(|d| d.id).collect()
    }

    #[test]
    fn each_operator_derives_its_mutant_with_a_stable_id() {
        let policy = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: p}
spec:
  rules:
    - name: r
      match: {any: [{resources: {kinds: [Pod], namespaces: [team-a]}}]}
      validate:
        failureAction: Enforce
        pattern:
          spec:
            containers:
              - resources: {limits: {cpu: "?*", memory: "?*"}}
"#;
        let got = ids(&[("p.yaml", policy)]);
        for want in [
            "drop-namespaces:p.yaml#0/spec/rules/0/match/any/0/resources/namespaces",
            "namespaces-wildcard:p.yaml#0/spec/rules/0/match/any/0/resources/namespaces",
            "enforce-to-audit:p.yaml#0/spec/rules/0/validate/failureAction",
            "drop-pattern-field:p.yaml#0/spec/rules/0/validate/pattern/spec/containers/0/resources/limits/cpu",
            "drop-pattern-field:p.yaml#0/spec/rules/0/validate/pattern/spec/containers/0/resources/limits/memory",
        ] {
            assert!(got.contains(&want.to_string()), "{want} not in {got:#?}");
        }
        assert_eq!(got, ids(&[("p.yaml", policy)]), "ids are deterministic");
        let rbac = "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: n}\nrules:\n  - {apiGroups: [\"\"], resources: [pods], verbs: [get]}\n";
        let got = ids(&[("rbac.yaml", rbac)]);
        for want in [
            "verbs-wildcard:rbac.yaml#0/rules/0/verbs",
            "resources-wildcard:rbac.yaml#0/rules/0/resources",
            "apiGroups-wildcard:rbac.yaml#0/rules/0/apiGroups",
            "rename:rbac.yaml#0/metadata/name",
            "role-to-clusterrole:rbac.yaml#0/kind",
        ] {
            assert!(got.contains(&want.to_string()), "{want} not in {got:#?}");
        }
        let vap = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicyBinding\nmetadata: {name: b}\nspec:\n  validationActions: [Deny]\n  matchResources: {namespaceSelector: {matchLabels: {a: b}}}\n";
        let got = ids(&[("b.yaml", vap)]);
        assert!(got.contains(&"deny-to-audit:b.yaml#0/spec/validationActions".to_string()));
        assert!(
            got.contains(
                &"drop-selector:b.yaml#0/spec/matchResources/namespaceSelector".to_string()
            )
        );
    }

    #[test]
    fn meaning_operators_change_what_the_object_does() {
        let np = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: d}\nspec:\n  podSelector: {}\n  policyTypes: [Ingress, Egress]\n";
        let d = derive(&[("np.yaml".into(), np.into())]);
        let allow = d
            .iter()
            .find(|d| d.id.starts_with("netpol-allow-all"))
            .unwrap();
        let v = &crate::yaml::parse_json_stream(&allow.text).unwrap()[0];
        assert_eq!(v["spec"]["ingress"], json!([{}]));
        assert_eq!(v["spec"]["egress"], json!([{}]));

        let patches = parent_patches("- {op: add, path: /metadata/annotations/a~1b, value: x}\n");
        assert_eq!(patches.len(), 1);
        let v = &crate::yaml::parse_json_stream(&patches[0].1).unwrap()[0];
        assert_eq!(v[0]["path"], "/metadata/annotations");
        assert_eq!(v[0]["value"], json!({"a/b": "x"}));

        assert_eq!(
            conjuncts("has(a) && f(b && c) && 'x && y' == z"),
            vec!["has(a) ", " f(b && c) ", " 'x && y' == z"]
        );

        let steps = "kind: Rollout\nspec:\n  strategy:\n    canary:\n      steps: [{setWeight: 10}, {pause: {}}]\n";
        let d = derive(&[("c.yaml".into(), steps.into())]);
        assert!(
            d.iter()
                .any(|d| d.id == "zero-pause:c.yaml#0/spec/strategy/canary/steps/1/pause")
        );

        let gate = "#!/bin/sh\nkca policy apply p.yaml -r \"$1\"\n";
        let d = derive(&[("ci/gate.sh".into(), gate.into())]);
        let ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "gate-exit-0:ci/gate.sh",
                "gate-grep-digest:ci/gate.sh",
                "gate-grep-latest:ci/gate.sh"
            ]
        );
    }
}
