//! The CEL environment: JSON to CEL values, the admission variables (`object`, `request`,
//! `params`, …), Kubernetes' library extensions the interpreter lacks, Kyverno's
//! `resource.get`, and compiling and running one expression.

use super::*;

pub(super) fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// A CEL result as JSON (map keys sorted: the interpreter's maps have no order). Bytes,
/// types and functions have no JSON form and are an error.
pub(super) fn from_cel(v: &cel::Value) -> Result<Value, NoJsonForm> {
    Ok(match v {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(b) => Value::Bool(*b),
        cel::Value::Int(i) => json!(i),
        cel::Value::UInt(u) => json!(u),
        cel::Value::Float(f) => json!(f),
        cel::Value::String(s) => Value::String(s.to_string()),
        cel::Value::List(l) => Value::Array(l.iter().map(from_cel).collect::<Result<_, _>>()?),
        cel::Value::Map(m) => {
            let mut entries: Vec<(String, Value)> = Vec::with_capacity(m.map.len());
            for (k, v) in m.map.iter() {
                let key = match k {
                    cel::objects::Key::String(s) => s.to_string(),
                    cel::objects::Key::Int(i) => i.to_string(),
                    cel::objects::Key::Uint(u) => u.to_string(),
                    cel::objects::Key::Bool(b) => b.to_string(),
                };
                entries.push((key, from_cel(v)?));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        other => return Err(NoJsonForm(other.type_of())),
    })
}

/// JSON as the API server hands it to CEL: whole numbers are `int` (serde would make
/// positive ones `uint`, and `uint + int` has no overload).
pub(super) fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => cel::Value::Int(i),
            (None, Some(u)) => cel::Value::UInt(u),
            _ => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(a) => cel::Value::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: std::collections::HashMap<String, cel::Value> =
                m.iter().map(|(k, v)| (k.clone(), to_cel(v))).collect();
            cel::Value::from(map)
        }
    }
}

/// A CEL context with what the cost limit reads: the JSON of its root variables, and the
/// cost spent so far in this policy evaluation.
pub(super) struct Scope<'a> {
    pub(super) cel: Context<'a, 'a>,
    roots: BTreeMap<String, Value>,
    spent: std::cell::Cell<f64>,
}

impl Scope<'_> {
    /// Binds a root variable (`object`, `params`, …).
    pub(super) fn set(&mut self, name: &str, value: &Value) {
        self.cel
            .add_variable_from_value(name.to_string(), to_cel(value));
        self.roots.insert(name.to_string(), value.clone());
    }

    /// Binds the evaluated `variables`.
    pub(super) fn bind_variables(&mut self, vars: &BTreeMap<String, cel::Value>) {
        let map: std::collections::HashMap<String, cel::Value> =
            vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        self.cel.add_variable_from_value("variables", map);
        let json: serde_json::Map<String, Value> = vars
            .iter()
            .map(|(k, v)| (k.clone(), from_cel(v).unwrap_or(Value::Null)))
            .collect();
        self.roots.insert("variables".into(), Value::Object(json));
    }
}

pub(super) fn base_context<'a>(req: &VapRequest, params: &Value) -> Scope<'a> {
    let mut ctx = Context::with_env(env().clone());
    register_functions(&mut ctx);
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let (group, version, resource) = resource_of(obj);
    let request = json!({
        "kind": {"group": group, "version": version, "kind": kind_of(obj)},
        "resource": {"group": group, "version": version, "resource": resource},
        "subResource": req.sub_resource,
        "requestKind": {"group": group, "version": version, "kind": kind_of(obj)},
        "requestResource": {"group": group, "version": version, "resource": resource},
        "name": name_of(obj),
        "namespace": request_namespace(req).unwrap_or_default(),
        "operation": req.operation,
        "userInfo": {
            "username": req.user.username,
            "uid": req.user.uid,
            "groups": req.user.groups,
            "extra": req.user.extra,
        },
        "dryRun": req.dry_run,
    });
    ctx.add_variable_from_value(
        "jsonpatch",
        to_cel(&json!({"kca.dev/jsonpatch-library": true})),
    );
    if let Some(cluster) = &req.cluster {
        add_resource_library(&mut ctx, cluster.clone());
    }
    let mut scope = Scope {
        cel: ctx,
        roots: BTreeMap::new(),
        spent: std::cell::Cell::new(0.0),
    };
    scope.set("object", &req.object);
    scope.set("oldObject", &req.old_object);
    scope.set("request", &request);
    scope.set("params", params);
    scope.set("namespaceObject", &req.namespace_object);
    scope
}

