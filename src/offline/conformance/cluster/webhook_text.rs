//! What Kyverno's resource webhook says of a request: the warnings it returns on an
//! admitted one and the message it blocks one with, in its words.

use serde_json::{Value, json};

use super::text;
use crate::offline::kyverno::{self, RuleKind, RuleStatus, validation};

/// The warnings Kyverno's resource webhook returns on an admitted request
/// (pkg/webhooks/utils/warning.go `GetWarningMessages`): for each rule of a policy with
/// `emitWarning` that did not skip, `policy <policy>.<rule>: <message>`. Only a validate
/// rule's message is known in Kyverno's words.
pub(super) fn emitted_warnings(
    policies: &[kyverno::Policy],
    resp: &kyverno::Response,
    w: &mut validation::Warned,
) {
    let emits = |name: &str| {
        policies.iter().any(|p| {
            p.name == name
                && p.raw.pointer("/spec/emitWarning").and_then(Value::as_bool) == Some(true)
        })
    };
    for r in &resp.results {
        if r.status == RuleStatus::Skip || !emits(&r.policy) {
            continue;
        }
        match (&r.upstream, r.kind) {
            (Some(m), RuleKind::Validate) => w.push(format!("policy {}.{}: {m}", r.policy, r.rule)),
            _ => w.unknown(format!(
                "the warning emitWarning makes for rule {}/{} (its message is kca's)",
                r.policy, r.rule
            )),
        }
    }
}

/// The message of Kyverno's validating webhook when Enforce rules fail
/// (pkg/webhooks/utils/block.go `GetBlockedMessages`), `None` when nothing blocks; with
/// the rules whose message is not in Kyverno's words, if any.
pub(super) fn blocked(
    policies: &[kyverno::Policy],
    resp: &kyverno::Response,
    obj: &Value,
) -> Option<(String, Option<String>)> {
    let failing: Vec<&kyverno::RuleResult> = resp
        .results
        .iter()
        .filter(|r| {
            r.kind == RuleKind::Validate
                && matches!(r.status, RuleStatus::Fail | RuleStatus::Error)
                && kyverno::enforced(policies, resp, r)
        })
        .collect();
    if failing.is_empty() {
        return None;
    }
    // `failures`: policy → rule → message, written by yaml.v3 (folded at 80 columns).
    let mut failures = serde_json::Map::new();
    let unworded: Vec<String> = failing
        .iter()
        .filter(|r| r.upstream.is_none())
        .map(|r| format!("{}/{}", r.policy, r.rule))
        .collect();
    let unworded = (!unworded.is_empty()).then(|| unworded.join(", "));
    for r in &failing {
        let message = r.upstream.as_ref().unwrap_or(&r.message);
        let rules = failures
            .entry(r.policy.clone())
            .or_insert_with(|| json!({}));
        rules[r.rule.as_str()] = json!(message);
    }
    let failures = Value::Object(failures);
    let body = crate::yaml::goyaml::encode(&failures).unwrap_or_else(|| {
        // A message yaml.v3 writes as a literal block: said unfolded.
        let mut body = String::new();
        for (p, rules) in failures.as_object().into_iter().flatten() {
            body.push_str(&format!("{p}:\n"));
            for (r, m) in rules.as_object().into_iter().flatten() {
                body.push_str(&format!("  {r}: {}\n", m.as_str().unwrap_or_default()));
            }
        }
        body
    });
    let message = format!(
        "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource {}/{}/{} was blocked due to the following policies \n\n{body}",
        text(obj, "/kind"),
        text(obj, "/metadata/namespace"),
        text(obj, "/metadata/name"),
    );
    Some((message, unworded))
}
