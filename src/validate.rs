//! `kca validate`: lint lab and quiz files.

use crate::app::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;

pub fn run(_ctx: &Ctx, _cmd: &crate::cli::ValidateArgs) -> Result<Exit> {
    Err(Error::usage(
        "this command is not built yet",
        "see README.md",
    ))
}
