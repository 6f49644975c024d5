//! The offline grading target: evaluates a lab's checks in-process against the cluster a
//! lab runs on: the pinned install's RBAC (`kind-config/baseline-rbac.yaml`), the lab's
//! fixtures and the objects a learner would apply (workspace manifests). A policy that
//! Kyverno's policy webhook would refuse is not applied (`offline::kyverno::validation`).
//! `can-i` goes to the offline RBAC authorizer, `admission` to the offline Kyverno engine
//! and then the offline ValidatingAdmissionPolicy evaluator, `generated` to the Kyverno
//! engine with the background controller's permissions; what cannot be known without a
//! cluster (status written by controllers, CEL `authorizer` checks) is `skipped` with the
//! reason. Pure and synchronous; never talks to a cluster.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::check::{self, Detail, Outcome, Submission};
use super::equiv::semantic_match as partial_match;
use super::tree::without_status;
use super::workspace;
use crate::content::lab::{Check, Lab, ObjSel, Spec};
use crate::error::Result;
use crate::offline::kyverno::background::Access;
use crate::offline::kyverno::validation::{self, Mode};
use crate::target::ObjRef;

/// The RBAC of a fresh course cluster (Kyverno's chart roles, Kubernetes' built-in
/// roles), as recorded with its provenance in `kind-config/baseline-rbac.yaml`.
pub fn baseline_rbac() -> &'static [Value] {
    static BASELINE: OnceLock<Vec<Value>> = OnceLock::new();
    BASELINE.get_or_init(|| {
        // Outside the learner's YAML budget, so the result never depends on their files.
        crate::yaml::parse_own_content(include_str!("../../kind-config/baseline-rbac.yaml"))
            .expect("kind-config/baseline-rbac.yaml is valid YAML (a unit test reads it)")
    })
}

/// A policy Kyverno's policy webhook refuses, so it never reaches the cluster.
#[derive(Debug, Clone)]
pub struct Rejected {
    pub kind: String,
    pub name: String,
    /// The API server's text for the refusal.
    pub denial: String,
}

/// The cluster right after the task setups, as how it differs from the cluster now: the
/// first `kept` objects now are the setup's, in order; `removed` are the setup's objects
/// a file saved since replaced (or a policy refused again), at their index among the
/// setup's. Built whole only when an `observed` check asks, once.
#[derive(Debug, Clone)]
struct AtSetup {
    kept: usize,
    removed: Vec<(usize, Value)>,
    built: OnceLock<Arc<Vec<Value>>>,
}

/// A `generated` check so far: its verdict, or a `sync` step to run with the source at
/// `at` among the objects patched.
enum Generated {
    Done(Outcome),
    Sync {
        at: usize,
        trig: Value,
        want: ObjRef,
    },
}

/// The in-process object set of one workspace.
#[derive(Debug, Clone)]
pub struct Offline {
    /// What is in the cluster: fixtures and the learner's objects, minus refused policies;
    /// parsed once per run and shared by every check (never copied per check).
    pub objects: Arc<Vec<Value>>,
    /// Workspace files that could not be read and may hold objects of the set (a file the
    /// lab names as an `observed` check's record is the learner's notes, not applied:
    /// that check reads it itself); a failing check on the set is blocked by them.
    pub problems: Vec<workspace::FileProblem>,
    /// Policies the policy webhook refused.
    pub rejected: Vec<Rejected>,
    /// RBAC over the baseline and the objects, as the background controller meets it.
    access: Arc<Access>,
    /// The objects the learner's workspace brings (None: every object is the learner's).
    learner: Option<Vec<ObjRef>>,
    /// The cluster right after the task setups, before anything was applied again (the
    /// incident an `observed` check compares the learner's record with); None: `objects`.
    at_setup: Option<AtSetup>,
    /// Why the object set is incomplete: the workspace file that went over what one run
    /// grades (`workspace::Manifests::over_budget`); every check on it is an `error`.
    over_budget: Option<super::detail::Detail>,
}

