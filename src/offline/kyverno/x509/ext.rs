//! X.509 extensions into the fields Go's `crypto/x509` fills from them
//! (`parseCertificate`'s `processExtensions` in Go's crypto/x509/parser.go): key usage,
//! basic constraints, key identifiers, subject alternative names, extended key usage,
//! CRL distribution points, authority information access, certificate policies.
//! Name constraints, policy mappings and policy constraints are kept only in
//! `Extensions` (their fields stay at Go's zero values).

use serde_json::{Map, Value, json};

use super::b64;
use super::der::{self, Tlv};

/// One extension: its OID, criticality and value bytes.
pub struct Extension<'a> {
    pub id: Vec<u64>,
    pub critical: bool,
    pub value: &'a [u8],
}

/// The extensions of a SEQUENCE OF Extension.
pub fn list<'a>(t: &Tlv<'a>) -> Option<Vec<Extension<'a>>> {
    let mut out = Vec::new();
    for e in der::seq(t)? {
        let parts = der::seq(&e)?;
        let id = der::oid(parts.first()?)?;
        let (critical, value) = match parts.get(1..)? {
            [c, v] => (der::boolean(c)?, v),
            [v] => (false, v),
            _ => return None,
        };
        (value.tag == der::OCTET_STRING).then_some(())?;
        out.push(Extension {
            id,
            critical,
            value: value.body,
        });
    }
    Some(out)
}

