//! CEL library members that Kubernetes and Kyverno declare and the interpreter lacks,
//! declared as overloads of the environment (so they type-check and dispatch like the
//! standard ones): Kubernetes' list `indexOf`/`lastIndexOf`
//! (k8s.io/apiserver `pkg/cel/library/lists.go`), Kyverno's `parseServiceAccount` and
//! `user.parseServiceAccount` (kyverno/sdk `extensions/cel/libs/user`), cel-go's
//! `regex.replace`/`regex.extractAll` (`ext/regex.go`), Kyverno's `orValue` on a value
//! that is not optional (`pkg/cel/compiler/env.go`, `OrValueCompatEnvOptions`), Kyverno's
//! hash library (`md5`, `sha1`, `sha256`, also prefixed `hash.`: kyverno/sdk
//! `extensions/cel/libs/hash`), and which interpreter errors cel-go reports too (an error
//! of the policy, not of kca).

use std::sync::Arc;

use cel::common::ast::{CallExpr, Expr};
use cel::common::types::{
    CelInt, CelOptional, CelString, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::parser::Macro;
use cel::{DeclarationError, Env, ExecutionError, OverloadError};

/// Declares the members on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "indexOf",
        "list_indexOf_dyn",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_lastIndexOf_dyn",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    env.add_overload(
        "parseServiceAccount",
        "parse_service_account_string_non_prefixed",
        vec![STRING_TYPE],
        parse_service_account,
    )?;
    // cel-go 0.28 made `x.orValue(y)` on a non-optional `x` "no such overload"; Kyverno
    // 1.19 (on cel-go 0.30) rewrites every `x.orValue(y)` call, when it parses, to its
    // `__orValueCompat__(x, y)` (`pkg/cel/compiler/env.go`, `OrValueCompatEnvOptions`,
    // used by the vpol, mpol, gpol, dpol and admission-policy compilers). Both sides are
    // evaluated, and an error on either is the call's, as for any strict function.
    env.add_macro(Macro::receiver("orValue", 1, |helper, target, args| {
        let target = target.take().expect("a receiver macro has a target");
        let default = args.pop().expect("orValue has one argument");
        Ok(Some(helper.next_expr(Expr::Call(CallExpr {
            func_name: OR_VALUE_COMPAT.to_string(),
            target: None,
            args: vec![target, default],
        }))))
    }))?;
    env.add_overload(
        OR_VALUE_COMPAT,
        "__orValueCompat___dyn_dyn",
        vec![DYN_TYPE, DYN_TYPE],
        or_value_compat,
    )?;
    // Kyverno 1.18 and later also spell it with the library's prefix.
    env.add_overload(
        "user.parseServiceAccount",
        "parse_service_account_string_prefixed",
        vec![STRING_TYPE],
        parse_service_account,
    )?;
    // cel-go's regex extension (`ext.Regex`, in Kyverno's environment).
    env.add_overload(
        "regex.replace",
        "regex_replace_string_string_string",
        vec![STRING_TYPE, STRING_TYPE, STRING_TYPE],
        regex_replace,
    )?;
    env.add_overload(
        "regex.replace",
        "regex_replace_string_string_string_int",
        vec![STRING_TYPE, STRING_TYPE, STRING_TYPE, INT_TYPE],
        regex_replace,
    )?;
    env.add_overload(
        "regex.extractAll",
        "regex_extractAll_string_string",
        vec![STRING_TYPE, STRING_TYPE],
        regex_extract_all,
    )?;
    // Kyverno's hash library: each function bare, and from 1.18 on with its prefix.
    for (name, handler) in [
        (
            "md5",
            md5 as for<'b, 'v> fn(Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError>,
        ),
        ("sha1", sha1),
        ("sha256", sha256),
    ] {
        env.add_overload(
            name,
            &format!("{name}_string_non_prefixed"),
            vec![STRING_TYPE],
            handler,
        )?;
        env.add_overload(
            &format!("hash.{name}"),
            &format!("{name}_string_prefixed"),
            vec![STRING_TYPE],
            handler,
        )?;
    }
    Ok(())
}

