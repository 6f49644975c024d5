//! Whether a policy has reached the place where it acts, read from its status as Kyverno
//! writes it, and a wait on that which a run pays for once per policy.
//!
//! - `kyverno.io` policies: the webhook controller sets a `Ready` condition, `False` with
//!   "Not Ready" while the policy is not in the webhook yet (`status.SetReady` in
//!   pkg/controllers/webhook/controller.go, v1.19.0); older versions `status.ready`.
//! - `policies.kyverno.io` policies: `status.conditionStatus` holds `ready` and conditions
//!   (`WebhookConfigured`, `RBACPermissionsGranted`, …), ready when every condition is
//!   `True` (pkg/controllers/policystatus/vpol.go, `reconcileBeta1Conditions`).
//!
//! No status at all means Kyverno's controllers have not seen the policy: the environment's
//! trouble (is Kyverno running?), not the learner's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::{Live, LiveError, POLL_INTERVAL};
use crate::target::ObjRef;

/// A policy's readiness as its status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Not there at all (deleted while waiting).
    Missing,
    /// No status: no Kyverno controller has written one.
    NotSeen,
    /// Marked not ready; Kyverno's own words (condition type, reason, message).
    NotReady(String),
    /// A status without a verdict yet.
    Pending,
}

/// Reads the readiness from an object's status.
pub fn readiness(obj: &Value) -> Readiness {
    if super::is_ready(obj) {
        return Readiness::Ready;
    }
    if !matches!(obj.get("status"), Some(Value::Object(m)) if !m.is_empty()) {
        return Readiness::NotSeen;
    }
    let mut conds: Vec<&Value> = Vec::new();
    for p in ["/conditions", "/conditionStatus/conditions"] {
        if let Some(list) = obj
            .get("status")
            .and_then(|s| s.pointer(p))
            .and_then(Value::as_array)
        {
            conds.extend(list);
        }
    }
    let words: Vec<String> = conds
        .iter()
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("False"))
        .map(|c| {
            let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").trim();
            let mut w = match s("type") {
                "" => "a condition is False".to_string(),
                t => format!("{t} is False"),
            };
            for part in [s("reason"), s("message")] {
                if !part.is_empty() {
                    w.push_str(": ");
                    w.push_str(part);
                }
            }
            w
        })
        .filter(|w| !w.is_empty())
        .collect();
    if !words.is_empty() {
        return Readiness::NotReady(words.join("; "));
    }
    let explicit_false = ["/ready", "/conditionStatus/ready"].iter().any(|p| {
        obj.get("status")
            .and_then(|s| s.pointer(p))
            .and_then(Value::as_bool)
            == Some(false)
    });
    if explicit_false {
        return Readiness::NotReady("status.ready is false".into());
    }
    Readiness::Pending
}

/// What one wait concluded, and on which version of the object.
#[derive(Clone)]
struct Seen {
    version: String,
    readiness: Readiness,
}

/// Per-run memory of waits that ended unready: the same policy, unchanged since (same uid
/// and resourceVersion — a status write changes it too), is not waited for again.
#[derive(Default)]
pub(super) struct Waits {
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Seen>>>>>,
}

fn version(obj: &Value) -> String {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    format!("{}:{}", s("/metadata/uid"), s("/metadata/resourceVersion"))
}

impl Live {
    /// Waits until the object is Ready or `deadline` passes, and says how it ended. A wait
    /// that ended unready is remembered: while the object stays as it was, the answer comes
    /// at once (concurrent checks on one policy wait together, once).
    pub async fn await_ready(
        &self,
        r: &ObjRef,
        deadline: Duration,
    ) -> Result<Readiness, LiveError> {
        let slot = {
            let mut slots = self.waits.slots.lock().expect("waits lock");
            slots.entry(r.to_string()).or_default().clone()
        };
        let mut memory = slot.lock().await;
        let until = tokio::time::Instant::now() + deadline;
        let mut last;
        let mut last_version = String::new();
        loop {
            match self.get(r).await? {
                Some(obj) => {
                    last = readiness(&obj);
                    last_version = version(&obj);
                    if last == Readiness::Ready {
                        *memory = None;
                        return Ok(Readiness::Ready);
                    }
                    if let Some(seen) = memory.as_ref()
                        && seen.version == last_version
                    {
                        return Ok(seen.readiness.clone());
                    }
                }
                None => last = Readiness::Missing,
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                break;
            }
            tokio::time::sleep(POLL_INTERVAL.min(until - now)).await;
        }
        if last != Readiness::Missing {
            *memory = Some(Seen {
                version: last_version,
                readiness: last.clone(),
            });
        }
        Ok(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn readiness_from_each_status_kyverno_writes() {
        assert_eq!(readiness(&json!({"metadata": {}})), Readiness::NotSeen);
        assert_eq!(readiness(&json!({"status": {}})), Readiness::NotSeen);
        assert_eq!(
            readiness(&json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})),
            Readiness::Ready
        );
        assert_eq!(
            readiness(&json!({"status": {"conditions": [
                {"type": "Ready", "status": "False", "reason": "Failed", "message": "Not Ready"}]}})),
            Readiness::NotReady("Ready is False: Failed: Not Ready".into())
        );
        assert_eq!(
            readiness(
                &json!({"status": {"conditionStatus": {"ready": false, "conditions": [
                {"type": "WebhookConfigured", "status": "True", "message": "Webhook configured."},
                {"type": "RBACPermissionsGranted", "status": "False", "reason": "Failed",
                 "message": "policy lacks get on pods"}]}}})
            ),
            Readiness::NotReady(
                "RBACPermissionsGranted is False: Failed: policy lacks get on pods".into()
            )
        );
        assert_eq!(
            readiness(&json!({"status": {"conditionStatus": {"ready": true}}})),
            Readiness::Ready
        );
        assert_eq!(
            readiness(&json!({"status": {"autogen": {}}})),
            Readiness::Pending
        );
        assert_eq!(
            readiness(&json!({"status": {"ready": false}})),
            Readiness::NotReady("status.ready is false".into())
        );
    }
}
