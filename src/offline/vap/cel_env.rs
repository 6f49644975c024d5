//! The CEL environment: JSON to CEL values, the admission variables (`object`, `request`,
//! `params`, …), Kubernetes' library extensions the interpreter lacks, and compiling and
//! running one expression.

use super::*;

pub(super) fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

/// Most values kca makes from CEL in one policy evaluation: what the interpreter builds
/// and copies (it holds values as trees, so a value built from shared parts is copied
/// whole when it is bound or returned) and the JSON a result becomes. The API server
/// has no such limit (its values stay shared); this is kca's, far above what policies
/// make, as the JMESPath budget is (`offline::kyverno::budget`).
pub(super) const MAX_MADE: f64 = 65_536.0;

/// The error past [`MAX_MADE`].
pub(super) fn made_too_much() -> EvalError {
    EvalError::failed(format!(
        "the policy's CEL expressions would make more than {} values; kca stops it there",
        MAX_MADE as u64
    ))
}

/// A CEL result as JSON (map keys sorted: the interpreter's maps have no order). Bytes,
/// types and functions have no JSON form and are an error; so is a value larger than
/// kca makes ([`MAX_MADE`] values), counted as it is converted, before it is copied.
pub(super) fn from_cel(v: &cel::Value) -> Result<Value, NoJsonForm> {
    if cost::shape_of(v).total > MAX_MADE {
        return Err(NoJsonForm::TooLarge(MAX_MADE as u64));
    }
    from_cel_unchecked(v)
}

fn from_cel_unchecked(v: &cel::Value) -> Result<Value, NoJsonForm> {
    Ok(match v {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(b) => Value::Bool(*b),
        cel::Value::Int(i) => json!(i),
        cel::Value::UInt(u) => json!(u),
        cel::Value::Float(f) => json!(f),
        cel::Value::String(s) => Value::String(s.to_string()),
        cel::Value::List(l) => {
            Value::Array(l.iter().map(from_cel_unchecked).collect::<Result<_, _>>()?)
        }
        cel::Value::Map(m) => {
            let mut entries: Vec<(String, Value)> = Vec::with_capacity(m.map.len());
            for (k, v) in m.map.iter() {
                let key = match k {
                    cel::objects::Key::String(s) => s.to_string(),
                    cel::objects::Key::Int(i) => i.to_string(),
                    cel::objects::Key::Uint(u) => u.to_string(),
                    cel::objects::Key::Bool(b) => b.to_string(),
                };
                entries.push((key, from_cel_unchecked(v)?));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().collect())
        }
        other => return Err(NoJsonForm::Type(other.type_of())),
    })
}

/// A CEL value's type, for messages (a value itself may be too large to print).
pub(super) fn type_name(v: &cel::Value) -> String {
    format!("{}", v.type_of())
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

/// A CEL context with what the cost limit reads — the root variables and each evaluated
/// variable, as the interpreter holds them (never copied to JSON) — the cost spent so far
/// in this policy evaluation, and the policy's `variables`, evaluated lazily as the API
/// server and Kyverno do (`k8s.io/apiserver/pkg/cel/lazy`, Kyverno's
/// `pkg/cel/policies/*/compiler/policy.go`): only those an expression uses, each once,
/// in their order of definition.
pub(super) struct Scope<'a> {
    cel: std::cell::RefCell<Context<'a, 'a>>,
    roots: std::cell::RefCell<BTreeMap<String, cel::Value>>,
    spent: std::cell::Cell<f64>,
    made: std::cell::Cell<f64>,
    vars: std::cell::RefCell<Variables>,
    /// Names the policy's environment declares that this evaluation does not bind (yet).
    unset: std::cell::RefCell<std::collections::BTreeSet<&'static str>>,
    /// `authorizer` is bound (the request carries the cluster's RBAC).
    authorizer: bool,
}

/// The policy's variables: their definitions in order, and those evaluated so far.
#[derive(Default)]
struct Variables {
    defs: Vec<(String, String)>,
    done: BTreeMap<String, Result<cel::Value, EvalError>>,
    /// How many evaluated variables the bound `variables` map holds (an expression reads
    /// it other than by name); re-bound when more are evaluated.
    whole: Option<usize>,
    /// The variable being evaluated, by its place in `defs`: it sees only those before it.
    within: Option<usize>,
}

