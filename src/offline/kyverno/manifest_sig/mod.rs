//! `validate.manifests`: a resource signed with cosign, verified offline against the
//! policy's public keys, as Kyverno's `validateManifestHandler`
//! (pkg/engine/handlers/validation/validate_manifest.go) does through
//! k8s-manifest-sigstore (`pkg/k8smanifest/verify_resource.go` `VerifyResource`):
//! the manifest signed in the resource's `<domain>/message` annotation must match the
//! resource modulo the ignored fields ([`diff`]), and one of its `<domain>/signature[_N]`
//! signatures must verify with the entry's key ([`keys`]); an attestor set passes when
//! `count` of its entries (all, by default) do.
//!
//! What needs the network stays a typed skip: keyless and certificate attestors (Rekor,
//! Fulcio), signatures carrying a certificate or bundle (the transparency log), keys in
//! a cluster Secret or a KMS, resource bundles in an OCI registry, and the API server's
//! dry-run that `dryRun.enable` asks for when the resource does not match as it is.

mod diff;
mod keys;
mod message;
#[cfg(test)]
mod tests;

use serde_json::Value;

use super::outcome::{Outcome, Unsupported};
use diff::Item;
use message::FetchError;

/// The annotation domain when the policy names none.
const DEFAULT_DOMAIN: &str = "cosign.sigstore.dev";

/// Attestor sets nested in one another, at most (a policy is small; this bounds recursion).
const MAX_DEPTH: usize = 8;

/// Ignore fields of k8s-manifest-sigstore's `pkg/k8smanifest/resources/default-config.yaml`
/// and Kyverno's `pkg/engine/resources/default-config.yaml`: (fields, kinds; `*` any).
const DEFAULT_IGNORE: &[(&[&str], &[&str])] = &[
    (
        &[
            "metadata.annotations.cosign.sigstore.dev/resourceBundleRef",
            "metadata.annotations.cosign.sigstore.dev/signature",
            "metadata.annotations.cosign.sigstore.dev/message",
            "metadata.annotations.cosign.sigstore.dev/certificate",
            "metadata.annotations.cosign.sigstore.dev/bundle",
        ],
        &["*"],
    ),
    (
        &[
            "metadata.managedFields.*",
            "metadata.resourceVersion",
            "metadata.selfLink",
            "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
            "metadata.annotations.namespace",
            "metadata.creationTimestamp",
            "metadata.generation",
            "metadata.uid",
            "metadata.finalizers",
            "metadata.labels.app.kubernetes.io/instance",
            "status",
        ],
        &["*"],
    ),
    (
        &["secrets.*.name", "imagePullSecrets.*.name"],
        &["ServiceAccount"],
    ),
    (
        &[
            "spec.ports.*.nodePort",
            "spec.clusterIP",
            "spec.clusterIPs.0",
        ],
        &["Service"],
    ),
    (
        &["metadata.annotations.deployment.kubernetes.io/revision"],
        &["Deployment"],
    ),
    (
        &["metadata.annotations.deprecated.daemonset.template.generation"],
        &["DaemonSet"],
    ),
    (&["spec.host"], &["Route"]),
    // Kyverno's own list.
    (
        &[
            "metadata.namespace",
            "spec.containers.*.imagePullPolicy",
            "spec.containers.*.terminationMessagePath",
            "spec.containers.*.terminationMessagePolicy",
            "spec.dnsPolicy",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.terminationGracePeriodSeconds",
            "metadata.labels.app.kubernetes.io/instance",
            "metadata.managedFields.*",
            "metadata.resourceVersion",
            "metadata.selfLink",
            "metadata.annotations.control-plane.alpha.kubernetes.io/leader",
            "metadata.annotations.kubectl.kubernetes.io/last-applied-configuration",
            "metadata.finalizers*",
            "metadata.annotations.namespace",
            "metadata.annotations.deprecated.daemonset.template.generation",
            "metadata.creationTimestamp",
            "metadata.uid",
            "metadata.generation",
            "status",
            "metadata.annotations.deployment.kubernetes.io/revision",
        ],
        &["*"],
    ),
    (
        &[
            "spec.volumes.*.name",
            "spec.volumes.*.projected.*",
            "spec.volumes.*.configMap.defaultMode",
            "spec.containers.*.volumeMounts.*",
            "spec.tolerations.*",
            "spec.enableServiceLinks",
            "spec.preemptionPolicy",
            "spec.priority",
            "spec.serviceAccount",
        ],
        &["Pod"],
    ),
    (
        &[
            "spec.progressDeadlineSeconds",
            "spec.revisionHistoryLimit",
            "spec.strategy.*",
            "spec.template.metadata.creationTimestamp",
            "spec.containers.*.ports.*.protocol",
            "spec.containers.*.resources",
            "spec.securityContext",
        ],
        &["Deployment"],
    ),
    (
        &["spec.conversion.strategy", "spec.names.listKind"],
        &["CustomResourceDefinition"],
    ),
    (
        &[
            "spec.ports.*.nodePort",
            "spec.clusterIP",
            "spec.clusterIPs.0",
            "spec.sessionAffinity",
            "spec.type",
            "spec.ipFamilies.*",
            "spec.ipFamilyPolicy",
            "spec.internalTrafficPolicy",
        ],
        &["Service"],
    ),
    (
        &[
            "metadata.annotations.pod-policies.kyverno.io/autogen-controllers",
            "spec.failurePolicy",
            "spec.background",
            "spec.validationFailureAction",
        ],
        &["ClusterPolicy", "Policy"],
    ),
];

