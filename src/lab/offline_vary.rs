//! Checks that grade a changed cluster (an `observed` denial with the starter's files
//! in place of the learner's, a `generated` check's `sync` step): shared with the other
//! checks, the change is made on a copy of the object set; run alone
//! ([`Offline::evaluate_alone`]), it is made in place and undone, so a big object in the
//! workspace is never held twice.

use std::sync::Arc;

use serde_json::Value;

use super::{Generated, Offline};
use crate::content::lab::{Check, ObservedSource, Spec};
use crate::lab::check::{self, Outcome, Submission};
use crate::target::ObjRef;

/// An `observed` denial's change: the learner's objects of the starter files taken out,
/// the starter's put in.
pub(super) struct StarterChange {
    theirs: Vec<ObjRef>,
    added: Vec<Value>,
}

/// The change an `observed` check with `starter` files makes (None: it makes none).
pub(super) fn starter_change(
    env: Submission<'_>,
    source: &ObservedSource,
) -> Option<StarterChange> {
    let ObservedSource::Denial { starter, .. } = source else {
        return None;
    };
    if starter.is_empty() {
        return None;
    }
    let read = |p: std::path::PathBuf| {
        crate::input::read_text(&p)
            .ok()
            .and_then(|t| crate::yaml::parse_json_stream(&t).ok())
            .unwrap_or_default()
    };
    // File by file, as applying them in turn would: a later file's objects replace what
    // an earlier starter file brought.
    let mut theirs: Vec<ObjRef> = Vec::new();
    let mut added: Vec<Value> = Vec::new();
    for path in starter {
        let mine: Vec<ObjRef> = read(env.workspace.join(path))
            .iter()
            .filter_map(ObjRef::of)
            .collect();
        added.retain(|o| ObjRef::of(o).is_none_or(|r| !mine.contains(&r)));
        added.extend(read(env.lab.source("starter", path)));
        theirs.extend(mine);
    }
    Some(StarterChange { theirs, added })
}

impl StarterChange {
    fn kept(&self, o: &Value) -> bool {
        ObjRef::of(o).is_none_or(|r| !self.theirs.contains(&r))
    }

    /// The changed set as a new one (the objects kept are copied).
    pub(super) fn copied(self, base: &[Value]) -> Vec<Value> {
        let mut out: Vec<Value> = base.iter().filter(|o| self.kept(o)).cloned().collect();
        out.extend(self.added);
        out
    }

    /// The changed set made of `base` itself, and how to undo it.
    fn in_place(self, base: Vec<Value>) -> (Vec<Value>, Undo) {
        let mut out = Vec::with_capacity(base.len() + self.added.len());
        let mut removed = Vec::new();
        for (i, o) in base.into_iter().enumerate() {
            if self.kept(&o) {
                out.push(o);
            } else {
                removed.push((i, o));
            }
        }
        let added = self.added.len();
        out.extend(self.added);
        (out, Undo { removed, added })
    }
}

/// What [`StarterChange::in_place`] took out (at its index) and how many it added.
struct Undo {
    removed: Vec<(usize, Value)>,
    added: usize,
}

impl Undo {
    fn undo(self, mut set: Vec<Value>) -> Vec<Value> {
        set.truncate(set.len() - self.added);
        for (i, o) in self.removed {
            set.insert(i, o);
        }
        set
    }
}

/// The set an `Arc` holds, taken without a copy when nothing else holds it.
fn owned(set: Arc<Vec<Value>>) -> Vec<Value> {
    Arc::try_unwrap(set).unwrap_or_else(|shared| (*shared).clone())
}

impl Offline {
    /// Whether grading `check` changes the cluster it reads (see the module comment):
    /// such checks are best graded one at a time, after the others.
    pub fn varies(check: &Check) -> bool {
        match &check.spec {
            Spec::Observed {
                source: ObservedSource::Denial { starter, .. },
                ..
            } => !starter.is_empty(),
            Spec::Generated {
                sync: Some(_),
                left_alone: false,
                ..
            } => true,
            _ => false,
        }
    }

    /// [`Offline::evaluate`] with the set to itself: the change a varying check makes is
    /// made in place and undone after.
    pub fn evaluate_alone(&mut self, env: Submission<'_>, c: &Check) -> Outcome {
        if !Offline::varies(c) || check::local(env, c).is_some() || self.over_budget.is_some() {
            return self.evaluate(env, c);
        }
        let outcome = match &c.spec {
            Spec::Observed { source, .. } => match super::super::observe::record(env, c) {
                Err(o) => return o,
                Ok(record) => {
                    let facts = self.observe_in_place(env, source);
                    super::super::observe::judge(c, &record, &facts)
                }
            },
            Spec::Generated {
                trigger,
                expect,
                policy,
                sync: Some(step),
                ..
            } => match self.generated_until_sync(c, trigger, expect, policy.as_deref(), Some(step))
            {
                Generated::Done(o) => o,
                Generated::Sync { at, trig, want } => {
                    let mut set = owned(std::mem::take(&mut self.objects));
                    let before = set[at].clone();
                    check::merge_patch(&mut set[at], &step.patch);
                    let changed = Arc::new(set);
                    let o = self.judge_sync(c, &trig, &want, &changed);
                    let mut set = owned(changed);
                    set[at] = before;
                    self.objects = Arc::new(set);
                    o
                }
            },
            _ => return self.evaluate(env, c),
        };
        self.with_problems(c, outcome)
    }

    /// [`Offline::observe_in`] with the starter's change made in place.
    fn observe_in_place(
        &mut self,
        env: Submission<'_>,
        source: &ObservedSource,
    ) -> super::super::observe::Facts {
        let Some(change) = starter_change(env, source) else {
            return self.observe_in(env, source);
        };
        // The cluster at setup is the set itself or one built from it (`AtSetup`).
        let own = self.at_setup.is_none();
        let base = if own {
            std::mem::take(&mut self.objects)
        } else {
            self.at_setup()
        };
        if !own && let Some(a) = &mut self.at_setup {
            a.built.take();
        }
        let (changed, undo) = change.in_place(owned(base));
        let changed = Arc::new(changed);
        let facts = self.facts_on(&changed, source);
        let base = Arc::new(undo.undo(owned(changed)));
        if own {
            self.objects = base;
        } else if let Some(a) = &mut self.at_setup {
            let _ = a.built.set(base);
        }
        facts
    }
}
