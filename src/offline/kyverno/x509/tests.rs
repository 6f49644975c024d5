//! `x509_decode` on a certificate and a CSR made for these tests with OpenSSL
//! (`openssl req -new -newkey rsa:1024 -subj "/C=JP/O=kca test/OU=course/CN=mika"
//! -addext subjectAltName=… -addext extendedKeyUsage=clientAuth`, then
//! `openssl x509 -req -signkey … -set_serial 123456789012345678901234567890`).

use super::*;

const CSR: &str = "
-----BEGIN CERTIFICATE REQUEST-----
MIIB8jCCAVsCAQAwQDELMAkGA1UEBhMCSlAxETAPBgNVBAoMCGtjYSB0ZXN0MQ8w
DQYDVQQLDAZjb3Vyc2UxDTALBgNVBAMMBG1pa2EwgZ8wDQYJKoZIhvcNAQEBBQAD
gY0AMIGJAoGBAL3kG9l7q/lUm5MRaBSrr1MgdZwt+W1G6+YADn7TFh1myvS8h2BO
vUf/saFQrE5osW5Y/flSCOKLmlLhBvjBWpXCvUjOKE++UAn7P+QkWp87n4iHvcBn
/BhYOg8LcjRM5Nn3CvIAKEq9vhKCE115xON4Y9B7BvRYc47ttZLzbbfBAgMBAAGg
cjBwBgkqhkiG9w0BCQ4xYzBhMEoGA1UdEQRDMEGCDG1pa2EuZXhhbXBsZYcECgAA
AYEQbWlrYUBleGFtcGxlLmNvbYYZaHR0cHM6Ly9leGFtcGxlLmNvbS9hP2I9MTAT
BgNVHSUEDDAKBggrBgEFBQcDAjANBgkqhkiG9w0BAQsFAAOBgQCca36iIlbM378f
V9iTrp+o4f4c7lfS8AOH2QFXEBJqZ56pL/8lCjjQsStReU9WN2tYAoNyQqBAVcTM
l0pUVNDWYlTCEUVaHjj19HXjwBU/kMQYXq6r8kBfmqvxkC0ghDcXqsOXAhQ80/0V
LJSvIXBZSg7YtFY956n863dZgowrHQ==
-----END CERTIFICATE REQUEST-----
";

const CERT: &str = "
-----BEGIN CERTIFICATE-----
MIIChjCCAe+gAwIBAgINAY7pD/bDc+DuTj8K0jANBgkqhkiG9w0BAQsFADBAMQsw
CQYDVQQGEwJKUDERMA8GA1UECgwIa2NhIHRlc3QxDzANBgNVBAsMBmNvdXJzZTEN
MAsGA1UEAwwEbWlrYTAeFw0yNjEyMDIwMzU2NDVaFw0yNzAxMDEwMzU2NDVaMEAx
CzAJBgNVBAYTAkpQMREwDwYDVQQKDAhrY2EgdGVzdDEPMA0GA1UECwwGY291cnNl
MQ0wCwYDVQQDDARtaWthMIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC95BvZ
e6v5VJuTEWgUq69TIHWcLfltRuvmAA5+0xYdZsr0vIdgTr1H/7GhUKxOaLFuWP35
Ugjii5pS4Qb4wVqVwr1IzihPvlAJ+z/kJFqfO5+Ih73AZ/wYWDoPC3I0TOTZ9wry
AChKvb4SghNdecTjeGPQewb0WHOO7bWS8223wQIDAQABo4GDMIGAMEoGA1UdEQRD
MEGCDG1pa2EuZXhhbXBsZYcECgAAAYEQbWlrYUBleGFtcGxlLmNvbYYZaHR0cHM6
Ly9leGFtcGxlLmNvbS9hP2I9MTATBgNVHSUEDDAKBggrBgEFBQcDAjAdBgNVHQ4E
FgQUik7oDpaOQ/biCAksIu1uWjUcUt0wDQYJKoZIhvcNAQELBQADgYEAXT12C46T
RcUgdkCNhRfLdYwKM51e2EBpRwe6PUe3mt70vZRjQnOJLX7CL4W7I8WGddPsdXdY
GQGiiHwn1Ws6aYCIlpfFJIir8SK8GZQj9bNmiHjvHrwaO31abnHpfx+m4bwmadiq
CimbGD6hKuYt+iXA+aqysKN3XYsvqhYL7CY=
-----END CERTIFICATE-----
";

