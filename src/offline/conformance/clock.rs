//! The replay's clock, for the controllers that act on a schedule (the cleanup
//! controller's deleting and cleanup policies). Writes and first looks take no time;
//! `sleep` advances the clock by its duration, and an `assert`/`error` that does not hold
//! at once by as long as it retries (its timeout) at most. The wall clock is unknown, so
//! when a policy's first tick after a write falls is unknown too: an object a policy
//! selects is certainly deleted once the schedule's longest gap ([`schedule::max_gap`])
//! has passed since it became selected, possibly deleted any time before. An observation
//! or write whose outcome depends on a tick that may or may not have come is
//! `Skip::Cleanup`, never a verdict. The TTL controller deletes a labelled object at a
//! time its label fixes (after the object's creation, on this clock), within
//! [`TTL_REACTION`] of it.

use super::chainsaw::{Bindings, Op, Resources};
use super::cluster::{Key, text};
use super::controllers::{deleting, schedule, ttl};
use super::{Run, Skip, Stop};

/// Scheduled deletions the controllers owe, and the time.
#[derive(Debug, Default)]
pub struct Clock {
    /// Seconds since the test started.
    now: f64,
    /// Each object a policy selects, since when.
    pending: Vec<Pending>,
    /// What of the scheduled policies in the cluster the model cannot compute; an
    /// observation of anything but those policies is then this skip.
    unknown: Option<Skip>,
    /// Each object seen, by uid: when it was made and when its TTL label took its value.
    born: std::collections::HashMap<String, Born>,
}

#[derive(Debug, Clone)]
struct Born {
    at: f64,
    label: Option<String>,
    labelled: f64,
}

/// How long the TTL controller takes at most from an object's time to its deletion: the
/// informer's event, its queue (controller.go `reconcile`: a time passed deletes at once,
/// one to come is queued `AddAfter` the rest) and the delete request.
pub const TTL_REACTION: f64 = 1.0;

/// The name a TTL deletion is told by.
const TTL_CONTROLLER: &str = "the TTL controller";

#[derive(Debug, Clone)]
struct Pending {
    policy: String,
    target: Key,
    since: f64,
    /// The schedule's longest gap between ticks (`None`: not computed, never certain).
    gap: Option<f64>,
    /// Whether the deletion may come at `since` itself, racing an observation made then
    /// (a TTL whose time has passed when the object is written); a tick cannot.
    eager: bool,
}

impl Pending {
    /// When the deletion has certainly happened.
    fn due(&self) -> f64 {
        self.since + self.gap.unwrap_or(f64::INFINITY)
    }

    /// Whether the deletion may have happened by `now`.
    fn possible(&self, now: f64) -> bool {
        self.since < now || (self.eager && self.since <= now)
    }
}

/// The most rounds of deletions one moment can take (each may select anew).
const MAX_ROUNDS: usize = 16;

impl Run {
    /// One operation, on the clock: the deletions due by now first, then the operation.
    pub(super) fn timed(&mut self, op: &Op, bindings: &Bindings) -> Result<(), Stop> {
        self.run_due();
        match op {
            Op::Sleep(Some(s)) => {
                self.clock.now += s;
                Ok(())
            }
            Op::Sleep(None) if self.clock.pending.is_empty() => Ok(()),
            Op::Sleep(None) => Err(Stop::Skip(Skip::Cleanup(
                "a sleep whose duration is unreadable, with deletions scheduled".into(),
            ))),
            Op::Assert {
                present,
                resources,
                timeout,
            } => {
                for doc in self.resources(resources, bindings)? {
                    self.observe(&doc, *present, *timeout, bindings)?;
                }
                Ok(())
            }
            _ => {
                self.write_on_time(op, bindings)?;
                let out = self.op(op, bindings);
                self.track();
                out
            }
        }
    }

    /// A write touching an object a tick may already have deleted, or a script while one
    /// may have, depends on the wall clock.
    fn write_on_time(&self, op: &Op, bindings: &Bindings) -> Result<(), Stop> {
        let now = self.clock.now;
        let mut uncertain = self.clock.pending.iter().filter(|p| p.possible(now));
        let resources: Option<&Resources> = match op {
            Op::Apply { resources, .. }
            | Op::Update { resources, .. }
            | Op::Patch { resources, .. }
            | Op::Delete { resources, .. } => Some(resources),
            _ => None,
        };
        let touched = match resources {
            Some(r) => {
                let keys: Vec<Key> = (self.resources(r, bindings)?.into_iter())
                    .filter_map(|mut o| self.cluster.place(&mut o).ok().map(|()| Key::of(&o)))
                    .collect();
                uncertain.find(|p| keys.contains(&p.target))
            }
            None => uncertain.next(),
        };
        match touched {
            Some(p) => Err(Stop::Skip(timing(p))),
            None => Ok(()),
        }
    }

