//! The shell's control beyond one command, as bash does it (bash manual: "Shell
//! Functions", "Looping Constructs", the `trap`, `kill` and `return` builtins, "Job
//! Control"): functions called with their own positional parameters, bounded
//! `while`/`until` loops, `trap CMD EXIT` run when the shell ends (also on `exit N` and
//! on a failing command under `set -e`), and `cmd &` — only `kubectl proxy &`, which
//! makes `localhost:8001` answer ([`super::curl`]) until `kill $!` stops it. Any other
//! background job, signal trap or `kill` of a process the replay does not run is a skip.

use super::{Io, Node, Shell, Text, Unknown, Unwind};

/// Most iterations of one loop.
const MAX_ITERATIONS: usize = 10_000;
/// Deepest function calls.
const MAX_CALLS: usize = 32;
/// The process id the replay gives `kubectl proxy &` (`$!`); a live one is another
/// number, so output that shows it is not exact ([`Jobs::ended`]).
pub const PROXY_PID: u32 = 31_337;
/// What `kubectl proxy` prints when it listens (kubectl pkg/cmd/proxy/proxy.go).
const PROXY_LISTENING: &str = "Starting to serve on 127.0.0.1:8001\n";

/// The background jobs of a run.
#[derive(Debug, Clone, Default)]
pub struct Jobs {
    /// `kubectl proxy` is running (its pid).
    pub proxy: Option<u32>,
    /// `$!`.
    pub(super) last: Option<u32>,
    /// Function calls under way.
    pub(super) calls: usize,
}

impl Jobs {
    pub fn last_pid(&self) -> Option<String> {
        self.last.map(|p| p.to_string())
    }

    /// The run ends: a proxy still running would answer later scripts' requests.
    pub fn ended(&self) -> Result<(), Unwind> {
        if self.proxy.is_some() {
            return Err(Unwind::Skip(
                "`kubectl proxy` left running after the script".into(),
            ));
        }
        Ok(())
    }
}

