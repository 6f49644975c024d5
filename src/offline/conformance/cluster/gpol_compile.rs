//! The policy webhook's compile of a GeneratingPolicy, as far as the replay reads it:
//! a `generator.apply` call without an overload in the policy's scope
//! (`vap::generator_overload_mismatch`) makes pkg/cel/policies/gpol/validate.go
//! `Validate` refuse the policy. The CEL compiler's own wording (source position, the
//! argument types) is not reproduced: the refusal's text and its warnings are marked as
//! not Kyverno's words.

use serde_json::Value;

use super::{Answer, Cluster};
use crate::offline::kyverno::validation::{self, Problem};
use crate::offline::vap;

impl Cluster {
    /// The refusal of a GeneratingPolicy whose expressions do not compile, if it is one.
    pub(super) fn gpol_compile_refusal(&mut self, policy: &Value) -> Option<Answer> {
        let (path, func, args) = vap::generator_overload_mismatch(policy)?;
        // The compiler's placeholder error comes first (gpol/compiler/compiler.go).
        let mut problems = vec![
            Problem {
                message:
                    "Internal error: generating policy compiler 2.0 error: failed to compile policy"
                        .into(),
            },
            Problem {
                message: format!(
                    "{path}: Invalid value: found no matching overload for '{func}' with {args} argument(s)"
                ),
            },
        ];
        // Then the structural checks (`matchConstraints`), in the same aggregate.
        problems.extend(validation::cel_policy_problems(policy).unwrap_or_default());
        let text = validation::denial_text(&problems)?;
        self.unworded = Some(format!("{path} (the CEL compiler's overload error)"));
        // Kyverno returns each error as a warning too; their wording is the compiler's.
        self.warnings
            .unknown("the CEL compiler's errors, which Kyverno returns as warnings too");
        Some(Answer::Refused(text))
    }
}
