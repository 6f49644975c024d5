//! Deletion of an object that has finalizers (Kubernetes
//! staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go `Delete`,
//! `updateForGracefulDeletionAndFinalizers`): the admitted DELETE only sets
//! `metadata.deletionTimestamp`; the object stays, updates still go through admission,
//! and the update that leaves no finalizer removes it (`Update` →
//! `deleteWithoutFinalizers`). No controller of the replay removes a finalizer, so a
//! client that waits for the deletion waits for a test's own later write.

use serde_json::{Value, json};

use super::{Answer, Cluster};
use crate::offline::conformance::Skip;
use crate::offline::conformance::controllers::Maker;

/// The `deletionTimestamp` the replay writes: its clock is not the cluster's.
const DELETION_TIME: &str = "1970-01-01T00:00:00Z";

fn finalizers(obj: &Value) -> Vec<&str> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn being_deleted(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

impl Cluster {
    /// An admitted DELETE of `old`: `Some` answer when finalizers keep it (marked as
    /// being deleted); `wait`: the client waits until it is gone.
    pub(super) fn finalizing(&mut self, old: &Value, wait: bool) -> Option<Answer> {
        if finalizers(old).is_empty() {
            return None;
        }
        if !being_deleted(old) {
            let mut marked = old.clone();
            if let Some(m) = marked.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("deletionTimestamp".into(), json!(DELETION_TIME));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
            self.store(marked);
        }
        Some(if wait {
            Answer::Undecidable(Skip::Controller(Maker::Other(
                "the removal of finalizers a deleted object waits on".into(),
            )))
        } else {
            Answer::Ok
        })
    }

    /// An update of an object being deleted keeps its deletion mark (read-only
    /// metadata); adding a finalizer to it is refused (apimachinery
    /// pkg/api/validation/objectmeta.go `ValidateObjectMetaUpdate`), in words the replay
    /// does not have.
    pub(super) fn deletion_kept(&self, new: &mut Value, old: Option<&Value>) -> Result<(), Answer> {
        let Some(old) = old.filter(|o| being_deleted(o)) else {
            return Ok(());
        };
        let was = finalizers(old);
        if finalizers(new).iter().any(|f| !was.contains(f)) {
            return Err(Answer::Undecidable(Skip::Engine(
                "a finalizer added to an object being deleted".into(),
            )));
        }
        if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            for k in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
                if let Some(v) = old.pointer(&format!("/metadata/{k}")) {
                    m.insert(k.into(), v.clone());
                }
            }
        }
        Ok(())
    }

    /// After an update of `obj` is stored: an object being deleted whose last finalizer
    /// went is gone.
    pub(super) fn finalized(&mut self, obj: &Value, answer: Answer) -> Answer {
        if !being_deleted(obj) || !finalizers(obj).is_empty() {
            return answer;
        }
        let removed = self.removed(obj.clone());
        match answer {
            Answer::Ok => removed,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(finalizers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "s", "namespace": "t", "finalizers": finalizers},
            "spec": {"ports": [{"port": 80}]}})
    }

    #[test]
    fn a_finalizer_keeps_a_deleted_object_until_an_update_removes_it() {
        let mut c = Cluster::new("t");
        assert!(matches!(
            c.apply(&service(json!(["x/y"])), false),
            Answer::Ok
        ));
        let key = super::super::Key::of(&service(json!([])));
        assert!(matches!(
            c.delete_waiting(&service(json!([])), true),
            Answer::Undecidable(_)
        ));
        assert!(matches!(
            c.delete_waiting(&service(json!([])), false),
            Answer::Ok
        ));
        let kept = c.find(&key).cloned().unwrap_or_default();
        assert_eq!(kept["metadata"]["deletionTimestamp"], DELETION_TIME);
        // A replace without the mark keeps it; adding a finalizer is not modelled.
        assert!(matches!(
            c.update(&service(json!(["x/y"])), false),
            Answer::Ok
        ));
        assert!(c.find(&key).is_some_and(being_deleted));
        assert!(matches!(
            c.update(&service(json!(["x/y", "a/b"])), false),
            Answer::Undecidable(_)
        ));
        assert!(matches!(c.update(&service(Value::Null), true), Answer::Ok));
        assert!(c.find(&key).is_none());
    }

    #[test]
    fn an_object_being_deleted_is_still_admitted_on_update() {
        let mut c = Cluster::new("t");
        let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "no-nodeport"},
            "spec": {"rules": [{"name": "r", "match": {"any": [{"resources": {"kinds": ["Service"]}}]},
                "validate": {"failureAction": "Enforce", "message": "no",
                    "pattern": {"spec": {"=(type)": "!NodePort"}}}}]}});
        assert!(matches!(c.apply(&policy, false), Answer::Ok));
        assert!(matches!(
            c.apply(&service(json!(["x/y"])), false),
            Answer::Ok
        ));
        assert!(matches!(
            c.delete_waiting(&service(json!([])), false),
            Answer::Ok
        ));
        let mut nodeport = service(json!(["x/y"]));
        nodeport["spec"]["type"] = json!("NodePort");
        assert!(matches!(c.update(&nodeport, false), Answer::Refused(_)));
    }
}
