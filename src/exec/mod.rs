//! The one way kca runs another program: a deadline, a process group, capped output.
//!
//! The program starts in a process group of its own, so everything it starts can be ended
//! together: at the deadline the whole group is killed, and once the program has exited
//! whatever it left running in its group is killed too (`sh -c "sleep 1002 & echo ok"`
//! must neither hang kca nor leave a `sleep` behind). Output is read by threads that stop
//! counting at the deadline, even while a process that escaped the group still holds a pipe
//! open, and at most `cap` bytes of each stream are kept (the rest is read and dropped, so
//! the program never blocks on a full pipe), with the truncation said. Used by the lab's
//! `command` checks and by `kca cluster` for kind, helm and the container engine; those
//! trusted tools run `in_foreground` (kca's own group), so a learner's Ctrl-C stops them
//! with kca instead of leaving a half-made cluster behind. When kca itself is interrupted
//! or terminated, the groups of the jobs still running are killed first (`interrupt`).

pub(crate) mod interrupt;
mod reap;

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How much of each output stream is kept unless a caller says otherwise.
pub const DEFAULT_CAP: usize = 4 << 20;

/// What to run and how long it may take.
pub struct Job {
    pub command: Command,
    /// Written to the program's stdin, which is then closed (none: stdin is /dev/null).
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// Bytes kept per stream.
    pub cap: usize,
    /// Start the program in a process group of its own (the default). A trusted tool that
    /// a learner may want to stop with Ctrl-C (kind, helm) stays in kca's group instead:
    /// the terminal's interrupt then reaches it as it reaches kca, and a timeout ends the
    /// program itself rather than a group.
    pub own_group: bool,
}

impl Job {
    pub fn new(command: Command, timeout: Duration) -> Job {
        Job {
            command,
            stdin: None,
            timeout,
            cap: DEFAULT_CAP,
            own_group: true,
        }
    }

    /// The same job, left in kca's process group (see `own_group`).
    pub fn in_foreground(mut self) -> Job {
        self.own_group = false;
        self
    }
}

/// One output stream as captured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    pub bytes: Vec<u8>,
    /// Bytes the program wrote beyond `cap` (read and dropped).
    pub dropped: u64,
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
    pub fn truncated(&self) -> bool {
        self.dropped > 0
    }
}

/// How the program ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    /// It exited (or was killed by a signal of its own doing).
    Exited(ExitStatus),
    /// The deadline passed: its process group was killed.
    TimedOut,
}

#[derive(Debug, Clone)]
pub struct Finished {
    pub end: End,
    pub stdout: Captured,
    pub stderr: Captured,
}

impl Finished {
    /// The exit code, when the program exited by itself with one.
    pub fn code(&self) -> Option<i32> {
        match &self.end {
            End::Exited(s) => s.code(),
            End::TimedOut => None,
        }
    }
    /// "exit code N", "signal N" or "timed out", for messages.
    pub fn describe(&self) -> String {
        match &self.end {
            End::Exited(s) => match (s.code(), s.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(sig)) => format!("signal {sig}"),
                (None, None) => "an unknown status".into(),
            },
            End::TimedOut => "timed out".into(),
        }
    }
    /// A note for reports when output was cut, e.g. " (output truncated: 1073741824 bytes
    /// beyond the first 4194304 of stdout dropped)"; empty otherwise.
    pub fn truncation_note(&self) -> String {
        let mut parts = Vec::new();
        for (name, c) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if c.truncated() {
                parts.push(format!(
                    "{} bytes of {name} beyond the first {} dropped",
                    c.dropped,
                    c.bytes.len()
                ));
            }
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!(" (output truncated: {})", parts.join("; "))
        }
    }
}

