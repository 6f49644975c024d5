//! Whether Go's `regexp.Compile` surely accepts a pattern, for `cel.ValidateRegexLiterals`
//! (cel-go v0.26.0 `cel/validator.go`: `compileRegex`), which the API server runs on every
//! `matches` literal. kca has no RE2 parser: a pattern is vouched for only when the `regex`
//! crate parses it and it keeps to syntax both engines read alike (Go `regexp/syntax`):
//! no flags beyond `imsU`, no Unicode class names (`\p{…}`, whose tables differ), no class
//! set operations or nested classes, no escapes Go lacks (`\<`, `\>`), repetition counts
//! within Go's 1000, no repetition of a repetition (Go's "invalid nested repetition
//! operator"), shallow nesting. Anything else is "not sure", never "invalid".

/// Deepest group nesting vouched for (Go allows 1000, the `regex` crate 250 by default).
const MAX_NESTING: usize = 100;
/// Go's `maxRepeat`.
const MAX_REPEAT: u32 = 1000;
/// Longest pattern vouched for.
const MAX_LEN: usize = 4096;

pub(super) fn surely_valid(p: &str) -> bool {
    if p.len() > MAX_LEN || !p.is_ascii() || regex_syntax::Parser::new().parse(p).is_err() {
        return false;
    }
    let b = p.as_bytes();
    let mut i = 0;
    let mut depth = 0usize;
    // Whether the previous item was a repetition operator (a lazy `?` may follow once).
    let mut after_repeat = false;
    let mut after_lazy = false;
    while i < b.len() {
        let c = b[i];
        let repeat_here = matches!(c, b'*' | b'+' | b'?') || (c == b'{' && counted(b, i).is_some());
        if repeat_here {
            if c == b'?' && after_repeat && !after_lazy {
                after_lazy = true;
                i += 1;
                continue;
            }
            if after_repeat {
                return false;
            }
            if c == b'{' {
                let Some((end, ok)) = counted(b, i) else {
                    return false;
                };
                if !ok {
                    return false;
                }
                i = end;
            } else {
                i += 1;
            }
            after_repeat = true;
            after_lazy = false;
            continue;
        }
        after_repeat = false;
        after_lazy = false;
        match c {
            b'\\' => {
                if !escape_ok(b.get(i + 1).copied()) {
                    return false;
                }
                i += 2;
            }
            b'[' => {
                let Some(end) = class_end(b, i) else {
                    return false;
                };
                i = end;
            }
            b'(' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return false;
                }
                if b.get(i + 1) == Some(&b'?') {
                    let Some(end) = group_flags(b, i + 2) else {
                        return false;
                    };
                    i = end;
                } else {
                    i += 1;
                }
            }
            b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            // A `{` that is no repetition is a literal in Go; the `regex` crate refused it
            // already if it reads it otherwise.
            _ => i += 1,
        }
    }
    true
}

/// A counted repetition `{n}`, `{n,}`, `{n,m}` at `i`: where it ends, and whether its
/// counts are within Go's limit.
fn counted(b: &[u8], i: usize) -> Option<(usize, bool)> {
    let mut j = i + 1;
    let mut nums: Vec<u32> = Vec::new();
    let mut cur: Option<u32> = None;
    let mut commas = 0;
    while j < b.len() {
        match b[j] {
            d @ b'0'..=b'9' => {
                let v = cur
                    .unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(u32::from(d - b'0'));
                cur = Some(v);
            }
            b',' if commas == 0 && cur.is_some() => {
                nums.extend(cur.take());
                commas += 1;
            }
            b'}' => {
                nums.extend(cur);
                if nums.is_empty() || (commas == 0 && nums.len() != 1) {
                    return None;
                }
                return Some((j + 1, nums.iter().all(|n| *n <= MAX_REPEAT)));
            }
            _ => return None,
        }
        j += 1;
    }
    None
}

/// An escape both engines read alike: ASCII punctuation, or one of Go's letter escapes
/// the `regex` crate has with the same meaning.
fn escape_ok(c: Option<u8>) -> bool {
    match c {
        Some(c) if c.is_ascii_punctuation() => !matches!(c, b'<' | b'>'),
        Some(c) => b"dDsSwWbBAzntrfv".contains(&c),
        None => false,
    }
}

/// The end of the class opening at `i`, when it holds only characters, ranges, escapes
/// and `[:name:]` classes.
fn class_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if b.get(j) == Some(&b'^') {
        j += 1;
    }
    // A leading `]` is a literal.
    if b.get(j) == Some(&b']') {
        j += 1;
    }
    while j < b.len() {
        match b[j] {
            b']' => return Some(j + 1),
            b'\\' => {
                // Go reads no assertion (`\b`, `\A`) in a class.
                let e = b.get(j + 1).copied();
                if !escape_ok(e) || matches!(e, Some(b'b' | b'B' | b'A' | b'z')) {
                    return None;
                }
                j += 2;
            }
            b'[' if b.get(j + 1) == Some(&b':') => {
                let close = b[j..].windows(2).position(|w| w == b":]")?;
                j += close + 2;
            }
            b'[' => return None,
            b'&' | b'~' if b.get(j + 1) == Some(&b[j]) => return None,
            b'-' if b.get(j + 1) == Some(&b'-') => return None,
            _ => j += 1,
        }
    }
    None
}

/// After `(?`: a non-capturing group, a named group, or flags of `imsU`.
fn group_flags(b: &[u8], mut j: usize) -> Option<usize> {
    if b.get(j) == Some(&b'P') {
        j += 1;
    }
    if b.get(j) == Some(&b'<') {
        let close = b[j..].iter().position(|c| *c == b'>')?;
        let name = &b[j + 1..j + close];
        if name.is_empty() || !name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            return None;
        }
        return Some(j + close + 1);
    }
    while j < b.len() {
        match b[j] {
            b'i' | b'm' | b's' | b'U' | b'-' => j += 1,
            b':' | b')' => return Some(j + 1),
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::surely_valid;

    #[test]
    fn only_patterns_both_engines_accept_are_vouched_for() {
        for p in [
            "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            "\\bjcmd\\b",
            "^(?i)latest$",
            "^sha256:[a-f0-9]{64}$",
            "a{2,5}?b*?",
            "[[:alpha:]]+",
            "^(?P<name>x)(?:y|z)$",
            "^[^/]+/[^:]+:[0-9.]+$",
        ] {
            assert!(surely_valid(p), "{p}");
        }
        for p in [
            "(",          // refused by both
            "a**",        // Go: invalid nested repetition operator
            "a{1001}",    // Go: invalid repeat count
            "(?x) a",     // Go lacks the x flag
            "\\<word\\>", // the regex crate's word boundaries
            "\\p{Greek}", // Unicode tables
            "[a-z--c]",   // class difference in the regex crate
            "[a[b]]",     // nested class
            "a{2}{3}",
        ] {
            assert!(!surely_valid(p), "{p}");
        }
    }
}
