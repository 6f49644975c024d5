//! The API server's side of Kyverno's webhooks: the `matchConditions` Kyverno puts on
//! them (pkg/controllers/webhook/validating.go for the CEL policies, controller.go
//! `newWebhookPerPolicy` for a ClusterPolicy/Policy with
//! `spec.webhookConfiguration.matchConditions`), evaluated before Kyverno sees the
//! request.

use serde_json::Value;

use super::{Answer, text};
use crate::offline::kyverno;
use crate::offline::vap::{self, WebhookCall};

/// The Kyverno CEL policies whose conditions go onto their webhooks, by the webhook that
/// runs them.
pub(super) const MUTATING_KINDS: &[&str] = &["MutatingPolicy", "NamespacedMutatingPolicy"];
pub(super) const VALIDATING_KINDS: &[&str] = &["ValidatingPolicy", "NamespacedValidatingPolicy"];

fn refusal(req: &vap::VapRequest, why: &str) -> Answer {
    Answer::Refused(vap::forbidden(&req.object, why))
}

/// `objects` less the `kinds` policies whose webhook the API server skips for `req`
/// (a condition false, or failing under `failurePolicy: Ignore`); `Err` is the API
/// server's refusal when one fails under `Fail`.
pub(super) fn gated(
    objects: &[Value],
    kinds: &[&str],
    req: &vap::VapRequest,
) -> Result<Vec<Value>, Answer> {
    let mut kept = Vec::with_capacity(objects.len());
    for o in objects {
        if kinds.contains(&text(o, "/kind").as_str()) {
            match vap::webhook_call(o, req) {
                WebhookCall::Called => {}
                WebhookCall::Skipped => continue,
                WebhookCall::Refused(why) => return Err(refusal(req, &why)),
            }
        }
        kept.push(o.clone());
    }
    Ok(kept)
}

/// The ClusterPolicies/Policies whose webhook is called for `req`: a policy with its own
/// `webhookConfiguration.matchConditions` has a webhook of its own (and is kept out of
/// the shared ones, pkg/controllers/policycache/controller.go), whose rules are the
/// kinds its rules match.
pub(super) fn policies_called(
    policies: Vec<kyverno::Policy>,
    req: &vap::VapRequest,
) -> Result<Vec<kyverno::Policy>, Answer> {
    let kind = text(&req.object, "/kind");
    let mut kept = Vec::with_capacity(policies.len());
    for p in policies {
        let conditions = p
            .raw
            .pointer("/spec/webhookConfiguration/matchConditions")
            .and_then(Value::as_array)
            .filter(|c| !c.is_empty());
        if let Some(conditions) = conditions
            && selects_kind(&p, &kind)
        {
            let failure_policy = p.raw.pointer("/spec/failurePolicy").and_then(Value::as_str);
            match vap::webhook_conditions(conditions, failure_policy, req) {
                WebhookCall::Called => {}
                WebhookCall::Skipped => continue,
                WebhookCall::Refused(why) => return Err(refusal(req, &why)),
            }
        }
        kept.push(p);
    }
    Ok(kept)
}

/// Whether a rule of `p` matches `kind` objects (a wildcard counts): the webhook's rules.
fn selects_kind(p: &kyverno::Policy, kind: &str) -> bool {
    p.rules.iter().filter_map(|r| r.match_.as_ref()).any(|m| {
        let filters = m.any.iter().chain(m.all.iter()).flatten();
        filters
            .chain(std::iter::once(&m.legacy))
            .filter_map(|f| f.resources.as_ref())
            .flat_map(|r| r.kinds.items.iter())
            .filter_map(|k| k.parts.as_ref())
            .any(|parts| parts.kind == kind || parts.kind.contains('*'))
    })
}