/// Runs the job to its end or its deadline. Blocks the calling thread; `run_async` is the
/// same on a blocking thread of the tokio runtime.
pub fn run(job: Job) -> std::io::Result<Finished> {
    let Job {
        mut command,
        stdin,
        timeout,
        cap,
        own_group,
    } = job;
    let deadline = Instant::now() + timeout;
    if own_group {
        command.process_group(0);
    }
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // An ending signal between spawn and listing waits until the group is listed.
    let starting = interrupt::starting()?;
    let (mut child, started) = reap::start(|| spawn(&mut command))?;
    let group = Group {
        id: child.id() as i32,
        whole: own_group,
    };
    // Ctrl-C reaches kca's group only: list this group for kca's signal handler.
    let _listed = own_group.then(|| interrupt::list(group.id));
    drop(starting);
    let (done_tx, done_rx) = mpsc::channel();
    let threads = (|| {
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            // A program that never reads its stdin must not block kca: write on a thread.
            thread(move || {
                let _ = pipe.write_all(&input);
            })?;
        }
        let out = reader(child.stdout.take(), cap, done_tx.clone())?;
        let err = reader(child.stderr.take(), cap, done_tx)?;
        Ok((out, err))
    })();
    let (out, err) = match threads {
        Ok(both) => both,
        Err(e) => {
            // No thread to read or wait with (a pids limit): end the job, say why.
            group.kill_at_deadline();
            let _ = child.wait();
            group.kill();
            started.end_orphans(group.id);
            return Err(e);
        }
    };
    let end = wait(child, deadline, &group);
    // Whatever the program left in its group goes with it; its pipes close with them, and
    // so do those of what escaped the group (`reap`).
    group.kill();
    started.end_orphans(group.id);
    let end = end?;
    // Readers end at end-of-file, or at the deadline if something outside the group still
    // holds a pipe (give a program that ended at the deadline a moment to flush).
    let until = deadline.max(Instant::now() + Duration::from_millis(200));
    for _ in 0..2 {
        let left = until.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    let take = |c: &Arc<Mutex<Captured>>| std::mem::take(&mut *c.lock().expect("capture lock"));
    Ok(Finished {
        end,
        stdout: take(&out),
        stderr: take(&err),
    })
}

/// Starts a helper thread; under a pids or memory limit that can fail, and the job then
/// ends with the error instead of a panic.
fn thread(f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("kca-exec".into())
        .stack_size(256 << 10)
        .spawn(f)
        .map(drop)
}

/// `run` on tokio's blocking pool, for async callers.
pub async fn run_async(job: Job) -> std::io::Result<Finished> {
    tokio::task::spawn_blocking(move || run(job))
        .await
        .map_err(std::io::Error::other)?
}

/// The process group of a started job; killing it reaches every process still in it.
/// A job left in kca's own group (`whole: false`) is ended alone.
struct Group {
    id: i32,
    whole: bool,
}

impl Group {
    fn kill(&self) {
        // SAFETY: killpg/kill only send a signal; a group or process already gone answers
        // ESRCH. The id is the child's pid, which stays reserved while the child (or, for
        // a group, any member) lives, until it is reaped.
        unsafe {
            if self.whole {
                libc::killpg(self.id, libc::SIGKILL);
            }
        }
    }

    /// At the deadline: the whole group, or the program alone.
    fn kill_at_deadline(&self) {
        // SAFETY: as above.
        unsafe {
            if self.whole {
                libc::killpg(self.id, libc::SIGKILL);
            } else {
                libc::kill(self.id, libc::SIGKILL);
            }
        }
    }
}

fn spawn(command: &mut Command) -> std::io::Result<Child> {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            // ETXTBSY: the program file is still open for writing in another process (a
            // tool being installed or updated right now); it clears within moments.
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempts < 5 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
            other => return other,
        }
    }
}

/// Waits for the child on a thread (no polling); at the deadline kills its group.
fn wait(child: Child, deadline: Instant, group: &Group) -> std::io::Result<End> {
    let (tx, rx) = mpsc::channel();
    let child = Arc::new(Mutex::new(Some(child)));
    let waiter = child.clone();
    if let Err(e) = thread(move || {
        if let Some(mut c) = waiter.lock().ok().and_then(|mut c| c.take()) {
            let _ = tx.send(c.wait());
        }
    }) {
        group.kill_at_deadline();
        if let Some(mut c) = child.lock().ok().and_then(|mut c| c.take()) {
            let _ = c.wait();
        }
        return Err(e);
    }
    let left = deadline.saturating_duration_since(Instant::now());
    match rx.recv_timeout(left) {
        Ok(status) => Ok(End::Exited(status?)),
        Err(_) => {
            group.kill_at_deadline();
            // Reap it (the kill makes this immediate).
            let _ = rx.recv_timeout(Duration::from_secs(5));
            Ok(End::TimedOut)
        }
    }
}

/// Reads a pipe to its end on a thread, keeping the first `cap` bytes; says when done.
fn reader(
    pipe: Option<impl Read + Send + 'static>,
    cap: usize,
    done: mpsc::Sender<()>,
) -> std::io::Result<Arc<Mutex<Captured>>> {
    let captured = Arc::new(Mutex::new(Captured::default()));
    let shared = captured.clone();
    thread(move || {
        if let Some(mut pipe) = pipe {
            let mut buf = vec![0u8; 64 << 10];
            loop {
                let n = match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                let mut c = shared.lock().expect("capture lock");
                let room = cap.saturating_sub(c.bytes.len());
                let keep = n.min(room);
                c.bytes.extend_from_slice(&buf[..keep]);
                c.dropped += (n - keep) as u64;
            }
        }
        let _ = done.send(());
    })?;
    Ok(captured)
}
