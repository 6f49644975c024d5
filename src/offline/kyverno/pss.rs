//! Pod Security Standards (`validate.podSecurity`): baseline and restricted controls.
//! It must not evaluate anything but pod specs.

use serde_json::Value;

use super::RuleStatus;

pub fn validate(_pss: &Value, _resource: &Value) -> (RuleStatus, String) {
    (
        RuleStatus::Skip,
        format!("{}podSecurity is not evaluated offline yet", super::runner::UNSUPPORTED),
    )
}
