//! A check on output the replay knows only in part, judged when it asks no more than the
//! known part tells: every use of the variable is `contains($var, 'word')` for a word
//! the output's [`Unknown::decides`] names (its unknown parts never hold that word).

use super::exec::Text;

/// Most uses of one variable a check may make for this reading.
const MAX_USES: usize = 16;

/// Whether `check` (its text) reads `$var` only as `contains($var, 'w')` with words `t`
/// decides; then `t.s` may stand for the live text.
pub fn decided(check: &str, var: &str, t: &Text) -> bool {
    let Some(u) = &t.unknown else {
        return true;
    };
    let needle = format!("${var}");
    let mut uses = 0;
    let mut rest = check;
    while let Some(at) = rest.find(&needle) {
        uses += 1;
        if uses > MAX_USES {
            return false;
        }
        let before = rest[..at].trim_end();
        let after = &rest[at + needle.len()..];
        // `$stdout` is not a prefix of a longer name.
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            rest = after;
            continue;
        }
        if !before.ends_with("contains(") {
            return false;
        }
        let Some(word) = literal_argument(after) else {
            return false;
        };
        if !u.decides.iter().any(|w| w == word) {
            return false;
        }
        rest = after;
    }
    uses > 0
}

/// `, 'word')` (or double quotes) at the start of `s`: the word.
fn literal_argument(s: &str) -> Option<&str> {
    let s = s.trim_start().strip_prefix(',')?.trim_start();
    let quote = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let body = &s[1..];
    let end = body.find(quote)?;
    body[end + 1..]
        .trim_start()
        .starts_with(')')
        .then(|| &body[..end])
}

#[cfg(test)]
mod tests {
    use super::super::exec::Unknown;
    use super::*;

    fn partial(decides: &[&str]) -> Text {
        Text {
            s: "Normal PolicyApplied policy/p ConfigMap default/foo: pass\n".into(),
            unknown: Some(Unknown {
                why: "a table".into(),
                decides: decides.iter().map(|w| w.to_string()).collect(),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn only_contains_of_a_decided_word_reads_partial_output() {
        let t = partial(&["PolicyApplied"]);
        assert!(decided(
            "{\"(contains($stdout, 'PolicyApplied'))\": true}",
            "stdout",
            &t
        ));
        assert!(!decided(
            "{\"(contains($stdout, 'foo'))\": true}",
            "stdout",
            &t
        ));
        assert!(!decided("{\"($stdout)\": \"x\"}", "stdout", &t));
        assert!(!decided(
            "{\"(contains($stdout, 'PolicyApplied') && $stdout == '')\": true}",
            "stdout",
            &t
        ));
        assert!(!decided(
            "{\"(contains($stdout, 'PolicyApplied'))\": true}",
            "stdout",
            &partial(&[])
        ));
    }
}
