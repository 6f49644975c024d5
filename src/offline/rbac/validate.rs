//! What the API server's validation would refuse in RBAC objects, reported with
//! positions so that a learner sees `file:line:col` instead of a silently ignored rule.
//! Works on parsed `Node`s only; it neither reads files nor decides access.

use crate::diag::Collector;
use crate::error::msg;
use crate::yaml::{Node, Yaml};

use crate::offline::labels::LabelSelector;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_V1: &str = "rbac.authorization.k8s.io/v1";
const ROLE_FIELDS: &[&str] = &["apiVersion", "kind", "metadata", "rules"];
const CLUSTER_ROLE_FIELDS: &[&str] =
    &["apiVersion", "kind", "metadata", "rules", "aggregationRule"];
const BINDING_FIELDS: &[&str] = &["apiVersion", "kind", "metadata", "subjects", "roleRef"];
const RULE_FIELDS: &[&str] = &[
    "verbs",
    "apiGroups",
    "resources",
    "resourceNames",
    "nonResourceURLs",
];
const SUBJECT_FIELDS: &[&str] = &["kind", "apiGroup", "name", "namespace"];
const ROLE_REF_FIELDS: &[&str] = &["apiGroup", "kind", "name"];

/// Checks every RBAC object in one document (unpacking `List`s); other kinds are left
/// alone.
pub fn check_document(doc: &Node, c: &mut Collector<'_>) {
    let kind = doc.get("kind").and_then(Node::as_str).unwrap_or_default();
    if kind.ends_with("List")
        && let Some(Node {
            value: Yaml::Seq(items),
            ..
        }) = doc.get("items")
    {
        for item in items {
            check_document(item, c);
        }
        return;
    }
    let in_rbac_group = doc
        .get("apiVersion")
        .and_then(Node::as_str)
        .is_some_and(|v| v.split('/').next() == Some(RBAC_GROUP));
    if !in_rbac_group {
        return;
    }
    let fields = match kind {
        "Role" => ROLE_FIELDS,
        "ClusterRole" => CLUSTER_ROLE_FIELDS,
        "RoleBinding" | "ClusterRoleBinding" => BINDING_FIELDS,
        _ => return,
    };
    let Yaml::Map(_) = doc.value else { return };
    if let Some(v) = doc.get("apiVersion")
        && v.as_str() != Some(RBAC_V1)
    {
        c.error_hint(
            v.pos,
            msg(
                format!(
                    "{} は提供されていません (Kubernetes 1.22 以降は v1 だけです)",
                    v.as_str().unwrap_or_default()
                ),
                format!(
                    "{} is not served (only v1 is, since Kubernetes 1.22)",
                    v.as_str().unwrap_or_default()
                ),
            ),
            msg(
                format!("`apiVersion: {RBAC_V1}` と書きます"),
                format!("write `apiVersion: {RBAC_V1}`"),
            ),
        );
    }
    unknown_fields(doc, fields, kind, c);
    check_metadata(doc, kind, c);
    match kind {
        "Role" | "ClusterRole" => {
            if let Some(rules) = doc.get("rules") {
                for rule in items_of(rules, "rules", c) {
                    check_rule(rule, kind == "Role", c);
                }
            }
            if let Some(agg) = doc.get("aggregationRule") {
                check_aggregation(agg, c);
            }
        }
        _ => {
            let cluster = kind == "ClusterRoleBinding";
            match doc.get("roleRef") {
                Some(r) => check_role_ref(r, cluster, c),
                None => c.error_hint(
                    doc.pos,
                    msg(format!("{kind} に roleRef がありません"), format!("{kind} has no roleRef")),
                    msg("`roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ...}` を足します", "add `roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ...}`"),
                ),
            }
            if let Some(subjects) = doc.get("subjects") {
                for s in items_of(subjects, "subjects", c) {
                    check_subject(s, cluster, c);
                }
            }
        }
    }
}