/// Kyverno's `resource.get(apiVersion, resource, namespace, name)` (also spelt
/// `resource.Get`) over a fixed set of objects; one that is not there is an evaluation
/// error, as a failed GET would be.
pub(super) fn add_resource_library(ctx: &mut Context<'_, '_>, cluster: Arc<Vec<Value>>) {
    // The receiver marks the library, so `Get` on anything else is not a lookup.
    ctx.add_variable_from_value("resource", to_cel(&json!({RESOURCE_LIBRARY: true})));
    let listed = cluster.clone();
    let get = move |This(target): This<cel::Value>,
                    api_version: Arc<String>,
                    resource: Arc<String>,
                    namespace: Arc<String>,
                    name: Arc<String>|
          -> cel::ResolveResult {
        if target != to_cel(&json!({RESOURCE_LIBRARY: true})) {
            return Err(ExecutionError::function_error(
                "get",
                "only the `resource` library has `get` offline",
            ));
        }
        cluster
            .iter()
            .find(|o| {
                o.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str())
                    && crate::offline::rbac::resource::plural_of(&api_version, kind_of(o))
                        == *resource
                    && name_of(o) == *name
                    && o.pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        == *namespace
            })
            .map(to_cel)
            .ok_or_else(|| {
                ExecutionError::function_error(
                    "resource.get",
                    format!("{resource} \"{name}\" not found in namespace \"{namespace}\""),
                )
            })
    };
    // `resource.List(apiVersion, resource, namespace)`: the objects of that resource in
    // the namespace (all of them for ""), as a list object with `items`.
    let list = move |This(target): This<cel::Value>,
                     api_version: Arc<String>,
                     resource: Arc<String>,
                     namespace: Arc<String>|
          -> cel::ResolveResult {
        if target != to_cel(&json!({RESOURCE_LIBRARY: true})) {
            return Err(ExecutionError::function_error(
                "list",
                "only the `resource` library has `list` offline",
            ));
        }
        let items: Vec<Value> = listed
            .iter()
            .filter(|o| {
                o.get("apiVersion").and_then(Value::as_str) == Some(api_version.as_str())
                    && crate::offline::rbac::resource::plural_of(&api_version, kind_of(o))
                        == *resource
                    && (namespace.is_empty()
                        || o.pointer("/metadata/namespace").and_then(Value::as_str)
                            == Some(namespace.as_str()))
            })
            .cloned()
            .collect();
        Ok(to_cel(
            &json!({"apiVersion": api_version.as_str(), "kind": "List", "items": items}),
        ))
    };
    // Fixed names that are no standard overload.
    let added = [
        ctx.add_function("get", get.clone()),
        ctx.add_function("Get", get),
        ctx.add_function("list", list.clone()),
        ctx.add_function("List", list),
    ];
    debug_assert!(added.iter().all(Result::is_ok), "{added:?}");
}

pub(super) const RESOURCE_LIBRARY: &str = "kca.dev/resource-library";

/// The CEL environment: the standard library, its macros and optional values, and the
/// strings extension Kubernetes enables.
pub(super) fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Declaring a well-known extension on a fresh stdlib cannot conflict.
        env.add_extension(cel::extensions::strings)
            .expect("strings extension on a fresh environment");
        Arc::new(env)
    })
}

