use super::super::*;

pub(crate) fn run(expr: &str) -> Result<cel::Value, EvalError> {
    eval(&base_context(&VapRequest::default(), &Value::Null), expr)
}

pub(crate) fn text(expr: &str) -> String {
    match run(expr) {
        Ok(cel::Value::String(s)) => s.to_string(),
        other => panic!("{expr}: {other:?}"),
    }
}

pub(crate) fn truth(expr: &str) -> bool {
    match run(expr) {
        Ok(cel::Value::Bool(b)) => b,
        other => panic!("{expr}: {other:?}"),
    }
}

fn fails(expr: &str) -> String {
    match run(expr) {
        Err(e) => format!("{e:?}"),
        Ok(v) => panic!("{expr} should fail, gave {v:?}"),
    }
}

#[test]
fn base64_round_trips_padded_and_unpadded() {
    assert_eq!(text("base64.encode(b'kca rules')"), "a2NhIHJ1bGVz");
    assert_eq!(text("base64.encode(b'ab')"), "YWI=");
    assert!(truth("base64.decode('YWI=') == b'ab'"));
    // cel-go falls back to the unpadded alphabet.
    assert!(truth("base64.decode('YWI') == b'ab'"));
    assert!(truth(
        "string(base64.decode(base64.encode(b'x y z'))) == 'x y z'"
    ));
    fails("base64.decode('not base64!')");
}

#[test]
fn gzip_decompresses_what_gzip_made_and_checks_the_stream() {
    // `printf 'hello kca\n' | gzip -n | base64`
    let made = "H4sIAAAAAAAAA8tIzcnJV8hOTuQCAHRf+v4KAAAA";
    assert_eq!(
        text(&format!("gzip.decompress(base64.decode('{made}'))")),
        "hello kca\n"
    );
    assert_eq!(
        text("gzip.decompress(gzip.compress('a longer text, a longer text'))"),
        "a longer text, a longer text"
    );
    // Not gzip, and a stream cut short, are errors as in Go's reader.
    fails("gzip.decompress(b'plain text')");
    fails(&format!(
        "gzip.decompress(base64.decode('{}'))",
        &made[..20]
    ));
    // A wrong checksum in the trailer.
    let bad = "H4sIAAAAAAAAA8tIzcnJV8hOTuQCAPasoqgKAAAA";
    assert!(fails(&format!("gzip.decompress(base64.decode('{bad}'))")).contains("checksum"));
}

#[test]
fn gzip_stops_a_bomb_at_the_cap() {
    let zeros = vec![0u8; super::MAX_DECODED + 1];
    let bomb = super::gzip(&zeros);
    assert!(bomb.len() < 10_000);
    assert!(super::gunzip(&bomb).unwrap_err().contains("more than"));
    assert_eq!(super::gunzip(&super::gzip(b"ok")).unwrap(), b"ok");
}

#[test]
fn json_unmarshal_reads_numbers_as_go_does_and_marshal_sorts_keys() {
    assert!(truth(
        r#"json.unmarshal('{"env":"prod","n":2}')['env'] == 'prod'"#
    ));
    assert!(truth(r#"json.unmarshal('{"n":2}').n == 2.0"#));
    assert!(truth(
        r#"json.unmarshal('[1, "a", null, true]').size() == 4"#
    ));
    fails(r#"json.unmarshal('{"env":')"#);
    assert_eq!(
        text(r#"json.marshal({'b': [1, 2.0, 'x<y'], 'a': true})"#),
        r#"{"a":true,"b":[1,2,"x\u003cy"]}"#
    );
}

#[test]
fn json_unmarshal_is_capped() {
    // 70,000 values, made from a literal half as long (an expression is at most 100,000
    // code points, as in cel-go).
    let half = "0,".repeat(35_000);
    let err = fails(&format!(
        "json.unmarshal('[' + [1, 2].map(i, '{half}').join('') + '0]')"
    ));
    assert!(err.contains("more than"), "{err}");
}