fn check_metadata(doc: &Node, kind: &str, c: &mut Collector<'_>) {
    let Some(meta) = doc.get("metadata") else {
        c.error_hint(
            doc.pos,
            msg(
                format!("{kind} に metadata がありません"),
                format!("{kind} has no metadata"),
            ),
            msg(
                "`metadata: {name: ...}` を足します",
                "add `metadata: {name: ...}`",
            ),
        );
        return;
    };
    match meta.get("name") {
        Some(n) if n.as_str().is_some_and(|s| !s.is_empty()) => {}
        Some(n) => c.error(
            n.pos,
            msg(
                "metadata.name は空でない文字列にします",
                "metadata.name must be a non-empty string",
            ),
        ),
        None => c.error_hint(
            meta.pos,
            msg(
                format!("{kind} に metadata.name がありません"),
                format!("{kind} has no metadata.name"),
            ),
            msg(
                "どのオブジェクトにも名前が要ります",
                "every object needs a name",
            ),
        ),
    }
}

fn check_rule(rule: &Node, namespaced: bool, c: &mut Collector<'_>) {
    if !fields_of(rule, RULE_FIELDS, "rule", c) {
        return;
    }
    let count = |key: &str, c: &mut Collector<'_>| -> usize {
        rule.get(key).map_or(0, |v| strings_of(v, key, c))
    };
    let verbs = count("verbs", c);
    let groups = count("apiGroups", c);
    let resources = count("resources", c);
    let names = count("resourceNames", c);
    let urls = count("nonResourceURLs", c);
    if verbs == 0 {
        c.error_hint(
            rule.pos,
            msg(
                "このルールには verbs がありません。API サーバーが拒否します",
                "this rule has no verbs; the API server refuses it",
            ),
            msg(
                "たとえば `verbs: [\"get\", \"list\", \"watch\"]` を足します",
                "add e.g. `verbs: [\"get\", \"list\", \"watch\"]`",
            ),
        );
    }
    if urls > 0 {
        let at = rule.get("nonResourceURLs").map_or(rule.pos, |n| n.pos);
        if namespaced {
            c.error_hint(
                at,
                msg(
                    "Role は non-resource URL の権限を与えられません",
                    "a Role cannot grant non-resource URLs",
                ),
                msg(
                    "ClusterRoleBinding で結び付けた ClusterRole を使います",
                    "use a ClusterRole bound by a ClusterRoleBinding",
                ),
            );
        }
        if groups + resources + names > 0 {
            c.error_hint(
                at,
                msg(
                    "1 つのルールでリソースと non-resource URL の両方には権限を与えられません",
                    "a rule cannot grant both resources and non-resource URLs",
                ),
                msg("2 つのルールに分けます", "split it into two rules"),
            );
        }
        return;
    }
    if groups == 0 {
        c.error_hint(
            rule.pos,
            msg("このルールには apiGroups がありません。API サーバーが拒否します", "this rule has no apiGroups; the API server refuses it"),
            msg("コアグループ (pods、configmaps など) なら `apiGroups: [\"\"]`、それ以外はリソースのグループ (たとえば `apps`) を足します", "add `apiGroups: [\"\"]` for the core group (pods, configmaps, …), or the resource's group (e.g. `apps`)"),
        );
    }
    if resources == 0 {
        c.error_hint(
            rule.pos,
            msg(
                "このルールには resources がありません。API サーバーが拒否します",
                "this rule has no resources; the API server refuses it",
            ),
            msg(
                "たとえば `resources: [\"pods\"]` (複数形、小文字) を足します",
                "add e.g. `resources: [\"pods\"]` (plural, lower case)",
            ),
        );
    }
}

fn check_aggregation(agg: &Node, c: &mut Collector<'_>) {
    let Some(sels) = agg.get("clusterRoleSelectors") else {
        c.error_hint(
            agg.pos,
            msg(
                "aggregationRule に clusterRoleSelectors がありません",
                "aggregationRule has no clusterRoleSelectors",
            ),
            msg(
                "`clusterRoleSelectors: [{matchLabels: {...}}]` を足します",
                "add `clusterRoleSelectors: [{matchLabels: {...}}]`",
            ),
        );
        return;
    };
    let items = items_of(sels, "clusterRoleSelectors", c);
    if items.is_empty() {
        c.error(
            sels.pos,
            msg(
                "clusterRoleSelectors にはセレクターが 1 つ以上必要です",
                "clusterRoleSelectors needs at least one selector",
            ),
        );
    }
    for sel in items {
        if let Err(e) = LabelSelector::from_json(&sel.to_json()) {
            c.error(
                sel.pos,
                msg(
                    format!("ラベルセレクターとして読めません: {e}"),
                    format!("invalid label selector: {e}"),
                ),
            );
        }
    }
}

