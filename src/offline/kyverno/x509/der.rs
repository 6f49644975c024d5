//! A small DER reader for `x509_decode`: elements, OIDs, integers, strings and times as
//! Go's encoding/asn1 reads them. Only definite lengths and one-byte tags (all X.509 uses).

use serde_json::{Value, json};

/// A DER element: tag, content, and the whole encoding (Go's `Raw*` fields).
#[derive(Clone, Copy)]
pub struct Tlv<'a> {
    pub tag: u8,
    pub body: &'a [u8],
    pub raw: &'a [u8],
}

pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;
pub const INTEGER: u8 = 0x02;
pub const BOOLEAN: u8 = 0x01;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const OID: u8 = 0x06;

/// The first element of `data` and what follows it.
pub fn read(data: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let tag = *data.first()?;
    if tag & 0x1f == 0x1f {
        return None;
    }
    let first = *data.get(1)? as usize;
    let (len, start) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *data.get(2 + i)? as usize;
        }
        (len, 2 + n)
    };
    let end = start.checked_add(len)?;
    let body = data.get(start..end)?;
    Some((
        Tlv {
            tag,
            body,
            raw: &data[..end],
        },
        &data[end..],
    ))
}

/// Exactly one element filling `data`.
pub fn one(data: &[u8]) -> Option<Tlv<'_>> {
    match read(data)? {
        (t, []) => Some(t),
        _ => None,
    }
}

/// The elements of a constructed value's content.
pub fn children(body: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (t, r) = read(rest)?;
        out.push(t);
        rest = r;
    }
    Some(out)
}

/// The elements of a SEQUENCE (or SET) element.
pub fn seq<'a>(t: &Tlv<'a>) -> Option<Vec<Tlv<'a>>> {
    matches!(t.tag, SEQUENCE | SET).then_some(())?;
    children(t.body)
}

/// An OBJECT IDENTIFIER's arcs.
pub fn oid(t: &Tlv<'_>) -> Option<Vec<u64>> {
    (t.tag == OID && !t.body.is_empty()).then_some(())?;
    let mut arcs = Vec::new();
    let mut v: u64 = 0;
    for (i, &b) in t.body.iter().enumerate() {
        v = v.checked_mul(128)? | u64::from(b & 0x7f);
        if b & 0x80 == 0 {
            if arcs.is_empty() {
                let (a, b) = if v < 80 {
                    (v / 40, v % 40)
                } else {
                    (2, v - 80)
                };
                arcs.extend([a, b]);
            } else {
                arcs.push(v);
            }
            v = 0;
        } else if i + 1 == t.body.len() {
            return None;
        }
    }
    Some(arcs)
}

/// An OID as Go's `asn1.ObjectIdentifier` marshals: an array of integers.
pub fn oid_json(arcs: &[u64]) -> Value {
    json!(arcs)
}

/// A BOOLEAN's value.
pub fn boolean(t: &Tlv<'_>) -> Option<bool> {
    (t.tag == BOOLEAN && t.body.len() == 1).then(|| t.body[0] != 0)
}

/// A small INTEGER (two's complement) as i64.
pub fn small_int(t: &Tlv<'_>) -> Option<i64> {
    (t.tag == INTEGER && !t.body.is_empty() && t.body.len() <= 8).then_some(())?;
    let neg = t.body[0] & 0x80 != 0;
    let start = if neg { -1i64 } else { 0 };
    Some(
        t.body
            .iter()
            .fold(start, |acc, b| (acc << 8) | i64::from(*b)),
    )
}

/// A BIT STRING's bytes (the unused-bits count dropped) and that count.
pub fn bit_string<'a>(t: &Tlv<'a>) -> Option<(&'a [u8], u8)> {
    (t.tag == BIT_STRING).then_some(())?;
    let (&unused, bytes) = t.body.split_first()?;
    (unused < 8).then_some((bytes, unused))
}

