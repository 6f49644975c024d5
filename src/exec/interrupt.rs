//! Programs started in a process group of their own do not see the terminal's Ctrl-C:
//! the interrupt goes to kca's group only. Without help, a learner who stops `kca lab
//! check` would leave a `command` check's program (and whatever it started) running. So
//! every running own-group job is listed here, and a handler for SIGINT, SIGTERM and
//! SIGHUP kills the listed groups before the signal does what it did before: kca's own
//! handler (the quiz's "answers saved" path, the live check's trigger cleanup) still runs,
//! and with none, kca ends by the signal as it would have.
//!
//! The handler only reads atomics and calls `killpg`, `sigaction` and `raise`, all
//! async-signal-safe.

use std::sync::Once;
use std::sync::atomic::{AtomicI32, Ordering};

/// Slots for the process groups of running jobs (0: free). More concurrent jobs than
/// slots still run; the extra ones are just not reached by the handler.
static GROUPS: [AtomicI32; 64] = [const { AtomicI32::new(0) }; 64];

const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The disposition each signal had before ours (indexed like `SIGNALS`).
static mut PREVIOUS: [Option<libc::sigaction>; 3] = [None; 3];

static INSTALL: Once = Once::new();

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
