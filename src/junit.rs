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

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even when escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => {}
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
        assert!(xml.contains("<skipped message=\"no\"/>"));
        assert!(xml.contains("<testcase name=\"a\" classname=\"k\" time=\"0.500\"/>"));
    }
}
