//! `least-privilege` checks and the grant a `revoke` setup takes away: which rules the
//! learner's objects give a subject, found with the RBAC authorizer itself
//! (`offline::rbac`) so bindings, groups and ClusterRole aggregation count exactly as
//! the API server counts them. Each rule of a learner's Role or ClusterRole is replaced
//! by a marker rule of its own; the markers the subject can use are the rules it got
//! (through a binding of the cluster or an aggregating role the chart binds). A second
//! pass does the same for every role, with the learner's bindings only: what a learner's
//! binding hands over (binding `cluster-admin`, say). Pure; the live target hands in the
//! cluster's copies of the learner's objects.

use serde_json::{Value, json};

use crate::content::lab::Grant;
use crate::offline::rbac::{AccessRequest, Authorizer};

const MARK_GROUP: &str = "kca.marker";
const MARK_VERB: &str = "kca-reach";

/// One rule the learner's objects give the subject.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    /// "ClusterRole kca-mutate-generator", "Role ns/name".
    pub object: String,
    /// Index in the object's `rules`.
    pub index: usize,
    pub rule: Value,
    /// Where it applies: "cluster-wide" or "in namespace ns".
    pub scope: String,
    /// How it reaches the subject (the authorizer's binding sentence).
    pub via: String,
    /// The role object it comes from (for `revoke`).
    pub role: Value,
}

fn is_role(o: &Value) -> bool {
    matches!(
        o.get("kind").and_then(Value::as_str),
        Some("Role" | "ClusterRole")
    )
}

fn is_binding(o: &Value) -> bool {
    matches!(
        o.get("kind").and_then(Value::as_str),
        Some("RoleBinding" | "ClusterRoleBinding")
    )
}

fn describe(o: &Value) -> String {
    let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("?");
    match o.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) if s("/kind") == "Role" => format!("Role {ns}/{}", s("/metadata/name")),
        _ => format!("{} {}", s("/kind"), s("/metadata/name")),
    }
}

/// `role` with each rule (or, `whole`, the role as one) replaced by a marker rule; the
/// markers are pushed to `marks` with the rule they stand for.
fn marked(role: &Value, whole: bool, marks: &mut Vec<(Value, usize, Value)>) -> Value {
    let mut r = role.clone();
    let rules: Vec<Value> = role
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut new_rules = Vec::new();
    if whole {
        if !rules.is_empty() {
            let id = marks.len();
            marks.push((role.clone(), usize::MAX, Value::Null));
            new_rules.push(json!({"apiGroups": [MARK_GROUP], "resources": [format!("m{id}")], "verbs": [MARK_VERB]}));
        }
    } else {
        for (i, rule) in rules.iter().enumerate() {
            let id = marks.len();
            marks.push((role.clone(), i, rule.clone()));
            new_rules.push(json!({"apiGroups": [MARK_GROUP], "resources": [format!("m{id}")], "verbs": [MARK_VERB]}));
        }
    }
    if let Some(m) = r.as_object_mut() {
        m.insert("rules".into(), Value::Array(new_rules));
    }
    r
}

