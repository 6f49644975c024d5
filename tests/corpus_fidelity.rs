//! Fidelity of the offline Kyverno engine on Kyverno's own CLI tests (see
//! docs/FIDELITY.md). Runs when the corpus is present (`../shared/corpus` beside the
//! checkout, or `KCA_CORPUS`); otherwise says so and passes.

use std::path::PathBuf;

use kca::offline::kyverno::runner::{Verdict, find_tests, run_test};

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

#[test]
fn corpus_agreement_does_not_drop() {
    let Some(root) = corpus().filter(|p| p.is_dir()) else {
        say(&format!(
            "skipped: corpus not found at {}",
            corpus()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
        return;
    };
    let files = find_tests(std::slice::from_ref(&root));
    assert!(
        !files.is_empty(),
        "no kyverno-test.yaml under {}",
        root.display()
    );
    let (mut agree, mut disagree, mut skipped) = (0usize, 0usize, 0usize);
    let mut worst = Vec::new();
    for f in &files {
        // Kyverno's own suite expects the tests under test-fail/ to fail.
        if f.components().any(|c| c.as_os_str() == "test-fail") {
            continue;
        }
        let rows = run_test(f).unwrap_or_default();
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

/// Agreement on ValidatingAdmissionPolicy rows (scope `vap`), measured apart from the
/// classic set; docs/FIDELITY.md records the figure.
const MIN_VAP_AGREEMENT: f64 = 100.0;
/// The corpus's VAP rows (30 when measured); fewer means rows fell out of the set.
const MIN_VAP_ROWS: usize = 30;

#[test]
fn validating_admission_policy_rows_agree() {
    let Some(root) = corpus().filter(|p| p.is_dir()) else {
        say("skipped: corpus not found");
        return;
    };
    let (mut agree, mut total) = (0usize, 0usize);
    let mut worst = Vec::new();
    for f in find_tests(std::slice::from_ref(&root)) {
        for r in run_test(&f)
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.scope == "vap")
        {
            total += 1;
            if r.verdict == Verdict::Pass {
                agree += 1;
            } else {
                worst.push(format!(
                    "{} {} {}: {}",
                    r.file, r.policy, r.resource, r.reason
                ));
            }
        }
    }
    println!("vap rows {total}: agree {agree}");
    assert!(total >= MIN_VAP_ROWS, "only {total} VAP rows; {worst:?}");
    let agreement = 100.0 * agree as f64 / total as f64;
    assert!(
        agreement >= MIN_VAP_AGREEMENT,
        "VAP agreement {agreement:.2}% fell below {MIN_VAP_AGREEMENT}%:\n{}",
        worst.join("\n")
    );
}

/// Agreement on `validate.cel` rule rows (scope `cel`), measured apart from the classic
/// set; docs/FIDELITY.md records the figure (rounded down). Skipped rows count against it.
const MIN_CEL_AGREEMENT: f64 = 100.0;
/// The corpus's `validate.cel` rows (1,183 when measured); fewer means rows fell out.
const MIN_CEL_ROWS: usize = 1183;

#[test]
fn cel_rule_rows_agree() {
    let Some(root) = corpus().filter(|p| p.is_dir()) else {
        say(&format!(
            "skipped: corpus not found at {}",
            corpus()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
        return;
    };
    let (mut agree, mut skipped, mut total) = (0usize, 0usize, 0usize);
    let mut worst = Vec::new();
    for f in find_tests(std::slice::from_ref(&root)) {
        if f.components().any(|c| c.as_os_str() == "test-fail") {
            continue;
        }
        for r in run_test(&f)
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.scope == "cel")
        {
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
    }
    println!("cel rows {total}: agree {agree}, skipped {skipped}");
    assert!(total >= MIN_CEL_ROWS, "only {total} CEL rows; {worst:?}");
    let agreement = 100.0 * agree as f64 / total as f64;
    assert!(
        agreement >= MIN_CEL_AGREEMENT,
        "CEL agreement {agreement:.2}% fell below {MIN_CEL_AGREEMENT}%:\n{}",
        worst.join("\n")
    );
}

/// Straight to the process's stderr: the harness captures `println!`, and a skip must be
/// seen in CI's log without `--nocapture`.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Agreement on Kyverno ValidatingPolicy rows (scope `vpol`), measured apart from the
/// other sets; docs/FIDELITY.md records the figure (rounded down). Skipped rows count
/// against it.
const MIN_VPOL_AGREEMENT: f64 = 96.7;
/// The corpus's ValidatingPolicy rows (990 when measured); fewer means rows fell out.
const MIN_VPOL_ROWS: usize = 990;

#[test]
fn validating_policy_rows_agree() {
    let Some(root) = corpus().filter(|p| p.is_dir()) else {
        say(&format!(
            "skipped: corpus not found at {}",
            corpus()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ));
        return;
    };
    let (mut agree, mut skipped, mut total) = (0usize, 0usize, 0usize);
    let mut worst = Vec::new();
    for f in find_tests(std::slice::from_ref(&root)) {
        if f.components().any(|c| c.as_os_str() == "test-fail") {
            continue;
        }
        for r in run_test(&f)
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.scope == "vpol")
        {
            total += 1;
            match r.verdict {
                Verdict::Pass => agree += 1,
                Verdict::Skipped => skipped += 1,
                Verdict::Fail => worst.push(format!(
                    "{} {} {}: {}",
                    r.file, r.policy, r.resource, r.reason
                )),
            }
        }
    }
    println!("vpol rows {total}: agree {agree}, skipped {skipped}");
    assert!(total >= MIN_VPOL_ROWS, "only {total} ValidatingPolicy rows");
    let agreement = 100.0 * agree as f64 / total as f64;
    assert!(
        agreement >= MIN_VPOL_AGREEMENT,
        "ValidatingPolicy agreement {agreement:.2}% fell below {MIN_VPOL_AGREEMENT}%:\n{}",
        worst.join("\n")
    );
}
