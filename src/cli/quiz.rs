//! `kca quiz …` arguments.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum QuizCommand {
    /// List quizzes with your best score and last attempt
    List,
    /// Take a quiz: one question at a time, feedback and explanation after each
    Run(RunArgs),
    /// Ask again what you missed, spaced (missed questions come back sooner)
    Review(ReviewArgs),
    /// Grade an answers file (question id -> answer) without asking
    Grade(GradeArgs),
    /// Instructor: print the answer key in the answers-file format
    Key(KeyArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Quiz id, e.g. module-1
    pub quiz: String,
    /// Ask the questions (and choices) in a shuffled order
    #[arg(long)]
    pub shuffle: bool,
    /// Seed for --shuffle, for a repeatable order
    #[arg(long, requires = "shuffle")]
    pub seed: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct ReviewArgs {
    /// Only this quiz (default: all)
    pub quiz: Option<String>,
    /// At most this many questions
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
}

#[derive(Debug, clap::Args)]
pub struct GradeArgs {
    /// Quiz id
    pub quiz: String,
    /// YAML file mapping question id to answer
    #[arg(long, value_name = "FILE")]
    pub answers: PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct KeyArgs {
    /// Quiz id
    pub quiz: String,
}
