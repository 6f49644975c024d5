//! Rendering starter templates (tera), bounded. A template sees only what kca gives it
//! (`workspace`, `lab_dir`, `lab` and the lab's `vars`), never the environment, and its
//! rendering is bounded in loop iterations, memory, output size and time, so `kca
//! validate` and `lab start` finish on any lab without exhausting the machine. Loops and
//! memory are bounded before rendering, from the template's syntax tree ([`bound`]); the
//! output is capped while it is written; a timer bounds the rest. What a template may use
//! is documented for instructors in `labs/README.md`.

mod bound;
mod filters;
mod locate;
#[cfg(test)]
mod memory_tests;
mod val;

use std::collections::HashMap;
use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use tera::{Context, Tera, Value};

pub use bound::MAX_MEMORY;

/// A template's loops may run this many times in all (nested loops multiply).
pub const MAX_ITERATIONS: u64 = 100_000;
/// `range(...)` may produce at most this many numbers.
pub const MAX_RANGE: i64 = 10_000;
/// Rendered text larger than this is refused.
pub const MAX_OUTPUT: usize = 1 << 20;
/// A template's text may be at most this long (parsing takes memory in proportion).
pub const MAX_TEMPLATE: usize = 256 << 10;
/// Rendering taking longer than this is abandoned.
pub const TIME_LIMIT: Duration = Duration::from_secs(2);

const NO_ENV: &str = "`get_env` is not available: templates see only `workspace`, `lab_dir`, \
                      `lab` and the lab's `vars`";
const NO_RANDOM: &str = "`get_random` is not available: a starter renders the same every time";

/// Renders `text` with `ctx`, or says why it cannot (a message for a diagnostic, which
/// starts with the line and column of the tag at fault when kca can tell).
pub fn render(text: &str, ctx: &Context) -> Result<String, String> {
    let template = parse(text)?;
    bound::analyse(text, &template.ast, ctx)?;
    let mut tera = Tera::default();
    tera.register_function("get_env", |_: &HashMap<String, Value>| {
        Err(tera::Error::msg(NO_ENV))
    });
    tera.register_function("get_random", |_: &HashMap<String, Value>| {
        Err(tera::Error::msg(NO_RANDOM))
    });
    tera.register_function("range", bounded_range);
    tera.register_tester("matching", bounded_matching);
    // The template parsed for the analysis is the one rendered (not parsed again).
    tera.templates.insert(template.name.clone(), template);
    tera.build_inheritance_chains()
        .and_then(|()| tera.check_macro_files())
        .map_err(|e| chain(&e))?;
    let ctx = ctx.clone();
    let (tx, rx) = mpsc::channel();
    // A thread, so that a runaway template can be given up on; kca exits soon after.
    std::thread::Builder::new()
        .name("kca-template".into())
        .stack_size(8 << 20)
        .spawn(move || {
            let mut out = Capped::default();
            let r = tera.render_to("starter", &ctx, &mut out);
            let _ = tx.send(match r {
                _ if out.over => Err(too_long()),
                Ok(()) => String::from_utf8(out.buf).map_err(|e| e.to_string()),
                Err(e) => Err(chain(&e)),
            });
        })
        .map_err(|e| format!("cannot start rendering: {e}"))?;
    match rx.recv_timeout(TIME_LIMIT) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "rendering did not finish within {} s",
            TIME_LIMIT.as_secs()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err("rendering stopped: tera failed inside (its message is printed above)".into())
        }
    }
}

/// The most memory rendering `text` with `ctx` can take beyond parsing it (see [`bound`]),
/// or why it is refused.
pub fn memory_bound(text: &str, ctx: &Context) -> Result<u64, String> {
    let template = parse(text)?;
    bound::analyse(text, &template.ast, ctx).map(|b| b.memory)
}

fn parse(text: &str) -> Result<tera::Template, String> {
    if text.len() > MAX_TEMPLATE {
        return Err(format!(
            "the template is {} KiB; a template may be at most {} KiB (split the text into \
             several files, or drop `template: true` where no variable is needed)",
            text.len().div_ceil(1024),
            MAX_TEMPLATE >> 10
        ));
    }
    locate::check_nesting(text)?;
    tera::Template::new("starter", None, text).map_err(|e| chain(&e))
}

fn too_long() -> String {
    format!("renders to more than {} MiB of text", MAX_OUTPUT >> 20)
}

/// The rendered text, refused once it would pass [`MAX_OUTPUT`].
#[derive(Default)]
struct Capped {
    buf: Vec<u8>,
    over: bool,
}

impl Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len() + b.len() > MAX_OUTPUT {
            self.over = true;
            return Err(std::io::Error::other(too_long()));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = crate::content::lab::error_chain(e);
    // An error message may quote a (large) value; the start says what went wrong.
    if msg.len() > 2000 {
        let cut = (0..=2000)
            .rev()
            .find(|&i| msg.is_char_boundary(i))
            .unwrap_or(0);
        msg.truncate(cut);
        msg.push_str(" …");
    }
    msg
}

fn loop_error(n: u64) -> String {
    format!("its loops may run {n} times; a template may loop at most {MAX_ITERATIONS} times")
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

/// tera's `is matching(pattern)`, with the regular expression's size limited so that it
/// stays within [`bound::REGEX_MEMORY`].
fn bounded_matching(value: Option<&Value>, args: &[Value]) -> tera::Result<bool> {
    let (Some(Value::String(s)), [Value::String(pattern)]) = (value, args) else {
        return Err(tera::Error::msg(
            "`matching` tests a string against one pattern: `x is matching(\"^a\")`",
        ));
    };
    let limit = (bound::REGEX_MEMORY / 4) as usize;
    let re = regex::RegexBuilder::new(pattern)
        .size_limit(limit)
        .dfa_size_limit(limit)
        .build()
        .map_err(|e| tera::Error::msg(format!("`matching`: invalid regular expression: {e}")))?;
    Ok(re.is_match(s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// What kca gives a starter (and one lab variable, a list).
    pub(super) fn ctx() -> Context {
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
