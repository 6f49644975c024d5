//! Bounds on a CEL expression's size and nesting, checked before it is parsed: the
//! interpreter's parser (ANTLR, recursive descent) recurses several frames per nested
//! bracket and per chained operator, and a few hundred levels overflowed the stack
//! (an abort, no verdict) before its own depth limit was reached. cel-go refuses an
//! expression past 100,000 code points (`expressionSizeCodePointLimit`) and past a
//! recursion depth (`maxRecursionDepth`, `parser/options.go`); kca keeps the first and
//! counts the second as brackets plus chained operators, an upper estimate, set far above
//! what real policies use. Parsing also runs on a stack of its own ([`PARSE_STACK`]), so
//! an expression within the bounds parses on any thread.

/// Most code points an expression may have (cel-go's default `expressionSizeCodePointLimit`).
pub(super) const MAX_CODE_POINTS: usize = 100_000;
/// Deepest nesting accepted: open brackets plus the chained operators since the last
/// `,` at each open level.
pub(super) const MAX_NESTING: usize = 250;
/// The stack the parser runs on, and the evaluation of a deep expression: a bounded
/// expression needs far less, even unoptimised.
pub(super) const PARSE_STACK: usize = 64 << 20;
/// Nesting past which an expression is evaluated on a stack of its own: the interpreter
/// recurses once per level of its tree, some 35 KiB a level unoptimised, and checks run on
/// worker threads of 2 MiB.
const SHALLOW: usize = 32;

/// Why an expression is not parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ShapeError {
    #[error(
        "expression code point size exceeds limit: size: {0}, limit {MAX_CODE_POINTS}; kca \
         stops it there"
    )]
    TooLong(usize),
    #[error("the expression nests {0} levels deep; kca parses at most {MAX_NESTING}")]
    TooDeep(usize),
}

/// Refuses an expression too long or too deeply nested to parse safely; `Ok` is its
/// nesting estimate.
pub(super) fn check(expr: &str) -> Result<usize, ShapeError> {
    let points = expr.chars().count();
    if points > MAX_CODE_POINTS {
        return Err(ShapeError::TooLong(points));
    }
    let depth = nesting(expr);
    if depth > MAX_NESTING {
        return Err(ShapeError::TooDeep(depth));
    }
    Ok(depth)
}

/// Runs `parse` on a stack of [`PARSE_STACK`] bytes.
pub(super) fn on_parse_stack<T>(parse: impl FnOnce() -> T) -> T {
    stacker::grow(PARSE_STACK, parse)
}

/// Runs `f` (the evaluation of an expression nesting `depth` levels) on a stack of its
/// own when it is deep, on the caller's otherwise.
pub(super) fn for_depth<T>(depth: usize, f: impl FnOnce() -> T) -> T {
    if depth > SHALLOW {
        stacker::grow(PARSE_STACK, f)
    } else {
        f()
    }
}

/// An upper estimate of the parse tree's depth: open brackets, plus the operator
/// characters since the last `,` at each open level. String literals are skipped.
fn nesting(expr: &str) -> usize {
    let b = expr.as_bytes();
    // Operator characters per open level, and their sum (kept, not recomputed: a
    // recount per character made 40,000 brackets take 30 s).
    let mut levels: Vec<usize> = vec![0];
    let mut chained = 0usize;
    let mut max = 0;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                // '…', "…" and the triple-quoted '''…''' / """…""".
                let triple = b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    let closes = !triple || (b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c));
                    if b[i] == c && closes {
                        i += if triple { 2 } else { 0 };
                        break;
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => levels.push(0),
            b')' | b']' | b'}' if levels.len() > 1 => {
                chained -= levels.pop().expect("more than one");
            }
            b',' => {
                chained -= std::mem::take(levels.last_mut().expect("never empty"));
            }
            b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'!' | b'<' | b'>' | b'=' | b'&' | b'|'
            | b'?' => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_brackets_and_chains_but_not_literals_or_siblings() {
        assert_eq!(nesting("a"), 0);
        assert_eq!(nesting("((a))"), 2);
        assert_eq!(nesting("a.b.c"), 2);
        assert_eq!(nesting("f(a.b, c.d)"), 2);
        assert_eq!(nesting("'((((.....' + \"))\""), 1);
        assert_eq!(nesting("'''a'b'' ((('''"), 0);
        assert_eq!(nesting(r"'\'(((' == x"), 2);
    }

    #[test]
    fn long_and_deep_expressions_are_refused_real_ones_are_not() {
        let deep = format!("{}1{} == 1", "(".repeat(300), ")".repeat(300));
        assert!(matches!(check(&deep), Err(ShapeError::TooDeep(_))));
        let chain = format!("{}1 > 0", "1 + ".repeat(300));
        assert!(matches!(check(&chain), Err(ShapeError::TooDeep(_))));
        let long = "x".repeat(MAX_CODE_POINTS + 1);
        assert_eq!(check(&long), Err(ShapeError::TooLong(MAX_CODE_POINTS + 1)));
        let real = "object.spec.containers.all(c, has(c.securityContext) && \
                    c.securityContext.runAsNonRoot == true && c.image.startsWith('r/'))";
        assert!(check(real).is_ok_and(|d| d < SHALLOW));
    }
}