/// A string argument's digest, hex-encoded (the hash library's `impl`).
fn hashed<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    algorithm: crate::offline::digest::Algorithm,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = strings_of(&args);
    let [text] = s.as_slice() else {
        return Err(ExecutionError::function_error(function, "expects a string"));
    };
    let hex = crate::offline::digest::hex_digest(algorithm, text.as_bytes());
    Ok(CowVal::owned(CelString::from(hex)))
}

fn md5<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    hashed(args, "md5", crate::offline::digest::Algorithm::Md5)
}

fn sha1<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    hashed(args, "sha1", crate::offline::digest::Algorithm::Sha1)
}

fn sha256<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    hashed(args, "sha256", crate::offline::digest::Algorithm::Sha256)
}

/// The function Kyverno's parser makes of `x.orValue(y)`.
const OR_VALUE_COMPAT: &str = "__orValueCompat__";

/// `x.orValue(y)` as Kyverno 1.19 evaluates it: an optional's value, `y` for an empty
/// optional, and any other `x` itself (cel-go 0.27's behaviour).
fn or_value_compat<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [this, default] = two(args, "orValue")?;
    let Some(optional) = this.downcast_ref::<CelOptional>() else {
        return Ok(this);
    };
    Ok(match optional.option() {
        Some(v) => CowVal::from(v.clone_as_boxed()),
        None => default,
    })
}

/// The string arguments of a call, in order (an `int` after them is read apart).
fn strings_of(args: &[CowVal<'_, '_>]) -> Vec<String> {
    args.iter()
        .filter_map(|a| a.downcast_ref::<CelString>().map(|s| s.inner().to_string()))
        .collect()
}

fn regex_of(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

/// `regex.replace(target, pattern, replacement[, count])`: non-overlapping matches
/// replaced (the first `count` when it is not negative); `\N` in the replacement is
/// group N, `\\` a backslash (cel-go `ext/regex.go`).
fn regex_replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "regex.replace";
    let count = args
        .get(3)
        .and_then(|c| c.downcast_ref::<CelInt>())
        .map(|c| *c.inner())
        .unwrap_or(-1);
    let s = strings_of(&args);
    let [target, pattern, replacement] = s.as_slice() else {
        return Err(ExecutionError::function_error(F, "expects three strings"));
    };
    if count == 0 {
        return Ok(CowVal::owned(CelString::from(target.clone())));
    }
    let re = regex_of(pattern, F)?;
    let groups = re.captures_len() - 1;
    let (mut out, mut last, mut done) = (String::new(), 0, 0i64);
    for caps in re.captures_iter(target) {
        if count > 0 && done >= count {
            break;
        }
        let whole = caps.get(0).expect("group 0 is the match");
        out.push_str(&target[last..whole.start()]);
        let mut chars = replacement.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                None => {
                    return Err(ExecutionError::function_error(
                        F,
                        format!(
                            "invalid replacement string: '{replacement}' \\ not allowed at end"
                        ),
                    ));
                }
                Some('\\') => out.push('\\'),
                Some(d) => {
                    let n = d.to_digit(10).ok_or_else(|| {
                        ExecutionError::function_error(
                            F,
                            format!(
                                "invalid replacement string: '{replacement}' \\ must be followed by a digit or \\"
                            ),
                        )
                    })? as usize;
                    if n > groups {
                        return Err(ExecutionError::function_error(
                            F,
                            format!(
                                "replacement string references group {n} but regex has only {groups} group(s)"
                            ),
                        ));
                    }
                    if let Some(g) = caps.get(n) {
                        out.push_str(g.as_str());
                    }
                }
            }
        }
        last = whole.end();
        done += 1;
    }
    out.push_str(&target[last..]);
    Ok(CowVal::owned(CelString::from(out)))
}

