//! `x509_decode`: the few certificate fields policies read (serial, validity, RSA public
//! key), parsed from PEM/DER by hand. It must not verify signatures or chains.

use serde_json::{Value, json};

/// A DER element: tag and content.
struct Tlv<'a> {
    tag: u8,
    body: &'a [u8],
}

fn read(data: &[u8]) -> Option<(Tlv<'_>, &[u8])> {
    let tag = *data.first()?;
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
    let body = data.get(start..start + len)?;
    Some((Tlv { tag, body }, &data[start + len..]))
}

fn children(body: &[u8]) -> Option<Vec<Tlv<'_>>> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let (t, r) = read(rest)?;
        out.push(t);
        rest = r;
    }
    Some(out)
}

/// Big-endian unsigned integer bytes as decimal text.
fn decimal(bytes: &[u8]) -> String {
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

fn time(t: &Tlv<'_>) -> Option<String> {
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
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        full.get(0..4)?,
        full.get(4..6)?,
        full.get(6..8)?,
        full.get(8..10)?,
        full.get(10..12)?,
        full.get(12..14)?
    ))
}

/// Why a PEM text is not a certificate kca can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    #[error("certificate is not valid base64")]
    Base64,
    #[error("certificate is not valid DER")]
    Der,
}

/// Decodes a PEM certificate into a map shaped like Go's `x509.Certificate` JSON for
/// the fields kca knows; big integers are decimal strings.
pub fn decode(pem: &str) -> Result<Value, CertError> {
    let b64: String = pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .join("");
    let der = super::vars::base64_decode(&b64).ok_or(CertError::Base64)?;
    let bad = || CertError::Der;
    let (cert, _) = read(&der).ok_or_else(bad)?;
    let parts = children(cert.body).ok_or_else(bad)?;
    let tbs = children(parts.first().ok_or_else(bad)?.body).ok_or_else(bad)?;
    // An explicit [0] version shifts every later field by one.
    let (version, off) = match tbs.first() {
        Some(t) if t.tag == 0xa0 => {
            let (v, _) = read(t.body).ok_or_else(bad)?;
            (i64::from(*v.body.last().unwrap_or(&0)) + 1, 1)
        }
        _ => (1, 0),
    };
    let serial = tbs.get(off).ok_or_else(bad)?;
    let validity = children(tbs.get(off + 3).ok_or_else(bad)?.body).ok_or_else(bad)?;
    let spki = children(tbs.get(off + 5).ok_or_else(bad)?.body).ok_or_else(bad)?;
    let mut public_key = Value::Null;
    if let Some(bits) = spki.get(1).filter(|t| t.tag == 0x03)
        && let Some((rsa, _)) = read(bits.body.get(1..).unwrap_or(&[]))
        && let Some(ints) = children(rsa.body)
        && ints.len() == 2
    {
        let e = ints[1]
            .body
            .iter()
            .fold(0i64, |acc, b| (acc << 8) | i64::from(*b));
        public_key = json!({"N": decimal(ints[0].body), "E": e});
    }
    Ok(json!({
        "Version": version,
        "SerialNumber": decimal(serial.body),
        "NotBefore": validity.first().and_then(time),
        "NotAfter": validity.get(1).and_then(time),
        "PublicKey": public_key,
    }))
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
}
