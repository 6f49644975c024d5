//! `kca cluster …`: the course kind cluster and Kyverno install, through the kind and helm CLIs.

use crate::app::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;

pub fn run(_ctx: &Ctx, _cmd: crate::cli::cluster::ClusterCommand) -> Result<Exit> {
    Err(Error::usage(
        "this command is not built yet",
        "see README.md",
    ))
}
