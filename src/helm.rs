//! Helm's values rules in-process, for grading a learner's values file where `helm` is
//! absent: `-f` files merged in order, then coalesced over the chart's defaults (maps
//! merge, anything else replaces, `null` deletes a default), and the few Deployment fields
//! a lab grades rendered from the result as the chart's templates would. The chart's
//! knowledge (its defaults for those fields, which values path feeds which field) is
//! data, a `ChartRender` file shipped beside the lab's graders, never code here.
//!
//! Rules from helm/helm `pkg/chart/common/util/coalesce.go` (`coalesceValues`,
//! `coalesceTablesFullKey`, `cleanNilValues`) and `pkg/cli/values/options.go` (`mergeMaps`).
//! It must not print; `kca values render` (in `run`) hands the render to `ui`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;

/// A chart's render of the fields a lab grades: its defaults and, per Deployment, which
/// values feed which field (see `labs/kca-operations/graders/chart-render.yaml`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChartRender {
    pub chart: ChartId,
    /// The namespace `helm template -n` would get.
    pub release_namespace: String,
    /// The chart's `values.yaml`, cut down to the keys the render reads.
    #[serde(default)]
    pub defaults: Value,
    pub deployments: Vec<DeploymentRender>,
}

/// `chart.name` is `.Chart.Name`: what the Deployments are named after without
/// `nameOverride`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChartId {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentRender {
    /// Suffix after the chart name (`<nameOverride|chart>-<suffix>`).
    pub suffix: String,
    /// Values path of the `{{- if …enabled }}` around the template; none: always rendered.
    #[serde(default)]
    pub enabled: Option<String>,
    /// Values path of `spec.replicas` (through the chart's non-zero check).
    pub replicas: String,
    /// Values path that, when true, leaves `spec.replicas` out (autoscaling).
    #[serde(default)]
    pub replicas_unless: Option<String>,
    /// The container whose resources are rendered.
    pub container: String,
    /// Values path of that container's `resources` (`{{- with … }}`: empty leaves it out).
    pub resources: String,
}

/// Why a render fails where `helm template` would fail too (the learner's to fix).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    #[error("{path} is {what}: the chart's templates read fields below it, so helm template fails")]
    NotATable { path: String, what: &'static str },
    #[error("{path} is 0: the chart refuses to run a controller with 0 replicas")]
    ZeroReplicas { path: String },
    #[error(
        "{path} holds a template ({{{{ … }}}}): kca does not evaluate Helm templates; install helm"
    )]
    Template { path: String },
    #[error("{path} is {what}, which the chart cannot print as a replica count")]
    BadReplicas { path: String, what: &'static str },
}

/// Several `-f` files as Helm's CLI merges them: later files win, maps merge, nothing is
/// deleted yet (`mergeMaps`).
pub fn merge_files(files: &[Value]) -> Value {
    let mut dest = Map::new();
    for f in files {
        if let Value::Object(src) = f {
            merge_maps(&mut dest, src);
        }
    }
    Value::Object(dest)
}

fn merge_maps(dest: &mut Map<String, Value>, src: &Map<String, Value>) {
    for (k, v) in src {
        match (dest.get_mut(k), v) {
            (Some(Value::Object(d)), Value::Object(s)) => merge_maps(d, s),
            _ => {
                dest.insert(k.clone(), v.clone());
            }
        }
    }
}

