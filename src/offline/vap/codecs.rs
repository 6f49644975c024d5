//! CEL encoders Kyverno's environment has and the interpreter lacks: cel-go's
//! `base64.encode`/`base64.decode` (`ext/encoders.go`), Kyverno's `gzip.compress`/
//! `gzip.decompress` (kyverno/sdk `extensions/cel/libs/gzip`) and `json.unmarshal`/
//! `json.marshal` (kyverno/sdk `extensions/cel/libs/json`, Go's `encoding/json`).
//! What they decode is capped ([`MAX_DECODED`] bytes, [`MAX_MADE`] values), so a small
//! input cannot make a large value; the values then count as any other made value.

use std::sync::Arc;

use base64::Engine as _;
use cel::common::types::{BYTES_TYPE, CelBytes, CelString, DYN_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::cel_env::MAX_MADE;

/// Most bytes a decoder makes of one call: far above what a policy decodes (a
/// ConfigMap holds at most 1 MiB), so that a compressed bomb stops early.
pub(super) const MAX_DECODED: usize = 4 << 20;

/// Declares the functions on `env`.
pub(super) fn extension(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "base64.encode",
        "base64_encode_bytes",
        vec![BYTES_TYPE],
        base64_encode,
    )?;
    env.add_overload(
        "base64.decode",
        "base64_decode_string",
        vec![STRING_TYPE],
        base64_decode,
    )?;
    env.add_overload(
        "gzip.decompress",
        "gzip_decompress_bytes",
        vec![BYTES_TYPE],
        gzip_decompress,
    )?;
    env.add_overload(
        "gzip.compress",
        "gzip_compress_string",
        vec![STRING_TYPE],
        gzip_compress,
    )?;
    env.add_overload(
        "json.unmarshal",
        "json_unmarshal_string",
        vec![STRING_TYPE],
        json_unmarshal,
    )?;
    env.add_overload(
        "json.marshal",
        "json_marshal_dyn",
        vec![DYN_TYPE],
        json_marshal,
    )?;
    Ok(())
}

fn fail(function: &str, why: impl std::fmt::Display) -> ExecutionError {
    ExecutionError::function_error(function, why.to_string())
}

pub(super) fn string_arg(
    args: &[CowVal<'_, '_>],
    function: &str,
) -> Result<String, ExecutionError> {
    args.first()
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner().to_string())
        .ok_or_else(|| fail(function, "expects one string"))
}

fn bytes_arg(args: &[CowVal<'_, '_>], function: &str) -> Result<Vec<u8>, ExecutionError> {
    args.first()
        .and_then(|a| a.downcast_ref::<CelBytes>())
        .map(|b| b.inner().to_vec())
        .ok_or_else(|| fail(function, "expects one bytes value"))
}

pub(super) fn boxed<'b, 'v>(v: cel::Value) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let b: Box<dyn Val> = v.try_into()?;
    Ok(CowVal::from(b))
}

fn bytes_value<'b, 'v>(b: Vec<u8>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    boxed(cel::Value::Bytes(Arc::new(b)))
}

fn string_value<'b, 'v>(s: String) -> Result<CowVal<'b, 'v>, ExecutionError> {
    boxed(cel::Value::String(Arc::new(s)))
}

/// `base64.encode(bytes)`: standard alphabet, padded.
fn base64_encode<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let b = bytes_arg(&args, "base64.encode")?;
    string_value(base64::engine::general_purpose::STANDARD.encode(b))
}

/// `base64.decode(string)`: standard alphabet, padded or (cel-go's fallback) not.
fn base64_decode<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "base64.decode";
    let s = string_arg(&args, F)?;
    if s.len() / 4 * 3 > MAX_DECODED {
        return Err(fail(F, format!("decodes to more than {MAX_DECODED} bytes")));
    }
    let engines = [
        base64::engine::general_purpose::STANDARD,
        base64::engine::general_purpose::STANDARD_NO_PAD,
    ];
    let mut last = None;
    for e in engines {
        match e.decode(s.as_bytes()) {
            Ok(b) => return bytes_value(b),
            Err(err) => last = Some(err),
        }
    }
    Err(fail(F, last.map(|e| e.to_string()).unwrap_or_default()))
}

/// `gzip.decompress(bytes)`: the text of a gzip stream (RFC 1952; members one after
/// another are read as one, as Go's reader does), its checksum and length verified.
fn gzip_decompress<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "gzip.decompress";
    let data = bytes_arg(&args, F)?;
    let out = gunzip(&data).map_err(|e| fail(F, e))?;
    let text = String::from_utf8_lossy(&out).into_owned();
    string_value(text)
}

