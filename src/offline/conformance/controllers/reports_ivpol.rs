//! The reports of ImageValidatingPolicies are not modelled; what can be said is when a
//! background scan would need a registry: the reports controller's scanner runs each
//! image policy with background on through the admission engine
//! (pkg/controllers/report/utils/scanner.go `ScanResource`, `ivpolengine.NewProvider`),
//! which fetches the images its `matchImageReferences` select
//! (pkg/image/verification/evaluator/policy.go `Evaluate`). A report asserted then is a
//! registry skip, not a reports one.

use serde_json::Value;

use super::super::Skip;
use super::reports::background_user;
use crate::offline::conformance::cluster::{Cluster, ivpol_kind, text};
use crate::offline::vap::{self, ImageCheck};

/// The registry skip for the reports of `cluster` when an image policy's background scan
/// of a stored resource needs a registry.
pub(super) fn registry_scan(cluster: &Cluster) -> Option<Skip> {
    let exceptions = cluster.cel_policy_objects();
    let policies: Vec<&Value> = cluster
        .objects
        .iter()
        .filter(|o| {
            ivpol_kind(&text(o, "/kind"))
                && o.pointer("/spec/evaluation/background/enabled")
                    .and_then(Value::as_bool)
                    != Some(false)
        })
        .collect();
    if policies.is_empty() {
        return None;
    }
    for object in cluster.objects.iter().filter(|o| {
        let kind = text(o, "/kind");
        !text(o, "/metadata/uid").is_empty()
            && kind != "Event"
            && !kind.ends_with("Report")
            && !cluster.filtered(o)
    }) {
        let mut req = cluster.vap_request(object, None);
        req.user = background_user();
        for p in &policies {
            if text(p, "/kind").starts_with("Namespaced")
                && text(p, "/metadata/namespace") != text(object, "/metadata/namespace")
            {
                continue;
            }
            if let ImageCheck::Registry(_) = vap::image_policy_check(p, exceptions.iter(), &req) {
                return Some(Skip::Registry(format!(
                    "the background scan of ImageValidatingPolicy {} verifies the images of {} {}",
                    text(p, "/metadata/name"),
                    text(object, "/kind"),
                    text(object, "/metadata/name")
                )));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_background_scan_selecting_an_image_is_a_registry_skip() {
        let mut c = Cluster::new("t");
        c.store(json!({"apiVersion": "policies.kyverno.io/v1beta1",
            "kind": "ImageValidatingPolicy", "metadata": {"name": "iv"},
            "spec": {"evaluation": {"admission": {"enabled": false}},
                "validationActions": ["Audit"],
                "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
                    "apiVersions": ["v1"], "operations": ["CREATE"],
                    "resources": ["deployments"]}]},
                "matchImageReferences": [{"glob": "ghcr.io/*"}],
                "validations": [{"expression": "true"}]}}));
        assert_eq!(registry_scan(&c), None, "nothing to scan");
        let deployment = |image: &str| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "default"},
                "spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
        };
        c.store(deployment("docker.io/a:1"));
        assert_eq!(registry_scan(&c), None, "no image selected");
        c.store(deployment("ghcr.io/a:1"));
        assert!(matches!(registry_scan(&c), Some(Skip::Registry(_))));
    }
}
