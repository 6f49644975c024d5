//! Templates that would take unbounded memory are refused before they run, at the tag that
//! would grow too large; ordinary starters keep rendering.

use super::*;

use super::tests::ctx;

/// `{% set a = a ~ a %}` `n` times after `{% set a = "x" %}`, one tag a line.
fn doubling(n: usize) -> String {
    let mut t = "{% set a = \"x\" %}\n".to_string();
    t.push_str(&"{% set a = a ~ a %}\n".repeat(n));
    t + "{{ a | length }}\n"
}

/// The hostile shapes: each doubles (or worse) a value per step.
fn hostile() -> Vec<(&'static str, String)> {
    let chain: String = (0..40)
        .map(|i| format!("{{% set v{} = v{i} ~ v{i} %}}", i + 1))
        .collect();
    vec![
        ("set a = a ~ a", doubling(35)),
        (
            "a chain of new names",
            format!("{{% set v0 = lab %}}{chain}{{{{ v40 }}}}"),
        ),
        (
            "replace by itself",
            "{% set a = \"xxxxxxxx\" %}".to_string()
                + &"{% set a = a | replace(from=\"x\", to=a) %}".repeat(8),
        ),
        (
            "indent by itself",
            "{% set a = \"x\ny\" %}".to_string()
                + &"{% set a = a | indent(prefix=a, blank=true) %}".repeat(12),
        ),
        (
            "concat lists",
            "{% set a = [lab] %}".to_string() + &"{% set a = a | concat(with=a) %}".repeat(40),
        ),
        (
            "join with itself",
            "{% set a = lab | split(pat=\"\") %}{% set s = lab %}".to_string()
                + &"{% set s = a | join(sep=s) %}".repeat(12),
        ),
        (
            "doubling inside if",
            "{% set a = lab %}".to_string()
                + &"{% if lab %}{% set a = a ~ a %}{% else %}{% set b = 1 %}{% endif %}".repeat(40),
        ),
        (
            "a filter section collecting a loop",
            format!(
                "{{% filter upper %}}{{% for i in range(end=10000) %}}{{% for j in range(end=9) \
                 %}}{}{{{{ lab_dir }}}}{{% endfor %}}{{% endfor %}}{{% endfilter %}}",
                "x".repeat(200)
            ),
        ),
        (
            "default that doubles",
            "{% set a = lab %}".to_string()
                + &"{% set a = nope | default(value=a ~ a ~ a) %}".repeat(30),
        ),
        (
            "lists of lists",
            "{% set a = lab %}".to_string() + &"{% set a = [a, a] %}".repeat(40),
        ),
        (
            "loop over a grown text",
            "{% set a = lab %}".to_string()
                + &"{% set a = a ~ a %}".repeat(12)
                + "{% for c in a %}{% for d in a %}x{% endfor %}{% endfor %}",
        ),
        (
            "escape of escape",
            "{% set a = \"''''''''\" %}".to_string() + &"{% set a = a | escape %}".repeat(20),
        ),
    ]
}

#[test]
fn memory_hungry_templates_are_refused_before_they_run() {
    for (name, text) in hostile() {
        let e = memory_bound(&text, &ctx()).expect_err(name);
        assert!(
            e.contains("memory") || e.contains("deep") || e.contains("loop"),
            "{name}: {e}"
        );
        // Refused by the analysis, so `render` gives the same answer without running it.
        assert_eq!(render(&text, &ctx()).unwrap_err(), e, "{name}");
    }
}

#[test]
fn a_refusal_names_the_line_column_and_tag_that_grows_too_large() {
    let e = render(&doubling(35), &ctx()).unwrap_err();
    // `a` holds 2^(k-1) bytes after line k; making it reads two copies of the last one
    // and grows a buffer to it, and the earlier values count as held: line 23 (4 MiB) is
    // the first over 16 MiB.
    assert!(
        e.starts_with("line 23, column 1 (`{% set a = a ~ a %}`): rendering may need about"),
        "{e}"
    );
    assert!(e.contains("at most 16 MiB"), "{e}");
    assert!(e.contains("the lab's `vars`"), "{e}");
    let text = "{% set a = lab %}".to_string() + &"\n  {% set a = [a] %}".repeat(40);
    let e = render(&text, &ctx()).unwrap_err();
    assert!(e.contains("more than 32 deep"), "{e}");
    assert!(
        e.starts_with("line 34, column 3 (`{% set a = [a] %}`)"),
        "{e}"
    );
}

