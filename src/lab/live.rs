//! Evaluates a lab's checks against a real cluster through `target::live::Live` (never
//! kube-rs directly): objects, access reviews, server-side dry runs, and real triggers for
//! `generated` checks, which are always deleted again, on Ctrl-C too.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::check::{self, Env, Outcome};
use super::offline::expected_generated;
use super::tree::partial_match;
use crate::content::lab::{Check, Lab, ObjSel, Spec};
use crate::target::live::{Live, LiveError};
use crate::target::{AccessQuery, Identity, ObjRef, Operation};
use crate::ui::Printer;

/// Label on trigger objects, so a run killed outright leaves leftovers the next run finds.
pub const PROBE_LABEL: &str = "kca.dev/probe";

/// The background controller's service account (the course's Kyverno install).
const BACKGROUND_SA: (&str, &str) = ("kyverno", "kyverno-background-controller");

pub async fn evaluate(live: &Live, env: Env<'_>, check: &Check, printer: &Printer) -> Outcome {
    if matches!(check.spec, Spec::File { .. } | Spec::Command { .. }) {
        // Local work (a learner's script may run for a while) must not stall the runtime.
        let (lab, ws, c) = (env.lab.clone(), env.workspace.to_path_buf(), check.clone());
        let local = tokio::task::spawn_blocking(move || {
            check::local(
                Env {
                    lab: &lab,
                    workspace: &ws,
                },
                &c,
            )
        })
        .await;
        return match local {
            Ok(Some(o)) => o,
            Ok(None) => Outcome::error("not a local check"),
            Err(e) => Outcome::error(format!("the check crashed: {e}")),
        };
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
        Spec::Admission { .. } => admission(live, check).await,
        Spec::Generated { .. } => generated(live, env.lab, check, printer).await,
        Spec::Accepted { .. } => accepted(live, env, check).await,
        Spec::File { .. } | Spec::Command { .. } => Ok(Outcome::error("evaluated locally")),
    };
    r.unwrap_or_else(|e| Outcome::error(e.to_string()))
}

fn obj_ref(sel: &ObjSel) -> ObjRef {
    ObjRef {
        api_version: sel.api_version.clone(),
        kind: sel.kind.clone(),
        namespace: sel.namespace.clone(),
        name: sel.name.clone(),
    }
}

async fn resource(
    live: &Live,
    sel: &ObjSel,
    present: bool,
    matches: Option<&Value>,
) -> Result<Outcome, LiveError> {
    let r = obj_ref(sel);
    Ok(match (live.get(&r).await?, present) {
        (None, true) => Outcome::fail(format!("{r} does not exist in the cluster")),
        (None, false) => Outcome::pass(format!("{r} is absent")),
        (Some(_), false) => Outcome::fail(format!("{r} exists; it should not")),
        (Some(obj), true) => match matches.map(|w| partial_match(w, &obj)) {
            None | Some(Ok(())) => Outcome::pass(format!("{r} is there as expected")),
            Some(Err(e)) => Outcome::fail(format!("{r}: {e}")),
        },
    })
}

/// A Kyverno policy by name: a ClusterPolicy, else a Policy in `namespace`.
async fn find_policy(
    live: &Live,
    name: &str,
    namespace: &str,
) -> Result<Option<ObjRef>, LiveError> {
    let cluster = ObjRef::new("kyverno.io/v1", "ClusterPolicy", None, name);
    if live.get(&cluster).await?.is_some() {
        return Ok(Some(cluster));
    }
    let ns = ObjRef::new("kyverno.io/v1", "Policy", Some(namespace), name);
    Ok(live.get(&ns).await?.map(|_| ns))
}

