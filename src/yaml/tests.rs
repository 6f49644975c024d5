//! Tests of `yaml`: the core schema, positions, budgets, and parsing in pieces.

use super::*;
use serde_json::json;

#[test]
fn scalars_follow_the_core_schema() {
    let cases = [
        ("a: 1", json!({"a": 1})),
        ("a: -2", json!({"a": -2})),
        ("a: 1.5", json!({"a": 1.5})),
        ("a: '1'", json!({"a": "1"})),
        ("a: true", json!({"a": true})),
        ("a: yes", json!({"a": "yes"})),
        ("a: ~", json!({"a": null})),
        ("a:", json!({"a": null})),
        ("a: 0x10", json!({"a": 16})),
        ("a: 1e3", json!({"a": 1000.0})),
        ("a: 1.2.3", json!({"a": "1.2.3"})),
        ("a: !!str 5", json!({"a": "5"})),
        ("a: 100m", json!({"a": "100m"})),
        ("a: |\n  x\n", json!({"a": "x\n"})),
    ];
    for (src, want) in cases {
        assert_eq!(parse_one(src).unwrap().to_json(), want, "{src}");
    }
}

#[test]
fn into_json_gives_what_to_json_gives() {
    let src = "a: [1, -2.5, x, ~, true]\n1: one\ntrue: yes\n~: nothing\n2.5: f\nb: {c: &x {d: e}, f: *x}\n";
    let doc = parse_one(src).unwrap();
    let want = doc.to_json();
    assert_eq!(want["1"], json!("one"));
    assert_eq!(doc.into_json(), want);
}

#[test]
fn positions_are_one_based() {
    let doc = parse_one("a:\n  b: [1, x]\n").unwrap();
    let b = doc.get("a").unwrap().get("b").unwrap();
    assert_eq!(b.pos, Pos { line: 2, col: 6 });
    let Yaml::Seq(items) = &b.value else { panic!() };
    assert_eq!(items[1].pos, Pos { line: 2, col: 10 });
}

#[test]
fn streams_skip_empty_documents() {
    let docs = parse_json_stream("---\n---\na: 1\n---\nb: 2\n").unwrap();
    assert_eq!(docs, vec![json!({"a": 1}), json!({"b": 2})]);
}

#[test]
fn errors_carry_a_position() {
    let err = parse_stream("a: 1\nb: [\n").unwrap_err();
    assert!(err.pos.line >= 2, "{err:?}");
    let dup = parse_stream("a: 1\na: 2\n").unwrap_err();
    assert_eq!(dup.pos, Pos { line: 2, col: 1 });
    assert!(dup.message.contains("duplicate key `a`"));
}

#[test]
fn aliases_expand_and_are_bounded() {
    let doc = parse_one("x: &a {k: v}\ny: *a\n").unwrap().to_json();
    assert_eq!(doc, json!({"x": {"k": "v"}, "y": {"k": "v"}}));
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let prev = format!("*a{}", i - 1);
        bomb.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    assert!(parse_stream(&bomb).is_err());
}

#[test]
fn alias_expansion_is_budgeted_per_run_not_per_file() {
    // Each file stays under the per-run budget on its own; together they do not.
    let mut file = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..5 {
        let prev = format!("*a{}", i - 1);
        file.push_str(&format!("a{i}: &a{i} [{}]\n", vec![prev; 10].join(", ")));
    }
    let results: Vec<_> = (0..12).map(|_| parse_stream(&file).is_ok()).collect();
    assert!(results[0], "one file is fine");
    assert!(results.contains(&false), "{results:?}");
}

#[test]
fn duplicate_keys_past_the_scan_are_found_by_value_not_by_spelling() {
    // More keys than a scan checks, so the hashed index answers.
    let filler: String = (0..40).map(|i| format!("f{i}: x\n")).collect();
    let dup = |a: &str, b: &str| parse_one(&format!("{a}: 1\n{filler}{b}: 2\n")).is_err();
    assert!(dup("0.0", "-0.0"), "0.0 and -0.0 are one key");
    assert!(dup("0x10", "16"), "one integer, two spellings");
    assert!(dup("true", "True"));
    assert!(dup("~", "null"));
    assert!(dup("'a b'", "\"a b\""));
    assert!(!dup("1", "'1'"), "a string is not the integer");
    assert!(!dup("1", "1.0"), "an integer is not a float");
    assert!(!dup("f", "g"));
}