/// Why verification cannot be decided offline.
fn needs(why: impl Into<String>) -> Unsupported {
    Unsupported::ManifestSignature(why.into())
}

/// The library's `MatchPattern` (object references of ignore fields).
fn match_pattern(pattern: &str, value: &str) -> bool {
    let p = pattern.trim();
    if p.is_empty() || p == "*" || (p == "-" && value.is_empty()) {
        return true;
    }
    if let Some(prefix) = p.strip_suffix('*') {
        return value.starts_with(prefix.trim_end_matches('*'));
    }
    p == value || (p.contains(',') && p.split(',').any(|q| match_pattern(q, value)))
}

fn text<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// An `objects` entry of an ignore-field binding matches `obj`.
fn object_matches(r: &Value, obj: &Value) -> bool {
    let api = text(obj, "/apiVersion");
    let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
    [
        ("group", group),
        ("version", version),
        ("kind", text(obj, "/kind")),
        ("name", text(obj, "/metadata/name")),
        ("namespace", text(obj, "/metadata/namespace")),
    ]
    .iter()
    .all(|(k, v)| match_pattern(r.get(*k).and_then(Value::as_str).unwrap_or(""), v))
}

/// The ignore fields that apply to `obj`: the defaults, the policy's, and the
/// annotation keys of `domain` (`AnnotationKeyMask`).
fn ignore_fields(spec: &Value, obj: &Value, domain: &str) -> Vec<String> {
    let kind = text(obj, "/kind");
    let mut out: Vec<String> = DEFAULT_IGNORE
        .iter()
        .filter(|(_, kinds)| kinds.iter().any(|k| match_pattern(k, kind)))
        .flat_map(|(fields, _)| fields.iter().map(|f| f.to_string()))
        .collect();
    for binding in spec
        .get("ignoreFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let objects = binding.get("objects").and_then(Value::as_array);
        let applies =
            objects.is_none_or(|o| o.is_empty() || o.iter().any(|r| object_matches(r, obj)));
        if applies {
            let fields = binding.get("fields").and_then(Value::as_array);
            out.extend(
                fields
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            );
        }
    }
    for base in [
        "message",
        "signature",
        "certificate",
        "bundle",
        "resourceBundleRef",
    ] {
        out.push(format!("metadata.annotations.{domain}/{base}*"));
    }
    out
}