/// `gzip.compress(string)`: a gzip stream of the text, with no time stamp (Kyverno's).
fn gzip_compress<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = string_arg(&args, "gzip.compress")?;
    bytes_value(gzip(s.as_bytes()))
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend(miniz_oxide::deflate::compress_to_vec(data, 6));
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// The payload of a gzip stream, at most [`MAX_DECODED`] bytes.
pub(crate) fn gunzip(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    if data.is_empty() {
        return Err("unexpected EOF".into());
    }
    while !data.is_empty() {
        let body = member_body(data)?;
        let limit = MAX_DECODED - out.len();
        let mut state =
            miniz_oxide::inflate::stream::InflateState::new(miniz_oxide::DataFormat::Raw);
        let mut chunk = vec![0u8; limit.clamp(1, 1 << 16)];
        let mut member = Vec::new();
        let mut input = &data[body..];
        loop {
            let r = miniz_oxide::inflate::stream::inflate(
                &mut state,
                input,
                &mut chunk,
                miniz_oxide::MZFlush::None,
            );
            input = &input[r.bytes_consumed..];
            member.extend_from_slice(&chunk[..r.bytes_written]);
            if member.len() > limit {
                return Err(format!("decompresses to more than {MAX_DECODED} bytes"));
            }
            match r.status {
                Ok(miniz_oxide::MZStatus::StreamEnd) => break,
                Ok(_) if r.bytes_consumed == 0 && r.bytes_written == 0 => {
                    return Err("unexpected EOF".into());
                }
                Ok(_) => {}
                Err(_) => return Err("flate: corrupt input".into()),
            }
        }
        let [c0, c1, c2, c3, l0, l1, l2, l3, ..] = *input else {
            return Err("unexpected EOF".into());
        };
        if u32::from_le_bytes([c0, c1, c2, c3]) != crc32(&member)
            || u32::from_le_bytes([l0, l1, l2, l3]) != member.len() as u32
        {
            return Err("gzip: invalid checksum".into());
        }
        out.extend(member);
        data = &input[8..];
    }
    Ok(out)
}

/// Where the compressed data of the gzip member at the start of `d` begins.
fn member_body(d: &[u8]) -> Result<usize, String> {
    if d.len() < 10 {
        return Err("unexpected EOF".into());
    }
    if d[0] != 0x1f || d[1] != 0x8b || d[2] != 8 {
        return Err("gzip: invalid header".into());
    }
    let flags = d[3];
    let mut at = 10;
    let eof = || "unexpected EOF".to_string();
    if flags & 4 != 0 {
        let n = d.get(at..at + 2).ok_or_else(eof)?;
        at += 2 + usize::from(u16::from_le_bytes([n[0], n[1]]));
    }
    for bit in [8u8, 16] {
        if flags & bit != 0 {
            let end = d.get(at..).ok_or_else(eof)?.iter().position(|&b| b == 0);
            at += end.ok_or_else(eof)? + 1;
        }
    }
    if flags & 2 != 0 {
        at += 2;
    }
    if at > d.len() {
        return Err(eof());
    }
    Ok(at)
}

/// CRC-32 (IEEE), as gzip's trailer holds it.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `json.unmarshal(string)`: the value of a JSON text as Go decodes it into `any`
/// (every number a `double`), at most [`MAX_MADE`] values.
fn json_unmarshal<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "json.unmarshal";
    let s = string_arg(&args, F)?;
    let v: serde_json::Value = serde_json::from_str(&s).map_err(|e| fail(F, e))?;
    let v = go_any(&v);
    if super::cost::shape_of(&v).total > MAX_MADE {
        return Err(fail(
            F,
            format!("makes more than {} values", MAX_MADE as u64),
        ));
    }
    boxed(v)
}

fn go_any(v: &serde_json::Value) -> cel::Value {
    match v {
        serde_json::Value::Number(n) => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::Array(a) => cel::Value::List(Arc::new(a.iter().map(go_any).collect())),
        serde_json::Value::Object(m) => {
            let map: std::collections::HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), go_any(v))).collect();
            cel::Value::from(map)
        }
        other => super::cel_env::to_cel(other),
    }
}

/// `json.marshal(value)`: Go's `json.Marshal` text (keys sorted, `<`, `>` and `&`
/// escaped, whole doubles without a fraction).
fn json_marshal<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    const F: &str = "json.marshal";
    let arg = args.first().ok_or_else(|| fail(F, "expects one value"))?;
    let v =
        cel::Value::try_from(arg.as_ref()).map_err(|_| fail(F, "the value has no JSON form"))?;
    let j = super::cel_env::from_cel(&v).map_err(|e| fail(F, format!("{e:?}")))?;
    let mut out = String::new();
    go_json(&j, &mut out);
    string_value(out)
}

fn go_json(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value as J;
    match v {
        J::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 1e21 => {
                out.push_str(&format!("{f:.0}"))
            }
            _ => out.push_str(&n.to_string()),
        },
        J::String(s) => {
            let quoted = serde_json::to_string(s).unwrap_or_default();
            for c in quoted.chars() {
                match c {
                    '<' => out.push_str("\\u003c"),
                    '>' => out.push_str("\\u003e"),
                    '&' => out.push_str("\\u0026"),
                    '\u{2028}' => out.push_str("\\u2028"),
                    '\u{2029}' => out.push_str("\\u2029"),
                    c => out.push(c),
                }
            }
        }
        J::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(x, out);
            }
            out.push(']');
        }
        J::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(&J::String(k.clone()), out);
                out.push(':');
                go_json(x, out);
            }
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
#[path = "codecs_tests.rs"]
pub(super) mod tests;
