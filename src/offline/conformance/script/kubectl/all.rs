//! `kubectl delete TYPE --all [-n NS | -A]`: every object of a type in one namespace or
//! in all of them.

use serde_json::Value;

use super::{Args, Kubectl, skip};
use crate::offline::conformance::cluster::Key;
use crate::offline::conformance::script::exec::{Io, Text, Unknown, Unwind};

/// Most objects one `--all` deletes.
const MAX_TARGETS: usize = 4096;

/// Kinds Kyverno keeps only in its own namespace: UpdateRequests are created in
/// `config.KyvernoNamespace()` (pkg/background/common, pkg/webhooks/updaterequest). The
/// chart excludes that namespace from Kyverno's webhooks and resourceFilters
/// (charts/kyverno/values.yaml `config.excludeKyvernoNamespace: true`), so no policy
/// refuses their deletion.
fn kyverno_namespace_only(kind: &str) -> bool {
    kind == "UpdateRequest"
}

fn unknown(why: &str) -> Option<Unknown> {
    Some(Unknown {
        why: why.into(),
        lines_exact: false,
        ..Default::default()
    })
}

impl Kubectl<'_> {
    pub(super) fn delete_all(&mut self, args: &Args, io: &mut Io) -> Result<i32, Unwind> {
        if let Some(f) = args.unknown_flag(&["all", "A", "all-namespaces", "n", "namespace"]) {
            return Err(skip(f));
        }
        let Some(ty) = args.positional.get(1) else {
            return Err(skip("kubectl delete --all without a type"));
        };
        if args.positional.len() > 2 || ty.contains(',') {
            return Err(skip("kubectl delete --all with names or several types"));
        }
        let Some(r) = self.cluster.mapper().resolve(ty).cloned() else {
            return Err(skip(format!("kubectl delete of the type `{ty}`")));
        };
        if !self.cluster_holds_all_of(&r.kind) {
            if kyverno_namespace_only(&r.kind) {
                // Which ones are still there is the background controller's timing.
                io.write(
                    1,
                    Text {
                        s: String::new(),
                        unknown: unknown("which objects Kyverno's controllers left"),
                    },
                );
                return Ok(0);
            }
            return Err(skip(format!(
                "kubectl delete {ty} --all: objects a controller may have made"
            )));
        }
        let namespace = if args.has(&["A", "all-namespaces"]) || !r.namespaced {
            String::new()
        } else {
            self.namespace(args)
        };
        let key = Key {
            group: r.group.clone(),
            kind: r.kind.clone(),
            namespace,
            name: String::new(),
        };
        let targets: Vec<Value> = self
            .cluster
            .list(&key)
            .take(MAX_TARGETS + 1)
            .cloned()
            .collect();
        if targets.len() > MAX_TARGETS {
            return Err(skip("kubectl delete --all of too many objects"));
        }
        if targets.is_empty() {
            io.write(
                1,
                Text {
                    s: "No resources found\n".into(),
                    unknown: unknown("kubectl's wording when --all finds nothing"),
                },
            );
            return Ok(0);
        }
        let mut status = 0;
        for obj in targets {
            status = status.max(self.delete_one(&obj, super::waits(args), io)?);
        }
        Ok(status)
    }
}
