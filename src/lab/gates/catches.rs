//! kca-operations' grader `catches`: the learner's Kyverno tests must pass on the real
//! policy (with at least one row run) and fail once the policy is swapped for a broken
//! copy. Both runs are `kca policy test TESTS` in this process; the broken copy is read in
//! place of the policy (`runner::reads`), so the workspace is never copied. A run is made
//! once per input: the test files found, and the path, swap and bytes of every file the run
//! read; the three checks of a variant share the real run, and variants whose inputs are
//! equal share every run. Exit codes: 0 caught, 1 not (or the tests fail on the real policy).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::Place;
use crate::ctx::Ctx;
use crate::escape::escape;
use crate::exit::Exit;
use crate::offline::kyverno::runner::{self, Verdict, reads};
use crate::ui::{tr, tr_s};

/// Keys kept at once; a full cache starts over.
const KEPT: usize = 64;
/// Lines of a run shown under a verdict.
const SHOWN: usize = 3;

/// What one run of the tests gave: counts, and the rows that failed (or files that could
/// not be read) as lines, paths relative to the workspace.
#[derive(Debug, Clone)]
struct Tally {
    passed: usize,
    failed: usize,
    lines: Vec<String>,
}

/// A finished run and the reads it depends on (paths relative to the workspace).
struct Entry {
    reads: Vec<reads::Read>,
    tally: Result<Tally, String>,
}

type Slot = Arc<Mutex<Vec<Entry>>>;

fn cache() -> &'static Mutex<HashMap<u128, Slot>> {
    static CACHE: OnceLock<Mutex<HashMap<u128, Slot>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

pub(super) fn catches(
    ctx: &Ctx,
    at: &Place,
    broken: &Path,
    tests: &Path,
    policy: &Path,
) -> crate::error::Result<Exit> {
    let lang = ctx.settings.lang;
    let p = &ctx.printer;
    let real = match tally(at, tests, None) {
        Ok(t) if t.failed == 0 => t,
        outcome => {
            for line in shown(&outcome) {
                p.out(&line);
            }
            p.say_err(tr(
                lang,
                "テストが本物のポリシーで通りません(先に課題を通してください)",
                "the tests do not pass on the real policy",
            ));
            return Ok(Exit::NotPassed);
        }
    };
    if real.passed == 0 {
        p.say_err(tr(
            lang,
            "テストが1行も実行されていません",
            "the tests run no row",
        ));
        return Ok(Exit::NotPassed);
    }
    let with = at.at(broken);
    // No policy file here: nothing to swap (the tests run as they are).
    let swap = std::fs::canonicalize(at.at(policy))
        .ok()
        .map(|target| reads::Swap {
            target,
            with: with.clone(),
        });
    let outcome = tally(at, tests, swap);
    let name = with
        .file_name()
        .map(|n| escape(&n.to_string_lossy()).into_owned())
        .unwrap_or_default();
    if matches!(&outcome, Ok(t) if t.failed == 0) {
        let what = describe(&with);
        p.say_err(&tr_s(
            lang,
            format!("壊れたコピーでもテストが通りました: {}", what.0),
            format!(
                "the tests still pass on a broken copy of the policy: {}",
                what.1
            ),
        ));
        return Ok(Exit::NotPassed);
    }
    for line in shown(&outcome).into_iter().take(SHOWN) {
        p.out(&line);
    }
    p.out(&tr_s(
        lang,
        format!("テストは壊れたコピー {name} を見抜きました"),
        format!("the tests caught the broken copy {name}"),
    ));
    Ok(Exit::Success)
}

/// The lines a run shows: its failed rows and errors, then its summary.
fn shown(outcome: &Result<Tally, String>) -> Vec<String> {
    match outcome {
        Ok(t) => {
            let mut v: Vec<String> = t.lines.iter().take(SHOWN).cloned().collect();
            v.push(format!("{} passed, {} failed", t.passed, t.failed));
            v
        }
        Err(e) => vec![e.clone()],
    }
}

