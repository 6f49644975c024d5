//! Per-task setup at run time: which setups are due (the learner reached the task: every
//! earlier task passes), applying them to a cluster through `target::live::Live` or to the
//! offline object set, and the offline rule for what the learner did afterwards.
//!
//! Offline there is no `kubectl apply` to observe, so the object set after a setup is:
//! the fixtures, the workspace manifests as they were, the setup's changes, and then the
//! manifests of every workspace file saved after the setup (kca reads a file changed since
//! the incident as applied again). A setup is recorded with its time; `lab reset` forgets
//! it (and, live, deletes every owned object, which undoes it).

use std::time::SystemTime;

use serde_json::Value;

use super::check::{CheckResult, Verdict, merge_patch};
use super::workspace;
use crate::content::lab::{Lab, ObjSel, SetupAction, Task};
use crate::target::ObjRef;
use crate::target::live::{Live, LiveError};

/// A setup that has been applied, and since when (None: just now, nothing re-applied).
#[derive(Debug, Clone, Copy)]
pub struct Staged<'a> {
    pub task: &'a Task,
    pub at: Option<SystemTime>,
}

/// Tasks whose setup is due after these results: not applied yet, and every task before
/// it passed. Only a check of every task can tell (a `--task` check cannot).
pub fn due<'a>(lab: &'a Lab, results: &[CheckResult], applied: &[String]) -> Vec<&'a Task> {
    let mut out = Vec::new();
    for (i, t) in lab.tasks.iter().enumerate() {
        if t.setup.is_empty() || applied.contains(&t.id) {
            continue;
        }
        let before_pass = lab.tasks[..i].iter().all(|b| {
            let mine: Vec<&CheckResult> = results.iter().filter(|r| r.task == b.id).collect();
            !mine.is_empty() && mine.iter().all(|r| r.verdict == Verdict::Pass)
        });
        if before_pass {
            out.push(t);
        } else {
            // A later setup never runs before an earlier one.
            break;
        }
    }
    out
}

/// The setups recorded in progress (task id → RFC 3339 time), in task order.
pub fn recorded<'a>(
    lab: &'a Lab,
    setups: &std::collections::BTreeMap<String, String>,
) -> Vec<Staged<'a>> {
    lab.tasks
        .iter()
        .filter_map(|t| {
            let at = setups.get(&t.id)?;
            let at = chrono::DateTime::parse_from_rfc3339(at)
                .ok()
                .map(SystemTime::from);
            Some(Staged { task: t, at })
        })
        .collect()
}

/// The time recorded for a setup that happened before the workspace's files were saved
/// (so they answer it): a handed-in folder's, `lab verify`'s final state.
pub const BEFORE_THE_FILES: &str = "1970-01-01T00:00:00.000000Z";

/// A finished learner's state as a setups record: every task setup staged before the
/// files were last saved (re-applied after it) — the state `lab verify` grades the
/// solution and the mutants in.
pub fn final_state(lab: &Lab) -> std::collections::BTreeMap<String, String> {
    lab.tasks
        .iter()
        .filter(|t| !t.setup.is_empty())
        .map(|t| (t.id.clone(), BEFORE_THE_FILES.to_string()))
        .collect()
}

/// The time a setup is recorded with (sub-second, so a file saved the second before the
/// setup is not taken for one saved after it).
pub fn stamp() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn matches_sel(sel: &ObjSel, obj: &Value) -> bool {
    ObjRef::of(obj).is_some_and(|r| {
        r.api_version == sel.api_version
            && r.kind == sel.kind
            && r.name == sel.name
            && (sel.namespace.is_none() || r.namespace == sel.namespace)
    })
}

/// Whether `a` and `b` name the same object (apiVersion, kind, namespace, name).
pub(super) fn same_object(a: &Value, b: &Value) -> bool {
    let (Some(x), Some(y)) = (ObjRef::of(a), ObjRef::of(b)) else {
        return false;
    };
    x == y
}

/// Applies one task's setup to an offline object set.
pub fn apply_offline(lab: &Lab, task: &Task, objects: &mut Vec<Value>) {
    for a in &task.setup {
        match a {
            SetupAction::Apply { objects: new, .. } => {
                for o in new {
                    let mut o = o.clone();
                    workspace::label_owned(&mut o, lab);
                    objects.retain(|x| !same_object(x, &o));
                    objects.push(o);
                }
            }
            SetupAction::Delete(sel) => objects.retain(|o| !matches_sel(sel, o)),
            SetupAction::Patch { target, merge } => {
                for o in objects.iter_mut().filter(|o| matches_sel(target, o)) {
                    merge_patch(o, merge);
                }
            }
            SetupAction::Revoke { .. } => {
                let gone = revoked(a, objects);
                objects.retain(|o| ObjRef::of(o).is_none_or(|r| !gone.contains(&r)));
            }
        }
    }
}

