//! One PolicyRule and whether it covers one request, as the `rbac/v1` helpers decide.
//! Pure matching only: which rules apply to whom is `mod.rs`'s business.

use serde_json::Value;

/// A `rules[]` entry of a Role or ClusterRole. Empty lists match nothing (except
/// `resourceNames`, where empty means "any name").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// The attributes of a request that a rule can look at.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    Resource {
        api_group: &'a str,
        resource: &'a str,
        subresource: &'a str,
        name: &'a str,
    },
    NonResource {
        path: &'a str,
    },
}

impl PolicyRule {
    /// Reads a rule leniently: fields of the wrong shape count as empty (the strict
    /// check, with positions, is `validate`'s).
    pub fn from_json(v: &Value) -> PolicyRule {
        let list = |key: &str| -> Vec<String> {
            v.get(key)
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        PolicyRule {
            verbs: list("verbs"),
            api_groups: list("apiGroups"),
            resources: list("resources"),
            resource_names: list("resourceNames"),
            non_resource_urls: list("nonResourceURLs"),
        }
    }

    /// Whether this rule grants `verb` on `target`.
    pub fn allows(&self, verb: &str, target: Target<'_>) -> bool {
        if !self.verb_matches(verb) {
            return false;
        }
        match target {
            Target::Resource {
                api_group,
                resource,
                subresource,
                name,
            } => {
                self.api_group_matches(api_group)
                    && self.resource_matches(resource, subresource)
                    && self.resource_name_matches(name)
            }
            Target::NonResource { path } => self.non_resource_url_matches(path),
        }
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == "*" || g == group)
    }

    /// `*` covers every resource and subresource; `pods/log` only that subresource;
    /// `*/scale` the `scale` subresource of any resource. A plain `pods` never covers
    /// `pods/log`.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        let combined = if subresource.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{subresource}")
        };
        self.resources.iter().any(|r| {
            r == "*"
                || *r == combined
                || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
        })
    }

    /// No names listed means any name. Listed names never match a request without a
    /// name (list, watch, create, deletecollection), which is why `create` with
    /// `resourceNames` grants nothing.
    fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// Exact paths, `*` for every path, and a trailing `*` (all of them trimmed) as a
    /// prefix match: `/apis/*` covers `/apis/v1` but not `/apis`.
    fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }
}

