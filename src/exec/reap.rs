//! What a job's program started and hid from its process group (`setsid`, a double fork
//! into a new session) must not outlive the job either. On Linux kca makes itself a *child
//! subreaper* (`PR_SET_CHILD_SUBREAPER`): a process orphaned anywhere below kca is
//! reparented to kca instead of to init. When a job ends, every child of kca that is
//! neither a job still running nor in kca's own process group (a pager, a foreground tool)
//! is such an orphan: it is killed and reaped, and what it left is reparented to kca again
//! and goes the same way, until none is left.
//!
//! Limits (written down in ARCHITECTURE.md): an escaped process lives until its job ends
//! (or its deadline); if kca itself is killed with SIGKILL, or interrupted while the job
//! runs, orphans outside the job's group are not reached (the signal handler may only call
//! async-signal-safe functions, and finding them reads `/proc`); a process that re-parents
//! itself elsewhere (ptrace, a container runtime) is out of reach. Other systems than Linux
//! have no subreaper: there only the process group is ended.

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Direct children of kca that are running jobs, by pid. Held while a job's program is
/// started and while orphans are looked for, so a program just started is never taken
/// for an orphan.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn running() -> MutexGuard<'static, Vec<i32>> {
    RUNNING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes kca the reaper of its orphaned descendants (once; Linux only).
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
        ONCE.call_once(|| unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        });
    }
}

/// Starts the job's program and lists it as running until the guard is dropped.
pub(super) fn start(
    start: impl FnOnce() -> std::io::Result<std::process::Child>,
) -> std::io::Result<(std::process::Child, Started)> {
    become_subreaper();
    let mut list = running();
    let child = start()?;
    let pid = child.id() as i32;
    list.push(pid);
    Ok((child, Started(pid)))
}

/// A job's program listed as running.
pub(super) struct Started(i32);

impl Drop for Started {
    fn drop(&mut self) {
        running().retain(|&p| p != self.0);
    }
}

impl Started {
    /// After the job's program has exited (or been killed) and its group was killed: ends
    /// the orphans that escaped the group, waiting up to a second for the group's last
    /// members to die (their orphans are reparented to kca as they do).
    pub(super) fn end_orphans(self, group: i32) {
        drop(self);
        if !cfg!(target_os = "linux") {
            return;
        }
        let until = Instant::now() + Duration::from_secs(1);
        loop {
            let killed = sweep();
            // SAFETY: signal 0 only asks whether any member of the group is left.
            let group_left = unsafe { libc::killpg(group, 0) } == 0;
            if (killed == 0 && !group_left) || Instant::now() > until {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Kills and reaps every orphan among kca's children; returns how many it found.
fn sweep() -> usize {
    let list = running();
    // SAFETY: getpid and getpgrp have no preconditions.
    let (me, ours) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let mut found = 0;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let Some((ppid, pgid)) = parent_and_group(pid) else {
            continue;
        };
        if ppid != me || pgid == ours || list.contains(&pid) {
            continue;
        }
        found += 1;
        // SAFETY: `pid` is a child of this process that no one else waits for (not a job,
        // not in kca's group): it stays reserved until reaped here.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    found
}

/// Fields 4 and 5 of `/proc/PID/stat`: the parent and the process group.
fn parent_and_group(pid: i32) -> Option<(i32, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(") ")?;
    let mut fields = rest.split(' ').skip(1);
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some((ppid, pgid))
}
