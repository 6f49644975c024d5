//! Which cluster a lab command talks to, and the lab-cluster marker (a labelled ConfigMap in
//! `kube-public`) that lets destructive lab steps touch a cluster: the guard every lab
//! command connects through.

use super::*;

/// Which cluster a command talks to.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
}

impl From<&TargetArgs> for Selection {
    fn from(a: &TargetArgs) -> Self {
        Selection {
            kubeconfig: a.kubeconfig.clone(),
            context: a.context.clone(),
        }
    }
}

impl Selection {
    /// The course's kind cluster in the default kubeconfig.
    pub fn course() -> Self {
        Selection {
            kubeconfig: None,
            context: Some(KIND_CONTEXT.to_string()),
        }
    }

    pub(super) fn describe(&self, live: Option<&Live>) -> String {
        let ctx = self.context_of(live, "(current context)");
        match &self.kubeconfig {
            Some(k) => format!("context `{ctx}` in {}", k.display()),
            None => format!("context `{ctx}`"),
        }
    }

    /// [`Self::describe`] in Japanese, for the Japanese half of a message.
    pub(super) fn describe_ja(&self, live: Option<&Live>) -> String {
        let ctx = self.context_of(live, "(現在のコンテキスト)");
        match &self.kubeconfig {
            Some(k) => format!("{} のコンテキスト `{ctx}`", k.display()),
            None => format!("コンテキスト `{ctx}`"),
        }
    }

    /// The context's name: the connection's, the one asked for, else `current`.
    fn context_of<'a>(&'a self, live: Option<&'a Live>, current: &'a str) -> &'a str {
        live.and_then(Live::context_name)
            .or(self.context.as_deref())
            .unwrap_or(current)
    }
}

// ---- the marker ----

/// The marker object for a cluster marked by `how` (e.g. `kca cluster up`).
pub fn marker_object(how: &str, context: Option<&str>) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": MARKER_NAME,
            "namespace": MARKER_NAMESPACE,
            "labels": {
                MARKER_LABEL: "true",
                "app.kubernetes.io/managed-by": "kca",
            },
        },
        "data": {
            "markedBy": how,
            "context": context.unwrap_or(""),
            "markedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        },
    })
}

pub(super) fn marker_ref() -> ObjRef {
    ObjRef::new("v1", "ConfigMap", Some(MARKER_NAMESPACE), MARKER_NAME)
}

/// True when the cluster carries kca's lab-cluster marker.
pub async fn is_lab_cluster(live: &Live) -> Result<bool, LiveError> {
    Ok(live
        .get(&marker_ref())
        .await?
        .and_then(|cm| {
            cm.pointer(&format!(
                "/metadata/labels/{}",
                MARKER_LABEL.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .map(|v| v == "true")
        })
        .unwrap_or(false))
}

/// Marks the cluster as a kca lab cluster (idempotent).
pub async fn mark_lab_cluster(live: &Live, how: &str) -> Result<(), LiveError> {
    live.apply(&marker_object(how, live.context_name()))
        .await
        .map(|_| ())
}

/// Removes the marker; a cluster without one is fine.
pub async fn unmark_lab_cluster(live: &Live) -> Result<(), LiveError> {
    live.delete(&marker_ref()).await
}

// ---- connecting for labs ----

/// Connects to the selected cluster for a lab: it must answer (else an environment error),
/// and when `need_marked`, carry the lab-cluster marker (else an environment error naming
/// `kca cluster up` / `kca cluster adopt`). Async because the client lives on the caller's
/// runtime.
pub async fn ensure_cluster(ctx: &Ctx, sel: &Selection, need_marked: bool) -> Result<Live> {
    let live = connect(sel).await?;
    let (major, minor) = live
        .server_version()
        .await
        .map_err(|e| unreachable_error(sel, &live, e))?;
    ctx.printer.verbose(&format!(
        "connected to {} (Kubernetes {major}.{minor})",
        sel.describe(Some(&live))
    ));
    if need_marked && !is_lab_cluster(&live).await? {
        let ctx_name = live.context_name().unwrap_or("NAME").to_string();
        let at = sel.describe(Some(&live));
        let at_ja = sel.describe_ja(Some(&live));
        return Err(Error::environment(
            crate::error::msg(
                format!(
                    "{at_ja} のクラスターには kca のラボ用の印がありません。kca がラボのオブジェクトを消すのはラボ用のクラスターだけです"
                ),
                format!(
                    "the cluster at {at} is not marked as a kca lab cluster; kca only deletes lab objects in lab clusters"
                ),
            ),
            crate::error::msg(
                format!(
                    "コースのクラスター (`kca cluster up`) を使うか、このクラスターに印を付けます: `kca cluster adopt --context {ctx_name}`"
                ),
                format!(
                    "use the course cluster (`kca cluster up`), or mark this one: `kca cluster adopt --context {ctx_name}`"
                ),
            ),
        ));
    }
    Ok(live)
}

pub(super) async fn connect(sel: &Selection) -> Result<Live> {
    Live::connect(sel.kubeconfig.as_deref(), sel.context.as_deref())
        .await
        .map_err(Error::from)
}

pub(super) fn unreachable_error(sel: &Selection, live: &Live, e: LiveError) -> Error {
    let is_course = live.context_name() == Some(KIND_CONTEXT);
    match e {
        e @ (LiveError::Unreachable(_) | LiveError::Timeout(_)) => {
            let at = sel.describe(Some(live));
            let at_ja = sel.describe_ja(Some(live));
            Error::environment_with(
                crate::error::msg(
                    format!("{at_ja} のクラスターが答えません"),
                    format!("the cluster at {at} does not answer"),
                ),
                if is_course {
                    crate::error::msg(
                        "`kca cluster up` でコースのクラスターを起動します (コンテナーエンジンは動いていますか?)",
                        "start the course cluster with `kca cluster up` (is the container engine running?)",
                    )
                } else {
                    crate::error::msg(
                        "クラスターが動いていて、コンテキストが正しいかを確かめます (`kubectl cluster-info`)",
                        "check that the cluster is running and the context is right (`kubectl cluster-info`)",
                    )
                },
                e,
            )
        }
        other => other.into(),
    }
}
