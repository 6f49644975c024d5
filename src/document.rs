//! The one document on stdout under `-o json|junit`: written once, whole, and never
//! half-written when kca is interrupted. A program reading kca's stdout gets exactly one
//! JSON or XML document for every outcome — pass, fail, error, and Ctrl-C.
//!
//! On SIGINT/SIGTERM/SIGHUP (`exec::interrupt`'s handler, when the signal would end kca),
//! [`on_fatal_signal`] waits for a document being written to be complete, and when none
//! was written yet, writes the "interrupted" document rendered at start-up (a signal
//! handler may not allocate or format). The handler only reads atomics and calls
//! `nanosleep` and `write`, all async-signal-safe.

use std::io::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use crate::settings::{Lang, OutputFormat};
use crate::ui::tr;

const NONE: u8 = 0;
const WRITING: u8 = 1;
const WRITTEN: u8 = 2;
/// A document streamed in parts: a signal cuts it off (nothing parses) and adds nothing.
const STREAMING: u8 = 3;

/// Whether the process's stdout has its document.
static STDOUT: AtomicU8 = AtomicU8::new(NONE);

/// The document written when kca is interrupted before it wrote its own (leaked once).
static INTERRUPTED: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static INTERRUPTED_LEN: AtomicUsize = AtomicUsize::new(0);

/// The exit code a shell reports for SIGINT; the interrupted document names it.
pub const INTERRUPTED_EXIT: i32 = 130;

/// Prepares the interrupted document for `output` and installs the signal handler.
/// Text mode needs neither.
pub fn install(output: OutputFormat, lang: Lang) {
    let Some(doc) = interrupted(output, lang) else {
        return;
    };
    let bytes: &'static mut [u8] = Box::leak(doc.into_bytes().into_boxed_slice());
    INTERRUPTED_LEN.store(bytes.len(), Ordering::SeqCst);
    INTERRUPTED.store(bytes.as_mut_ptr(), Ordering::SeqCst);
    crate::exec::interrupt::install();
}

/// The document for a run stopped by a signal, in `output`'s format.
pub fn interrupted(output: OutputFormat, lang: Lang) -> Option<String> {
    let message = tr(
        lang,
        "中断されました(Ctrl-C またはシグナル)。結果はありません",
        "interrupted (Ctrl-C or a signal): no result",
    );
    let hint = tr(lang, "もう一度実行します", "run the command again");
    match output {
        OutputFormat::Text => None,
        OutputFormat::Json => {
            let v = crate::envelope::stamp(serde_json::json!({"error": {
                "message": message, "causes": [], "hint": hint,
                "exitCode": INTERRUPTED_EXIT, "problems": [], "interrupted": true,
            }}));
            serde_json::to_string_pretty(&v).ok().map(|s| s + "\n")
        }
        OutputFormat::Junit => Some(crate::junit::error_document(
            "kca",
            "interrupted",
            &format!("{message}; {hint}"),
        )),
    }
}

/// Whether the process's stdout has (or is getting) its document.
pub fn written() -> bool {
    STDOUT.load(Ordering::SeqCst) != NONE
}

/// Claims stdout's one document; false when it already has one.
pub fn claim_stdout() -> bool {
    STDOUT
        .compare_exchange(NONE, WRITING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Claims stdout's one document for a stream of parts; false when it already has one.
pub fn claim_stream() -> bool {
    STDOUT
        .compare_exchange(NONE, STREAMING, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// The streamed document is complete.
pub fn end_stream() {
    STDOUT.store(WRITTEN, Ordering::SeqCst);
}

/// Writes the claimed document to stdout whole: the signals that end kca are blocked on
/// this thread meanwhile, and a handler running on another thread waits for the end.
pub fn write_stdout(text: &str) {
    let blocked = block_signals();
    {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    STDOUT.store(WRITTEN, Ordering::SeqCst);
    restore_signals(blocked);
}

/// Called by the signal handler before the signal ends kca: a document being written is
/// finished first (at most 5 s), and a run with none gets the interrupted document.
pub fn on_fatal_signal() {
    let mut waited = 0;
    while STDOUT.load(Ordering::SeqCst) == WRITING && waited < 5000 {
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        // SAFETY: nanosleep is async-signal-safe; `pause` is a valid timespec.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
        waited += 1;
    }
    if STDOUT
        .compare_exchange(NONE, WRITTEN, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        return;
    }
    let ptr = INTERRUPTED.load(Ordering::SeqCst);
    let len = INTERRUPTED_LEN.load(Ordering::SeqCst);
    if ptr.is_null() {
        return;
    }
    let mut at = 0;
    while at < len {
        // SAFETY: `ptr..ptr+len` is the leaked, never-freed document; write is
        // async-signal-safe.
        let n = unsafe { libc::write(1, ptr.add(at).cast(), len - at) };
        if n <= 0 {
            break;
        }
        at += n as usize;
    }
}

fn block_signals() -> Option<libc::sigset_t> {
    // SAFETY: sigset operations on local, initialised sets; pthread_sigmask only changes
    // this thread's mask and hands back the old one.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        let mut old: libc::sigset_t = std::mem::zeroed();
        (libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) == 0).then_some(old)
    }
}

fn restore_signals(old: Option<libc::sigset_t>) {
    if let Some(old) = old {
        // SAFETY: restores the mask `block_signals` saved for this thread.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interrupted_document_parses_in_each_format() {
        let j = interrupted(OutputFormat::Json, Lang::En).unwrap();
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["schemaVersion"], 1);
        assert_eq!(v["error"]["exitCode"], INTERRUPTED_EXIT);
        let x = interrupted(OutputFormat::Junit, Lang::Ja).unwrap();
        assert!(x.contains("<error message=\"中断されました"), "{x}");
        assert!(interrupted(OutputFormat::Text, Lang::En).is_none());
    }
}
