//! Rendering starter templates (tera), bounded. A template sees only what kca gives it
//! (`workspace`, `lab_dir`, `lab` and the lab's `vars`), never the environment, and its
//! rendering is bounded in loop iterations, output size and time, so `kca validate` and
//! `lab start` finish on any lab. What a template may use is documented for instructors
//! in `labs/README.md`.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::Duration;

use tera::ast::{Expr, ExprVal, Node};
use tera::{Context, Tera, Value};

/// A template's loops may run this many times in all (nested loops multiply).
pub const MAX_ITERATIONS: u64 = 100_000;
/// `range(...)` may produce at most this many numbers.
pub const MAX_RANGE: i64 = 10_000;
/// Rendered text larger than this is refused.
pub const MAX_OUTPUT: usize = 1 << 20;
/// Rendering taking longer than this is abandoned.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);

/// Renders `text` with `ctx`, or says why it cannot (a message for a diagnostic).
pub fn render(text: &str, ctx: &Context) -> Result<String, String> {
    let template = tera::Template::new("starter", None, text).map_err(|e| chain(&e))?;
    check(&template.ast, ctx)?;
    let mut tera = Tera::default();
    tera.register_function("get_env", |_: &HashMap<String, Value>| {
        Err(tera::Error::msg(
            "`get_env` is not available: templates see only `workspace`, `lab_dir`, `lab` \
             and the lab's `vars`",
        ))
    });
    tera.register_function("get_random", |_: &HashMap<String, Value>| {
        Err(tera::Error::msg(
            "`get_random` is not available: a starter renders the same every time",
        ))
    });
    tera.register_function("range", bounded_range);
    tera.add_raw_template("starter", text)
        .map_err(|e| chain(&e))?;
    let ctx = ctx.clone();
    let (tx, rx) = mpsc::channel();
    // A thread, so that a runaway template can be given up on; kca exits soon after.
    std::thread::Builder::new()
        .name("kca-template".into())
        .spawn(move || {
            let _ = tx.send(tera.render("starter", &ctx).map_err(|e| chain(&e)));
        })
        .map_err(|e| format!("cannot start rendering: {e}"))?;
    let out = match rx.recv_timeout(TIME_LIMIT) {
        Ok(r) => r?,
        Err(_) => {
            return Err(format!(
                "rendering did not finish within {} s",
                TIME_LIMIT.as_secs()
            ));
        }
    };
    if out.len() > MAX_OUTPUT {
        return Err(format!(
            "renders to more than {} MiB of text",
            MAX_OUTPUT >> 20
        ));
    }
    Ok(out)
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    crate::content::lab::error_chain(e)
}

/// tera's `range(start=0, end, step_by=1)`, limited to [`MAX_RANGE`] numbers.
fn bounded_range(args: &HashMap<String, Value>) -> tera::Result<Value> {
    let int = |name: &str, default: Option<i64>| -> tera::Result<i64> {
        match args.get(name) {
            Some(v) => v
                .as_i64()
                .ok_or_else(|| tera::Error::msg(format!("`range`: `{name}` must be an integer"))),
            None => default
                .ok_or_else(|| tera::Error::msg(format!("`range` needs an `{name}` argument"))),
        }
    };
    let (start, end, step) = (
        int("start", Some(0))?,
        int("end", None)?,
        int("step_by", Some(1))?,
    );
    if step <= 0 {
        return Err(tera::Error::msg("`range`: `step_by` must be positive"));
    }
    let count = if end > start {
        (end - start + step - 1) / step
    } else {
        0
    };
    if count > MAX_RANGE {
        return Err(tera::Error::msg(format!(
            "`range` would produce {count} numbers; a template may use at most {MAX_RANGE}"
        )));
    }
    Ok(Value::Array(
        (0..count).map(|i| Value::from(start + i * step)).collect(),
    ))
}

/// Refuses what a starter does not need and what could run away: `set_global`, macros,
/// `include`/`import`/`extends`, and loops that may run more than [`MAX_ITERATIONS`]
/// times in all.
fn check(ast: &[Node], ctx: &Context) -> Result<(), String> {
    let budget = walk(ast, ctx, 1)?;
    if budget > MAX_ITERATIONS {
        return Err(loop_error(budget));
    }
    Ok(())
}

fn loop_error(n: u64) -> String {
    format!("its loops may run {n} times; a template may loop at most {MAX_ITERATIONS} times")
}