/// The roles among `learner` that a `revoke` takes away: each gives the subject the
/// permission (through any binding or aggregation), over the install's RBAC.
pub fn revoked(action: &SetupAction, learner: &[Value]) -> Vec<ObjRef> {
    let SetupAction::Revoke {
        user,
        groups,
        verb,
        group,
        resource,
    } = action
    else {
        return Vec::new();
    };
    use crate::offline::rbac::rule::{PolicyRule, Target};
    let (u, g) = crate::offline::rbac::impersonated(user, groups);
    let cluster = super::offline::baseline_rbac();
    // Only what the authorizer reads: a big ConfigMap in the set is not copied for it.
    let rbac: Vec<Value> = learner
        .iter()
        .filter(|o| super::offline::read_by_access(o))
        .cloned()
        .collect();
    let mut out: Vec<ObjRef> = Vec::new();
    for r in super::privilege::reached(cluster, &rbac, &u, &g) {
        let target = Target::Resource {
            api_group: group,
            resource,
            subresource: "",
            name: "",
        };
        if PolicyRule::from_json(&r.rule).allows(verb, target)
            && let Some(obj) = ObjRef::of(&r.role)
            && !out.contains(&obj)
            && learner.iter().any(|l| ObjRef::of(l).as_ref() == Some(&obj))
        {
            out.push(obj);
        }
    }
    out
}

