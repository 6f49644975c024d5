//! The checker over the corpus (`../shared/corpus` beside the checkout, or `KCA_CORPUS`):
//! every `validate.cel` rule of a ClusterPolicy or Policy, every ValidatingAdmissionPolicy
//! and every ValidatingPolicy (typed as the VAP Kyverno would generate from it). The
//! kyverno-policies library is tested live, so a finding on it is a false warning unless
//! it is listed in [`TRUE_FINDINGS`] with the reason the API server reports it too; a
//! listed finding that is no longer found fails as well, and so does a drop in what is
//! decided. Without the corpus the tests say so and pass. `KCA_CEL_SWEEP_VERBOSE=1`
//! prints every finding and unknown.
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

/// The findings the API server reports as well: (file under the corpus, the start of the
/// expression, why).
const TRUE_FINDINGS: &[(&str, &str, &str)] = &[
    (
        "kyverno-policies/nginx-ingress-cel/disallow-ingress-nginx-custom-snippets/disallow-ingress-nginx-custom-snippets.yaml",
        "!object.metadata.?annotations.orValue([])",
        "`orValue(optional(V), V)`: V is map(string, string) from the annotations, `[]` a list",
    ),
    (
        "kyverno-policies/psa-cel/add-psa-namespace-reporting/add-psa-namespace-reporting.yaml",
        "object.metadata.?labels.orValue([])",
        "`orValue(optional(V), V)`: V is map(string, string) from the labels, `[]` a list",
    ),
    (
        "kyverno-conformance/policy-validation/cluster-policy/cel-expressions/policy-1.yaml",
        "!has(object.automountServiceAccountToken)",
        "the test's point: a Secret (and a Pod) has no such top-level field",
    ),
    (
        "kyverno-conformance/policy-validation/cluster-policy/cel-expressions/policy-2.yaml",
        "object.replicas > 1",
        "the test's point: a Deployment's replicas are in its spec",
    ),
];

/// Fewest library expressions the checker decides (as measured on the corpus of
/// 2026-12-03: 106; what stays unknown mostly uses Kyverno's own libraries or errs on a
/// type whose per-policy name cel-go prints).
const MIN_LIBRARY_DECIDED: usize = 106;

/// Bounds of the walk.
const MAX_DEPTH: usize = 12;
const MAX_FILE_BYTES: u64 = 1 << 20;
const MAX_FILES: usize = 50_000;

fn corpus() -> Option<PathBuf> {
    let p = match std::env::var("KCA_CORPUS") {
        Ok(p) => PathBuf::from(p),
        Err(_) => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()?
            .join("shared")
            .join("corpus"),
    };
    p.is_dir().then_some(p)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    if depth > MAX_DEPTH || out.len() >= MAX_FILES {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let p = e.path();
        if ft.is_dir() {
            walk(&p, out, depth + 1);
        } else if ft.is_file()
            && p.extension().is_some_and(|x| x == "yaml" || x == "yml")
            && e.metadata().is_ok_and(|m| m.len() <= MAX_FILE_BYTES)
            && out.len() < MAX_FILES
        {
            out.push(p);
        }
    }
}

/// One policy's expressions with what types them.
struct Job {
    rules: Vec<Value>,
    param_kind: Option<Value>,
    variables: Option<Value>,
    expressions: Vec<String>,
}

fn texts(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|v| {
            ["expression", "messageExpression"]
                .into_iter()
                .filter_map(|k| v.get(k).and_then(Value::as_str))
                .filter(|s| !s.is_empty())
                .map(String::from)
        })
        .collect()
}

