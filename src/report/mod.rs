//! `kca report RESULTS…`: an instructor's view of a class. Reads many learners' JSON
//! results (`read`), folds them into one model (`model`: per learner, task, check and
//! question, the score distribution, attempts per day) and renders that model as text
//! (`text`), one JSON document, or one self-contained HTML page (`html`, `--html FILE`).
//! A skipped input is never silent.

mod html;
mod model;
mod read;
mod text;

use std::path::{Path, PathBuf};

pub use model::{Bin, ClassReport, Day, Learner, Rate, Task};

use crate::cli::ReportArgs;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::{Lang, OutputFormat};
use crate::ui::{tr, tr_s};

/// Reads every result file under `paths` into the class model; files that are not kca
/// results are named in `skipped`, in `lang`.
pub fn build(paths: &[PathBuf], lang: Lang) -> ClassReport {
    let mut class = model::Class::default();
    for f in read::files(paths) {
        match read::read(&f) {
            Ok(attempts) => {
                class.files += 1;
                for a in attempts {
                    class.add(a);
                }
            }
            Err(e) => class.skipped.push(e.say(lang, &f)),
        }
    }
    class.finish()
}

/// `kca report`: a skipped input is never silent — each is named, and the run exits 2
/// (or, `strict`, refuses to report at all), so a class table cannot quietly lose a
/// learner.
pub fn run(ctx: &Ctx, args: &ReportArgs) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let rep = build(&args.results, lang);
    for s in &rep.skipped {
        ctx.printer.warn(&format!(
            "{} {s}",
            tr(lang, "読み飛ばしました:", "skipped:")
        ));
    }
    if args.strict && !rep.skipped.is_empty() {
        return Err(Error::usage(
            tr_s(
                lang,
                format!(
                    "読めない結果ファイルが {} 件あります: {}",
                    rep.skipped.len(),
                    rep.skipped.join("; ")
                ),
                format!(
                    "{} result file(s) could not be read: {}",
                    rep.skipped.len(),
                    rep.skipped.join("; ")
                ),
            ),
            tr(
                lang,
                "各ファイルを直すか外します(--strict は CI 環境変数があると既定で有効)",
                "fix or remove each file (--strict is the default when CI is set)",
            ),
        ));
    }
    if rep.files == 0 {
        return Err(Error::usage(
            tr(
                lang,
                "読める結果ファイルがありません",
                "no result files could be read",
            ),
            tr(
                lang,
                "受講者の `kca lab check -o json`・`kca quiz grade -o json` の出力か `kca grade --out` のフォルダを集めて `kca report results/` を実行します",
                "collect learners' `kca lab check -o json` and `kca quiz grade -o json` outputs (or `kca grade --out` folders), then `kca report results/`",
            ),
        ));
    }
    if let Some(page) = &args.html {
        write_page(page, &html::page(&rep, lang))?;
        ctx.printer.status(&tr_s(
            lang,
            format!("HTML レポートを書きました: {}", crate::escape::path(page)),
            format!("wrote the HTML report: {}", crate::escape::path(page)),
        ));
    }
    let exit = if rep.skipped.is_empty() {
        Exit::Success
    } else {
        Exit::Usage
    };
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&crate::envelope::Envelope::new(&rep));
    } else {
        text::print(&ctx.printer, lang, &rep);
    }
    Ok(exit)
}

/// Writes the page whole or not at all (a temp file beside it, then a rename).
fn write_page(file: &Path, text: &str) -> Result<()> {
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = file.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, file))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            let p = crate::escape::path(file);
            Error::environment_with(
                crate::error::msg(format!("{p} に書き込めません"), format!("cannot write {p}")),
                crate::error::msg(
                    "--html には kca が書き込めるフォルダーのファイルを指定します",
                    "give --html a file in a folder kca can write",
                ),
                e,
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_concepts_in_one_file_stay_linear() {
        let dir = tempfile::tempdir().unwrap();
        let concepts: Vec<String> = (0..80_000).map(|i| format!("c{i}")).collect();
        let doc = serde_json::json!({"quiz": "q", "questions": [
            {"id": "x", "correct": false, "answered": true, "concepts": concepts},
            {"id": "x", "correct": true, "answered": true, "concepts": concepts}]});
        std::fs::write(dir.path().join("a.json"), doc.to_string()).unwrap();
        let t = std::time::Instant::now();
        let r = build(&[dir.path().to_path_buf()], Lang::En);
        assert_eq!(r.questions[0].concepts.len(), 80_000);
        // Quadratic de-duplication took 18 s here; linear takes well under a second even
        // unoptimised.
        assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    }

    #[test]
    fn failure_rates_per_check_and_question() {
        let dir = tempfile::tempdir().unwrap();
        let lab = |v: &str| serde_json::json!({"schemaVersion": 1, "lab": "l", "tasks": [{"id": "t", "checks": [{"id": "c1", "verdict": v}, {"id": "c2", "verdict": "pass"}]}]});
        std::fs::write(dir.path().join("a.json"), lab("fail").to_string()).unwrap();
        std::fs::write(dir.path().join("b.json"), lab("pass").to_string()).unwrap();
        std::fs::write(dir.path().join("c.json"), serde_json::json!({"quiz": "q", "questions": [{"id": "x", "correct": false, "answered": true, "concepts": ["mutate"]}]}).to_string()).unwrap();
        std::fs::write(dir.path().join("d.json"), "{}").unwrap();
        let r = build(&[dir.path().to_path_buf()], Lang::En);
        assert_eq!(r.files, 3);
        assert_eq!(r.skipped.len(), 1, "{:?}", r.skipped);
        assert!(
            r.skipped[0].contains("d.json: not a kca result"),
            "{:?}",
            r.skipped
        );
        let c1 = &r.checks[0];
        assert_eq!(
            (c1.id.as_str(), c1.seen, c1.failed, c1.other),
            ("l/c1", 2, 1, 0)
        );
        assert_eq!(c1.percent, 50.0);
        assert_eq!(r.questions[0].concepts, ["mutate"]);
        assert_eq!(r.questions[0].percent, 100.0);
        let ids: Vec<&str> = r.learners.iter().map(|l| l.learner.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn a_fifo_among_the_results_is_skipped_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let r = build(&[dir.path().to_path_buf()], Lang::En);
        assert_eq!(r.files, 0);
        assert_eq!(r.skipped.len(), 1, "{:?}", r.skipped);
        assert!(
            r.skipped[0].contains("not a regular file"),
            "{:?}",
            r.skipped
        );
    }
}
