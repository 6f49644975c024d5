//! Manifest signatures made here with fresh keys: a signed resource passes, a tampered
//! one fails with the diff, a signature by another key errors, a missing one fails.

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use super::validate;
use crate::offline::kyverno::RuleStatus;
use crate::offline::vap::gzip;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

struct Signer {
    pair: EcdsaKeyPair,
}

impl Signer {
    fn new() -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Signer { pair }
    }

    /// The key as a PEM `PUBLIC KEY` (SubjectPublicKeyInfo of a P-256 point).
    fn pem(&self) -> String {
        let mut spki = hex("3059301306072a8648ce3d020106082a8648ce3d030107034200");
        spki.extend_from_slice(self.pair.public_key().as_ref());
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----",
            B64.encode(spki)
        )
    }

    fn sign(&self, blob: &[u8]) -> String {
        let sig = self.pair.sign(&SystemRandom::new(), blob).unwrap();
        B64.encode(sig.as_ref())
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// A one-file ustar archive.
fn tar(name: &str, body: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..107].copy_from_slice(b"0000644");
    h[124..135].copy_from_slice(format!("{:011o}", body.len()).as_bytes());
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
    let mut out = h;
    out.extend_from_slice(body);
    out.resize(out.len().div_ceil(512) * 512 + 1024, 0);
    out
}

const MANIFEST: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - port: 80\n    protocol: TCP\n  selector:\n    app: web\n";

fn service(annotations: Value, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default", "uid": "1234", "annotations": annotations},
        "spec": {"ports": [{"port": 80, "protocol": "TCP"}], "selector": {"app": app},
                 "clusterIP": "10.0.0.1", "type": "ClusterIP"}
    })
}

fn policy(keys: &[&Signer], count: Option<u64>) -> Value {
    let entries: Vec<Value> = keys
        .iter()
        .map(|k| json!({"keys": {"publicKeys": k.pem()}}))
        .collect();
    let mut set = json!({"entries": entries});
    if let Some(n) = count {
        set["count"] = json!(n);
    }
    json!({"attestors": [set]})
}

/// The message annotation as `kubectl sigstore sign` writes it for a tar ball, and the
/// blob its signatures are over.
fn signed_tarball(manifest: &str) -> (String, Vec<u8>) {
    let blob = gzip(&tar("resource.yaml", manifest.as_bytes()));
    (B64.encode(gzip(&blob)), blob)
}

#[test]
fn a_signed_resource_passes_and_a_tampered_one_fails_with_the_diff() {
    let k = Signer::new();
    let (msg, blob) = signed_tarball(MANIFEST);
    let ann =
        json!({"cosign.sigstore.dev/message": msg, "cosign.sigstore.dev/signature": k.sign(&blob)});
    let spec = policy(&[&k], None);

    let ok = validate(&spec, &service(ann.clone(), "web"));
    assert_eq!(ok.status, RuleStatus::Pass, "{}", ok.message);
    assert_eq!(
        ok.message,
        "verified manifest signatures; manifest verification succeeded; verifiedCount 1; requiredCount 1; message singed by a valid signer: "
    );

    let bad = validate(&spec, &service(ann, "evil"));
    assert_eq!(bad.status, RuleStatus::Fail, "{}", bad.message);
    assert_eq!(
        bad.message,
        "manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: failed to verify signature. diff found; {\"items\":[{\"key\":\"spec.selector.app\",\"values\":{\"after\":\"evil\",\"before\":\"web\"}}]}"
    );
}

#[test]
fn a_tampered_message_or_a_foreign_key_does_not_verify() {
    let (k, other) = (Signer::new(), Signer::new());
    let (msg, blob) = signed_tarball(MANIFEST);
    let spec = policy(&[&k], None);
    // Signed by a key the policy does not name.
    let ann = json!({"cosign.sigstore.dev/message": msg, "cosign.sigstore.dev/signature": other.sign(&blob)});
    let o = validate(&spec, &service(ann, "web"));
    assert_eq!(o.status, RuleStatus::Error, "{}", o.message);
    assert!(o.message.starts_with("error occurred during manifest verification: .attestors[0].entries[0].keys: failed to verify signature: verification failed for 1 signature."), "{}", o.message);

    // The message changed after signing (the manifest matches the resource, the
    // signature no longer matches the message).
    let (msg2, _) = signed_tarball(&MANIFEST.replace("port: 80", "port: 80 "));
    let ann = json!({"cosign.sigstore.dev/message": msg2, "cosign.sigstore.dev/signature": k.sign(&blob)});
    let o = validate(&spec, &service(ann, "web"));
    assert_eq!(o.status, RuleStatus::Error, "{}", o.message);
}

