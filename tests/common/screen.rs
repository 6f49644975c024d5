//! (The lab-screen tests' harness; `tests/common/tmux.rs` is the older 80-column one.) A private tmux server (its own socket) with one window running bash, for screen tests:
//! send keys, wait for what the screen shows, capture it. Used by `tests/e2e_lab_screens.rs`
//! through `#[path]` (tests that do not drive a terminal do not compile it).

#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
    step: usize,
}

impl Tmux {
    /// None when tmux is not installed (the caller prints `skipped: …`).
    pub fn start(name: &str, cols: u16, rows: u16, env: &[(&str, String)]) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            return None;
        }
        let t = Tmux {
            socket: format!("kca-{name}-{}", std::process::id()),
            step: 0,
        };
        let mut cmd = Command::new("tmux");
        cmd.args(["-u", "-L", &t.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "s"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg("env")
            .arg("-i");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.args(["bash", "--norc", "--noprofile"]);
        assert!(
            cmd.status().is_ok_and(|s| s.success()),
            "tmux new-session failed"
        );
        t.wait_for("$");
        Some(t)
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-u", "-L", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "s"])
    }

    /// Types `keys` and Enter.
    pub fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "s", "-l", keys]);
        self.tmux(&["send-keys", "-t", "s", "Enter"]);
    }

    /// Types one key, no Enter (an interactive screen).
    pub fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "s", "-l", key]);
    }

    pub fn wait_for(&self, what: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("waited 30s for {what:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clears the screen, runs `cmd`, waits until it ends, returns the whole screen (the
    /// command line at its top when the output fitted).
    pub fn run(&mut self, cmd: &str) -> String {
        self.step += 1;
        let mark = format!("__done_{}__", self.step);
        self.keys("clear");
        std::thread::sleep(Duration::from_millis(100));
        self.tmux(&["clear-history", "-t", "s"]);
        self.keys(&format!("{cmd}; echo {mark}"));
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.lines().any(|l| l.trim() == mark) {
                return s
                    .lines()
                    .filter(|l| l.trim() != mark)
                    .collect::<Vec<_>>()
                    .join("\n")
                    .trim_end()
                    .to_string();
            }
            if start.elapsed() > Duration::from_secs(90) {
                panic!("`{cmd}` did not finish in 90s; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}
