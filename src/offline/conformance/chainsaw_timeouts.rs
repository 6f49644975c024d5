//! How long Chainsaw retries an `assert` or `error` before it fails, and how long a
//! `sleep` lasts, for the replay's clock. Chainsaw's defaults (assert 30s, error 30s), then
//! the configuration the suite runs an area with (the area's `.chainsaw.yaml`, passed as
//! `--config` by .github/actions/tests/conformance/run/action.yaml), then the test's,
//! the step's and the operation's own `timeouts`/`timeout`: the most specific wins.

use std::path::Path;

use serde_json::Value;

/// Seconds an `assert` and an `error` retry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub assert: f64,
    pub error: f64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            assert: 30.0,
            error: 30.0,
        }
    }
}

impl Timeouts {
    /// These timeouts with a `timeouts:` block's values over them.
    pub fn over(self, block: Option<&Value>) -> Timeouts {
        let get = |k: &str| {
            block
                .and_then(|b| b.get(k))
                .and_then(Value::as_str)
                .and_then(seconds)
        };
        Timeouts {
            assert: get("assert").unwrap_or(self.assert),
            error: get("error").unwrap_or(self.error),
        }
    }

    /// The defaults under the nearest `.chainsaw.yaml` above `dir` (a few levels up at
    /// most): its `spec.timeouts`.
    pub fn configured(dir: &Path) -> Timeouts {
        let mut at = Some(dir);
        for _ in 0..6 {
            let Some(d) = at else { break };
            let file = d.join(".chainsaw.yaml");
            if file.is_file() {
                let docs = super::chainsaw::read_documents(&file).unwrap_or_default();
                let spec = docs
                    .iter()
                    .find(|d| d.get("kind").and_then(Value::as_str) == Some("Configuration"))
                    .and_then(|d| d.pointer("/spec/timeouts"));
                return Timeouts::default().over(spec);
            }
            at = d.parent();
        }
        Timeouts::default()
    }
}

/// A Go duration (`1m5s`, `90s`) in seconds.
pub fn seconds(d: &str) -> Option<f64> {
    crate::offline::kyverno::quantity::parse_duration(d).filter(|s| *s >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_most_specific_timeout_wins() {
        let area = Timeouts::default().over(Some(&json!({"apply": "10s", "error": "1m30s"})));
        assert_eq!(
            area,
            Timeouts {
                assert: 30.0,
                error: 90.0
            }
        );
        let step = area.over(Some(&json!({"assert": "2m"})));
        assert_eq!(
            step,
            Timeouts {
                assert: 120.0,
                error: 90.0
            }
        );
        assert_eq!(seconds("1m5s"), Some(65.0));
        assert_eq!(seconds("soon"), None);
    }
}
