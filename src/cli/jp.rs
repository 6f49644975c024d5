//! `kca jp …` arguments: the flags of `kyverno jp query|function|parse`
//! (cmd/cli/kubectl-kyverno/commands/jp/*/command.go at kyverno v1.19.0).

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum JpCommand {
    /// Evaluate JMESPath queries with Kyverno's functions (like `kyverno jp query`)
    #[command(
        after_help = "Examples:\n  kca jp query -i object.yaml 'request.object.metadata.name | truncate(@, `9`)'\n  kca jp query -c -i pods.yaml --query query.jp\n  kubectl get pods -o yaml | kca jp query 'items[].metadata.name'\n\nPrints `# <query>` and then the result as JSON, as `kyverno jp query` does.\nExit codes: 0 evaluated, 2 unreadable input or a query that does not evaluate."
    )]
    Query(QueryArgs),
    /// List Kyverno's JMESPath functions (like `kyverno jp function`)
    #[command(after_help = "Examples:\n  kca jp function\n  kca jp function truncate")]
    Function(FunctionArgs),
    /// Show how an expression is parsed (kca's tree; Kyverno's names its nodes differently)
    #[command(
        after_help = "Examples:\n  kca jp parse 'request.object.metadata.name | truncate(@, `9`)'\n  kca jp parse -f query.jp"
    )]
    Parse(ParseArgs),
}

#[derive(Debug, clap::Args)]
pub struct QueryArgs {
    /// Queries (read from stdin when none is given here or with -q)
    pub queries: Vec<String>,
    /// Read a JMESPath expression from this file (repeatable; `kyverno jp query -q`, which
    /// is long-only here because kca's `-q` is `--quiet`)
    #[arg(long = "query", value_name = "FILE", value_delimiter = ',')]
    pub query_files: Vec<PathBuf>,
    /// Read input from a JSON or YAML file instead of stdin
    #[arg(long, short = 'i', value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Compact JSON output
    #[arg(long, short = 'c')]
    pub compact: bool,
    /// Print a string result without quotes
    #[arg(long, short = 'u')]
    pub unquoted: bool,
}

#[derive(Debug, clap::Args)]
pub struct FunctionArgs {
    /// Only these functions
    pub names: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ParseArgs {
    /// Expressions (read from stdin when none is given here or with -f)
    pub expressions: Vec<String>,
    /// Read an expression from this file (repeatable)
    #[arg(long = "file", short = 'f', value_name = "FILE", value_delimiter = ',')]
    pub files: Vec<PathBuf>,
}