/// `regex.extractAll(target, pattern)`: every match, or its one capturing group's
/// non-empty text.
fn regex_extract_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "regex.extractAll";
    let s = strings_of(&args);
    let [target, pattern] = s.as_slice() else {
        return Err(ExecutionError::function_error(F, "expects two strings"));
    };
    let re = regex_of(pattern, F)?;
    let groups = re.captures_len() - 1;
    if groups > 1 {
        return Err(ExecutionError::function_error(
            F,
            format!("regular expression has more than one capturing group: {pattern:?}"),
        ));
    }
    let found: Vec<cel::Value> = re
        .captures_iter(target)
        .filter_map(|c| {
            let m = if groups == 1 { c.get(1) } else { c.get(0) };
            m.map(|m| m.as_str().to_string())
                .filter(|t| groups == 0 || !t.is_empty())
        })
        .map(|t| cel::Value::String(Arc::new(t)))
        .collect();
    let boxed: Box<dyn Val> = cel::Value::List(Arc::new(found)).try_into()?;
    Ok(CowVal::from(boxed))
}

fn two<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
) -> Result<[CowVal<'b, 'v>; 2], ExecutionError> {
    let n = args.len();
    args.try_into()
        .map_err(|_| ExecutionError::InvalidArgumentCount {
            expected: 2,
            actual: n,
        })
        .map_err(|e| ExecutionError::function_error(function, e))
}

/// The positions of the elements of `list` equal to `x` (CEL equality), in order.
fn positions(
    list: &(dyn Val + '_),
    x: &(dyn Val + '_),
    function: &str,
) -> Result<Vec<i64>, ExecutionError> {
    let items = list
        .as_iterable()
        .ok_or_else(|| ExecutionError::function_error(function, "the receiver is not a list"))?;
    let mut it = items.iter();
    let (mut i, mut hits) = (0i64, Vec::new());
    while let Some(item) = it.next() {
        if item.equals(x) {
            hits.push(i);
        }
        i += 1;
    }
    Ok(hits)
}

/// `list.indexOf(x)`: the first position of `x`, or -1.
fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, x] = two(args, "indexOf")?;
    let hits = positions(list.as_ref(), x.as_ref(), "indexOf")?;
    Ok(CowVal::owned(CelInt::from(
        hits.first().copied().unwrap_or(-1),
    )))
}

/// `list.lastIndexOf(x)`: the last position of `x`, or -1.
fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, x] = two(args, "lastIndexOf")?;
    let hits = positions(list.as_ref(), x.as_ref(), "lastIndexOf")?;
    Ok(CowVal::owned(CelInt::from(
        hits.last().copied().unwrap_or(-1),
    )))
}

/// `parseServiceAccount(username)`: the `Name` and `Namespace` of a
/// `system:serviceaccount:NAMESPACE:NAME` user, both empty for any other (Kyverno's
/// `ServiceAccount` type, whose fields keep their Go names).
fn parse_service_account<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let user = args
        .first()
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner().to_string())
        .ok_or_else(|| {
            ExecutionError::function_error("parseServiceAccount", "expects one string")
        })?;
    let (namespace, name) = user
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .unwrap_or(("", ""));
    let sa: std::collections::HashMap<String, cel::Value> = [
        ("Name", name.to_string()),
        ("Namespace", namespace.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), cel::Value::String(Arc::new(v))))
    .collect();
    let boxed: Box<dyn Val> = cel::Value::from(sa).try_into()?;
    Ok(CowVal::from(boxed))
}

