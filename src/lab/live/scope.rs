//! The live side of the checks that grade what a learner must *not* do and what they saw:
//! a `leftAlone` generate trigger (created for real, watched for a few seconds, always
//! deleted again), `least-privilege` (the RBAC the learner brought to the cluster, through
//! `lab::privilege`, each required grant asked with a SubjectAccessReview) and
//! `observed` (the cluster's UpdateRequests of the policy; where the cluster no longer
//! holds the situation, kca's model of it over the learner's own files).

use super::*;
use crate::content::lab::{Grant, ObservedSource};

/// How long a `leftAlone` trigger is watched: Kyverno's webhook creates the
/// UpdateRequest while admitting the trigger, so a rule that matches shows within this.
const LEFT_ALONE_WATCH: Duration = Duration::from_secs(5);

pub(super) async fn left_alone(
    live: &Live,
    lab: &Lab,
    check: &Check,
) -> Result<Outcome, LiveError> {
    let Spec::Generated {
        trigger,
        expect,
        policy,
        ..
    } = &check.spec
    else {
        return Ok(Outcome::internal("not a generated check"));
    };
    let generated::Created {
        trig,
        trig_ref,
        want,
        uid,
    } = match generated::create_trigger(live, lab, check, &trigger.object, expect, policy).await? {
        Ok(c) => c,
        Err(outcome) => return Ok(outcome),
    };
    let what = check::probe(&trig);
    let watch = async {
        let start = Instant::now();
        loop {
            if live.get(&want).await?.is_some() {
                return Ok::<_, LiveError>(Outcome::fail(Detail::OutsideGenerated {
                    what,
                    want: want.to_string(),
                }));
            }
            let urs = update_requests(live).await?;
            let ours = urs.iter().find(|u| {
                names_trigger(u, &trig_ref, uid.as_deref())
                    && policy.as_deref().is_none_or(|p| {
                        u.pointer("/spec/policy").and_then(Value::as_str) == Some(p)
                    })
            });
            if ours.is_some() {
                return Ok(Outcome::fail(Detail::OutsideUpdateRequest { what }));
            }
            if start.elapsed() >= LEFT_ALONE_WATCH.min(check.timeout) {
                return Ok(Outcome::pass(Detail::OutsideNothing { what }));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    };
    let outcome = tokio::select! {
        r = watch => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    let deleted = live.delete(&trig_ref).await;
    let mut outcome = match outcome {
        None => Outcome::error(Detail::Interrupted {
            what: trig_ref.to_string(),
            deleted: true,
        }),
        Some(r) => r?,
    };
    if let Err(e) = deleted {
        outcome.detail = outcome.detail.then(Detail::NotDeleted {
            what: trig_ref.to_string(),
            error: e.to_string(),
        });
    }
    Ok(outcome)
}

/// Every UpdateRequest in Kyverno's namespace; none where the API is not served (no
/// Kyverno CRDs: nothing can have been generated either).
async fn update_requests(live: &Live) -> Result<Vec<Value>, LiveError> {
    match live
        .list("kyverno.io/v2", "UpdateRequest", Some("kyverno"), "")
        .await
    {
        Ok(l) => Ok(l),
        Err(LiveError::NotServed { .. }) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The RBAC objects the learner brought to the cluster: the cluster's copies of the
/// workspace's, and every other role or binding there that no installer made — not in the
/// pinned install's baseline or the lab's fixtures, not Helm's, not the API server's or
/// kubeadm's own (`system:`, `kubeadm:`) — so a grant applied from a file since deleted
/// still counts against the envelope.
async fn learner_rbac(
    live: &Live,
    env: Submission<'_>,
    known: &[Value],
) -> Result<Vec<Value>, LiveError> {
    const RBAC: &str = "rbac.authorization.k8s.io/v1";
    let m = crate::lab::workspace::manifests(env.lab, env.workspace);
    let mut out = Vec::new();
    for o in &m.objects {
        let rbac = o.get("apiVersion").and_then(Value::as_str) == Some(RBAC);
        let Some(r) = ObjRef::of(o).filter(|_| rbac) else {
            continue;
        };
        if let Some(found) = live.get(&r).await? {
            out.push(found);
        }
    }
    let known: Vec<ObjRef> = known.iter().chain(&out).filter_map(ObjRef::of).collect();
    for kind in ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"] {
        for o in live.list(RBAC, kind, None, "").await? {
            let Some(r) = ObjRef::of(&o) else { continue };
            let installed = r.name.starts_with("system:")
                || r.name.starts_with("kubeadm:")
                || o.pointer("/metadata/labels/app.kubernetes.io~1managed-by")
                    .and_then(Value::as_str)
                    == Some("Helm");
            if !installed && !known.contains(&r) {
                out.push(o);
            }
        }
    }
    Ok(out)
}

pub(super) async fn least_privilege(
    live: &Live,
    env: Submission<'_>,
    check: &Check,
) -> Result<Outcome, LiveError> {
    let Spec::LeastPrivilege {
        user,
        groups,
        required,
        allowed,
    } = &check.spec
    else {
        return Ok(Outcome::internal("not a least-privilege check"));
    };
    let mut cluster = crate::lab::offline::baseline_rbac().to_vec();
    // The fixtures' RBAC is the lab's, not the learner's.
    if let Ok(fx) = crate::lab::workspace::fixtures(env.lab) {
        cluster.extend(fx);
    }
    let learner = learner_rbac(live, env, &cluster).await?;
    let (u, g) = crate::offline::rbac::impersonated(user, groups);
    let reached = crate::lab::privilege::reached(&cluster, &learner, &u, &g);
    // Each required (verb, group, resource, namespace), asked of the API server.
    let mut answers = Vec::new();
    for grant in required {
        for (verb, group, res) in triples(grant) {
            let q = AccessQuery {
                user: user.clone(),
                groups: groups.clone(),
                verb: verb.clone(),
                group: group.clone(),
                resource: res.clone(),
                namespace: grant.namespace.clone(),
                ..Default::default()
            };
            let a = live.can_i(&q).await?;
            answers.push(((verb, group, res, grant.namespace.clone()), a.allowed));
        }
    }
    Ok(crate::lab::privilege::judge(
        user,
        required,
        allowed,
        &reached,
        |v, gr, r, ns| {
            Ok(answers
                .iter()
                .find(|((a, b, c, d), _)| a == v && b == gr && c == r && d == ns)
                .is_some_and(|(_, ok)| *ok))
        },
    ))
}

fn triples(g: &Grant) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for group in &g.groups {
        for res in &g.resources {
            for verb in &g.verbs {
                out.push((verb.clone(), group.clone(), res.clone()));
            }
        }
    }
    out
}

pub(super) async fn observed(
    live: &Live,
    env: Submission<'_>,
    check: &Check,
) -> Result<Outcome, LiveError> {
    let Spec::Observed { source, .. } = &check.spec else {
        return Ok(Outcome::internal("not an observed check"));
    };
    let record = match crate::lab::observe::record(env, check) {
        Ok(r) => r,
        Err(o) => return Ok(o),
    };
    // The cluster's own answer first: an UpdateRequest of the policy that failed (or
    // went back to Pending to retry) is what the learner looked at.
    if let ObservedSource::UpdateRequest {
        policy: Some(policy),
        ..
    } = source
    {
        let urs = update_requests(live).await?;
        let failing = urs.iter().rev().find(|u| {
            u.pointer("/spec/policy").and_then(Value::as_str) == Some(policy)
                && u.pointer("/status/message")
                    .and_then(Value::as_str)
                    .is_some_and(|m| m.contains("cannot"))
        });
        if let Some(u) = failing {
            let s = |p: &str| u.pointer(p).and_then(Value::as_str).unwrap_or("");
            let facts = crate::lab::observe::Facts::update_request(
                if s("/status/state").is_empty() {
                    "Pending"
                } else {
                    s("/status/state")
                },
                s("/status/message"),
                crate::lab::detail::Source::UpdateRequestInCluster {
                    name: s("/metadata/name").to_string(),
                },
            );
            return Ok(crate::lab::observe::judge(check, &record, &facts));
        }
    }
    // The situation is gone from the cluster (the grant restored, the policy fixed): kca's
    // model of it over the learner's own files, with the lab's setups up to this task.
    let staged = staged_up_to(env.lab, &check.id);
    let facts = match crate::lab::offline::Offline::load_staged(env.lab, env.workspace, &staged) {
        Ok(off) => {
            let mut f = off.observe_in(env, source);
            f.source = crate::lab::detail::Source::Modelled {
                of: Box::new(f.source),
            };
            f
        }
        Err(e) => {
            return Ok(Outcome::error(Detail::Content {
                error: e.to_string(),
            }));
        }
    };
    Ok(crate::lab::observe::judge(check, &record, &facts))
}

/// The setups of the tasks up to the one holding `check`, as just applied.
fn staged_up_to<'a>(lab: &'a Lab, check: &str) -> Vec<crate::lab::setup::Staged<'a>> {
    let mut out = Vec::new();
    for t in &lab.tasks {
        if !t.setup.is_empty() {
            out.push(crate::lab::setup::Staged { task: t, at: None });
        }
        if t.checks.iter().any(|c| c.id == check) {
            break;
        }
    }
    out
}
