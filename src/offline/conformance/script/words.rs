//! A check on output the replay knows only in part, judged when it asks no more than the
//! known part tells: every use of the variable is `contains($var, 'word')` for a word
//! the output's [`Unknown::decides`] names (its unknown parts never hold that word). The
//! uses are read as [`super::partial::contains_uses`] reads them for known text.

use super::exec::Text;

/// Whether `check` (its text) reads `$var` only as `contains($var, 'w')` with words `t`
/// decides; then `t.s` may stand for the live text.
pub fn decided(check: &str, var: &str, t: &Text) -> bool {
    let Some(u) = &t.unknown else {
        return true;
    };
    super::partial::contains_uses(check, var)
        .is_ok_and(|uses| !uses.is_empty() && uses.iter().all(|c| u.decides.contains(&c.literal)))
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