/// The workspace files the lab names as the learner's record of an `observed` check:
/// read by that check, never applied as objects.
fn record_files(lab: &Lab) -> Vec<std::path::PathBuf> {
    lab.tasks
        .iter()
        .flat_map(|t| &t.checks)
        .filter_map(|c| match &c.spec {
            Spec::Observed { path, .. } => Some(std::path::PathBuf::from(path)),
            _ => None,
        })
        .collect()
}

impl Offline {
    pub fn load(lab: &Lab, ws: &std::path::Path) -> Result<Offline> {
        Offline::load_staged(lab, ws, &[])
    }

    /// The object set after the task setups the learner has reached (`lab::setup`).
    pub fn load_staged(
        lab: &Lab,
        ws: &std::path::Path,
        staged: &[super::setup::Staged<'_>],
    ) -> Result<Offline> {
        let mut objects = workspace::fixtures(lab)?;
        let m = workspace::manifests(lab, ws);
        let learner = m.objects.iter().filter_map(ObjRef::of).collect();
        objects.extend(m.objects);
        let records = record_files(lab);
        let problems = m
            .problems
            .into_iter()
            .filter(|p| !records.contains(&p.path))
            .collect();
        let mut off = Offline::new(objects, problems);
        off.learner = Some(learner);
        off.over_budget = m.over_budget;
        if !staged.is_empty() {
            off.stage(lab, ws, staged);
        }
        Ok(off)
    }

    /// The cluster after the task setups and the files saved since (`setup`), with the
    /// cluster right after the setups (the incident) kept as how it differs from that:
    /// the objects are moved, never copied as a whole set.
    fn stage(&mut self, lab: &Lab, ws: &std::path::Path, staged: &[super::setup::Staged<'_>]) {
        use super::setup;
        let mut at = Arc::unwrap_or_clone(std::mem::take(&mut self.objects));
        setup::apply_setups(lab, &mut at, staged);
        let again = setup::reapplied(lab, ws, staged);
        let again_refs: Vec<ObjRef> = again.iter().filter_map(ObjRef::of).collect();
        let replaced = |o: &Value| ObjRef::of(o).is_some_and(|r| again_refs.contains(&r));
        // The policies were admitted before the setup; the setup (and what the learner
        // re-applied since) changes the cluster under them, as it would live: a policy
        // that exists is not taken away because its permissions were.
        self.access = access_over(at.iter().filter(|o| !replaced(o)).chain(&again));
        // A re-applied file brings back a policy the webhook refused: it is refused
        // again unless the cluster now allows it.
        let refused_again = |o: &Value| {
            let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("");
            self.rejected
                .iter()
                .any(|r| r.kind == s("/kind") && r.name == s("/metadata/name"))
                && refusal(&self.access, o).is_some()
        };
        let mut now = Vec::with_capacity(at.len() + again.len());
        let mut removed = Vec::new();
        for (i, o) in at.into_iter().enumerate() {
            if replaced(&o) || refused_again(&o) {
                removed.push((i, o));
            } else {
                now.push(o);
            }
        }
        let kept = now.len();
        now.extend(again.into_iter().filter(|o| !refused_again(o)));
        self.at_setup = (!removed.is_empty() || kept != now.len()).then(|| AtSetup {
            kept,
            removed,
            built: OnceLock::new(),
        });
        self.objects = Arc::new(now);
    }

    /// The cluster right after the task setups (see [`AtSetup`]); the set itself when
    /// nothing changed since.
    fn at_setup(&self) -> Arc<Vec<Value>> {
        let Some(a) = &self.at_setup else {
            return self.objects.clone();
        };
        a.built
            .get_or_init(|| {
                let mut kept = self.objects[..a.kept].iter();
                let mut removed = a.removed.iter().peekable();
                let mut out = Vec::with_capacity(a.kept + a.removed.len());
                for i in 0..a.kept + a.removed.len() {
                    let next = match removed.next_if(|(j, _)| *j == i) {
                        Some((_, o)) => Some(o),
                        None => kept.next(),
                    };
                    out.extend(next.cloned());
                }
                Arc::new(out)
            })
            .clone()
    }

    /// The cluster after applying `objects` over the baseline: everything else first, so
    /// a policy is validated against the RBAC the same apply brings.
    pub fn new(objects: Vec<Value>, problems: Vec<workspace::FileProblem>) -> Offline {
        let access = access_over(&objects);
        let mut rejected = Vec::new();
        let admitted = objects
            .into_iter()
            .filter(|o| match refusal(&access, o) {
                None => true,
                Some(denial) => {
                    let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("");
                    rejected.push(Rejected {
                        kind: s("/kind").to_string(),
                        name: s("/metadata/name").to_string(),
                        denial,
                    });
                    false
                }
            })
            .collect();
        Offline {
            objects: Arc::new(admitted),
            problems,
            rejected,
            access,
            learner: None,
            at_setup: None,
            over_budget: None,
        }
    }

    fn rejection(&self, name: &str) -> Option<&Rejected> {
        self.rejected.iter().find(|r| r.name == name)
    }

    pub fn evaluate(&self, env: Submission<'_>, check: &Check) -> Outcome {
        if let Some(o) = check::local(env, check) {
            return o;
        }
        if let Some(why) = &self.over_budget {
            return Outcome::error(why.clone());
        }
        let outcome = match &check.spec {
            Spec::Resource {
                target,
                present,
                matches,
                installed,
            } => {
                if *installed && self.find(target).is_none() {
                    return Outcome::skipped(Detail::InstalledOnly {
                        what: describe(target),
                    });
                }
                self.resource(target, *present, matches.as_ref())
            }
            Spec::CanI { query, .. } => match engine::can_i(self.access.authorizer(), query) {
                Ok(answer) => check::judge_can_i(check, &answer),
                Err(reason) => Outcome::skipped(Detail::OfflineCannot { reason }),
            },
            Spec::Admission {
                probe,
                update,
                user,
                policies,
                ..
            } => {
                if let Some(missing) = policies.iter().find(|p| !self.has_policy(p)) {
                    return self.with_problems(check, Outcome::fail(self.missing_policy(missing)));
                }
                let sent = super::vary::probe(&probe.object, &check.id, *update);
                if let Some(denial) = refusal(&self.access, &sent) {
                    return check::judge_admission(check, &sent, &engine::refused_policy(denial));
                }
                match engine::admit(&self.objects, &sent, *update, user.as_ref()) {
                    Ok(adm) => check::judge_admission(check, &sent, &adm),
                    Err(reason) => Outcome::skipped(Detail::OfflineCannot { reason }),
                }
            }
            Spec::LeastPrivilege {
                user,
                groups,
                required,
                allowed,
            } => self.least_privilege(user, groups, required, allowed),
            Spec::Observed { source, .. } => match super::observe::record(env, check) {
                Err(o) => o,
                Ok(record) => {
                    let facts = self.observe_in(env, source);
                    super::observe::judge(check, &record, &facts)
                }
            },
            Spec::Generated {
                trigger,
                expect,
                policy,
                left_alone: true,
                ..
            } => self.left_alone(trigger, expect, policy.as_deref()),
            Spec::Generated {
                trigger,
                expect,
                policy,
                sync,
                ..
            } => {
                let so_far = self.generated_until_sync(
                    check,
                    trigger,
                    expect,
                    policy.as_deref(),
                    sync.as_deref(),
                );
                self.generated(check, so_far, sync.as_deref())
            }
            Spec::Accepted { .. } => match check::accepted_document(env, check) {
                Err(o) => o,
                Ok(doc) => match super::creation::admit_policy(&self.access, &doc) {
                    Ok(adm) => {
                        check::judge_accepted(check, &check::document_name(check, &doc), &adm)
                    }
                    Err(reason) => Outcome::skipped(Detail::OfflineCannot {
                        reason: reason.to_string(),
                    }),
                },
            },
            Spec::File { .. } | Spec::Command { .. } => Outcome::internal("evaluated locally"),
        };
        self.with_problems(check, outcome)
    }

    /// A generate check's trigger named as offline triggers are, what it should make,
    /// and what the background controller made of it (`skipped` where the engine cannot).
    #[allow(clippy::result_large_err)] // the verdict itself, made once per check
    fn run_trigger(
        &self,
        trigger: &crate::content::lab::Probe,
        expect: &ObjSel,
    ) -> Result<(Value, ObjRef, engine::GenerateRun), Outcome> {
        let mut trig = trigger.object.clone();
        name_offline_trigger(&mut trig);
        let want = expected_generated(expect, &trig);
        match engine::generate(&self.objects, &trig, &self.access) {
            Ok(run) => Ok((trig, want, run)),
            Err(reason) => Err(Outcome::skipped(Detail::OfflineCannot { reason })),
        }
    }

    /// A `generated` check with `leftAlone`: the trigger lies outside the rule's scope, so
    /// no generate rule (of `policy`, when named) may match it and nothing expected appears.
    fn left_alone(
        &self,
        trigger: &crate::content::lab::Probe,
        expect: &ObjSel,
        policy: Option<&str>,
    ) -> Outcome {
        let (trig, want, run) = match self.run_trigger(trigger, expect) {
            Ok(r) => r,
            Err(skipped) => return skipped,
        };
        let what = check::probe(&trig);
        if run
            .generated
            .iter()
            .any(|g| ObjRef::of(g).as_ref() == Some(&want))
        {
            return Outcome::fail(Detail::OutsideGenerated {
                what,
                want: want.to_string(),
            });
        }
        if run.matched(policy) {
            return Outcome::fail(Detail::OutsideRuleMatched {
                what,
                policy: policy.map(str::to_string),
            });
        }
        Outcome::pass(Detail::OutsideNothing { what })
    }

    /// The learner's objects (the workspace's) and the rest of the cluster.
    fn split_learner(&self) -> (Vec<Value>, Vec<Value>) {
        let mut cluster = baseline_rbac().to_vec();
        let mut learner = Vec::new();
        for o in self.objects.iter().filter(|o| read_by_access(o)) {
            let mine = match (&self.learner, ObjRef::of(o)) {
                (None, _) => true,
                (Some(refs), Some(r)) => refs.contains(&r),
                (Some(_), None) => false,
            };
            if mine {
                learner.push(o.clone());
            } else {
                cluster.push(o.clone());
            }
        }
        (cluster, learner)
    }

    fn least_privilege(
        &self,
        user: &str,
        groups: &[String],
        required: &[crate::content::lab::Grant],
        allowed: &[crate::content::lab::Grant],
    ) -> Outcome {
        let (cluster, learner) = self.split_learner();
        let (u, g) = crate::offline::rbac::impersonated(user, groups);
        let reached = super::privilege::reached(&cluster, &learner, &u, &g);
        let authorizer = self.access.authorizer();
        super::privilege::judge(user, required, allowed, &reached, |verb, group, res, ns| {
            let q = crate::target::AccessQuery {
                user: u.clone(),
                groups: g.clone(),
                verb: verb.into(),
                group: group.into(),
                resource: res.into(),
                namespace: ns.into(),
                ..Default::default()
            };
            engine::can_i(authorizer, &q).map(|a| a.allowed)
        })
    }

    /// The facts of an `observed` check's situation, on the cluster right after the task
    /// setups (the incident as it happened), else as it is; with a `starter`, on a copy
    /// holding the starter's files instead of the learner's (`evaluate_alone` makes that
    /// change in place).
    pub fn observe_in(
        &self,
        env: Submission<'_>,
        source: &crate::content::lab::ObservedSource,
    ) -> super::observe::Facts {
        let objects = self.at_setup();
        match vary::starter_change(env, source) {
            None => self.facts_on(&objects, source),
            Some(change) => self.facts_on(&Arc::new(change.copied(&objects)), source),
        }
    }

    /// The facts of an `observed` check's situation on `objects`.
    fn facts_on(
        &self,
        objects: &Arc<Vec<Value>>,
        source: &crate::content::lab::ObservedSource,
    ) -> super::observe::Facts {
        use super::observe::Facts;
        use crate::content::lab::ObservedSource;
        match source {
            ObservedSource::UpdateRequest { trigger, policy } => {
                let mut trig = trigger.object.clone();
                name_offline_trigger(&mut trig);
                let access = access_over(objects.iter());
                let of = check::probe(&trig);
                let what = super::detail::Source::UpdateRequest { of: of.clone() };
                match engine::generate(objects, &trig, &access) {
                    Ok(run) => match run
                        .failed_requests
                        .iter()
                        .find(|f| policy.as_deref().is_none_or(|p| f.policy == p))
                    {
                        Some(f) => Facts::update_request("Failed", &f.message, what),
                        None if run.matched(policy.as_deref()) => {
                            Facts::update_request("Completed", "", what)
                        }
                        None => Facts {
                            source: super::detail::Source::NoUpdateRequest { of },
                            ..Default::default()
                        },
                    },
                    Err(reason) => Facts {
                        source: super::detail::Source::Offline {
                            of: Box::new(what),
                            reason,
                        },
                        ..Default::default()
                    },
                }
            }
            ObservedSource::Denial { probe, .. } => {
                let of = check::probe(&probe.object);
                match engine::admit(objects, &probe.object, false, None) {
                    Ok(crate::target::Admission::Denied(d)) => {
                        let mutated = engine::mutated(objects, &probe.object).ok();
                        Facts::denial(
                            &d.message,
                            mutated.as_ref(),
                            super::detail::Source::Denial { of },
                        )
                    }
                    Ok(_) => Facts {
                        source: super::detail::Source::NoDenial { of },
                        ..Default::default()
                    },
                    Err(reason) => Facts {
                        source: super::detail::Source::Offline {
                            of: Box::new(super::detail::Source::Denial { of }),
                            reason,
                        },
                        ..Default::default()
                    },
                }
            }
        }
    }

    /// A failing verdict on the object set is not judged when a workspace file that may
    /// hold objects of it could not be read: the object the check wanted may be in it.
    /// An `observed` denial made on the starter's version of a file does not read the
    /// learner's (`offline_vary::starter_change`).
    fn with_problems(&self, check: &Check, mut o: Outcome) -> Outcome {
        let replaced: &[String] = match &check.spec {
            Spec::Observed {
                source: crate::content::lab::ObservedSource::Denial { starter, .. },
                ..
            } => starter,
            _ => &[],
        };
        let blocking: Vec<_> = self
            .problems
            .iter()
            .filter(|p| !replaced.iter().any(|r| p.path == std::path::Path::new(r)))
            .collect();
        if o.verdict == check::Verdict::Fail && !blocking.is_empty() {
            o = Outcome::error(Detail::Blocked {
                problems: workspace::problem_lines(blocking),
            });
        }
        o
    }

    /// Why a policy a check needs is not in the cluster.
    fn missing_policy(&self, name: &str) -> Detail {
        let what = format!("policy `{name}`");
        match self.rejection(name) {
            Some(r) => Detail::NotApplied {
                what,
                denial: r.denial.clone(),
            },
            None => Detail::NotInManifests { what },
        }
    }

    fn has_policy(&self, name: &str) -> bool {
        self.objects.iter().any(|o| {
            matches!(
                o.get("kind").and_then(Value::as_str),
                Some(
                    "ClusterPolicy"
                        | "Policy"
                        | "ValidatingAdmissionPolicy"
                        | "ValidatingPolicy"
                        | "MutatingPolicy"
                        | "GeneratingPolicy"
                )
            ) && o.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
        })
    }

    pub fn find(&self, sel: &ObjSel) -> Option<&Value> {
        self.objects.iter().find(|o| {
            let s = |p: &str| o.pointer(p).and_then(Value::as_str);
            s("/apiVersion") == Some(&sel.api_version)
                && s("/kind") == Some(&sel.kind)
                && s("/metadata/name") == Some(&sel.name)
                && sel
                    .namespace
                    .as_deref()
                    .is_none_or(|ns| s("/metadata/namespace").unwrap_or("default") == ns)
        })
    }

    fn resource(&self, sel: &ObjSel, present: bool, matches: Option<&Value>) -> Outcome {
        let what = describe(sel);
        match (self.find(sel), present) {
            (None, true) => match self
                .rejected
                .iter()
                .find(|r| r.kind == sel.kind && r.name == sel.name)
            {
                Some(r) => Outcome::fail(Detail::NotApplied {
                    what,
                    denial: r.denial.clone(),
                }),
                None => Outcome::fail(Detail::NotInManifests { what }),
            },
            (None, false) => Outcome::pass(Detail::Absent { what }),
            (Some(_), false) => Outcome::fail(Detail::ExistsShouldNot { what }),
            (Some(obj), true) => {
                let Some(want) = matches else {
                    return Outcome::pass(Detail::Exists { what });
                };
                let (spec_part, had_status) = without_status(want);
                if let Err(diff) = partial_match(&spec_part, obj) {
                    return Outcome::fail(Detail::ResourceDiffers { what, diff });
                }
                if had_status {
                    return Outcome::skipped(Detail::StatusOffline { what });
                }
                Outcome::pass(Detail::AsExpected { what })
            }
        }
    }
}

/// A namespace's labels as the API server has them: its manifest's, plus
/// `kubernetes.io/metadata.name`, which every namespace gets.
fn namespace_labels(objects: &[Value], ns: &str) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = objects
        .iter()
        .find(|o| {
            o.get("kind").and_then(Value::as_str) == Some("Namespace")
                && o.pointer("/metadata/name").and_then(Value::as_str) == Some(ns)
        })
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    labels.insert("kubernetes.io/metadata.name".into(), ns.into());
    labels
}

/// RBAC and discovery over the baseline and `objects`, handed only the objects they read
/// (a big ConfigMap in the workspace is not copied for them).
fn access_over<'a>(objects: impl IntoIterator<Item = &'a Value>) -> Arc<Access> {
    let mut read = baseline_rbac().to_vec();
    read.extend(objects.into_iter().filter(|o| read_by_access(o)).cloned());
    Arc::new(Access::new(&read))
}

