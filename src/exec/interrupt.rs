//! Programs started in a process group of their own do not see the terminal's Ctrl-C:
//! the interrupt goes to kca's group only. Without help, a learner who stops `kca lab
//! check` would leave a `command` check's program (and whatever it started) running. So
//! every running own-group job is listed here, and a handler for SIGINT, SIGTERM and
//! SIGHUP kills the listed groups before the signal does what it did before: kca's own
//! handler (the quiz's "answers saved" path, the live check's trigger cleanup) still runs,
//! and with none, kca ends by the signal as it would have.
//!
//! A program is in its own group from the moment it is started, but listed only after
//! `spawn` returns: a signal in between would end kca and leave it running. So a start
//! goes through the [`Gate`]: while one is under way the handler only records the signal,
//! and the last start to finish (its group listed, or failed) raises it again; once a
//! signal has arrived, no program is started any more.
//!
//! The handler only reads and writes atomics and calls `killpg`, `sigaction` and
//! `raise`, all async-signal-safe.

use std::sync::Once;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

/// Slots for the process groups of running jobs (0: free). More concurrent jobs than
/// slots still run; the extra ones are just not reached by the handler.
static GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The disposition each signal had before ours (indexed like `SIGNALS`).
static mut PREVIOUS: [Option<libc::sigaction>; 3] = [None; 3];

static INSTALL: Once = Once::new();

/// Starts of programs under way, and the ending signal that arrived (0: none).
pub(super) struct Gate {
    starting: AtomicUsize,
    signal: AtomicI32,
}

static GATE: Gate = Gate::new();

impl Gate {
    const fn new() -> Gate {
        Gate {
            starting: AtomicUsize::new(0),
            signal: AtomicI32::new(0),
        }
    }

    /// A start may begin unless an ending signal has arrived. (Sequentially consistent:
    /// either the handler sees this start and waits for it, or this start sees the
    /// signal and does not happen.)
    fn enter(&self) -> bool {
        self.starting.fetch_add(1, Ordering::SeqCst);
        if self.signal.load(Ordering::SeqCst) != 0 {
            self.starting.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// A start is over; the signal to raise now, if one came while starts were under way
    /// and this was the last of them.
    fn leave(&self) -> Option<libc::c_int> {
        let last = self.starting.fetch_sub(1, Ordering::SeqCst) == 1;
        let sig = self.signal.load(Ordering::SeqCst);
        (last && sig != 0).then_some(sig)
    }

    /// In the handler: records `sig`; `false` while a start is under way (the signal is
    /// acted on when it is over).
    fn arrived(&self, sig: libc::c_int) -> bool {
        self.signal.store(sig, Ordering::SeqCst);
        self.starting.load(Ordering::SeqCst) == 0
    }
}

/// A program being started: the handler waits for it to be listed (or to fail).
pub(super) struct Starting(());

/// Begins a start; `Err` once kca got an ending signal (it is stopping).
pub(super) fn starting() -> std::io::Result<Starting> {
    install();
    if GATE.enter() {
        Ok(Starting(()))
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "kca is stopping (interrupted); no program is started",
        ))
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        if let Some(sig) = GATE.leave() {
            // SAFETY: raise only sends the signal to this thread; the handler runs it.
            unsafe {
                libc::raise(sig);
            }
        }
    }
}

/// A listed process group; unlisted when dropped.
pub(super) struct Listed(Option<usize>);

impl Drop for Listed {
    fn drop(&mut self) {
        if let Some(i) = self.0 {
            GROUPS[i].store(0, Ordering::SeqCst);
        }
    }
}

/// Lists the process group `pgid` until the returned guard is dropped.
pub(super) fn list(pgid: i32) -> Listed {
    install();
    for (i, slot) in GROUPS.iter().enumerate() {
        if slot
            .compare_exchange(0, pgid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return Listed(Some(i));
        }
    }
    Listed(None)
}

/// Installs the handler (also done by the first `list`); `document` installs it early
/// under `-o json|junit` so an interrupted run still leaves its one document.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: sigaction with a zeroed struct, our handler and SA_SIGINFO; the old
            // disposition is written to a local first. PREVIOUS is written here once,
            // before the handler can run for this signal, and only read afterwards.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    // Ignored (e.g. SIGHUP under nohup): leave it ignored.
                    continue;
                }
                PREVIOUS[i] = Some(old);
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_signal as *const () as usize;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut new.sa_mask);
                libc::sigaction(sig, &new, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    if !GATE.arrived(sig) {
        // A program is being started and not listed yet: its start raises this again.
        return;
    }
    for slot in &GROUPS {
        let pgid = slot.load(Ordering::SeqCst);
        if pgid > 0 {
            // SAFETY: killpg is async-signal-safe; a group already gone answers ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
    let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
        return;
    };
    // SAFETY: PREVIOUS is only written before our handler was installed (see `install`).
    let previous = unsafe { (*std::ptr::addr_of!(PREVIOUS))[i] };
    let Some(previous) = previous else { return };
    match previous.sa_sigaction {
        libc::SIG_DFL => {
            // SAFETY: async-signal-safe calls. If another handler was installed over ours
            // and calls us as its predecessor, it owns what the signal means: stop here.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, std::ptr::null(), &mut current);
                if current.sa_sigaction != on_signal as *const () as usize {
                    return;
                }
                // The signal ends kca: stdout keeps (or gets) its one whole document.
                crate::document::on_fatal_signal();
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
        libc::SIG_IGN => {}
        handler => {
            // SAFETY: calling the handler that was installed before ours, with the
            // signature its flags declare.
            unsafe {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(handler);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                    f(sig);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Gate;

    #[test]
    fn a_signal_during_a_start_waits_for_it_and_stops_later_starts() {
        // No start under way: the handler acts at once.
        assert!(Gate::new().arrived(libc::SIGTERM));
        let gate = Gate::new();
        assert!(gate.enter());
        assert!(gate.enter());
        // The signal comes between spawn and listing: only recorded.
        assert!(!gate.arrived(libc::SIGINT));
        // The first start to finish is not the last: nothing raised yet.
        assert_eq!(gate.leave(), None);
        // The last one raises it, once its group is listed.
        assert_eq!(gate.leave(), Some(libc::SIGINT));
        // From now on nothing is started, and the handler acts at once.
        assert!(!gate.enter());
        assert!(gate.arrived(libc::SIGINT));
    }
}