/// The offline cluster after `staged` setups (see the module comment): `base` holds the
/// fixtures and the workspace manifests; files saved after a setup are applied again.
pub fn offline_objects(
    lab: &Lab,
    ws: &std::path::Path,
    mut base: Vec<Value>,
    staged: &[Staged<'_>],
) -> Vec<Value> {
    apply_setups(lab, &mut base, staged);
    for o in reapplied(lab, ws, staged) {
        base.retain(|x| !same_object(x, &o));
        base.push(o);
    }
    base
}

/// Applies the `staged` setups to `objects`, in order, in place.
pub fn apply_setups(lab: &Lab, objects: &mut Vec<Value>, staged: &[Staged<'_>]) {
    for s in staged {
        apply_offline(lab, s.task, objects);
    }
}

/// The objects of the workspace files saved after the earliest of the `staged` setups
/// (applied again over the cluster the setups left), each object once: the last one
/// read of an object wins, as the last `kubectl apply` does.
pub fn reapplied(lab: &Lab, ws: &std::path::Path, staged: &[Staged<'_>]) -> Vec<Value> {
    let since = staged.iter().map(|s| s.at).min().flatten();
    let Some(since) = since else {
        return Vec::new();
    };
    let newer = |p: &std::path::Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .is_ok_and(|t| t > since)
    };
    let mut again: Vec<Value> = Vec::new();
    for o in workspace::manifests_where(lab, ws, newer).objects {
        again.retain(|x| !same_object(x, &o));
        again.push(o);
    }
    again
}

/// Applies one task's setup to a cluster. Deletes and patches go only to objects that
/// carry the lab's labels there (never to a foreign object of the same name).
pub async fn apply_live(live: &Live, lab: &Lab, task: &Task) -> Result<Vec<String>, LiveError> {
    apply_live_in(live, lab, task, None).await
}

/// [`apply_live`] knowing the learner's workspace: a `revoke` deletes the cluster's
/// copies of the workspace's Roles and ClusterRoles that give the permission (the
/// learner's objects, whatever their names); without a workspace it deletes only such
/// roles that carry the lab's labels.
pub async fn apply_live_in(
    live: &Live,
    lab: &Lab,
    task: &Task,
    ws: Option<&std::path::Path>,
) -> Result<Vec<String>, LiveError> {
    let mut done = Vec::new();
    for a in &task.setup {
        match a {
            SetupAction::Apply { objects, file } => {
                for o in objects {
                    let mut o = o.clone();
                    workspace::label_owned(&mut o, lab);
                    live.apply(&o).await?;
                    if let Some(r) = ObjRef::of(&o) {
                        done.push(format!("applied {r} ({file})"));
                    }
                }
            }
            SetupAction::Delete(sel) => {
                let r = sel.obj_ref();
                match live.get(&r).await? {
                    Some(obj) if owned_here(lab, &obj) => {
                        live.delete(&r).await?;
                        done.push(format!("deleted {r}"));
                    }
                    Some(_) => done.push(format!("left {r} alone: it is not the lab's")),
                    None => done.push(format!("{r} was already gone")),
                }
            }
            SetupAction::Patch { target, merge } => {
                let r = target.obj_ref();
                match live.get(&r).await? {
                    Some(obj) if owned_here(lab, &obj) => {
                        live.merge_patch(&r, merge).await?;
                        done.push(format!("patched {r}"));
                    }
                    Some(_) => done.push(format!("left {r} alone: it is not the lab's")),
                    None => done.push(format!("{r} is not there to patch")),
                }
            }
            SetupAction::Revoke { .. } => {
                // The learner's RBAC in the cluster: roles and the bindings that may hand
                // them to the subject (a grant bound by the learner's own binding, not by
                // aggregation, is found too); only roles are deleted.
                let mut learner = Vec::new();
                let declared: Vec<ObjRef> = match ws {
                    Some(ws) => workspace::manifests(lab, ws)
                        .objects
                        .iter()
                        .filter_map(ObjRef::of)
                        .filter(|r| r.api_version == "rbac.authorization.k8s.io/v1")
                        .collect(),
                    None => Vec::new(),
                };
                for kind in ["ClusterRole", "Role", "ClusterRoleBinding", "RoleBinding"] {
                    let listed = match live
                        .list("rbac.authorization.k8s.io/v1", kind, None, "")
                        .await
                    {
                        Err(LiveError::NotServed { .. }) => Vec::new(),
                        r => r?,
                    };
                    for o in listed {
                        let mine = owned_here(lab, &o)
                            || ObjRef::of(&o).is_some_and(|r| declared.contains(&r));
                        if mine {
                            learner.push(o);
                        }
                    }
                }
                for r in revoked(a, &learner) {
                    if !matches!(r.kind.as_str(), "Role" | "ClusterRole") {
                        continue;
                    }
                    live.delete(&r).await?;
                    done.push(format!(
                        "deleted {r} (it gave the permission the setup takes away)"
                    ));
                }
                if done.is_empty() {
                    done.push("nothing of the learner's gave the permission".into());
                }
            }
        }
    }
    Ok(done)
}

fn owned_here(lab: &Lab, obj: &Value) -> bool {
    lab.owner_labels().iter().all(|(k, v)| {
        obj.pointer("/metadata/labels")
            .and_then(|l| l.get(*k))
            .and_then(Value::as_str)
            == Some(*v)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::content::Text;
    use crate::lab::check::{CheckResult, Outcome};
    use serde_json::json;

    pub(crate) fn task(id: &str, setup: Vec<SetupAction>) -> Task {
        Task {
            id: id.into(),
            title: Text::plain(id),
            instructions: Text::plain("i"),
            hints: vec![],
            checks: vec![],
            lesson: None,
            setup,
        }
    }

    fn lab(tasks: Vec<Task>) -> Lab {
        Lab {
            id: "demo".into(),
            title: Text::plain("t"),
            dir: ".".into(),
            workspace_name: "demo".into(),
            tasks,
            ..Default::default()
        }
    }

    fn result(task: &str, v: Verdict) -> CheckResult {
        let t = task_ref(task);
        let c = crate::content::lab::Check {
            id: format!("{task}-c"),
            title: None,
            points: 1,
            timeout: std::time::Duration::from_secs(1),
            on_fail: None,
            on_pass: None,
            guard: false,
            spec: crate::content::lab::Spec::File {
                path: "x".into(),
                parses: true,
                kinds: vec![],
                matches: None,
            },
        };
        let o = match v {
            Verdict::Pass => Outcome::pass(Default::default()),
            _ => Outcome::fail(Default::default()),
        };
        CheckResult::new(&t, &c, o, 0.0)
    }

    fn task_ref(id: &str) -> Task {
        task(id, vec![])
    }

    fn sel(kind: &str, name: &str) -> ObjSel {
        ObjSel {
            api_version: "rbac.authorization.k8s.io/v1".into(),
            kind: kind.into(),
            namespace: None,
            name: name.into(),
        }
    }

    #[test]
    fn a_setup_is_due_once_every_earlier_task_passes() {
        let incident = vec![SetupAction::Delete(sel("ClusterRole", "grant"))];
        let l = lab(vec![
            task("a", vec![]),
            task("b", vec![]),
            task("c", incident),
        ]);
        let some = [result("a", Verdict::Pass), result("b", Verdict::Fail)];
        assert!(due(&l, &some, &[]).is_empty());
        let all = [result("a", Verdict::Pass), result("b", Verdict::Pass)];
        let d: Vec<&str> = due(&l, &all, &[]).iter().map(|t| t.id.as_str()).collect();
        assert_eq!(d, ["c"]);
        assert!(due(&l, &all, &["c".into()]).is_empty(), "applied once");
    }

    #[test]
    fn offline_setup_deletes_patches_and_applies_owned_objects() {
        let grant = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "grant", "labels": {"x": "y"}}, "rules": []});
        let other = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "n"}, "data": {"k": "v"}});
        let t = task(
            "c",
            vec![
                SetupAction::Delete(sel("ClusterRole", "grant")),
                SetupAction::Patch {
                    target: ObjSel {
                        api_version: "v1".into(),
                        kind: "ConfigMap".into(),
                        namespace: Some("n".into()),
                        name: "cm".into(),
                    },
                    merge: json!({"data": {"k": "w"}}),
                },
                SetupAction::Apply {
                    file: "setup/x.yaml".into(),
                    objects: vec![
                        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "new"}}),
                    ],
                },
            ],
        );
        let l = lab(vec![task("a", vec![]), t.clone()]);
        let mut objs = vec![grant, other];
        apply_offline(&l, &t, &mut objs);
        assert_eq!(objs.len(), 2, "{objs:?}");
        assert_eq!(objs[0].pointer("/data/k"), Some(&json!("w")));
        assert_eq!(
            objs[1].pointer("/metadata/labels/kca.dev~1lab"),
            Some(&json!(l.id))
        );
    }

    #[test]
    fn a_revoke_takes_the_learners_grant_whatever_its_name() {
        let grant = |name: &str| {
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": name, "labels": {"rbac.kyverno.io/aggregate-to-background-controller": "true"}},
                "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["get", "create"]}]})
        };
        let unrelated = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "unbound"},
            "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["create"]}]});
        let revoke = SetupAction::Revoke {
            user: "system:serviceaccount:kyverno:kyverno-background-controller".into(),
            groups: vec![],
            verb: "create".into(),
            group: "networking.k8s.io".into(),
            resource: "networkpolicies".into(),
        };
        let t = task("c", vec![revoke]);
        let l = lab(vec![task("a", vec![]), t.clone()]);
        for name in ["kca-mutate-generator", "my-own-grant"] {
            let mut objs = vec![grant(name), unrelated.clone()];
            apply_offline(&l, &t, &mut objs);
            let left: Vec<String> = objs.iter().filter_map(ObjRef::of).map(|r| r.name).collect();
            assert_eq!(
                left,
                ["unbound"],
                "{name}: an unbound role gives nothing and stays"
            );
        }
    }

    #[test]
    fn offline_files_saved_after_the_setup_are_applied_again() {
        let tmp = tempfile::tempdir().unwrap();
        let grant = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: grant}\nrules: []\n";
        std::fs::write(tmp.path().join("rbac.yaml"), grant).unwrap();
        let t = task("c", vec![SetupAction::Delete(sel("ClusterRole", "grant"))]);
        let l = lab(vec![task("a", vec![]), t.clone()]);
        let base = workspace::manifests(&l, tmp.path()).objects;
        assert_eq!(base.len(), 1);
        // Just applied: the grant is gone.
        let now = [Staged { task: &t, at: None }];
        assert!(offline_objects(&l, tmp.path(), base.clone(), &now).is_empty());
        // Applied an hour ago, the file saved since: the grant is back.
        let hour_ago = SystemTime::now() - std::time::Duration::from_secs(3600);
        let earlier = [Staged {
            task: &t,
            at: Some(hour_ago),
        }];
        assert_eq!(
            offline_objects(&l, tmp.path(), base.clone(), &earlier).len(),
            1
        );
        // Applied after the last save: still gone.
        let later = SystemTime::now() + std::time::Duration::from_secs(3600);
        let after = [Staged {
            task: &t,
            at: Some(later),
        }];
        assert!(offline_objects(&l, tmp.path(), base, &after).is_empty());
    }
}
