//! `kca values …` arguments: Helm values without helm.

use std::path::PathBuf;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ValuesCommand {
    /// What a chart makes of your values files, for the fields a lab grades (no helm needed)
    #[command(
        after_help = "Examples:\n  kca values render --chart graders/chart-render.yaml -f helm/values-ha.yaml\n\nMerges the -f files in order and coalesces them over the chart's defaults as Helm does\n(maps merge, lists and scalars replace, null deletes a default), then prints the\nDeployments' graded fields (name, replicas, the container's resources) as YAML.\nExit codes: 0 rendered, 1 values helm template would refuse, 2 unreadable files."
    )]
    Render(RenderArgs),
}

#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// The chart's render data: defaults and which values feed which field
    #[arg(long, value_name = "FILE")]
    pub chart: PathBuf,
    /// Values files, merged in order (later files win), like `helm template -f`
    #[arg(long = "values", short = 'f', value_name = "FILE", required = true)]
    pub values: Vec<PathBuf>,
}
