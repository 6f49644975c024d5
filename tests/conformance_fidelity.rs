//! Kyverno's Chainsaw conformance suite replayed offline (`kca::offline::conformance`,
//! docs/FIDELITY.md): the agreement per area must not fall below its floor. Runs when
//! the corpus is present (`../shared/corpus/kyverno-conformance` beside the checkout, or
//! `KCA_CORPUS`); otherwise says so and passes.

use std::path::PathBuf;

use kca::offline::conformance::{Tally, Verdict, run_suite, tally};

fn suite() -> Option<PathBuf> {
    let base = match std::env::var("KCA_CORPUS") {
        Ok(p) => PathBuf::from(p),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()?
            .join("shared")
            .join("corpus"),
    };
    Some(base.join("kyverno-conformance")).filter(|p| p.is_dir())
}

/// Floors per area: (area, least judged tests, least agreeing tests). An area not listed
/// has no floor; `all` is the whole suite. Judged tests count agreeing + disagreeing.
const FLOORS: &[(&str, usize, usize)] = &[
    ("autogen", 9, 9),
    ("background-only", 7, 7),
    ("cleanup", 3, 3),
    ("cli", 5, 5),
    ("configs", 2, 2),
    ("deferred", 3, 3),
    ("deleting-policies", 4, 4),
    ("events", 5, 5),
    ("exceptions", 11, 11),
    ("filter", 6, 6),
    ("force-failure-policy-ignore", 4, 4),
    ("generate", 77, 77),
    ("generate-mutating-admission-policy", 3, 3),
    ("generate-mutating-admission-policy-alpha", 3, 3),
    ("generate-mutating-admission-policy-v1", 2, 2),
    ("generate-validating-admission-policy", 23, 23),
    ("generating-policies", 38, 38),
    ("globalcontext", 3, 3),
    ("image-validating-policies", 6, 6),
    ("mutate", 37, 37),
    ("mutating-admission-policy-reports", 1, 1),
    ("mutating-admission-policy-reports-alpha", 1, 1),
    ("mutating-admission-policy-reports-v1", 2, 2),
    ("mutating-policies", 17, 16),
    ("namespaced-deleting-policies", 1, 1),
    ("namespaced-generating-policies", 1, 1),
    ("namespaced-image-validating-policies", 1, 1),
    ("namespaced-mutating-policies", 2, 2),
    ("namespaced-validating-policies", 4, 4),
    ("policy-exceptions-disabled", 1, 1),
    ("policy-validation", 11, 10),
    ("reports", 6, 6),
    ("reports-exclude-result", 1, 1),
    ("ttl", 2, 2),
    ("validate", 78, 78),
    ("validating-admission-policy-reports", 4, 3),
    ("validating-policies", 24, 24),
    ("verify-manifests", 3, 3),
    ("webhook-configurations", 1, 1),
    ("webhooks", 15, 13),
    ("all", 427, 422),
];

/// Least share of judged tests that agree, over the whole suite, in percent.
const MIN_AGREEMENT: f64 = 97.0;

#[test]
fn conformance_replay_holds_its_floors() {
    let Some(root) = suite() else {
        say("skipped: corpus not found (../shared/corpus/kyverno-conformance or KCA_CORPUS)");
        return;
    };
    let results = run_suite(&root);
    assert!(
        !results.is_empty(),
        "no chainsaw-test.yaml under {}",
        root.display()
    );
    let by_area = tally(&results);
    let mut all = Tally::default();
    for r in &results {
        all.add(&r.verdict);
    }
    let mut lines = Vec::new();
    for (area, t) in by_area.iter().chain([(&"all".to_string(), &all)]) {
        let skipped: Vec<String> = t.skipped.iter().map(|(k, n)| format!("{k} {n}")).collect();
        lines.push(format!(
            "| {area} | {} | {} | {} | {} | {} |",
            t.judged(),
            t.agree,
            t.disagree,
            t.skipped_total(),
            skipped.join(", ")
        ));
    }
    println!("{}", lines.join("\n"));
    let disagreements: Vec<String> = results
        .iter()
        .filter_map(|r| match &r.verdict {
            Verdict::Disagree(why) => Some(format!("{}: {why}", r.path)),
            _ => None,
        })
        .collect();
    if std::env::var_os("KCA_CONFORMANCE_VERBOSE").is_some() {
        for r in &results {
            println!("{} {:?}", r.path, r.verdict);
        }
    }
    let empty = Tally::default();
    for &(area, judged, agree) in FLOORS {
        let t = if area == "all" {
            &all
        } else {
            by_area.get(area).unwrap_or(&empty)
        };
        assert!(
            t.judged() >= judged && t.agree >= agree,
            "{area}: {} judged, {} agree (floor {judged} judged, {agree} agree); disagreeing:\n{}",
            t.judged(),
            t.agree,
            disagreements.join("\n")
        );
    }
    let agreement = 100.0 * all.agree as f64 / all.judged().max(1) as f64;
    assert!(
        agreement >= MIN_AGREEMENT,
        "agreement {agreement:.2}% below {MIN_AGREEMENT}%; disagreeing:\n{}",
        disagreements.join("\n")
    );
}

/// Straight to stderr: a skip must be seen in CI's log without `--nocapture`.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
