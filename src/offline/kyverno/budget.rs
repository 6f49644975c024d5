//! Bounds on JMESPath evaluation, so a policy (a learner's, a test's) cannot exhaust the
//! stack, the memory or the clock: an expression's size and nesting are checked before
//! it is parsed (the parser and the evaluator recurse once per level), and what Kyverno's
//! functions produce during one query is counted against a budget, as is every value
//! kca's interpreter makes (`super::interp`). go-jmespath has no
//! such limits; these are kca's, set far above what real policies use.

use std::cell::Cell;

use jmespath::Variable;

/// Longest expression accepted, in bytes.
pub const MAX_EXPRESSION_BYTES: usize = 16 * 1024;
/// Deepest nesting accepted: brackets plus chained operators (`.`, `|`, `||`, `&&`, `!`,
/// comparisons), which the parser nests one level each.
pub const MAX_NESTING: usize = 128;
/// Bytes (strings) and values (list and map entries) the functions of one query may
/// produce.
pub const MAX_PRODUCED: usize = 4 * 1024 * 1024;

thread_local! {
    static PRODUCED: Cell<usize> = const { Cell::new(0) };
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// An expression or a query beyond kca's bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("the expression is {0} bytes long; kca evaluates at most {MAX_EXPRESSION_BYTES}")]
    TooLong(usize),
    #[error("the expression nests {0} levels deep; kca evaluates at most {MAX_NESTING}")]
    TooDeep(usize),
    #[error("the expression produced more than {} MiB; kca stops it there", MAX_PRODUCED / (1024 * 1024))]
    Spent,
}

/// Refuses an expression too long or too deeply nested to evaluate safely.
pub fn check_shape(expr: &str) -> Result<(), BudgetError> {
    if expr.len() > MAX_EXPRESSION_BYTES {
        return Err(BudgetError::TooLong(expr.len()));
    }
    let depth = nesting(expr);
    if depth > MAX_NESTING {
        return Err(BudgetError::TooDeep(depth));
    }
    Ok(())
}

/// An upper estimate of the parse tree's depth: open brackets, plus the chained
/// operators since the last `,` at each open level. Literals are skipped.
fn nesting(expr: &str) -> usize {
    let b = expr.as_bytes();
    // Chained operators per open bracket level.
    let mut levels: Vec<usize> = vec![0];
    // Their sum, kept as they change (a recount per character is quadratic).
    let mut chained = 0usize;
    let mut max = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'`' | b'"' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => levels.push(0),
            b')' | b']' | b'}' if levels.len() > 1 => {
                chained -= levels.pop().expect("more than one");
            }
            b',' => chained -= std::mem::take(levels.last_mut().expect("never empty")),
            b'.' | b'|' | b'&' | b'!' | b'<' | b'>' | b'=' => {
                *levels.last_mut().expect("never empty") += 1;
                chained += 1;
            }
            _ => {}
        }
        max = max.max(levels.len() - 1 + chained);
        i += 1;
    }
    max
}

/// Runs one top-level query with a fresh production budget (nested queries share it).
pub fn scoped<T>(f: impl FnOnce() -> T) -> T {
    let outer = DEPTH.get();
    if outer == 0 {
        PRODUCED.set(0);
    }
    DEPTH.set(outer + 1);
    let out = f();
    DEPTH.set(outer);
    out
}

/// Counts `n` units of work or of values made; `Err` once the query's budget is spent.
pub fn spend(n: usize) -> Result<(), BudgetError> {
    let spent = PRODUCED.get().saturating_add(n);
    PRODUCED.set(spent);
    if spent > MAX_PRODUCED {
        return Err(BudgetError::Spent);
    }
    Ok(())
}

/// What is left of the query's budget.
pub fn remaining() -> usize {
    MAX_PRODUCED.saturating_sub(PRODUCED.get())
}

/// Counts what a function produced; `Err` once the query's budget is spent.
pub fn charge(value: &Variable) -> Result<(), BudgetError> {
    let spent = PRODUCED.get().saturating_add(size(value, MAX_PRODUCED + 1));
    PRODUCED.set(spent);
    if spent > MAX_PRODUCED {
        return Err(BudgetError::Spent);
    }
    Ok(())
}

