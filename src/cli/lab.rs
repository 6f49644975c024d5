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
    /// Grade your work (default: the lab of the workspace you are in, else the one started last)
    #[command(
        after_help = "Examples:\n  kca lab check\n  kca lab check --all                every task's details\n  kca lab check --task policy\n  kca lab check -o junit > results.xml\n  kca lab check kca-gates --offline --workspace ./submission   (any folder; progress untouched)\n\nA check of one task updates that task's results; the lab's score is always over all tasks.\n\nExit codes: 0 every check passed, 1 a check failed, 2 usage or content error,\n3 environment error (errors or skipped checks only: not your work)."
    )]
    Check(CheckArgs),
    /// Show the next hint of a task (remembered: each call shows one more)
    #[command(
        after_help = "Examples:\n  kca lab hint\n  kca lab hint --task rbac\n  kca lab hint kca-mutate"
    )]
    Hint(HintArgs),
    /// Show a task's instructions again (default: the task you are on)
    #[command(
        after_help = "Examples:\n  kca lab task            the task you are on\n  kca lab task 3\n  kca lab task sidecar --lab kca-mutate\n  kca lab task --list"
    )]
    Task(TaskArgs),
    /// Grade again whenever you save a workspace file, one task on screen
    #[command(
        after_help = "Keys: h next hint, l task list, c every check, q quit.\n\nExamples:\n  kca lab watch\n  kca lab watch kca-mutate"
    )]
    Watch(WatchArgs),
    /// Your progress in each started lab (or in one)
    #[command(
        after_help = "Examples:\n  kca lab status\n  kca lab status kca-mutate\n  kca lab status -o json"
    )]
    Status(StatusArgs),
    /// Archive the workspace, restore the starters, and reset the lab's objects
    #[command(
        after_help = "Examples:\n  kca lab reset              the lab of the workspace you are in\n  kca lab reset kca-mutate\n\nYour files are archived in the state folder first (the path is printed); only objects\nlabelled as the lab's are deleted.\n\nExit codes: 0 reset, 2 usage error, 3 environment error (cluster, tools)."
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
    /// Lab id (default: the lab of the workspace you are in, else the one started last)
    pub lab: Option<String>,
    /// Only these tasks' checks (repeat, or separate with commas)
    #[arg(long, value_name = "TASK", value_delimiter = ',')]
    pub task: Vec<String>,
    /// Every task's details (default: the task you are on; `-v` too)
    #[arg(long)]
    pub all: bool,
    /// Grade in-process against your workspace manifests, without a cluster
    #[arg(long, conflicts_with_all = ["context", "kubeconfig"])]
    pub offline: bool,
    /// Grade this folder (a learner's repository, an LMS upload) instead of a started
    /// lab's workspace: no `lab start` needed, and no progress is read or written
    #[arg(long, value_name = "DIR", requires_all = ["lab", "offline"])]
    pub workspace: Option<PathBuf>,
    #[command(flatten)]
    pub target: TargetArgs,
}

#[derive(Debug, clap::Args)]
pub struct HintArgs {
    /// Lab id (default: the lab of the workspace you are in, else the one started last)
    pub lab: Option<String>,
    /// Task (default: the task that failed at the last check, else the first not passed)
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct TaskArgs {
    /// Task number (1, 2, …) or id (default: the task you are on)
    pub task: Option<String>,
    /// Lab id (default: the lab of the workspace you are in, else the one started last)
    #[arg(long)]
    pub lab: Option<String>,
    /// List the lab's tasks instead
    #[arg(long, short = 'l', conflicts_with = "task")]
    pub list: bool,
}

#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Lab id (default: the lab of the workspace you are in, else the one started last)
    pub lab: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Only this lab
    pub lab: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ResetArgs {
    /// Lab id (default: the lab of the workspace you are in, else the one started last)
    pub lab: Option<String>,
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
