//! `x509_decode` as Kyverno's `jpX509Decode` (pkg/engine/jmespath/functions.go): the
//! first PEM block, a `CERTIFICATE` or a `CERTIFICATE REQUEST` (PKCS#10), decoded into
//! the map Go's `x509.Certificate` / `x509.CertificateRequest` marshal to with
//! encoding/json (the function's `encode`): `[]byte` as base64, OIDs as integer arrays,
//! empty slices as null, `PublicKey` replaced by `{N, E}` (RSA keys only). Parsed by hand
//! from DER (`der`, `ext`); no signature or chain is verified.

pub(super) mod der;
mod ext;

use serde_json::{Map, Value, json};

use der::Tlv;

/// Why `x509_decode` fails, in Kyverno's words where it has its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CertError {
    #[error("failed to decode PEM block")]
    Pem,
    #[error("PEM block neither contains a CERTIFICATE or CERTIFICATE REQUEST")]
    BlockType,
    #[error("x509: malformed {0}")]
    Der(&'static str),
    #[error("certificate should use rsa algorithm")]
    NotRsa,
}

use super::jmes_functions::base64_encode as b64;

/// The first PEM block: its type and decoded bytes (Go's `pem.Decode`).
fn pem_block(text: &str) -> Option<(String, Vec<u8>)> {
    let mut lines = text.lines().map(str::trim);
    let kind = lines.find_map(|l| {
        l.strip_prefix("-----BEGIN ")
            .and_then(|r| r.strip_suffix("-----"))
    })?;
    let end = format!("-----END {kind}-----");
    let mut body = String::new();
    for l in lines.by_ref() {
        if l == end {
            let der = super::jmes_functions::base64_decode(&body)?;
            return Some((kind.to_string(), der));
        }
        // Headers ("Proc-Type: …") are not base64.
        if !l.contains(':') {
            body.push_str(l);
        }
    }
    None
}

/// Decodes `x509_decode`'s argument.
pub fn decode(text: &str) -> Result<Value, CertError> {
    let (kind, der) = pem_block(text).ok_or(CertError::Pem)?;
    match kind.as_str() {
        "CERTIFICATE" => certificate(&der),
        "CERTIFICATE REQUEST" => request(&der),
        _ => Err(CertError::BlockType),
    }
}

/// Go's `x509.SignatureAlgorithm` for an AlgorithmIdentifier.
fn signature_algorithm(alg: &Tlv<'_>) -> Option<u64> {
    let parts = der::seq(alg)?;
    let id = der::oid(parts.first()?)?;
    let rsa = |n: u64| id == [1, 2, 840, 113549, 1, 1, n];
    Some(if rsa(2) {
        1
    } else if rsa(4) {
        2
    } else if rsa(5) || id == [1, 3, 14, 3, 2, 29] {
        3
    } else if rsa(11) {
        4
    } else if rsa(12) {
        5
    } else if rsa(13) {
        6
    } else if rsa(10) {
        // RSASSA-PSS: the hash in the parameters picks SHA-256/384/512.
        let hash = parts
            .get(1)
            .and_then(der::seq)
            .and_then(|p| p.first().and_then(|h| der::read(h.body)).map(|(h, _)| h))
            .and_then(|h| der::seq(&h))
            .and_then(|h| h.first().and_then(der::oid));
        match hash.as_deref() {
            Some([2, 16, 840, 1, 101, 3, 4, 2, 1]) => 13,
            Some([2, 16, 840, 1, 101, 3, 4, 2, 2]) => 14,
            Some([2, 16, 840, 1, 101, 3, 4, 2, 3]) => 15,
            _ => 0,
        }
    } else {
        match id.as_slice() {
            [1, 2, 840, 10040, 4, 3] => 7,
            [2, 16, 840, 1, 101, 3, 4, 3, 2] => 8,
            [1, 2, 840, 10045, 4, 1] => 9,
            [1, 2, 840, 10045, 4, 3, 2] => 10,
            [1, 2, 840, 10045, 4, 3, 3] => 11,
            [1, 2, 840, 10045, 4, 3, 4] => 12,
            [1, 3, 101, 112] => 16,
            _ => 0,
        }
    })
}

