//! `observed` checks: a learner's record (observation.yaml, incident.yaml) compared with
//! the facts the same run's target gives for the same situation — the denial's path and
//! the container at that index of the mutated object, the UpdateRequest's state and the
//! verb and resource its message says were forbidden — never with a constant of lab.yaml.
//! The facts come from the targets (`lab::offline`, `lab::live`); the judgement is here.

use serde_json::Value;

use super::check::{Detail, Outcome, Submission};
use super::detail::{Source, Wrong};
use crate::content::lab::{Check, Fact, Spec};

/// What the situation gave. A state is compared leniently: an UpdateRequest that failed
/// is set back to Pending and retried (pkg/background/update_request_controller.go,
/// reconcileURStatus), so a learner who looked at a live cluster may honestly have seen
/// either.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub state: Option<String>,
    pub message: String,
    pub path: Option<String>,
    pub container: Option<String>,
    /// Where the facts come from, for the report ("the UpdateRequest of …").
    pub source: Source,
}

impl Facts {
    /// Facts of an UpdateRequest from its state and message.
    pub fn update_request(state: &str, message: &str, source: Source) -> Facts {
        Facts {
            state: Some(state.to_string()),
            message: message.to_string(),
            source,
            ..Default::default()
        }
    }

    /// Facts of a denial: the path after "failed at path", and the container at that
    /// index of `mutated` (the object the validating stage saw), when known.
    pub fn denial(message: &str, mutated: Option<&Value>, source: Source) -> Facts {
        let path = regex::Regex::new(r"failed at path (\S+)")
            .ok()
            .and_then(|re| re.captures(message))
            .map(|c| c[1].trim_end_matches([',', '.', ';']).to_string());
        let container = path.as_deref().and_then(|p| {
            let (list, i) = container_index(p)?;
            mutated?
                .pointer(&format!("/spec/{list}/{i}/name"))
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        Facts {
            message: message.to_string(),
            path,
            container,
            source,
            ..Default::default()
        }
    }

    /// The verb and resource of "cannot VERB resource \"RES\"" in the message.
    fn forbidden(&self) -> Option<(String, String)> {
        let re = regex::Regex::new(r#"cannot (\w+) resource \\?"([^"\\]+)\\?""#).ok()?;
        let c = re.captures(&self.message)?;
        Some((c[1].to_string(), c[2].to_string()))
    }
}

/// `/spec/containers/0/…` → ("containers", 0).
fn container_index(path: &str) -> Option<(String, usize)> {
    let re =
        regex::Regex::new(r"^/?spec/(containers|initContainers|ephemeralContainers)/(\d+)").ok()?;
    let c = re.captures(path)?;
    Some((c[1].to_string(), c[2].parse().ok()?))
}

/// The learner's record: the YAML mapping in the check's file.
#[allow(clippy::result_large_err)] // the verdict itself, made once per check
pub fn record(env: Submission<'_>, check: &Check) -> Result<Value, Outcome> {
    let Spec::Observed { path, .. } = &check.spec else {
        return Err(Outcome::internal("not an observed check"));
    };
    let text = super::check::workspace_file(env.workspace, path)?;
    let mut docs = crate::yaml::parse_json_stream(&text)
        .map_err(|e| super::check::blocked_by(path, &text, &e))?;
    match docs.first() {
        Some(Value::Object(_)) => Ok(docs.remove(0)),
        _ => Err(Outcome::fail(Detail::NoAnswers { path: path.clone() })),
    }
}

fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// Compares each recorded key with its fact.
pub fn judge(check: &Check, record: &Value, facts: &Facts) -> Outcome {
    let Spec::Observed { path, fields, .. } = &check.spec else {
        return Outcome::internal("not an observed check");
    };
    let mut wrong = Vec::new();
    for (key, fact) in fields {
        let said = text_of(record.get(key));
        if said.is_empty() {
            wrong.push(Wrong::Empty { key: key.clone() });
            continue;
        }
        let ok = match fact {
            Fact::State => match facts.state.as_deref() {
                Some("Failed" | "Pending") => ["Failed", "Pending"]
                    .iter()
                    .any(|x| x.eq_ignore_ascii_case(&said)),
                Some(s) => s.eq_ignore_ascii_case(&said),
                None => false,
            },
            Fact::Verb => facts
                .forbidden()
                .is_some_and(|(v, _)| v.eq_ignore_ascii_case(&said)),
            Fact::Resource => facts.forbidden().is_some_and(|(_, r)| {
                // "networkpolicies", "networkpolicies.networking.k8s.io", "NetworkPolicy".
                let s = said.to_ascii_lowercase();
                let plural = match s.strip_suffix('y') {
                    Some(stem) => format!("{stem}ies"),
                    None if s.ends_with('s') => format!("{s}es"),
                    None => format!("{s}s"),
                };
                s == r || s.starts_with(&format!("{r}.")) || plural == r
            }),
            Fact::Path => match (
                facts.path.as_deref().and_then(container_index),
                container_index(&said),
            ) {
                (Some(a), Some(b)) => a == b,
                _ => facts
                    .path
                    .as_deref()
                    .is_some_and(|p| p.trim_matches('/') == said.trim_matches('/')),
            },
            Fact::Container => facts.container.as_deref() == Some(said.as_str()),
        };
        if !ok {
            // The fact itself is not shown: the record is the learner's to find.
            wrong.push(Wrong::NotWhatHappened {
                key: key.clone(),
                said,
            });
        }
    }
    if facts.state.is_none() && facts.path.is_none() && facts.message.is_empty() {
        return Outcome::fail(Detail::NothingToCompare {
            source: facts.source.clone(),
            path: path.clone(),
        });
    }
    let (path, source) = (path.clone(), facts.source.clone());
    if wrong.is_empty() {
        Outcome::pass(Detail::Agrees { path, source })
    } else {
        Outcome::fail(Detail::Disagrees {
            path,
            source,
            wrong,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::lab::ObservedSource;
    use serde_json::json;

    fn check(fields: &[(&str, Fact)]) -> Check {
        Check {
            id: "o".into(),
            title: None,
            points: 1,
            timeout: std::time::Duration::from_secs(1),
            on_fail: None,
            on_pass: None,
            guard: false,
            spec: Spec::Observed {
                path: "incident.yaml".into(),
                source: ObservedSource::UpdateRequest {
                    trigger: crate::content::lab::Probe {
                        source: None,
                        object: json!({}),
                    },
                    policy: None,
                },
                fields: fields.iter().map(|(k, f)| (k.to_string(), *f)).collect(),
            },
        }
    }

    const MSG: &str = "failed to create: networkpolicies \"default-deny\" is forbidden: User \"system:serviceaccount:kyverno:kyverno-background-controller\" cannot create resource \"networkpolicies\" in API group \"networking.k8s.io\" in the namespace \"x\"";

    #[test]
    fn either_state_of_a_failing_update_request_and_the_forbidden_verb_and_resource() {
        let c = check(&[
            ("updateRequestState", Fact::State),
            ("forbiddenVerb", Fact::Verb),
            ("forbiddenResource", Fact::Resource),
        ]);
        for state in ["Failed", "Pending"] {
            let facts = Facts::update_request(state, MSG, Source::Unknown);
            for said in ["Failed", "Pending"] {
                let r = json!({"updateRequestState": said, "forbiddenVerb": "create", "forbiddenResource": "networkpolicies"});
                assert_eq!(
                    judge(&c, &r, &facts).verdict,
                    crate::lab::check::Verdict::Pass
                );
            }
            let r = json!({"updateRequestState": "Failed", "forbiddenVerb": "get", "forbiddenResource": "networkpolicies"});
            assert_eq!(
                judge(&c, &r, &facts).verdict,
                crate::lab::check::Verdict::Fail
            );
            let r = json!({"updateRequestState": "Failed", "forbiddenVerb": "create", "forbiddenResource": "configmaps"});
            assert_eq!(
                judge(&c, &r, &facts).verdict,
                crate::lab::check::Verdict::Fail
            );
        }
        let done = Facts::update_request("Completed", "", Source::Unknown);
        let r = json!({"updateRequestState": "Failed", "forbiddenVerb": "create", "forbiddenResource": "networkpolicies"});
        assert_eq!(
            judge(&c, &r, &done).verdict,
            crate::lab::check::Verdict::Fail
        );
    }

    #[test]
    fn a_denial_path_and_the_container_at_its_index() {
        let mutated = json!({"spec": {"containers": [{"name": "proxy"}, {"name": "app"}]}});
        let f = Facts::denial(
            "validation error: rule require-container-limits failed at path /spec/containers/0/resources/limits/",
            Some(&mutated),
            Source::Unknown,
        );
        assert_eq!(f.container.as_deref(), Some("proxy"));
        let mut c = check(&[
            ("deniedPath", Fact::Path),
            ("deniedContainer", Fact::Container),
        ]);
        if let Spec::Observed { path, .. } = &mut c.spec {
            *path = "observation.yaml".into();
        }
        let ok = json!({"deniedPath": "/spec/containers/0/resources/", "deniedContainer": "proxy"});
        assert_eq!(judge(&c, &ok, &f).verdict, crate::lab::check::Verdict::Pass);
        let guessed = json!({"deniedPath": "/spec/containers/0/", "deniedContainer": "app"});
        assert_eq!(
            judge(&c, &guessed, &f).verdict,
            crate::lab::check::Verdict::Fail
        );
        let index = json!({"deniedPath": "/spec/containers/1/", "deniedContainer": "proxy"});
        assert_eq!(
            judge(&c, &index, &f).verdict,
            crate::lab::check::Verdict::Fail
        );
    }
}
