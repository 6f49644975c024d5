//! A small JSON Schema (draft-07) validator: the keywords kca's own schemas use (`type`,
//! `properties`, `required`, `additionalProperties`, `minProperties`/`maxProperties`,
//! `items`, `minItems`, `enum`, `const`, `minimum`/`maximum`, `minLength`, `pattern`,
//! `oneOf`/`anyOf`/`allOf`/`not`, `if`/`then`/`else`, local `$ref`s). It proves the
//! shipped content passes the schemas and that the schemas refuse what the decoders
//! refuse; it is not a general validator (a keyword it does not know is an error, so a
//! schema cannot quietly use one it ignores).

use serde_json::Value;

/// A problem: where in the instance (a JSON pointer) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub at: String,
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.at.is_empty() { "/" } else { &self.at };
        write!(f, "{at}: {}", self.message)
    }
}

/// Where a closed mapping schema (one with `additionalProperties: false`) applied: the
/// instance's pointer and the schema's pointer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Closed {
    pub at: String,
    pub schema: String,
}

/// The problems of `instance` against the schema document `root`.
pub fn validate(root: &Value, instance: &Value) -> Vec<Problem> {
    walk(root, instance).0
}

/// [`validate`], and where each closed mapping schema applied (on the branches that
/// matched), so a test can probe the same mapping in the decoder.
pub fn walk(root: &Value, instance: &Value) -> (Vec<Problem>, Vec<Closed>) {
    let mut v = Run {
        root,
        problems: Vec::new(),
        closed: Vec::new(),
        depth: 0,
    };
    v.check(root, "", instance, "");
    (v.problems, v.closed)
}

const KNOWN: [&str; 29] = [
    "$schema",
    "$id",
    "$ref",
    "title",
    "description",
    "definitions",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "items",
    "minItems",
    "enum",
    "const",
    "minimum",
    "maximum",
    "minLength",
    "pattern",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "default",
    "examples",
];

