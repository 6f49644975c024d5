//! `kca cluster …` arguments.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Not built yet
    Placeholder,
}
