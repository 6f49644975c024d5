//! Command-line types (clap) only: no behaviour here. Each command group has its own file.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::settings::{ColorChoice, Lang, OutputFormat};

pub mod auth;
pub mod cluster;
pub mod jp;
pub mod lab;
pub mod policy;
pub mod quiz;
pub mod values;

#[derive(Debug, Parser)]
#[command(
    name = "kca",
    version,
    about = "Hands-on Kyverno course: labs graded against a real cluster, self-paced quizzes",
    propagate_version = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Without a command: the course map and the next step (as `kca status`)
    #[command(subcommand)]
    pub command: Option<Command>,
}

const EXAMPLES: &str = "\
Examples:
  kca                          the course map and the next step
  kca lesson 0                 read module 0's lesson
  kca lab start kca-admission --offline
  kca lab check                grade your work; `kca lab hint` when stuck
  kca quiz run module-0        take a quiz; `kca quiz review` later

Exit codes: 0 success, 1 not passed (a failing check, a quiz below its pass mark),
2 usage or content error, 3 environment error (cluster, tools, state folder).";

/// Options every command takes, shown under their own heading in each command's help.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Global options")]
pub struct GlobalArgs {
    /// When to use colour (NO_COLOR and FORCE_COLOR are respected with `auto`)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Result format on stdout
    #[arg(long, short = 'o', global = true, value_enum, default_value_t = OutputFormat::Text)]
    pub output: OutputFormat,
    /// Language of learner-facing text (default: from LANG, else Japanese)
    #[arg(long, global = true, value_enum)]
    pub lang: Option<Lang>,
    /// Less output on stderr
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// More output on stderr (repeatable)
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Folder holding labs/, quizzes/, fixtures/ and kind-config/ [env: KCA_CONTENT_DIR]
    #[arg(long, global = true, value_name = "DIR")]
    pub content_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The course map: modules with lesson, lab and quiz, your progress, the next step
    Status,
    /// Read a module's lesson (paged, wrapped to the terminal): `kca lesson 0`, `kca lesson 1#request-path`
    #[command(
        after_help = "Examples:\n  kca lesson 0\n  kca lesson 1#request-path\n  kca lesson 0 --section json-patch\n  kca lesson 0 --output json"
    )]
    Lesson(LessonArgs),
    /// Instructor: tables per learner, task, check and question over many learners' JSON results (--html: a page with charts)
    #[command(
        after_help = "Examples:\n  kca lab check kca-gates -o json > results/alice-kca-gates.json   (each learner)\n  kca quiz grade module-1 --answers a.yaml -o json > results/alice-module-1.json\n  kca report results/\n  kca report results/*.json -o json\n  kca report results/ --html class.html"
    )]
    Report(ReportArgs),
    /// Instructor/CI: grade many submission folders of one lab offline, in parallel; one
    /// JSON result per learner
    #[command(
        after_help = "Examples:\n  kca grade kca-gates alice/ bob/ -o json\n  kca grade kca-gates --submissions class/ --out results/\n  kca grade kca-gates --submissions class/ --id-from 'regex:^kca-gates-(.+)$' --out results/\n  kca report results/\n\nEach submission is graded as `kca lab check LAB --offline --workspace DIR` would grade it;\nno progress is read or written.\n\nExit codes: 0 every submission passed, 1 a submission did not pass, 2 usage or content\nerror, 3 a submission could not be graded (environment)."
    )]
    Grade(GradeArgs),
    /// Check lab and quiz files: every problem at once, with file:line:col
    Validate(ValidateArgs),
    /// Self-paced concept quizzes
    #[command(subcommand)]
    Quiz(quiz::QuizCommand),
    /// Hands-on labs graded against a cluster
    #[command(subcommand)]
    Lab(lab::LabCommand),
    /// The course's kind cluster with Kyverno
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Ask RBAC questions of manifests, offline (like `kubectl auth can-i`)
    #[command(subcommand)]
    Auth(auth::AuthCommand),
    /// Run Kyverno policies offline (like `kyverno test` / `kyverno apply`)
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// JMESPath with Kyverno's functions, offline (like `kyverno jp`)
    #[command(subcommand)]
    Jp(jp::JpCommand),
    /// Helm values without helm: what the chart makes of them (like `helm template`, graded fields only)
    #[command(subcommand)]
    Values(values::ValuesCommand),
    /// Authors: the JSON Schema of lab.yaml or of quiz files, for editors (yaml-language-server)
    #[command(
        after_help = "Examples:\n  kca schema lab > schemas/lab.schema.json\n  kca schema quiz > schemas/quiz.schema.json\n\nThen start a file with\n  # yaml-language-server: $schema=../../schemas/lab.schema.json      (labs/<id>/lab.yaml)\n  # yaml-language-server: $schema=../schemas/quiz.schema.json        (quizzes/*.yaml)\n(`kca lab new` writes both the line and the files). `kca validate` stays the check."
    )]
    Schema(SchemaArgs),
    /// Shell completions (commands, flags, lab/quiz/task ids, lesson sections)
    #[command(
        after_help = "Examples:\n  source <(kca completions bash)                          (in ~/.bashrc)\n  kca completions zsh > \"${fpath[1]}/_kca\"\n  kca completions fish > ~/.config/fish/completions/kca.fish"
    )]
    Completions(CompletionsArgs),
    /// The candidates the completion scripts ask for, one per line
    #[command(name = "__complete", hide = true)]
    Complete(CompleteArgs),
}

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// Which file: `lab` (labs/<id>/lab.yaml) or `quiz` (quizzes/*.yaml)
    #[arg(value_enum)]
    pub kind: crate::schema::Kind,
}