const MODULUS: &str = "133346030026353256234623704559934512772478452899240663053385018066925062030124310438426905057853370721651184742582027774640095515796440120243696262812852826811353415948067400525002416097477924970724167135945829885910888543392444060419369472769627221466719460953025055800080834081600668935470393168364709984193";

#[test]
fn a_certificate_request_decodes_like_go() {
    let v = decode(CSR).unwrap();
    assert_eq!(v["Version"], 0);
    assert_eq!(v["Subject"]["CommonName"], "mika");
    assert_eq!(v["Subject"]["Country"], json!(["JP"]));
    assert_eq!(v["Subject"]["Organization"], json!(["kca test"]));
    assert_eq!(v["Subject"]["Locality"], Value::Null);
    assert_eq!(
        v["Subject"]["Names"][3],
        json!({"Type": [2, 5, 4, 3], "Value": "mika"})
    );
    assert_eq!(v["PublicKeyAlgorithm"], 1);
    assert_eq!(v["SignatureAlgorithm"], 4, "sha256WithRSAEncryption");
    assert_eq!(v["PublicKey"], json!({"N": MODULUS, "E": 65537}));
    assert_eq!(v["DNSNames"], json!(["mika.example"]));
    assert_eq!(v["IPAddresses"], json!(["10.0.0.1"]));
    assert_eq!(v["EmailAddresses"], json!(["mika@example.com"]));
    assert_eq!(v["URIs"][0]["Host"], "example.com");
    assert_eq!(v["URIs"][0]["Path"], "/a");
    assert_eq!(v["URIs"][0]["RawQuery"], "b=1");
    assert_eq!(v["Extensions"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        v["Attributes"][0]["Type"],
        json!([1, 2, 840, 113549, 1, 9, 14])
    );
    assert!(v["RawSubject"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(v.get("NotBefore").is_none(), "a CSR has no validity");
}

#[test]
fn a_certificate_decodes_like_go() {
    let v = decode(CERT).unwrap();
    assert_eq!(v["Version"], 3);
    assert_eq!(v["SerialNumber"], json!(123456789012345678901234567890f64));
    assert_eq!(v["Issuer"]["CommonName"], "mika");
    assert_eq!(v["Subject"]["OrganizationalUnit"], json!(["course"]));
    assert_eq!(v["PublicKey"]["N"], MODULUS);
    assert_eq!(v["ExtKeyUsage"], json!([2]), "clientAuth");
    assert_eq!(v["DNSNames"], json!(["mika.example"]));
    assert_eq!(v["BasicConstraintsValid"], false);
    assert_eq!(v["MaxPathLen"], 0);
    assert!(v["SubjectKeyId"].is_string());
    assert_eq!(v["UnhandledCriticalExtensions"], Value::Null);
    let (b, a) = (
        v["NotBefore"].as_str().unwrap(),
        v["NotAfter"].as_str().unwrap(),
    );
    assert!(b.ends_with('Z') && b < a, "{b} {a}");
}

#[test]
fn key_usage_and_basic_constraints_bits() {
    // keyUsage 03 02 02 a4 (digitalSignature, keyEncipherment, keyCertSign);
    // basicConstraints cA=TRUE without a path length.
    let ku = [0x03, 0x02, 0x02, 0xa4];
    let bc = [0x30, 0x03, 0x01, 0x01, 0xff];
    let exts = [
        ext::Extension {
            id: vec![2, 5, 29, 15],
            critical: true,
            value: &ku,
        },
        ext::Extension {
            id: vec![2, 5, 29, 19],
            critical: true,
            value: &bc,
        },
    ];
    let mut out = Map::new();
    ext::certificate_fields(&exts, &mut out).unwrap();
    assert_eq!(out["KeyUsage"], 37);
    assert_eq!(out["IsCA"], true);
    assert_eq!(out["MaxPathLen"], -1);
    assert_eq!(out["MaxPathLenZero"], false);
}

#[test]
fn refusals_in_kyvernos_words() {
    assert_eq!(decode("not pem"), Err(CertError::Pem));
    let key = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    assert_eq!(decode(key), Err(CertError::BlockType));
    let junk = "-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----";
    assert!(matches!(decode(junk), Err(CertError::Der(_))));
}
