//! `kca lab new ID`: writes a new lab folder with example tasks over most check kinds, a
//! starter, a solution, a fixture, probes and mutants — a lab that validates and that
//! `lab verify --offline` proves as written (derived mutants included), for an instructor
//! to edit. Its lab.yaml starts with the `# yaml-language-server: $schema=…` line; the
//! schema files go beside the labs folder. Never overwrites an existing folder.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The lab's files, each with `__ID__` where the new id goes (`scaffold/`, beside this
/// file: real files, so they read as a lab does).
const FILES: [(&str, &str); 13] = [
    ("lab.yaml", include_str!("scaffold/lab.yaml")),
    (
        "starter/README.md",
        include_str!("scaffold/starter/README.md"),
    ),
    (
        "starter/policy.yaml",
        include_str!("scaffold/starter/policy.yaml"),
    ),
    (
        "starter/rbac.yaml",
        include_str!("scaffold/starter/rbac.yaml"),
    ),
    (
        "starter/generate.yaml",
        include_str!("scaffold/starter/generate.yaml"),
    ),
    ("starter/gate.sh", include_str!("scaffold/starter/gate.sh")),
    (
        "solution/policy.yaml",
        include_str!("scaffold/solution/policy.yaml"),
    ),
    (
        "solution/rbac.yaml",
        include_str!("scaffold/solution/rbac.yaml"),
    ),
    (
        "solution/generate.yaml",
        include_str!("scaffold/solution/generate.yaml"),
    ),
    (
        "solution/gate.sh",
        include_str!("scaffold/solution/gate.sh"),
    ),
    (
        "fixtures/namespace.yaml",
        include_str!("scaffold/fixtures/namespace.yaml"),
    ),
    (
        "probes/pod-without-team.yaml",
        include_str!("scaffold/probes/pod-without-team.yaml"),
    ),
    (
        "probes/pod-elsewhere.yaml",
        include_str!("scaffold/probes/pod-elsewhere.yaml"),
    ),
];

/// The folder, beside the labs folder, that holds the schemas the `$schema` line of a new
/// lab points at (`../../schemas/lab.schema.json` from `labs/<id>/lab.yaml`).
pub const SCHEMA_DIR: &str = "schemas";

/// What `lab new` wrote.
#[derive(Debug)]
pub struct Created {
    /// The new lab's folder.
    pub root: PathBuf,
    /// Schema files written (missing, or an older kca's) beside the labs folder.
    pub schemas: Vec<PathBuf>,
}

/// Writes the new lab under `dir/ID` and returns that folder.
pub fn new_lab(dir: &Path, id: &str) -> Result<PathBuf> {
    let ok = !id.is_empty()
        && id.len() <= 40
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.starts_with('-')
        && !id.ends_with('-');
    if !ok {
        return Err(Error::usage(
            crate::error::msg(
                format!("`{id}` はラボの ID に使えません"),
                format!("`{id}` is not a valid lab id"),
            ),
            crate::error::msg(
                "小文字・数字・`-` を使います。例: `kca-my-lab`",
                "use lowercase letters, digits and `-`, e.g. `kca-my-lab`",
            ),
        ));
    }
    let root = dir.join(id);
    if root.exists() {
        return Err(Error::usage(
            crate::error::msg(
                format!("{} はもうあります", root.display()),
                format!("{} already exists", root.display()),
            ),
            crate::error::msg(
                "別の ID にするか、そのラボを編集します",
                "pick another id, or edit that lab",
            ),
        ));
    }
    for (rel, text) in FILES {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text.replace("__ID__", id))?;
    }
    Ok(root)
}

