//! What one tick of a `CleanupPolicy`/`ClusterCleanupPolicy` deletes
//! (pkg/controllers/cleanup/controller.go `cleanup`): for each kind its match names, the
//! objects the controller may list (in the policy's namespace when namespaced), less
//! Kyverno's resourceFilters, that the match/exclude blocks select (the engine's own
//! match walk, on a stand-in rule) and whose `conditions` hold with the policy's
//! `context` and the object as `target`, that the controller may delete.

use std::sync::Arc;

use serde_json::{Value, json};

use super::super::Skip;
use super::super::cluster::{Cluster, Key, text};
use super::cleanup::{cleanup_may, resolve};
use crate::offline::kyverno::context::Context;
use crate::offline::kyverno::entries::{Options, load_entries};
use crate::offline::kyverno::rule::ContextEntry;
use crate::offline::kyverno::{self, Request, conditions, matching};
use crate::offline::rbac::Authorizer;
use crate::offline::rbac::resource::Mapper;

/// The objects one tick of `policy` deletes.
pub fn selected(
    cluster: &Cluster,
    policy: &Value,
    authorizer: &Authorizer,
    mapper: &Mapper,
) -> Result<Vec<Key>, Skip> {
    let unmodelled = |what: String| Skip::Cleanup(format!("cleanup policy {what}"));
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let policy_ns = text(policy, "/metadata/namespace");
    // The match walk is the engine's: the blocks as one rule of a stand-in policy.
    let mut stand_in = json!({"apiVersion": "kyverno.io/v1",
        "kind": if policy_ns.is_empty() { "ClusterPolicy" } else { "Policy" },
        "metadata": {"name": text(policy, "/metadata/name")},
        "spec": {"rules": [{"name": "cleanup", "match": spec.get("match"),
            "validate": {"pattern": {}}}]}});
    if !policy_ns.is_empty() {
        stand_in["metadata"]["namespace"] = json!(policy_ns);
    }
    if let Some(ex) = spec.get("exclude") {
        stand_in["spec"]["rules"][0]["exclude"] = ex.clone();
    }
    let (loaded, _) = kyverno::load_policies(std::slice::from_ref(&stand_in));
    let Some((p, rule)) = loaded.first().and_then(|p| p.rules.first().map(|r| (p, r))) else {
        return Err(unmodelled("match blocks the engine does not read".into()));
    };
    let mut kinds: Vec<String> = Vec::new();
    for block in ["any", "all"] {
        let filters = spec
            .pointer(&format!("/match/{block}"))
            .and_then(Value::as_array);
        for f in filters.into_iter().flatten() {
            let ks = f.pointer("/resources/kinds").and_then(Value::as_array);
            kinds.extend(
                ks.into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            );
        }
    }
    let ks = spec
        .pointer("/match/resources/kinds")
        .and_then(Value::as_array);
    kinds.extend(
        ks.into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string),
    );
    kinds.sort();
    kinds.dedup();
    let opts = Options {
        cluster: Arc::new(cluster.objects.clone()),
        ..Options::default()
    };
    let entries = ContextEntry::list(spec);
    let mut out = Vec::new();
    for kind in &kinds {
        let Some(r) = resolve(mapper, kind) else {
            return Err(unmodelled(format!(
                "kind {kind:?} (wildcards, unknown kinds)"
            )));
        };
        let may = |verb: &str, namespace: &str, name: &str| {
            cleanup_may(authorizer, r, verb, namespace, name)
        };
        if !may("list", &policy_ns, "") {
            continue;
        }
        let of_kind = cluster.objects.iter().filter(|o| {
            text(o, "/kind") == r.kind
                && mapper
                    .for_kind(&text(o, "/apiVersion"), &r.kind)
                    .is_some_and(|x| x.group == r.group)
        });
        for obj in of_kind {
            let ns = text(obj, "/metadata/namespace");
            if (!policy_ns.is_empty() && ns != policy_ns) || cluster.filtered_for_cleanup(obj) {
                continue;
            }
            let req = Request {
                operation: "CREATE".into(),
                object: obj.clone(),
                namespace_labels: cluster.namespace_labels(&ns),
                ..Request::default()
            };
            if !matching::rule_matches(rule, p, &req).unwrap_or(false) {
                continue;
            }
            if let Some(conds) = spec.get("conditions").filter(|c| !c.is_null()) {
                let mut ctx = Context::from_document(json!({
                    "target": obj, "request": {"namespace": ns}}));
                if load_entries(&entries, &mut ctx, &opts, None).is_err() {
                    continue;
                }
                let held = conditions::evaluate(conds, &ctx);
                if let Some(failed) = ctx.load_failure()
                    && let Some(why) = failed.unsupported
                {
                    return Err(Skip::Engine(why.to_string()));
                }
                if !held.unwrap_or(false) {
                    continue;
                }
            }
            if may("delete", &ns, &text(obj, "/metadata/name")) {
                super::deleting::no_dependents(cluster, obj)?;
                out.push(Key::of(obj));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_read_the_context_and_the_target() {
        let mut cluster = Cluster::new("default");
        for name in ["example", "other"] {
            cluster.store(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"}, "spec": {"containers": []}}));
        }
        let policy = json!({"apiVersion": "kyverno.io/v2", "kind": "ClusterCleanupPolicy",
            "metadata": {"name": "c"},
            "spec": {"schedule": "*/1 * * * *",
                "context": [{"name": "want", "variable": {"value": "example"}}],
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "conditions": {"all": [{"key": "{{ target.metadata.name }}",
                    "operator": "Equals", "value": "{{ want }}"}]}}});
        let got = selected(
            &cluster,
            &policy,
            &cluster.cleanup_authorizer(),
            &cluster.mapper(),
        );
        let names: Vec<String> = got
            .unwrap_or_default()
            .into_iter()
            .map(|k| k.name)
            .collect();
        assert_eq!(names, vec!["example".to_string()]);
    }
}
