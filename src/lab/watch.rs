//! `kca lab watch`.
use crate::cli::lab::WatchArgs;
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exit::Exit;
use crate::state::Store;

pub fn watch(_ctx: &Ctx, _store: &Store, _args: &WatchArgs) -> Result<Exit> {
    todo!()
}
