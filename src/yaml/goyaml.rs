//! YAML written as Go's `go.yaml.in/yaml/v3` encoder writes it (indent 2, line width 80),
//! for texts that must read byte for byte as a Go program's: Kyverno's "blocked" admission
//! message (pkg/webhooks/utils/block.go `GetBlockedMessages`). Only maps with string keys
//! and string leaves; anything else is `None`. Style choice and folding follow
//! yaml.v3's emitterc.go (`yaml_emitter_analyze_scalar`, `…_select_scalar_style`,
//! `…_write_plain_scalar`, `…_write_single_quoted_scalar`), key order its sorter.go.

use std::cmp::Ordering;

use serde_json::Value;

const BEST_WIDTH: usize = 80;
const INDENT: usize = 2;

/// The document yaml.v3 writes for `value` (no `---`), or `None` for a shape it does not
/// cover.
pub fn encode(value: &Value) -> Option<String> {
    let mut out = String::new();
    map(value, 0, &mut out)?;
    Some(out)
}

fn map(value: &Value, indent: usize, out: &mut String) -> Option<()> {
    let Value::Object(m) = value else {
        return None;
    };
    if m.is_empty() {
        out.push_str("{}\n");
        return Some(());
    }
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort_by(|a, b| natural(a, b));
    for k in keys {
        let start = out.len();
        out.extend(std::iter::repeat_n(' ', indent));
        // A key is a simple key: never folded.
        write(k, style(k)?, indent, indent, false, out);
        out.push(':');
        match &m[k] {
            Value::String(s) => {
                out.push(' ');
                let column = out[start..].chars().count();
                write(s, style(s)?, indent + INDENT, column, true, out);
                out.push('\n');
            }
            v @ Value::Object(_) => {
                out.push('\n');
                map(v, indent + INDENT, out)?;
            }
            _ => return None,
        }
    }
    Some(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
}

/// yaml.v3 `stringv` then `select_scalar_style`, for a block context.
fn style(s: &str) -> Option<Style> {
    if s.contains('\n') {
        // A literal block: not covered.
        return None;
    }
    if resolves_to_other_than_string(s) {
        return Some(Style::Double);
    }
    let a = analyze(s);
    if a.special {
        return Some(Style::Double);
    }
    if s.is_empty() || !a.block_plain {
        return Some(Style::Single);
    }
    Some(Style::Plain)
}

struct Analysis {
    block_plain: bool,
    special: bool,
}

/// `yaml_emitter_analyze_scalar` for a one-line value.
fn analyze(s: &str) -> Analysis {
    let chars: Vec<char> = s.chars().collect();
    let mut block_indicators = false;
    let mut special = false;
    if s.starts_with("---") || s.starts_with("...") {
        block_indicators = true;
    }
    let n = chars.len();
    for (i, &c) in chars.iter().enumerate() {
        let next_space = chars.get(i + 1).is_none_or(|c| *c == ' ' || *c == '\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' if next_space => block_indicators = true,
                '-' if next_space => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if next_space => block_indicators = true,
                '#' if chars[i - 1] == ' ' || chars[i - 1] == '\t' => block_indicators = true,
                _ => {}
            }
        }
        let printable = !c.is_control() && c != '\u{feff}';
        if !printable {
            special = true;
        }
    }
    let leading_space = chars.first() == Some(&' ');
    let trailing_space = n > 0 && chars[n - 1] == ' ';
    Analysis {
        block_plain: !(block_indicators || leading_space || trailing_space),
        special,
    }
}

