//! The schemas and the decoders agree. Every shipped lab and quiz, the `lab new`
//! scaffold and the examples of quizzes/README.md pass the schema; then, at every mapping
//! where a closed schema applied, an unknown field is written in: the schema must refuse
//! it, and so must the decoder — whose "takes: …" hint lists every field it reads there.
//! Those fields must be the schema's properties, and each schema property must be read
//! by the decoder somewhere. No list of fields is kept by hand on either side.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Kind, check, schema};

const PROBE_KEY: &str = "zzqx-not-a-field";

/// Fields a decoder reads only to refuse them with a better message than "unknown".
const READ_TO_REFUSE: [(&str, &str, &str); 1] = [(
    "/definitions/grantAllowed",
    "namespace",
    "`allowed` is an envelope in every namespace; the decoder says so instead of `unknown field`",
)];

pub(crate) struct Doc {
    pub path: PathBuf,
    pub kind: Kind,
    pub value: Value,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The ```yaml blocks of a Markdown file, with their first line: a block starting with
/// `apiVersion:` is a whole quiz; one starting with `- ` is questions, put into a quiz.
pub(crate) fn quiz_examples(md: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut block: Option<(usize, String)> = None;
    for (i, line) in md.lines().enumerate() {
        match (&mut block, line.trim_end()) {
            (None, "```yaml") => block = Some((i + 2, String::new())),
            (Some(_), "```") => {
                let (at, text) = block.take().unwrap();
                let text = if text.starts_with("apiVersion:") {
                    text
                } else {
                    format!(
                        "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {{id: example, title: Example}}\npassMark: 50\nquestions:\n{text}"
                    )
                };
                out.push((at, text));
            }
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    out
}