async fn admission(live: &Live, check: &Check) -> Result<Outcome, LiveError> {
    let Spec::Admission {
        probe,
        update,
        user,
        policies,
        ..
    } = &check.spec
    else {
        return Ok(Outcome::error("not an admission check"));
    };
    let ns = probe
        .object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default");
    // A policy that is not Ready yet would let the probe through and blame the learner.
    for p in policies {
        let Some(r) = find_policy(live, p, ns).await? else {
            return Ok(Outcome::fail(format!(
                "policy `{p}` is not in the cluster; apply it with `kubectl apply -f`"
            )));
        };
        if !live.wait_ready(&r, check.timeout).await? {
            return Ok(Outcome::fail(format!(
                "{r} did not become Ready within {}s; see `kubectl describe` for its status",
                check.timeout.as_secs()
            )));
        }
    }
    let op = if *update {
        Operation::Update
    } else {
        Operation::Create
    };
    let who = user
        .as_ref()
        .map(|(u, g)| Identity::user(u.clone(), g.clone()));
    // Webhook configurations and ValidatingAdmissionPolicy bindings reach the API server a
    // moment after they are applied: a probe that misses them is asked again, briefly.
    let settle = check.timeout.min(SETTLE);
    let start = Instant::now();
    loop {
        let got = live.admit(&probe.object, op, who.as_ref()).await?;
        let outcome = check::judge_admission(check, &got);
        if outcome.verdict == check::Verdict::Pass || start.elapsed() >= settle {
            return Ok(outcome);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// `accepted`: the learner's policy file sent as a server-side dry run — an update when
/// the policy exists (a create would only say "already exists"), else a create — so
/// Kyverno's policy validation webhook answers as it would to `kubectl apply`.
async fn accepted(live: &Live, env: Env<'_>, check: &Check) -> Result<Outcome, LiveError> {
    let mut doc = match check::accepted_document(env, check) {
        Ok(d) => d,
        Err(o) => return Ok(o),
    };
    let what = check::document_name(check, &doc);
    let Some(r) = ObjRef::of(&doc) else {
        return Ok(Outcome::fail(format!(
            "{what} has no apiVersion, kind or name"
        )));
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

/// How long an admission probe is retried while its outcome differs from the expected one.
const SETTLE: Duration = Duration::from_secs(8);

/// A short, unlikely-to-collide suffix for trigger names.
fn suffix() -> String {
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

fn trigger_object(lab: &Lab, check: &Check, template: &Value) -> Value {
    let mut t = template.clone();
    super::workspace::label_owned(&mut t, lab);
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

async fn generated(
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
        return Ok(Outcome::error("not a generated check"));
    };
    let trig = trigger_object(lab, check, &trigger.object);
    let Some(trig_ref) = ObjRef::of(&trig) else {
        return Ok(Outcome::error(
            "the trigger has no apiVersion, kind or name",
        ));
    };
    let want = expected_generated(expect, &trig);
    live.create(&trig).await?;
    printer.status(&format!(
        "  {}: created {trig_ref}, waiting for {want}…",
        check.id
    ));
    // The sync step runs while the trigger (and so the generated copy) still exists.
    let wait_and_sync = async {
        let found = await_object(live, &want, check.timeout, printer, &check.id).await?;
        let first = check::judge_generated(check, &want.to_string(), found.as_ref());
        let synced = match (&check.spec, first.verdict) {
            (Spec::Generated { sync: Some(_), .. }, check::Verdict::Pass) => {
                Some(synced(live, lab, check, &want).await?)
            }
            _ => None,
        };
        Ok::<_, LiveError>((found, synced))
    };
    let waited = tokio::select! {
        r = wait_and_sync => Some(r),
        _ = tokio::signal::ctrl_c() => None,
    };
    // Always clean up, whatever happened while waiting.
    let deleted = live.delete(&trig_ref).await;
    let Some(found) = waited else {
        return Ok(Outcome::error(format!(
            "interrupted; {trig_ref} {}",
            if deleted.is_ok() {
                "was deleted"
            } else {
                "could not be deleted (the next run sweeps it)"
            }
        )));
    };
    let (found, synced) = found?;
    let mut outcome =
        synced.unwrap_or_else(|| check::judge_generated(check, &want.to_string(), found.as_ref()));
    if found.is_none() {
        outcome.detail.push_str(&format!(
            " within {}s; {}",
            check.timeout.as_secs(),
            explain(live, &trig_ref, &want, policy.as_deref()).await
        ));
    }
    if let Err(e) = deleted {
        outcome
            .detail
            .push_str(&format!("; could not delete {trig_ref}: {e}"));
    }
    Ok(outcome)
}

/// The `sync` step of a `generated` check: change the (owned) source, wait for the copy
/// to follow, and put the source back whatever happened.
async fn synced(
    live: &Live,
    lab: &Lab,
    check: &Check,
    want: &ObjRef,
) -> Result<Outcome, LiveError> {
    let Spec::Generated {
        sync: Some(step), ..
    } = &check.spec
    else {
        return Ok(Outcome::error("not a generated check with a sync step"));
    };
    let src = obj_ref(&step.source);
    let Some(original) = live.get(&src).await? else {
        return Ok(Outcome::error(format!(
            "the sync source {src} is not in the cluster; `kca lab reset` restores the lab's objects"
        )));
    };
    let owned = lab.owner_labels().iter().all(|(k, v)| {
        original
            .pointer("/metadata/labels")
            .and_then(|l| l.get(*k))
            .and_then(Value::as_str)
            == Some(*v)
    });
    if !owned {
        return Ok(Outcome::error(format!(
            "{src} does not carry the lab's labels; kca changes only its own objects"
        )));
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
        o.detail
            .push_str(&format!("; could not restore {src}: {e}"));
    }
    Ok(o)
}

async fn await_object(
    live: &Live,
    want: &ObjRef,
    deadline: Duration,
    printer: &Printer,
    id: &str,
) -> Result<Option<Value>, LiveError> {
    let start = Instant::now();
    let mut last_note = Instant::now();
    loop {
        if let Some(obj) = live.get(want).await? {
            return Ok(Some(obj));
        }
        if start.elapsed() >= deadline {
            return Ok(None);
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

/// The course's diagnosis order: UpdateRequest first; none means the rule did not match,
/// a failed one means the background controller could not do it (often permissions).
async fn explain(live: &Live, trig: &ObjRef, want: &ObjRef, policy: Option<&str>) -> String {
    let urs = match live
        .list("kyverno.io/v2", "UpdateRequest", Some("kyverno"), "")
        .await
    {
        Ok(l) => l,
        Err(e) => return format!("could not list UpdateRequests: {e}"),
    };
    let ours: Vec<&Value> = urs
        .iter()
        .filter(|u| {
            let s = |p: &str| u.pointer(p).and_then(Value::as_str);
            s("/spec/resource/name") == Some(&trig.name)
                || s("/spec/context/admissionRequestInfo/admissionRequest/name") == Some(&trig.name)
                || policy.is_some_and(|p| s("/spec/policy") == Some(p))
        })
        .collect();
    if ours.is_empty() {
        return "no UpdateRequest was created for the trigger: the generate rule did not match \
                it (check its match/exclude and preconditions)"
            .into();
    }
    let failed = ours
        .iter()
        .find(|u| u.pointer("/status/state").and_then(Value::as_str) == Some("Failed"));
    let Some(u) = failed else {
        return format!(
            "{} UpdateRequest(s) exist but none finished: the background controller may be \
             slow or down",
            ours.len()
        );
    };
    let msg = u
        .pointer("/status/message")
        .and_then(Value::as_str)
        .unwrap_or("(no message)");
    let (sa_ns, sa) = BACKGROUND_SA;
    let id = Identity::service_account(sa_ns, sa);
    let (group, resource) = resource_of(want);
    let q = AccessQuery {
        user: id.user.clone(),
        groups: id.groups,
        verb: "create".into(),
        group: group.clone(),
        resource: resource.clone(),
        namespace: want.namespace.clone().unwrap_or_default(),
        ..AccessQuery::default()
    };
    let can = match live.can_i(&q).await {
        Ok(a) if a.allowed => "yes".to_string(),
        Ok(_) => "no — grant it with a (Cluster)Role and binding".to_string(),
        Err(e) => format!("unknown ({e})"),
    };
    format!(
        "the UpdateRequest failed: {msg}; can {} create {resource}{}? {can}",
        id.user,
        if group.is_empty() {
            String::new()
        } else {
            format!(".{group}")
        }
    )
}

/// The API group and (plural, lowercase) resource of a kind, for access reviews.
pub fn resource_of(r: &ObjRef) -> (String, String) {
    let group = r
        .api_version
        .rsplit_once('/')
        .map_or(String::new(), |(g, _)| g.to_string());
    let k = r.kind.to_lowercase();
    let before_y = k.chars().rev().nth(1);
    let plural = if k.ends_with('y') && !matches!(before_y, Some('a' | 'e' | 'o' | 'u')) {
        format!("{}ies", &k[..k.len() - 1])
    } else if k.ends_with('s') {
        format!("{k}es")
    } else {
        format!("{k}s")
    };
    (group, plural)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plural_resources_for_access_reviews() {
        let r = |a: &str, k: &str| resource_of(&ObjRef::new(a, k, None, "x"));
        assert_eq!(
            r("networking.k8s.io/v1", "NetworkPolicy"),
            ("networking.k8s.io".into(), "networkpolicies".into())
        );
        assert_eq!(r("v1", "ConfigMap"), (String::new(), "configmaps".into()));
        assert_eq!(r("v1", "Ingress"), (String::new(), "ingresses".into()));
    }

    #[test]
    fn triggers_are_named_uniquely_and_labelled() {
        let lab_src = crate::content::lab::Lab {
            id: "demo".into(),
            title: crate::content::Text::plain("t"),
            module: None,
            concepts: vec![],
            description: None,
            dir: ".".into(),
            workspace_name: "demo".into(),
            apply: vec![],
            vars: Default::default(),
            starter: vec![],
            fixtures: vec![],
            tasks: vec![],
            solution: vec![],
            mutants: vec![],
            reset: Default::default(),
        };
        let check = Check {
            id: "gen".into(),
            title: None,
            points: 1,
            timeout: Duration::from_secs(1),
            on_fail: None,
            on_pass: None,
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
