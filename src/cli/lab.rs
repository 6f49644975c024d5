//! `kca lab …` arguments.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Not built yet
    Placeholder,
}
