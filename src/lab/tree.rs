//! Partial-tree matching: does an object hold at least what a check expects? Maps match
//! key by key, lists match when every expected item matches some actual item (in any
//! order), `null` means "absent". Pure; the first mismatch comes back with its path.

use serde_json::Value;

/// `Ok` when `got` holds everything in `want`; else where and how it differs.
pub fn partial_match(want: &Value, got: &Value) -> Result<(), String> {
    walk(want, got, "")
}

fn walk(want: &Value, got: &Value, path: &str) -> Result<(), String> {
    let at = |p: &str| {
        if p.is_empty() {
            "(root)".to_string()
        } else {
            p.to_string()
        }
    };
    match want {
        Value::Null => match got {
            Value::Null => Ok(()),
            other => Err(format!(
                "`{}` should be absent, found {}",
                at(path),
                short(other)
            )),
        },
        Value::Object(map) => {
            let Value::Object(have) = got else {
                return Err(format!(
                    "`{}` should be a mapping, found {}",
                    at(path),
                    short(got)
                ));
            };
            for (k, w) in map {
                let sub = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match have.get(k) {
                    Some(g) => walk(w, g, &sub)?,
                    None if w.is_null() => {}
                    None => return Err(format!("`{sub}` is missing")),
                }
            }
            Ok(())
        }
        Value::Array(items) => {
            let Value::Array(have) = got else {
                return Err(format!(
                    "`{}` should be a list, found {}",
                    at(path),
                    short(got)
                ));
            };
            if have.is_empty() && !items.is_empty() {
                return Err(format!(
                    "`{}` is empty; expected an item like {}",
                    at(path),
                    short(&items[0])
                ));
            }
            for (i, w) in items.iter().enumerate() {
                if !have.iter().any(|g| walk(w, g, "").is_ok()) {
                    // With one candidate the inner difference says more than "no item".
                    if have.len() == 1 {
                        walk(w, &have[0], &format!("{path}[0]"))?;
                    }
                    return Err(format!(
                        "`{}` has no item matching expected item {} ({})",
                        at(path),
                        i + 1,
                        short(w)
                    ));
                }
            }
            Ok(())
        }
        scalar => {
            if scalar_eq(scalar, got) {
                Ok(())
            } else {
                Err(format!(
                    "`{}` is {}, expected {}",
                    at(path),
                    short(got),
                    short(scalar)
                ))
            }
        }
    }
}

/// Numbers compare by value; a string and a number compare by text, because manifests
/// write `"80"` and `80` for the same port or quantity.
fn scalar_eq(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(b)) | (Value::Number(b), Value::String(a)) => {
            a == &b.to_string()
        }
        (a, b) => a == b,
    }
}

/// A compact rendering of a value for messages.
pub fn short(v: &Value) -> String {
    let s = match v {
        Value::Null => return "nothing".into(),
        Value::String(s) => format!("`{s}`"),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(79).collect::<String>())
    } else {
        s
    }
}

/// `want` without its top-level `status` (for targets that cannot see status), and
/// whether there was one.
pub fn without_status(want: &Value) -> (Value, bool) {
    let mut w = want.clone();
    let had = w.as_object_mut().and_then(|m| m.remove("status")).is_some();
    (w, had)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table() {
        let obj = json!({
            "metadata": {"name": "p", "labels": {"team": "a"}},
            "spec": {"containers": [
                {"name": "app", "image": "nginx"},
                {"name": "side", "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}}}
            ], "port": 80},
        });
        let cases: &[(Value, Result<(), &str>)] = &[
            (json!({"metadata": {"labels": {"team": "a"}}}), Ok(())),
            (
                json!({"metadata": {"labels": {"team": "b"}}}),
                Err("`metadata.labels.team` is `a`, expected `b`"),
            ),
            (
                json!({"metadata": {"annotations": {"x": "y"}}}),
                Err("`metadata.annotations` is missing"),
            ),
            (json!({"metadata": {"annotations": null}}), Ok(())),
            (
                json!({"metadata": {"labels": null}}),
                Err("`metadata.labels` should be absent"),
            ),
            (
                json!({"spec": {"containers": [{"name": "side", "resources": {"limits": {"cpu": "100m"}}}]}}),
                Ok(()),
            ),
            (
                json!({"spec": {"containers": [{"name": "side"}, {"name": "app"}]}}),
                Ok(()),
            ),
            (
                json!({"spec": {"containers": [{"name": "gone"}]}}),
                Err("`spec.containers` has no item matching expected item 1"),
            ),
            (json!({"spec": {"port": "80"}}), Ok(())),
            (json!({"spec": {"port": 80.0}}), Ok(())),
            (
                json!({"spec": {"containers": {"name": "app"}}}),
                Err("`spec.containers` should be a mapping"),
            ),
        ];
        for (want, expect) in cases {
            let got = partial_match(want, &obj);
            match (expect, &got) {
                (Ok(()), Ok(())) => {}
                (Err(msg), Err(e)) => assert!(e.contains(msg), "{want}: {e}"),
                _ => panic!("{want}: expected {expect:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn an_empty_list_says_so() {
        let e =
            partial_match(&json!({"rules": [{"name": "r"}]}), &json!({"rules": []})).unwrap_err();
        assert!(
            e.starts_with("`rules` is empty; expected an item like"),
            "{e}"
        );
    }

    #[test]
    fn a_single_candidate_reports_the_inner_difference() {
        let got = json!({"items": [{"name": "a", "x": 1}]});
        let e = partial_match(&json!({"items": [{"name": "a", "x": 2}]}), &got).unwrap_err();
        assert_eq!(e, "`items[0].x` is 1, expected 2");
    }

    #[test]
    fn status_can_be_set_aside() {
        let (w, had) = without_status(&json!({"spec": 1, "status": {"ready": true}}));
        assert!(had);
        assert_eq!(w, json!({"spec": 1}));
    }
}
