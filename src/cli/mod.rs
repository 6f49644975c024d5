//! Command-line types (clap) only: no behaviour here. Each command group has its own file.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::settings::{ColorChoice, Lang, OutputFormat};

pub mod auth;
pub mod cluster;
pub mod lab;
pub mod policy;
pub mod quiz;

#[derive(Debug, Parser)]
#[command(
    name = "kca",
    version,
    about = "Hands-on Kyverno course: labs graded against a real cluster, self-paced quizzes",
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Args)]
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
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// Files or folders to check (default: the course's labs/ and quizzes/)
    pub paths: Vec<PathBuf>,
}