/// `Extensions` as Go marshals `[]pkix.Extension`.
pub fn json_list(exts: &[Extension<'_>]) -> Value {
    if exts.is_empty() {
        return Value::Null;
    }
    Value::Array(
        exts.iter()
            .map(|e| json!({"Id": e.id, "Critical": e.critical, "Value": b64(e.value)}))
            .collect(),
    )
}

fn ce(id: &[u64], n: u64) -> bool {
    id == [2, 5, 29, n]
}

/// Subject alternative names into `DNSNames`, `EmailAddresses`, `IPAddresses`, `URIs`.
pub fn alt_names(value: &[u8], out: &mut Map<String, Value>) -> Option<()> {
    let mut dns = Vec::new();
    let mut email = Vec::new();
    let mut ips = Vec::new();
    let mut uris = Vec::new();
    for n in der::seq(&der::one(value)?)? {
        let text = || String::from_utf8_lossy(n.body).into_owned();
        match n.tag {
            0x81 => email.push(json!(text())),
            0x82 => dns.push(json!(text())),
            0x86 => uris.push(url(&text())),
            0x87 => ips.push(json!(ip(n.body)?)),
            _ => {}
        }
    }
    for (k, v) in [
        ("DNSNames", dns),
        ("EmailAddresses", email),
        ("IPAddresses", ips),
        ("URIs", uris),
    ] {
        if !v.is_empty() {
            out.insert(k.into(), Value::Array(v));
        }
    }
    Some(())
}

/// `net.IP` as text.
fn ip(b: &[u8]) -> Option<String> {
    match b.len() {
        4 => Some(std::net::Ipv4Addr::new(b[0], b[1], b[2], b[3]).to_string()),
        16 => {
            let a: [u8; 16] = b.try_into().ok()?;
            let v6 = std::net::Ipv6Addr::from(a);
            Some(match v6.to_ipv4_mapped() {
                Some(v4) => v4.to_string(),
                None => v6.to_string(),
            })
        }
        _ => None,
    }
}

/// A URI as Go's `url.URL` struct marshals (every exported field).
fn url(s: &str) -> Value {
    let (rest, fragment) = s.split_once('#').unwrap_or((s, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((sc, r)) if !sc.is_empty() && !sc.contains('/') => (sc, r),
        _ => ("", rest),
    };
    let (host, path, opaque) = if let Some(r) = rest.strip_prefix("//") {
        let (auth, path) = r.find('/').map_or((r, ""), |i| (&r[..i], &r[i..]));
        (auth, path, "")
    } else if !scheme.is_empty() && !rest.starts_with('/') {
        ("", "", rest)
    } else {
        ("", rest, "")
    };
    let (user, host) = match host.rsplit_once('@') {
        Some((_, h)) => (json!({}), h),
        None => (Value::Null, host),
    };
    json!({
        "Scheme": scheme.to_ascii_lowercase(), "Opaque": opaque, "User": user, "Host": host,
        "Path": path, "RawPath": "", "OmitHost": false, "ForceQuery": false,
        "RawQuery": query, "Fragment": fragment, "RawFragment": "",
    })
}

/// Go's `x509.ExtKeyUsage` for an extended key usage OID.
fn ext_key_usage(id: &[u64]) -> Option<u64> {
    const PKIX_KP: [u64; 8] = [1, 3, 6, 1, 5, 5, 7, 3];
    if id == [2, 5, 29, 37, 0] {
        return Some(0);
    }
    if id.len() == 9 && id[..8] == PKIX_KP && (1..=9).contains(&id[8]) {
        return Some(id[8]);
    }
    match id {
        [1, 3, 6, 1, 4, 1, 311, 10, 3, 3] => Some(10),
        [2, 16, 840, 1, 113730, 4, 1] => Some(11),
        [1, 3, 6, 1, 4, 1, 311, 2, 1, 22] => Some(12),
        [1, 3, 6, 1, 4, 1, 311, 61, 1, 1] => Some(13),
        _ => None,
    }
}

fn uri_names(names: &Tlv<'_>) -> Vec<Value> {
    der::children(names.body)
        .unwrap_or_default()
        .iter()
        .filter(|n| n.tag == 0x86)
        .map(|n| json!(String::from_utf8_lossy(n.body)))
        .collect()
}

/// A certificate's extensions into its fields; `None` when one it reads is malformed.
pub fn certificate_fields(exts: &[Extension<'_>], out: &mut Map<String, Value>) -> Option<()> {
    let mut unhandled = Vec::new();
    for e in exts {
        let id = e.id.as_slice();
        if ce(id, 15) {
            let (bits, unused) = der::bit_string(&der::one(e.value)?)?;
            let mut usage = 0u64;
            for i in 0..9usize {
                let byte = bits.get(i / 8).copied().unwrap_or(0);
                let last = i / 8 + 1 == bits.len();
                if (last && 7 - i % 8 < unused as usize) || byte & (0x80 >> (i % 8)) == 0 {
                    continue;
                }
                usage |= 1 << i;
            }
            out.insert("KeyUsage".into(), json!(usage));
        } else if ce(id, 19) {
            let parts = der::seq(&der::one(e.value)?)?;
            let mut is_ca = false;
            let mut max = -1i64;
            for p in &parts {
                match p.tag {
                    der::BOOLEAN => is_ca = der::boolean(p)?,
                    der::INTEGER => max = der::small_int(p)?,
                    _ => return None,
                }
            }
            out.insert("BasicConstraintsValid".into(), json!(true));
            out.insert("IsCA".into(), json!(is_ca));
            out.insert("MaxPathLen".into(), json!(max));
            out.insert("MaxPathLenZero".into(), json!(max == 0));
        } else if ce(id, 14) {
            let t = der::one(e.value)?;
            (t.tag == der::OCTET_STRING).then_some(())?;
            out.insert("SubjectKeyId".into(), json!(b64(t.body)));
        } else if ce(id, 35) {
            for p in der::seq(&der::one(e.value)?)? {
                if p.tag == 0x80 {
                    out.insert("AuthorityKeyId".into(), json!(b64(p.body)));
                }
            }
        } else if ce(id, 17) {
            alt_names(e.value, out)?;
        } else if ce(id, 37) {
            let mut known = Vec::new();
            let mut unknown = Vec::new();
            for o in der::seq(&der::one(e.value)?)? {
                let arcs = der::oid(&o)?;
                match ext_key_usage(&arcs) {
                    Some(k) => known.push(json!(k)),
                    None => unknown.push(der::oid_json(&arcs)),
                }
            }
            if !known.is_empty() {
                out.insert("ExtKeyUsage".into(), Value::Array(known));
            }
            if !unknown.is_empty() {
                out.insert("UnknownExtKeyUsage".into(), Value::Array(unknown));
            }
        } else if ce(id, 31) {
            let mut urls = Vec::new();
            for dp in der::seq(&der::one(e.value)?)? {
                for part in der::seq(&dp)? {
                    // [0] distributionPoint holding [0] fullName
                    if part.tag == 0xa0
                        && let Some((full, _)) = der::read(part.body)
                        && full.tag == 0xa0
                    {
                        urls.extend(uri_names(&full));
                    }
                }
            }
            if !urls.is_empty() {
                out.insert("CRLDistributionPoints".into(), Value::Array(urls));
            }
        } else if id == [1, 3, 6, 1, 5, 5, 7, 1, 1] {
            let mut ocsp = Vec::new();
            let mut issuers = Vec::new();
            for ad in der::seq(&der::one(e.value)?)? {
                let parts = der::seq(&ad)?;
                let method = der::oid(parts.first()?)?;
                let Some(loc) = parts.get(1).filter(|l| l.tag == 0x86) else {
                    continue;
                };
                let text = json!(String::from_utf8_lossy(loc.body));
                match method.as_slice() {
                    [1, 3, 6, 1, 5, 5, 7, 48, 1] => ocsp.push(text),
                    [1, 3, 6, 1, 5, 5, 7, 48, 2] => issuers.push(text),
                    _ => {}
                }
            }
            if !ocsp.is_empty() {
                out.insert("OCSPServer".into(), Value::Array(ocsp));
            }
            if !issuers.is_empty() {
                out.insert("IssuingCertificateURL".into(), Value::Array(issuers));
            }
        } else if ce(id, 32) {
            let mut ids = Vec::new();
            let mut dotted = Vec::new();
            for pi in der::seq(&der::one(e.value)?)? {
                let arcs = der::oid(der::seq(&pi)?.first()?)?;
                let text: Vec<String> = arcs.iter().map(u64::to_string).collect();
                dotted.push(json!(text.join(".")));
                ids.push(der::oid_json(&arcs));
            }
            out.insert("PolicyIdentifiers".into(), Value::Array(ids));
            out.insert("Policies".into(), Value::Array(dotted));
        } else if e.critical && !matches!(id, [2, 5, 29, 30 | 33 | 36 | 54]) {
            unhandled.push(der::oid_json(id));
        }
    }
    if !unhandled.is_empty() {
        out.insert(
            "UnhandledCriticalExtensions".into(),
            Value::Array(unhandled),
        );
    }
    Some(())
}