impl Shell<'_> {
    /// `cmd &`: `kubectl proxy` (without flags that move it) starts the proxy.
    pub(super) fn background(&mut self, node: &Node, io: &mut Io) -> Result<i32, Unwind> {
        let Node::Simple {
            assigns,
            words,
            redirs,
        } = node
        else {
            return Err(Unwind::Skip(
                "a background job (`&`) of a compound command".into(),
            ));
        };
        let mut argv = Vec::new();
        for w in words {
            argv.extend(self.fields(w, io)?);
        }
        if !assigns.is_empty() || argv.len() != 2 || argv[0] != "kubectl" || argv[1] != "proxy" {
            return Err(Unwind::Skip(format!(
                "a background job (`{} &`)",
                argv.join(" ")
            )));
        }
        if self.jobs.proxy.is_some() {
            return Err(Unwind::Skip(
                "a second `kubectl proxy` on the port the first holds".into(),
            ));
        }
        let line = Text {
            s: PROXY_LISTENING.to_string(),
            unknown: Some(Unknown {
                why: "when a background job's output lands".into(),
                lines_exact: true,
                decides: vec![PROXY_LISTENING.trim_end().to_string()],
                exact_under: Vec::new(),
            }),
        };
        self.redirected(redirs, io, |_, io| {
            io.write(1, line);
            Ok(0)
        })?;
        self.jobs.proxy = Some(PROXY_PID);
        self.jobs.last = Some(PROXY_PID);
        Ok(0)
    }

    /// `kill [-SIG] PID…` of the replay's own background job.
    pub(super) fn kill(&mut self, args: &[String], io: &mut Io) -> Result<i32, Unwind> {
        let mut status = 0;
        let mut pids = args.iter().peekable();
        if let Some(sig) = pids.peek().and_then(|a| a.strip_prefix('-')) {
            if !matches!(
                sig,
                "TERM" | "SIGTERM" | "15" | "KILL" | "SIGKILL" | "9" | "INT" | "2"
            ) {
                return Err(Unwind::Skip(format!("`kill -{sig}`")));
            }
            pids.next();
        }
        for a in pids {
            let pid: u32 = a
                .parse()
                .map_err(|_| Unwind::Skip(format!("`kill {a}` (a job spec)")))?;
            if self.jobs.proxy == Some(pid) {
                self.jobs.proxy = None;
            } else if self.jobs.last == Some(pid) {
                io.print(2, format!("kill: ({pid}) - No such process\n"));
                status = 1;
            } else {
                return Err(Unwind::Skip(format!(
                    "`kill {pid}` of a process the replay does not run"
                )));
            }
        }
        Ok(status)
    }

    /// `trap CMD SIG…`: EXIT is kept for the shell's end; the signals a run never
    /// gets (HUP INT QUIT TERM: Chainsaw's timeout kills outright) change nothing.
    pub(super) fn trap(&mut self, args: &[String]) -> Result<i32, Unwind> {
        let [action, sigs @ ..] = args else {
            return Err(Unwind::Skip("`trap` listing the traps".into()));
        };
        if sigs.is_empty() {
            return Err(Unwind::Skip(format!("`trap {action}`")));
        }
        for s in sigs {
            match s.trim_start_matches("SIG") {
                "EXIT" | "0" => {
                    self.exit_trap = match action.as_str() {
                        "-" | "" => None,
                        a => Some(a.to_string()),
                    }
                }
                "HUP" | "INT" | "QUIT" | "TERM" | "1" | "2" | "3" | "15" => {}
                other => return Err(Unwind::Skip(format!("`trap` on {other}"))),
            }
        }
        Ok(0)
    }

    /// The shell ends with `r`: its EXIT trap runs (`$?` the status), and an `exit` in
    /// it sets the status.
    pub(super) fn finish(&mut self, r: Result<i32, Unwind>, io: &mut Io) -> Result<i32, Unwind> {
        let status = match r {
            Ok(s) | Err(Unwind::Exit(s)) | Err(Unwind::Return(s)) => s,
            Err(Unwind::Break) => self.status,
            Err(e) => return Err(e),
        };
        let Some(trap) = self.exit_trap.take() else {
            return Ok(status);
        };
        let node =
            super::parse(&trap).map_err(|u| Unwind::Skip(format!("the EXIT trap: {}", u.0)))?;
        self.status = status;
        match self.run(&node, io, false) {
            Ok(_) | Err(Unwind::Break) | Err(Unwind::Return(_)) => Ok(status),
            Err(Unwind::Exit(s)) => Ok(s),
            Err(e) => Err(e),
        }
    }

    /// Calls a function: its arguments are `$1`…, `$0` stays; `return N` ends it.
    pub(super) fn call(
        &mut self,
        body: &Node,
        argv: &[String],
        io: &mut Io,
    ) -> Result<i32, Unwind> {
        if self.jobs.calls >= MAX_CALLS {
            return Err(Unwind::Skip(
                "function calls nested deeper than the replay's bound".into(),
            ));
        }
        let mut args = vec![self.args.first().cloned().unwrap_or_default()];
        args.extend(argv.iter().skip(1).cloned());
        let saved = std::mem::replace(&mut self.args, args);
        self.jobs.calls += 1;
        let r = self.run(body, io, false);
        self.jobs.calls -= 1;
        self.args = saved;
        match r {
            Ok(s) | Err(Unwind::Return(s)) => Ok(s),
            Err(e) => Err(e),
        }
    }

    /// `while`/`until`: the condition runs as a condition (`set -e` spares it).
    pub(super) fn run_loop(
        &mut self,
        until: bool,
        cond: &Node,
        body: &Node,
        io: &mut Io,
        in_cond: bool,
    ) -> Result<i32, Unwind> {
        let mut status = 0;
        for _ in 0..MAX_ITERATIONS {
            self.tick()?;
            let c = self.run(cond, io, true)?;
            if (c == 0) == until {
                return Ok(status);
            }
            match self.run(body, io, in_cond) {
                Ok(s) => status = s,
                Err(Unwind::Break) => return Ok(status),
                Err(e) => return Err(e),
            }
        }
        Err(Unwind::Skip(format!(
            "a loop past the replay's bound of {MAX_ITERATIONS} iterations"
        )))
    }
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