/// [`new_lab`], then the schemas its `$schema` line names, written into `schemas/` beside
/// the labs folder when missing or written by another kca version (a file of someone
/// else's under that name is left alone).
pub fn new_lab_with_schemas(dir: &Path, id: &str) -> Result<Created> {
    let root = new_lab(dir, id)?;
    let schema_dir = dir.parent().unwrap_or(Path::new(".")).join(SCHEMA_DIR);
    let mut schemas = Vec::new();
    for kind in [crate::schema::Kind::Lab, crate::schema::Kind::Quiz] {
        let path = schema_dir.join(kind.file_name());
        let want = crate::schema::text(kind);
        let write = match std::fs::read_to_string(&path) {
            Ok(have) => have != want && crate::schema::is_kca_schema(&have),
            Err(_) => !path.exists(),
        };
        if write {
            std::fs::create_dir_all(&schema_dir)?;
            std::fs::write(&path, want)?;
            schemas.push(path);
        }
    }
    Ok(Created { root, schemas })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::{Document, load_file};

    fn load(root: &Path) -> crate::content::lab::Lab {
        match load_file(&root.join("lab.yaml")) {
            Ok(Document::Lab(lab)) => *lab,
            Err(d) => panic!("{}", d.iter().map(|d| d.to_string()).collect::<String>()),
            Ok(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_new_lab_validates_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let root = new_lab(tmp.path(), "kca-demo").unwrap();
        let lab = load(&root);
        let mut kinds: Vec<&str> = lab.checks().map(|(_, c)| c.spec.kind()).collect();
        kinds.sort();
        kinds.dedup();
        assert_eq!(
            kinds,
            [
                "accepted",
                "admission",
                "can-i",
                "command",
                "file",
                "generated",
                "least-privilege",
                "resource"
            ]
        );
        assert_eq!(lab.mutants.len(), 2);
        assert!(lab.advice.is_empty(), "{:?}", lab.advice);
        assert!(new_lab(tmp.path(), "kca-demo").is_err());
        assert!(new_lab(tmp.path(), "Bad_Id").is_err());
    }

    /// The bug of issue 16: the scaffold's generate rule was refused at creation (the
    /// background controller may not create ConfigMaps in kind-config's baseline, and the
    /// scaffold never granted it), so its own solution failed three checks.
    #[test]
    fn a_new_lab_is_proved_by_verify_as_written() {
        let tmp = tempfile::tempdir().unwrap();
        let labs = tmp.path().join("course/labs");
        let made = new_lab_with_schemas(&labs, "my-lab").unwrap();
        let v = crate::lab::verify::verify(&load(&made.root)).unwrap();
        let all: Vec<_> = std::iter::once(&v.starter)
            .chain([&v.solution])
            .chain(&v.mutants)
            .filter(|s| !s.ok)
            .collect();
        assert!(v.ok, "{all:#?}");
        let score = v.score.unwrap();
        assert!(score.survivors.is_empty() && score.killed > 5, "{score:?}");
        assert!(v.solution.failed.is_empty());
    }

    #[test]
    fn the_schema_line_points_at_the_schemas_written_beside_the_labs_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let labs = tmp.path().join("course/labs");
        let made = new_lab_with_schemas(&labs, "my-lab").unwrap();
        let text = std::fs::read_to_string(made.root.join("lab.yaml")).unwrap();
        let first = text.lines().next().unwrap();
        let rel = first
            .strip_prefix("# yaml-language-server: $schema=")
            .unwrap_or_else(|| panic!("{first}"));
        let schema = made.root.join(rel);
        assert_eq!(
            std::fs::read_to_string(&schema).unwrap(),
            crate::schema::text(crate::schema::Kind::Lab)
        );
        assert_eq!(made.schemas.len(), 2);
        // A second lab finds them current and writes nothing; a file of someone else's
        // under that name is left alone, an older kca schema is refreshed.
        assert!(
            new_lab_with_schemas(&labs, "second")
                .unwrap()
                .schemas
                .is_empty()
        );
        std::fs::write(&schema, "{\"mine\": true}").unwrap();
        let quiz = tmp.path().join("course/schemas/quiz.schema.json");
        std::fs::write(
            &quiz,
            "{\"$id\": \"https://kca.dev/schemas/quiz.schema.json\"}",
        )
        .unwrap();
        let third = new_lab_with_schemas(&labs, "third").unwrap();
        assert_eq!(third.schemas, [quiz]);
        assert_eq!(
            std::fs::read_to_string(&schema).unwrap(),
            "{\"mine\": true}"
        );
    }
}