/// The jobs of one document; `None` for a rule whose kinds kca cannot map.
fn jobs(doc: &Value, mapper: &Mapper) -> Vec<Option<Job>> {
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let spec = doc.get("spec").unwrap_or(&Value::Null);
    match kind {
        "ValidatingAdmissionPolicy" | "ValidatingPolicy" => vec![Some(Job {
            rules: spec
                .pointer("/matchConstraints/resourceRules")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            param_kind: spec.get("paramKind").cloned(),
            variables: spec.get("variables").cloned(),
            expressions: texts(spec.get("validations")),
        })],
        "ClusterPolicy" | "Policy" => {
            let rules = spec.get("rules").and_then(Value::as_array);
            rules
                .into_iter()
                .flatten()
                .filter_map(|rule| Some((rule, rule.pointer("/validate/cel")?)))
                .map(|(rule, cel)| {
                    let m = rule.get("match").unwrap_or(&Value::Null);
                    let mut blocks: Vec<&Value> = m.get("resources").into_iter().collect();
                    for key in ["any", "all"] {
                        for b in m.get(key).and_then(Value::as_array).into_iter().flatten() {
                            blocks.extend(b.get("resources"));
                        }
                    }
                    let mut rr = vec![];
                    for k in blocks
                        .into_iter()
                        .flat_map(|b| crate::offline::str_items(b.get("kinds")))
                    {
                        if k == "*" {
                            continue;
                        }
                        let (g, v, r) =
                            crate::offline::kyverno::vap_candidate::discover(k, mapper)?;
                        rr.push(serde_json::json!({
                            "apiGroups": [g], "apiVersions": [v], "resources": [r]}));
                    }
                    Some(Job {
                        rules: rr,
                        param_kind: cel.get("paramKind").cloned(),
                        variables: cel.get("variables").cloned(),
                        expressions: texts(cel.get("expressions")),
                    })
                })
                .collect()
        }
        _ => vec![],
    }
}

/// What the sweep found: (file under the corpus, expression, finding) and counts.
#[derive(Default)]
struct Sweep {
    findings: Vec<(String, String, String)>,
    decided: usize,
    library_decided: usize,
    unknown: usize,
    no_context: usize,
}

fn sweep(root: &Path) -> Sweep {
    let verbose = std::env::var_os("KCA_CEL_SWEEP_VERBOSE").is_some();
    let mapper = Mapper::built_in();
    let mut files = Vec::new();
    walk(root, &mut files, 0);
    files.sort();
    let mut out = Sweep::default();
    for f in files {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        let library = rel.starts_with("kyverno-policies/");
        let Ok(src) = std::fs::read_to_string(&f) else {
            continue;
        };
        let Ok(docs) = crate::yaml::parse_json_stream(&src) else {
            continue;
        };
        for job in docs.iter().flat_map(|d| jobs(d, &mapper)) {
            let Some(job) = job else {
                out.no_context += 1;
                continue;
            };
            let ctx = match context(
                &job.rules,
                job.param_kind.as_ref(),
                job.variables.as_ref(),
                &mapper,
            ) {
                Ok(c) => c,
                Err(_) => {
                    out.no_context += job.expressions.len();
                    continue;
                }
            };
            for e in job.expressions {
                match check_expression(&ctx, &e) {
                    TypeCheck::Known(s) => {
                        out.decided += 1;
                        out.library_decided += usize::from(library);
                        if !s.is_empty() {
                            if verbose {
                                eprintln!("FINDING {rel}\n  expr: {e}\n{s}");
                            }
                            out.findings.push((rel.clone(), e, s));
                        }
                    }
                    TypeCheck::Unknown(why) => {
                        out.unknown += 1;
                        if verbose {
                            eprintln!("UNKNOWN {rel}: {why}");
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "celtype sweep: decided {} (library {}), findings {}, unknown {}, no context {}",
        out.decided,
        out.library_decided,
        out.findings.len(),
        out.unknown,
        out.no_context
    );
    out
}

#[test]
fn the_corpus_gets_only_the_findings_the_api_server_reports() {
    let Some(root) = corpus() else {
        eprintln!("skipped: corpus not found (../shared/corpus or KCA_CORPUS)");
        return;
    };
    let s = sweep(&root);
    let listed = |file: &str, expr: &str| {
        TRUE_FINDINGS
            .iter()
            .any(|(f, start, _)| *f == file && expr.trim_start().starts_with(start))
    };
    let unlisted: Vec<String> = s
        .findings
        .iter()
        .filter(|(f, e, _)| !listed(f, e))
        .map(|(f, e, found)| format!("{f}\n  {e}\n{found}"))
        .collect();
    assert!(
        unlisted.is_empty(),
        "findings not known to be the API server's:\n{}",
        unlisted.join("\n")
    );
    for (file, start, why) in TRUE_FINDINGS {
        assert!(
            s.findings
                .iter()
                .any(|(f, e, _)| f == file && e.trim_start().starts_with(start)),
            "no longer found: {file}: {start} ({why})"
        );
    }
    assert!(
        s.library_decided >= MIN_LIBRARY_DECIDED,
        "library expressions decided: {} < {MIN_LIBRARY_DECIDED}",
        s.library_decided
    );
}
