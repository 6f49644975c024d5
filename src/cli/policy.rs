//! `kca policy …` arguments.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Not built yet
    Placeholder,
}
