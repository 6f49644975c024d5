//! Evaluates a lab's checks against a real cluster through `target::live::Live` (never
//! kube-rs directly): objects, access reviews, server-side dry runs, and real triggers for
//! `generated` checks, which are always deleted again, on Ctrl-C too.

use std::time::Duration;

use tokio::time::Instant;

use serde_json::Value;

use super::check::{self, Outcome, Submission};
use super::offline::expected_generated;
use super::tree::partial_match;
use crate::content::lab::{Check, Denier, Expect, Lab, ObjSel, Spec};
use crate::target::live::{Live, LiveError};
use crate::target::{AccessQuery, Identity, ObjRef, Operation};
use crate::ui::Printer;

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
            Ok(None) => Outcome::error("not a local check"),
            Err(e) => Outcome::error(format!("the check crashed: {e}")),
        };
    }
    match unserved(live, check).await {
        Ok(Some(skip)) => return skip,
        Ok(None) => {}
        Err(e) => return Outcome::error(e.to_string()),
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

/// The (apiVersion, kind)s a check needs the server to serve: what it reads, probes or
/// creates, and ValidatingAdmissionPolicy for a check that expects one to deny.
fn needed_apis(check: &Check) -> Vec<(String, String)> {
    let of = |v: &Value| {
        let s = |p: &str| {
            v.pointer(p)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        (s("/apiVersion"), s("/kind"))
    };
    let sel = |o: &ObjSel| (o.api_version.clone(), o.kind.clone());
    let mut out = match &check.spec {
        Spec::Resource { target, .. } => vec![sel(target)],
        Spec::Admission { probe, expect, .. } => {
            let mut v = vec![of(&probe.object)];
            if let Expect::Denied(Some(Denier::Vap { .. })) = expect {
                v.push((VAP_API.into(), "ValidatingAdmissionPolicy".into()));
                v.push((VAP_API.into(), "ValidatingAdmissionPolicyBinding".into()));
            }
            v
        }
        Spec::Generated {
            trigger, expect, ..
        } => vec![of(&trigger.object), sel(expect)],
        _ => Vec::new(),
    };
    out.retain(|(a, k)| !a.is_empty() && !k.is_empty());
    out
}

const VAP_API: &str = "admissionregistration.k8s.io/v1";

/// Why a kind may be missing, when kca knows (ValidatingAdmissionPolicy is GA from 1.30).
fn why_unserved(api_version: &str, kind: &str) -> &'static str {
    match (api_version, kind) {
        (VAP_API, "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding") => {
            " (Kubernetes serves it from 1.30, or when the API is turned on)"
        }
        (a, _) if a.starts_with("kyverno.io/") || a.starts_with("policies.kyverno.io/") => {
            " (is Kyverno installed? see `kca cluster status`)"
        }
        _ => "",
    }
}

/// `Skipped` with the reason when the server does not serve an API the check needs: the
/// check cannot be judged here, which is neither the learner's fault nor worth a retry.
async fn unserved(live: &Live, check: &Check) -> Result<Option<Outcome>, LiveError> {
    let mut missing = Vec::new();
    for (api_version, kind) in needed_apis(check) {
        if !live.serves(&api_version, &kind).await? {
            missing.push(format!(
                "{kind} ({api_version}){}",
                why_unserved(&api_version, &kind)
            ));
        }
    }
    Ok((!missing.is_empty()).then(|| {
        Outcome::skipped(format!(
            "the cluster does not serve {}; this check cannot be judged on it",
            missing.join(", ")
        ))
    }))
}

/// What to apply instead of the whole folder, in both languages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyAdvice {
    pub ja: String,
    pub en: String,
}