/// The shells `kca completions` writes for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, clap::Args)]
pub struct CompleteArgs {
    /// `labs`, `quizzes`, `tasks`, `lessons`, `sections`, or `line`
    pub what: String,
    /// `[PREFIX] [LAB]` (`sections`: `LESSON [PREFIX]`)
    pub rest: Vec<String>,
    /// With `line`: the words after `kca`, the last one being typed
    #[arg(last = true)]
    pub words: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Files or folders to check (default: the course's labs/ and quizzes/)
    pub paths: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct LessonArgs {
    /// Module number, optionally with a section: `0`, `module-1`, `1#anchor`
    pub lesson: String,
    /// Only this section (its anchor, as listed in the lesson)
    #[arg(long, value_name = "ANCHOR")]
    pub section: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    /// Lab id (see `kca lab list`)
    pub lab: String,
    /// Submission folders, one per learner
    #[arg(value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// A folder whose sub-folders are the submissions
    #[arg(long, value_name = "PARENT")]
    pub submissions: Option<PathBuf>,
    /// The learner's id: `name` (the folder's name), `regex:RE` (RE's first group in the
    /// folder's name), or `file:PATH` (the first line of that file in the submission)
    #[arg(long, value_name = "RULE", default_value = "name")]
    pub id_from: String,
    /// Also write each result to DIR/<learner>.json (the input of `kca report`)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Submissions graded at once (default: the machine's cores)
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Only these tasks' checks (repeat, or separate with commas)
    #[arg(long, value_name = "TASK", value_delimiter = ',')]
    pub task: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// JSON result files, or folders of them
    #[arg(required = true, value_name = "RESULTS")]
    pub results: Vec<PathBuf>,
    /// Refuse to report when any input cannot be read (the default when `CI` is set);
    /// without it the report is shown, the skipped files named, and the exit code is 2
    #[arg(long, env = "CI", hide_env_values = true, value_parser = clap::builder::FalseyValueParser::new())]
    pub strict: bool,
    /// Also write one self-contained HTML page with charts to FILE (opens without a network)
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}
