//! `kca policy test|apply`: reads files, runs the offline Kyverno engine, prints results.
//! Each command evaluates apart from rendering (`test`, `apply`). It must not decide rule
//! outcomes (that is the engine's job).

mod apply;
mod test;

pub use apply::rule_results;

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::cli::policy::PolicyCommand;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;

pub fn run(ctx: &Ctx, cmd: PolicyCommand) -> Result<Exit> {
    match cmd {
        PolicyCommand::Test(args) => test::run(ctx, args),
        PolicyCommand::Apply(args) => apply::run(ctx, args),
        PolicyCommand::Grader(args) => crate::lab::gates::run(ctx, args),
    }
}

pub(super) fn read_path(path: &Path) -> Result<Vec<Value>> {
    if path.is_dir() {
        // A folder stands for every manifest file below it, like `kyverno apply`.
        let files = crate::offline::manifest::files(&[path.to_path_buf()])?;
        let mut out = Vec::new();
        for f in files {
            out.extend(read_path(&f)?);
        }
        return Ok(out);
    }
    let text = if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| {
            Error::usage(
                crate::error::msg(
                    format!("標準入力を読めません: {e}"),
                    format!("cannot read stdin: {e}"),
                ),
                crate::error::msg("YAML をパイプで kca に渡します", "pipe YAML into kca"),
            )
        })?;
        s
    } else {
        let bytes = crate::input::read_capped(path, crate::input::MAX_MANIFEST_BYTES)?;
        String::from_utf8(bytes)
            .map_err(|_| crate::input::ReadError::NotUtf8(path.to_path_buf()))?
    };
    let docs = crate::yaml::parse_json_stream(&text)
        .map_err(|e| crate::diag::not_yaml(path, &text, &e))?;
    let mut out = Vec::new();
    for d in docs {
        if d.get("kind").and_then(Value::as_str) == Some("List") {
            out.extend(d["items"].as_array().cloned().unwrap_or_default());
        } else if d.is_object() {
            out.push(d);
        }
    }
    Ok(out)
}

pub(super) fn describe(obj: &Value) -> String {
    let s = |p: &str| obj.pointer(p).and_then(Value::as_str).unwrap_or("");
    let ns = s("/metadata/namespace");
    if ns.is_empty() {
        format!("{} {}", s("/kind"), s("/metadata/name"))
    } else {
        format!("{} {}/{}", s("/kind"), ns, s("/metadata/name"))
    }
}