struct Run<'a> {
    root: &'a Value,
    problems: Vec<Problem>,
    closed: Vec<Closed>,
    depth: usize,
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, ty: &str) -> bool {
    match ty {
        "integer" => match v {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

impl Run<'_> {
    fn problem(&mut self, at: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            at: at.to_string(),
            message: message.into(),
        });
    }

    /// Validates `inst` at `at` in a fresh run; its problems and closed schemas are
    /// returned, not recorded.
    fn trial(
        &mut self,
        schema: &Value,
        sp: &str,
        inst: &Value,
        at: &str,
    ) -> (Vec<Problem>, Vec<Closed>) {
        let (p, c) = (
            std::mem::take(&mut self.problems),
            std::mem::take(&mut self.closed),
        );
        self.check(schema, sp, inst, at);
        (
            std::mem::replace(&mut self.problems, p),
            std::mem::replace(&mut self.closed, c),
        )
    }

    fn check(&mut self, schema: &Value, sp: &str, inst: &Value, at: &str) {
        if self.depth > 64 {
            return self.problem(at, "schema nesting too deep");
        }
        self.depth += 1;
        self.keywords(schema, sp, inst, at);
        self.depth -= 1;
    }

    fn keywords(&mut self, schema: &Value, sp: &str, inst: &Value, at: &str) {
        let Some(s) = schema.as_object() else {
            if schema == &Value::Bool(false) {
                self.problem(at, "not allowed here");
            }
            return;
        };
        if let Some(k) = s.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return self.problem(
                at,
                format!("schema at {sp} uses `{k}`, which this validator does not know"),
            );
        }
        if let Some(Value::String(target)) = s.get("$ref") {
            let ptr = target.strip_prefix('#').unwrap_or(target);
            match self.root.pointer(ptr) {
                Some(t) => self.check(t, ptr, inst, at),
                None => self.problem(at, format!("unresolved $ref {target}")),
            }
        }
        if let Some(ty) = s.get("type") {
            let types: Vec<&str> = match ty {
                Value::String(t) => vec![t.as_str()],
                Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                _ => vec![],
            };
            if !types.iter().any(|t| has_type(inst, t)) {
                return self.problem(
                    at,
                    format!("expected {}, found {}", types.join(" or "), type_name(inst)),
                );
            }
        }
        if let Some(c) = s.get("const")
            && c != inst
        {
            self.problem(at, format!("must be {c}"));
        }
        if let Some(Value::Array(options)) = s.get("enum")
            && !options.contains(inst)
        {
            let names: Vec<String> = options.iter().map(Value::to_string).collect();
            self.problem(at, format!("must be one of {}", names.join(", ")));
        }
        self.numbers_and_strings(s, inst, at);
        if let Value::Object(map) = inst {
            self.object(s, sp, map, at);
        }
        if let (Value::Array(items), Some(item_schema)) = (inst, s.get("items")) {
            for (i, item) in items.iter().enumerate() {
                self.check(
                    item_schema,
                    &format!("{sp}/items"),
                    item,
                    &format!("{at}/{i}"),
                );
            }
        }
        if let (Value::Array(items), Some(min)) = (inst, s.get("minItems").and_then(Value::as_u64))
            && (items.len() as u64) < min
        {
            self.problem(at, format!("needs at least {min} items"));
        }
        self.combinators(s, sp, inst, at);
    }

    fn numbers_and_strings(&mut self, s: &serde_json::Map<String, Value>, inst: &Value, at: &str) {
        if let Some(x) = inst.as_f64() {
            if let Some(min) = s.get("minimum").and_then(Value::as_f64)
                && x < min
            {
                self.problem(at, format!("{x} is below {min}"));
            }
            if let Some(max) = s.get("maximum").and_then(Value::as_f64)
                && x > max
            {
                self.problem(at, format!("{x} is above {max}"));
            }
        }
        if let Value::String(text) = inst {
            if let Some(min) = s.get("minLength").and_then(Value::as_u64)
                && (text.chars().count() as u64) < min
            {
                self.problem(at, format!("needs at least {min} characters"));
            }
            if let Some(Value::String(p)) = s.get("pattern") {
                match regex::Regex::new(p) {
                    Ok(re) if !re.is_match(text) => self.problem(at, format!("does not match {p}")),
                    Ok(_) => {}
                    Err(e) => self.problem(at, format!("bad pattern {p}: {e}")),
                }
            }
        }
    }

    fn object(
        &mut self,
        s: &serde_json::Map<String, Value>,
        sp: &str,
        map: &serde_json::Map<String, Value>,
        at: &str,
    ) {
        if let Some(Value::Array(req)) = s.get("required") {
            for k in req.iter().filter_map(Value::as_str) {
                if !map.contains_key(k) {
                    self.problem(at, format!("missing property `{k}`"));
                }
            }
        }
        let props = s.get("properties").and_then(Value::as_object);
        for (k, v) in map {
            let at_k = format!("{at}/{}", escape(k));
            match props.and_then(|p| p.get(k)) {
                Some(ps) => self.check(ps, &format!("{sp}/properties/{}", escape(k)), v, &at_k),
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => self.problem(at, format!("unknown property `{k}`")),
                    Some(extra @ Value::Object(_)) => {
                        self.check(extra, &format!("{sp}/additionalProperties"), v, &at_k)
                    }
                    _ => {}
                },
            }
        }
        let count = map.len() as u64;
        if let Some(min) = s.get("minProperties").and_then(Value::as_u64)
            && count < min
        {
            self.problem(at, format!("needs at least {min} properties"));
        }
        if let Some(max) = s.get("maxProperties").and_then(Value::as_u64)
            && count > max
        {
            self.problem(at, format!("takes at most {max} properties"));
        }
        if s.get("additionalProperties") == Some(&Value::Bool(false)) && props.is_some() {
            self.closed.push(Closed {
                at: at.to_string(),
                schema: sp.to_string(),
            });
        }
    }

    fn combinators(
        &mut self,
        s: &serde_json::Map<String, Value>,
        sp: &str,
        inst: &Value,
        at: &str,
    ) {
        if let Some(Value::Array(all)) = s.get("allOf") {
            for (i, sub) in all.iter().enumerate() {
                self.check(sub, &format!("{sp}/allOf/{i}"), inst, at);
            }
        }
        for key in ["oneOf", "anyOf"] {
            let Some(Value::Array(options)) = s.get(key) else {
                continue;
            };
            let mut matched = Vec::new();
            let mut nearest: Option<(usize, Vec<Problem>)> = None;
            for (i, sub) in options.iter().enumerate() {
                let (p, c) = self.trial(sub, &format!("{sp}/{key}/{i}"), inst, at);
                // An option of another type is the farthest: its problems say least.
                let wrong_type = p
                    .iter()
                    .any(|p| p.at == at && p.message.starts_with("expected "));
                let rank = p.len() + if wrong_type { 1 << 20 } else { 0 };
                if p.is_empty() {
                    matched.push(c);
                } else if nearest.as_ref().is_none_or(|(r, _)| rank < *r) {
                    nearest = Some((rank, p));
                }
            }
            match (key, matched.len()) {
                (_, 0) => {
                    // The option that came closest says what is wrong.
                    self.problems
                        .extend(nearest.map(|(_, p)| p).unwrap_or_default());
                }
                ("oneOf", n) if n > 1 => {
                    self.problem(at, format!("matches {n} options of oneOf, expected one"))
                }
                _ => matched.into_iter().for_each(|c| self.closed.extend(c)),
            }
        }
        if let Some(not) = s.get("not") {
            let (p, _) = self.trial(not, &format!("{sp}/not"), inst, at);
            if p.is_empty() {
                self.problem(at, format!("must not match the schema at {sp}/not"));
            }
        }
        if let Some(cond) = s.get("if") {
            let (p, _) = self.trial(cond, &format!("{sp}/if"), inst, at);
            let branch = if p.is_empty() { "then" } else { "else" };
            if let Some(b) = s.get(branch) {
                self.check(b, &format!("{sp}/{branch}"), inst, at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_keywords_kca_uses_accept_and_refuse() {
        let root = json!({
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"$ref": "#/definitions/n"},
                "b": {"oneOf": [{"type": "string", "pattern": "^x"}, {"type": "array", "items": {"enum": [1, 2]}, "minItems": 1}]},
                "c": {"type": "object", "properties": {"k": {"const": true}}, "additionalProperties": false, "maxProperties": 1},
                "d": {"type": "string", "not": {"pattern": "\\.\\."}}
            },
            "allOf": [{"if": {"properties": {"a": {"const": 1}}}, "then": {"required": ["b"]}}],
            "definitions": {"n": {"type": "integer", "minimum": 0, "maximum": 9}}
        });
        assert!(validate(&root, &json!({"a": 2})).is_empty());
        assert!(
            validate(
                &root,
                &json!({"a": 1, "b": "xy", "c": {"k": true}, "d": "a/b"})
            )
            .is_empty()
        );
        let bad = |v: Value| -> Vec<String> {
            validate(&root, &v).iter().map(|p| p.to_string()).collect()
        };
        // `if` without `required` holds for an object without the key (draft-07).
        assert_eq!(
            bad(json!({})),
            ["/: missing property `a`", "/: missing property `b`"]
        );
        assert_eq!(bad(json!({"a": 10})), ["/a: 10 is above 9"]);
        assert_eq!(bad(json!({"a": 1})), ["/: missing property `b`"]);
        assert_eq!(
            bad(json!({"a": 2, "b": [3]})),
            ["/b/0: must be one of 1, 2"]
        );
        assert_eq!(
            bad(json!({"a": 2, "b": []})),
            ["/b: needs at least 1 items"]
        );
        assert_eq!(
            bad(json!({"a": 2, "c": {"z": 1}})),
            ["/c: unknown property `z`"]
        );
        assert_eq!(bad(json!({"a": 2, "d": "../x"})).len(), 1);
        assert_eq!(
            bad(json!({"a": 1.5})),
            ["/a: expected integer, found number"]
        );
        let (_, closed) = walk(&root, &json!({"a": 2, "c": {}}));
        assert_eq!(
            closed,
            [Closed {
                at: "/c".into(),
                schema: "/properties/c".into()
            }]
        );
    }

    #[test]
    fn a_keyword_the_validator_does_not_know_is_an_error_not_ignored() {
        let root = json!({"type": "object", "patternProperties": {"^x": {}}});
        let p = validate(&root, &json!({}));
        assert!(p[0].message.contains("`patternProperties`"), "{p:?}");
    }
}