/// What a broken copy breaks, from its first two comment lines (`# 壊れたコピー: …`,
/// `# Broken copy: …`); escaped, they are read from a file.
fn describe(broken: &Path) -> (String, String) {
    let text = crate::input::read_text(broken).unwrap_or_default();
    let mut lines = text.lines();
    let mut take = |prefix: &str| {
        let l = lines.next().unwrap_or_default();
        escape(l.strip_prefix(prefix).unwrap_or(l)).into_owned()
    };
    let ja = take("# 壊れたコピー: ");
    let en = take("# Broken copy: ");
    (ja, en)
}

/// The tests under `tests` run (with `swap`), or the run a former call made on the same inputs.
fn tally(at: &Place, tests: &Path, swap: Option<reads::Swap>) -> Result<Tally, String> {
    let root = at.at(tests);
    let shown_root = escape(&tests.to_string_lossy()).into_owned();
    if !root.exists() {
        return Err(format!("{shown_root} does not exist"));
    }
    let files = runner::find_tests_named(std::slice::from_ref(&root), &["kyverno-test.yaml"]);
    if files.is_empty() {
        return Err(format!("no kyverno-test.yaml found in {shown_root}"));
    }
    let slot = {
        let mut key = Vec::new();
        for f in &files {
            key.extend_from_slice(relative(at, f).as_os_str().as_encoded_bytes());
            key.push(0);
        }
        if let Some(s) = &swap {
            key.extend_from_slice(b"\0swap\0");
            key.extend_from_slice(relative(at, &s.with).as_os_str().as_encoded_bytes());
            key.push(0);
            let bytes = crate::input::read_capped(&s.with, crate::input::MAX_MANIFEST_BYTES);
            key.extend_from_slice(
                &bytes
                    .map(|b| reads::fingerprint(&b))
                    .unwrap_or(0)
                    .to_le_bytes(),
            );
        }
        let mut map = cache().lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= KEPT {
            map.clear();
        }
        map.entry(reads::fingerprint(&key)).or_default().clone()
    };
    let mut entries = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = entries
        .iter()
        .find(|e| same_reads(at, &e.reads, swap.as_ref()))
    {
        return e.tally.clone();
    }
    let (tally, read) = reads::watch(swap, || run(at, &files));
    let read = read
        .into_iter()
        .map(|r| reads::Read {
            path: relative(at, &r.path),
            ..r
        })
        .collect();
    entries.push(Entry {
        reads: read,
        tally: tally.clone(),
    });
    tally
}

/// Whether reading every file of `reads` here gives the same bytes, swapped alike.
fn same_reads(at: &Place, reads: &[reads::Read], swap: Option<&reads::Swap>) -> bool {
    reads.iter().all(|r| {
        let (file, swapped) = reads::resolve(&at.at(&r.path), swap);
        let print = crate::input::read_capped(&file, crate::input::MAX_MANIFEST_BYTES)
            .ok()
            .map(|b| reads::fingerprint(&b));
        swapped == r.swapped && print == r.print
    })
}

/// `path` without the workspace in front (a path outside it stays whole).
fn relative(at: &Place, path: &Path) -> PathBuf {
    path.strip_prefix(&at.cwd)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Runs every test file, counting as `kca policy test` does (a file that cannot be read fails).
fn run(at: &Place, files: &[PathBuf]) -> Result<Tally, String> {
    let cwd = format!("{}/", at.cwd.display());
    let mut t = Tally {
        passed: 0,
        failed: 0,
        lines: Vec::new(),
    };
    for f in files {
        match runner::run_test(f) {
            Ok(rows) => {
                for r in rows {
                    match r.verdict {
                        Verdict::Pass => t.passed += 1,
                        Verdict::Skipped => {}
                        Verdict::Fail => {
                            t.failed += 1;
                            let rule = if r.rule.is_empty() { "-" } else { &r.rule };
                            let got = if r.actual.is_empty() { "-" } else { &r.actual };
                            t.lines.push(
                                escape(&format!(
                                    "FAIL  {}/{rule}  {} {}  expected {} got {got}",
                                    r.policy, r.kind, r.resource, r.expected
                                ))
                                .into_owned(),
                            );
                        }
                    }
                }
            }
            Err(e) => {
                t.failed += 1;
                let e = e.to_string().replace(&cwd, "");
                t.lines.push(format!("ERROR  {}", crate::escape::lines(&e)));
            }
        }
    }
    Ok(t)
}