/// Whether yaml.v3 would read the plain text back as something else than a string
/// (`resolve`: null, booleans, numbers, `.inf`, `.nan`), so it quotes it.
fn resolves_to_other_than_string(s: &str) -> bool {
    matches!(
        s,
        "" | "~"
            | "null"
            | "Null"
            | "NULL"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | ".inf"
            | ".Inf"
            | ".INF"
            | "+.inf"
            | "-.inf"
            | ".nan"
            | ".NaN"
            | ".NAN"
            // yaml 1.1 booleans yaml.v3 still quotes (`isOldBool`).
            | "y"
            | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) && !s.is_empty()
        || s.parse::<f64>().is_ok()
        || s.strip_prefix("0x")
            .is_some_and(|h| !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Writes `s` in `style`, folding at spaces past the line width when `breaks`.
fn write(s: &str, style: Style, indent: usize, mut column: usize, breaks: bool, out: &mut String) {
    let chars: Vec<char> = s.chars().collect();
    let n = chars.len();
    let quote = match style {
        Style::Plain => None,
        Style::Single => Some('\''),
        Style::Double => Some('"'),
    };
    if let Some(q) = quote {
        out.push(q);
        column += 1;
    }
    let mut spaces = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let next_space = chars.get(i + 1) == Some(&' ');
            let inner = style == Style::Plain || (i != 0 && i != n - 1);
            if breaks && !spaces && column > BEST_WIDTH && !next_space && inner {
                out.push('\n');
                out.extend(std::iter::repeat_n(' ', indent));
                column = indent;
            } else {
                out.push(' ');
                column += 1;
            }
            spaces = true;
            continue;
        }
        spaces = false;
        match (style, c) {
            (Style::Single, '\'') => {
                out.push_str("''");
                column += 2;
            }
            (Style::Double, '"' | '\\') => {
                out.push('\\');
                out.push(c);
                column += 2;
            }
            _ => {
                out.push(c);
                column += 1;
            }
        }
    }
    if let Some(q) = quote {
        out.push(q);
    }
}

/// yaml.v3's `keyList.Less` on two strings: letters before other characters, runs of
/// digits compared as numbers.
fn natural(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut digits = false;
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            digits = ar[i].is_ascii_digit();
            i += 1;
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            let a_first = if digits { al } else { bl };
            return if a_first {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0u128, 0u128);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                if ar[j - 1] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
                j -= 1;
            }
        }
        let (ai, bi) = (digits_at(&ar, i, &mut an), digits_at(&br, i, &mut bn));
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// Reads the run of digits at `i` into `n` (after what it holds); the index past it.
fn digits_at(chars: &[char], mut i: usize, n: &mut u128) -> usize {
    while i < chars.len() && chars[i].is_ascii_digit() {
        *n = n
            .saturating_mul(10)
            .saturating_add(chars[i] as u128 - '0' as u128);
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn folds_single_quoted_messages_as_go_does() {
        // From a live Kyverno's answer (the conformance suite's
        // validate/clusterpolicy/cornercases/variable-substitution-failure-messages).
        let m = "failed to check deny conditions: failed to substitute variables in condition key: failed to resolve image at path : jmespath value must be a string";
        let got = encode(&json!({"test-panic": {"test-panic": m}})).unwrap();
        assert_eq!(
            got,
            "test-panic:\n  test-panic: 'failed to check deny conditions: failed to substitute variables in\n    condition key: failed to resolve image at path : jmespath value must be a string'\n"
        );
    }

    #[test]
    fn plain_when_nothing_needs_quotes_and_quotes_doubled() {
        let got = encode(&json!({"p": {"r": "label app is required", "s": "it's: here"}})).unwrap();
        assert_eq!(got, "p:\n  r: label app is required\n  s: 'it''s: here'\n");
        assert_eq!(
            encode(&json!({"p": {"r": "true"}})).unwrap(),
            "p:\n  r: \"true\"\n"
        );
        assert!(encode(&json!({"p": {"r": "a\nb"}})).is_none());
    }

    #[test]
    fn keys_sort_naturally() {
        let mut keys = vec!["rule-10", "rule-2", "rule-1", "a", "B"];
        keys.sort_by(|a, b| natural(a, b));
        assert_eq!(keys, vec!["B", "a", "rule-1", "rule-2", "rule-10"]);
    }
}