impl<'a> Scope<'a> {
    /// Binds a root variable (`object`, `params`, …).
    pub(super) fn set(&mut self, name: &str, value: &Value) {
        let v = to_cel(value);
        self.cel
            .get_mut()
            .add_variable_from_value(name.to_string(), v.clone());
        self.roots.get_mut().insert(name.to_string(), v);
    }

    /// Binds a root variable that is already a CEL value.
    pub(super) fn set_cel(&mut self, name: &str, value: cel::Value) {
        self.cel
            .get_mut()
            .add_variable_from_value(name.to_string(), value.clone());
        self.roots.get_mut().insert(name.to_string(), value);
    }

    /// The CEL context, to add functions to.
    pub(super) fn cel_mut(&mut self) -> &mut Context<'a, 'a> {
        self.cel.get_mut()
    }

    /// Declares `variables` without binding it: Kyverno's ValidatingPolicy compiler
    /// declares it for `matchConditions` (pkg/cel/policies/vpol/compiler/compiler.go
    /// `createBaseVpolEnv`), but binds it only after they matched (policy.go
    /// `evaluateWithData`), so reading it there is an evaluation error, not a refusal.
    pub(super) fn declare_variables_unbound(&mut self) {
        self.unset.get_mut().insert("variables");
    }

    /// Declares `spec.variables`; none is evaluated until an expression uses it.
    pub(super) fn define_variables(&mut self, spec: &Value) {
        self.unset.get_mut().remove("variables");
        let defs = list(spec, "variables")
            .map(|v| {
                let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                (text("name"), text("expression"))
            })
            .collect();
        *self.vars.get_mut() = Variables {
            defs,
            ..Variables::default()
        };
        self.cel.get_mut().add_variable_from_value(
            "variables",
            std::collections::HashMap::<String, cel::Value>::new(),
        );
    }

    /// Charges `n` values made against [`MAX_MADE`].
    fn make(&self, n: f64) -> Result<(), EvalError> {
        self.made.set(self.made.get() + n);
        if self.made.get() > MAX_MADE {
            return Err(made_too_much());
        }
        Ok(())
    }

    /// Evaluates the variables `expr` uses (and those they use) that are not evaluated
    /// yet, and binds each as `variables.NAME`; the first one `expr` uses that failed is
    /// the error.
    fn resolve_variables(&self, expr: &cel::IdedExpr) -> Result<(), EvalError> {
        let Some(wanted) = variable_refs(expr) else {
            return Ok(());
        };
        // A variable sees only those defined before it (the API server compiles them in
        // order): never itself, so evaluating one cannot come back to it.
        let defs: Vec<(String, String)> = {
            let vars = self.vars.borrow();
            let seen = vars.within.unwrap_or(vars.defs.len());
            vars.defs[..seen].to_vec()
        };
        let all = matches!(wanted, Refs::All);
        let mut need: std::collections::BTreeSet<String> = match &wanted {
            Refs::Names(n) => n.clone(),
            Refs::All => defs.iter().map(|(n, _)| n.clone()).collect(),
        };
        // A variable only uses those defined before it: walking back finds them all.
        for (at, (name, expr)) in defs.iter().enumerate().rev() {
            if !need.contains(name) || self.vars.borrow().done.contains_key(name) {
                continue;
            }
            match compiled(expr)
                .ok()
                .and_then(|c| variable_refs(c.program.expression()))
            {
                Some(Refs::Names(n)) => need.extend(n),
                Some(Refs::All) => need.extend(defs[..at].iter().map(|(n, _)| n.clone())),
                None => {}
            }
        }
        for (at, (name, expr)) in defs.iter().enumerate() {
            if !need.contains(name) || self.vars.borrow().done.contains_key(name) {
                continue;
            }
            // Its own variables are evaluated already: this does not recurse further. One
            // built on a failed variable fails with that variable's error.
            let failed_dep = compiled(expr)
                .ok()
                .and_then(|c| variable_refs(c.program.expression()))
                .and_then(|refs| {
                    let vars = self.vars.borrow();
                    vars.done.iter().find_map(|(n, r)| match (r, &refs) {
                        (Err(e), Refs::All) => Some(e.clone()),
                        (Err(e), Refs::Names(names)) if names.contains(n) => Some(e.clone()),
                        _ => None,
                    })
                });
            let result = match failed_dep {
                Some(e) => Err(e),
                None => {
                    let outer = self.vars.borrow_mut().within.replace(at);
                    let r = eval(self, expr);
                    self.vars.borrow_mut().within = outer;
                    r
                }
            };
            if let Ok(v) = &result {
                self.make(cost::shape_of(v).total)?;
                self.cel
                    .borrow_mut()
                    .add_variable_from_value(format!("variables.{name}"), v.clone());
                self.roots
                    .borrow_mut()
                    .insert(format!("variables.{name}"), v.clone());
            }
            self.vars.borrow_mut().done.insert(name.clone(), result);
        }
        if all {
            let vars = self.vars.borrow();
            let stale = vars.whole != Some(vars.done.len());
            drop(vars);
            if stale {
                self.bind_whole()?;
            }
        }
        let vars = self.vars.borrow();
        let names: Vec<&String> = match &wanted {
            Refs::Names(n) => n.iter().collect(),
            Refs::All => Vec::new(),
        };
        for name in names {
            if let Some(Err(e)) = vars.done.get(name) {
                return Err(e.within(format_args!("variable '{name}'")));
            }
        }
        Ok(())
    }

