//! Course content: the YAML model of labs and quizzes, loading, and lint. Pure: reads
//! files, never a cluster; never prints (problems come back as diagnostics).

use std::path::{Path, PathBuf};

use crate::diag::{Collector, Diagnostic};
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
    Quiz(quiz::Quiz),
    Lab(Box<lab::Lab>),
}

/// Reads and checks one content file: all its problems at once.
pub fn load_file(path: &Path) -> Result<Document, Vec<Diagnostic>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            return Err(vec![file_problem(
                path,
                &format!("cannot read: {e}"),
                "check the path",
            )]);
        }
    };
    let Ok(src) = String::from_utf8(bytes) else {
        return Err(vec![file_problem(
            path,
            "not UTF-8 text",
            "save the file as UTF-8",
        )]);
    };
    load_str(path, &src)
}

/// Checks a content text as if it were the file at `path`.
pub fn load_str(path: &Path, src: &str) -> Result<Document, Vec<Diagnostic>> {
    let mut diags = Collector::new(path, src);
    let node = match yaml::parse_one(src) {
        Ok(n) => n,
        Err(e) => {
            diags.error_hint(
                e.pos,
                format!("invalid YAML: {}", e.message),
                "fix the YAML syntax at this position",
            );
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
            format!("unsupported apiVersion `{api}`"),
            format!("use `apiVersion: {API_VERSION}`"),
        );
    }
    let doc = match kind.as_deref() {
        Some("Quiz") => quiz::decode(&mut d, &fields).map(Document::Quiz),
        Some("Lab") => lab::decode(&mut d, &fields, path).map(|l| Document::Lab(Box::new(l))),
        Some(other) => {
            d.error_hint(
                kind_node.map_or(Pos::default(), |n| n.pos),
                format!("unknown kind `{other}`"),
                "use `kind: Quiz` or `kind: Lab`",
            );
            None
        }
        None => None,
    };
    fields.finish(&mut d, "a content file");
    let diags = d.diags.finish();
    match doc {
        Some(doc) if diags.is_empty() => Ok(doc),
        _ if diags.is_empty() => Err(vec![file_problem(
            path,
            "could not be loaded",
            "run `kca validate` on it",
        )]),
        _ => Err(diags),
    }
}

fn file_problem(path: &Path, message: &str, hint: &str) -> Diagnostic {
    Diagnostic {
        file: path.to_path_buf(),
        pos: Pos { line: 1, col: 1 },
        message: message.to_string(),
        hint: Some(hint.to_string()),
        source_line: None,
        severity: crate::diag::Severity::Error,
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
    let Ok(entries) = std::fs::read_dir(path) else {
        out.push(path.to_path_buf());
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
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
            Ok(Document::Quiz(q)) => quizzes.push(q),
            Ok(Document::Lab(_)) => {}
            Err(d) => problems.extend(d),
        }
    }
    quizzes.sort_by(|a, b| a.id.cmp(&b.id));
    (quizzes, problems)
}
