//! Fidelity of the offline Kyverno engine on Kyverno's own CLI tests (see
//! docs/FIDELITY.md). Runs when the corpus is present (`../shared/corpus` beside the
//! checkout, or `KCA_CORPUS`); otherwise says so and passes.

use std::path::PathBuf;
use std::sync::OnceLock;

use kca::offline::kyverno::runner::{Row, Verdict, find_tests, run_test};

/// Agreement on classic rows, in percent, as recorded in docs/FIDELITY.md (rounded down).
const MIN_AGREEMENT: f64 = 99.0;
/// Share of classic rows we may skip, in percent.
const MAX_SKIPPED: f64 = 10.0;

fn corpus() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("KCA_CORPUS") {
        return Some(PathBuf::from(p));
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let p = manifest.parent()?.join("shared").join("corpus");
    Some(p)
}

/// The result rows of every corpus test file, run once for all the tests here; `None`
/// (after saying so) when the corpus is absent. Kyverno's own suite expects the tests
/// under test-fail/ to fail: they are left out here and checked on their own.
fn corpus_rows() -> Option<&'static [Row]> {
    static ROWS: OnceLock<Option<Vec<Row>>> = OnceLock::new();
    let rows = ROWS.get_or_init(|| {
        let root = corpus().filter(|p| p.is_dir())?;
        let files = find_tests(std::slice::from_ref(&root));
        assert!(
            !files.is_empty(),
            "no kyverno-test.yaml under {}",
            root.display()
        );
        Some(
            files
                .iter()
                .filter(|f| !f.components().any(|c| c.as_os_str() == "test-fail"))
                .flat_map(|f| run_test(f).unwrap_or_default())
                .collect(),
        )
    });
    if rows.is_none() {
        say(&format!(
            "skipped: corpus not found at {}",
            corpus()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
    }
    rows.as_deref()
}

#[test]
fn corpus_agreement_does_not_drop() {
    let Some(rows) = corpus_rows() else { return };
    let (mut agree, mut disagree, mut skipped) = (0usize, 0usize, 0usize);
    let mut worst = Vec::new();
    for r in rows.iter().filter(|r| r.scope == "classic") {
        match r.verdict {
            Verdict::Pass => agree += 1,
            Verdict::Fail => {
                disagree += 1;
                worst.push(format!("{} {}/{} {}", r.file, r.policy, r.rule, r.resource));
            }
            Verdict::Skipped => skipped += 1,
        }
    }
    let total = (agree + disagree + skipped) as f64;
    let agreement = 100.0 * agree as f64 / total;
    let skip_share = 100.0 * skipped as f64 / total;
    println!(
        "classic rows {total}: agreement {agreement:.2}%, skipped {skip_share:.2}%, disagree {disagree}"
    );
    assert!(
        agreement >= MIN_AGREEMENT,
        "agreement {agreement:.2}% fell below {MIN_AGREEMENT}%; disagreeing rows:\n{}",
        worst.join("\n")
    );
    assert!(
        skip_share <= MAX_SKIPPED,
        "skipped {skip_share:.2}% > {MAX_SKIPPED}%"
    );
}

#[test]
fn kyverno_expected_failures_still_fail() {
    let Some(root) = corpus().filter(|p| p.is_dir()) else {
        say("skipped: corpus not found");
        return;
    };
    let dir = root.join("kyverno-cli-tests").join("test-fail");
    if !dir.is_dir() {
        say(&format!("skipped: {} not found", dir.display()));
        return;
    }
    for f in find_tests(&[
        dir.join("missing-policy"),
        dir.join("missing-resource"),
        dir.join("missing-rule"),
    ]) {
        let rows = run_test(&f).expect("test file reads");
        assert!(
            rows.iter().any(|r| r.verdict == Verdict::Fail),
            "{} should fail",
            f.display()
        );
    }
}

/// Floors for the sets measured apart from the classic one (docs/FIDELITY.md records
/// each figure, rounded down): agreement in percent, with skipped rows counting against
/// it, and the number of rows measured (fewer means rows fell out of the set).
const VAP: Floor = Floor {
    scope: "vap",
    what: "ValidatingAdmissionPolicy",
    min_agreement: 100.0,
    min_rows: 30,
    max_skipped: 0.0,
};
const CEL: Floor = Floor {
    scope: "cel",
    what: "validate.cel",
    min_agreement: 100.0,
    min_rows: 1183,
    max_skipped: 0.0,
};
const VPOL: Floor = Floor {
    scope: "vpol",
    what: "ValidatingPolicy",
    min_agreement: 100.0,
    min_rows: 996,
    max_skipped: 0.0,
};

const MPOL: Floor = Floor {
    scope: "mpol",
    what: "MutatingPolicy",
    min_agreement: 100.0,
    min_rows: 47,
    max_skipped: 0.0,
};
const GPOL: Floor = Floor {
    scope: "gpol",
    what: "GeneratingPolicy",
    min_agreement: 100.0,
    min_rows: 23,
    max_skipped: 0.0,
};

struct Floor {
    scope: &'static str,
    what: &'static str,
    min_agreement: f64,
    min_rows: usize,
    /// Most rows skipped, in percent (each skip's reason is in docs/FIDELITY.md).
    max_skipped: f64,
}

#[test]
fn validating_admission_policy_rows_agree() {
    holds(&VAP);
}

#[test]
fn cel_rule_rows_agree() {
    holds(&CEL);
}

#[test]
fn validating_policy_rows_agree() {
    holds(&VPOL);
}

#[test]
fn mutating_policy_rows_agree() {
    holds(&MPOL);
}

#[test]
fn generating_policy_rows_agree() {
    holds(&GPOL);
}

/// Runs the corpus and checks one scope's rows against its floor.
fn holds(floor: &Floor) {
    let Some(rows) = corpus_rows() else { return };
    let (mut agree, mut skipped, mut total) = (0usize, 0usize, 0usize);
    let mut worst = Vec::new();
    for r in rows.iter().filter(|r| r.scope == floor.scope) {
        total += 1;
        match r.verdict {
            Verdict::Pass => agree += 1,
            Verdict::Skipped => skipped += 1,
            Verdict::Fail => {}
        }
        if r.verdict != Verdict::Pass {
            worst.push(format!(
                "{} {}/{} {}: {}",
                r.file, r.policy, r.rule, r.resource, r.reason
            ));
        }
    }
    let (scope, what) = (floor.scope, floor.what);
    println!("{scope} rows {total}: agree {agree}, skipped {skipped}");
    if std::env::var_os("KCA_CORPUS_VERBOSE").is_some() {
        for line in &worst {
            println!("  {scope}: {line}");
        }
    }
    assert!(
        total >= floor.min_rows,
        "only {total} {what} rows (expected at least {}):\n{}",
        floor.min_rows,
        worst.join("\n")
    );
    let agreement = 100.0 * agree as f64 / total as f64;
    assert!(
        agreement >= floor.min_agreement,
        "{what} agreement {agreement:.2}% fell below {}%:\n{}",
        floor.min_agreement,
        worst.join("\n")
    );
    let skip_share = 100.0 * skipped as f64 / total as f64;
    assert!(
        skip_share <= floor.max_skipped,
        "{what} rows skipped {skip_share:.2}% > {}%:\n{}",
        floor.max_skipped,
        worst.join("\n")
    );
}

/// Straight to the process's stderr: the harness captures `println!`, and a skip must be
/// seen in CI's log without `--nocapture`.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}