#[test]
fn a_mapping_with_many_keys_loads_in_linear_time() {
    let mapping = |n: usize| -> String { (0..n).map(|i| format!("key-{i}: {i}\n")).collect() };
    let (small, big) = (mapping(2_500), mapping(10_000));
    // The fastest of three runs, so a busy machine does not decide the outcome.
    let time = |src: &str| {
        let start = std::time::Instant::now();
        let doc = parse_one(src).unwrap();
        assert!(matches!(doc.value, Yaml::Map(_)));
        start.elapsed()
    };
    // Interleaved, so that a burst of load hits both sizes alike.
    let (mut t10, mut t40) = (std::time::Duration::MAX, std::time::Duration::MAX);
    for _ in 0..3 {
        t10 = t10.min(time(&small));
        t40 = t40.min(time(&big));
    }
    // Linear: about 4x for 4x the keys; the quadratic duplicate check made it 16x.
    // (`bench/scale.sh` measures 10k to 40k keys in a release build.)
    assert!(
        t40 < t10 * 8 + std::time::Duration::from_millis(20),
        "2.5k keys: {t10:?}, 10k keys: {t40:?}"
    );
    let dup = parse_stream(&format!("{big}key-7: again\n")).unwrap_err();
    assert!(
        dup.message
            .contains("duplicate key `key-7` (first at line 8)"),
        "{dup:?}"
    );
}

/// `docs` small Kubernetes-like documents, far more than one piece's worth.
fn big_stream(docs: usize) -> String {
    (0..docs)
        .map(|i| format!("---\nkind: Role\nmetadata: {{name: r-{i}, labels: {{a: b}}}}\nrules:\n- verbs: [get]\n"))
        .collect()
}

fn pieces_of(threads: usize, src: &str) -> Result<Vec<Node>, YamlError> {
    let pieces = parse_on(threads, src, Vec::new, |docs, n: Node, _| docs.push(n))?;
    assert_eq!(pieces.len() > 1, threads > 1, "the stream was not cut");
    Ok(pieces.into_iter().flatten().collect())
}

#[test]
fn a_stream_parsed_in_pieces_equals_the_sequential_parse() {
    let src = big_stream(1_250);
    let sequential = pieces_of(1, &src).unwrap();
    assert_eq!(sequential.len(), 1_250);
    // Positions included: the last document starts on its line in the whole file.
    assert_eq!(
        sequential[1_249].pos,
        Pos {
            line: 5 * 1_249 + 2,
            col: 1
        }
    );
    assert_eq!(pieces_of(4, &src).unwrap(), sequential);
    let bom = format!("\u{feff}{src}");
    assert_eq!(pieces_of(4, &bom).unwrap(), sequential);
}

#[test]
fn an_error_in_a_later_piece_has_its_line_in_the_whole_stream() {
    let mut src = big_stream(1_250);
    src.push_str("---\nkind: Role\nkind: again\n");
    let err = pieces_of(4, &src).unwrap_err();
    assert_eq!(err.pos.line, 5 * 1_250 + 3, "{err:?}");
    assert!(err.message.contains("duplicate key `kind`"), "{err:?}");
    // A syntax error in the first piece wins over one in the last.
    let src = format!("a: [\n{src}");
    let err = pieces_of(4, &src).unwrap_err();
    assert!(err.pos.line < 10, "{err:?}");
}

#[test]
fn threads_of_one_parse_share_the_run_budget() {
    // About 110 documents each expanding ten aliases of 1,001 nodes: no piece alone
    // reaches the run's budget, all of them together do.
    let aliases: String = (0..10).map(|i| format!("b{i}: *a\n")).collect();
    let doc = format!("---\na: &a [{}]\n{aliases}", vec!["x"; 1_000].join(", "));
    let src = doc.repeat(MAX_EXPANDED_NODES / 10_010 + 10);
    let err = pieces_of(4, &src).unwrap_err();
    assert!(err.message.contains("aliases expand"), "{err:?}");
    // What the threads spent is the calling thread's from now on.
    let (nodes, aliases) = SPENT.get();
    assert!(
        aliases > MAX_EXPANDED_NODES / 2 && nodes > aliases,
        "{nodes} {aliases}"
    );
    assert!(parse_one("x: &a [1]\ny: *a\n").is_err());
}