    /// Binds the map of every evaluated variable as `variables` (the interpreter copies
    /// it, so it is charged).
    fn bind_whole(&self) -> Result<(), EvalError> {
        let map: std::collections::HashMap<String, cel::Value> = self
            .vars
            .borrow()
            .done
            .iter()
            .filter_map(|(k, v)| v.as_ref().ok().map(|v| (k.clone(), v.clone())))
            .collect();
        let map = cel::Value::from(map);
        self.make(cost::shape_of(&map).total)?;
        self.cel
            .borrow_mut()
            .add_variable_from_value("variables", map.clone());
        self.roots.borrow_mut().insert("variables".into(), map);
        let mut vars = self.vars.borrow_mut();
        vars.whole = Some(vars.done.len());
        Ok(())
    }
}

/// Which `variables` an expression reads.
enum Refs {
    /// By name (`variables.NAME`).
    Names(std::collections::BTreeSet<String>),
    /// Every one (`variables[k]`, `has(variables.x)`, `variables` itself).
    All,
}

/// The variables `expr` reads; `None` when it reads none.
fn variable_refs(expr: &cel::IdedExpr) -> Option<Refs> {
    use cel::common::ast::{EntryExpr, Expr};
    fn is_variables(e: &cel::IdedExpr) -> bool {
        matches!(&e.expr, Expr::Ident(n) if n == "variables")
    }
    fn walk(e: &cel::IdedExpr, names: &mut std::collections::BTreeSet<String>, all: &mut bool) {
        match &e.expr {
            Expr::Ident(n) if n == "variables" => *all = true,
            Expr::Select(s) if is_variables(&s.operand) && !s.test => {
                names.insert(s.field.clone());
            }
            Expr::Select(s) => walk(&s.operand, names, all),
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    walk(t, names, all);
                }
                c.args.iter().for_each(|a| walk(a, names, all));
            }
            Expr::List(l) => l.elements.iter().for_each(|x| walk(x, names, all)),
            Expr::Map(m) => m.entries.iter().for_each(|en| match &en.expr {
                EntryExpr::MapEntry(me) => {
                    walk(&me.key, names, all);
                    walk(&me.value, names, all);
                }
                EntryExpr::StructField(f) => walk(&f.value, names, all),
            }),
            Expr::Struct(st) => st.entries.iter().for_each(|en| match &en.expr {
                EntryExpr::MapEntry(me) => {
                    walk(&me.key, names, all);
                    walk(&me.value, names, all);
                }
                EntryExpr::StructField(f) => walk(&f.value, names, all),
            }),
            Expr::Comprehension(c) => {
                for x in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    walk(x, names, all);
                }
            }
            _ => {}
        }
    }
    let (mut names, mut all) = (std::collections::BTreeSet::new(), false);
    walk(expr, &mut names, &mut all);
    if all {
        Some(Refs::All)
    } else if names.is_empty() {
        None
    } else {
        Some(Refs::Names(names))
    }
}