fn check_role_ref(r: &Node, cluster: bool, c: &mut Collector<'_>) {
    if !fields_of(r, ROLE_REF_FIELDS, "roleRef", c) {
        return;
    }
    if let Some(g) = r.get("apiGroup")
        && g.as_str() != Some(RBAC_GROUP)
    {
        c.error_hint(
            g.pos,
            msg(
                "roleRef.apiGroup は rbac.authorization.k8s.io にします",
                "roleRef.apiGroup must be rbac.authorization.k8s.io",
            ),
            msg(
                "`apiGroup: rbac.authorization.k8s.io` と書きます",
                "write `apiGroup: rbac.authorization.k8s.io`",
            ),
        );
    }
    match r.get("kind") {
        Some(k) if k.as_str() == Some("ClusterRole") => {}
        Some(k) if k.as_str() == Some("Role") && !cluster => {}
        Some(k) if k.as_str() == Some("Role") => c.error_hint(
            k.pos,
            msg(
                "ClusterRoleBinding が参照できるのは ClusterRole だけです",
                "a ClusterRoleBinding can only refer to a ClusterRole",
            ),
            msg(
                "Role は、その Role の namespace にある RoleBinding で結び付けます",
                "bind a Role with a RoleBinding in the Role's namespace",
            ),
        ),
        Some(k) => c.error_hint(
            k.pos,
            msg(
                "roleRef.kind は Role か ClusterRole にします",
                "roleRef.kind must be Role or ClusterRole",
            ),
            msg(
                "`kind: Role` か `kind: ClusterRole` と書きます",
                "write `kind: Role` or `kind: ClusterRole`",
            ),
        ),
        None => c.error(
            r.pos,
            msg("roleRef に kind がありません", "roleRef has no kind"),
        ),
    }
    match r.get("name") {
        Some(n) if n.as_str().is_some_and(|s| !s.is_empty()) => {}
        Some(n) => c.error(
            n.pos,
            msg(
                "roleRef.name は空でない文字列にします",
                "roleRef.name must be a non-empty string",
            ),
        ),
        None => c.error(
            r.pos,
            msg("roleRef に name がありません", "roleRef has no name"),
        ),
    }
}

fn check_subject(s: &Node, cluster: bool, c: &mut Collector<'_>) {
    if !fields_of(s, SUBJECT_FIELDS, "subject", c) {
        return;
    }
    let kind = s.get("kind").and_then(Node::as_str);
    match kind {
        Some("User" | "Group" | "ServiceAccount") => {}
        Some(_) => c.error_hint(
            s.get("kind").map_or(s.pos, |k| k.pos),
            msg(
                "subject の kind は User、Group、ServiceAccount のどれかにします",
                "subject kind must be User, Group or ServiceAccount",
            ),
            msg(
                "kind は大文字と小文字を区別します",
                "kinds are case-sensitive",
            ),
        ),
        None => c.error(
            s.pos,
            msg("subject に kind がありません", "subject has no kind"),
        ),
    }
    match s.get("name") {
        Some(n) if n.as_str().is_some_and(|v| !v.is_empty()) => {}
        Some(n) => c.error(
            n.pos,
            msg(
                "subject の name は空でない文字列にします",
                "subject name must be a non-empty string",
            ),
        ),
        None => c.error(
            s.pos,
            msg("subject に name がありません", "subject has no name"),
        ),
    }
    let group = s.get("apiGroup");
    match (kind, group.and_then(Node::as_str)) {
        (Some("ServiceAccount"), Some(g)) if !g.is_empty() => c.error_hint(
            group.map_or(s.pos, |n| n.pos),
            msg(
                "ServiceAccount の subject の apiGroup は空にします",
                "a ServiceAccount subject's apiGroup must be empty",
            ),
            msg(
                "この subject から `apiGroup` を取り除きます",
                "remove `apiGroup` from this subject",
            ),
        ),
        (Some("User" | "Group"), Some(g)) if !g.is_empty() && g != RBAC_GROUP => c.error_hint(
            group.map_or(s.pos, |n| n.pos),
            msg(
                "User か Group の subject の apiGroup は rbac.authorization.k8s.io にします",
                "a User or Group subject's apiGroup must be rbac.authorization.k8s.io",
            ),
            msg(
                "`apiGroup: rbac.authorization.k8s.io` と書きます",
                "write `apiGroup: rbac.authorization.k8s.io`",
            ),
        ),
        _ => {}
    }
    if kind == Some("ServiceAccount") && cluster && s.get("namespace").is_none() {
        c.error_hint(
            s.pos,
            msg(
                "ClusterRoleBinding の ServiceAccount の subject には namespace が必要です",
                "a ServiceAccount subject of a ClusterRoleBinding needs a namespace",
            ),
            msg(
                "`namespace: <サービスアカウントの namespace>` を足します",
                "add `namespace: <the service account's namespace>`",
            ),
        );
    }
}