/// The user's values coalesced over the chart's defaults (`CoalesceValues`): a user value
/// wins; two maps merge key by key; a user `null` deletes the default; a default `null`
/// is no value at all.
pub fn coalesce(user: &Value, defaults: &Value) -> Value {
    let mut dest = match user {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let Value::Object(defaults) = defaults else {
        return Value::Object(dest);
    };
    for (key, default) in defaults {
        match dest.get(key) {
            Some(Value::Null) => {
                dest.remove(key);
            }
            Some(Value::Object(_)) => {
                if let (Some(Value::Object(d)), Value::Object(src)) = (dest.get_mut(key), default) {
                    let mut src = src.clone();
                    clean_nulls(&mut src);
                    coalesce_tables(d, &src);
                }
            }
            Some(_) => {}
            None => match default {
                Value::Null => {}
                Value::Object(src) => {
                    let mut src = src.clone();
                    clean_nulls(&mut src);
                    dest.insert(key.clone(), Value::Object(src));
                }
                other => {
                    dest.insert(key.clone(), other.clone());
                }
            },
        }
    }
    Value::Object(dest)
}

fn coalesce_tables(dst: &mut Map<String, Value>, src: &Map<String, Value>) {
    for (key, default) in src {
        match dst.get_mut(key) {
            Some(Value::Null) if !default.is_null() => {
                dst.remove(key);
            }
            None => {
                dst.insert(key.clone(), default.clone());
            }
            Some(Value::Object(d)) => {
                if let Value::Object(s) = default {
                    coalesce_tables(d, s);
                }
            }
            // A user scalar or list replaces whatever the default was.
            Some(_) => {}
        }
    }
}

fn clean_nulls(m: &mut Map<String, Value>) {
    m.retain(|_, v| !v.is_null());
    for v in m.values_mut() {
        if let Value::Object(sub) = v {
            clean_nulls(sub);
        }
    }
}

/// The value at a dotted path as a template reads `.Values.a.b.c`: a missing last key is
/// `None`; a missing, `null` or non-map step before it fails the render.
fn lookup<'a>(
    values: &'a Value,
    path: &str,
) -> std::result::Result<Option<&'a Value>, RenderError> {
    let parts: Vec<&str> = path.split('.').collect();
    let mut cur = values;
    for (i, part) in parts.iter().enumerate() {
        let Value::Object(m) = cur else {
            return Err(RenderError::NotATable {
                path: parts[..i].join("."),
                what: kind_of(cur),
            });
        };
        match m.get(*part) {
            Some(v) if i + 1 == parts.len() => return Ok(Some(v)),
            Some(v) => cur = v,
            None if i + 1 == parts.len() => return Ok(None),
            None => {
                return Err(RenderError::NotATable {
                    path: parts[..=i].join("."),
                    what: "missing",
                });
            }
        }
    }
    Ok(None)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Go templates' truth: false, 0, "", null, empty list and map are false.
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
    }
}

/// `kyverno.deployment.replicas`: fails on a number that `int` makes 0, prints the value.
fn replicas(v: Option<&Value>, path: &str) -> std::result::Result<Value, RenderError> {
    match v {
        None | Some(Value::Null) => Ok(Value::Null),
        Some(Value::Number(n)) => {
            if n.as_f64().is_some_and(|f| f.trunc() == 0.0) {
                return Err(RenderError::ZeroReplicas { path: path.into() });
            }
            Ok(Value::Number(n.clone()))
        }
        // A string is printed as it is and read back by YAML (`"3"` renders `replicas: 3`).
        Some(Value::String(s)) => Ok(crate::yaml::parse_json_stream(s)
            .ok()
            .and_then(|d| d.into_iter().next())
            .unwrap_or(Value::String(s.clone()))),
        Some(Value::Bool(b)) => {
            if !b {
                return Err(RenderError::ZeroReplicas { path: path.into() });
            }
            Ok(Value::Bool(true))
        }
        Some(other) => Err(RenderError::BadReplicas {
            path: path.into(),
            what: kind_of(other),
        }),
    }
}

