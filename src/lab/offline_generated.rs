//! `generated` checks offline: the background controller's work for a trigger, a `sync`
//! step that changes the source and generates again, and — when nothing appears — the
//! same diagnosis the live check gives (refused policy, failed UpdateRequest, no rule).

use std::sync::Arc;

use serde_json::Value;

use super::check::{self, Detail, Outcome};
use super::engine;
use super::{Generated, Offline};
use crate::content::lab::{Check, ObjSel};
use crate::offline::kyverno::validation;
use crate::target::ObjRef;

impl Offline {
    /// A `generated` check: the background controller's work for a real trigger; when
    /// nothing appears, the live check's diagnosis (refused policy, failed UpdateRequest
    /// with the can-i beside it, or no matching rule).
    pub(super) fn generated(
        &self,
        check: &Check,
        so_far: Generated,
        sync: Option<&crate::content::lab::SyncStep>,
    ) -> Outcome {
        match so_far {
            Generated::Done(o) => o,
            Generated::Sync { at, trig, want } => {
                // On a copy: other checks read the set meanwhile (`evaluate_alone`
                // patches it in place).
                let mut changed = (*self.objects).clone();
                if let Some(step) = sync {
                    check::merge_patch(&mut changed[at], &step.patch);
                }
                self.judge_sync(check, &trig, &want, &Arc::new(changed))
            }
        }
    }

    /// A `generated` check up to its `sync` step: the verdict, or where the step's
    /// source is (generation is to run again with it patched).
    pub(super) fn generated_until_sync(
        &self,
        check: &Check,
        trigger: &crate::content::lab::Probe,
        expect: &ObjSel,
        policy: Option<&str>,
        sync: Option<&crate::content::lab::SyncStep>,
    ) -> Generated {
        let (trig, want, run) = match self.run_trigger(trigger, expect) {
            Ok(r) => r,
            Err(skipped) => return Generated::Done(skipped),
        };
        let found = run
            .generated
            .iter()
            .find(|g| ObjRef::of(g).as_ref() == Some(&want));
        let mut outcome = check::judge_generated(check, &want.to_string(), found);
        if found.is_none() {
            outcome.detail = outcome
                .detail
                .then(self.why_not_generated(&run, &want, policy));
        }
        match (sync, found, outcome.verdict) {
            (Some(step), Some(found), check::Verdict::Pass) => {
                match self.sync_source(check, step, &want, found) {
                    Err(done) => Generated::Done(done),
                    Ok(at) => Generated::Sync { at, trig, want },
                }
            }
            _ => Generated::Done(outcome),
        }
    }

    /// The `sync` step of a `generated` check: the source is changed and generation runs
    /// again — the copy follows only where the rule that made it has `synchronize: true`
    /// (a clone reads its source when it runs: pkg/background/generate/generate.go; with
    /// synchronize the source's changes are watched and re-applied,
    /// pkg/background/generate/controller.go). `sync_source` finds the source,
    /// `judge_sync` runs generation again.
    ///
    /// Where the source of a `sync` step is among the objects (`Ok`), or the verdict
    /// without generation running again: no such source, or a copy made without
    /// `synchronize`, which does not follow its source.
    #[allow(clippy::result_large_err)] // the verdict itself, made once per check
    fn sync_source(
        &self,
        check: &Check,
        step: &crate::content::lab::SyncStep,
        want: &ObjRef,
        found: &Value,
    ) -> Result<usize, Outcome> {
        let what = want.to_string();
        let at = self.objects.iter().position(|o| {
            let s = |p: &str| o.pointer(p).and_then(Value::as_str);
            s("/apiVersion") == Some(&step.source.api_version)
                && s("/kind") == Some(&step.source.kind)
                && s("/metadata/name") == Some(&step.source.name)
                && s("/metadata/namespace") == step.source.namespace.as_deref()
        });
        let Some(at) = at else {
            return Err(Outcome::fail(Detail::SyncSourceAbsent {
                what,
                source: format!(
                    "{} {}/{}",
                    step.source.kind,
                    step.source.namespace.as_deref().unwrap_or(""),
                    step.source.name
                ),
            }));
        };
        if !crate::lab::creation::synchronized(&self.objects, found) {
            return Err(check::judge_synced(check, &what, Some(found)));
        }
        Ok(at)
    }

    /// The `sync` step's verdict: generation runs again on `changed`, the cluster with
    /// the source patched.
    pub(super) fn judge_sync(
        &self,
        check: &Check,
        trig: &Value,
        want: &ObjRef,
        changed: &Arc<Vec<Value>>,
    ) -> Outcome {
        match engine::generate(changed, trig, &self.access) {
            Ok(again) => {
                let copy = again
                    .generated
                    .iter()
                    .find(|g| ObjRef::of(g).as_ref() == Some(want));
                check::judge_synced(check, &want.to_string(), copy)
            }
            Err(reason) => Outcome::skipped(Detail::OfflineCannot { reason }),
        }
    }

    pub(super) fn why_not_generated(
        &self,
        run: &engine::GenerateRun,
        want: &ObjRef,
        policy: Option<&str>,
    ) -> Detail {
        if let Some(name) = policy
            && !self.has_policy(name)
        {
            return self.missing_policy(name);
        }
        let failed = run
            .failed_requests
            .iter()
            .find(|f| policy.is_none_or(|p| f.policy == p));
        let Some(failed) = failed else {
            return if run.matched(policy) {
                Detail::RanDifferent
            } else {
                Detail::NoRuleMatched
            };
        };
        let user = validation::BACKGROUND_SA;
        let refusal = self.access.refusal(
            "create",
            &want.api_version,
            &want.kind,
            want.namespace.as_deref().unwrap_or(""),
            &want.name,
        );
        let can = Some(refusal.is_none());
        let resource = self
            .access
            .mapper()
            .for_kind(&want.api_version, &want.kind)
            .map(|r| {
                if r.group.is_empty() {
                    r.plural.clone()
                } else {
                    format!("{}.{}", r.plural, r.group)
                }
            })
            .unwrap_or_else(|| want.kind.clone());
        Detail::UpdateRequestFailed {
            message: failed.message.clone(),
            user: user.to_string(),
            resource,
            can,
        }
    }
}