/// A string value of the kinds Go's asn1 reads into a Go `string`.
pub fn string(t: &Tlv<'_>) -> Option<String> {
    match t.tag {
        // UTF8String, NumericString, PrintableString, T61String, IA5String, GeneralString
        0x0c | 0x12 | 0x13 | 0x14 | 0x16 | 0x1b => {
            Some(String::from_utf8_lossy(t.body).into_owned())
        }
        // BMPString: UTF-16BE
        0x1e if t.body.len().is_multiple_of(2) => {
            let units: Vec<u16> = t
                .body
                .chunks(2)
                .map(|c| u16::from_be_bytes([c[0], c[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        _ => None,
    }
}

/// A UTCTime or GeneralizedTime as Go's `time.Time` marshals (RFC 3339, UTC).
pub fn time(t: &Tlv<'_>) -> Option<String> {
    let s = std::str::from_utf8(t.body).ok()?;
    let full = match t.tag {
        // UTCTime YYMMDDHHMMSSZ: years 50-99 are 19xx.
        0x17 => {
            let yy: u32 = s.get(0..2)?.parse().ok()?;
            format!("{}{}", if yy >= 50 { 19 } else { 20 }, s)
        }
        0x18 => s.to_string(),
        _ => return None,
    };
    let frac = full
        .get(14..)
        .and_then(|r| r.strip_prefix('.'))
        .map(|r| r.trim_end_matches('Z').trim_end_matches('0'))
        .filter(|r| !r.is_empty())
        .map(|r| format!(".{r}"))
        .unwrap_or_default();
    Some(format!(
        "{}-{}-{}T{}:{}:{}{frac}Z",
        full.get(0..4)?,
        full.get(4..6)?,
        full.get(6..8)?,
        full.get(8..10)?,
        full.get(10..12)?,
        full.get(12..14)?
    ))
}

/// Big-endian unsigned integer bytes as decimal text.
pub fn decimal(bytes: &[u8]) -> String {
    let mut digits: Vec<u32> = Vec::new(); // base 1e9, little-endian
    for &b in bytes {
        let mut carry = u64::from(b);
        for d in digits.iter_mut() {
            let v = u64::from(*d) * 256 + carry;
            *d = (v % 1_000_000_000) as u32;
            carry = v / 1_000_000_000;
        }
        while carry > 0 {
            digits.push((carry % 1_000_000_000) as u32);
            carry /= 1_000_000_000;
        }
    }
    match digits.split_last() {
        None => "0".into(),
        Some((top, rest)) => {
            let mut s = top.to_string();
            for d in rest.iter().rev() {
                s.push_str(&format!("{d:09}"));
            }
            s
        }
    }
}

/// A non-negative INTEGER as the number Go's `*big.Int` marshals to and Kyverno's
/// `encode` reads back into `any`: exact while it fits, else a float64.
pub fn big_number(t: &Tlv<'_>) -> Option<Value> {
    (t.tag == INTEGER).then_some(())?;
    let text = decimal(t.body);
    if t.body.first().is_some_and(|b| b & 0x80 != 0) {
        // Negative serials are refused by Go's x509 since 1.23.
        return None;
    }
    Some(match text.parse::<u64>() {
        Ok(n) => json!(n),
        Err(_) => json!(text.parse::<f64>().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_of_big_endian_bytes() {
        assert_eq!(decimal(&[0x01, 0x00]), "256");
        assert_eq!(decimal(&[0xff; 8]), "18446744073709551615");
        assert_eq!(decimal(&[]), "0");
    }

    #[test]
    fn oids_and_times() {
        let (t, _) = read(&[0x06, 0x03, 0x55, 0x04, 0x03]).unwrap();
        assert_eq!(oid(&t), Some(vec![2, 5, 4, 3]));
        let (t, _) = read(&[0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07]).unwrap();
        assert_eq!(oid(&t), Some(vec![1, 3, 6, 1, 5, 5, 7]));
        let body = b"500101000000Z";
        let mut enc = vec![0x17, body.len() as u8];
        enc.extend_from_slice(body);
        let (t, _) = read(&enc).unwrap();
        assert_eq!(time(&t).as_deref(), Some("1950-01-01T00:00:00Z"));
        assert!(read(&[0x30, 0x05, 0x01]).is_none(), "length past the end");
    }
}