/// The most iterations the nodes can run, given they run `outer` times.
fn walk(nodes: &[Node], ctx: &Context, outer: u64) -> Result<u64, String> {
    let mut total = outer;
    for node in nodes {
        let n = match node {
            Node::MacroDefinition(..) => return Err("macros are not available in starters".into()),
            Node::Extends(..) | Node::Include(..) | Node::ImportMacro(..) => {
                return Err(
                    "`extends`, `include` and `import` are not available in starters".into(),
                );
            }
            Node::Set(_, set) if set.global => {
                return Err("`set_global` is not available in starters; use `set`".into());
            }
            Node::Forloop(_, f, _) => {
                let times = outer.saturating_mul(loop_bound(&f.container, ctx));
                if times > MAX_ITERATIONS {
                    return Err(loop_error(times));
                }
                let body = walk(&f.body, ctx, times)?;
                let empty = match &f.empty_body {
                    Some(b) => walk(b, ctx, outer)?,
                    None => 0,
                };
                body.saturating_add(empty)
            }
            Node::If(i, _) => {
                let mut n = 0u64;
                for (_, _, body) in &i.conditions {
                    n = n.saturating_add(walk(body, ctx, outer)?);
                }
                if let Some((_, body)) = &i.otherwise {
                    n = n.saturating_add(walk(body, ctx, outer)?);
                }
                n
            }
            Node::FilterSection(_, f, _) => walk(&f.body, ctx, outer)?,
            Node::Block(_, b, _) => walk(&b.body, ctx, outer)?,
            _ => 0,
        };
        total = total.saturating_add(n);
        if total > MAX_ITERATIONS {
            return Err(loop_error(total));
        }
    }
    Ok(total)
}

/// How many times a loop over `container` can run at most.
fn loop_bound(container: &Expr, ctx: &Context) -> u64 {
    match &container.val {
        ExprVal::FunctionCall(call) if call.name == "range" => {
            let lit = |k: &str| match call.args.get(k).map(|e| &e.val) {
                Some(ExprVal::Int(i)) => Some(*i),
                _ => None,
            };
            match (
                lit("start").or(Some(0)),
                lit("end"),
                lit("step_by").or(Some(1)),
            ) {
                (Some(s), Some(e), Some(st)) if st > 0 => {
                    ((e.saturating_sub(s)).max(0) as u64).div_ceil(st as u64)
                }
                _ => MAX_RANGE as u64,
            }
        }
        ExprVal::Array(items) => items.len() as u64,
        // A variable kca provides: as many items as it holds (the context is small).
        ExprVal::Ident(name) => ctx
            .get(name.split('.').next().unwrap_or(name))
            .map_or(MAX_RANGE as u64, |v| count_values(v).max(1)),
        _ => MAX_RANGE as u64,
    }
}

fn count_values(v: &Value) -> u64 {
    match v {
        Value::Array(a) => a.iter().map(count_values).sum::<u64>() + 1,
        Value::Object(m) => m.values().map(count_values).sum::<u64>() + 1,
        Value::String(s) => s.len() as u64 + 1,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn ctx() -> Context {
        let mut c = Context::new();
        c.insert("workspace", "/root/kca-demo");
        c.insert("lab_dir", "/course/labs/kca-demo");
        c.insert("lab", "kca-demo");
        c.insert("namespace", "demo");
        c.insert("teams", &["a", "b"]);
        c
    }

    #[test]
    fn what_a_starter_template_can_do() {
        let text = "# {{ lab | upper }} in {{ namespace }}\n\
            {% if namespace == \"demo\" %}demo{% else %}other{% endif %}\n\
            {% for t in teams %}- {{ t }}{% if not loop.last %},{% endif %}{% endfor %}\n\
            {% for i in range(end=3) %}{{ i }}{% endfor %}\n\
            {% set ns = namespace ~ \"-x\" %}{{ ns | replace(from=\"-\", to=\"_\") }}\n\
            {{ workspace }} {{ lab_dir | split(pat=\"/\") | last }}\n\
            {% raw %}{{ request.object.metadata.name }}{% endraw %}\n\
            {{ teams | join(sep=\"+\") }} {{ teams | length }} {{ missing | default(value=\"d\") }} \
            {{ \" x \" | trim }}{# a comment #} {{ teams | first | lower }}\n\
            {% for i in range(start=2, end=9, step_by=3) %}{{ i }}{% endfor %}";
        assert_eq!(
            render(text, &ctx()).unwrap(),
            "# KCA-DEMO in demo\ndemo\n- a,- b\n012\ndemo_x\n/root/kca-demo kca-demo\n\
             {{ request.object.metadata.name }}\na+b 2 d x a\n258"
        );
    }

    #[test]
    fn templates_cannot_read_the_environment() {
        let e = render("{{ get_env(name=\"HOME\") }}", &ctx()).unwrap_err();
        assert!(e.contains("`get_env` is not available"), "{e}");
        let e = render("{{ get_env(name=\"NOPE\", default=\"x\") }}", &ctx()).unwrap_err();
        assert!(e.contains("not available"), "{e}");
    }

    #[test]
    fn runaway_templates_are_refused_quickly() {
        let start = Instant::now();
        let cases = [
            "{% for i in range(end=300000000) %}x{% endfor %}",
            "{% set r = range(end=300000000) %}{{ r | length }}",
            "{% for a in range(end=10000) %}{% for b in range(end=10000) %}x{% endfor %}{% endfor %}",
            "{% set r = range(end=5000) %}{% for a in r %}{% for b in r %}{% for c in r %}x{% endfor %}{% endfor %}{% endfor %}",
            "{% for i in range(end=40) %}{% set_global s = s ~ s %}{% endfor %}",
            "{% macro f(n) %}{{ self::f(n=n) }}{% endmacro f %}{{ self::f(n=1) }}",
            "{% include \"other\" %}",
        ];
        for text in cases {
            assert!(render(text, &ctx()).is_err(), "{text}");
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }
}
