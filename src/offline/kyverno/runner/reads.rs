//! The files a test run reads, seen by a caller on this thread: each is recorded (path,
//! whether it was swapped, a fingerprint of its bytes), and one file may be swapped for
//! another (a grader runs the learner's tests on a broken copy of their policy without
//! copying the workspace). Off unless [`watch`] runs: then `policy test` reads as always.

use std::cell::RefCell;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// One file read: the path asked for, whether the swap answered it, and its bytes'
/// fingerprint (`None`: it could not be read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub path: PathBuf,
    pub swapped: bool,
    pub print: Option<u128>,
}

/// `target` (canonical) is read as `with`.
#[derive(Debug, Clone)]
pub struct Swap {
    pub target: PathBuf,
    pub with: PathBuf,
}

struct Watch {
    swap: Option<Swap>,
    reads: Vec<Read>,
}

thread_local! {
    static WATCH: RefCell<Option<Watch>> = const { RefCell::new(None) };
}

/// Runs `f` with the reads of this thread recorded (and `swap` applied): its result and
/// the reads, in order.
pub fn watch<T>(swap: Option<Swap>, f: impl FnOnce() -> T) -> (T, Vec<Read>) {
    let before = WATCH.with(|w| {
        w.borrow_mut().replace(Watch {
            swap,
            reads: Vec::new(),
        })
    });
    let out = f();
    let reads = WATCH
        .with(|w| std::mem::replace(&mut *w.borrow_mut(), before))
        .map(|w| w.reads)
        .unwrap_or_default();
    (out, reads)
}

/// What reading `path` gives under `swap`: the file actually read and whether it is the swap.
pub fn resolve(path: &Path, swap: Option<&Swap>) -> (PathBuf, bool) {
    match swap {
        Some(s) if std::fs::canonicalize(path).is_ok_and(|c| c == s.target) => {
            (s.with.clone(), true)
        }
        _ => (path.to_path_buf(), false),
    }
}

/// 128 bits over `bytes`, seeded per process.
pub fn fingerprint(bytes: &[u8]) -> u128 {
    static SEEDS: OnceLock<[foldhash::quality::RandomState; 2]> = OnceLock::new();
    let seeds = SEEDS.get_or_init(Default::default);
    let [mut a, mut b] = [seeds[0].build_hasher(), seeds[1].build_hasher()];
    for h in [&mut a, &mut b] {
        h.write_usize(bytes.len());
        h.write(bytes);
    }
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

/// A test file's bytes (capped as every manifest is), through the watch when one runs.
pub(super) fn read(path: &Path) -> Result<Vec<u8>, crate::input::ReadError> {
    let cap = crate::input::MAX_MANIFEST_BYTES;
    let watched = WATCH.with(|w| w.borrow().as_ref().map(|w| w.swap.clone()));
    let Some(swap) = watched else {
        return crate::input::read_capped(path, cap);
    };
    let (file, swapped) = resolve(path, swap.as_ref());
    let bytes = crate::input::read_capped(&file, cap);
    let read = Read {
        path: path.to_path_buf(),
        swapped,
        print: bytes.as_ref().ok().map(|b| fingerprint(b)),
    };
    WATCH.with(|w| {
        if let Some(w) = w.borrow_mut().as_mut() {
            w.reads.push(read);
        }
    });
    bytes
}
