//! Text that came from a file or a cluster, made safe to print: control characters
//! (newlines, carriage returns, escape sequences, bidi overrides) are shown as visible
//! escapes, so a file name or a value can never forge a line of kca's output or drive
//! the terminal. Used where such data is turned into a message.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` would act on the terminal or the layout rather than show as text.
fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
        || is_noncharacter(c)
}

/// `s` with every control character written as an escape (`\n`, `\t`, `\u{1b}`).
/// Plain text, Japanese included, comes back unchanged and unallocated.
pub fn escape(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_control(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// JSON text with every character that acts on a terminal (DEL, C1 controls, bidi
/// overrides, line separators) and every XML non-character written as a `\uXXXX`
/// escape: the same document, but one a `cat` to a terminal cannot drive. serde_json
/// already escapes C0 controls; the rest pass through it raw.
pub fn json(text: &str) -> Cow<'_, str> {
    let acts = |c: char| is_control(c) && c > '\u{1f}';
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if acts(c) {
            // Every such character is in the Basic Multilingual Plane except the
            // non-characters U+nFFFE/U+nFFFF above it: those become a surrogate pair.
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", u);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Unicode's non-characters (U+FDD0–U+FDEF, and U+nFFFE/U+nFFFF in every plane).
pub fn is_noncharacter(c: char) -> bool {
    let n = c as u32;
    (0xFDD0..=0xFDEF).contains(&n) || (n & 0xFFFE) == 0xFFFE
}

/// The first character of `s` that [`escape`] would rewrite, line breaks and tabs aside:
/// text kca shows as written (course content) must hold none.
pub fn first_unprintable(s: &str) -> Option<char> {
    s.chars().find(|&c| c != '\n' && c != '\t' && is_control(c))
}

/// A path, escaped for printing.
pub fn path(p: &std::path::Path) -> String {
    escape(&p.to_string_lossy()).into_owned()
}

/// Escapes a multi-line message line by line: kca's own line breaks stay, but each line's
/// control characters (a `\r`, an escape sequence) are shown as text.
pub fn lines(s: &str) -> String {
    s.split('\n')
        .map(|l| escape(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_cannot_forge_output() {
        let name = "x.yaml\n\u{1b}[2J\u{1b}[32m✓ PASS\u{1b}[0m all checks";
        let out = escape(name);
        assert!(!out.contains('\n') && !out.contains('\u{1b}'), "{out}");
        assert_eq!(
            out,
            "x.yaml\\n\\u{1b}[2J\\u{1b}[32m✓ PASS\\u{1b}[0m all checks"
        );
        assert_eq!(escape("ポリシー policy.yaml"), "ポリシー policy.yaml");
        assert!(matches!(escape("plain"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(lines("one\ntwo\rthree"), "one\ntwo\\rthree");
    }
}
