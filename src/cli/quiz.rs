//! `kca quiz …` arguments.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum QuizCommand {
    /// List quizzes with your best score and last attempt
    #[command(after_help = "Examples:\n  kca quiz list\n  kca quiz list -o json")]
    List,
    /// Take a quiz: one question at a time, feedback and explanation after each
    #[command(after_help = RUN_HELP)]
    Run(RunArgs),
    /// Ask again what you missed, spaced (missed questions come back sooner)
    #[command(after_help = "Keys: h hint, s skip (it stays due), q quit.\n\n\
Examples:\n  kca quiz review\n  kca quiz review module-1 --limit 5\n\n\
Exit codes: 0 all correct, 1 some missed, 2 usage or content error, 3 environment error.")]
    Review(ReviewArgs),
    /// Grade an answers file (question id -> answer) without asking
    #[command(after_help = GRADE_HELP)]
    Grade(GradeArgs),
    /// Instructor: print the answer key in the answers-file format
    #[command(
        after_help = "Examples:\n  kca quiz key module-1 > key.yaml\n  kca quiz grade module-1 --answers key.yaml   (full marks)"
    )]
    Key(KeyArgs),
}

const RUN_HELP: &str = "\
Keys at the prompt:
  h  show the next hint of this question
  s  skip it (the answer is not shown; the question stays due in `kca quiz review`)
  q  quit (answers so far are kept; the next `kca quiz run` goes on from there)
Each answer is saved as you go; Ctrl-C says what was kept. A run after a stopped one
asks whether to go on (piped input goes on); `--restart` starts over.

Answers: a letter (single), letters like `a,c` (multiple), true/false or はい/いいえ,
a term, a number, or the numbers of an order like `3,1,2`.

Examples:
  kca quiz run module-0
  kca quiz run module-1 --shuffle --seed 7
  printf 'b\\na,c\\n' | kca quiz run module-0     (piped answers work too)

Exit codes: 0 passed, 1 below the pass mark or stopped early, 2 usage or content error,
3 environment error, 130 interrupted.";

const GRADE_HELP: &str = "\
The answers file is YAML: one line per question id, the answer in the question's shape.
  q-failure-policy: b            # single: a choice id
  q-webhooks: [a, c]             # multi: a list of choice ids
  q-mutate-first: true           # true-false
  q-generate-leaves: UpdateRequest   # short: a text
  q-timeout: 10                  # numeric
  q-request-path: [authn, authz, mutate]   # order: item ids in order
A question left out counts as unanswered. `kca quiz key QUIZ` prints a full key in
this format. Grading changes no one's progress; `--record` saves the result as your own
attempt (a state folder that cannot be written is a warning, never a change of the grade).

Examples:
  kca quiz grade module-1 --answers alice.yaml
  kca quiz grade module-1 --answers alice.yaml -o json > alice.json
  kca quiz grade module-1 --answers alice.yaml -o junit > alice.xml

Exit codes: 0 passed, 1 below the pass mark, 2 bad answers file or quiz, 3 environment error.";

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
    /// Start over instead of going on with a stopped attempt
    #[arg(long)]
    pub restart: bool,
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
    /// Save the result as your own attempt (default: your progress is left alone)
    #[arg(long)]
    pub record: bool,
}

#[derive(Debug, clap::Args)]
pub struct KeyArgs {
    /// Quiz id
    pub quiz: String,
}
