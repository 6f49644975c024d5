//! Result files into attempts: `kca lab check -o json`, `kca quiz grade|run -o json`, the
//! per-learner files of `kca grade --out` (a lab check's document with `learner` and
//! `gradedAt`, or the error that kept a submission from being graded) and the one
//! document of `kca grade -o json` (`submissions`). Anything else is refused with the
//! reason, so the caller can name the file.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::model::{Attempt, Body, Outcome, QuestionAttempt, TaskAttempt};
use crate::settings::Lang;
use crate::ui::tr;

/// The longest id kept from a file (a learner, a lab, a check): ids are data, not a
/// place to store a book; the tables stay bounded by the number of rows.
const MAX_ID: usize = 200;

/// The files to read: those named, and the `.json` files of the folders named (not
/// their sub-folders), each folder's sorted by name.
pub fn files(paths: &[PathBuf]) -> Vec<PathBuf> {
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

/// Why a file given to `kca report` was skipped.
#[derive(Debug, thiserror::Error)]
pub enum Unread {
    /// Names the file itself.
    #[error(transparent)]
    Read(#[from] crate::input::ReadError),
    #[error("not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("not a kca result")]
    NotAResult,
}

impl Unread {
    /// The reason, in `lang`, naming `file`.
    pub fn say(&self, lang: Lang, file: &Path) -> String {
        let file = crate::escape::path(file);
        match self {
            // The read error already names the file.
            Unread::Read(e) => crate::escape::escape(e.said().get(lang)).into_owned(),
            Unread::NotJson(e) => format!(
                "{file}: {} ({e})",
                tr(lang, "JSON ではありません", "not JSON")
            ),
            Unread::NotAResult => format!(
                "{file}: {}",
                tr(
                    lang,
                    "kca の結果ではありません(`kca lab check`・`kca quiz grade`・`kca grade` の `-o json`)",
                    "not a kca result (`-o json` of `kca lab check`, `kca quiz grade` or `kca grade`)"
                )
            ),
        }
    }
}

/// Every attempt in `file`.
pub fn read(file: &Path) -> Result<Vec<Attempt>, Unread> {
    let text = crate::input::read_text(file)?;
    let v: Value = serde_json::from_str(&text)?;
    drop(text);
    // The file's time stands for the attempt's when the document has none (a learner's
    // `kca lab check -o json > results/alice-kca-gates.json`).
    let mtime = std::fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok());
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let at = graded_at(&v).or(mtime);
    if let Some(subs) = v["submissions"].as_array() {
        return subs
            .iter()
            .map(|s| one(s, graded_at(s).or(at), &stem))
            .collect();
    }
    Ok(vec![one(&v, at, &stem)?])
}

fn graded_at(v: &Value) -> Option<i64> {
    v["gradedAt"]
        .as_str()
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.timestamp())
}

/// `s` cut to `MAX_ID` characters.
fn id(s: &str) -> String {
    if s.chars().count() <= MAX_ID {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(MAX_ID - 1).collect();
        out.push('…');
        out
    }
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v[key].as_str()
}

fn number(v: &Value, key: &str) -> f64 {
    v[key].as_f64().filter(|x| x.is_finite()).unwrap_or(0.0)
}

/// The learner of a document: its `learner` field; else the file's name without
/// `.json` and without a trailing `-ID`/`_ID`/`.ID` naming its lab or quiz
/// (`alice-kca-gates.json` → `alice`).
fn learner(v: &Value, stem: &str, item: &str) -> String {
    if let Some(l) = text(v, "learner").filter(|l| !l.is_empty()) {
        return id(l);
    }
    let base = stem
        .strip_suffix(item)
        .and_then(|s| s.strip_suffix(['-', '_', '.']))
        .filter(|s| !s.is_empty() && !item.is_empty())
        .unwrap_or(stem);
    id(base)
}

fn one(v: &Value, at: Option<i64>, stem: &str) -> Result<Attempt, Unread> {
    if let (Some(lab), Some(tasks)) = (text(v, "lab"), v["tasks"].as_array()) {
        let tasks = tasks
            .iter()
            .map(|t| TaskAttempt {
                id: id(text(t, "id").unwrap_or("?")),
                score: number(t, "score"),
                max: number(t, "maxScore"),
                checks: t["checks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let o = match text(c, "verdict") {
                            Some("pass") => Outcome::Pass,
                            Some("fail") => Outcome::Fail,
                            _ => Outcome::Other,
                        };
                        (id(text(c, "id").unwrap_or("?")), o)
                    })
                    .collect(),
            })
            .collect();
        return Ok(Attempt {
            learner: learner(v, stem, lab),
            at,
            body: Body::Lab {
                lab: id(lab),
                score: number(v, "score"),
                max: number(v, "maxScore"),
                tasks,
            },
        });
    }
    if let (Some(quiz), Some(qs)) = (text(v, "quiz"), v["questions"].as_array()) {
        let questions = qs
            .iter()
            .map(|q| {
                let answered = q["answered"].as_bool().unwrap_or(true);
                let correct = q["correct"].as_bool().unwrap_or(false);
                QuestionAttempt {
                    id: id(text(q, "id").unwrap_or("?")),
                    outcome: match (answered, correct) {
                        (false, _) => Outcome::Other,
                        (true, true) => Outcome::Pass,
                        (true, false) => Outcome::Fail,
                    },
                    concepts: q["concepts"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s.as_str().map(id))
                        .collect(),
                }
            })
            .collect();
        return Ok(Attempt {
            learner: learner(v, stem, quiz),
            at,
            body: Body::Quiz {
                quiz: id(quiz),
                score: number(v, "score"),
                max: number(v, "max"),
                questions,
            },
        });
    }
    // `kca grade`'s document for a submission it could not grade: the learner counts,
    // as not graded, rather than the file being lost.
    if v["error"].is_object() && text(v, "learner").is_some() {
        return Ok(Attempt {
            learner: learner(v, stem, ""),
            at,
            body: Body::NotGraded,
        });
    }
    Err(Unread::NotAResult)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_learner_is_the_field_else_the_file_name_without_the_item() {
        let doc = json!({"lab": "kca-gates", "tasks": []});
        assert_eq!(learner(&doc, "alice-kca-gates", "kca-gates"), "alice");
        assert_eq!(learner(&doc, "bob.module-1", "module-1"), "bob");
        assert_eq!(learner(&doc, "kca-gates", "kca-gates"), "kca-gates");
        assert_eq!(learner(&doc, "carol", "kca-gates"), "carol");
        let named = json!({"learner": "dave", "lab": "x", "tasks": []});
        assert_eq!(learner(&named, "whatever", "x"), "dave");
        let long = "x".repeat(5000);
        assert_eq!(
            learner(&json!({"learner": long}), "", "").chars().count(),
            200
        );
    }

    #[test]
    fn a_grade_document_holds_one_attempt_per_submission() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("class.json");
        let doc = json!({"schemaVersion": 1, "lab": "l", "submissions": [
            {"lab": "l", "learner": "a", "gradedAt": "2026-12-01T10:00:00Z", "score": 1, "maxScore": 2,
             "tasks": [{"id": "t", "score": 1, "maxScore": 2, "checks": [{"id": "c", "verdict": "fail"}]}]},
            {"learner": "b", "error": {"message": "no"}, "exitCode": 2}]});
        std::fs::write(&f, doc.to_string()).unwrap();
        let got = read(&f).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].learner, "a");
        assert_eq!(got[0].at, Some(1_796_119_200));
        assert!(matches!(got[1].body, Body::NotGraded));
        assert!(got[1].at.is_some(), "the file's time");
    }
}
