//! `kca lab …` arguments.

use std::path::PathBuf;

use clap::Subcommand;

use super::cluster::TargetArgs;

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// List the course's labs and your progress, in module order
    #[command(after_help = "Examples:\n  kca lab list\n  kca lab list -o json")]
    List,
    /// Start a lab: prepare the cluster, apply its fixtures, scaffold the workspace
    #[command(
        after_help = "Examples:\n  kca lab start kca-admission --offline          no cluster: graded in-process\n  kca lab start kca-admission                    on the course's kind cluster (`kca cluster up`)\n  kca lab start kca-mutate --context my-cluster --allow-any-context\n  kca lab start kca-gates --workspace-root ~/work\n\nExit codes: 0 started, 2 usage or content error, 3 environment error (cluster, tools)."
    )]
    Start(StartArgs),
    /// Grade your work (default: the lab you started last)
    #[command(
        after_help = "Examples:\n  kca lab check\n  kca lab check --task policy\n  kca lab check -o junit > results.xml\n\nA check of one task updates that task's results; the lab's score is always over all tasks.\n\nExit codes: 0 every check passed, 1 a check failed, 2 usage or content error,\n3 environment error (errors or skipped checks only: not your work)."
    )]
    Check(CheckArgs),
    /// Show the next hint of a task (remembered: each call shows one more)
    #[command(after_help = "Examples:\n  kca lab hint\n  kca lab hint --task rbac")]
    Hint(HintArgs),
    /// Your progress in each started lab
    #[command(after_help = "Examples:\n  kca lab status\n  kca lab status -o json")]
    Status,
    /// Archive the workspace, restore the starters, and reset the lab's objects
    #[command(
        after_help = "Examples:\n  kca lab reset kca-mutate\n\nYour files are archived in the state folder first (the path is printed); only objects\nlabelled as the lab's are deleted.\n\nExit codes: 0 reset, 2 usage error, 3 environment error (cluster, tools)."
    )]
    Reset(ResetArgs),
    /// For instructors/CI: prove each lab gradable (starter fails, solution passes, each
    /// mutant fails its named checks)
    #[command(
        after_help = "Examples:\n  kca lab verify --offline                 every lab, in-process\n  kca lab verify kca-mutate --offline -o json\n  kca lab verify kca-mutate --live         on a marked lab cluster; lists live/offline differences\n\nExit codes: 0 verified, 1 a lab is not gradable as written, 2 usage or content error,\n3 environment error only (a tool or the cluster, not the lab)."
    )]
    Verify(VerifyArgs),
    /// Scaffold a new lab (one example task of each check kind) that validates as written
    #[command(
        after_help = "Examples:\n  kca lab new my-lab\n  kca validate labs/my-lab && kca lab verify my-lab --offline"
    )]
    New(NewArgs),
    /// Show a lab's tasks and checks, and every program its `command` checks run
    #[command(after_help = "Examples:\n  kca lab show kca-gates\n  kca lab show kca-gates -o json")]
    Show(ShowArgs),
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Lab id (see `kca lab list`)
    pub lab: String,
}

#[derive(Debug, clap::Args)]
pub struct WorkspaceArgs {
    /// Folder under which lab workspaces are created (default: /root as root, else ~)
    #[arg(
        long,
        value_name = "DIR",
        env = "KCA_WORKSPACE_ROOT",
        hide_env_values = true
    )]
    pub workspace_root: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct StartArgs {
    /// Lab id (see `kca lab list`)
    pub lab: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Allow changing a cluster that is not marked as a kca lab cluster
    #[arg(long)]
    pub allow_any_context: bool,
    /// No cluster: scaffold the workspace and grade it offline
    #[arg(long, conflicts_with_all = ["context", "kubeconfig"])]
    pub offline: bool,
    #[command(flatten)]
    pub workspace: WorkspaceArgs,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Lab id (default: the lab you started last)
    pub lab: Option<String>,
    /// Only these tasks' checks (repeat, or separate with commas)
    #[arg(long, value_name = "TASK", value_delimiter = ',')]
    pub task: Vec<String>,
    /// Grade in-process against your workspace manifests, without a cluster
    #[arg(long, conflicts_with_all = ["context", "kubeconfig"])]
    pub offline: bool,
    /// Seed of the probes' varied names, labels and annotations (default: a new one per
    /// run, shown beside a failing probe); the same seed repeats a run
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, clap::Args)]
pub struct HintArgs {
    /// Lab id (default: the lab you started last)
    pub lab: Option<String>,
    /// Task (default: the first task not passed at the last check)
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ResetArgs {
    /// Lab id
    pub lab: String,
    #[command(flatten)]
    pub target: TargetArgs,
    /// Allow deleting objects in a cluster that is not marked as a kca lab cluster
    #[arg(long)]
    pub allow_any_context: bool,
    /// Only the workspace: leave the cluster alone
    #[arg(long, conflicts_with_all = ["context", "kubeconfig"])]
    pub offline: bool,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Lab ids (default: every lab)
    pub labs: Vec<String>,
    /// Evaluate in-process, without a cluster
    #[arg(long, conflicts_with = "live")]
    pub offline: bool,
    /// Apply each variant to the current lab cluster (reset in between), grade it live, and
    /// report every check whose live verdict differs from the offline one
    #[arg(long)]
    pub live: bool,
    /// Seed of the probes' varied names, labels and annotations (default: a new one per run)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub target: crate::cli::cluster::TargetArgs,
}

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// The new lab's id (lowercase letters, digits, `-`)
    pub id: String,
    /// Where to create it (default: the content folder's labs/)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}
