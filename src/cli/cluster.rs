//! `kca cluster …` arguments, and the cluster selection flags other command groups reuse.

use std::path::PathBuf;

use clap::Subcommand;

/// Which cluster to talk to. Without flags: `KUBECONFIG`, else `~/.kube/config`, at its
/// current context (as kubectl does).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TargetArgs {
    /// Kubeconfig file to use (default: KUBECONFIG, else ~/.kube/config)
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use (default: the current context)
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Create the course's kind cluster `kca` and install Kyverno into it
    Up(UpArgs),
    /// Delete the course's kind cluster `kca`
    Down,
    /// Show the cluster: context, server version, Kyverno readiness, lab marker
    Status(TargetArgs),
    /// Mark another context's cluster as a kca lab cluster, so labs may reset objects in it
    Adopt(TargetArgs),
}

#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// Skip the Kyverno install (cluster only)
    #[arg(long)]
    pub no_kyverno: bool,
}