fn one(path: &Path, kind: Kind, text: &str) -> Doc {
    let mut docs =
        crate::yaml::parse_json_stream(text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(docs.len(), 1, "{}", path.display());
    Doc {
        path: path.to_path_buf(),
        kind,
        value: docs.remove(0),
    }
}

/// Every content file kca ships, the scaffold (with a task that stages a `patch` and a
/// `delete`, which no shipped lab does), and the README's examples.
pub(crate) fn corpus(tmp: &Path) -> Vec<Doc> {
    let mut out = Vec::new();
    let mut labs: Vec<PathBuf> = std::fs::read_dir(repo().join("labs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path().join("lab.yaml")))
        .filter(|p| p.is_file())
        .collect();
    labs.push(repo().join("tests/testlab/lab.yaml"));
    let root = crate::lab::scaffold::new_lab(&tmp.join("labs"), "kca-sync").unwrap();
    let scaffold = root.join("lab.yaml");
    let text = std::fs::read_to_string(&scaffold).unwrap().replace(
        "\nmutants:\n",
        "\n  - id: incident\n    title: {ja: 障害, en: Incident}\n    instructions: {ja: 直します。, en: Fix it.}\n    setup:\n      - patch: {object: {apiVersion: v1, kind: Namespace, name: kca-sync}, merge: {metadata: {labels: {incident: \"yes\"}}}}\n      - delete: {apiVersion: v1, kind: Namespace, name: kca-sync}\n    checks:\n      - {id: incident-file, kind: file, path: policy.yaml, parses: true}\nmutants:\n",
    );
    std::fs::write(&scaffold, text).unwrap();
    labs.push(scaffold);
    labs.sort();
    for p in labs {
        out.push(one(&p, Kind::Lab, &std::fs::read_to_string(&p).unwrap()));
    }
    let mut quizzes: Vec<PathBuf> = crate::content::discover(&repo().join("quizzes"));
    quizzes.sort();
    for p in quizzes {
        out.push(one(&p, Kind::Quiz, &std::fs::read_to_string(&p).unwrap()));
    }
    let readme = repo().join("quizzes/README.md");
    for (line, text) in quiz_examples(&std::fs::read_to_string(&readme).unwrap()) {
        let path = tmp.join(format!("README.md-line-{line}.yaml"));
        out.push(one(&path, Kind::Quiz, &text));
    }
    out
}

/// Every closed mapping schema of a schema document, by pointer, with its properties.
fn closed_schemas(v: &Value, at: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
    match v {
        Value::Object(m) => {
            if m.get("additionalProperties") == Some(&Value::Bool(false))
                && let Some(Value::Object(props)) = m.get("properties")
            {
                out.insert(at.to_string(), props.keys().cloned().collect());
            }
            for (k, sub) in m {
                // `if` holds conditions, not shapes; `properties` holds names.
                if k != "if" {
                    closed_schemas(
                        sub,
                        &format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                        out,
                    );
                }
            }
        }
        Value::Array(items) => {
            for (i, sub) in items.iter().enumerate() {
                closed_schemas(sub, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The fields the decoder reads at the mapping where `PROBE_KEY` was written in, from its
/// "unknown field" hint; `None` when it did not refuse the key.
fn decoder_reads(doc: &Doc, value: &Value) -> Result<BTreeSet<String>, String> {
    let text = serde_json::to_string_pretty(value).unwrap();
    let diags = match crate::content::load_str(&doc.path, &text) {
        Ok(_) => return Err("the decoder accepted it".into()),
        Err(d) => d,
    };
    let wanted = format!("unknown field `{PROBE_KEY}`");
    let Some(d) = diags.iter().find(|d| d.message.starts_with(&wanted)) else {
        return Err(format!(
            "no `{wanted}` among: {}",
            diags
                .iter()
                .map(|d| d.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    };
    let hint = d.hint.as_deref().unwrap_or("");
    if hint.ends_with("takes no fields") {
        return Ok(BTreeSet::new());
    }
    let Some((_, names)) = hint.split_once(" takes: ") else {
        return Err(format!("hint without the fields read: {hint}"));
    };
    Ok(names
        .split(", ")
        .map(|n| n.trim_matches('`').to_string())
        .collect())
}

#[test]
fn every_shipped_lab_and_quiz_and_every_readme_example_passes_its_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = corpus(tmp.path());
    assert!(docs.iter().filter(|d| d.kind == Kind::Lab).count() >= 5);
    assert!(docs.iter().filter(|d| d.kind == Kind::Quiz).count() >= 10);
    let mut broken = Vec::new();
    for d in &docs {
        // The decoder loads it (README examples are not on disk as files of a course).
        if let Err(diags) =
            crate::content::load_str(&d.path, &serde_json::to_string(&d.value).unwrap())
        {
            broken.push(format!(
                "{}: the decoder refuses it: {}",
                d.path.display(),
                diags[0]
            ));
        }
        for p in check::validate(&schema(d.kind), &d.value) {
            broken.push(format!("{}: {p}", d.path.display()));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_schemas_and_the_decoders_take_the_same_fields_and_refuse_the_same_unknown_one() {
    let tmp = tempfile::tempdir().unwrap();
    let docs = corpus(tmp.path());
    let mut broken = Vec::new();
    let mut probes = 0;
    for kind in [Kind::Lab, Kind::Quiz] {
        let root = schema(kind);
        let mut declared = BTreeMap::new();
        closed_schemas(&root, "", &mut declared);
        // Up to two places per closed schema, in different files, the smallest files
        // first (each probe decodes its whole file again).
        let mut samples: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
        let mut order: Vec<usize> = (0..docs.len()).filter(|&i| docs[i].kind == kind).collect();
        order.sort_by_key(|&i| docs[i].value.to_string().len());
        for i in order {
            let d = &docs[i];
            // A second place only from a small file: a large lab takes a second to decode.
            let small = d.value.to_string().len() < 24_000;
            let (_, closed) = check::walk(&root, &d.value);
            let mut seen_here = BTreeSet::new();
            for c in closed {
                let s = samples.entry(c.schema.clone()).or_default();
                if (s.is_empty() || (s.len() < 2 && small)) && seen_here.insert(c.schema.clone()) {
                    s.push((i, c.at));
                }
            }
        }
        let mut read: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (sp, places) in &samples {
            let props = &declared[sp];
            for (i, at) in places {
                let d = &docs[*i];
                let mut v = d.value.clone();
                v.pointer_mut(at)
                    .and_then(Value::as_object_mut)
                    .unwrap()
                    .insert(PROBE_KEY.into(), Value::from(1));
                probes += 1;
                let place = format!("{} at {at} (schema {sp})", d.path.display());
                if check::validate(&root, &v).is_empty() {
                    broken.push(format!("{place}: the schema accepts an unknown field"));
                }
                match decoder_reads(d, &v) {
                    Err(why) => broken.push(format!("{place}: {why}")),
                    Ok(fields) => {
                        for f in fields.difference(props) {
                            let excused = READ_TO_REFUSE.iter().any(|(s, k, _)| s == sp && k == f);
                            if !excused {
                                broken.push(format!(
                                    "{place}: the decoder reads `{f}`, the schema lacks it"
                                ));
                            }
                        }
                        read.entry(sp.clone()).or_default().extend(fields);
                    }
                }
            }
        }
        for (sp, props) in &declared {
            match read.get(sp) {
                None => broken.push(format!(
                    "{kind:?} schema {sp}: no shipped file or example has this mapping"
                )),
                Some(fields) => {
                    for p in props.difference(fields) {
                        broken.push(format!(
                            "{kind:?} schema {sp}: `{p}` is never read by the decoder"
                        ));
                    }
                }
            }
        }
    }
    eprintln!("{probes} probes");
    assert!(probes > 60, "{probes} probes");
    assert!(
        broken.is_empty(),
        "{} problems:\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn the_committed_schema_files_are_what_kca_schema_prints() {
    for kind in [Kind::Lab, Kind::Quiz] {
        let path = repo().join("schemas").join(kind.file_name());
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == super::text(kind),
            "{} is stale: run `cargo run -- schema {} > {}`",
            path.display(),
            kind.name(),
            path.display()
        );
    }
}