/// Whether cel-go has no overload for this call either, so that Kyverno reports the
/// same error: a logical operator on a non-bool (cel-go's `evalAnd`/`evalOr` return
/// "no such overload" unless the other side decides: `false && {}` is `false` in both),
/// and `or`/`value`/`hasValue` on a value that is not optional (cel-go declares them on
/// optionals only, and since 0.28, commit b62dcafe, `or` checks its receiver's kind at
/// run time; Kyverno's compat covers `orValue` alone), and a field or index of `null`
/// (cel-go's `refQualify` finds no such key in a value that is neither map nor list:
/// what a `resource.get` of a missing object is).
pub(super) fn cel_go_has_none(e: &OverloadError) -> bool {
    let first_not_optional = e
        .argument_types()
        .first()
        .is_some_and(|t| !t.starts_with("optional"));
    match e.function() {
        "_&&_" | "_||_" | "!_" | "_?_:_" => true,
        "or" | "value" | "hasValue" => first_not_optional,
        "_._" | "_[_]" => e.argument_types().first().is_some_and(|t| t == "null_type"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;

    fn eval_on_pod(expr: &str) -> Result<cel::Value, EvalError> {
        let req = VapRequest {
            operation: "CREATE".into(),
            object: json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "a"},
                "spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "a"}],
                         "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}}}),
            user: VapUser {
                username: "system:serviceaccount:team-a:builder".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        eval(&base_context(&req, &Value::Null), expr)
    }

    #[test]
    fn list_index_of_was_missing_and_finds_equal_elements() {
        let int = |e: &str| match eval_on_pod(e) {
            Ok(cel::Value::Int(i)) => i,
            other => panic!("{e}: {other:?}"),
        };
        let c = "object.spec.containers";
        assert_eq!(int(&format!("{c}.indexOf({c}[2])")), 0);
        assert_eq!(int(&format!("{c}.lastIndexOf({c}[0])")), 2);
        assert_eq!(int(&format!("{c}.indexOf({{'name': 'zz'}})")), -1);
        assert_eq!(int("['x', 'y'].indexOf('y')"), 1);
        // The strings extension's own `indexOf` still works.
        assert_eq!(int("'hello'.indexOf('l')"), 2);
        // The policy pattern that was skipped: positions of the containers.
        assert_eq!(
            eval_on_pod(&format!("{c}.map(x, {c}.indexOf(x))")).unwrap(),
            cel::Value::from(vec![
                cel::Value::Int(0),
                cel::Value::Int(1),
                cel::Value::Int(0)
            ])
        );
    }

    /// `hash.md5(...)` was an undeclared reference.
    #[test]
    fn the_hash_library_digests_strings_with_and_without_its_prefix() {
        let text = |e: &str| match eval_on_pod(e) {
            Ok(cel::Value::String(s)) => s.to_string(),
            other => panic!("{e}: {other:?}"),
        };
        assert_eq!(text("hash.md5('abc')"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(text("md5(object.metadata.name)"), text("hash.md5('p')"));
        assert_eq!(
            text("hash.sha1('abc')"),
            "a9993e364706816aba3e25717850c26c9cd0d89d"
        );
        assert_eq!(text("sha256('')").len(), 64);
        assert!(eval_on_pod("hash.md5(1)").is_err());
    }

    #[test]
    fn parse_service_account_was_missing_and_splits_the_user() {
        for f in ["parseServiceAccount", "user.parseServiceAccount"] {
            assert_eq!(
                eval_on_pod(&format!(
                    "{f}(request.userInfo.username).Name + '/' + {f}(request.userInfo.username).Namespace"
                ))
                .unwrap(),
                cel::Value::String(Arc::new("builder/team-a".into()))
            );
        }
        assert_eq!(
            eval_on_pod("parseServiceAccount('jane').Name == ''").unwrap(),
            cel::Value::Bool(true)
        );
    }

    #[test]
    fn duration_and_timestamp_were_missing() {
        for e in [
            "duration('1h30m') > duration('90s')",
            "string(duration('1h30m')) == '5400s'",
            "timestamp('2026-01-01T00:00:00Z') + duration('24h') == timestamp('2026-01-02T00:00:00Z')",
            "duration('2h').getMinutes() == 120",
        ] {
            assert_eq!(eval_on_pod(e).unwrap(), cel::Value::Bool(true), "{e}");
        }
        // A malformed duration is the policy's error, as in cel-go.
        assert!(
            eval_on_pod("duration('soon') > duration('1s')")
                .unwrap_err()
                .unsupported
                .is_none()
        );
    }

    #[test]
    fn regex_replace_and_extract_all_were_missing() {
        let s = |e: &str| eval_on_pod(e).unwrap();
        let st = |t: &str| cel::Value::String(Arc::new(t.into()));
        assert_eq!(
            s("regex.replace('foo bar', '(fo)o (ba)r', '\\\\2 \\\\1')"),
            st("ba fo")
        );
        assert_eq!(s("regex.replace('banana', 'a', 'x', 2)"), st("bxnxna"));
        assert_eq!(s("regex.replace('banana', 'a', 'x', -1)"), st("bxnxnx"));
        assert!(
            eval_on_pod("regex.replace('test', '(.)', '\\\\2')")
                .unwrap_err()
                .unsupported
                .is_none()
        );
        assert_eq!(
            s("regex.extractAll('id:123, id:456', 'id:(\\\\d+)')"),
            cel::Value::from(vec![st("123"), st("456")])
        );
    }

    #[test]
    fn or_value_on_a_plain_value_is_the_value_as_kyverno_1_19_rewrites_it() {
        // cel-go 0.28 refuses a receiver that is not optional; Kyverno's compat function
        // gives the receiver back, and an optional its value or the default.
        let b = |e: &str| eval_on_pod(e).unwrap();
        for e in [
            "object.spec.securityContext.capabilities.add.orValue([]).size() == 1",
            "object.spec.?securityContext.?capabilities.?add.orValue([]).size() == 1",
            "object.spec.?nothing.orValue([]).size() == 0",
            "'x'.orValue('y') == 'x'",
            "{'a': 1}.orValue({}).a == 1",
            "optional.none().orValue(3) == 3",
        ] {
            assert_eq!(b(e), cel::Value::Bool(true), "{e}");
        }
        // Both sides are evaluated, as for any function: an error on either is the
        // policy's error, not something kca cannot evaluate.
        for e in [
            "object.spec.missing.orValue(1) == 1",
            "object.spec.?securityContext.orValue(1 / 0) == 1",
        ] {
            let err = eval_on_pod(e).unwrap_err();
            assert_eq!(err.unsupported, None, "{e}: {err:?}");
        }
        // `or`, `value` and `hasValue` still want an optional, as in cel-go.
        let e = eval_on_pod("object.spec.securityContext.hasValue()").unwrap_err();
        assert_eq!(e.unsupported, None, "{e:?}");
    }

    #[test]
    fn arithmetic_errors_read_as_cel_go_words_them() {
        for (e, text) in [
            ("2 / 0 == 1", "division by zero"),
            ("2 % 0 == 1", "modulus by zero"),
            ("9223372036854775807 + 1 > 0", "integer overflow"),
        ] {
            let err = eval_on_pod(e).unwrap_err();
            assert_eq!((err.message.as_str(), err.unsupported), (text, None), "{e}");
        }
    }

    #[test]
    fn and_over_a_bool_and_a_map_is_an_error_unless_false_decides() {
        // cel-go's evalAnd: a non-bool side is "no such overload" unless the other side
        // is false, which decides.
        let e = eval_on_pod("true && object.spec").unwrap_err();
        assert_eq!(e.unsupported, None, "{e:?}");
        assert_eq!(
            eval_on_pod("false && object.spec").unwrap(),
            cel::Value::Bool(false)
        );
        assert_eq!(
            eval_on_pod("object.spec || true").unwrap(),
            cel::Value::Bool(true)
        );
    }
}
