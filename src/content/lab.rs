//! The `Lab` content model and its lint. (Being written: see the labs issue.)

use std::path::Path;

use super::decode::{Decoder, Fields};

#[derive(Debug, Clone)]
pub struct Lab {
    pub id: String,
}

pub fn decode(d: &mut Decoder<'_>, fields: &Fields<'_>, _path: &Path) -> Option<Lab> {
    let id = fields
        .req(d, "metadata")
        .and_then(|m| m.get("id"))
        .and_then(|n| d.ident(n))?;
    Some(Lab { id })
}