/// The Deployments `helm template` would make of `values` (already coalesced), reduced to
/// the graded fields: name, namespace, `spec.replicas`, the container's `resources`.
pub fn render(chart: &ChartRender, values: &Value) -> std::result::Result<Vec<Value>, RenderError> {
    if crate::offline::kyverno::vars::any_text(values, &|s| s.contains("{{")) {
        return Err(RenderError::Template {
            path: "the values".into(),
        });
    }
    let text = |v: Option<&Value>| match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let mut name =
        text(lookup(values, "nameOverride")?).unwrap_or_else(|| chart.chart.name.clone());
    name = name
        .chars()
        .take(63)
        .collect::<String>()
        .trim_end_matches('-')
        .to_string();
    let namespace = text(lookup(values, "namespaceOverride")?)
        .unwrap_or_else(|| chart.release_namespace.clone());
    let mut out = Vec::new();
    for d in &chart.deployments {
        if let Some(path) = &d.enabled
            && !truthy(lookup(values, path)?)
        {
            continue;
        }
        let mut spec = Map::new();
        let autoscaled = match &d.replicas_unless {
            Some(path) => truthy(lookup(values, path)?),
            None => false,
        };
        if !autoscaled {
            spec.insert(
                "replicas".into(),
                replicas(lookup(values, &d.replicas)?, &d.replicas)?,
            );
        }
        let mut container = Map::new();
        container.insert("name".into(), json!(d.container));
        let resources = lookup(values, &d.resources)?;
        if truthy(resources) {
            container.insert(
                "resources".into(),
                resources.cloned().unwrap_or(Value::Null),
            );
        }
        spec.insert(
            "template".into(),
            json!({"spec": {"containers": [Value::Object(container)]}}),
        );
        out.push(json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": format!("{name}-{}", d.suffix), "namespace": namespace},
            "spec": Value::Object(spec),
        }));
    }
    Ok(out)
}

/// Reads a `ChartRender` file.
pub fn load_chart(path: &Path) -> Result<ChartRender> {
    let text = crate::input::read_text(path)?;
    let doc = crate::yaml::parse_json_stream(&text)
        .map_err(|e| crate::diag::not_yaml(path, &text, &e))?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    serde_json::from_value(doc).map_err(|e| {
        Error::usage(
            crate::error::msg(
                format!(
                    "{} はチャートの描画ファイルではありません: {e}",
                    path.display()
                ),
                format!("{}: not a chart render file: {e}", path.display()),
            ),
            crate::error::msg(
                "形は labs/kca-operations/graders/chart-render.yaml を見てください",
                "see labs/kca-operations/graders/chart-render.yaml for the shape",
            ),
        )
    })
}

/// Reads one values file as Helm does (the first document; an empty file is no values).
pub fn load_values(path: &Path) -> Result<Value> {
    let text = crate::input::read_text(path)?;
    let doc = crate::yaml::parse_json_stream(&text)
        .map_err(|e| crate::diag::not_yaml(path, &text, &e))?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    match doc {
        Value::Object(_) => Ok(doc),
        Value::Null => Ok(json!({})),
        other => Err(Error::usage(
            crate::error::msg(
                format!(
                    "{}: 値ファイルはキーのマップです ({}ではありません)",
                    path.display(),
                    match &other {
                        Value::Bool(_) => "真偽値",
                        Value::Number(_) => "数",
                        Value::String(_) => "文字列",
                        _ => "リスト",
                    }
                ),
                format!(
                    "{}: a values file is a map of keys, not {}",
                    path.display(),
                    kind_of(&other)
                ),
            ),
            crate::error::msg(
                "いちばん上の階層に key: value の行を書きます",
                "write key: value lines at the top level",
            ),
        )),
    }
}

