//! Course content: the YAML model of labs and quizzes, loading, and lint. Pure: reads
//! files, never a cluster; never prints (problems come back as diagnostics).

use std::path::{Path, PathBuf};

use crate::diag::{Collector, Diagnostic};
use crate::error::msg;
use crate::yaml::{self, Pos};

pub mod decode;
pub mod lab;
pub mod quiz;
pub mod quiz_lint;

pub use decode::Text;

/// The `apiVersion` of every kca content file.
pub const API_VERSION: &str = "kca.dev/v1alpha1";

/// A loaded content file.
#[derive(Debug, Clone)]
pub enum Document {
    Quiz(Box<quiz::Quiz>),
    Lab(Box<lab::Lab>),
}

/// Reads and checks one content file: all its problems at once.
pub fn load_file(path: &Path) -> Result<Document, Vec<Diagnostic>> {
    let src = match crate::input::read_text(path) {
        Ok(s) => s,
        Err(crate::input::ReadError::NotUtf8(_)) => {
            return Err(vec![file_problem(
                path,
                msg("UTF-8 のテキストではありません", "not UTF-8 text"),
                msg("ファイルを UTF-8 で保存します", "save the file as UTF-8"),
            )]);
        }
        Err(e) => return Err(vec![file_problem(path, e.said(), e.hint_said())]),
    };
    let loaded = load_str(path, &src);
    // A lab's files must be its own: a link could copy any file of the instructor's or
    // the learner's machine into a workspace, and a FIFO would block `lab start`.
    let is_lab = match &loaded {
        Ok(doc) => matches!(doc, Document::Lab(_)),
        Err(_) => path.file_name().is_some_and(|n| n == "lab.yaml"),
    };
    let foreign = match path.parent() {
        Some(dir) if is_lab => foreign_files(dir),
        _ => Vec::new(),
    };
    match loaded {
        Ok(_) if !foreign.is_empty() => Err(foreign),
        Ok(doc) => Ok(doc),
        Err(mut diags) => {
            diags.extend(foreign);
            Err(diags)
        }
    }
}

