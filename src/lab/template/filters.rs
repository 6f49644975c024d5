//! How large each tera filter's result can be, from bounds on its input and arguments
//! (rules read from tera 1.20's `builtins/filters/*.rs`). A filter without a rule here is
//! refused, so a filter tera adds later cannot grow a value unseen.

use std::collections::HashMap;

use tera::ast::{Expr, ExprVal};

use super::val::Val;

/// An argument: its bound, and its text when it is a string literal.
pub struct Arg<'e> {
    pub val: Val,
    pub expr: &'e Expr,
}

impl Arg<'_> {
    /// The exact text of a literal string argument.
    fn literal(&self) -> Option<&str> {
        match &self.expr.val {
            ExprVal::String(s) if self.expr.filters.is_empty() => Some(s),
            _ => None,
        }
    }

    /// Bound on the argument's text; a literal is exact.
    fn text(&self) -> u64 {
        self.literal().map_or(self.val.text, |s| s.len() as u64)
    }
}

/// The filters a template may use.
pub const NAMES: &[&str] = &[
    "upper",
    "lower",
    "capitalize",
    "title",
    "trim",
    "trim_start",
    "trim_end",
    "trim_start_matches",
    "trim_end_matches",
    "truncate",
    "wordcount",
    "replace",
    "linebreaksbr",
    "indent",
    "striptags",
    "spaceless",
    "escape",
    "escape_xml",
    "addslashes",
    "split",
    "int",
    "float",
    "first",
    "last",
    "nth",
    "join",
    "sort",
    "unique",
    "slice",
    "group_by",
    "filter",
    "map",
    "concat",
    "abs",
    "pluralize",
    "round",
    "length",
    "reverse",
    "json_encode",
    "as_str",
    "get",
    "safe",
    "default",
];

/// Bound on `name`'s result for `input`, or why it is refused.
pub fn result(name: &str, input: Val, args: &HashMap<&str, Arg<'_>>) -> Result<Val, String> {
    let n = input.text;
    let text_arg = |k: &str, default: u64| args.get(k).map_or(default, Arg::text);
    Ok(match name {
        // Case mapping: one character becomes at most three (`ΐ` → `Ϊ́`), each at most as
        // long in UTF-8 per source byte.
        "upper" | "lower" | "capitalize" | "title" => Val::string(n.saturating_mul(3)),
        "trim" | "trim_start" | "trim_end" | "trim_start_matches" | "trim_end_matches"
        | "striptags" | "spaceless" => Val::string(n),
        "truncate" => Val::string(n.saturating_add(text_arg("end", 3))),
        "wordcount" | "int" | "float" | "abs" | "round" | "length" => Val::number(),
        "replace" => {
            // Each match of `from` becomes `to`; an empty `from` matches between every
            // character and at both ends.
            let to = text_arg("to", 0);
            let matches = match args.get("from").and_then(Arg::literal) {
                Some(from) if !from.is_empty() => n / from.len() as u64,
                _ => n.saturating_add(1),
            };
            Val::string(n.saturating_add(matches.saturating_mul(to)))
        }
        "linebreaksbr" => Val::string(n.saturating_mul(4)),
        "indent" => {
            let prefix = text_arg("prefix", 4);
            Val::string(n.saturating_add(n.saturating_add(1).saturating_mul(prefix)))
        }
        // `&#x27;` for `'`: six bytes for one.
        "escape" | "escape_xml" => Val::string(n.saturating_mul(6)),
        "addslashes" => Val::string(n.saturating_mul(2)),
        "split" => {
            // At most one piece per byte, plus the two ends.
            let pieces = n.saturating_add(2);
            Val::list(
                Val::string(n)
                    .size
                    .saturating_add(pieces.saturating_mul(Val::ITEM + Val::NODE)),
                n.saturating_add(pieces.saturating_mul(4)),
                pieces,
                1,
                Val::string(n).size,
            )
        }
        "first" | "last" | "nth" => input.element(),
        "sort" | "unique" | "slice" | "filter" | "map" | "reverse" => input,
        "group_by" => {
            // Keys are the grouped values written out (JSON for non-strings).
            let size = input
                .size
                .saturating_mul(8)
                .saturating_add(input.len.saturating_mul(Val::ENTRY));
            Val::list(size, 8, input.len, input.depth.saturating_add(1), size)
        }
        "concat" => {
            let with = args.get("with").map_or(Val::small(), |a| a.val);
            Val::list(
                input
                    .size
                    .saturating_add(with.size)
                    .saturating_add(Val::ITEM),
                input.text.saturating_add(with.text).saturating_add(2),
                input.len.saturating_add(with.len).saturating_add(1),
                input.depth.max(with.depth.saturating_add(1)),
                input.item.max(with.size),
            )
        }
        "join" => {
            let sep = text_arg("sep", 0);
            Val::string(input.text.saturating_add(input.len.saturating_mul(sep)))
        }
        "pluralize" => Val::string(text_arg("singular", 0).max(text_arg("plural", 1))),
        "json_encode" => Val::string(json_text(input, args.get("pretty"))),
        "as_str" => Val::string(input.text),
        "get" => {
            let default = args.get("default").map_or(Val::small(), |a| a.val);
            Val::max(input.element(), default)
        }
        "safe" | "default" => input,
        _ => return Err(unknown(name)),
    })
}

/// JSON of a value: every value takes at least [`Val::NODE`] bytes of memory and is
/// written in at most six bytes per byte (`\u001f`); pretty printing adds, per value, a
/// line indented two spaces per level.
fn json_text(input: Val, pretty: Option<&Arg<'_>>) -> u64 {
    let compact = input.size.saturating_mul(6);
    let is_compact = pretty.is_none_or(|p| matches!(p.expr.val, ExprVal::Bool(false)));
    if is_compact {
        return compact;
    }
    let values = input.size / Val::NODE + 1;
    compact.saturating_add(
        values.saturating_mul(2u64.saturating_mul(input.depth as u64).saturating_add(2)),
    )
}

fn unknown(name: &str) -> String {
    format!(
        "filter `{name}` is not available in starters (kca knows how large the result of \
         each of these can be: {})",
        NAMES.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_tera_registers_has_a_rule_or_is_refused() {
        // Each name kca allows is one tera has, so each rule describes real code.
        for name in NAMES.iter().filter(|n| !matches!(**n, "safe" | "default")) {
            let e =
                tera::Tera::one_off(&format!("{{{{ 1 | {name} }}}}"), &Default::default(), false)
                    .err()
                    .map(|e| crate::content::lab::error_chain(&e))
                    .unwrap_or_default();
            assert!(!e.contains("not found"), "tera has no filter `{name}`: {e}");
            assert!(
                result(name, Val::small(), &HashMap::new()).is_ok(),
                "{name}"
            );
        }
        let e = tera::Tera::one_off("{{ 1 | urlencode }}", &Default::default(), false).unwrap_err();
        assert!(crate::content::lab::error_chain(&e).contains("not found"));
        assert!(result("urlencode", Val::small(), &HashMap::new()).is_err());
    }

    #[test]
    fn the_instructors_guide_lists_exactly_these_filters() {
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("labs/README.md"),
        )
        .unwrap();
        let list = readme
            .split("tera's built-in filters\n")
            .nth(1)
            .and_then(|r| r.split('`').nth(1))
            .expect("the filter list in labs/README.md");
        let mut listed: Vec<&str> = list.split_whitespace().collect();
        let mut known = NAMES.to_vec();
        listed.sort_unstable();
        known.sort_unstable();
        assert_eq!(listed, known);
    }
}