/// The items of a list field; anything else is reported and yields nothing.
fn items_of<'n>(v: &'n Node, field: &str, c: &mut Collector<'_>) -> &'n [Node] {
    match &v.value {
        Yaml::Seq(items) => items,
        Yaml::Null => &[],
        _ => {
            c.error(
                v.pos,
                msg(
                    format!(
                        "{field} はリストにしますが、{} が書かれています",
                        v.type_name()
                    ),
                    format!("{field} must be a list, found {}", v.type_name()),
                ),
            );
            &[]
        }
    }
}

/// Counts the strings of a list-of-strings field, reporting anything else.
fn strings_of(v: &Node, field: &str, c: &mut Collector<'_>) -> usize {
    match &v.value {
        Yaml::Seq(items) => {
            for i in items {
                if i.as_str().is_none() {
                    c.error_hint(
                        i.pos,
                        msg(
                            format!(
                                "{field} には文字列を並べますが、{} が書かれています",
                                i.type_name()
                            ),
                            format!("{field} must hold strings, found {}", i.type_name()),
                        ),
                        msg("値を引用符で囲みます", "quote the value"),
                    );
                }
            }
            items.iter().filter(|i| i.as_str().is_some()).count()
        }
        Yaml::Null => 0,
        _ => {
            c.error_hint(
                v.pos,
                msg(
                    format!(
                        "{field} はリストにしますが、{} が書かれています",
                        v.type_name()
                    ),
                    format!("{field} must be a list, found {}", v.type_name()),
                ),
                msg(
                    format!("`{field}: [\"...\"]` と書きます"),
                    format!("write `{field}: [\"...\"]`"),
                ),
            );
            0
        }
    }
}

/// Whether `node` is a mapping (reported when not), with its unknown fields reported.
fn fields_of(node: &Node, known: &[&str], what: &str, c: &mut Collector<'_>) -> bool {
    if !matches!(node.value, Yaml::Map(_)) {
        c.error(
            node.pos,
            msg(
                format!(
                    "{what} はマッピングにしますが、{} が書かれています",
                    node.type_name()
                ),
                format!("{what} must be a mapping, found {}", node.type_name()),
            ),
        );
        return false;
    }
    unknown_fields(node, known, what, c);
    true
}

