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
    #[command(
        after_help = "Examples:\n  kca cluster up\n  kca cluster up --no-kyverno\n\nNeeds kind, helm, kubectl and Docker or Podman (kca says which is missing).\nExit codes: 0 ready, 3 environment error (a tool missing, a timeout)."
    )]
    Up(UpArgs),
    /// Delete the course's kind cluster `kca`
    #[command(after_help = "Examples:\n  kca cluster down")]
    Down,
    /// Show the cluster: context, server version, Kyverno readiness, lab marker
    #[command(
        after_help = "Examples:\n  kca cluster status\n  kca cluster status --context kind-kca -o json\n\nExit codes: 0 Kyverno ready, 1 reachable but not ready, 3 unreachable."
    )]
    Status(TargetArgs),
    /// Mark another context's cluster as a kca lab cluster, so labs may reset objects in it
    #[command(
        after_help = "Examples:\n  kca cluster adopt --context my-lab-cluster\n\nOnly on a cluster you own for the course: `lab reset` deletes the lab's objects there."
    )]
    Adopt(TargetArgs),
}

#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// Skip the Kyverno install (cluster only)
    #[arg(long)]
    pub no_kyverno: bool,
}