#[test]
fn growth_below_the_limit_renders() {
    // 2^16 bytes: well within the limit, and rendered for real.
    let out = render(&doubling(16), &ctx()).unwrap();
    assert_eq!(out, "\n".repeat(17) + "65536\n");
    // A loop's variables start afresh at every turn (tera clears the loop's frame), which
    // is why a loop body is bounded once, not once per turn: `s` is "D", then "MO".
    let text = "{% set parts = namespace | split(pat=\"e\") %}{% set s = \"\" %}\
                {% for p in parts %}{% set s = s ~ p | upper %}{{ s }};{% endfor %}\
                {% filter upper %}{% for i in range(end=3) %}{{ lab }}{% endfor %}{% endfilter %}\
                {% if lab is matching(\"^kca-\") %}m{% elif lab is starting_with(\"x\") %}x\
                {% else %}n{% endif %}{{ [lab, namespace] | join(sep=\"/\") | json_encode }}\
                {% for i in range(end=0) %}never{% else %}{% set e = \"empty\" %}{% endfor %}\
                {{ e | default(value=\"unset\") }} {{ \"de\" in namespace }}";
    assert_eq!(
        render(text, &ctx()).unwrap(),
        "D;MO;KCA-DEMOKCA-DEMOKCA-DEMOm\"kca-demo/demo\"empty true"
    );
}

#[test]
fn output_is_capped_while_it_is_written() {
    // 10,000 × 200 bytes: small to hold, too long to write.
    let text = format!(
        "{{% for i in range(end=10000) %}}{}{{% endfor %}}",
        "y".repeat(200)
    );
    assert!(memory_bound(&text, &ctx()).is_ok());
    assert_eq!(render(&text, &ctx()).unwrap_err(), too_long());
}

#[test]
fn functions_filters_and_tests_without_a_size_rule_are_refused() {
    for (text, want) in [
        (
            "{{ lab | urlencode }}",
            "filter `urlencode` is not available",
        ),
        ("{{ now() }}", "function `now` is not available"),
        ("{% if lab is divisibleby(2) %}{% endif %}", ""),
        (
            "{% if lab is nonsense %}{% endif %}",
            "test `nonsense` is not available",
        ),
        ("{{ __tera_context }}", "`__tera_context` is not available"),
    ] {
        match memory_bound(text, &ctx()) {
            Ok(_) => assert!(want.is_empty(), "{text} was accepted"),
            Err(e) => assert!(!want.is_empty() && e.contains(want), "{text}: {e}"),
        }
    }
}

#[test]
fn deeply_nested_templates_are_refused_not_a_stack_overflow() {
    for (text, want) in [
        (
            "{% if lab %}".repeat(2000) + "x" + &"{% endif %}".repeat(2000),
            "line 1, column 385 (`{% if lab %}`): blocks nest more than 32 deep",
        ),
        (
            "{{ 1".to_string() + &" + 1".repeat(5000) + " }}",
            "line 1, column 1 (`{{ 1 + 1",
        ),
        (
            "{% if lab".to_string() + &" and lab".repeat(5000) + " %}x{% endif %}",
            "has 5000 operators",
        ),
        (
            "{{ ".to_string() + &"(".repeat(500) + "1" + &")".repeat(500) + " }}",
            "brackets nested 500 deep",
        ),
    ] {
        let e = render(&text, &ctx()).unwrap_err();
        assert!(e.contains(want), "{e}");
    }
    // Within the limits, nesting renders.
    let text = "{% if lab %}".repeat(30) + "x" + &"{% endif %}".repeat(30);
    assert_eq!(render(&text, &ctx()).unwrap(), "x");
    let text = "{{ 1".to_string() + &" + 1".repeat(99) + " }}";
    assert_eq!(render(&text, &ctx()).unwrap(), "100");
}
