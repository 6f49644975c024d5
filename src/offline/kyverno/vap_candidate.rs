//! Whether a Kyverno `ClusterPolicy` can become a Kubernetes ValidatingAdmissionPolicy
//! (Kyverno 1.19.0 pkg/admissionpolicy/kyvernopolicy_checker.go `CanGenerateVAP`), and
//! the API group, version and resource a kind selector names for its match constraints
//! (`builder.go`, through discovery). Used by the admission-policy generator and by the
//! policy webhook's CEL type check (validation_warnings.rs). Pure.

use serde_json::{Value, json};

use crate::offline::rbac::resource::Mapper;

fn list<'a>(v: &'a Value, key: &str) -> Vec<&'a Value> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn strings<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    list(v, key).into_iter().filter_map(Value::as_str).collect()
}

fn text(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn non_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

fn has_wildcard(s: &str) -> bool {
    s.contains(['*', '?'])
}

pub const SKIP: &str = "skip generating ValidatingAdmissionPolicy";

/// `checkPolicy` (`kyvernopolicy_checker.go`): `Err` with the controller's message when
/// the policy cannot become a VAP. `validate` is the webhook's call (the
/// `validate.cel.generate` flag is not required).
pub fn check_policy(spec: &Value, validate: bool) -> Result<(), String> {
    let rules = list(spec, "rules");
    match rules.len() {
        0 => return Err(format!("{SKIP}: no rules found.")),
        1 => {}
        _ => return Err(format!("{SKIP}: multiple rules are not applicable.")),
    }
    let rule = rules[0];
    let Some(cel) = rule.pointer("/validate/cel").filter(|c| c.is_object()) else {
        return Err(format!("{SKIP} for non CEL rules."));
    };
    if !validate && cel.get("generate").and_then(Value::as_bool) != Some(true) {
        return Err(format!("{SKIP}: validate.cel.generate is not set to true."));
    }
    check_overrides(spec.get("validationFailureActionOverrides"))?;
    check_overrides(rule.pointer("/validate/failureActionOverrides"))?;
    let empty = json!({});
    check_block(rule.get("match").unwrap_or(&empty), true)?;
    if let Some(x) = rule.get("exclude").filter(|x| x.is_object()) {
        check_block(x, false)?;
    }
    Ok(())
}

/// The match (`is_match`) or exclude block of the rule: user info, the resource
/// description, `any`, one `all` at most.
fn check_block(block: &Value, is_match: bool) -> Result<(), String> {
    check_user_info(block)?;
    check_resources(block.get("resources").unwrap_or(&json!({})), is_match)?;
    check_filters(&list(block, "any"), is_match)?;
    if list(block, "all").len() > 1 {
        let which = if is_match { "match" } else { "exclude" };
        return Err(format!(
            "{SKIP}: multiple 'all' in the {which} block is not applicable."
        ));
    }
    check_filters(&list(block, "all"), is_match)
}

fn check_overrides(overrides: Option<&Value>) -> Result<(), String> {
    let Some(o) = overrides.and_then(Value::as_array) else {
        return Ok(());
    };
    if o.len() > 1 {
        return Err(format!(
            "{SKIP}: multiple validationFailureActionOverrides are not applicable."
        ));
    }
    if o.first().is_some_and(|o| non_empty(o.get("namespaces"))) {
        return Err(format!(
            "{SKIP}: Namespaces in validationFailureActionOverrides is not applicable."
        ));
    }
    Ok(())
}

fn check_user_info(block: &Value) -> Result<(), String> {
    if ["roles", "clusterRoles", "subjects"]
        .iter()
        .any(|k| non_empty(block.get(*k)))
    {
        return Err(format!(
            "{SKIP}: Roles / ClusterRoles / Subjects in `any/all` is not applicable."
        ));
    }
    Ok(())
}

fn check_resources(res: &Value, is_match: bool) -> Result<(), String> {
    if !is_match && non_empty(res.get("kinds")) && non_empty(res.get("namespaces")) {
        return Err(format!(
            "{SKIP}: excluding a resource within a namespace is not applicable."
        ));
    }
    if non_empty(res.get("annotations")) {
        return Err(format!(
            "{SKIP}: Annotations in resource description is not applicable."
        ));
    }
    let name = text(res, "/name");
    if has_wildcard(&name) || strings(res, "names").into_iter().any(has_wildcard) {
        return Err(format!(
            "{SKIP}: wildcards in resource name is not applicable."
        ));
    }
    if strings(res, "namespaces").into_iter().any(has_wildcard) {
        return Err(format!(
            "{SKIP}: wildcards in namespace name is not applicable."
        ));
    }
    Ok(())
}

/// `checkResourceFilter`.
pub fn check_filters(filters: &[&Value], is_match: bool) -> Result<(), String> {
    let mut selectors = false;
    for f in filters {
        check_user_info(f)?;
        let res = f.get("resources").unwrap_or(&Value::Null);
        check_resources(res, is_match)?;
        // A selector that is set at all, even empty, counts (a non-nil pointer).
        if res.get("namespaceSelector").is_some_and(|v| !v.is_null())
            || res.get("selector").is_some_and(|v| !v.is_null())
        {
            selectors = true;
        }
    }
    if !is_match && selectors {
        return Err(format!(
            "{SKIP}: NamespaceSelector / ObjectSelector in the exclude block is not applicable."
        ));
    }
    if is_match && filters.len() > 1 && selectors {
        return Err(format!(
            "{SKIP}: NamespaceSelector / ObjectSelector across multiple resources in the match block are not applicable."
        ));
    }
    Ok(())
}

/// Group, preferred version and resource serving a Kyverno kind selector (`Kind`,
/// `version/Kind`, `group/version/Kind`, with `/subresource`), as discovery resolves it
/// (`kubeutils.ParseKindSelector`, `FindResources`).
pub fn discover(selector: &str, mapper: &Mapper) -> Option<(String, String, String)> {
    let parts: Vec<&str> = selector.split('/').collect();
    let is_version = |s: &str| {
        s.strip_prefix('v')
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_digit())
    };
    let (group, version, kind, sub) = match parts.as_slice() {
        [k] => (None, None, *k, None),
        [v, k] if is_version(v) => (None, Some(*v), *k, None),
        [k, s] => (None, None, *k, Some(*s)),
        [v, k, s] if is_version(v) => (None, Some(*v), *k, Some(*s)),
        [g, v, k] => (Some(*g), Some(*v), *k, None),
        [g, v, k, s] => (Some(*g), Some(*v), *k, Some(*s)),
        _ => return None,
    };
    let r = match group {
        Some(g) => mapper.for_kind(&format!("{g}/v1"), kind)?,
        None => mapper.for_bare_kind(kind)?,
    };
    let version = version.map(str::to_string).unwrap_or_else(|| "v1".into());
    let resource = match sub {
        Some(s) => format!("{}/{s}", r.plural),
        None => r.plural.clone(),
    };
    Some((r.group.clone(), version, resource))
}
