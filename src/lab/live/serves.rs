//! What this cluster can judge: the APIs a check needs (a check needing one the server does
//! not serve is `skipped` at once, with the reason), what to apply instead of a whole folder
//! on such a server, and whether Kyverno's controllers are there for admission and generate
//! checks (when not, those checks are errors: the environment's fault, not the learner's).

use super::*;

/// The (apiVersion, kind)s a check needs the server to serve: what it reads, probes or
/// creates, and ValidatingAdmissionPolicy for a check that expects one to deny.
pub(super) fn needed_apis(check: &Check) -> Vec<(String, String)> {
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

pub(super) const VAP_API: &str = "admissionregistration.k8s.io/v1";

/// Why a kind may be missing, when kca knows (ValidatingAdmissionPolicy is GA from 1.30).
pub(super) fn why_unserved(api_version: &str, kind: &str) -> &'static str {
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
pub(super) async fn unserved(live: &Live, check: &Check) -> Result<Option<Outcome>, LiveError> {
    let mut missing = Vec::new();
    for (api_version, kind) in needed_apis(check) {
        if !live.serves(&api_version, &kind).await? {
            missing.push(format!(
                "{kind} ({api_version}){}",
                why_unserved(&api_version, &kind)
            ));
        }
    }
    Ok((!missing.is_empty()).then(|| Outcome::skipped(Detail::NotServed { apis: missing })))
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
    for rel in crate::lab::workspace::list_files(ws) {
        let yaml = matches!(
            rel.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let applied = lab.apply.is_empty() || lab.apply.iter().any(|a| rel.starts_with(a));
        if !yaml || !applied {
            continue;
        }
        // The learner's files, read as every workspace file is: confined, regular, capped.
        let Ok(Ok(text)) = crate::input::read_within(ws, &rel).map(String::from_utf8) else {
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

/// Whether Kyverno can judge the checks of a run, read once per run: admission checks need
/// the admission controller and its webhooks; generated checks need the background
/// controller too. When they are not ready the cluster, not the learner, is at fault.
pub struct KyvernoGate {
    state: Result<crate::cluster::KyvernoState, crate::target::live::LiveError>,
}

impl KyvernoGate {
    /// Reads Kyverno's state when a check needs it (one request set per run).
    pub async fn read<'a>(live: &Live, checks: impl IntoIterator<Item = &'a Check>) -> Self {
        let needed = checks
            .into_iter()
            .any(|c| matches!(c.spec, Spec::Admission { .. } | Spec::Generated { .. }));
        let state = if needed {
            crate::cluster::kyverno_state(live).await
        } else {
            Ok(crate::cluster::KyvernoState::default())
        };
        KyvernoGate { state }
    }

    /// Why `check` cannot be judged here (an ERROR), or None.
    pub fn blocks(&self, check: &Check) -> Option<Detail> {
        use crate::cluster::{ADMISSION_CONTROLLER, BACKGROUND_CONTROLLER};
        let needs: &[&str] = match check.spec {
            Spec::Admission { .. } => &[ADMISSION_CONTROLLER],
            Spec::Generated { .. } => &[ADMISSION_CONTROLLER, BACKGROUND_CONTROLLER],
            _ => return None,
        };
        let s = match &self.state {
            Ok(s) => s,
            Err(e) => {
                return Some(Detail::KyvernoUnknown {
                    error: e.to_string(),
                });
            }
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
        Some(Detail::KyvernoNotReady {
            down,
            webhooks: (!webhooks).then_some((s.validating_webhooks, s.mutating_webhooks)),
        })
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
            guard: false,
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
            left_alone: false,
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
            left_alone: false,
        });
        let down = KyvernoGate {
            state: Ok(state(false)),
        };
        assert_eq!(down.blocks(&admission), None);
        let why = down.blocks(&generated).expect("generated is blocked");
        assert!(
            why.to_string()
                .contains("kyverno-background-controller 0/0"),
            "{why}"
        );
        let up = KyvernoGate {
            state: Ok(state(true)),
        };
        assert_eq!(up.blocks(&generated), None);
    }
}
