//! JSON Schemas (draft-07, what yaml-language-server reads best) for `lab.yaml` and quiz
//! files: `kca schema lab|quiz`, the files under `schemas/`, and the `$schema` line
//! `kca lab new` writes. Written by hand after the decoders (`content::quiz`,
//! `content::lab`), which stay the authority: the schema is for editors (completion,
//! hover, early red squiggles), `kca validate` is the check. `sync_tests` keeps the two
//! in step: every field a decoder reads is in the schema and every schema field is read,
//! both refuse an unknown one, and every shipped lab and quiz passes the schema
//! (`check`, a small draft-07 validator). Never reads files or prints.

use serde_json::{Map, Value, json};

pub mod check;
mod lab;
#[cfg(test)]
mod sync_tests;

/// Which content file a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// `labs/<id>/lab.yaml`
    Lab,
    /// `quizzes/*.yaml`
    Quiz,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Lab => "lab",
            Kind::Quiz => "quiz",
        }
    }

    /// The file name under `schemas/` (and in the `$schema` line of a new lab).
    pub fn file_name(self) -> &'static str {
        match self {
            Kind::Lab => "lab.schema.json",
            Kind::Quiz => "quiz.schema.json",
        }
    }
}

/// The schema of `kind` as a JSON value.
pub fn schema(kind: Kind) -> Value {
    match kind {
        Kind::Lab => lab::schema(),
        Kind::Quiz => quiz(),
    }
}

/// The schema as the text of `schemas/<kind>.schema.json` (what `kca schema` prints).
pub fn text(kind: Kind) -> String {
    let mut s = serde_json::to_string_pretty(&schema(kind)).unwrap_or_default();
    s.push('\n');
    s
}

/// Where a schema's `$id` says it belongs (an identifier; nothing is fetched from it).
const ID_BASE: &str = "https://kca.dev/schemas/";

/// Whether `text` is a kca schema file (of any version), so `lab new` may refresh it.
pub fn is_kca_schema(text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|v| {
        v.get("$id")
            .and_then(Value::as_str)
            .is_some_and(|id| id.starts_with(ID_BASE))
    })
}

/// The outer document: draft-07, `$id`, title, the top object and its definitions.
fn document(kind: Kind, title: &str, description: &str, top: Value, defs: Value) -> Value {
    let mut doc = Map::new();
    doc.insert(
        "$schema".into(),
        json!("http://json-schema.org/draft-07/schema#"),
    );
    doc.insert(
        "$id".into(),
        json!(format!("{ID_BASE}{}", kind.file_name())),
    );
    doc.insert("title".into(), json!(title));
    doc.insert("description".into(), json!(description));
    if let Value::Object(top) = top {
        doc.extend(top);
    }
    let mut all = common_definitions();
    if let Value::Object(defs) = defs {
        all.extend(defs);
    }
    doc.insert("definitions".into(), Value::Object(all));
    Value::Object(doc)
}

/// `{"$ref": "#/definitions/NAME"}`, with a description when given.
fn r(name: &str) -> Value {
    json!({"$ref": format!("#/definitions/{name}")})
}

/// A closed mapping: these properties, these required, nothing else (the decoders
/// refuse unknown fields).
fn closed(description: &str, required: &[&str], properties: Value) -> Value {
    let mut m = Map::new();
    if !description.is_empty() {
        m.insert("description".into(), json!(description));
    }
    m.insert("type".into(), json!("object"));
    if !required.is_empty() {
        m.insert("required".into(), json!(required));
    }
    m.insert("properties".into(), properties);
    m.insert("additionalProperties".into(), json!(false));
    Value::Object(m)
}

/// `properties` of `base` and `extra` together (insertion order kept: base first).
fn merged(base: &Value, extra: Value) -> Value {
    let mut m = base.as_object().cloned().unwrap_or_default();
    if let Value::Object(e) = extra {
        m.extend(e);
    }
    Value::Object(m)
}

/// `value` with a `description` (for hover in editors).
fn described(description: &str, value: Value) -> Value {
    let mut m = Map::new();
    m.insert("description".into(), json!(description));
    if let Value::Object(v) = value {
        m.extend(v);
    }
    Value::Object(m)
}

/// A list of `items`.
fn list(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// A whole number in `min..=max`.
fn int(min: i64, max: i64) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max})
}

/// The variant objects of a union discriminated by `key` (`type` of a question, `kind`
/// of a check): `allOf` of `if key == v then <variant>`, which yaml-language-server
/// follows for completion and reports per variant (a `oneOf` would say "matches none").
fn discriminated(key: &str, variants: &[(&str, &str)]) -> Value {
    Value::Array(
        variants
            .iter()
            .map(|(value, def)| {
                json!({
                    "if": {"properties": {key: {"const": value}}, "required": [key]},
                    "then": r(def),
                })
            })
            .collect(),
    )
}

/// Definitions both schemas share.
fn common_definitions() -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "text".into(),
        json!({
            "description": "Learner-facing text: one string for every language, or {ja: …, en: …} (Japanese first, English second; at least one).",
            "oneOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        "ja": {"description": "日本語 (the course's own language)", "$ref": "#/definitions/scalar"},
                        "en": {"description": "English", "$ref": "#/definitions/scalar"}
                    },
                    "additionalProperties": false,
                    "minProperties": 1
                }
            ]
        }),
    );
    m.insert(
        "scalar".into(),
        json!({
            "description": "A string (an unquoted number or true/false is read as its text).",
            "type": ["string", "number", "boolean"]
        }),
    );
    m.insert(
        "lessonLink".into(),
        json!({
            "description": "A lesson section, `module-N#anchor` (the anchor of a `## Heading {#anchor}` in lessons/module-N/{ja,en}.md).",
            "type": "string",
            "pattern": "^module-[0-9]+#[a-z0-9-]+$"
        }),
    );
    m
}

