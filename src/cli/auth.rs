//! `kca auth …` arguments.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Not built yet
    Placeholder,
}
