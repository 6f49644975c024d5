//! `kca auth can-i`: RBAC questions answered from manifests.

use crate::app::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;

pub fn run(_ctx: &Ctx, _cmd: crate::cli::auth::AuthCommand) -> Result<Exit> {
    Err(Error::usage(
        "this command is not built yet",
        "see README.md",
    ))
}