/// Kubernetes' library members the interpreter lacks: `isSorted`, regex `find` and
/// `findAll`, quantities. Quantities are their numeric value, which is enough for
/// comparisons.
pub(super) fn register_functions(ctx: &mut Context<'_, '_>) {
    fn quantity(s: Arc<String>) -> Result<f64, ExecutionError> {
        crate::offline::kyverno::quantity::parse_quantity(&s).ok_or_else(|| {
            ExecutionError::function_error("quantity", format!("invalid quantity {s:?}"))
        })
    }
    fn is_sorted(This(list): This<Arc<Vec<cel::Value>>>) -> bool {
        list.windows(2)
            .all(|w| w[0].partial_cmp(&w[1]).is_some_and(|o| o.is_le()))
    }
    fn compare_to(This(a): This<f64>, b: f64) -> i64 {
        match a.partial_cmp(&b) {
            Some(std::cmp::Ordering::Less) => -1,
            Some(std::cmp::Ordering::Greater) => 1,
            _ => 0,
        }
    }
    fn regex_of(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
        regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
    }
    fn find(This(s): This<Arc<String>>, pattern: Arc<String>) -> cel::ResolveResult {
        let re = regex_of(&pattern, "find")?;
        let hit = re
            .find(&s)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default();
        Ok(cel::Value::String(Arc::new(hit)))
    }
    fn find_all(This(s): This<Arc<String>>, pattern: Arc<String>) -> cel::ResolveResult {
        let re = regex_of(&pattern, "findAll")?;
        let hits = re
            .find_iter(&s)
            .map(|m| cel::Value::String(Arc::new(m.as_str().to_string())))
            .collect();
        Ok(cel::Value::List(Arc::new(hits)))
    }
    let results = [
        ctx.add_function("find", find),
        ctx.add_function("findAll", find_all),
        ctx.add_function("quantity", quantity),
        ctx.add_function("isQuantity", |s: Arc<String>| {
            crate::offline::kyverno::quantity::parse_quantity(&s).is_some()
        }),
        ctx.add_function("isSorted", is_sorted),
        ctx.add_function("compareTo", compare_to),
        ctx.add_function("isLessThan", |This(a): This<f64>, b: f64| a < b),
        ctx.add_function("isGreaterThan", |This(a): This<f64>, b: f64| a > b),
        ctx.add_function("asApproximateFloat", |This(a): This<f64>| a),
        ctx.add_function("isInteger", |This(a): This<f64>| a.fract() == 0.0),
        ctx.add_function("asInteger", |This(a): This<f64>| a as i64),
        // `jsonpatch.escapeKey(k)`: a key as one JSON Pointer segment (RFC 6901).
        ctx.add_function(
            "escapeKey",
            |This(_): This<cel::Value>, key: Arc<String>| key.replace('~', "~0").replace('/', "~1"),
        ),
    ];
    // The names are fixed and none is a standard overload.
    debug_assert!(results.iter().all(Result::is_ok), "{results:?}");
}

/// Compiles and runs one expression. Compile failures, the `authorizer` and calls the
/// interpreter does not know are `unsupported`.
pub(super) fn eval(scope: &Scope<'_>, expr: &str) -> Result<cel::Value, EvalError> {
    if mentions(expr, "authorizer") {
        return Err(EvalError::unsupported(Unsupported::Authorizer));
    }
    let compiled = compiled(expr).map_err(EvalError::unsupported)?;
    // The interpreter cannot be stopped part-way: an expression whose cost on these
    // values would pass the limits is refused before it runs.
    let (cost, _) = cost::estimate(
        compiled.program.expression(),
        &cost::Inputs::Eval(&scope.roots),
    );
    if cost > cost::PER_CALL_LIMIT {
        return Err(EvalError::failed(cost::ACTUAL_LIMIT_EXCEEDED));
    }
    scope.spent.set(scope.spent.get() + cost);
    if scope.spent.get() > cost::RUNTIME_BUDGET {
        return Err(EvalError::failed(cost::OUT_OF_BUDGET));
    }
    compiled.program.execute(&scope.cel).map_err(|e| match e {
        ExecutionError::UndeclaredReference(_)
        | ExecutionError::NoSuchOverload(_)
        | ExecutionError::NotSupportedAsMethod { .. } => {
            EvalError::unsupported(Unsupported::Interpreter(e.to_string()))
        }
        _ => EvalError::failed(e.to_string()),
    })
}