/// `PublicKeyAlgorithm` and the RSA key of a SubjectPublicKeyInfo (Kyverno refuses any
/// other key type).
fn public_key(spki: &Tlv<'_>) -> Result<(u64, Value), CertError> {
    let bad = CertError::Der("public key");
    let parts = der::seq(spki).ok_or(bad.clone())?;
    let alg = parts.first().and_then(der::seq).ok_or(bad.clone())?;
    let id = alg.first().and_then(der::oid).ok_or(bad.clone())?;
    if id != [1, 2, 840, 113549, 1, 1, 1] {
        return Err(CertError::NotRsa);
    }
    let (bits, _) = parts.get(1).and_then(der::bit_string).ok_or(bad.clone())?;
    let ints = der::one(bits)
        .as_ref()
        .and_then(der::seq)
        .filter(|i| i.len() == 2 && i.iter().all(|t| t.tag == der::INTEGER))
        .ok_or(bad.clone())?;
    let e = der::small_int(&ints[1]).ok_or(bad)?;
    Ok((1, json!({"N": der::decimal(ints[0].body), "E": e})))
}

/// A Name as Go's `pkix.Name` after `FillFromRDNSequence`.
fn name(t: &Tlv<'_>) -> Option<Value> {
    let mut lists: [(&str, u64, Vec<Value>); 7] = [
        ("Country", 6, vec![]),
        ("Organization", 10, vec![]),
        ("OrganizationalUnit", 11, vec![]),
        ("Locality", 7, vec![]),
        ("Province", 8, vec![]),
        ("StreetAddress", 9, vec![]),
        ("PostalCode", 17, vec![]),
    ];
    let mut common = String::new();
    let mut serial = String::new();
    let mut names = Vec::new();
    for rdn in der::seq(t)? {
        for atv in der::seq(&rdn)? {
            let parts = der::seq(&atv)?;
            let id = der::oid(parts.first()?)?;
            let v = parts.get(1)?;
            let text = der::string(v);
            let value = match (&text, v.tag) {
                (Some(s), _) => json!(s),
                (None, der::INTEGER) => der::small_int(v).map_or(Value::Null, |n| json!(n)),
                (None, der::BOOLEAN) => der::boolean(v).map_or(Value::Null, |b| json!(b)),
                _ => Value::Null,
            };
            names.push(json!({"Type": der::oid_json(&id), "Value": value}));
            let (Some(s), [2, 5, 4, n]) = (text, id.as_slice()) else {
                continue;
            };
            match n {
                3 => common = s,
                5 => serial = s,
                _ => {
                    if let Some(l) = lists.iter_mut().find(|l| l.1 == *n) {
                        l.2.push(json!(s));
                    }
                }
            }
        }
    }
    let mut out = Map::new();
    for (k, _, v) in lists {
        out.insert(
            k.into(),
            if v.is_empty() {
                Value::Null
            } else {
                Value::Array(v)
            },
        );
    }
    out.insert("SerialNumber".into(), json!(serial));
    out.insert("CommonName".into(), json!(common));
    out.insert(
        "Names".into(),
        if names.is_empty() {
            Value::Null
        } else {
            Value::Array(names)
        },
    );
    out.insert("ExtraNames".into(), Value::Null);
    Some(Value::Object(out))
}