pub(super) fn base_context<'a>(req: &VapRequest, params: &Value) -> Scope<'a> {
    let mut ctx = Context::with_env(env().clone());
    register_functions(&mut ctx);
    let target = req;
    // A mutate-existing target is seen under its trigger's request.
    let req = req.trigger.as_deref().unwrap_or(req);
    let obj = if req.object.is_null() {
        &req.old_object
    } else {
        &req.object
    };
    let (group, version, resource, kind) = request_resource(req);
    let request = json!({
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "subResource": req.sub_resource,
        "requestKind": {"group": group, "version": version, "kind": kind},
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
        "options": null,
    });
    ctx.add_variable_from_value(
        "jsonpatch",
        to_cel(&json!({"kca.dev/jsonpatch-library": true})),
    );
    super::services::add_libraries(&mut ctx, req);
    if let Some(rbac) = &req.authorizer {
        super::authz::add_library(&mut ctx, req, rbac.clone());
    }
    let mut scope = Scope {
        cel: std::cell::RefCell::new(ctx),
        roots: Default::default(),
        spent: Default::default(),
        made: Default::default(),
        vars: Default::default(),
        unset: Default::default(),
        authorizer: req.authorizer.is_some(),
    };
    let (object, old_object) = (to_cel(&target.object), to_cel(&target.old_object));
    // Kyverno's request carries the objects too (`pkg/cel/compiler/request.go` adds
    // `object` and `oldObject` to the API server's request type); they are the same
    // values as the root variables, shared, not copies — the trigger's under a trigger.
    let mut request = match to_cel(&request) {
        cel::Value::Map(m) => (*m.map).clone(),
        _ => unreachable!("a JSON object is a CEL map"),
    };
    let (r_object, r_old) = if target.trigger.is_some() {
        (to_cel(&req.object), to_cel(&req.old_object))
    } else {
        (object.clone(), old_object.clone())
    };
    for (k, v) in [("object", &r_object), ("oldObject", &r_old)] {
        request.insert(cel::objects::Key::String(Arc::new(k.into())), v.clone());
    }
    scope.set_cel("object", object);
    scope.set_cel("oldObject", old_object);
    scope.set_cel(
        "request",
        cel::Value::Map(cel::objects::Map {
            map: Arc::new(request),
        }),
    );
    scope.set("params", params);
    scope.set("namespaceObject", &req.namespace_object);
    // What the matched CEL PolicyExceptions allow (`libs.Exception` in Kyverno's
    // `pkg/cel/libs/variables.go`), empty when none does.
    scope.set(
        "exceptions",
        &json!({
            "allowedImages": req.exceptions.images,
            "allowedValues": req.exceptions.values,
        }),
    );
    scope
}

/// The CEL environment: the standard library, its macros and optional values, and the
/// strings extension Kubernetes enables.
pub(super) fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Declaring well-known extensions on a fresh stdlib cannot conflict. Kyverno's
        // environment has the lists and math extensions besides the strings one
        // (`pkg/cel/compiler/env.go`), and Kubernetes' and Kyverno's libraries.
        for ext in [
            cel::extensions::strings,
            cel::extensions::lists,
            cel::extensions::math,
            super::libs::extension,
            super::codecs::extension,
            super::image::extension,
        ] {
            env.add_extension(ext)
                .expect("extensions on a fresh environment");
        }
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

/// One expression on `req` alone, for tests of the libraries.
#[cfg(test)]
pub(super) fn eval_for_test(req: &VapRequest, expr: &str) -> Result<cel::Value, String> {
    let scope = base_context(req, &Value::Null);
    eval(&scope, expr).map_err(|e| format!("{e:?}"))
}

/// Compiles and runs one expression, after the variables it uses. Compile failures, the
/// `authorizer` and calls the interpreter does not know are `unsupported`.
pub(super) fn eval(scope: &Scope<'_>, expr: &str) -> Result<cel::Value, EvalError> {
    if !scope.authorizer && mentions(expr, "authorizer") {
        return Err(EvalError::unsupported(Unsupported::Authorizer));
    }
    let compiled = compiled(expr)?;
    super::shape::for_depth(compiled.depth, || run(scope, &compiled))
}

