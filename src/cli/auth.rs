//! `kca auth …` arguments.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Check whether an action is allowed, answered from RBAC manifests (like `kubectl auth can-i`)
    #[command(
        name = "can-i",
        after_help = "Examples:\n  kca auth can-i list pods --as system:serviceaccount:dev:foo -n prod -f rbac/\n  kca auth can-i get pods --subresource log --as alice -f role.yaml\n  kca auth can-i update deployments.apps/web --as bob --as-group devs -f rbac.yaml\n  kca auth can-i get /healthz --as alice -f cluster-rbac/\n\nExit code: 0 yes, 1 no, 2 bad arguments or manifests."
    )]
    CanI(CanIArgs),
}

#[derive(Debug, clap::Args)]
pub struct CanIArgs {
    /// A Kubernetes API verb: get, list, watch, create, update, patch, delete, … or '*'
    #[arg(default_value = "")]
    pub verb: String,
    /// TYPE, TYPE/NAME, or a non-resource URL starting with '/' (TYPE: pods, po, deploy,
    /// deployments.apps, clusterpolicies.kyverno.io, '*', …)
    #[arg(default_value = "")]
    pub target: String,
    /// Manifests to load (required): files or folders (searched recursively for *.yaml,
    /// *.yml, *.json); repeatable, or comma-separated
    #[arg(
        short = 'f',
        long = "filename",
        value_name = "PATH",
        value_delimiter = ','
    )]
    pub paths: Vec<PathBuf>,
    /// kubectl's `--list` (every action allowed): not offered offline; kca says so
    #[arg(long, hide = true)]
    pub list: bool,
    /// Subresource such as log (pods/log) or scale (deployments/scale)
    #[arg(long, value_name = "SUBRESOURCE")]
    pub subresource: Option<String>,
    /// User to ask about; `system:serviceaccount:NS:NAME` for a service account
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// Group to ask about (repeatable); replaces a service account's own groups
    #[arg(long = "as-group", value_name = "GROUP")]
    pub as_group: Vec<String>,
    /// Namespace of the request
    #[arg(short = 'n', long, value_name = "NS", default_value = "default")]
    pub namespace: String,
    /// Ask about all namespaces (cluster-wide: only ClusterRoleBindings count)
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
}

/// What clap cannot say well: kubectl habits that kca answers in its own words.
pub fn check_can_i(args: &CanIArgs) -> crate::error::Result<()> {
    use crate::error::{Error, msg};
    if args.list {
        return Err(Error::usage(
            msg(
                "`kca auth can-i --list` はありません: kca は一度に一つの問いに答えます",
                "`kca auth can-i --list` is not offered: kca answers one question at a time",
            ),
            msg(
                "動詞とリソースを一つずつ尋ねます。例: `kca auth can-i list pods --as alice -f rbac/`",
                "ask about one verb and resource, e.g. `kca auth can-i list pods --as alice -f rbac/`",
            ),
        ));
    }
    if args.verb.is_empty() || args.target.is_empty() {
        return Err(Error::usage(
            msg(
                "`kca auth can-i` には動詞 (VERB) とリソースの種類 (TYPE、または URL) が要ります",
                "`kca auth can-i` needs a VERB and a resource TYPE (or a URL)",
            ),
            msg(
                "例: `kca auth can-i get pods --as alice -f rbac/`",
                "e.g. `kca auth can-i get pods --as alice -f rbac/`",
            ),
        ));
    }
    if args.paths.is_empty() {
        return Err(Error::usage(
            msg(
                "`kca auth can-i` はクラスターではなくマニフェストから答えます: -f で渡します",
                "`kca auth can-i` answers from manifests, not from a cluster: give them with -f",
            ),
            msg(
                "例: `kca auth can-i get pods --as alice -f rbac.yaml` (ファイルかフォルダー。クラスターに尋ねるなら `kubectl auth can-i`)",
                "e.g. `kca auth can-i get pods --as alice -f rbac.yaml` (files or folders; for a live cluster use `kubectl auth can-i`)",
            ),
        ));
    }
    Ok(())
}
