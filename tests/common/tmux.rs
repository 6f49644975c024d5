//! A private tmux server for terminal tests (`tests/e2e_tmux*.rs`, `tests/e2e_lab_screens.rs`):
//! `start`/`start_sized` return `None` without tmux, so a test can say `skipped: …` visibly.
#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A private tmux server (its own socket) with one window running bash.
pub struct Tmux {
    socket: String,
    step: usize,
}

impl Tmux {
    /// An 80×50 window.
    pub fn start(env: &[(&str, String)]) -> Option<Tmux> {
        Self::start_sized(80, 50, env)
    }

    /// A `cols`×`rows` window, once bash shows its prompt.
    pub fn start_sized(cols: u16, rows: u16, env: &[(&str, String)]) -> Option<Tmux> {
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
            .args(["new-session", "-d", "-s", "e2e"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg("env")
            .arg("-i");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.args(["bash", "--norc", "--noprofile"]);
        let ok = cmd.status().is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session failed");
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
        self.tmux(&["capture-pane", "-p", "-t", "e2e"])
    }

    pub fn keys(&self, keys: &str) {
        self.tmux(&["send-keys", "-t", "e2e", "-l", keys]);
        self.tmux(&["send-keys", "-t", "e2e", "Enter"]);
    }

    /// Types one key, no Enter (an interactive screen).
    pub fn key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", "e2e", "-l", key]);
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

    /// Clears the screen, runs `cmd`, waits until it ends, returns the screen without the
    /// command line.
    pub fn run(&mut self, cmd: &str) -> String {
        self.run_with(cmd, false)
    }

    /// As [`Tmux::run`], keeping the command line at the top of the screen (a screen
    /// test measures what the learner sees, that line included).
    pub fn run_screen(&mut self, cmd: &str) -> String {
        self.run_with(cmd, true)
    }

    fn run_with(&mut self, cmd: &str, keep_command: bool) -> String {
        self.step += 1;
        let mark = format!("__done_{}__", self.step);
        self.keys("clear");
        std::thread::sleep(Duration::from_millis(100));
        self.tmux(&["clear-history", "-t", "e2e"]);
        self.keys(&format!("{cmd}; echo {mark}"));
        // The mark is on the command line too: wait for the line that is only the mark.
        let start = Instant::now();
        loop {
            let s = self.screen();
            if s.lines().any(|l| l.trim() == mark) {
                return s
                    .lines()
                    .filter(|l| {
                        l.trim() != mark && (keep_command || !l.contains(&format!("; echo {mark}")))
                    })
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
