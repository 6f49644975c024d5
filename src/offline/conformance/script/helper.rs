//! A script of the test's folder run as a command (`./check.sh arg`): a child shell, as
//! a kernel runs an executable text file through its `#!` interpreter — the parent's
//! variables as its environment, its own `$0`, `$1`…, `$#`, options reset, its exit
//! status the command's. Only the shell interpreters are run; the script is read from
//! the test's folder (no absolute path, no `..`) within the size and nesting bounds.

use super::Shell;
use super::{Io, Unwind};
use crate::offline::conformance::script::shell::parse;

/// Longest helper script the replay reads.
const MAX_SCRIPT: usize = 64 << 10;
/// How many helper scripts may be running inside one another.
const MAX_NESTED: usize = 4;

/// The interpreters a `#!` line may name that the shell subset stands for.
const SHELLS: &[&str] = &["sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash"];

/// Whether `first` (a script's first line) names a shell, or none (`sh` runs it).
fn runs_in_shell(first: &str) -> Result<(), String> {
    let Some(line) = first.strip_prefix("#!") else {
        return Ok(());
    };
    let mut words = line.split_whitespace();
    let interpreter = match words.next() {
        Some("/usr/bin/env") | Some("/bin/env") => words.next().unwrap_or(""),
        Some(w) => w,
        None => "",
    };
    if SHELLS.contains(&interpreter) {
        Ok(())
    } else {
        Err(format!("a helper script for `{interpreter}`"))
    }
}

impl Shell<'_> {
    /// Runs the folder's script `name` with `args`.
    pub(super) fn helper(
        &mut self,
        name: &str,
        args: &[String],
        io: &mut Io,
    ) -> Result<i32, Unwind> {
        let path = std::path::Path::new(name);
        if path.is_absolute()
            || path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(Unwind::Skip(format!(
                "helper script `{name}` outside the test's folder"
            )));
        }
        if self.helpers >= MAX_NESTED {
            return Err(Unwind::Skip(
                "helper scripts nested deeper than the replay's bound".into(),
            ));
        }
        let src = match self.files.read(name) {
            Ok(s) => s,
            Err(e) => {
                io.print(2, format!("sh: {name}: {e}\n"));
                return Ok(127);
            }
        };
        if src.len() > MAX_SCRIPT {
            return Err(Unwind::Skip(format!(
                "helper script `{name}` larger than the replay's bound"
            )));
        }
        runs_in_shell(src.lines().next().unwrap_or("")).map_err(Unwind::Skip)?;
        let node = parse(&src).map_err(|u| Unwind::Skip(format!("`{name}`: {}", u.0)))?;
        let saved = (
            self.vars.clone(),
            self.errexit,
            self.nounset,
            self.status,
            std::mem::replace(&mut self.args, {
                let mut a = vec![name.to_string()];
                a.extend(args.iter().cloned());
                a
            }),
        );
        self.errexit = false;
        self.nounset = false;
        self.helpers += 1;
        // A child process: no functions or traps of the parent, its own `$!`.
        let functions = std::mem::take(&mut self.functions);
        let trap = self.exit_trap.take();
        let jobs = self.jobs.clone();
        let r = self.run(&node, io, false);
        let r = self.finish(r, io);
        self.functions = functions;
        self.exit_trap = trap;
        self.jobs = super::jobs::Jobs {
            proxy: self.jobs.proxy,
            ..jobs
        };
        self.helpers -= 1;
        let (vars, e, u, status, argv) = saved;
        let last = self.status;
        self.vars = vars;
        self.errexit = e;
        self.nounset = u;
        self.status = status;
        self.args = argv;
        match r {
            Ok(s) | Err(Unwind::Exit(s)) => Ok(s),
            Err(Unwind::Break) => Ok(last),
            Err(e) => Err(e),
        }
    }

    /// `$0`…`$9` and `$#`: the script's name and arguments (`sh -c`: `sh`, none).
    pub(super) fn positional(&self, c: char) -> Option<String> {
        match c {
            '#' => Some(self.args.len().saturating_sub(1).to_string()),
            d => {
                let n = d.to_digit(10)? as usize;
                Some(self.args.get(n).cloned().unwrap_or_default())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::runs_in_shell;

    #[test]
    fn only_shell_interpreters_run() {
        assert!(runs_in_shell("#!/usr/bin/env bash").is_ok());
        assert!(runs_in_shell("#!/bin/sh -e").is_ok());
        assert!(runs_in_shell("if true; then").is_ok());
        assert!(runs_in_shell("#!/usr/bin/env python3").is_err());
    }
}