#[test]
fn count_and_multiple_signatures() {
    let (a, b) = (Signer::new(), Signer::new());
    // A plain gzipped manifest (no tar ball), signed by both keys.
    let msg_blob = MANIFEST.as_bytes().to_vec();
    let msg = B64.encode(gzip(&msg_blob));
    let both = json!({
        "cosign.sigstore.dev/message": msg,
        "cosign.sigstore.dev/signature": a.sign(&msg_blob),
        "cosign.sigstore.dev/signature_1": b.sign(&msg_blob),
    });
    let o = validate(&policy(&[&a, &b], None), &service(both, "web"));
    assert_eq!(o.status, RuleStatus::Pass, "{}", o.message);
    assert!(
        o.message.contains("verifiedCount 2; requiredCount 2"),
        "{}",
        o.message
    );

    let one = json!({"cosign.sigstore.dev/message": msg, "cosign.sigstore.dev/signature": a.sign(&msg_blob)});
    // Two required: the second key's failure is an error.
    let o = validate(&policy(&[&a, &b], None), &service(one.clone(), "web"));
    assert_eq!(o.status, RuleStatus::Error, "{}", o.message);
    // One required: the first key is enough.
    let o = validate(&policy(&[&a, &b], Some(1)), &service(one, "web"));
    assert_eq!(o.status, RuleStatus::Pass, "{}", o.message);
}

#[test]
fn an_unsigned_resource_fails_and_network_attestors_are_typed_skips() {
    let k = Signer::new();
    let o = validate(&policy(&[&k], None), &service(json!({}), "web"));
    assert_eq!(o.status, RuleStatus::Fail);
    assert_eq!(
        o.message,
        "manifest verification failed; verifiedCount 0; requiredCount 1; message .attestors[0].entries[0].keys: YAML manifest not found for this resource: message not found"
    );
    let keyless = json!({"attestors": [{"entries": [{"keyless": {"subject": "a@b"}}]}]});
    let o = validate(&keyless, &service(json!({}), "web"));
    assert_eq!(o.status, RuleStatus::Skip);
    assert!(o.unsupported.is_some(), "{}", o.message);
}

#[test]
fn ignore_fields_and_the_annotation_domain() {
    let k = Signer::new();
    let blob = MANIFEST.as_bytes().to_vec();
    let ann = json!({
        "example.com/message": B64.encode(gzip(&blob)),
        "example.com/signature": k.sign(&blob),
    });
    let mut spec = policy(&[&k], None);
    spec["annotationDomain"] = json!("example.com");
    let changed = service(ann, "other");
    let o = validate(&spec, &changed);
    assert_eq!(o.status, RuleStatus::Fail, "{}", o.message);
    spec["ignoreFields"] =
        json!([{"objects": [{"kind": "Service"}], "fields": ["spec.selector.app"]}]);
    let o = validate(&spec, &changed);
    assert_eq!(o.status, RuleStatus::Pass, "{}", o.message);
}

#[test]
fn a_renamed_resource_is_found_by_value_and_fails_on_its_name() {
    let k = Signer::new();
    let (msg, blob) = signed_tarball(MANIFEST);
    let ann =
        json!({"cosign.sigstore.dev/message": msg, "cosign.sigstore.dev/signature": k.sign(&blob)});
    let mut obj = service(ann, "web");
    obj["metadata"]["name"] = json!("copy");
    let o = validate(&policy(&[&k], None), &obj);
    assert_eq!(o.status, RuleStatus::Fail, "{}", o.message);
    assert!(
        o.message.ends_with(
            "diff found; {\"items\":[{\"key\":\"metadata.name\",\"values\":{\"after\":\"copy\",\"before\":\"web\"}}]}"
        ),
        "{}",
        o.message
    );
}

#[test]
fn a_tar_ball_past_its_entry_cap_is_an_error() {
    let k = Signer::new();
    let mut archive = Vec::new();
    for i in 0..300 {
        let one = tar(&format!("f{i}.txt"), b"x");
        archive.extend_from_slice(&one[..1024]);
    }
    archive.resize(archive.len() + 1024, 0);
    let blob = gzip(&archive);
    let ann = json!({"cosign.sigstore.dev/message": B64.encode(gzip(&blob)), "cosign.sigstore.dev/signature": k.sign(&blob)});
    let o = validate(&policy(&[&k], None), &service(ann, "web"));
    assert_eq!(o.status, RuleStatus::Error, "{}", o.message);
    assert!(o.message.contains("more than 256 entries"), "{}", o.message);
}
