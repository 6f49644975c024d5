//! JUnit XML for CI systems and LMS graders: one suite per quiz or lab, one case per
//! question or check. Builds the text; printing is `ui`'s job.

/// How one case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(String),
    Error(String),
    Skipped(String),
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub classname: String,
    pub seconds: f64,
    pub outcome: Outcome,
    /// Extra text for `<system-out>` (feedback shown to the learner).
    pub output: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub cases: Vec<Case>,
}

/// XML 1.0's `Char` production: tab, LF, CR, U+0020–U+D7FF, U+E000–U+FFFD and
/// U+10000–U+10FFFF. Anything else (C0 controls, U+FFFE, U+FFFF; surrogates cannot occur
/// in a Rust string) makes the whole document ill-formed even as a character reference,
/// so it is written as U+FFFD instead: the case stays visible and the report parses.
fn xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
}

pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if !xml_char(c) => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Renders suites as one `<testsuites>` document.
pub fn render(suites: &[Suite]) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for s in suites {
        let count = |f: fn(&Outcome) -> bool| s.cases.iter().filter(|c| f(&c.outcome)).count();
        let time: f64 = s.cases.iter().map(|c| c.seconds).sum();
        x.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">\n",
            escape(&s.name),
            s.cases.len(),
            count(|o| matches!(o, Outcome::Failed(_))),
            count(|o| matches!(o, Outcome::Error(_))),
            count(|o| matches!(o, Outcome::Skipped(_))),
            time
        ));
        for c in &s.cases {
            x.push_str(&format!(
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                escape(&c.name),
                escape(&c.classname),
                c.seconds
            ));
            let body = match &c.outcome {
                Outcome::Passed => String::new(),
                Outcome::Failed(m) => format!("      <failure message=\"{}\"/>\n", escape(m)),
                Outcome::Error(m) => format!("      <error message=\"{}\"/>\n", escape(m)),
                Outcome::Skipped(m) => format!("      <skipped message=\"{}\"/>\n", escape(m)),
            };
            let out = c
                .output
                .as_ref()
                .map(|o| format!("      <system-out>{}</system-out>\n", escape(o)))
                .unwrap_or_default();
            if body.is_empty() && out.is_empty() {
                x.push_str("/>\n");
            } else {
                x.push_str(&format!(">\n{body}{out}    </testcase>\n"));
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

/// A document of one suite holding one errored case: how a run that ended in an error
/// (or was interrupted) still leaves one JUnit document.
pub fn error_document(suite: &str, case: &str, message: &str) -> String {
    render(&[Suite {
        name: suite.to_string(),
        cases: vec![Case {
            name: case.to_string(),
            classname: suite.to_string(),
            seconds: 0.0,
            outcome: Outcome::Error(message.to_string()),
            output: None,
        }],
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_escapes() {
        let suite = Suite {
            name: "quiz <m1>".into(),
            cases: vec![
                Case {
                    name: "a".into(),
                    classname: "k".into(),
                    seconds: 0.5,
                    outcome: Outcome::Passed,
                    output: None,
                },
                Case {
                    name: "b".into(),
                    classname: "k".into(),
                    seconds: 0.0,
                    outcome: Outcome::Failed("x & \"y\"".into()),
                    output: None,
                },
                Case {
                    name: "c".into(),
                    classname: "k".into(),
                    seconds: 0.0,
                    outcome: Outcome::Skipped("no\u{1}".into()),
                    output: None,
                },
            ],
        };
        let xml = render(&[suite]);
        assert!(
            xml.contains(
                "name=\"quiz &lt;m1&gt;\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"1\""
            ),
            "{xml}"
        );
        assert!(xml.contains("<failure message=\"x &amp; &quot;y&quot;\"/>"));
        assert!(xml.contains("<skipped message=\"no\u{fffd}\"/>"));
        assert!(xml.contains("<testcase name=\"a\" classname=\"k\" time=\"0.500\"/>"));
    }

    #[test]
    fn characters_xml_forbids_are_replaced_in_every_field() {
        let bad = "r\u{fffe}u\u{ffff}l\u{1}e\u{0}\u{1b}[2J\u{b}";
        let suite = Suite {
            name: format!("suite {bad}"),
            cases: vec![Case {
                name: format!("rule {bad}"),
                classname: format!("file-{bad}.yaml"),
                seconds: 0.0,
                outcome: Outcome::Failed(format!("message {bad}")),
                output: Some(format!("out {bad}\ttab\nline")),
            }],
        };
        let xml = render(&[suite]);
        roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        for c in ['\u{fffe}', '\u{ffff}', '\u{1}', '\u{0}', '\u{1b}', '\u{b}'] {
            assert!(!xml.contains(c), "{c:?} in {xml}");
        }
        assert!(xml.contains("rule r\u{fffd}u\u{fffd}l\u{fffd}e"), "{xml}");
        assert!(
            xml.contains("tab\nline"),
            "tab and line breaks are XML characters"
        );
        let e = error_document("kca", "interrupted", "stopped \u{ffff}");
        roxmltree::Document::parse(&e).unwrap();
    }
}