/// Bytes of strings plus entries of lists and maps, counted up to `limit`.
pub fn size(value: &Variable, limit: usize) -> usize {
    let mut total = 0usize;
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(match v {
            Variable::String(s) => s.len(),
            Variable::Array(items) => {
                stack.extend(items.iter().map(|i| &**i));
                items.len()
            }
            Variable::Object(m) => {
                stack.extend(m.values().map(|i| &**i));
                m.keys().map(|k| k.len() + 1).sum()
            }
            _ => 1,
        });
        if total > limit {
            break;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offline::kyverno::{Context, vars};
    use serde_json::json;

    #[test]
    fn deeply_nested_parentheses_are_refused_not_a_stack_overflow() {
        // 20,000 levels overflowed the stack (exit 134) before the bound.
        let expr = format!("{}a{}", "(".repeat(20_000), ")".repeat(20_000));
        let c = Context::from_document(json!({"a": 1}));
        let err = vars::query(&expr, &c).unwrap_err().to_string();
        assert!(err.contains("kca evaluates at most"), "{err}");
        let chained = format!("a{}", " || a".repeat(1_000));
        let err = vars::query(&chained, &c).unwrap_err().to_string();
        assert!(err.contains("levels deep"), "{err}");
    }

    #[test]
    fn nested_replace_all_stops_at_the_budget() {
        // Each level doubles the string: 28 levels took 3.4 s and 794 MB before.
        let mut expr = "a".to_string();
        for _ in 0..28 {
            expr = format!("replace_all({expr}, 'x', 'xx')");
        }
        let c = Context::from_document(json!({"a": "x"}));
        let err = vars::query(&expr, &c).unwrap_err().to_string();
        assert!(err.contains("produced more than 4 MiB"), "{err}");
        // Stopped at the level that went over, not at the end: the work counted is past
        // the budget by at most what that level made (twice the level before it), far
        // from the 2^28 bytes all levels make. Counted work, not the clock (a loaded
        // machine made a time bound flaky).
        let spent = PRODUCED.get();
        assert!(
            spent > MAX_PRODUCED && spent <= 3 * MAX_PRODUCED,
            "{spent} counted against {MAX_PRODUCED}"
        );
        // A normal query afterwards has its own budget.
        assert_eq!(
            vars::query("replace_all(a, 'x', 'y')", &c).unwrap(),
            json!("y")
        );
    }

    #[test]
    fn shared_results_are_measured_before_they_are_copied() {
        let expr = format!("a{}", " | [@, @]".repeat(60));
        let c = Context::from_document(json!({"a": "x"}));
        let err = vars::query(&expr, &c).unwrap_err().to_string();
        assert!(err.contains("larger than"), "{err}");
    }

    #[test]
    fn nesting_counts_brackets_and_chains_but_not_literals_or_siblings() {
        assert_eq!(nesting("a"), 0);
        assert_eq!(nesting("a.b.c"), 2);
        assert_eq!(nesting("((a))"), 2);
        assert_eq!(nesting("{x: a.b, y: c.d}"), 2);
        assert_eq!(nesting("'((((('"), 0);
        assert_eq!(
            nesting(&format!("{}a{}", "(".repeat(500), ")".repeat(500))),
            500
        );
    }

    /// `request.object | [@, @] | …` n times: 2^n copies of the object, shared.
    fn doubled(n: usize) -> String {
        format!("request.object{}", " | [@, @]".repeat(n))
    }

    #[test]
    fn builtins_projections_and_comparisons_on_shared_values_stop_at_the_budget() {
        // Each ran outside the budget: `to_string` of 30 doublings aborted at 1.6 GB,
        // `(E) == (E)` with 34 ran past a minute.
        let c = Context::from_document(
            json!({"request": {"object": {"metadata": {"name": "x", "labels": {"a": "b"}}}}}),
        );
        let cases = [
            format!("length(to_string({}))", doubled(30)),
            format!("({}) == ({})", doubled(34), doubled(34)),
            format!("({}) != ({})", doubled(34), doubled(34)),
            format!("length({}{})", doubled(30), "[]".repeat(30)),
            format!(
                "length(({})[*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*])",
                doubled(24)
            ),
            format!("length(map(&to_string(@), {}))", doubled(30)),
            format!(
                "length(sort_by({}[][][][][][][][][][][][][][][][][][][][], &metadata.name))",
                doubled(24)
            ),
            format!("contains({}, `1`)", doubled(30)),
            format!(
                "length(join(',', {}[][][][][][][][][][][][][][][][][][][][][][][][].metadata.name))",
                doubled(24)
            ),
        ];
        for expr in cases {
            // A debug build on a busy machine: the release build takes a tenth.
            let started = std::time::Instant::now();
            let err = vars::query(&expr, &c).unwrap_err().to_string();
            assert!(err.contains("kca stops it there"), "{expr}: {err}");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(30),
                "{expr}: {:?}",
                started.elapsed()
            );
        }
        // Ordinary queries give what they gave.
        assert_eq!(
            vars::query("to_string(request.object.metadata.labels)", &c).unwrap(),
            json!("{\"a\":\"b\"}")
        );
        assert_eq!(
            vars::query(&format!("({}) == ({})", doubled(3), doubled(3)), &c).unwrap(),
            json!(true)
        );
        assert_eq!(
            vars::query("sort_by([{n: 'b'}, {n: 'a'}], &n)[].n", &c).unwrap(),
            json!(["a", "b"])
        );
        assert_eq!(
            vars::query("max_by([{n: `2`}, {n: `5`}], &n).n", &c).unwrap(),
            json!(5)
        );
        assert_eq!(
            vars::query("map(&length(@), ['ab', 'c'])", &c).unwrap(),
            json!([2, 1])
        );
    }
}
