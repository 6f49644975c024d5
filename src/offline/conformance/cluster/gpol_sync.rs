//! GeneratingPolicies with `evaluation.synchronize.enabled`: Kyverno's watch manager
//! keeps a copy of each downstream it made (pkg/background/gpol/dynamic_watcher.go,
//! `metadataCache`), puts it back when a user edits or deletes it, deletes it with its
//! trigger, and with the policy unless `orphanDownstreamOnPolicyDelete` is enabled
//! (pkg/policy/policy_controller.go `deletePolicy`); disabling synchronization forgets
//! the copies (`updatePolicy`).

use serde_json::Value;

use super::{Answer, Cluster, Key, Skip, policy_unsupported, text};
use crate::offline::vap;

/// One synchronized downstream, as made.
#[derive(Debug, Clone)]
pub(super) struct Watched {
    /// `name`, or `namespace/name` for a NamespacedGeneratingPolicy.
    policy: String,
    trigger_uid: String,
    object: Value,
}

fn is_gpol(o: &Value) -> bool {
    matches!(
        text(o, "/kind").as_str(),
        "GeneratingPolicy" | "NamespacedGeneratingPolicy"
    )
}

fn policy_key(p: &Value) -> String {
    let ns = text(p, "/metadata/namespace");
    let name = text(p, "/metadata/name");
    if text(p, "/kind") == "NamespacedGeneratingPolicy" && !ns.is_empty() {
        format!("{ns}/{name}")
    } else {
        name
    }
}

fn enabled(p: &Value, field: &str) -> bool {
    p.pointer(&format!("/spec/evaluation/{field}/enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

impl Cluster {
    /// Every GeneratingPolicy on an admitted trigger; what a synchronized one makes is
    /// watched.
    pub(super) fn generate_cel(&mut self, req: &vap::VapRequest, trigger: &Value) -> Answer {
        let policies: Vec<Value> = self
            .objects
            .iter()
            .filter(|o| is_gpol(o))
            .cloned()
            .collect();
        for p in policies {
            let made = match vap::generate_with_policies(std::slice::from_ref(&p), req) {
                Ok(made) => made,
                Err(e) => match policy_unsupported(&e) {
                    Some(why) => return Answer::Undecidable(Skip::Engine(why)),
                    None => continue,
                },
            };
            for mut g in made {
                if self.place(&mut g).is_err() {
                    continue;
                }
                self.made_in_background = true;
                let key = Key::of(&g);
                self.store(g);
                if enabled(&p, "synchronize")
                    && let Some(stored) = self.find(&key).cloned()
                {
                    self.watched.retain(|w| Key::of(&w.object) != key);
                    self.watched.push(Watched {
                        policy: policy_key(&p),
                        trigger_uid: text(trigger, "/metadata/uid"),
                        object: stored,
                    });
                }
            }
        }
        Answer::Ok
    }

    /// A user's write (`new` null: a deletion) of a watched downstream is undone; a
    /// deleted trigger takes its watched downstreams with it.
    pub(super) fn watched_write(&mut self, new: &Value, old: &Value) {
        let key = Key::of(if new.is_null() { old } else { new });
        if let Some(w) = self.watched.iter().find(|w| Key::of(&w.object) == key) {
            if new.is_null() || new != &w.object {
                let copy = w.object.clone();
                self.store(copy);
            }
            return;
        }
        if new.is_null() {
            let uid = text(old, "/metadata/uid");
            let (gone, kept): (Vec<Watched>, Vec<Watched>) = std::mem::take(&mut self.watched)
                .into_iter()
                .partition(|w| !uid.is_empty() && w.trigger_uid == uid);
            self.watched = kept;
            for w in gone {
                self.remove(&Key::of(&w.object));
            }
        }
    }

    /// A GeneratingPolicy written: disabling synchronization forgets its downstreams.
    pub(super) fn watched_policy_written(&mut self, new: &Value) {
        if is_gpol(new) && !enabled(new, "synchronize") {
            let key = policy_key(new);
            self.watched.retain(|w| w.policy != key);
        }
    }

    /// A GeneratingPolicy deleted: its synchronized downstreams go with it unless it
    /// orphans them.
    pub(super) fn watched_policy_deleted(&mut self, old: &Value) {
        if !is_gpol(old) {
            return;
        }
        let key = policy_key(old);
        let (gone, kept): (Vec<Watched>, Vec<Watched>) = std::mem::take(&mut self.watched)
            .into_iter()
            .partition(|w| w.policy == key);
        self.watched = kept;
        if !enabled(old, "orphanDownstreamOnPolicyDelete") {
            for w in gone {
                self.remove(&Key::of(&w.object));
            }
        }
    }
}