/// A rule from comma-separated lists; `""` is the one empty string (the core group),
/// `-` an absent list.
#[cfg(test)]
pub(crate) fn rule(verbs: &str, groups: &str, resources: &str) -> PolicyRule {
    let split = |s: &str| -> Vec<String> {
        if s == "-" {
            Vec::new()
        } else {
            s.split(',').map(str::to_string).collect()
        }
    };
    PolicyRule {
        verbs: split(verbs),
        api_groups: split(groups),
        resources: split(resources),
        ..PolicyRule::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res<'a>(group: &'a str, resource: &'a str, sub: &'a str, name: &'a str) -> Target<'a> {
        Target::Resource {
            api_group: group,
            resource,
            subresource: sub,
            name,
        }
    }

    fn urls(verbs: &str, urls: &str) -> PolicyRule {
        PolicyRule {
            non_resource_urls: urls.split(',').map(str::to_string).collect(),
            ..rule(verbs, "-", "-")
        }
    }

    #[test]
    fn resource_rules_table() {
        let named = PolicyRule {
            resource_names: vec!["cfg".into()],
            ..rule("get,create,update", "", "configmaps")
        };
        // (case, rule, verb, group, resource, subresource, name, expected)
        type Case<'a> = (
            &'a str,
            PolicyRule,
            &'a str,
            &'a str,
            &'a str,
            &'a str,
            &'a str,
            bool,
        );
        #[rustfmt::skip]
        let cases: Vec<Case<'_>> = vec![
            ("star verb", rule("*", "g1", "r1"), "v1", "g1", "r1", "", "", true),
            ("star verb, other group", rule("*", "g1", "r1"), "v1", "g2", "r1", "", "", false),
            ("star verb, other resource", rule("*", "g1", "r1"), "v2", "g1", "r2", "", "", false),
            ("star group", rule("v1", "*", "r1"), "v1", "g2", "r1", "", "", true),
            ("star group, other verb", rule("v1", "*", "r1"), "v2", "g1", "r1", "", "", false),
            ("star resource", rule("v1", "g1", "*"), "v1", "g1", "r2", "", "", true),
            ("star resource covers subresources", rule("v1", "g1", "*"), "v1", "g1", "r2", "s", "", true),
            ("tuple expansion", rule("v1,v2", "g1,g2", "r1,r2"), "v2", "g2", "r1", "", "", true),
            ("verbs are case-sensitive", rule("get", "", "pods"), "GET", "", "pods", "", "", false),
            ("core group is the empty string", rule("get", "", "pods"), "get", "", "pods", "", "", true),
            ("core rule does not cover apps", rule("get", "", "deployments"), "get", "apps", "deployments", "", "", false),
            ("no apiGroups matches nothing", rule("get", "-", "pods"), "get", "", "pods", "", "", false),
            ("plain resource does not cover a subresource", rule("get", "", "pods"), "get", "", "pods", "log", "", false),
            ("subresource rule", rule("get", "", "pods/log"), "get", "", "pods", "log", "", true),
            ("subresource rule does not cover the resource", rule("get", "", "pods/log"), "get", "", "pods", "", "", false),
            ("subresource rule, other subresource", rule("get", "", "pods/log"), "get", "", "pods", "exec", "", false),
            ("star-slash subresource", rule("update", "*", "*/scale"), "update", "apps", "deployments", "scale", "", true),
            ("star-slash subresource, other subresource", rule("update", "*", "*/scale"), "update", "apps", "deployments", "status", "", false),
            ("star-slash subresource does not cover the resource", rule("update", "*", "*/scale"), "update", "apps", "deployments", "", "", false),
            ("star-slash needs the whole subresource", rule("update", "*", "*/scale"), "update", "apps", "deployments", "cale", "", false),
            ("resource/star is not a wildcard", rule("get", "", "pods/*"), "get", "", "pods", "log", "", false),
            ("resourceNames: listed name", named.clone(), "get", "", "configmaps", "", "cfg", true),
            ("resourceNames: other name", named.clone(), "get", "", "configmaps", "", "other", false),
            ("resourceNames: create has no name", named.clone(), "create", "", "configmaps", "", "", false),
            ("resourceNames: nameless list", named, "update", "", "configmaps", "", "", false),
            ("no resourceNames: any name", rule("get", "", "configmaps"), "get", "", "configmaps", "", "x", true),
        ];
        for (case, r, verb, group, resource, sub, name, want) in cases {
            assert_eq!(
                r.allows(verb, res(group, resource, sub, name)),
                want,
                "{case}"
            );
        }
    }

    #[test]
    fn non_resource_rules_table() {
        #[rustfmt::skip]
        let cases: Vec<(&str, PolicyRule, &str, &str, bool)> = vec![
            ("star url", urls("get", "*"), "get", "/foo/bar/one", true),
            ("star url, other verb", urls("get", "*"), "post", "/foo", false),
            ("exact", urls("get", "/healthz"), "get", "/healthz", true),
            ("exact is not a prefix", urls("get", "/healthz"), "get", "/healthz/ping", false),
            ("prefix covers deeper paths", urls("get", "/foo/*"), "get", "/foo/bar/one", true),
            ("prefix needs the slash", urls("get", "/foo/*"), "get", "/foo", false),
            ("prefix without slash", urls("get", "/foo*"), "get", "/foobar", true),
            ("all trailing stars are trimmed", urls("get", "/foo/**"), "get", "/foo/x", true),
            ("other path", urls("get", "/apis/*"), "get", "/api/v1", false),
            ("star verb", urls("*", "/logs/*"), "delete", "/logs/x", true),
        ];
        for (case, r, verb, path, want) in cases {
            assert_eq!(r.allows(verb, Target::NonResource { path }), want, "{case}");
        }
    }

    #[test]
    fn resource_rule_never_covers_urls_and_back() {
        let both = PolicyRule {
            non_resource_urls: vec!["/x".into()],
            ..rule("get", "*", "*")
        };
        assert!(!rule("get", "*", "*").allows("get", Target::NonResource { path: "/x" }));
        assert!(both.allows("get", Target::NonResource { path: "/x" }));
        assert!(!urls("get", "*").allows("get", res("", "pods", "", "")));
    }

    #[test]
    fn from_json_is_lenient() {
        let v =
            serde_json::json!({"verbs": ["get", 3], "apiGroups": "apps", "resources": ["pods"]});
        let r = PolicyRule::from_json(&v);
        assert_eq!(r.verbs, vec!["get"]);
        assert!(r.api_groups.is_empty());
        assert_eq!(r.resources, vec!["pods"]);
    }
}
