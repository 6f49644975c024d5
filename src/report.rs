//! `kca report RESULTS…`: an instructor's view of a class. Reads many learners' JSON
//! results (`kca lab check -o json`, `kca quiz grade|run -o json`), and prints, per check
//! and per question, how often it failed — which concepts the class needs retaught.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::OutputFormat;
use crate::ui::{Style, tr};

/// How one check or question fared across the class.
#[derive(Debug, Default, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Rate {
    /// `lab/check` or `quiz/question`.
    pub id: String,
    pub seen: u32,
    pub failed: u32,
    /// Errors and skips (labs) or unanswered (quizzes): not counted as failures.
    pub other: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub concepts: Vec<String>,
    /// `concepts` as a set: de-duplication stays linear (80,000 concepts in one file).
    #[serde(skip)]
    seen_concepts: std::collections::HashSet<String>,
}

impl Rate {
    pub fn percent(&self) -> f64 {
        if self.seen == 0 {
            0.0
        } else {
            (f64::from(self.failed) * 1000.0 / f64::from(self.seen)).round() / 10.0
        }
    }
}

#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassReport {
    pub files: usize,
    pub checks: Vec<Rate>,
    pub questions: Vec<Rate>,
    /// Files that could not be read, with why.
    pub skipped: Vec<String>,
}

fn files(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut inner: Vec<PathBuf> = std::fs::read_dir(p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|e| e == "json"))
                .collect();
            inner.sort();
            out.extend(inner);
        } else {
            out.push(p.clone());
        }
    }
    out
}

fn add(
    map: &mut BTreeMap<String, Rate>,
    id: String,
    failed: bool,
    other: bool,
    concepts: &[String],
) {
    let r = map.entry(id.clone()).or_insert_with(|| Rate {
        id,
        ..Rate::default()
    });
    r.seen += 1;
    r.failed += u32::from(failed);
    r.other += u32::from(other);
    for c in concepts {
        if r.seen_concepts.insert(c.clone()) {
            r.concepts.push(c.clone());
        }
    }
}

/// Why a file given to `kca report` was skipped.
#[derive(Debug, thiserror::Error)]
enum Unread {
    /// Names the file itself.
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error(
        "neither a lab check nor a quiz result (`-o json` of `kca lab check` or `kca quiz grade`)"
    )]
    NotAResult,
}

/// Adds one result document; `Err` says why it is not one kca wrote.
fn read_one(
    v: &Value,
    checks: &mut BTreeMap<String, Rate>,
    questions: &mut BTreeMap<String, Rate>,
) -> std::result::Result<(), Unread> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    if let (Some(lab), Some(tasks)) = (v["lab"].as_str(), v["tasks"].as_array()) {
        for c in tasks
            .iter()
            .flat_map(|t| t["checks"].as_array().into_iter().flatten())
        {
            let verdict = c["verdict"].as_str().unwrap_or("");
            let id = format!("{lab}/{}", c["id"].as_str().unwrap_or("?"));
            add(
                checks,
                id,
                verdict == "fail",
                matches!(verdict, "error" | "skipped"),
                &[],
            );
        }
        return Ok(());
    }
    if let (Some(quiz), Some(qs)) = (v["quiz"].as_str(), v["questions"].as_array()) {
        for q in qs {
            let answered = q["answered"].as_bool().unwrap_or(true);
            let correct = q["correct"].as_bool().unwrap_or(false);
            let id = format!("{quiz}/{}", q["id"].as_str().unwrap_or("?"));
            add(
                questions,
                id,
                answered && !correct,
                !answered,
                &strings(&q["concepts"]),
            );
        }
        return Ok(());
    }
    Err(Unread::NotAResult)
}

pub fn build(paths: &[PathBuf]) -> ClassReport {
    let mut checks = BTreeMap::new();
    let mut questions = BTreeMap::new();
    let mut rep = ClassReport::default();
    for f in files(paths) {
        let parsed = crate::input::read_text(&f)
            .map_err(Unread::from)
            .and_then(|t| Ok(serde_json::from_str::<Value>(&t)?))
            .and_then(|v| read_one(&v, &mut checks, &mut questions));
        match parsed {
            Ok(()) => rep.files += 1,
            Err(e @ Unread::Read(_)) => rep.skipped.push(e.to_string()),
            Err(e) => rep.skipped.push(format!("{}: {e}", f.display())),
        }
    }
    let sorted = |m: BTreeMap<String, Rate>| {
        let mut v: Vec<Rate> = m.into_values().collect();
        v.sort_by(|a, b| {
            b.percent()
                .total_cmp(&a.percent())
                .then(b.failed.cmp(&a.failed))
                .then(a.id.cmp(&b.id))
        });
        v
    };
    rep.checks = sorted(checks);
    rep.questions = sorted(questions);
    rep
}

