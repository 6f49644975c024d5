//! Kyverno as the cluster shows it: its Deployments (rolled out, and not scaled to 0), its
//! webhook configurations, and what its background controller may create.

use super::*;

/// Whether a Deployment has rolled out: the controller saw the latest spec, and every
/// desired replica is updated and available.
pub fn rollout_done(dep: &Value) -> bool {
    let n = |p: &str| dep.pointer(p).and_then(Value::as_i64);
    let desired = n("/spec/replicas").unwrap_or(1);
    let generation = n("/metadata/generation").unwrap_or(0);
    let observed = n("/status/observedGeneration").unwrap_or(-1);
    // Scaled to 0 is not ready: nothing would answer the webhook or process requests.
    desired >= 1
        && observed >= generation
        && n("/status/updatedReplicas").unwrap_or(0) >= desired
        && n("/status/availableReplicas").unwrap_or(0) >= desired
        && n("/status/replicas").unwrap_or(0) <= desired
}

pub(super) fn replicas_text(dep: &Value) -> String {
    let n = |p: &str| dep.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    format!(
        "{}/{}",
        n("/status/readyReplicas"),
        dep.pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1)
    )
}

pub(super) async fn wait_for_kyverno(ctx: &Ctx, live: &Live) -> Result<()> {
    let p = &ctx.printer;
    let until = tokio::time::Instant::now() + ROLLOUT_DEADLINE;
    let mut last = String::new();
    loop {
        let k = kyverno_state(live).await?;
        let pending: Vec<String> = k
            .deployments
            .iter()
            .filter(|d| !d.rolled_out)
            .map(|d| format!("{} {}", d.name, d.ready))
            .collect();
        let webhooks_ok = k.validating_webhooks > 0 && k.mutating_webhooks > 0;
        if pending.is_empty() && webhooks_ok {
            p.status(&format!(
                "Kyverno is rolled out; {} validating and {} mutating webhook configurations present",
                k.validating_webhooks, k.mutating_webhooks
            ));
            return Ok(());
        }
        let now = if pending.is_empty() {
            "waiting for Kyverno to register its webhook configurations".to_string()
        } else {
            format!("waiting for {}", pending.join(", "))
        };
        if now != last {
            p.status(&now);
            last = now;
        }
        if tokio::time::Instant::now() >= until {
            let secs = ROLLOUT_DEADLINE.as_secs();
            return Err(Error::environment(
                crate::error::msg(
                    format!("Kyverno が {secs} 秒以内に準備できませんでした ({last})"),
                    format!("Kyverno did not become ready within {secs}s ({last})"),
                ),
                crate::error::msg(
                    "`kubectl -n kyverno get pods` と `kubectl -n kyverno describe pods` を見てから、`kca cluster up` をもう一度実行します",
                    "look at `kubectl -n kyverno get pods` and `kubectl -n kyverno describe pods`; then run `kca cluster up` again",
                ),
            ));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}

/// Kyverno as the cluster shows it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KyvernoState {
    pub deployments: Vec<DeploymentState>,
    pub validating_webhooks: usize,
    pub mutating_webhooks: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeploymentState {
    pub name: String,
    pub present: bool,
    pub ready: String,
    pub rolled_out: bool,
    pub image: Option<String>,
}

impl KyvernoState {
    pub fn ready(&self) -> bool {
        self.deployments.iter().all(|d| d.rolled_out)
            && self.validating_webhooks > 0
            && self.mutating_webhooks > 0
    }
}

pub async fn kyverno_state(live: &Live) -> Result<KyvernoState, LiveError> {
    let found = live
        .list("apps/v1", "Deployment", Some(KYVERNO_NAMESPACE), "")
        .await?;
    let deployments = KYVERNO_DEPLOYMENTS
        .iter()
        .map(|name| {
            let dep = found
                .iter()
                .find(|d| d.pointer("/metadata/name").and_then(Value::as_str) == Some(name));
            DeploymentState {
                name: name.to_string(),
                present: dep.is_some(),
                ready: dep.map(replicas_text).unwrap_or_else(|| "absent".into()),
                rolled_out: dep.is_some_and(rollout_done),
                image: dep
                    .and_then(|d| d.pointer("/spec/template/spec/containers/0/image"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
            }
        })
        .collect();
    let count = |kind: &'static str| async move {
        live.list(
            "admissionregistration.k8s.io/v1",
            kind,
            None,
            KYVERNO_WEBHOOK_SELECTOR,
        )
        .await
        .map(|v| v.len())
    };
    Ok(KyvernoState {
        deployments,
        validating_webhooks: count("ValidatingWebhookConfiguration").await?,
        mutating_webhooks: count("MutatingWebhookConfiguration").await?,
    })
}

/// Whether the background controller may create what the generate lab makes, cluster-wide.
#[derive(Debug, Clone, Serialize)]
pub struct Grant {
    pub group: String,
    pub resource: String,
    pub allowed: bool,
}

/// Asks the authorizer what the background controller may create ([`BACKGROUND_WRITES`]).
pub async fn background_grants(live: &Live) -> Result<Vec<Grant>, LiveError> {
    let id = Identity::service_account(KYVERNO_NAMESPACE, BACKGROUND_SA);
    let mut out = Vec::new();
    for (group, resource) in BACKGROUND_WRITES {
        let q = AccessQuery {
            user: id.user.clone(),
            groups: id.groups.clone(),
            verb: "create".into(),
            group: group.into(),
            resource: resource.into(),
            ..AccessQuery::default()
        };
        out.push(Grant {
            group: group.into(),
            resource: resource.into(),
            allowed: live.can_i(&q).await?.allowed,
        });
    }
    Ok(out)
}

pub(super) fn grant_name(g: &Grant) -> String {
    if g.group.is_empty() {
        g.resource.clone()
    } else {
        format!("{}.{}", g.resource, g.group)
    }
}
