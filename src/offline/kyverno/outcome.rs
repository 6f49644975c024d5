//! What one rule came to ([`Outcome`]) and why a rule was not evaluated offline
//! ([`Unsupported`]). The engine owns these types; the runner and the lab target read
//! them, never a message prefix.

use std::fmt;

use super::RuleStatus;

/// A rule Kyverno would evaluate but the offline engine cannot: the reason travels as a
/// value, and its `Display` is the reason alone (the rule message adds `unsupported: `).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// `verifyImages` rules need a registry.
    VerifyImages,
    /// A context entry that needs a cluster or a registry and was given no value.
    ContextEntry { name: String, source: ContextSource },
    /// `validate.manifests` verification that needs the network, a cluster or a KMS
    /// (keyless, certificates, registries, dry-run): why.
    ManifestSignature(String),
    /// A `validate.cel` expression the CEL evaluator does not support.
    Cel(crate::offline::vap::Unsupported),
    /// `mutate.targets`: mutating existing resources in the background.
    MutateTargets,
}

/// Where a context entry that cannot be loaded offline would read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextSource {
    ApiCall,
    ImageRegistry,
    GlobalReference,
}

/// The prefix of a rule message whose rule was not evaluated offline.
const UNSUPPORTED_PREFIX: &str = "unsupported: ";

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::VerifyImages => f.write_str("verifyImages needs registry access"),
            Unsupported::ContextEntry { name, source } => {
                let why = match source {
                    ContextSource::ApiCall => "apiCall needs a cluster and no value was supplied",
                    ContextSource::ImageRegistry => "imageRegistry needs registry access",
                    ContextSource::GlobalReference => "globalReference needs a cluster",
                };
                write!(f, "context entry {name}: {why}")
            }
            Unsupported::ManifestSignature(why) => {
                write!(f, "manifest signature verification: {why}")
            }
            Unsupported::Cel(why) => write!(f, "CEL: {why}"),
            Unsupported::MutateTargets => f.write_str("mutate existing resources (targets)"),
        }
    }
}

impl Unsupported {
    /// Whether what was missing is a registry's or the network's (image signatures and
    /// metadata), rather than the engine's.
    pub fn needs_registry(&self) -> bool {
        match self {
            Unsupported::VerifyImages => true,
            Unsupported::ContextEntry { source, .. } => *source == ContextSource::ImageRegistry,
            Unsupported::Cel(why) => why.needs_registry(),
            Unsupported::ManifestSignature(_) | Unsupported::MutateTargets => false,
        }
    }
}

/// A rule's status and message before it is named by policy and rule. `unsupported` is
/// set exactly when the rule was skipped because the offline engine cannot evaluate it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: RuleStatus,
    pub message: String,
    pub unsupported: Option<Unsupported>,
    /// The controls a failed `podSecurity` rule reports.
    pub pod_security: Option<Box<super::pss::Controls>>,
    /// The names of the PolicyExceptions that made the rule skip
    /// (engineapi `RuleResponse.WithExceptions`).
    pub exceptions: Vec<String>,
    /// Kyverno's own wording of the message, where the engine knows it.
    pub upstream: Option<Box<Upstream>>,
}

/// Kyverno's wording of a validate rule's message (engineapi `RuleResponse.Message()`),
/// before the rule's name and `validate.message` fill it in
/// (pkg/engine/handlers/validation/validate_resource.go `buildErrorMessage`,
/// `buildAnyPatternErrorMessage`, `getDenyMessage`, `validateElements`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// Said as it is.
    Verbatim(String),
    /// `validation rule '<rule>' passed.`
    Passed,
    /// `validation rule '<rule>' anyPattern[i] passed.`
    AnyPassed(usize),
    /// A pattern failed at a path.
    FailedAt(String),
    /// A pattern failed with no path: an execution error.
    Execution(String),
    /// Every pattern of an anyPattern failed: each one's index, path (or error) and
    /// whether a path was named.
    AnyFailed(Vec<(usize, String, bool)>),
    /// Every pattern of an anyPattern skipped: each one's index and message.
    AnySkipped(Vec<(usize, String)>),
    /// Deny conditions held (their own messages, if any).
    Denied(String),
    /// A foreach element did not pass: the element's own message.
    Foreach(Box<Upstream>),
}