fn unknown_fields(node: &Node, known: &[&str], what: &str, c: &mut Collector<'_>) {
    let Yaml::Map(entries) = &node.value else {
        return;
    };
    for (k, _) in entries {
        let key = k.as_str().unwrap_or_default();
        if !known.contains(&key) {
            c.error_hint(
                k.pos,
                msg(
                    format!("{what} に知らないフィールド `{key}` があります"),
                    format!("unknown field `{key}` in {what}"),
                ),
                msg(
                    format!(
                        "API サーバーは知らないフィールドを拒否します。ここで使えるのは: {}",
                        known.join(", ")
                    ),
                    format!(
                        "the API server refuses unknown fields; known here: {}",
                        known.join(", ")
                    ),
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn problems(src: &str) -> Vec<String> {
        let mut c = Collector::new(Path::new("t.yaml"), src);
        for doc in crate::yaml::parse_stream(src).unwrap() {
            check_document(&doc, &mut c);
        }
        c.finish()
            .into_iter()
            .map(|d| format!("{}:{} {}", d.pos.line, d.pos.col, d.message))
            .collect()
    }

    #[test]
    fn valid_objects_have_no_problems() {
        let src = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: a, labels: {x: y}}
rules:
- {verbs: [get], apiGroups: [""], resources: [pods], resourceNames: [p]}
- {verbs: [get], nonResourceURLs: ["/healthz"]}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {x: y}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b, namespace: n}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}
subjects:
- {kind: ServiceAccount, name: sa}
- {kind: User, name: u, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
rules: whatever
"#;
        assert_eq!(problems(src), Vec::<String>::new());
    }

    #[test]
    fn refused_objects_table() {
        #[rustfmt::skip]
        let cases = [
            ("kind: Role\nmetadata: {name: r}\nrule: []\n", "4:1 unknown field `rule` in Role"),
            ("kind: Role\nmetadata: {name: r}\nrules:\n- {apiGroups: [\"\"], resources: [pods]}\n", "5:3 this rule has no verbs"),
            ("kind: Role\nmetadata: {name: r}\nrules:\n- {verbs: [get], resources: [pods]}\n", "5:3 this rule has no apiGroups"),
            ("kind: Role\nmetadata: {name: r}\nrules:\n- {verbs: get, apiGroups: [\"\"], resources: [pods]}\n", "5:11 verbs must be a list"),
            ("kind: Role\nmetadata: {name: r}\nrules:\n- {verbs: [get], nonResourceURLs: [/x]}\n", "5:35 a Role cannot grant non-resource URLs"),
            ("kind: ClusterRole\nmetadata: {name: r}\nrules:\n- {verbs: [get], resources: [pods], nonResourceURLs: [/x]}\n", "5:54 a rule cannot grant both"),
            ("kind: ClusterRole\nmetadata: {name: r}\naggregationRule:\n  clusterRoleSelectors: [{matchExpressions: [{key: a, operator: Is}]}]\n", "5:26 invalid label selector"),
            ("kind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: Role, name: r}\n", "4:17 a ClusterRoleBinding can only refer to a ClusterRole"),
            ("kind: RoleBinding\nmetadata: {name: b}\n", "1:1 RoleBinding has no roleRef"),
            ("kind: ClusterRoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r}\nsubjects:\n- {kind: ServiceAccount, name: sa}\n", "6:3 a ServiceAccount subject of a ClusterRoleBinding needs a namespace"),
            ("kind: RoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r}\nsubjects:\n- {kind: user, name: u}\n", "6:10 subject kind must be User"),
            ("kind: RoleBinding\nmetadata: {}\nroleRef: {kind: ClusterRole, name: r}\n", "3:11 RoleBinding has no metadata.name"),
            ("kind: Role\nmetadata: {name: r}\nrules: [get]\n", "4:9 rule must be a mapping, found a string"),
            ("kind: RoleBinding\nmetadata: {name: b}\nroleRef: {kind: ClusterRole, name: r}\nsubjects: [{kind: User, name: u, namespce: x}]\n", "5:34 unknown field `namespce` in subject"),
        ];
        for (body, want) in cases {
            let src = format!("apiVersion: rbac.authorization.k8s.io/v1\n{body}");
            let got = problems(&src);
            assert!(
                got.iter().any(|g| g.starts_with(want)),
                "{body:?}: want {want:?}, got {got:?}"
            );
        }
    }

    #[test]
    fn only_rbac_v1_is_served() {
        let got = problems(
            "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: ClusterRole\nmetadata: {name: r}\n",
        );
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("1:13 rbac.authorization.k8s.io/v1beta1 is not served"),
            "{got:?}"
        );
    }

    #[test]
    fn lists_are_checked_item_by_item() {
        let src = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: rbac.authorization.k8s.io/v1\n  kind: Role\n  metadata: {name: r}\n  rulez: []\n";
        let got = problems(src);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].starts_with("7:3 unknown field `rulez`"), "{got:?}");
    }
}
