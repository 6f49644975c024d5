//! The webhooks of Kyverno's ImageValidatingPolicies (pkg/controllers/webhook/controller.go
//! `buildForJSONPoliciesValidation`, `buildForJSONPoliciesMutation`, `ivpolsNeedingMutation`;
//! names from pkg/config/config.go). They are built as the other CEL policies' are
//! (validating.go `buildWebhookRules`), with these differences:
//! - each policy has a validating webhook (`ivpol.validate.kyverno.svc…`, served at
//!   `/ivpol/validate` or `/nivpol/validate`) and, when it pins digests
//!   (`validationConfigurations.mutateDigest`, on unless false), a mutating one
//!   (`ivpol.mutate.kyverno.svc…`, `/ivpol/mutate`, `/nivpol/mutate`); both kinds share
//!   the names, the namespaced kind's fine-grained ones carry the namespace;
//! - a NamespacedImageValidatingPolicy's fine-grained webhook does not carry its autogen
//!   copies (validating.go adds them for `*ImageValidatingPolicy` alone), its shared one
//!   does;
//! - the namespaced kind's validating webhooks keep their rules as built (the cluster
//!   kind's are sorted and de-duplicated; every mutating webhook is).

use serde_json::Value;

use super::webhooks::Family;
use crate::offline::conformance::cluster::text;

pub(super) const VALIDATING: &[Family] = &[
    Family {
        kinds: &["ImageValidatingPolicy"],
        name: "ivpol.validate.kyverno.svc",
        path: "/ivpol/validate",
        unsorted: false,
        digest_only: false,
    },
    Family {
        kinds: &["NamespacedImageValidatingPolicy"],
        name: "ivpol.validate.kyverno.svc",
        path: "/nivpol/validate",
        unsorted: true,
        digest_only: false,
    },
];

pub(super) const MUTATING: &[Family] = &[
    Family {
        kinds: &["ImageValidatingPolicy"],
        name: "ivpol.mutate.kyverno.svc",
        path: "/ivpol/mutate",
        unsorted: false,
        digest_only: true,
    },
    Family {
        kinds: &["NamespacedImageValidatingPolicy"],
        name: "ivpol.mutate.kyverno.svc",
        path: "/nivpol/mutate",
        unsorted: false,
        digest_only: true,
    },
];

/// Why a configuration is not modelled when a family's unsorted rules are not in sorted
/// order.
pub(super) const UNSORTED: &str =
    "the order of the rules of a NamespacedImageValidatingPolicy's validating webhook";

/// Why a configuration is not modelled when two of its webhooks share a name.
pub(super) const DUPLICATE: &str = "webhooks of the same name (an ImageValidatingPolicy's and a NamespacedImageValidatingPolicy's shared ones), which the API server refuses";

/// `ivpolsNeedingMutation`: the policy pins image digests (`mutateDigest` unset or true).
pub(super) fn pins_digests(p: &Value) -> bool {
    p.pointer("/spec/validationConfigurations/mutateDigest")
        .and_then(Value::as_bool)
        != Some(false)
}

/// Whether a CEL policy's fine-grained webhook carries its autogen copies' rules and
/// conditions: every kind's but a NamespacedImageValidatingPolicy's.
pub(super) fn fine_grained_autogen(p: &Value) -> bool {
    text(p, "/kind") != "NamespacedImageValidatingPolicy"
}

/// Whether `built` (as Kyverno left them) are `sorted` once the API server defaults a
/// rule's `scope`.
pub(super) fn same_order(built: &[Value], sorted: &[Value]) -> bool {
    built.len() == sorted.len()
        && built.iter().zip(sorted).all(|(b, s)| {
            let mut b = b.clone();
            if b.get("scope").and_then(Value::as_str).is_none() {
                b["scope"] = Value::from("*");
            }
            b == *s
        })
}

/// The first webhook name `hooks` hold twice.
pub(super) fn duplicate_name(hooks: &[Value]) -> Option<String> {
    let mut names: Vec<String> = hooks.iter().map(|w| text(w, "/name")).collect();
    names.sort();
    names
        .windows(2)
        .find(|w| w[0] == w[1])
        .map(|w| w[0].clone())
}

/// The name of the validating webhook that serves image policy `p` (its own when it has
/// valid `matchConditions`, `matchPolicy: Exact` or a timeout; validating.go
/// `buildWebhookRules`, `generateName`), as a denial names it.
pub fn validating_webhook_name(p: &Value, features: super::Features) -> String {
    let conditions = p.pointer("/spec/matchConditions").and_then(Value::as_array);
    let fine = conditions.is_some_and(|c| crate::offline::vap::offloadable(c).is_some())
        || text(p, "/spec/matchConstraints/matchPolicy") == "Exact"
        || p.pointer("/spec/webhookConfiguration/timeoutSeconds")
            .is_some();
    let fp = if features.force_failure_ignore || text(p, "/spec/failurePolicy") == "Ignore" {
        "ignore"
    } else {
        "fail"
    };
    let base = format!("{}-{fp}", VALIDATING[0].name);
    if !fine {
        return base;
    }
    let (ns, name) = (text(p, "/metadata/namespace"), text(p, "/metadata/name"));
    if ns.is_empty() {
        format!("{base}-finegrained-{name}")
    } else {
        format!("{base}-finegrained-{ns}-{name}")
    }
}
