//! `generated` checks live: a real trigger (always deleted again, on Ctrl-C too), the wait
//! for the generated object, the `sync` step, and the course's diagnosis from the
//! UpdateRequest of this very trigger.

use super::*;

/// A short, unlikely-to-collide suffix for trigger names.
pub(super) fn suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut n = (nanos ^ (u128::from(std::process::id()) << 64)) as u64;
    let mut s = String::new();
    for _ in 0..6 {
        let d = (n % 36) as u32;
        s.push(char::from_digit(d, 36).unwrap_or('x'));
        n /= 36;
    }
    s
}

pub(super) fn trigger_object(lab: &Lab, check: &Check, template: &Value) -> Value {
    let mut t = template.clone();
    crate::lab::workspace::label_owned(&mut t, lab);
    if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
        let prefix = meta
            .remove("generateName")
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| format!("kca-{}-", check.id));
        if !meta.contains_key("name") {
            meta.insert(
                "name".into(),
                Value::String(format!("{prefix}{}", suffix())),
            );
        }
        if let Some(l) = meta.get_mut("labels").and_then(Value::as_object_mut) {
            l.insert(PROBE_LABEL.into(), Value::String("trigger".into()));
        }
    }
    t
}

/// Deletes trigger objects an earlier run left behind (killed before it could clean up).
pub async fn sweep_triggers(live: &Live, lab: &Lab) -> Result<usize, LiveError> {
    let mut kinds: Vec<(String, String)> = Vec::new();
    for (_, c) in lab.checks() {
        if let Spec::Generated { trigger, .. } = &c.spec {
            let s = |p: &str| {
                trigger
                    .object
                    .pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
            };
            let k = (s("/apiVersion").to_string(), s("/kind").to_string());
            if !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    let selector = format!("{},{PROBE_LABEL}=trigger", lab.selector());
    let mut n = 0;
    for (api, kind) in kinds {
        for obj in live.list(&api, &kind, None, &selector).await? {
            if let Some(r) = ObjRef::of(&obj) {
                live.delete(&r).await?;
                n += 1;
            }
        }
    }
    Ok(n)
}

/// A generate check's trigger, created for real: what it should make, and its uid.
pub(super) struct Created {
    pub trig: Value,
    pub trig_ref: ObjRef,
    pub want: ObjRef,
    pub uid: Option<String>,
}

/// Creates the trigger of a generate check once the policies it names are Ready; the
/// outcome instead when the trigger is malformed or a policy is missing or not Ready (it
/// would generate nothing: say so now, not after the whole wait — issue 8, live 4).
pub(super) async fn create_trigger(
    live: &Live,
    lab: &Lab,
    check: &Check,
    template: &Value,
    expect: &ObjSel,
    policy: &Option<String>,
) -> Result<Result<Created, Outcome>, LiveError> {
    let trig = trigger_object(lab, check, template);
    let Some(trig_ref) = ObjRef::of(&trig) else {
        return Ok(Err(Outcome::error(Detail::NoIdentity {
            what: "the trigger".into(),
        })));
    };
    let ns = trig_ref.namespace.as_deref().unwrap_or("default");
    if let Some(not_ready) = require_policies(live, policy.as_slice(), ns, check.timeout).await? {
        return Ok(Err(not_ready));
    }
    let want = expected_generated(expect, &trig);
    let created = live.create(&trig).await?;
    let uid = created
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(str::to_string);
    Ok(Ok(Created {
        trig,
        trig_ref,
        want,
        uid,
    }))
}

pub(super) async fn generated(
    live: &Live,
    lab: &Lab,
    check: &Check,
    printer: &Printer,
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
    let Created {
        trig: _,
        trig_ref,
        want,
        uid,
    } = match create_trigger(live, lab, check, &trigger.object, expect, policy).await? {
        Ok(c) => c,
        Err(outcome) => return Ok(outcome),
    };
    printer.status(&format!(
        "  {}: created {trig_ref}, waiting for {want}…",
        check.id
    ));
    // The sync step runs while the trigger (and so the generated copy) still exists.
    let wait_and_sync = async {
        let (found, waited) = await_object(
            live,
            &want,
            check.timeout,
            printer,
            &check.id,
            (&trig_ref, uid.as_deref()),
        )
        .await?;
        let first = check::judge_generated(check, &want.to_string(), found.as_ref());
        let synced = match (&check.spec, first.verdict) {
            (Spec::Generated { sync: Some(_), .. }, check::Verdict::Pass) => {
                Some(synced(live, lab, check, &want).await?)
            }
            _ => None,
        };
        Ok::<_, LiveError>((found, synced, waited))
    };
    let waited = tokio::select! {
        r = wait_and_sync => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    // Always clean up, whatever happened while waiting.
    let deleted = live.delete(&trig_ref).await;
    let Some(found) = waited else {
        return Ok(Outcome::error(Detail::Interrupted {
            what: trig_ref.to_string(),
            deleted: deleted.is_ok(),
        }));
    };
    let (found, synced, waited) = found?;
    let mut outcome =
        synced.unwrap_or_else(|| check::judge_generated(check, &want.to_string(), found.as_ref()));
    if found.is_none() {
        let (verdict, why) = explain(live, &trig_ref, uid.as_deref(), &want).await;
        outcome.verdict = verdict;
        outcome.detail = outcome.detail.then(Detail::Waited {
            seconds: waited.as_secs(),
            why: Box::new(why),
        });
    }
    if let Err(e) = deleted {
        outcome.detail = outcome.detail.then(Detail::NotDeleted {
            what: trig_ref.to_string(),
            error: e.to_string(),
        });
    }
    Ok(outcome)
}

/// The `sync` step of a `generated` check: change the (owned) source, wait for the copy
/// to follow, and put the source back whatever happened.
pub(super) async fn synced(
    live: &Live,
    lab: &Lab,
    check: &Check,
    want: &ObjRef,
) -> Result<Outcome, LiveError> {
    let Spec::Generated {
        sync: Some(step), ..
    } = &check.spec
    else {
        return Ok(Outcome::internal("not a generated check with a sync step"));
    };
    let src = step.source.obj_ref();
    let Some(original) = live.get(&src).await? else {
        return Ok(Outcome::error(Detail::SyncSourceNotInCluster {
            source: src.to_string(),
        }));
    };
    let owned = lab.owner_labels().iter().all(|(k, v)| {
        original
            .pointer("/metadata/labels")
            .and_then(|l| l.get(*k))
            .and_then(Value::as_str)
            == Some(*v)
    });
    if !owned {
        return Ok(Outcome::error(Detail::NotLabOwned {
            what: src.to_string(),
        }));
    }
    live.merge_patch(&src, &step.patch).await?;
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < check.timeout {
        last = live.get(want).await?;
        if last
            .as_ref()
            .is_some_and(|o| partial_match(&step.matches, o).is_ok())
        {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let restored = live
        .merge_patch(&src, &check::inverse_patch(&original, &step.patch))
        .await;
    let mut o = check::judge_synced(check, &want.to_string(), last.as_ref());
    if let Err(e) = restored {
        o.detail = o.detail.then(Detail::NotRestored {
            what: src.to_string(),
            error: e.to_string(),
        });
    }
    Ok(o)
}

/// How often the wait looks at the trigger's UpdateRequest: one that failed or was skipped
/// means nothing will come, so the check ends then rather than at its timeout.
const UR_LOOK: Duration = Duration::from_secs(5);

pub(super) async fn await_object(
    live: &Live,
    want: &ObjRef,
    deadline: Duration,
    printer: &Printer,
    id: &str,
    (trig, uid): (&ObjRef, Option<&str>),
) -> Result<(Option<Value>, Duration), LiveError> {
    let start = Instant::now();
    let mut last_note = Instant::now();
    let mut last_look = Instant::now();
    loop {
        if let Some(obj) = live.get(want).await? {
            return Ok((Some(obj), start.elapsed()));
        }
        if start.elapsed() >= deadline {
            return Ok((None, start.elapsed()));
        }
        if last_look.elapsed() >= UR_LOOK {
            last_look = Instant::now();
            if let Ok(urs) = update_requests(live, trig, uid).await
                && urs
                    .iter()
                    .any(|u| matches!(ur_state(u).as_str(), "Failed" | "Skip"))
            {
                return Ok((None, start.elapsed()));
            }
        }
        if last_note.elapsed() >= Duration::from_secs(10) {
            printer.status(&format!(
                "  {id}: still waiting for {want} ({}s of {}s)",
                start.elapsed().as_secs(),
                deadline.as_secs()
            ));
            last_note = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
}

/// Whether an UpdateRequest was made for this trigger: Kyverno 1.19 names the trigger in
/// `spec.ruleContext[].trigger` (and older releases in `spec.resource`; the admission
/// request in `spec.context` names it too) — see `api/kyverno/v2/updaterequest_types.go`
/// and `pkg/webhooks/resource/generation/handler.go`. A UID, where both sides have one,
/// decides; else kind, namespace and name (trigger names carry a random suffix).
pub(super) fn names_trigger(ur: &Value, trig: &ObjRef, uid: Option<&str>) -> bool {
    let same = |spec: &Value| {
        let s = |k: &str| spec.get(k).and_then(Value::as_str).unwrap_or("");
        if let Some(u) = uid
            && !s("uid").is_empty()
        {
            return s("uid") == u;
        }
        s("name") == trig.name
            && s("namespace") == trig.namespace.as_deref().unwrap_or("")
            && (s("kind").is_empty() || s("kind") == trig.kind)
    };
    let spec = &ur["spec"];
    let in_rules = spec["ruleContext"]
        .as_array()
        .is_some_and(|rs| rs.iter().any(|r| same(&r["trigger"])));
    let request = &spec["context"]["admissionRequestInfo"]["admissionRequest"];
    let in_request = request["name"].as_str() == Some(trig.name.as_str())
        && request["namespace"].as_str().unwrap_or("") == trig.namespace.as_deref().unwrap_or("")
        && request["kind"]["kind"]
            .as_str()
            .is_none_or(|k| k == trig.kind);
    in_rules || same(&spec["resource"]) || in_request
}

/// The UpdateRequests Kyverno made for this trigger (in its namespace, `kyverno`).
async fn update_requests(
    live: &Live,
    trig: &ObjRef,
    uid: Option<&str>,
) -> Result<Vec<Value>, LiveError> {
    let all = live
        .list("kyverno.io/v2", "UpdateRequest", Some("kyverno"), "")
        .await?;
    Ok(all
        .into_iter()
        .filter(|u| names_trigger(u, trig, uid))
        .collect())
}

/// An UpdateRequest's state; one without a status yet is Pending.
fn ur_state(u: &Value) -> String {
    u.pointer("/status/state")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
        .to_string()
}

/// The course's diagnosis order, on the UpdateRequest of this trigger: none means the rule
/// did not match (the learner's to fix); a failed one means the background controller could
/// not do it (often permissions); one still pending means the controller is not working,
/// which is the environment's fault (ERROR, not FAIL).
pub(super) async fn explain(
    live: &Live,
    trig: &ObjRef,
    uid: Option<&str>,
    want: &ObjRef,
) -> (check::Verdict, Detail) {
    use check::Verdict::{Error, Fail};
    let ours = match update_requests(live, trig, uid).await {
        Ok(l) => l,
        Err(e) => {
            return (
                Error,
                Detail::UpdateRequestsUnlisted {
                    error: e.to_string(),
                },
            );
        }
    };
    let ours: Vec<&Value> = ours.iter().collect();
    let state = |u: &Value| ur_state(u);
    let message = |u: &Value| {
        u.pointer("/status/message")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or("(no message)")
            .to_string()
    };
    let pick = |want: &str| ours.iter().find(|u| state(u) == want).copied();
    if ours.is_empty() {
        return (Fail, Detail::NoRuleMatched);
    }
    if let Some(u) = pick("Failed") {
        return (Fail, failed_ur(live, &message(u), want).await);
    }
    if let Some(u) = pick("Skip") {
        return (
            Fail,
            Detail::UpdateRequestSkipped {
                message: message(u),
            },
        );
    }
    if let Some(u) = pick("Completed") {
        return (
            Fail,
            Detail::UpdateRequestCompleted {
                message: message(u),
            },
        );
    }
    let name = ours[0]
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)");
    (
        Error,
        Detail::UpdateRequestStuck {
            name: name.to_string(),
            state: state(ours[0]).to_string(),
            controller: BACKGROUND_SA.1.to_string(),
        },
    )
}

/// A failed UpdateRequest: its own message, and whether the controller may create the kind.
pub(super) async fn failed_ur(live: &Live, msg: &str, want: &ObjRef) -> Detail {
    let (sa_ns, sa) = BACKGROUND_SA;
    let id = Identity::service_account(sa_ns, sa);
    let Some((group, resource)) = resource_of(live, want).await else {
        return Detail::UpdateRequestFailedUnserved {
            message: msg.to_string(),
            kind: want.kind.clone(),
            api_version: want.api_version.clone(),
        };
    };
    let q = AccessQuery {
        user: id.user.clone(),
        groups: id.groups,
        verb: "create".into(),
        group: group.clone(),
        resource: resource.clone(),
        namespace: want.namespace.clone().unwrap_or_default(),
        ..AccessQuery::default()
    };
    let can = live.can_i(&q).await.ok().map(|a| a.allowed);
    Detail::UpdateRequestFailed {
        message: msg.to_string(),
        user: id.user.clone(),
        resource: if group.is_empty() {
            resource
        } else {
            format!("{resource}.{group}")
        },
        can,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_are_named_uniquely_and_labelled() {
        let lab_src = crate::content::lab::Lab {
            id: "demo".into(),
            title: crate::content::Text::plain("t"),
            dir: ".".into(),
            workspace_name: "demo".into(),
            ..Default::default()
        };
        let check = Check {
            id: "gen".into(),
            title: None,
            points: 1,
            timeout: Duration::from_secs(1),
            on_fail: None,
            on_pass: None,
            guard: false,
            spec: Spec::Command {
                run: vec!["true".into()],
                env: Default::default(),
                stdin: None,
                exit: crate::content::lab::ExitWant::Code(0),
                stdout: vec![],
                stderr: vec![],
                skip_exit: None,
            },
        };
        let tpl = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"generateName": "t-"}});
        let t = trigger_object(&lab_src, &check, &tpl);
        let name = t.pointer("/metadata/name").and_then(Value::as_str).unwrap();
        assert!(name.starts_with("t-") && name.len() == 8, "{name}");
        assert_eq!(
            t.pointer("/metadata/labels/kca.dev~1lab"),
            Some(&Value::from("demo"))
        );
        assert_eq!(
            t.pointer("/metadata/labels/kca.dev~1probe"),
            Some(&Value::from("trigger"))
        );
        assert!(t.pointer("/metadata/generateName").is_none());
    }
}
