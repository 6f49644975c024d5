//! Property test: loading content never panics, whatever the bytes.

use std::path::Path;

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn loading_arbitrary_text_never_panics(src in ".{0,400}") {
        let _ = kca::content::load_str(Path::new("x.yaml"), &src);
    }

    #[test]
    fn loading_yaml_like_text_never_panics(src in "[a-z:\\-\\[\\]{}&*!|>'\" \\n#,?0-9]{0,300}") {
        let _ = kca::content::load_str(Path::new("x.yaml"), &src);
    }

    #[test]
    fn quiz_shaped_mutations_never_panic(
        key in "(apiVersion|kind|metadata|passMark|questions|id|type|choices|answer|items|accept|acceptRegex|tolerance|points)",
        value in "(\\[\\]|\\{\\}|~|-1|1e999|\"\\(\"|\\[a, b\\]|true|x)",
    ) {
        let src = format!(
            "apiVersion: kca.dev/v1alpha1\nkind: Quiz\nmetadata: {{id: q, title: t}}\npassMark: 50\nquestions:\n  - id: a\n    type: single\n    prompt: p\n    explanation: e\n    {key}: {value}\n    choices: [{{id: a, text: A, correct: true}}, {{id: b, text: B}}]\n"
        );
        let _ = kca::content::load_str(Path::new("x.yaml"), &src);
    }
}
