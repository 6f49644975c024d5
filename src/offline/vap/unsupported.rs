//! Why something was not evaluated offline ([`Unsupported`], a value, never a message
//! prefix) and the typed errors of the CEL evaluator, each with the text it always
//! gave. Kyverno's engine wraps [`Unsupported`] in its own skip reason
//! (`offline::kyverno::outcome::Unsupported::Cel`).

use std::fmt;

/// What the offline CEL evaluation cannot do although the API server or Kyverno would.
/// Its `Display` is the reason alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unsupported {
    /// `authorizer` (authorization checks from CEL).
    Authorizer,
    /// An expression the interpreter cannot compile (the parser's message).
    Compile(String),
    /// A function, overload or method the interpreter lacks (the interpreter's message).
    Interpreter(String),
    /// A MutatingPolicy on a DELETE request.
    MutateOnDelete,
    /// A mutation `patchType` other than `ApplyConfiguration` and `JSONPatch`.
    PatchType(String),
    /// A GeneratingPolicy's YAML `template` generation.
    TemplateGeneration,
    /// A call only the network could answer (what was asked).
    Network(String),
    /// Image data only the image's registry has (what was asked).
    Registry(String),
    /// A Kyverno library call whose data this evaluation is not given (what was asked).
    Library(String),
}

impl Unsupported {
    /// Whether only a registry or the network could answer it.
    pub fn needs_registry(&self) -> bool {
        matches!(self, Unsupported::Network(_) | Unsupported::Registry(_))
    }
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unsupported::Authorizer => {
                f.write_str("`authorizer` (authorization checks from CEL) is not evaluated offline")
            }
            Unsupported::Compile(e) => {
                write!(f, "the offline CEL interpreter cannot compile it: {e}")
            }
            Unsupported::Interpreter(e) => write!(
                f,
                "the offline CEL interpreter cannot evaluate this (a function it lacks, or a \
                 type error the API server would reject when the policy is created): {e}"
            ),
            Unsupported::MutateOnDelete => {
                f.write_str("a MutatingPolicy on a DELETE request is not evaluated offline")
            }
            Unsupported::PatchType(t) => write!(f, "patchType {t:?} is not evaluated offline"),
            Unsupported::TemplateGeneration => {
                f.write_str("a YAML template generation is not evaluated offline")
            }
            Unsupported::Network(what) => {
                write!(
                    f,
                    "needs the network, which kca does not use offline: {what}"
                )
            }
            Unsupported::Registry(what) => {
                write!(
                    f,
                    "needs an image registry, which kca does not use offline: {what}"
                )
            }
            Unsupported::Library(what) => write!(f, "not evaluated offline: {what}"),
        }
    }
}

/// An expression (or a list of conditions) that did not evaluate: `message` is the text
/// reported, `unsupported` is set exactly when the offline evaluator is the reason (as
/// opposed to an error the API server would hit too: a missing field, a type mismatch).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct EvalError {
    pub message: String,
    pub unsupported: Option<Unsupported>,
}

impl EvalError {
    /// An error the API server would hit too.
    pub fn failed(message: impl Into<String>) -> EvalError {
        EvalError {
            message: message.into(),
            unsupported: None,
        }
    }

    /// What the offline evaluator cannot do; the message is the reason.
    pub fn unsupported(why: Unsupported) -> EvalError {
        EvalError {
            message: why.to_string(),
            unsupported: Some(why),
        }
    }

    /// The same error behind `context: `.
    pub fn within(&self, context: impl fmt::Display) -> EvalError {
        EvalError {
            message: format!("{context}: {}", self.message),
            unsupported: self.unsupported.clone(),
        }
    }
}

/// A CEL value kca does not turn into JSON: one with no JSON form (bytes, types,
/// functions), or one larger than kca makes.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoJsonForm {
    #[error("a {0:?} value has no JSON form")]
    Type(cel::objects::ValueType),
    #[error("the value holds more than {0} values; kca stops it there")]
    TooLarge(u64),
}

/// An expression whose estimated cost is over the API server's per-expression limit: the
/// API server refuses the policy at creation. `field` is where (`spec.validations[0].expression`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: Forbidden: {}", super::cost::exceeds_budget(*.cost))]
pub struct CostExceeded {
    pub field: String,
    pub cost: f64,
}

/// A MutatingPolicy or GeneratingPolicy that stopped offline admission: it failed, or the
/// offline evaluator cannot evaluate it (never a silent pass).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    #[error("{kind} `{name}` failed: {message}")]
    Failed {
        kind: &'static str,
        name: String,
        message: String,
    },
    #[error("{kind} `{name}` cannot be evaluated offline: {message}")]
    Unsupported {
        kind: &'static str,
        name: String,
        message: String,
        why: Unsupported,
    },
}

/// Offline labs report a stopped admission as text.
impl From<PolicyError> for String {
    fn from(e: PolicyError) -> String {
        e.to_string()
    }
}
