//! What can go wrong talking to a cluster, said in the learner's language with what to do
//! next: every `LiveError` is an environment error (`error`), never a learner's `fail`.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// No answer from the API server: connection refused, DNS, TLS, credentials plugin.
    #[error("cannot reach the cluster: {0}")]
    Unreachable(String),
    #[error("timed out: {0}")]
    Timeout(String),
    /// The server answered with an error that is not an admission outcome.
    #[error("the API server answered {code}: {message}")]
    Api { code: u16, message: String },
    /// The kubeconfig is missing or does not name a usable context.
    #[error("kubeconfig: {0}")]
    Config(String),
    /// The request cannot be made: an object without kind or name, a kind the server does
    /// not serve.
    #[error("{0}")]
    Unsupported(String),
    /// The server does not serve this kind (no CRD; an API too new for it, such as
    /// ValidatingAdmissionPolicy before Kubernetes 1.30): a check needing it cannot be judged.
    #[error("the cluster does not serve {kind} in {api_version}")]
    NotServed { api_version: String, kind: String },
}

impl LiveError {
    /// The message in both languages (`to_string` is the English one); what the server
    /// or the client library said stays as data.
    fn said(&self) -> crate::error::Msg {
        let ja = match self {
            LiveError::Unreachable(why) => format!("クラスターにつながりません: {why}"),
            LiveError::Timeout(what) => format!("時間切れです: {what}"),
            LiveError::Api { code, message } => {
                format!("API サーバーが {code} を返しました: {message}")
            }
            LiveError::Config(why) => format!("kubeconfig: {why}"),
            LiveError::Unsupported(why) => format!("このリクエストは送れません: {why}"),
            LiveError::NotServed { api_version, kind } => {
                format!("クラスターは {api_version} の {kind} を提供していません")
            }
        };
        crate::error::msg(ja, self.to_string())
    }

    /// [`LiveError::hint`] in both languages.
    fn hint_said(&self) -> crate::error::Msg {
        let ja = match self {
            LiveError::Unreachable(_) | LiveError::Timeout(_) => {
                "クラスターが動いているか (`kca cluster status`)、kubeconfig のコンテキストがそのクラスターを指しているかを確かめてください"
            }
            LiveError::Config(_) => {
                "--kubeconfig か --context を指定するか、KUBECONFIG を設定するか、`kca cluster up` でコースのクラスターを作ってください"
            }
            LiveError::Api { code: 401, .. } => {
                "kubeconfig の認証情報が拒まれました。ログインし直すか、別の --context を選んでください"
            }
            LiveError::Api { .. } => {
                "上の API サーバーのメッセージを見てください。-v を付けると詳しく表示します"
            }
            LiveError::Unsupported(_) | LiveError::NotServed { .. } => {
                "クラスターはこの種類を提供していません。CRD (Kyverno など) は入っていますか? `kca cluster status` で確かめてください"
            }
        };
        crate::error::msg(ja, self.hint_en())
    }

    /// What to do, in English.
    fn hint_en(&self) -> &'static str {
        match self {
            LiveError::Unreachable(_) | LiveError::Timeout(_) => {
                "check that the cluster is running (`kca cluster status`) and that the kubeconfig context points at it"
            }
            LiveError::Config(_) => {
                "pass --kubeconfig/--context, set KUBECONFIG, or create the course cluster with `kca cluster up`"
            }
            LiveError::Api { code: 401, .. } => {
                "the kubeconfig's credentials were refused; log in again or pick another --context"
            }
            LiveError::Api { .. } => {
                "look at the API server's message above; run again with -v for details"
            }
            LiveError::Unsupported(_) | LiveError::NotServed { .. } => {
                "the cluster does not serve this kind; is the CRD (e.g. Kyverno) installed? see `kca cluster status`"
            }
        }
    }
}

/// The files a kubeconfig is read from: `KUBECONFIG` (a list), else `~/.kube/config`.
pub(super) fn kubeconfig_paths() -> Vec<std::path::PathBuf> {
    match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        Some(v) => std::env::split_paths(&v).collect(),
        None => std::env::var_os("HOME")
            .map(|h| vec![Path::new(&h).join(".kube/config")])
            .unwrap_or_default(),
    }
}

/// Why no kubeconfig could be read, in the learner's language: the files that do not
/// exist by name (shown as paths, not quoted), else kube's own reason for the file.
pub(super) fn unreadable_kubeconfig(
    paths: &[std::path::PathBuf],
    e: &impl std::fmt::Display,
) -> String {
    let lang = crate::settings::chosen();
    let shown = |ps: &[&std::path::PathBuf]| {
        ps.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let missing: Vec<&std::path::PathBuf> = paths.iter().filter(|p| !p.exists()).collect();
    if paths.is_empty() {
        return crate::ui::tr(
            lang,
            "ありません (KUBECONFIG も HOME も設定されていません)",
            "none (neither KUBECONFIG nor HOME is set)",
        )
        .into();
    }
    if missing.len() == paths.len() {
        let m = shown(&missing);
        return crate::ui::tr_s(
            lang,
            format!("{m} がありません"),
            format!("{m} does not exist"),
        );
    }
    let all: Vec<&std::path::PathBuf> = paths.iter().collect();
    let p = shown(&all);
    crate::ui::tr_s(
        lang,
        format!("{p} を読めません: {e}"),
        format!("cannot read {p}: {e}"),
    )
}

/// Cluster trouble is never the learner's fault: it maps to an environment error (exit 3).
impl From<LiveError> for crate::error::Error {
    fn from(e: LiveError) -> Self {
        crate::error::Error::environment(e.said(), e.hint_said())
    }
}