/// Every namespace a RoleBinding lives in, or a Role, among `objects`.
fn namespaces(objects: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = objects
        .iter()
        .filter(|o| {
            matches!(
                o.get("kind").and_then(Value::as_str),
                Some("RoleBinding" | "Role")
            )
        })
        .map(|o| {
            o.pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or(crate::offline::rbac::DEFAULT_NAMESPACE)
                .to_string()
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

fn reach(a: &Authorizer, user: &str, groups: &[String], id: usize, ns: &str) -> Option<String> {
    let d = a.authorize(&AccessRequest {
        user: user.into(),
        groups: groups.to_vec(),
        verb: MARK_VERB.into(),
        api_group: MARK_GROUP.into(),
        resource: format!("m{id}"),
        namespace: ns.into(),
        ..Default::default()
    });
    d.allowed.then(|| {
        d.reason
            .strip_prefix("RBAC: allowed by ")
            .unwrap_or(&d.reason)
            .to_string()
    })
}

/// The rules the `learner` objects give `user` (with `groups`) over a cluster holding
/// `cluster` (every other object: the install's RBAC, fixtures). The superuser group is
/// not asked about: it needs no rule.
pub fn reached(
    cluster: &[Value],
    learner: &[Value],
    user: &str,
    groups: &[String],
) -> Vec<Reached> {
    let mut found: Vec<Reached> = Vec::new();
    let mut all: Vec<Value> = cluster.to_vec();
    all.extend(learner.iter().cloned());
    let spaces = namespaces(&all);
    let mut collect = |objects: Vec<Value>, marks: Vec<(Value, usize, Value)>| {
        let a = Authorizer::new(&objects);
        for (id, (role, index, rule)) in marks.into_iter().enumerate() {
            let mut hit = reach(&a, user, groups, id, "").map(|v| ("cluster-wide".to_string(), v));
            if hit.is_none() {
                for ns in &spaces {
                    if let Some(v) = reach(&a, user, groups, id, ns) {
                        hit = Some((format!("in namespace {ns}"), v));
                        break;
                    }
                }
            }
            let Some((scope, via)) = hit else { continue };
            let rules: Vec<(usize, Value)> = if index == usize::MAX {
                role.get("rules")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().cloned().enumerate().collect())
                    .unwrap_or_default()
            } else {
                vec![(index, rule)]
            };
            for (index, rule) in rules {
                let r = Reached {
                    object: describe(&role),
                    index,
                    rule,
                    scope: scope.clone(),
                    via: via.clone(),
                    role: role.clone(),
                };
                if !found
                    .iter()
                    .any(|f| f.object == r.object && f.index == r.index)
                {
                    found.push(r);
                }
            }
        }
    };
    // Pass 1: the learner's roles, marked rule by rule, in the cluster as it is.
    let mut marks = Vec::new();
    let mut objects: Vec<Value> = cluster.to_vec();
    for o in learner {
        objects.push(if is_role(o) {
            marked(o, false, &mut marks)
        } else {
            o.clone()
        });
    }
    collect(objects, marks);
    // Pass 2: every role marked whole, and the learner's bindings only.
    let mut marks = Vec::new();
    let mut objects: Vec<Value> = Vec::new();
    for o in cluster.iter().chain(learner) {
        if is_role(o) {
            objects.push(marked(o, true, &mut marks));
        }
    }
    objects.extend(learner.iter().filter(|o| is_binding(o)).cloned());
    collect(objects, marks);
    found
}

fn list(rule: &Value, key: &str) -> Vec<String> {
    rule.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The first (group, resource, verb) of `rule` outside `allowed`; a `*` in the rule is
/// covered only by a `*` in the envelope, and non-resource URLs by nothing.
pub fn excess(rule: &Value, allowed: &[Grant]) -> Option<String> {
    let urls = list(rule, "nonResourceURLs");
    if !urls.is_empty() {
        return Some(format!(
            "{} on the non-resource URLs {}",
            list(rule, "verbs").join(","),
            urls.join(",")
        ));
    }
    for g in list(rule, "apiGroups") {
        for r in list(rule, "resources") {
            for v in list(rule, "verbs") {
                if !allowed.iter().any(|a| a.covers(&g, &r, &v)) {
                    let group = if g.is_empty() {
                        "core".into()
                    } else {
                        g.clone()
                    };
                    return Some(format!("{v} on {r} (group {group})"));
                }
            }
        }
    }
    None
}

/// "create,update,delete on * in *" for a rule.
pub fn rule_text(rule: &Value) -> String {
    let groups: Vec<String> = list(rule, "apiGroups")
        .into_iter()
        .map(|g| if g.is_empty() { "core".into() } else { g })
        .collect();
    format!(
        "{} on {} in {}",
        list(rule, "verbs").join(","),
        list(rule, "resources").join(","),
        groups.join(",")
    )
}

/// The judgement of a `least-privilege` check: every required grant answered yes by
/// `can`, and no reached rule beyond `allowed`.
pub fn judge(
    who: &str,
    required: &[Grant],
    allowed: &[Grant],
    reached: &[Reached],
    mut can: impl FnMut(&str, &str, &str, &str) -> Result<bool, String>,
) -> crate::lab::check::Outcome {
    use crate::lab::check::{Detail, Outcome};
    let mut extra = Vec::new();
    for r in reached {
        if let Some(what) = excess(&r.rule, allowed) {
            extra.push(crate::lab::detail::Excess {
                object: r.object.clone(),
                index: r.index,
                rule: rule_text(&r.rule),
                who: who.into(),
                what,
                scope: r.scope.clone(),
                via: r.via.clone(),
            });
        }
    }
    if !extra.is_empty() {
        return Outcome::fail(Detail::BeyondAllowed { excess: extra });
    }
    for g in required {
        for group in &g.groups {
            for res in &g.resources {
                for verb in &g.verbs {
                    match can(verb, group, res, &g.namespace) {
                        Ok(true) => {}
                        Ok(false) => {
                            return Outcome::fail(Detail::LacksNeeded {
                                who: who.into(),
                                verb: verb.clone(),
                                resource: res.clone(),
                                group: group.clone(),
                                namespace: g.namespace.clone(),
                            });
                        }
                        Err(reason) => return Outcome::error(Detail::OfflineCannot { reason }),
                    }
                }
            }
        }
    }
    let from: Vec<String> =
        reached
            .iter()
            .map(|r| r.object.clone())
            .fold(Vec::new(), |mut v, o| {
                if !v.contains(&o) {
                    v.push(o);
                }
                v
            });
    Outcome::pass(Detail::PrivilegeOk {
        who: who.into(),
        from,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::check::Verdict;

    fn y(s: &str) -> Vec<Value> {
        crate::yaml::parse_json_stream(s).unwrap()
    }

    const SA: &str = "system:serviceaccount:kyverno:kyverno-background-controller";

    fn groups() -> Vec<String> {
        crate::offline::rbac::impersonated(SA, &[]).1
    }

    fn allowed() -> Vec<Grant> {
        vec![Grant {
            groups: vec!["networking.k8s.io".into()],
            resources: vec!["networkpolicies".into()],
            verbs: [
                "get", "list", "watch", "create", "update", "patch", "delete",
            ]
            .map(String::from)
            .to_vec(),
            namespace: String::new(),
        }]
    }

    fn outcome(learner: &str) -> crate::lab::check::Outcome {
        let cluster = crate::lab::offline::baseline_rbac().to_vec();
        let learner = y(learner);
        let r = reached(&cluster, &learner, SA, &groups());
        let mut all = cluster.clone();
        all.extend(learner);
        let a = Authorizer::new(&all);
        let (u, g) = (SA.to_string(), groups());
        let mut required = allowed();
        required[0].verbs = ["get", "create", "update", "delete"]
            .map(String::from)
            .to_vec();
        judge(SA, &required, &allowed(), &r, |verb, group, res, ns| {
            Ok(a.authorize(&AccessRequest {
                user: u.clone(),
                groups: g.clone(),
                verb: verb.into(),
                api_group: group.into(),
                resource: res.into(),
                namespace: ns.into(),
                ..Default::default()
            })
            .allowed)
        })
    }

    const AGG: &str = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: any-name\n  labels: {rbac.kyverno.io/aggregate-to-background-controller: \"true\"}\nrules:\n";

    #[test]
    fn an_aggregated_wildcard_grant_fails_and_names_its_rule_and_object() {
        let wide = format!(
            "{AGG}  - apiGroups: [networking.k8s.io]\n    resources: [networkpolicies]\n    verbs: [get, create, update, delete]\n  - apiGroups: [\"*\"]\n    resources: [\"*\"]\n    verbs: [create, update, delete]\n"
        );
        let o = outcome(&wide);
        assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
        assert!(
            o.detail
                .to_string()
                .contains("ClusterRole any-name rules[1]"),
            "{}",
            o.detail
        );
        assert!(o.detail.to_string().contains("create on *"), "{}", o.detail);
    }

    #[test]
    fn the_exact_grant_passes_whatever_its_name() {
        let exact = format!(
            "{AGG}  - apiGroups: [networking.k8s.io]\n    resources: [networkpolicies]\n    verbs: [get, create, update, delete]\n"
        );
        let o = outcome(&exact);
        assert_eq!(o.verdict, Verdict::Pass, "{}", o.detail);
    }

    #[test]
    fn a_binding_of_a_broad_role_is_excess_and_an_unbound_role_is_not() {
        let bound = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: lazy}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}\nsubjects: [{kind: ServiceAccount, name: kyverno-background-controller, namespace: kyverno}]\n";
        let cluster = crate::lab::offline::baseline_rbac().to_vec();
        let r = reached(&cluster, &y(bound), SA, &groups());
        assert!(
            r.iter()
                .any(|x| x.object == "ClusterRole cluster-admin" && x.via.contains("lazy")),
            "{r:?}"
        );
        let unbound = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: nobody}\nrules: [{apiGroups: [\"*\"], resources: [\"*\"], verbs: [\"*\"]}]\n";
        assert!(reached(&cluster, &y(unbound), SA, &groups()).is_empty());
    }

    #[test]
    fn a_missing_required_grant_fails() {
        let o = outcome("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n");
        assert_eq!(o.verdict, Verdict::Fail, "{}", o.detail);
        assert!(
            o.detail
                .to_string()
                .contains("cannot create networkpolicies"),
            "{}",
            o.detail
        );
    }
}