fn fields(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn certificate(data: &[u8]) -> Result<Value, CertError> {
    let bad = || CertError::Der("certificate");
    let cert = der::one(data).ok_or_else(bad)?;
    let parts = der::seq(&cert).filter(|p| p.len() == 3).ok_or_else(bad)?;
    let tbs = der::seq(&parts[0]).ok_or_else(bad)?;
    // An explicit [0] version shifts every later field by one.
    let (version, off) = match tbs.first() {
        Some(t) if t.tag == 0xa0 => {
            let v = der::one(t.body)
                .as_ref()
                .and_then(der::small_int)
                .ok_or_else(bad)?;
            (v + 1, 1)
        }
        _ => (1, 0),
    };
    let at = |i: usize| tbs.get(off + i).ok_or_else(bad);
    let serial = der::big_number(at(0)?).ok_or(CertError::Der("serial number"))?;
    let issuer = at(2)?;
    let validity = der::seq(at(3)?).ok_or_else(bad)?;
    let subject = at(4)?;
    let spki = at(5)?;
    let (pk_alg, pk) = public_key(spki)?;
    let (sig, _) = der::bit_string(&parts[2]).ok_or_else(bad)?;
    let mut out = fields(&[
        ("Raw", json!(b64(cert.raw))),
        ("RawTBSCertificate", json!(b64(parts[0].raw))),
        ("RawSubjectPublicKeyInfo", json!(b64(spki.raw))),
        ("RawSubject", json!(b64(subject.raw))),
        ("RawIssuer", json!(b64(issuer.raw))),
        ("Signature", json!(b64(sig))),
        (
            "SignatureAlgorithm",
            json!(signature_algorithm(&parts[1]).unwrap_or(0)),
        ),
        ("PublicKeyAlgorithm", json!(pk_alg)),
        ("PublicKey", pk),
        ("Version", json!(version)),
        ("SerialNumber", serial),
        ("Issuer", name(issuer).ok_or(CertError::Der("issuer"))?),
        ("Subject", name(subject).ok_or(CertError::Der("subject"))?),
        ("NotBefore", json!(validity.first().and_then(der::time))),
        ("NotAfter", json!(validity.get(1).and_then(der::time))),
        ("KeyUsage", json!(0)),
        ("ExtraExtensions", Value::Null),
        ("UnhandledCriticalExtensions", Value::Null),
        ("ExtKeyUsage", Value::Null),
        ("UnknownExtKeyUsage", Value::Null),
        ("BasicConstraintsValid", json!(false)),
        ("IsCA", json!(false)),
        ("MaxPathLen", json!(0)),
        ("MaxPathLenZero", json!(false)),
        ("SubjectKeyId", Value::Null),
        ("AuthorityKeyId", Value::Null),
        ("OCSPServer", Value::Null),
        ("IssuingCertificateURL", Value::Null),
        ("DNSNames", Value::Null),
        ("EmailAddresses", Value::Null),
        ("IPAddresses", Value::Null),
        ("URIs", Value::Null),
        ("PermittedDNSDomainsCritical", json!(false)),
        ("PermittedDNSDomains", Value::Null),
        ("ExcludedDNSDomains", Value::Null),
        ("PermittedIPRanges", Value::Null),
        ("ExcludedIPRanges", Value::Null),
        ("PermittedEmailAddresses", Value::Null),
        ("ExcludedEmailAddresses", Value::Null),
        ("PermittedURIDomains", Value::Null),
        ("ExcludedURIDomains", Value::Null),
        ("CRLDistributionPoints", Value::Null),
        ("PolicyIdentifiers", Value::Null),
        ("Policies", Value::Null),
        ("InhibitAnyPolicy", json!(0)),
        ("InhibitAnyPolicyZero", json!(false)),
        ("InhibitPolicyMapping", json!(0)),
        ("InhibitPolicyMappingZero", json!(false)),
        ("PolicyMappings", Value::Null),
        ("RequireExplicitPolicy", json!(0)),
        ("RequireExplicitPolicyZero", json!(false)),
    ]);
    let mut exts = Vec::new();
    for t in tbs.iter().skip(off + 6) {
        if t.tag == 0xa3 {
            exts = der::one(t.body)
                .as_ref()
                .and_then(ext::list)
                .ok_or(CertError::Der("extensions"))?;
        }
    }
    ext::certificate_fields(&exts, &mut out).ok_or(CertError::Der("extension"))?;
    out.insert("Extensions".into(), ext::json_list(&exts));
    Ok(Value::Object(out))
}

/// PKCS#9 extensionRequest, the CSR attribute that carries requested extensions.
const EXTENSION_REQUEST: [u64; 7] = [1, 2, 840, 113549, 1, 9, 14];

fn request(data: &[u8]) -> Result<Value, CertError> {
    let bad = || CertError::Der("certificate request");
    let csr = der::one(data).ok_or_else(bad)?;
    let parts = der::seq(&csr).filter(|p| p.len() == 3).ok_or_else(bad)?;
    let info = der::seq(&parts[0]).ok_or_else(bad)?;
    let version = info.first().and_then(der::small_int).ok_or_else(bad)?;
    let subject = info.get(1).ok_or_else(bad)?;
    let spki = info.get(2).ok_or_else(bad)?;
    let (pk_alg, pk) = public_key(spki)?;
    let (sig, _) = der::bit_string(&parts[2]).ok_or_else(bad)?;
    // [0] IMPLICIT SET OF Attribute
    let attrs = match info.get(3) {
        Some(t) if t.tag == 0xa0 => der::children(t.body).ok_or_else(bad)?,
        _ => Vec::new(),
    };
    let mut attributes = Vec::new();
    let mut exts = Vec::new();
    for a in &attrs {
        let p = der::seq(a).ok_or_else(bad)?;
        let id = p.first().and_then(der::oid).ok_or_else(bad)?;
        let values = p.get(1).and_then(der::seq).ok_or_else(bad)?;
        // Go's deprecated `Attributes`: each value a list of (type, value) pairs.
        let sets: Vec<Value> = values
            .iter()
            .map(|v| {
                let pairs = der::seq(v).unwrap_or_default();
                Value::Array(pairs.iter().filter_map(attribute_pair).collect())
            })
            .collect();
        attributes.push(json!({"Type": der::oid_json(&id), "Value": sets}));
        if id == EXTENSION_REQUEST {
            for v in &values {
                exts.extend(ext::list(v).ok_or(CertError::Der("extension request"))?);
            }
        }
    }
    let mut out = fields(&[
        ("Raw", json!(b64(csr.raw))),
        ("RawTBSCertificateRequest", json!(b64(parts[0].raw))),
        ("RawSubjectPublicKeyInfo", json!(b64(spki.raw))),
        ("RawSubject", json!(b64(subject.raw))),
        ("Version", json!(version)),
        ("Signature", json!(b64(sig))),
        (
            "SignatureAlgorithm",
            json!(signature_algorithm(&parts[1]).unwrap_or(0)),
        ),
        ("PublicKeyAlgorithm", json!(pk_alg)),
        ("PublicKey", pk),
        ("Subject", name(subject).ok_or(CertError::Der("subject"))?),
        (
            "Attributes",
            if attributes.is_empty() {
                Value::Null
            } else {
                Value::Array(attributes)
            },
        ),
        ("Extensions", ext::json_list(&exts)),
        ("ExtraExtensions", Value::Null),
        ("DNSNames", Value::Null),
        ("EmailAddresses", Value::Null),
        ("IPAddresses", Value::Null),
        ("URIs", Value::Null),
    ]);
    for e in &exts {
        if e.id == [2, 5, 29, 17] {
            ext::alt_names(e.value, &mut out).ok_or(CertError::Der("subject alternative name"))?;
        }
    }
    Ok(Value::Object(out))
}

/// One `pkix.AttributeTypeAndValue` of a CSR attribute value: a SEQUENCE of an OID and a
/// value (an extension's OCTET STRING value as base64, as Go's `[]byte`).
fn attribute_pair(t: &Tlv<'_>) -> Option<Value> {
    let p = der::seq(t)?;
    let id = der::oid(p.first()?)?;
    let v = p.last().filter(|_| p.len() > 1)?;
    let value = match (der::string(v), v.tag) {
        (Some(s), _) => json!(s),
        (None, der::OCTET_STRING) => json!(b64(v.body)),
        (None, der::BOOLEAN) => json!(der::boolean(v)),
        (None, der::INTEGER) => json!(der::small_int(v)),
        _ => Value::Null,
    };
    Some(json!({"Type": der::oid_json(&id), "Value": value}))
}

#[cfg(test)]
mod tests;