/// A compiled expression (its syntax tree is what the cost estimate walks).
pub(super) struct Compiled {
    pub(super) program: Program,
}

/// Compiles `expr` once per thread: a corpus run evaluates the same few hundred
/// expressions on thousands of objects, and parsing them again took a third of it.
pub(super) fn compiled(expr: &str) -> Result<std::rc::Rc<Compiled>, Unsupported> {
    thread_local! {
        static PROGRAMS: std::cell::RefCell<std::collections::HashMap<String, std::rc::Rc<Compiled>>> =
            Default::default();
    }
    if let Some(p) = PROGRAMS.with_borrow(|m| m.get(expr).cloned()) {
        return Ok(p);
    }
    // Mutation literals (`Object{…}`, `JSONPatch{…}`) are read as maps.
    let source = if expr.contains("Object") || expr.contains("JSONPatch") {
        super::literal::rewrite_typed_literals(expr)
    } else {
        expr.to_string()
    };
    let program = env()
        .compile(&source)
        .map_err(|e| Unsupported::Compile(e.to_string()))?;
    let compiled = std::rc::Rc::new(Compiled { program });
    PROGRAMS.with_borrow_mut(|m| m.insert(expr.to_string(), compiled.clone()));
    Ok(compiled)
}

/// `word` as an identifier in `expr` (not inside a longer name).
pub(super) fn mentions(expr: &str, word: &str) -> bool {
    expr.match_indices(word).any(|(i, _)| {
        let before = expr[..i].chars().next_back();
        let after = expr[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after) && before != Some('.') && before != Some('\'')
    })
}

/// The estimated-cost check the API server makes when a policy is created: every CEL
/// expression of `spec` (variables first, their estimated sizes carried to the
/// expressions that use them) against the per-expression limit. `Err` names the field
/// and gives the API server's message. An expression that does not compile is left to evaluation,
/// which reports it.
pub(super) fn check_spec_cost(spec: &Value) -> Result<(), CostExceeded> {
    let mut shapes: BTreeMap<String, cost::Shape> = BTreeMap::new();
    let fields: [(&str, &[&str]); 7] = [
        ("variables", &["expression"]),
        ("matchConditions", &["expression"]),
        ("validations", &["expression", "messageExpression"]),
        ("auditAnnotations", &["valueExpression"]),
        (
            "mutations",
            &["applyConfiguration/expression", "jsonPatch/expression"],
        ),
        ("generate", &["expression"]),
        ("expressions", &["expression", "messageExpression"]),
    ];
    for (list_key, keys) in fields {
        for (i, item) in list(spec, list_key).enumerate() {
            for key in keys {
                let Some(expr) = item.pointer(&format!("/{key}")).and_then(Value::as_str) else {
                    continue;
                };
                let Ok(compiled) = compiled(expr) else {
                    continue;
                };
                let (cost, shape) =
                    cost::estimate(compiled.program.expression(), &cost::Inputs::Load(&shapes));
                if list_key == "variables"
                    && let Some(name) = item.get("name").and_then(Value::as_str)
                {
                    shapes.insert(name.to_string(), shape);
                }
                if cost > cost::PER_CALL_LIMIT {
                    return Err(CostExceeded {
                        field: format!("spec.{list_key}[{i}].{}", key.replace('/', ".")),
                        cost,
                    });
                }
            }
        }
    }
    Ok(())
}
