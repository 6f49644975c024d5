//! Evaluates a lab's checks against a real cluster through `target::live::Live` (never
//! kube-rs directly): objects, access reviews, server-side dry runs, and real triggers for
//! `generated` checks, which are always deleted again, on Ctrl-C too.

use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use super::check::{self, Detail, Outcome, Submission};
use super::equiv::semantic_match as partial_match;
use super::offline::expected_generated;
use crate::content::lab::{Check, Denier, Expect, Lab, ObjSel, Spec};
use crate::target::live::{Live, LiveError};
use crate::target::{AccessQuery, Identity, ObjRef, Operation};
use crate::ui::Printer;

mod generated;
mod scope;
mod serves;
mod settle;

pub use generated::sweep_triggers;
use generated::*;
use serves::*;
pub use serves::{ApplyAdvice, KyvernoGate, apply_advice};
use settle::*;

/// Label on trigger objects, so a run killed outright leaves leftovers the next run finds.
pub const PROBE_LABEL: &str = "kca.dev/probe";

/// The background controller's service account (the course's Kyverno install).
const BACKGROUND_SA: (&str, &str) = ("kyverno", "kyverno-background-controller");

pub async fn evaluate(
    live: &Live,
    env: Submission<'_>,
    check: &Check,
    printer: &Printer,
) -> Outcome {
    if matches!(check.spec, Spec::File { .. } | Spec::Command { .. }) {
        // Local work (a learner's script may run for a while) must not stall the runtime.
        let (lab, ws, c) = (env.lab.clone(), env.workspace.to_path_buf(), check.clone());
        let local = tokio::task::spawn_blocking(move || {
            check::local(
                Submission {
                    lab: &lab,
                    workspace: &ws,
                },
                &c,
            )
        })
        .await;
        return match local {
            Ok(Some(o)) => o,
            Ok(None) => Outcome::internal("not a local check"),
            Err(e) => Outcome::error(Detail::Crashed {
                error: Some(e.to_string()),
            }),
        };
    }
    match unserved(live, check).await {
        Ok(Some(skip)) => return skip,
        Ok(None) => {}
        Err(e) => {
            return Outcome::error(Detail::Cluster {
                error: e.to_string(),
            });
        }
    }
    let r = match &check.spec {
        Spec::Resource {
            target,
            present,
            matches,
            ..
        } => resource(live, target, *present, matches.as_ref()).await,
        Spec::CanI { query, .. } => live
            .can_i(query)
            .await
            .map(|a| check::judge_can_i(check, &a)),
        Spec::Admission { .. } => admission(live, env, check).await,
        Spec::Generated {
            left_alone: true, ..
        } => scope::left_alone(live, env.lab, check).await,
        Spec::Generated { .. } => generated(live, env.lab, check, printer).await,
        Spec::LeastPrivilege { .. } => scope::least_privilege(live, env, check).await,
        Spec::Observed { .. } => scope::observed(live, env, check).await,
        Spec::Accepted { .. } => accepted(live, env, check).await,
        Spec::File { .. } | Spec::Command { .. } => Ok(Outcome::internal("evaluated locally")),
    };
    r.unwrap_or_else(|e| match e {
        // Found out only now (an `accepted` document's kind): still not the learner's.
        LiveError::NotServed { api_version, kind } => Outcome::skipped(Detail::NotServed {
            apis: vec![format!(
                "{kind} ({api_version}){}",
                why_unserved(&api_version, &kind)
            )],
        }),
        e => Outcome::error(Detail::Cluster {
            error: e.to_string(),
        }),
    })
}

async fn resource(
    live: &Live,
    sel: &ObjSel,
    present: bool,
    matches: Option<&Value>,
) -> Result<Outcome, LiveError> {
    let r = sel.obj_ref();
    Ok(match (live.get(&r).await?, present) {
        (None, true) => Outcome::fail(Detail::NotInCluster {
            what: r.to_string(),
        }),
        (None, false) => Outcome::pass(Detail::Absent {
            what: r.to_string(),
        }),
        (Some(_), false) => Outcome::fail(Detail::ExistsShouldNot {
            what: r.to_string(),
        }),
        (Some(obj), true) => match matches.map(|w| partial_match(w, &obj)) {
            None | Some(Ok(())) => Outcome::pass(Detail::AsExpected {
                what: r.to_string(),
            }),
            Some(Err(diff)) => Outcome::fail(Detail::ResourceDiffers {
                what: r.to_string(),
                diff,
            }),
        },
    })
}