/// What one entry of an attestor set came to.
enum Entry {
    Verified(String),
    Failed(String),
    Error(String),
}

/// The verification of one resource: its request object, the rule's `manifests`.
struct Verify<'a> {
    spec: &'a Value,
    obj: &'a Value,
    domain: String,
    ignore: Vec<String>,
    annotations: serde_json::Map<String, Value>,
}

/// Verifies `object` (the request's object) against the rule's `validate.manifests`.
pub fn validate(spec: &Value, object: &Value) -> Outcome {
    let domain = spec
        .get("annotationDomain")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .unwrap_or(DEFAULT_DOMAIN)
        .to_string();
    let v = Verify {
        spec,
        obj: object,
        ignore: ignore_fields(spec, object, &domain),
        annotations: object
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        domain,
    };
    if spec
        .get("repository")
        .and_then(Value::as_str)
        .is_some_and(|r| !r.is_empty())
        || v.annotation("resourceBundleRef").is_some()
    {
        return Outcome::unsupported(needs(
            "a resource bundle in an OCI registry needs registry access",
        ));
    }
    let mut verified = Vec::new();
    let sets = spec.get("attestors").and_then(Value::as_array);
    for (i, set) in sets.into_iter().flatten().enumerate() {
        match v.attestor_set(set, &format!(".attestors[{i}]"), 0) {
            Err(why) => return Outcome::unsupported(why),
            Ok(Entry::Error(e)) => {
                return Outcome::error(format!("error occurred during manifest verification: {e}"));
            }
            Ok(Entry::Failed(reason)) => return Outcome::fail(reason),
            Ok(Entry::Verified(reason)) => verified.push(reason),
        }
    }
    Outcome::pass(format!(
        "verified manifest signatures; {}",
        verified.join(",")
    ))
}