impl Upstream {
    /// The message, for the rule named `rule` whose `validate.message` (variables
    /// substituted) is `message`.
    pub fn render(&self, rule: &str, message: &str) -> String {
        let msg = if message.is_empty() || message.ends_with('.') {
            message.to_string()
        } else {
            format!("{message}.")
        };
        let lead = if msg.is_empty() {
            "validation error:".to_string()
        } else {
            format!("validation error: {msg}")
        };
        match self {
            Upstream::Verbatim(s) => s.clone(),
            Upstream::Passed => format!("validation rule '{rule}' passed."),
            Upstream::AnyPassed(i) => format!("validation rule '{rule}' anyPattern[{i}] passed."),
            Upstream::FailedAt(path) => format!("{lead} rule {rule} failed at path {path}"),
            Upstream::Execution(err) => format!("{lead} rule {rule} execution error: {err}"),
            Upstream::AnyFailed(fails) => {
                let each: Vec<String> = fails
                    .iter()
                    .map(|(i, at, path)| {
                        if *path {
                            format!("rule {rule}[{i}] failed at path {at}")
                        } else {
                            format!("rule {rule}[{i}] failed: {at}")
                        }
                    })
                    .collect();
                let joined = each.join(" ");
                if message.is_empty() {
                    format!("validation error: {joined}")
                } else if message.ends_with('.') {
                    format!("validation error: {message} {joined}")
                } else {
                    format!("validation error: {message}. {joined}")
                }
            }
            Upstream::AnySkipped(skips) => skips
                .iter()
                .map(|(i, m)| format!("rule {rule}[{i}] skipped: {m}"))
                .collect::<Vec<_>>()
                .join(" "),
            Upstream::Denied(conditions) => {
                if message.is_empty() && conditions.is_empty() {
                    format!("validation error: rule {rule} failed")
                } else {
                    [message, conditions.as_str()]
                        .into_iter()
                        .filter(|s| !s.is_empty())
                        .collect::<Vec<_>>()
                        .join("; ")
                }
            }
            Upstream::Foreach(inner) => {
                format!("validation failure: {}", inner.render(rule, message))
            }
        }
    }
}

impl Outcome {
    pub fn new(status: RuleStatus, message: impl Into<String>) -> Outcome {
        Outcome {
            status,
            message: message.into(),
            unsupported: None,
            pod_security: None,
            exceptions: Vec::new(),
            upstream: None,
        }
    }

    /// With Kyverno's wording of the message.
    pub fn worded(mut self, upstream: Upstream) -> Outcome {
        self.upstream = Some(Box::new(upstream));
        self
    }

    pub fn pass(message: impl Into<String>) -> Outcome {
        Outcome::new(RuleStatus::Pass, message)
    }

    pub fn fail(message: impl Into<String>) -> Outcome {
        Outcome::new(RuleStatus::Fail, message)
    }

    pub fn error(message: impl Into<String>) -> Outcome {
        Outcome::new(RuleStatus::Error, message)
    }

    /// Kyverno itself skips the rule (preconditions, an exception, nothing to patch).
    pub fn skip(message: impl Into<String>) -> Outcome {
        Outcome::new(RuleStatus::Skip, message)
    }

    /// The offline engine cannot evaluate the rule: a skip that names why.
    pub fn unsupported(why: Unsupported) -> Outcome {
        Outcome {
            status: RuleStatus::Skip,
            message: format!("{UNSUPPORTED_PREFIX}{why}"),
            unsupported: Some(why),
            pod_security: None,
            exceptions: Vec::new(),
            upstream: None,
        }
    }

    pub fn is_skip(&self) -> bool {
        self.status == RuleStatus::Skip
    }
}

/// A plain message from a step that can only fail is a rule error.
impl From<String> for Outcome {
    fn from(message: String) -> Outcome {
        Outcome::error(message)
    }
}

impl From<&str> for Outcome {
    fn from(message: &str) -> Outcome {
        Outcome::error(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_message_keeps_the_old_wording() {
        let o = Outcome::unsupported(Unsupported::ContextEntry {
            name: "img".into(),
            source: ContextSource::ImageRegistry,
        });
        assert_eq!(o.status, RuleStatus::Skip);
        assert_eq!(
            o.message,
            "unsupported: context entry img: imageRegistry needs registry access"
        );
        assert_eq!(
            o.unsupported.unwrap().to_string(),
            "context entry img: imageRegistry needs registry access"
        );
    }
}