/// Symbolic links and special files (FIFOs, devices, sockets) in a lab folder, each as a
/// problem of the file itself.
fn foreign_files(dir: &Path) -> Vec<Diagnostic> {
    fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<Diagnostic>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = entries.filter_map(|e| e.ok()).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(ty) = e.file_type() else { continue };
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let rel = crate::escape::escape(&rel).into_owned();
            if ty.is_symlink() {
                let to = std::fs::read_link(&path)
                    .map(|t| crate::escape::path(&t))
                    .unwrap_or_default();
                out.push(file_problem(
                    &path,
                    msg(
                        format!("`{rel}` はシンボリックリンク (先: {to}) です。ラボのファイルはラボのフォルダーにある普通のファイルでなければなりません"),
                        format!("`{rel}` is a symbolic link (to {to}); lab files must be regular files in the lab folder"),
                    ),
                    msg(
                        "リンクではなく、ファイルをラボのフォルダーにコピーします",
                        "copy the file into the lab folder instead of linking it",
                    ),
                ));
            } else if ty.is_dir() {
                if depth < 16 {
                    walk(root, &path, depth + 1, out);
                }
            } else if !ty.is_file() {
                out.push(file_problem(
                    &path,
                    msg(
                        format!("`{rel}` は普通のファイルではありません (FIFO、ソケット、デバイスのどれかです)"),
                        format!("`{rel}` is not a regular file (a FIFO, socket or device)"),
                    ),
                    msg(
                        "ラボのフォルダーから取り除きます",
                        "remove it from the lab folder",
                    ),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, 0, &mut out);
    out
}

/// Checks a content text as if it were the file at `path`.
pub fn load_str(path: &Path, src: &str) -> Result<Document, Vec<Diagnostic>> {
    let mut diags = Collector::new(path, src);
    let node = match yaml::parse_one(src) {
        Ok(n) => n,
        Err(e) => {
            diags.yaml_error(&e);
            return Err(diags.finish());
        }
    };
    let mut d = decode::Decoder::new(diags);
    let Some(fields) = d.fields(&node) else {
        return Err(d.diags.finish());
    };
    let api = fields.req(&mut d, "apiVersion").and_then(|n| d.string(n));
    let kind_node = fields.req(&mut d, "kind");
    let kind = kind_node.and_then(|n| d.string(n));
    if let (Some(api), Some(n)) = (&api, fields.opt("apiVersion"))
        && api != API_VERSION
    {
        d.error_hint(
            n.pos,
            msg(
                format!("apiVersion `{api}` には対応していません"),
                format!("unsupported apiVersion `{api}`"),
            ),
            msg(
                format!("`apiVersion: {API_VERSION}` を使います"),
                format!("use `apiVersion: {API_VERSION}`"),
            ),
        );
    }
    let doc = match kind.as_deref() {
        Some("Quiz") => quiz::decode(&mut d, &fields).map(|q| Document::Quiz(Box::new(q))),
        Some("Lab") => lab::decode(&mut d, &fields, path).map(|l| Document::Lab(Box::new(l))),
        Some(other) => {
            d.error_hint(
                kind_node.map_or(Pos::default(), |n| n.pos),
                msg(
                    format!("未知の kind `{other}` です"),
                    format!("unknown kind `{other}`"),
                ),
                msg(
                    "`kind: Quiz` か `kind: Lab` を使います",
                    "use `kind: Quiz` or `kind: Lab`",
                ),
            );
            None
        }
        None => None,
    };
    // Name the kind, so that an unknown field says what it is not part of.
    let context = match kind.as_deref() {
        Some(k @ ("Quiz" | "Lab")) => (format!("`{k}` "), format!("`{k}`")),
        _ => (
            "コンテンツのファイル".to_string(),
            "a content file".to_string(),
        ),
    };
    fields.finish(&mut d, (&context.0, &context.1));
    let diags = d.diags.finish();
    match doc {
        Some(doc) if diags.is_empty() => Ok(doc),
        _ if diags.is_empty() => Err(vec![file_problem(
            path,
            msg("読み込めませんでした", "could not be loaded"),
            msg(
                "このファイルに `kca validate` を実行します",
                "run `kca validate` on it",
            ),
        )]),
        _ => Err(diags),
    }
}

fn file_problem(path: &Path, message: crate::error::Msg, hint: crate::error::Msg) -> Diagnostic {
    Diagnostic {
        file: path.to_path_buf(),
        pos: Pos { line: 1, col: 1 },
        message: message.en,
        hint: Some(hint.en),
        source_line: None,
        source_from: 0,
        severity: crate::diag::Severity::Error,
        left_out: 0,
        ja: Some(Box::new(crate::diag::Ja {
            message: message.ja,
            hint: Some(hint.ja),
        })),
    }
}

/// The content files under `path`: a file as given; in a folder, `lab.yaml` if it has one
/// (a lab's other files are manifests, not content), else every `*.yaml`/`*.yml` in it and
/// its sub-folders. Sorted, so reports are stable.
pub fn discover(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    discover_into(path, &mut out, 0);
    out.sort();
    out
}

fn discover_into(path: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if !path.is_dir() {
        out.push(path.to_path_buf());
        return;
    }
    let lab = path.join("lab.yaml");
    if lab.is_file() {
        out.push(lab);
        return;
    }
    // Symlink loops and absurd trees end here rather than in a stack overflow.
    if depth > 16 {
        return;
    }
    let Ok(entries) = crate::offline::manifest::listing(path) else {
        out.push(path.to_path_buf());
        return;
    };
    for (entry, is_dir) in entries {
        if is_dir {
            discover_into(&entry, out, depth + 1);
        } else if matches!(
            entry.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        ) {
            out.push(entry);
        }
    }
}

/// Every quiz in the content folder, with the problems of files that did not load.
pub fn load_quizzes(content_dir: &Path) -> (Vec<quiz::Quiz>, Vec<Diagnostic>) {
    let mut quizzes = Vec::new();
    let mut problems = Vec::new();
    for file in discover(&content_dir.join("quizzes")) {
        match load_file(&file) {
            Ok(Document::Quiz(q)) => quizzes.push(*q),
            Ok(Document::Lab(_)) => {}
            Err(d) => problems.extend(d),
        }
    }
    quizzes.sort_by(|a, b| a.id.cmp(&b.id));
    (quizzes, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lab_with(edit: impl Fn(String) -> String) -> (tempfile::TempDir, Vec<Diagnostic>, String) {
        let tmp = tempfile::tempdir().unwrap();
        let root = crate::lab::scaffold::new_lab(tmp.path(), "kca-diag").unwrap();
        let path = root.join("lab.yaml");
        let src = edit(std::fs::read_to_string(&path).unwrap());
        std::fs::write(&path, &src).unwrap();
        let diags = load_file(&path).unwrap_err();
        (tmp, diags, src)
    }

    #[test]
    fn answers_are_found_among_many_questions_in_constant_time() {
        let quiz = |n: usize| -> quiz::Quiz {
            let mut s = String::from(
                "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {id: big, title: Big}\npassMark: 50\nquestions:\n",
            );
            for i in 0..n {
                s.push_str(&format!(
                    "  - {{id: q-{i}, type: true-false, answer: true, prompt: P, explanation: E}}\n"
                ));
            }
            match load_str(Path::new("big.yaml"), &s) {
                Ok(Document::Quiz(q)) => *q,
                other => panic!("{other:?}"),
            }
        };
        // What `quiz grade` does for each line of the answers file.
        let time = |q: &quiz::Quiz| {
            let ids: Vec<String> = (0..q.questions.len()).map(|i| format!("q-{i}")).collect();
            (0..3)
                .map(|_| {
                    let start = std::time::Instant::now();
                    assert!(ids.iter().all(|id| q.question(id).is_some()));
                    start.elapsed()
                })
                .min()
                .unwrap()
        };
        let (small, big) = (quiz(500), quiz(4_000));
        let (t1, t8) = (time(&small), time(&big));
        // Linear in the answers: 8x. A scan per answer made it 64x (10 s for 30k questions).
        assert!(
            t8 < t1 * 24 + std::time::Duration::from_millis(5),
            "500: {t1:?}, 4k: {t8:?}"
        );
    }

    #[test]
    fn a_duplicate_id_is_pointed_at_where_it_is_written() {
        let (_tmp, diags, src) = lab_with(|s| s.replace("id: pod-denied", "id: policy-file"));
        let d = diags
            .iter()
            .find(|d| d.message.contains("duplicate check id `policy-file`"))
            .unwrap_or_else(|| panic!("{diags:?}"));
        let line = src
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("id: policy-file"))
            .nth(1)
            .unwrap()
            .0
            + 1;
        assert_eq!(d.pos.line, line, "{d}");
        assert!(d.message.contains("(first at line"), "{d}");
    }

    #[test]
    fn an_unknown_top_level_field_names_the_kind() {
        let (_tmp, diags, _) = lab_with(|s| s.replace("tasks:", "taks: []\ntasks:"));
        let d = diags.iter().find(|d| d.message.contains("taks")).unwrap();
        assert_eq!(d.message, "unknown field `taks` in `Lab`");
        assert_eq!(d.hint.as_deref(), Some("did you mean `tasks`?"));
    }

    #[test]
    fn a_tab_in_the_indentation_says_use_spaces() {
        let diags = load_str(Path::new("q.yaml"), "kind: Quiz\nmetadata:\n\tid: x\n").unwrap_err();
        assert!(
            diags[0]
                .hint
                .as_deref()
                .unwrap()
                .contains("spaces, not tabs"),
            "{diags:?}"
        );
        let diags = load_str(
            Path::new("q.yaml"),
            "kind: Quiz\nmetadata:\n  id: x\n title: y\n",
        )
        .unwrap_err();
        assert!(
            diags[0].hint.as_deref().unwrap().contains("line up"),
            "{diags:?}"
        );
    }

    #[test]
    fn links_and_fifos_in_a_lab_folder_are_refused_at_load() {
        let tmp = tempfile::tempdir().unwrap();
        let root = crate::lab::scaffold::new_lab(tmp.path(), "kca-links").unwrap();
        assert!(load_file(&root.join("lab.yaml")).is_ok());
        std::fs::remove_file(root.join("starter/README.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("starter/README.md")).unwrap();
        let fifo = std::ffi::CString::new(
            root.join("fixtures/extra.yaml")
                .as_os_str()
                .as_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let diags = load_file(&root.join("lab.yaml")).unwrap_err();
        let text: String = diags.iter().map(|d| d.to_string()).collect();
        assert!(
            text.contains("`starter/README.md` is a symbolic link (to /etc/passwd)"),
            "{text}"
        );
        assert!(
            text.contains("`fixtures/extra.yaml` is not a regular file"),
            "{text}"
        );
    }
}
