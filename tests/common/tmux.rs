//! A private tmux server at 80 columns for terminal tests (the harness of
//! `tests/e2e_tmux.rs`, shared): `start` returns `None` without tmux, so a test can say
//! `skipped: …` visibly.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A private tmux server (its own socket) with one 80×50 window running bash.
pub struct Tmux {
    socket: String,
    step: usize,
}

impl Tmux {
    pub fn start(env: &[(&str, String)]) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            return None;
        }
        let t = Tmux {
            // One server per session, also for tests running in parallel in one process.
            socket: format!(
                "kca-e2e-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            ),
            step: 0,
        };
        let mut cmd = Command::new("tmux");
        cmd.args(["-u", "-L", &t.socket, "-f", "/dev/null"])
            .args(["new-session", "-d", "-s", "e2e", "-x", "80", "-y", "50"])
            .arg("env")
            .arg("-i");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.args(["bash", "--norc", "--noprofile"]);
        let ok = cmd.status().is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session failed");
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
        self.tmux(&["capture-pane", "-p", "-t", "e2e"])
    }

    pub fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "e2e", "-l", keys]);
        self.tmux(&["send-keys", "-t", "e2e", "Enter"]);
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

    /// Waits until a line of the screen is exactly `mark` (not the command that echoes it).
    pub fn wait_line(&self, mark: &str) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.lines().any(|l| l.trim() == mark) {
                return s;
            }
            if start.elapsed() > Duration::from_secs(30) {
                panic!("waited 30s for {mark:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Clears the screen, runs `cmd`, waits until it ends, returns the screen.
    pub fn run(&mut self, cmd: &str) -> String {
        self.step += 1;
        let mark = format!("__done_{}__", self.step);
        self.keys("clear");
        self.tmux(&["clear-history", "-t", "e2e"]);
        self.keys(&format!("{cmd}; echo {mark}"));
        // The mark is on the command line too: wait for the line that is only the mark.
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.lines().any(|l| l.trim() == mark) {
                return s
                    .lines()
                    .filter(|l| l.trim() != mark && !l.contains(&format!("; echo {mark}")))
                    .collect::<Vec<_>>()
                    .join("\n")
                    .trim_end()
                    .to_string();
            }
            if start.elapsed() > Duration::from_secs(60) {
                panic!("`{cmd}` did not finish in 60s; the screen shows:\n{s}");
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