#[test]
fn syntax_errors_get_a_human_hint() {
    let hint_of = |src: &str| hint(src, &parse_stream(src).unwrap_err());
    assert!(hint_of("a:\n\tb: 1\n").contains("spaces, not tabs"));
    assert!(hint_of("a:\n  b: 1\n c: 2\n").contains("line up"));
    assert!(hint_of("a:\n  - x\n - y\n").contains("line up"));
    assert!(hint_of("a: 1\n  b: 2\n").contains("indent this line"));
    assert!(hint_of("key: value: x\n").contains("quote a value"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = "[".repeat(10_000);
    assert!(parse_stream(&deep).is_err());
}

#[test]
fn writes_yaml_that_reads_back() {
    let value = json!({"a": [1, "two", {"b": null}], "c": "x: y"});
    let text = to_string(&value);
    assert_eq!(parse_one(&text).unwrap().to_json(), value);
}

#[test]
fn kcas_own_content_is_parsed_outside_the_learners_budget() {
    // Six 8 MB files of numbers spent the run's budget, then the embedded baseline RBAC
    // failed its `expect()` and `lab check` panicked (exit 101).
    std::thread::spawn(|| {
        SPENT.set((MAX_RUN_NODES, 0));
        let err = parse_json_stream("a: 1\n").unwrap_err();
        assert!(err.message.contains("too much YAML"), "{err}");
        let own = include_str!("../../kind-config/baseline-rbac.yaml");
        assert!(!parse_own_content(own).unwrap().is_empty());
        // The learner's budget is as it was: still spent.
        assert!(parse_json_stream("a: 1\n").is_err());
        assert!(!crate::lab::offline::baseline_rbac().is_empty());
    })
    .join()
    .unwrap();
}

#[test]
fn an_allowance_counts_one_learners_files_apart_from_the_run() {
    // Bytes: the file that brings the total over is refused before it is parsed.
    let mut a = Allowance::new(10, MAX_RUN_NODES);
    assert_eq!(a.parse_json_stream("a: 1\n").unwrap().len(), 1);
    let err = a.parse_json_stream("b: 22\n").unwrap_err();
    assert!(
        err.over_budget && err.message.contains("too much YAML"),
        "{err:?}"
    );
    // Values: the allowance's own limit, not the run's; what it spends stays its own.
    std::thread::spawn(|| {
        let doc = format!("[{}]\n", vec!["1"; 1_000].join(","));
        let mut a = Allowance::new(usize::MAX, 2_500);
        assert!(a.parse_json_stream(&doc).is_ok());
        assert!(a.parse_json_stream(&doc).is_ok());
        let err = a.parse_json_stream(&doc).unwrap_err();
        assert!(
            err.over_budget && err.message.contains("2500 values"),
            "{err:?}"
        );
        assert_eq!(SPENT.get(), (0, 0));
        assert!(!parse_json_stream(&doc).unwrap().is_empty());
        // A syntax error is the text's, not the budget's.
        let err = Allowance::new(100, 100)
            .parse_json_stream("a: [\n")
            .unwrap_err();
        assert!(!err.over_budget, "{err:?}");
    })
    .join()
    .unwrap();
}

#[test]
fn the_workspace_allowance_holds_the_runs_value_budget() {
    // The real limit: a learner's files may hold the run's budget of values, no more.
    std::thread::spawn(|| {
        let mut a = crate::lab::workspace::allowance();
        a.spent = (MAX_RUN_NODES - 1, 0);
        assert!(a.parse_json_stream("1\n").is_ok());
        let err = a.parse_json_stream("[1, 2]\n").unwrap_err();
        assert!(err.over_budget, "{err:?}");
        assert_eq!(a.max_values, MAX_RUN_NODES);
        assert_eq!(a.max_bytes, crate::lab::workspace::MAX_WORKSPACE_BYTES);
    })
    .join()
    .unwrap();
}

/// `parse_json_stream` builds JSON without a tree: the same documents and the same
/// errors (positions included) as the tree made into JSON.
#[test]
fn json_built_directly_equals_the_tree_made_json() {
    let filler: String = (0..40).map(|i| format!("k{i}: {i}\n")).collect();
    let sources = [
        "a: 1\nb: [x, 2.5, true, null, ~]\n".to_string(),
        "---\n---\nkind: A\n---\n~\n".to_string(),
        "1: a\n\"2\": b\ntrue: c\n.nan: d\n0.0: e\n".to_string(),
        "x: &a {k: [1, {z: y}]}\ny: *a\nz: &s str\n*s : again\n".to_string(),
        "!!str 1: !!int 2\nv: !!float 3\nw: !custom t\n".to_string(),
        format!(
            "m:\n{}",
            filler
                .lines()
                .map(|l| format!("  {l}\n"))
                .collect::<String>()
        ),
        format!("{filler}k7: dup\n"),
        format!("{filler}\"7\": not a dup of k7\n1.0: x\n1: y\n"),
        "a: 1\na: 2\n".to_string(),
        // A key that is not a string and a string key of its text: two YAML keys, one
        // JSON key; a duplicate of either is found, with the line of its first.
        "1: a\n\"1\": b\n\"1\": c\n".to_string(),
        "\"1\": a\n1: b\n1: c\n".to_string(),
        "\"1\": a\n1: b\n1.0: c\n\"1\": d\n".to_string(),
        "0.0: a\n\"-0\": b\n\"0\": c\n-0.0: d\n".to_string(),
        format!("{filler}k3: x\nk3: y\n"),
        format!("{filler}true: x\n\"true\": y\nTrue: z\n"),
        format!("{filler}\"null\": x\n~: y\n\"null\": z\n"),
        "? [a]\n: b\n".to_string(),
        "a: [1, 2\n".to_string(),
        big_stream(1_250),
    ];
    for src in &sources {
        let via_tree = parse_stream(src).map(|docs| {
            docs.into_iter()
                .filter(|n| n.value != Yaml::Null)
                .map(Node::into_json)
                .collect::<Vec<_>>()
        });
        assert_eq!(parse_json_stream(src), via_tree, "{src}");
    }
}