/// When workspace files hold kinds the server does not serve (a ValidatingAdmissionPolicy
/// on a server before 1.30), `kubectl apply -f DIR/` fails on them: name those files and
/// the command that applies the others. None when the server takes every file.
pub async fn apply_advice(live: &Live, lab: &Lab, ws: &std::path::Path) -> Option<ApplyAdvice> {
    let mut served: std::collections::HashMap<(String, String), bool> = Default::default();
    let (mut refused, mut fine, mut kinds) = (Vec::new(), Vec::new(), Vec::new());
    for rel in super::workspace::list_files(ws) {
        let yaml = matches!(
            rel.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let applied = lab.apply.is_empty() || lab.apply.iter().any(|a| rel.starts_with(a));
        if !yaml || !applied {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(ws.join(&rel)) else {
            continue;
        };
        let docs = crate::yaml::parse_json_stream(&text).unwrap_or_default();
        let mut ok = true;
        for d in &docs {
            let Some(r) = ObjRef::of(d) else { continue };
            let key = (r.api_version.clone(), r.kind.clone());
            let yes = match served.get(&key) {
                Some(v) => *v,
                None => {
                    let v = live.serves(&key.0, &key.1).await.unwrap_or(true);
                    served.insert(key.clone(), v);
                    v
                }
            };
            if !yes {
                ok = false;
                if !kinds.contains(&key.1) {
                    kinds.push(key.1.clone());
                }
            }
        }
        let shown = rel.to_string_lossy().into_owned();
        if ok {
            fine.push(shown)
        } else {
            refused.push(shown)
        }
    }
    if refused.is_empty() {
        return None;
    }
    let dirs: Vec<String> = {
        let mut d: Vec<String> = refused
            .iter()
            .map(|f| match f.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/"),
                None => ".".to_string(),
            })
            .collect();
        d.dedup();
        d
    };
    let others = if fine.is_empty() {
        None
    } else {
        Some(format!(
            "kubectl apply {}",
            fine.iter()
                .map(|f| format!("-f {f}"))
                .collect::<Vec<_>>()
                .join(" ")
        ))
    };
    let (kinds, refused) = (kinds.join(", "), refused.join(", "));
    let dirs = dirs
        .iter()
        .map(|d| format!("`kubectl apply -f {d}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(ApplyAdvice {
        ja: format!(
            "このクラスターは {kinds} を提供していません(ValidatingAdmissionPolicy は Kubernetes 1.30 から)。{dirs} は {refused} で失敗します。{}これらが必要なチェックは skipped になります。",
            others.as_ref().map_or(String::new(), |c| format!(
                "代わりに残りのファイルを適用してください: `{c}`。"
            ))
        ),
        en: format!(
            "this cluster does not serve {kinds} (ValidatingAdmissionPolicy needs Kubernetes 1.30+): {dirs} fails on {refused}. {}The checks that need them are skipped.",
            others.as_ref().map_or(String::new(), |c| format!(
                "Apply the other files instead: `{c}`. "
            ))
        ),
    })
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

/// Each named policy must be in the cluster and Ready before a check relies on it (shared
/// by admission and generated checks): `Some(fail)` naming the first that is not.
async fn require_policies(
    live: &Live,
    policies: &[String],
    namespace: &str,
    timeout: Duration,
) -> Result<Option<Outcome>, LiveError> {
    for p in policies {
        let Some(r) = find_policy(live, p, namespace).await? else {
            return Ok(Some(Outcome::fail(format!(
                "policy `{p}` is not in the cluster; apply it with `kubectl apply -f`"
            ))));
        };
        if !live.wait_ready(&r, timeout).await? {
            return Ok(Some(Outcome::fail(format!(
                "{r} did not become Ready within {}s; see `kubectl describe` for its status",
                timeout.as_secs()
            ))));
        }
    }
    Ok(None)
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
    if let Some(not_ready) = require_policies(live, policies, ns, check.timeout).await? {
        return Ok(not_ready);
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
async fn accepted(live: &Live, env: Submission<'_>, check: &Check) -> Result<Outcome, LiveError> {
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
    // A policy that is missing or not Ready generates nothing: say so now, not after the
    // whole wait (issue 8, live 4).
    let ns = trig_ref.namespace.as_deref().unwrap_or("default");
    if let Some(not_ready) = require_policies(live, policy.as_slice(), ns, check.timeout).await? {
        return Ok(not_ready);
    }
    let want = expected_generated(expect, &trig);
    let created = live.create(&trig).await?;
    let uid = created
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(str::to_string);
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
        let (verdict, why) = explain(live, &trig_ref, uid.as_deref(), &want).await;
        outcome.verdict = verdict;
        outcome
            .detail
            .push_str(&format!(" within {}s; {why}", check.timeout.as_secs()));
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

/// Whether an UpdateRequest was made for this trigger: Kyverno 1.19 names the trigger in
/// `spec.ruleContext[].trigger` (and older releases in `spec.resource`; the admission
/// request in `spec.context` names it too) — see `api/kyverno/v2/updaterequest_types.go`
/// and `pkg/webhooks/resource/generation/handler.go`. A UID, where both sides have one,
/// decides; else kind, namespace and name (trigger names carry a random suffix).
fn names_trigger(ur: &Value, trig: &ObjRef, uid: Option<&str>) -> bool {
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

/// The course's diagnosis order, on the UpdateRequest of this trigger: none means the rule
/// did not match (the learner's to fix); a failed one means the background controller could
/// not do it (often permissions); one still pending means the controller is not working,
/// which is the environment's fault (ERROR, not FAIL).
async fn explain(
    live: &Live,
    trig: &ObjRef,
    uid: Option<&str>,
    want: &ObjRef,
) -> (check::Verdict, String) {
    use check::Verdict::{Error, Fail};
    let urs = match live
        .list("kyverno.io/v2", "UpdateRequest", Some("kyverno"), "")
        .await
    {
        Ok(l) => l,
        Err(e) => return (Error, format!("could not list UpdateRequests: {e}")),
    };
    let ours: Vec<&Value> = urs.iter().filter(|u| names_trigger(u, trig, uid)).collect();
    let state = |u: &Value| {
        u.pointer("/status/state")
            .and_then(Value::as_str)
            .unwrap_or("Pending")
            .to_string()
    };
    let message = |u: &Value| {
        u.pointer("/status/message")
            .and_then(Value::as_str)
            .filter(|m| !m.is_empty())
            .unwrap_or("(no message)")
            .to_string()
    };
    let pick = |want: &str| ours.iter().find(|u| state(u) == want).copied();
    if ours.is_empty() {
        return (
            Fail,
            "no UpdateRequest was created for the trigger: the generate rule did not match \
             it (check its match/exclude and preconditions)"
                .into(),
        );
    }
    if let Some(u) = pick("Failed") {
        return (Fail, failed_ur(live, &message(u), want).await);
    }
    if let Some(u) = pick("Skip") {
        return (
            Fail,
            format!(
                "the background controller skipped the UpdateRequest: {}",
                message(u)
            ),
        );
    }
    if let Some(u) = pick("Completed") {
        return (
            Fail,
            format!(
                "the UpdateRequest completed without generating it: {}",
                message(u)
            ),
        );
    }
    let name = ours[0]
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("(unnamed)");
    (
        Error,
        format!(
            "UpdateRequest {name} for the trigger is still {}: Kyverno's background controller \
             is not processing it (is `{}` running? see `kca cluster status`)",
            state(ours[0]),
            BACKGROUND_SA.1
        ),
    )
}

/// A failed UpdateRequest: its own message, and whether the controller may create the kind.
async fn failed_ur(live: &Live, msg: &str, want: &ObjRef) -> String {
    let (sa_ns, sa) = BACKGROUND_SA;
    let id = Identity::service_account(sa_ns, sa);
    let Some((group, resource)) = resource_of(live, want).await else {
        return format!(
            "the UpdateRequest failed: {msg}; the cluster does not serve {} ({})",
            want.kind, want.api_version
        );
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

/// Whether Kyverno can judge the checks of a run, read once per run: admission checks need
/// the admission controller and its webhooks; generated checks need the background
/// controller too. When they are not ready the cluster, not the learner, is at fault.
pub struct KyvernoGate {
    state: Result<crate::cluster::KyvernoState, String>,
}

impl KyvernoGate {
    /// Reads Kyverno's state when a check needs it (one request set per run).
    pub async fn read<'a>(live: &Live, checks: impl IntoIterator<Item = &'a Check>) -> Self {
        let needed = checks
            .into_iter()
            .any(|c| matches!(c.spec, Spec::Admission { .. } | Spec::Generated { .. }));
        let state = if needed {
            crate::cluster::kyverno_state(live)
                .await
                .map_err(|e| format!("cannot tell whether Kyverno is ready: {e}"))
        } else {
            Ok(crate::cluster::KyvernoState::default())
        };
        KyvernoGate { state }
    }

    /// Why `check` cannot be judged here (an ERROR), or None.
    pub fn blocks(&self, check: &Check) -> Option<String> {
        use crate::cluster::{ADMISSION_CONTROLLER, BACKGROUND_CONTROLLER};
        let needs: &[&str] = match check.spec {
            Spec::Admission { .. } => &[ADMISSION_CONTROLLER],
            Spec::Generated { .. } => &[ADMISSION_CONTROLLER, BACKGROUND_CONTROLLER],
            _ => return None,
        };
        let s = match &self.state {
            Ok(s) => s,
            Err(e) => return Some(e.clone()),
        };
        let down: Vec<String> = needs
            .iter()
            .filter_map(|n| {
                let d = s.deployments.iter().find(|d| d.name == *n);
                match d {
                    Some(d) if d.rolled_out => None,
                    Some(d) => Some(format!("{n} {}", d.ready)),
                    None => Some(format!("{n} absent")),
                }
            })
            .collect();
        let webhooks = s.validating_webhooks > 0 && s.mutating_webhooks > 0;
        if down.is_empty() && webhooks {
            return None;
        }
        let mut why = Vec::new();
        if !down.is_empty() {
            why.push(format!("not ready: {}", down.join(", ")));
        }
        if !webhooks {
            why.push(format!(
                "webhooks: {} validating, {} mutating",
                s.validating_webhooks, s.mutating_webhooks
            ));
        }
        Some(format!(
            "Kyverno cannot judge this check in this cluster ({}); see `kca cluster status`",
            why.join("; ")
        ))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn state(background: bool) -> crate::cluster::KyvernoState {
        let dep = |name: &str, rolled_out: bool| crate::cluster::DeploymentState {
            name: name.into(),
            present: true,
            ready: if rolled_out { "1/1" } else { "0/0" }.into(),
            rolled_out,
            image: None,
        };
        crate::cluster::KyvernoState {
            deployments: vec![
                dep(crate::cluster::ADMISSION_CONTROLLER, true),
                dep(crate::cluster::BACKGROUND_CONTROLLER, background),
            ],
            validating_webhooks: 1,
            mutating_webhooks: 1,
        }
    }

    fn check_of(spec: Spec) -> Check {
        Check {
            id: "c".into(),
            title: None,
            points: 1,
            timeout: Duration::from_secs(1),
            on_fail: None,
            on_pass: None,
            spec,
        }
    }

    #[test]
    fn without_a_background_controller_generated_checks_error_and_admission_checks_run() {
        use crate::content::lab::Probe;
        let obj = serde_json::json!({"apiVersion": "v1", "kind": "Pod"});
        let probe = Probe {
            source: None,
            object: obj,
        };
        let admission = check_of(Spec::Admission {
            probe: probe.clone(),
            update: false,
            user: None,
            expect: Expect::Allowed,
            assert: None,
            policies: vec![],
        });
        let generated = check_of(Spec::Generated {
            trigger: probe,
            expect: ObjSel {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: None,
                name: "x".into(),
            },
            matches: None,
            policy: None,
            sync: None,
        });
        let down = KyvernoGate {
            state: Ok(state(false)),
        };
        assert_eq!(down.blocks(&admission), None);
        let why = down.blocks(&generated).expect("generated is blocked");
        assert!(why.contains("kyverno-background-controller 0/0"), "{why}");
        let up = KyvernoGate {
            state: Ok(state(true)),
        };
        assert_eq!(up.blocks(&generated), None);
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