/// `kca report`: a skipped input is never silent — each is named, and the run exits 2
/// (or, `strict`, refuses to report at all), so a class table cannot quietly lose a
/// learner.
pub fn run(ctx: &Ctx, paths: &[PathBuf], strict: bool) -> Result<Exit> {
    let rep = build(paths);
    let lang = ctx.settings.lang;
    for s in &rep.skipped {
        ctx.printer
            .warn(&format!("{} {s}", tr(lang, "読み飛ばしました:", "skipped")));
    }
    if strict && !rep.skipped.is_empty() {
        return Err(Error::usage(
            crate::ui::tr_s(
                lang,
                format!(
                    "読めない結果ファイルが {} 件あります: {}",
                    rep.skipped.len(),
                    crate::escape::escape(&rep.skipped.join("; "))
                ),
                format!(
                    "{} result file(s) could not be read: {}",
                    rep.skipped.len(),
                    crate::escape::escape(&rep.skipped.join("; "))
                ),
            ),
            tr(
                lang,
                "各ファイルを直すか外します(--strict は CI 環境変数があると既定で有効)",
                "fix or remove each file (--strict is the default when CI is set)",
            ),
        ));
    }
    let exit = if rep.skipped.is_empty() {
        Exit::Success
    } else {
        Exit::Usage
    };
    if rep.files == 0 {
        return Err(Error::usage(
            tr(
                lang,
                "読める結果ファイルがありません",
                "no result files could be read",
            ),
            "collect learners' `kca lab check -o json` and `kca quiz grade -o json` outputs, then `kca report results/`",
        ));
    }
    if ctx.settings.output == OutputFormat::Json {
        ctx.printer.json(&crate::envelope::Envelope::new(&rep));
        return Ok(exit);
    }
    let p = &ctx.printer;
    p.out(&format!(
        "{} {}",
        rep.files,
        tr(lang, "件の結果", "result file(s)")
    ));
    let table = |title: &str, rows: &[Rate], other: &str| {
        if rows.is_empty() {
            return;
        }
        p.out("");
        p.out(&p.paint(Style::Heading, title));
        let mut t = vec![vec![
            tr(lang, "失敗率", "FAILED").to_string(),
            tr(lang, "失敗/件数", "FAIL/SEEN").to_string(),
            other.to_string(),
            "ID".to_string(),
        ]];
        for r in rows {
            // Ids and concepts come from learners' files: escaped, never raw.
            let id = if r.concepts.is_empty() {
                crate::escape::escape(&r.id).into_owned()
            } else {
                crate::escape::escape(&format!("{} [{}]", r.id, r.concepts.join(", "))).into_owned()
            };
            t.push(vec![
                format!("{:.1}%", r.percent()),
                format!("{}/{}", r.failed, r.seen),
                r.other.to_string(),
                id,
            ]);
        }
        for line in crate::ui::table(&t, p.width()) {
            p.out(&line);
        }
    };
    table(
        tr(lang, "ラボのチェック", "Lab checks"),
        &rep.checks,
        tr(lang, "エラー等", "ERR/SKIP"),
    );
    table(
        tr(lang, "クイズの問題", "Quiz questions"),
        &rep.questions,
        tr(lang, "未回答", "UNANSWERED"),
    );
    if !rep.skipped.is_empty() {
        p.out(&p.paint(
            Style::Fail,
            &format!(
                "{} {}",
                rep.skipped.len(),
                tr(
                    lang,
                    "件のファイルを読めませんでした(上の警告)",
                    "file(s) could not be read (warnings above)"
                )
            ),
        ));
    }
    Ok(exit)
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
        let r = build(&[dir.path().to_path_buf()]);
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
        let r = build(&[dir.path().to_path_buf()]);
        assert_eq!(r.files, 3);
        assert_eq!(r.skipped.len(), 1, "{:?}", r.skipped);
        assert_eq!(
            r.checks[0],
            Rate {
                id: "l/c1".into(),
                seen: 2,
                failed: 1,
                other: 0,
                ..Rate::default()
            }
        );
        assert_eq!(r.checks[0].percent(), 50.0);
        assert_eq!(r.questions[0].concepts, ["mutate"]);
        assert_eq!(r.questions[0].percent(), 100.0);
    }

    #[test]
    fn a_fifo_among_the_results_is_skipped_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let r = build(&[dir.path().to_path_buf()]);
        assert_eq!(r.files, 0);
        assert_eq!(r.skipped.len(), 1, "{:?}", r.skipped);
        assert!(
            r.skipped[0].contains("not a regular file"),
            "{:?}",
            r.skipped
        );
    }
}