impl Verify<'_> {
    fn annotation(&self, base: &str) -> Option<&str> {
        self.annotations
            .get(&format!("{}/{base}", self.domain))
            .and_then(Value::as_str)
    }

    /// `verifyManifestAttestorSet`.
    fn attestor_set(&self, set: &Value, path: &str, depth: usize) -> Result<Entry, Unsupported> {
        let entries = expand_static_keys(set.get("entries").and_then(Value::as_array));
        let required = match set.get("count").and_then(Value::as_u64) {
            Some(n) if n > 0 => n as usize,
            _ => entries.len(),
        };
        let (mut ok, mut failed, mut errors) = (Vec::new(), Vec::new(), Vec::new());
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("{path}.entries[{i}]");
            let got = match entry.get("attestor").filter(|a| !a.is_null()) {
                Some(_) if depth >= MAX_DEPTH => {
                    Entry::Error(format!("{at}: attestors nested deeper than {MAX_DEPTH}"))
                }
                Some(nested) => {
                    let at = format!("{at}.attestor");
                    match self.attestor_set(nested, &at, depth + 1)? {
                        Entry::Error(e) => {
                            Entry::Error(format!("failed to verify signature; {at}: {e}"))
                        }
                        other => other,
                    }
                }
                None => self.entry(entry, &at)?,
            };
            match got {
                Entry::Error(e) => errors.push(e),
                Entry::Verified(r) => ok.push(r),
                Entry::Failed(r) => failed.push(r),
            }
            if ok.len() >= required {
                return Ok(Entry::Verified(format!(
                    "manifest verification succeeded; verifiedCount {}; requiredCount {required}; message {}",
                    ok.len(),
                    ok.join(",")
                )));
            }
        }
        if !errors.is_empty() {
            return Ok(Entry::Error(errors.join("; ")));
        }
        Ok(Entry::Failed(format!(
            "manifest verification failed; verifiedCount {}; requiredCount {required}; message {}",
            ok.len(),
            failed.join(",")
        )))
    }

    /// `k8sVerifyResource`: one entry with a key.
    fn entry(&self, entry: &Value, at: &str) -> Result<Entry, Unsupported> {
        if let Some(want) = entry.get("annotations").and_then(Value::as_object) {
            for (k, v) in want {
                let have = self
                    .annotations
                    .get(k)
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let v = v.as_str().unwrap_or("");
                if v != have {
                    return Ok(Entry::Error(format!(
                        "annotations mismatch: {have} does not match expected value {v} for key {k}"
                    )));
                }
            }
        }
        if entry.get("keyless").is_some_and(|k| !k.is_null()) {
            return Err(needs("keyless attestors need Rekor and Fulcio (network)"));
        }
        if entry.get("certificates").is_some_and(|k| !k.is_null()) {
            return Err(needs(
                "certificate attestors need the transparency log (network)",
            ));
        }
        if entry
            .get("repository")
            .and_then(Value::as_str)
            .is_some_and(|r| !r.is_empty())
        {
            return Err(needs(
                "a resource bundle in an OCI registry needs registry access",
            ));
        }
        let Some(key) = entry.pointer("/keys/publicKeys").and_then(Value::as_str) else {
            return Err(needs(
                "an attestor without a key is keyless: Rekor and Fulcio (network)",
            ));
        };
        let at = format!("{at}.keys");
        if key.starts_with("-----BEGIN PGP PUBLIC KEY BLOCK-----") {
            return Err(needs("PGP public keys are not verified offline"));
        }
        let key = if key.starts_with("-----BEGIN PUBLIC KEY-----") {
            Some(keys::parse(key).map_err(|_| needs("a public key type kca does not verify"))?)
        } else if ["k8s://", "env://", "pkcs11:", "gitlab:"]
            .iter()
            .any(|p| key.starts_with(p))
            || key.contains("kms://")
            || key.starts_with("hashivault://")
        {
            return Err(needs(format!(
                "the key {key} needs a cluster Secret, a KMS or a token"
            )));
        } else {
            // A file on Kyverno's pod, or the second of several keys in one entry
            // (Kyverno splits them keeping the line break, and then reads a file).
            None
        };
        Ok(match self.verify_resource(key.as_ref())? {
            Ok((true, _)) => Entry::Verified("singed by a valid signer: ".into()),
            Ok((false, diff)) if !diff.is_empty() => Entry::Failed(format!(
                "{at}: failed to verify signature. diff found; {}",
                diff::to_json(&diff)
            )),
            Ok((false, _)) => Entry::Failed(format!("{at}: failed to verify signature.")),
            Err(FetchError::NotFound(why)) => Entry::Failed(format!("{at}: {why}")),
            Err(FetchError::Other(e)) => Entry::Error(format!("{at}: {e}")),
        })
    }

    /// `VerifyResource` with a key: whether the manifest matched and a signature
    /// verified, with the first candidate's diff when none matched.
    fn verify_resource(
        &self,
        key: Option<&keys::PublicKey>,
    ) -> Result<Result<(bool, Vec<Item>), FetchError>, Unsupported> {
        let not_found = |why: &str| {
            Ok(Err(FetchError::NotFound(format!(
                "YAML manifest not found for this resource: {why}"
            ))))
        };
        let Some(msg) = self.annotation("message") else {
            return not_found("message not found");
        };
        let docs = match message::manifests(msg) {
            Ok(d) => d,
            Err(FetchError::NotFound(w) | FetchError::Other(w)) => {
                return Ok(Err(FetchError::Other(format!(
                    "YAML manifest not found for this resource: {w}"
                ))));
            }
        };
        let Some(candidates) = message::find(&docs, self.obj, &self.ignore) else {
            return not_found("failed to find a YAML manifest in the gzipped message");
        };
        let mut first_diff = None;
        let mut matched = false;
        for c in &candidates {
            let d = self.direct_match(c);
            if d.is_empty() {
                matched = true;
                break;
            }
            if self.spec.pointer("/dryRun/enable") == Some(&Value::Bool(true)) {
                return Err(needs("dryRun needs the API server's dry-run create"));
            }
            first_diff.get_or_insert(d);
        }
        match self.signature(msg, key)? {
            Ok(()) => Ok(Ok((matched, first_diff.unwrap_or_default()))),
            Err(e) => Ok(Err(e)),
        }
    }

    /// `directMatch` and the filters `matchResourceWithManifest` applies to its diff.
    fn direct_match(&self, manifest: &Value) -> Vec<Item> {
        let items = diff::drop_canonical_images(diff::diff(manifest, self.obj));
        diff::filter(items, &self.ignore)
            .into_iter()
            .filter(|i| !(i.key == "metadata.namespace" && i.before.is_none()))
            .collect()
    }

    /// `BlobSignatureVerifier.Verify` with one key: the signature sets of the
    /// annotations, the first that verifies.
    fn signature(
        &self,
        msg: &str,
        key: Option<&keys::PublicKey>,
    ) -> Result<Result<(), FetchError>, Unsupported> {
        let mut sigs = Vec::new();
        for i in 0..=self.annotations.len() {
            let suffix = if i == 0 {
                String::new()
            } else {
                format!("_{i}")
            };
            let Some(sig) = self.annotation(&format!("signature{suffix}")) else {
                break;
            };
            if self.annotation(&format!("certificate{suffix}")).is_some()
                || self.annotation(&format!("bundle{suffix}")).is_some()
            {
                return Err(needs(
                    "a signature with a certificate or bundle needs the transparency log (network)",
                ));
            }
            sigs.push(sig);
        }
        if sigs.is_empty() {
            return Ok(Err(FetchError::NotFound(
                "failed to verify signature: signature not found".into(),
            )));
        }
        let Some(key) = key else {
            return Ok(Err(FetchError::Other(
                "failed to verify signature: failed to judge signature type from public key configuration"
                    .into(),
            )));
        };
        let raw = message::gunzip_or_same(message::base64_std(msg).unwrap_or_default());
        let mut trials = Vec::new();
        for (j, sig) in sigs.iter().enumerate() {
            match key.verify(&raw, sig) {
                Ok(()) => return Ok(Ok(())),
                Err(e) => trials.push(Value::String(format!(
                    "[publickey 1/1] [signature {}/{}] error: cosign.VerifyBlobCmd.Exec() returned an error: {e}",
                    j + 1,
                    sigs.len()
                ))),
            }
        }
        Ok(Err(FetchError::Other(format!(
            "failed to verify signature: verification failed for {} signature. all trials: {}",
            sigs.len(),
            Value::Array(trials)
        ))))
    }
}

/// `ExpandStaticKeys`: an entry whose `publicKeys` holds several PEM blocks becomes one
/// entry per block, each split after its END line (so every block after the first keeps
/// the line break before it, as Kyverno's `splitPEM` leaves it).
fn expand_static_keys(entries: Option<&Vec<Value>>) -> Vec<Value> {
    const END: &str = "-----END PUBLIC KEY-----";
    let mut out = Vec::new();
    for e in entries.into_iter().flatten() {
        let keys = e.pointer("/keys/publicKeys").and_then(Value::as_str);
        let blocks: Vec<&str> = keys
            .map(|k| {
                k.split_inclusive(END)
                    .filter(|b| b.ends_with(END))
                    .collect()
            })
            .unwrap_or_default();
        if blocks.len() > 1 {
            for b in blocks {
                let mut one = e.clone();
                one["keys"]["publicKeys"] = Value::String(b.to_string());
                out.push(one);
            }
        } else {
            out.push(e.clone());
        }
    }
    out
}
