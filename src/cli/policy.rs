//! `kca policy …` arguments.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Run Kyverno CLI test files (kyverno-test.yaml) found under the given folders
    #[command(
        after_help = "Examples:\n  kca policy test tests/\n  kca policy test tests/ -o junit > policy-tests.xml\n\nExit codes: 0 every row as expected, 1 a row differs, 2 unreadable test files."
    )]
    Test(TestArgs),
    /// Apply policies to resources, like `kyverno apply` (exit 1 when a rule fails)
    #[command(
        after_help = "Examples:\n  kca policy apply policies/ --resource render.yaml\n  kca policy apply policies/require-limits.yaml -r pod.yaml -o json\n\nExit codes: 0 no rule failed, 1 a rule failed or erred, 2 usage error; with --warn-exit-code N, N when a rule only warned (or, with --warn-no-pass, when no rule passed)."
    )]
    Apply(ApplyArgs),
    /// Graders of the course's labs (kca-gates, kca-operations), run by their checks in the workspace
    #[command(hide = true, subcommand)]
    Grader(GraderCommand),
}

#[derive(Debug, Subcommand)]
pub enum GraderCommand {
    /// Render a kustomize folder (`kubectl kustomize`, once per content) and run a grading
    /// policy on the parsed render: every rule must pass, and at least one must apply
    Render { dir: PathBuf, policy: PathBuf },
    /// Run a grading policy on the objects of files: every rule must pass, and at least
    /// one must apply (a message `Japanese / English` is said in the learner's language)
    Files {
        /// The grading policy
        policy: PathBuf,
        /// Files holding the objects graded
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run the learner's gate on a render it must let through (`pass`) or stop (`stop`)
    Gate {
        /// pass | stop
        want: String,
        /// prod | base | latest-back | no-digest | mixed | empty | digest-elsewhere |
        /// policy-swap
        variant: String,
        #[arg(long, default_value = "ci/gate.sh")]
        gate: PathBuf,
        #[arg(long, default_value = "policy/require-pinned.yaml")]
        policy: PathBuf,
    },
    /// The learner's Kyverno tests must pass on the real policy and fail on a broken copy
    /// of it (read in its place, in this process: the workspace is not copied)
    Catches {
        /// The broken copy of the policy
        broken: PathBuf,
        /// The folder of the learner's kyverno-test.yaml files
        #[arg(long, default_value = "tests")]
        tests: PathBuf,
        /// The policy the broken copy stands in for
        #[arg(long, default_value = "policies/require-run-as-non-root.yaml")]
        policy: PathBuf,
    },
    /// Each Service must select the Pods of exactly the workload named for it
    Selects {
        /// The file holding the Services
        #[arg(long)]
        services: PathBuf,
        /// Files holding the workloads (Deployments, Rollouts, …)
        #[arg(long = "workloads", num_args = 1..)]
        workloads: Vec<PathBuf>,
        /// SERVICE=KIND/NAME, one per Service
        #[arg(long = "want", num_args = 1..)]
        want: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
pub struct TestArgs {
    /// Folders (searched recursively) or kyverno-test.yaml files [default: .]
    pub paths: Vec<PathBuf>,
    /// Show only rows that did not pass
    #[arg(long)]
    pub failures_only: bool,
    /// Name of the test files to look for
    #[arg(long, short = 'f', default_value = "kyverno-test.yaml")]
    pub file_name: String,
    /// Run only matching rows, e.g. "policy=require-*, rule=*, resource=web"
    #[arg(long, value_name = "SELECTOR")]
    pub test_case_selector: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ApplyArgs {
    /// Policy files (ClusterPolicy / Policy)
    #[arg(required = true)]
    pub policies: Vec<PathBuf>,
    /// Resource file, or `-` for stdin (repeatable)
    #[arg(long = "resource", short = 'r', required = true)]
    pub resources: Vec<PathBuf>,
    /// Kyverno values file (kind: Values): variables, namespace labels
    #[arg(long = "values-file", short = 'f')]
    pub values_file: Option<PathBuf>,
    /// User info file (kind: UserInfo) for match/exclude on subjects and roles
    #[arg(long = "userinfo", short = 'u')]
    pub userinfo: Option<PathBuf>,
    /// PolicyException files (repeatable)
    #[arg(long = "exception", short = 'e')]
    pub exceptions: Vec<PathBuf>,
    /// Admission operation to simulate
    #[arg(long, default_value = "CREATE")]
    pub operation: String,
    /// Print the mutated resources as YAML on stdout
    #[arg(long)]
    pub print_mutated: bool,
    /// Exit code when a rule warned and none failed or erred (as `kyverno apply`)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warn_exit_code: u8,
    /// Exit with the --warn-exit-code code when no rule passed (nothing was checked)
    #[arg(long)]
    pub warn_no_pass: bool,
}