/// A Kyverno policy by name: a ClusterPolicy, else a Policy in `namespace`.
async fn find_policy(
    live: &Live,
    name: &str,
    namespace: &str,
) -> Result<Option<ObjRef>, LiveError> {
    // The kinds a lab's policy can be, most common first; Kyverno's CEL kinds
    // (policies.kyverno.io, 1.19) only where the server serves them.
    let candidates = [
        ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, name),
        ObjRef::new("kyverno.io/v1", "Policy", Some(namespace), name),
        ObjRef::new("policies.kyverno.io/v1", "ValidatingPolicy", None, name),
        ObjRef::new("policies.kyverno.io/v1", "MutatingPolicy", None, name),
        ObjRef::new("policies.kyverno.io/v1", "GeneratingPolicy", None, name),
    ];
    for r in candidates {
        match live.get(&r).await {
            Ok(Some(_)) => return Ok(Some(r)),
            Ok(None) | Err(LiveError::NotServed { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Each named policy must be in the cluster and Ready before a check relies on it (shared
/// by admission and generated checks): `Some(outcome)` for the first that is not — `fail`
/// when it is missing or Kyverno marked it not ready (with Kyverno's reason), `error` when
/// no Kyverno controller has written its status (`settle::unready_outcome`).
async fn require_policies(
    live: &Live,
    policies: &[String],
    namespace: &str,
    timeout: Duration,
) -> Result<Option<Outcome>, LiveError> {
    for p in policies {
        let Some(r) = find_policy(live, p, namespace).await? else {
            return Ok(Some(Outcome::fail(Detail::PolicyNotInCluster {
                name: p.clone(),
            })));
        };
        let how = live.await_ready(&r, timeout).await?;
        if let Some(o) = unready_outcome(&r, &how, timeout) {
            return Ok(Some(o));
        }
    }
    Ok(None)
}

async fn admission(live: &Live, env: Submission<'_>, check: &Check) -> Result<Outcome, LiveError> {
    let Spec::Admission {
        probe,
        update,
        user,
        policies,
        ..
    } = &check.spec
    else {
        return Ok(Outcome::internal("not an admission check"));
    };
    let ns = probe
        .object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    // A policy that is not Ready yet would let the probe through and blame the learner.
    if let Some(not_ready) = require_policies(live, policies, ns, check.timeout).await? {
        return Ok(not_ready);
    }
    // The learner's own policies that apply to this probe (a ValidatingPolicy the check
    // does not name, say), when they are in the cluster; and their VAPs read.
    let config = workspace_config(env, &probe.object);
    let mut named = Vec::new();
    for r in &config.policies {
        if policies.contains(&r.name) {
            continue;
        }
        match live.get(r).await {
            Ok(Some(_)) => {}
            Ok(None) | Err(LiveError::NotServed { .. }) => continue,
            Err(e) => return Err(e),
        }
        let how = live.await_ready(r, check.timeout).await?;
        if let Some(o) = unready_outcome(r, &how, check.timeout) {
            return Ok(o);
        }
        named.push(r.clone());
    }
    await_vaps(live, &config.vaps, check.timeout.min(SETTLE)).await?;
    let op = if *update {
        Operation::Update
    } else {
        Operation::Create
    };
    let who = user
        .as_ref()
        .map(|(u, g)| Identity::user(u.clone(), g.clone()));
    let start = Instant::now();
    // Until when a miss is asked again (once known): only while the configuration was
    // written moments ago.
    let mut settle: Option<Option<Instant>> = None;
    let sent = crate::lab::vary::probe(&probe.object, &check.id, *update);
    loop {
        let got = live.admit(&sent, op, who.as_ref()).await?;
        let outcome = check::judge_admission(check, &sent, &got);
        if outcome.verdict == check::Verdict::Pass || start.elapsed() >= check.timeout {
            return Ok(outcome);
        }
        if settle.is_none() {
            for p in policies {
                if let Some(r) = find_policy(live, p, ns).await? {
                    named.push(r);
                }
            }
            let until = settle_until(live, &config, &named).await?;
            settle = Some(until.and_then(|u| {
                let left = (u - chrono::Utc::now()).to_std().ok()?;
                Some(Instant::now() + left.min(SETTLE))
            }));
        }
        match settle.flatten() {
            Some(until) if Instant::now() < until => {}
            _ => return Ok(outcome),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `accepted`: the learner's policy file sent as a server-side dry run — an update when
/// the policy exists (a create would only say "already exists"), else a create — so
/// Kyverno's policy validation webhook answers as it would to `kubectl apply`.
async fn accepted(live: &Live, env: Submission<'_>, check: &Check) -> Result<Outcome, LiveError> {
    let mut doc = match check::accepted_document(env, check) {
        Ok(d) => d,
        Err(o) => return Ok(o),
    };
    let what = check::document_name(check, &doc);
    let Some(r) = ObjRef::of(&doc) else {
        return Ok(Outcome::fail(Detail::NoIdentity { what }));
    };
    let op = match live.get(&r).await? {
        Some(existing) => {
            if let (Some(rv), Some(meta)) = (
                existing.pointer("/metadata/resourceVersion").cloned(),
                doc.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                meta.insert("resourceVersion".into(), rv);
            }
            Operation::Update
        }
        None => Operation::Create,
    };
    let got = live.admit(&doc, op, None).await?;
    Ok(check::judge_accepted(check, &what, &got))
}

/// The API group and resource of a kind, for access reviews: the built-in discovery table
/// (`offline::rbac::resource`, the one kind → resource resolver), else the server's own
/// discovery for kinds it does not hold (CRDs); None when neither knows the kind.
pub async fn resource_of(live: &Live, r: &ObjRef) -> Option<(String, String)> {
    let group = crate::offline::rbac::resource::group_of(&r.api_version).to_string();
    if let Some(res) =
        crate::offline::rbac::resource::Mapper::built_in().for_kind(&r.api_version, &r.kind)
    {
        return Some((res.group.clone(), res.plural.clone()));
    }
    match live.plural(&r.api_version, &r.kind).await {
        Ok(Some(plural)) => Some((group, plural)),
        _ => None,
    }
}