const QUIZ_DESCRIPTION: &str = "A kca quiz (quizzes/*.yaml). Reference: quizzes/README.md. \
Check with `kca validate`, which also lints for answers a test-wise learner could guess.";

/// The quiz question types and the definition of each.
const QUESTION_TYPES: [(&str, &str); 6] = [
    ("single", "question-single"),
    ("multi", "question-multi"),
    ("true-false", "question-true-false"),
    ("short", "question-short"),
    ("numeric", "question-numeric"),
    ("order", "question-order"),
];

fn quiz() -> Value {
    let top = closed(
        "",
        &["apiVersion", "kind", "metadata", "passMark", "questions"],
        json!({
            "apiVersion": {"const": crate::content::API_VERSION},
            "kind": {"const": "Quiz"},
            "metadata": closed(
                "Who the quiz is.",
                &["id", "title"],
                json!({
                    "id": described("The quiz id (`kca quiz run ID`).", r("scalar")),
                    "title": r("text"),
                    "module": described("The course module it belongs to.", int(0, 99)),
                    "description": r("text")
                }),
            ),
            "passMark": described("Percent of the total points needed to pass.", int(0, 100)),
            "questions": {"type": "array", "minItems": 1, "items": r("question")}
        }),
    );
    let common = json!({
        "id": described("Unique in the quiz; the key of an answers file.", r("scalar")),
        "type": {"enum": QUESTION_TYPES.iter().map(|(t, _)| *t).collect::<Vec<_>>()},
        "prompt": r("text"),
        "explanation": described("Shown after the answer, right or wrong.", r("text")),
        "concepts": described("Concept tags: a failed lab check with a shared tag queues this question.", list(r("scalar"))),
        "points": described("Default 1.", int(0, 100)),
        "hints": described("Shown one at a time (`h` at the prompt).", list(r("text"))),
        "lesson": r("lessonLink")
    });
    let base_required = ["id", "type", "prompt", "explanation"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        base_required.iter().chain(extra).copied().collect()
    };
    let choices = json!({
        "choices": {"type": "array", "minItems": 2, "items": r("choice")},
        "answer": described(
            "The right choice id(s), instead of `correct: true` on the choices.",
            json!({"oneOf": [r("scalar"), list(r("scalar"))]}),
        )
    });
    let defs = json!({
        "question": {
            "description": "One question; `type` says which fields it takes.",
            "type": "object",
            "required": base_required,
            "properties": common,
            "allOf": discriminated("type", &QUESTION_TYPES)
        },
        "question-single": closed("One right choice.", &with(&["choices"]), merged(&common, choices.clone())),
        "question-multi": closed(
            "Several right choices.",
            &with(&["choices"]),
            merged(&common, merged(&choices, json!({
                "partialCredit": described("Points in proportion to the choices got right (default: all or nothing).", json!({"type": "boolean"}))
            }))),
        ),
        "question-true-false": closed(
            "A statement, true or false.",
            &with(&["answer"]),
            merged(&common, json!({
                "answer": {"type": "boolean"},
                "feedback": closed("Feedback per answer given.", &[], json!({"true": r("text"), "false": r("text")}))
            })),
        ),
        "question-short": closed(
            "A typed answer, compared after NFKC, case folding and collapsing spaces.",
            &with(&["accept"]),
            merged(&common, json!({
                "accept": {"type": "array", "minItems": 1, "items": r("scalar")},
                "acceptRegex": described("Regular expressions (Rust regex syntax) that also accept.", list(json!({"type": "string"})))
            })),
        ),
        "question-numeric": closed(
            "A number, right within `tolerance`.",
            &with(&["answer"]),
            merged(&common, json!({
                "answer": {"type": "number"},
                "tolerance": {"type": "number", "minimum": 0},
                "unit": r("text")
            })),
        ),
        "question-order": closed(
            "Items to put in order: listed here in the right order, always shown shuffled.",
            &with(&["items"]),
            merged(&common, json!({
                "items": {"type": "array", "minItems": 2, "items": closed("", &["id", "text"], json!({"id": r("scalar"), "text": r("text")}))}
            })),
        ),
        "choice": closed(
            "One choice of a single or multi question.",
            &["id", "text"],
            json!({
                "id": r("scalar"),
                "text": r("text"),
                "correct": {"type": "boolean"},
                "feedback": described("Shown when this choice is picked.", r("text"))
            }),
        )
    });
    document(Kind::Quiz, "kca Quiz", QUIZ_DESCRIPTION, top, defs)
}

/// `kca schema lab|quiz`: the schema on stdout, as the file under `schemas/` holds it;
/// under `-o json`, inside kca's document (`{"schemaVersion": 1, "kind", "schema"}`).
pub fn command(ctx: &crate::ctx::Ctx, kind: Kind) -> crate::error::Result<crate::exit::Exit> {
    if ctx.settings.output == crate::settings::OutputFormat::Json {
        ctx.printer
            .json(&json!({"kind": kind.name(), "schema": schema(kind)}));
    } else {
        ctx.printer.document(&text(kind));
    }
    Ok(crate::exit::Exit::Success)
}
