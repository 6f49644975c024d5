//! A public key from a policy (`keys.publicKeys`, PEM `PUBLIC KEY`) and the check of a
//! cosign blob signature with it, as `cosign verify-blob --key` does with no
//! transparency log (k8s-manifest-sigstore `pkg/cosign/verify.go` `VerifyBlob`, which
//! cosign calls with `IgnoreTlog` when the resource carries no certificate or bundle):
//! ECDSA P-256 and P-384 over SHA-256 (ASN.1 DER signatures), RSA PKCS #1 v1.5 over
//! SHA-256, Ed25519 over the message itself. The signature is base64 text.

use ring::signature::{self, UnparsedPublicKey, VerificationAlgorithm};

use super::message::base64_std;
use crate::offline::kyverno::x509::der;

/// A public key cosign can verify with.
pub struct PublicKey {
    alg: &'static dyn VerificationAlgorithm,
    bytes: Vec<u8>,
    /// cosign's words when a signature does not verify.
    mismatch: &'static str,
}

const EC_PUBLIC_KEY: &[u64] = &[1, 2, 840, 10045, 2, 1];
const P256: &[u64] = &[1, 2, 840, 10045, 3, 1, 7];
const P384: &[u64] = &[1, 3, 132, 0, 34];
const RSA: &[u64] = &[1, 2, 840, 113549, 1, 1, 1];
const ED25519: &[u64] = &[1, 3, 101, 112];

/// The key a PEM `PUBLIC KEY` block holds (SubjectPublicKeyInfo), or why not.
pub fn parse(pem: &str) -> Result<PublicKey, String> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PUBLIC KEY-----")
        .skip(1)
        .take_while(|l| *l != "-----END PUBLIC KEY-----")
        .collect();
    let bad = || "failed to load public key: PEM decoding failed".to_string();
    let spki = base64_std(&body).map_err(|_| bad())?;
    let top = der::one(&spki).ok_or_else(bad)?;
    let parts = der::seq(&top).ok_or_else(bad)?;
    let [alg, key] = parts.as_slice() else {
        return Err(bad());
    };
    let alg_parts = der::seq(alg).ok_or_else(bad)?;
    let oid = alg_parts.first().and_then(der::oid).ok_or_else(bad)?;
    let param = alg_parts.get(1).and_then(der::oid);
    let (bytes, _) = der::bit_string(key).ok_or_else(bad)?;
    let ecdsa = "invalid signature when validating ASN.1 encoded signature";
    let (alg, mismatch): (&'static dyn VerificationAlgorithm, _) =
        match (oid.as_slice(), param.as_deref()) {
            (EC_PUBLIC_KEY, Some(P256)) => (&signature::ECDSA_P256_SHA256_ASN1, ecdsa),
            (EC_PUBLIC_KEY, Some(P384)) => (&signature::ECDSA_P384_SHA256_ASN1, ecdsa),
            (RSA, _) => (
                &signature::RSA_PKCS1_2048_8192_SHA256,
                "crypto/rsa: verification error",
            ),
            (ED25519, _) => (&signature::ED25519, "failed to verify signature"),
            _ => return Err("failed to load public key: unsupported key type".into()),
        };
    Ok(PublicKey {
        alg,
        bytes: bytes.to_vec(),
        mismatch,
    })
}

impl PublicKey {
    /// Checks the base64 signature `sig` over `message`: `Err` with cosign's reason when
    /// it does not verify.
    pub fn verify(&self, message: &[u8], sig: &str) -> Result<(), String> {
        let sig = base64_std(sig.trim()).map_err(|e| format!("decoding signature: {e}"))?;
        UnparsedPublicKey::new(self.alg, &self.bytes)
            .verify(message, &sig)
            .map_err(|_| self.mismatch.to_string())
    }
}