fn run(scope: &Scope<'_>, compiled: &Compiled) -> Result<cel::Value, EvalError> {
    scope.resolve_variables(compiled.program.expression())?;
    // The interpreter cannot be stopped part-way: an expression whose cost on these
    // values would pass the limits is refused before it runs.
    let (cost, shape) = {
        let roots = scope.roots.borrow();
        cost::estimate(compiled.program.expression(), &cost::Inputs::Eval(&roots))
    };
    if cost > cost::PER_CALL_LIMIT {
        return Err(EvalError::failed(cost::ACTUAL_LIMIT_EXCEEDED));
    }
    scope.spent.set(scope.spent.get() + cost);
    if scope.spent.get() > cost::RUNTIME_BUDGET {
        return Err(EvalError::failed(cost::OUT_OF_BUDGET));
    }
    // What the interpreter makes of the result (it copies the value it returns).
    scope.make(shape.total)?;
    let ctx = scope.cel.borrow();
    compiled.program.execute(&ctx).map_err(|e| match &e {
        // Declared in the policy's environment, absent from the activation: cel-go's
        // attribute resolution fails (`interpreter/attributes.go` `missingAttribute`).
        ExecutionError::UndeclaredReference(name)
            if scope.unset.borrow().contains(name.as_str()) =>
        {
            EvalError::failed(format!("no such attribute(s): {name}"))
        }
        _ => classify(e),
    })
}

/// An interpreter error as Kyverno would see it: what cel-go reports too is an error of
/// the policy; what only this interpreter lacks is `unsupported`.
fn classify(e: ExecutionError) -> EvalError {
    match &e {
        ExecutionError::FunctionError { function, message }
            if function == super::services::NEEDS_NETWORK =>
        {
            EvalError::unsupported(Unsupported::Network(message.clone()))
        }
        ExecutionError::FunctionError { function, message }
            if function == super::services::NEEDS_REGISTRY =>
        {
            EvalError::unsupported(Unsupported::Registry(message.clone()))
        }
        ExecutionError::FunctionError { function, message }
            if function == super::services::NEEDS_DATA =>
        {
            EvalError::unsupported(Unsupported::Library(message.clone()))
        }
        ExecutionError::NoSuchOverload(o) if super::libs::cel_go_has_none(o) => {
            EvalError::failed(e.to_string())
        }
        ExecutionError::UndeclaredReference(_)
        | ExecutionError::NoSuchOverload(_)
        | ExecutionError::NotSupportedAsMethod { .. } => {
            EvalError::unsupported(Unsupported::Interpreter(e.to_string()))
        }
        // cel-go's own words for what both interpreters refuse (`common/types/err.go`).
        ExecutionError::DivisionByZero(_) => EvalError::failed("division by zero"),
        ExecutionError::RemainderByZero(_) => EvalError::failed("modulus by zero"),
        ExecutionError::Overflow(_, cel::Value::UInt(_), _) => {
            EvalError::failed("unsigned integer overflow")
        }
        ExecutionError::Overflow(..) => EvalError::failed("integer overflow"),
        // A map without the key selected (`common/types/map.go` `baseMap.Get`).
        ExecutionError::NoSuchKey(k) => EvalError::failed(format!("no such key: {k}")),
        _ => EvalError::failed(e.to_string()),
    }
}

/// A compiled expression (its syntax tree is what the cost estimate walks).
pub(super) struct Compiled {
    pub(super) program: Program,
    /// Its nesting estimate (`shape`): a deep one is evaluated on a stack of its own.
    pub(super) depth: usize,
}

/// Compiles `expr` once per thread: a corpus run evaluates the same few hundred
/// expressions on thousands of objects, and parsing them again took a third of it.
/// An expression past kca's bounds (`shape`) is an error, one the interpreter cannot
/// parse is unsupported.
pub(super) fn compiled(expr: &str) -> Result<std::rc::Rc<Compiled>, EvalError> {
    thread_local! {
        static PROGRAMS: std::cell::RefCell<std::collections::HashMap<String, std::rc::Rc<Compiled>>> =
            Default::default();
    }
    if let Some(p) = PROGRAMS.with_borrow(|m| m.get(expr).cloned()) {
        return Ok(p);
    }
    let depth = super::shape::check(expr).map_err(|e| EvalError::failed(e.to_string()))?;
    // Mutation literals (`Object{…}`, `JSONPatch{…}`) are read as maps.
    let source = if expr.contains("Object") || expr.contains("JSONPatch") {
        super::literal::rewrite_typed_literals(expr)
    } else {
        expr.to_string()
    };
    let program = super::shape::on_parse_stack(|| env().compile(&source))
        .map_err(|e| EvalError::unsupported(Unsupported::Compile(e.to_string())))?;
    let compiled = std::rc::Rc::new(Compiled { program, depth });
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
                let (cost, shape) = super::shape::for_depth(compiled.depth, || {
                    cost::estimate(compiled.program.expression(), &cost::Inputs::Load(&shapes))
                });
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