    /// `assert` (`present`) or `error` of one expected object, retried for `timeout`
    /// seconds while the scheduled deletions go on. Deletions only take objects away, so
    /// an `assert` that fails now fails throughout, and an `error` that holds now holds.
    fn observe(
        &mut self,
        doc: &serde_json::Value,
        present: bool,
        timeout: f64,
        bindings: &Bindings,
    ) -> Result<(), Stop> {
        let kind = text(doc, "/kind");
        if !deleting::is_scheduled_kind(&kind)
            && let Some(s) = &self.clock.unknown
        {
            return Err(Stop::Skip(s.clone()));
        }
        let now = self.clock.now;
        let first = self.assert(doc, present, bindings);
        if present {
            // Held now; had a possible tick come already, would it still?
            if first.is_ok() {
                let possible: Vec<Pending> = (self.clock.pending.iter())
                    .filter(|p| p.possible(now))
                    .cloned()
                    .collect();
                if let Some(p) = possible.first() {
                    let keys: Vec<Key> = possible.iter().map(|p| p.target.clone()).collect();
                    if self
                        .without(&keys, |r| r.assert(doc, present, bindings))
                        .is_err()
                    {
                        return Err(Stop::Skip(timing(p)));
                    }
                }
            }
            return first;
        }
        match first {
            Ok(()) | Err(Stop::Skip(_)) => return first,
            Err(Stop::Disagree(_)) => {}
        }
        // Still there: the deletions certain within the window, earliest first.
        let mut due: Vec<Pending> = (self.clock.pending.iter())
            .filter(|p| p.due() <= now + timeout)
            .cloned()
            .collect();
        due.sort_by(|a, b| a.due().total_cmp(&b.due()));
        let mut gone = Vec::new();
        let mut since = now;
        for p in &due {
            gone.push(p.target.clone());
            since = since.max(p.since);
            if self
                .without(&gone, |r| r.assert(doc, present, bindings))
                .is_ok()
            {
                // It held once these were gone, which may have been as early as just
                // after they were selected: the clock takes the earliest such time, so
                // no later deletion is taken as certain too soon.
                for k in &gone {
                    self.cluster.remove(k);
                }
                self.clock.now = since;
                self.track();
                return Ok(());
            }
        }
        let possible: Vec<Pending> = (self.clock.pending.iter())
            .filter(|p| p.since < now + timeout)
            .cloned()
            .collect();
        let keys: Vec<Key> = possible.iter().map(|p| p.target.clone()).collect();
        if let Some(p) = possible.first()
            && self
                .without(&keys, |r| r.assert(doc, present, bindings))
                .is_ok()
        {
            return Err(Stop::Skip(timing(p)));
        }
        first
    }

    /// `f` on the cluster as it would be without the objects of `keys`.
    fn without<T>(&mut self, keys: &[Key], f: impl FnOnce(&Self) -> T) -> T {
        let saved = self.cluster.objects.clone();
        for k in keys {
            self.cluster.remove(k);
        }
        let out = f(self);
        self.cluster.objects = saved;
        out
    }

    /// The deletions certain by now, done (each may change what is selected).
    fn run_due(&mut self) {
        let now = self.clock.now;
        for _ in 0..MAX_ROUNDS {
            let due: Vec<Key> = (self.clock.pending.iter())
                .filter(|p| p.due() <= now)
                .map(|p| p.target.clone())
                .collect();
            if due.is_empty() {
                return;
            }
            for k in &due {
                self.cluster.remove(k);
            }
            self.track();
        }
    }

    /// What each scheduled policy selects now; a newly selected object starts waiting
    /// for its tick now.
    fn track(&mut self) {
        let now = self.clock.now;
        let old = std::mem::take(&mut self.clock.pending);
        match deleting::ticks(&self.cluster) {
            Ok(ticks) => {
                self.clock.unknown = None;
                for t in ticks {
                    let gap = schedule::max_gap(&t.schedule).map(|s| s as f64);
                    for target in t.targets {
                        let since = old
                            .iter()
                            .find(|p| p.policy == t.policy && p.target == target)
                            .map_or(now, |p| p.since);
                        self.clock.pending.push(Pending {
                            policy: t.policy.clone(),
                            target,
                            since,
                            gap,
                            eager: false,
                        });
                    }
                }
            }
            Err(s) => self.clock.unknown = Some(s),
        }
        self.track_ttl();
    }

    /// Each object's birth and label time on this clock, and the TTL deletions they fix:
    /// the controller deletes at creation plus the label's duration, or when it sees the
    /// label if that time has passed already.
    fn track_ttl(&mut self) {
        let now = self.clock.now;
        let mut born = std::mem::take(&mut self.clock.born);
        born.retain(|uid, _| self.cluster.objects.iter().any(|o| uid_of(o) == Some(uid)));
        let mut labelled = Vec::new();
        for o in &self.cluster.objects {
            let Some(uid) = uid_of(o) else { continue };
            let label = (o.pointer("/metadata/labels/cleanup.kyverno.io~1ttl"))
                .and_then(|v| v.as_str())
                .map(str::to_string);
            let b = born.entry(uid.to_string()).or_insert(Born {
                at: now,
                label: label.clone(),
                labelled: now,
            });
            if b.label != label {
                b.label = label.clone();
                b.labelled = now;
            }
            if label.is_some() {
                labelled.push((o, b.at, b.labelled));
            }
        }
        if !labelled.is_empty() {
            let authorizer = self.cluster.cleanup_authorizer();
            let mapper = self.cluster.mapper();
            for (o, at, seen) in labelled {
                // A date the replay cannot place was refused at the write (a skip).
                if let Some(Ok(after)) = ttl::deletion(o, &authorizer, &mapper) {
                    self.clock.pending.push(Pending {
                        policy: TTL_CONTROLLER.into(),
                        target: Key::of(o),
                        since: (at + after).max(seen),
                        gap: Some(TTL_REACTION),
                        eager: true,
                    });
                }
            }
        }
        self.clock.born = born;
    }
}

fn uid_of(o: &serde_json::Value) -> Option<&str> {
    o.pointer("/metadata/uid").and_then(|v| v.as_str())
}

fn timing(p: &Pending) -> Skip {
    if p.policy == TTL_CONTROLLER {
        return Skip::Cleanup(format!(
            "whether {TTL_CONTROLLER} had deleted {} {} by then depends on the wall clock",
            p.target.kind, p.target.name
        ));
    }
    Skip::Cleanup(format!(
        "whether a tick of {} (deleting {} {}) came by then depends on the wall clock",
        p.policy, p.target.kind, p.target.name
    ))
}

#[cfg(test)]
#[path = "clock_tests.rs"]
mod tests;