/// `kca values render --chart FILE -f VALUES…`: the render as a YAML stream on stdout.
pub fn run(ctx: &Ctx, chart: &Path, files: &[PathBuf]) -> Result<Exit> {
    let chart = load_chart(chart)?;
    let mut user = Vec::new();
    for f in files {
        user.push(load_values(f)?);
    }
    let values = coalesce(&merge_files(&user), &chart.defaults);
    let docs = render(&chart, &values).map_err(|e| {
        Error::usage(
            crate::error::msg(format!("値から描画できません: {e}"), e.to_string()),
            crate::error::msg(
                "値ファイルを直します。helm template もこれを拒みます",
                "fix the values file; helm template would refuse it too",
            ),
        )
    });
    let docs = match docs {
        Ok(d) => d,
        Err(e) => {
            ctx.printer.error(&e);
            return Ok(Exit::NotPassed);
        }
    };
    if ctx.settings.output == crate::settings::OutputFormat::Json {
        ctx.printer.json(&docs);
    } else {
        for line in crate::yaml::to_stream(&docs).lines() {
            ctx.printer.out(line);
        }
    }
    Ok(Exit::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_merge_lists_replace_null_deletes() {
        let defaults = json!({"a": {"x": 1, "y": [1, 2], "z": {"k": "v"}}, "b": 2, "n": null});
        let user = json!({"a": {"y": [3], "z": null}, "b": null});
        assert_eq!(coalesce(&user, &defaults), json!({"a": {"y": [3], "x": 1}}));
    }

    #[test]
    fn a_user_scalar_replaces_a_default_map_and_the_reverse() {
        let defaults = json!({"a": {"x": 1}, "b": 1});
        let user = json!({"a": 5, "b": {"y": 2}});
        assert_eq!(coalesce(&user, &defaults), json!({"a": 5, "b": {"y": 2}}));
    }

    #[test]
    fn later_files_win_and_maps_merge_across_files() {
        let merged = merge_files(&[json!({"a": {"x": 1, "y": 1}}), json!({"a": {"y": 2}})]);
        assert_eq!(merged, json!({"a": {"x": 1, "y": 2}}));
    }

    fn chart() -> ChartRender {
        serde_json::from_value(json!({
            "chart": {"name": "kyverno", "version": "3.9.1"},
            "releaseNamespace": "kyverno",
            "defaults": {
                "nameOverride": null,
                "a": {"enabled": true, "replicas": null, "autoscaling": {"enabled": false},
                      "resources": {"limits": {"memory": "128Mi"}}}
            },
            "deployments": [{"suffix": "a-controller", "enabled": "a.enabled",
                             "replicas": "a.replicas", "replicasUnless": "a.autoscaling.enabled",
                             "container": "controller", "resources": "a.resources"}]
        }))
        .unwrap()
    }

    fn rendered(user: Value) -> std::result::Result<Vec<Value>, RenderError> {
        let c = chart();
        render(&c, &coalesce(&user, &c.defaults))
    }

    #[test]
    fn unset_replicas_render_null_and_defaults_fill_resources() {
        let docs = rendered(json!({})).unwrap();
        assert_eq!(docs[0]["metadata"]["name"], "kyverno-a-controller");
        assert_eq!(docs[0]["spec"]["replicas"], Value::Null);
        assert_eq!(
            docs[0]["spec"]["template"]["spec"]["containers"][0]["resources"],
            json!({"limits": {"memory": "128Mi"}})
        );
    }

    #[test]
    fn a_partial_resources_map_merges_with_the_defaults() {
        let docs = rendered(json!({"a": {"replicas": 3, "resources": {"requests": {"cpu": "1"}}}}))
            .unwrap();
        assert_eq!(docs[0]["spec"]["replicas"], 3);
        assert_eq!(
            docs[0]["spec"]["template"]["spec"]["containers"][0]["resources"],
            json!({"limits": {"memory": "128Mi"}, "requests": {"cpu": "1"}})
        );
    }

    #[test]
    fn null_resources_leave_the_container_without_resources() {
        let docs = rendered(json!({"a": {"resources": null}})).unwrap();
        assert!(
            docs[0]["spec"]["template"]["spec"]["containers"][0]
                .get("resources")
                .is_none()
        );
    }

    #[test]
    fn disabled_controller_renders_nothing_and_autoscaling_drops_replicas() {
        assert!(
            rendered(json!({"a": {"enabled": false}}))
                .unwrap()
                .is_empty()
        );
        let docs =
            rendered(json!({"a": {"autoscaling": {"enabled": true}, "replicas": 3}})).unwrap();
        assert!(docs[0]["spec"].get("replicas").is_none());
    }

    #[test]
    fn zero_replicas_and_a_deleted_table_fail_like_helm_template() {
        assert!(matches!(
            rendered(json!({"a": {"replicas": 0}})),
            Err(RenderError::ZeroReplicas { .. })
        ));
        assert!(matches!(
            rendered(json!({"a": {"autoscaling": null}})),
            Err(RenderError::NotATable { .. })
        ));
    }

    #[test]
    fn string_replicas_render_as_the_number() {
        let docs = rendered(json!({"a": {"replicas": "3"}})).unwrap();
        assert_eq!(docs[0]["spec"]["replicas"], 3);
    }

    #[test]
    fn name_override_renames_the_deployments() {
        let docs = rendered(json!({"nameOverride": "policy"})).unwrap();
        assert_eq!(docs[0]["metadata"]["name"], "policy-a-controller");
    }
}