/// Whether the RBAC authorizer (roles, bindings, their lists) or discovery (CRDs) reads
/// `o`; nothing else changes what they answer.
pub(super) fn read_by_access(o: &Value) -> bool {
    let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
    crate::offline::rbac::rbac_kind(o).is_some()
        || kind == "CustomResourceDefinition"
        || kind.ends_with("List")
}

/// The policy webhook's refusal of `object`, when it is a policy Kyverno would refuse.
fn refusal(access: &Access, object: &Value) -> Option<String> {
    let problems = validation::validate_policy(
        object,
        Mode::Cluster {
            authorizer: access.authorizer(),
            mapper: access.mapper(),
        },
    );
    validation::denial_text(&problems)
}

fn describe(sel: &ObjSel) -> String {
    match &sel.namespace {
        Some(ns) => format!("{} {ns}/{}", sel.kind, sel.name),
        None => format!("{} {}", sel.kind, sel.name),
    }
}

/// Offline triggers get a fixed name from their `generateName`, as the API server would
/// give them a generated one.
fn name_offline_trigger(obj: &mut Value) {
    if obj.pointer("/metadata/name").is_some() {
        return;
    }
    let prefix = obj
        .pointer("/metadata/generateName")
        .and_then(Value::as_str)
        .unwrap_or("kca-probe-")
        .to_string();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("generateName");
        meta.insert("name".into(), Value::String(format!("{prefix}offline")));
    }
}

/// The object a trigger should produce: an unset namespace is the trigger's namespace
/// (a Namespace trigger's own name).
pub fn expected_generated(expect: &ObjSel, trigger: &Value) -> ObjRef {
    let trig_ns = if trigger.get("kind").and_then(Value::as_str) == Some("Namespace") {
        trigger.pointer("/metadata/name").and_then(Value::as_str)
    } else {
        trigger
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
    };
    ObjRef {
        api_version: expect.api_version.clone(),
        kind: expect.kind.clone(),
        namespace: expect
            .namespace
            .clone()
            .or_else(|| trig_ns.map(str::to_string)),
        name: expect.name.clone(),
    }
}

#[path = "offline_engine.rs"]
mod engine;

#[path = "offline_generated.rs"]
mod generated;

#[path = "offline_vary.rs"]
mod vary;

#[cfg(test)]
#[path = "offline_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "offline_blocked_tests.rs"]
mod blocked_tests;

#[cfg(test)]
#[path = "offline_parity_tests.rs"]
mod parity_tests;

#[cfg(test)]
#[path = "answers_tests.rs"]
mod answers_tests;
