//! A sweep (ignored by default) of the checker over every `validate.cel` rule and
//! ValidatingAdmissionPolicy in the directory `KCA_CEL_SWEEP` names: prints each finding
//! so a reviewer can compare it with cel-go's.
use serde_json::Value;

use super::*;

fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>, depth: usize) {
    if depth > 20 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out, depth + 1);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

#[test]
#[ignore]
fn sweep() {
    let Ok(root) = std::env::var("KCA_CEL_SWEEP") else { return };
    let mapper = Mapper::built_in();
    let mut files = Vec::new();
    walk(std::path::Path::new(&root), &mut files, 0);
    files.sort();
    let (mut n, mut unknown, mut found, mut noctx) = (0, 0, 0, 0);
    for f in files {
        let Ok(src) = std::fs::read_to_string(&f) else { continue };
        let Ok(docs) = crate::yaml::parse_json_stream(&src) else { continue };
        for doc in docs {
            let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
            let spec = doc.get("spec").cloned().unwrap_or(Value::Null);
            let mut jobs: Vec<(Vec<Value>, Option<Value>, Option<Value>, Vec<String>)> = vec![];
            if kind == "ValidatingAdmissionPolicy" || kind == "ValidatingPolicy" {
                let rr = spec
                    .pointer("/matchConstraints/resourceRules")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let exprs = spec
                    .get("validations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .flat_map(|v| {
                        ["expression", "messageExpression"]
                            .into_iter()
                            .filter_map(|k| v.get(k).and_then(Value::as_str).map(String::from))
                    })
                    .collect();
                jobs.push((rr, spec.get("paramKind").cloned(), spec.get("variables").cloned(), exprs));
            } else if kind == "ClusterPolicy" || kind == "Policy" {
                for rule in spec.get("rules").and_then(Value::as_array).into_iter().flatten() {
                    let Some(cel) = rule.pointer("/validate/cel") else { continue };
                    let m = rule.get("match").unwrap_or(&Value::Null);
                    let mut blocks: Vec<&Value> = m.get("resources").into_iter().collect();
                    for key in ["any", "all"] {
                        for b in m.get(key).and_then(Value::as_array).into_iter().flatten() {
                            blocks.extend(b.get("resources"));
                        }
                    }
                    let mut rr = vec![];
                    let mut ok = true;
                    for k in blocks.into_iter().flat_map(|b| {
                        crate::offline::str_items(b.get("kinds")).map(String::from).collect::<Vec<_>>()
                    }) {
                        if k == "*" {
                            continue;
                        }
                        match crate::offline::kyverno::vap_candidate::discover(&k, &mapper) {
                            Some((g, v, r)) => rr.push(serde_json::json!({
                                "apiGroups": [g], "apiVersions": [v], "resources": [r]})),
                            None => ok = false,
                        }
                    }
                    if !ok {
                        noctx += 1;
                        continue;
                    }
                    let exprs = cel
                        .get("expressions")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .flat_map(|v| {
                            ["expression", "messageExpression"].into_iter().filter_map(|k| {
                                v.get(k).and_then(Value::as_str).map(String::from)
                            })
                        })
                        .collect();
                    jobs.push((rr, cel.get("paramKind").cloned(), cel.get("variables").cloned(), exprs));
                }
            }
            for (rr, pk, vars, exprs) in jobs {
                let ctx = match context(&rr, pk.as_ref(), vars.as_ref(), &mapper) {
                    Ok(c) => c,
                    Err(why) => {
                        noctx += exprs.len();
                        println!("NOCTX {}: {why}", f.display());
                        continue;
                    }
                };
                for e in exprs {
                    n += 1;
                    match check_expression(&ctx, &e) {
                        TypeCheck::Known(s) if s.is_empty() => {}
                        TypeCheck::Known(s) => {
                            found += 1;
                            println!("FINDING {} [{kind}]\n  expr: {e}\n{s}", f.display());
                        }
                        TypeCheck::Unknown(why) => {
                            unknown += 1;
                            println!("UNKNOWN {}: {why}", f.display());
                        }
                    }
                }
            }
        }
    }
    println!("SUMMARY checked={n} findings={found} unknown={unknown} noctx={noctx}");
}
