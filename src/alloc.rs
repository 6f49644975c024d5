//! The process allocator (mimalloc, set in `main.rs`) tuned where kca holds a learner's
//! files.

// Linked in every binary of the crate, the tests' too, so the symbol below resolves.
extern crate mimalloc;

// mimalloc's `mi_option_set`; `mi_option_purge_delay` is 15 in both its v2 and v3
// headers (libmimalloc-sys c_src/mimalloc/v*/include/mimalloc.h, `mi_option_e`).
unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}
const PURGE_DELAY: std::ffi::c_int = 15;

/// From now on, memory freed goes back to the system at once instead of after mimalloc's
/// default 10 ms. Parsing a big workspace file frees most of what it grows through, and
/// with the delay that memory was still held at the peak: `lab check` with a 1 MB file
/// peaked at +23 MiB (23×), with this at +6 MiB (6.4×); with an 8 MB file 10.1× → 7.9×
/// (`ONLY=workspace bash bench/scale.sh`, issue #18). Only commands that read a learner's
/// files call it: on the throughput rows (`ONLY=apply`) immediate purging cost up to a
/// fifth more CPU. Harmless when another allocator is in use (the tests'): it only sets
/// mimalloc's option.
pub fn return_freed_memory_at_once() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: sets one of mimalloc's integer options; mimalloc reads it at each purge.
    ONCE.call_once(|| unsafe { mi_option_set(PURGE_DELAY, 0) });
}
