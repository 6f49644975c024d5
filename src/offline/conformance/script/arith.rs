//! Shell arithmetic (`$((…))`) as bash evaluates it (bash manual, "Shell Arithmetic"):
//! 64-bit integers that wrap, decimal/`0x`/octal constants, variables named with or
//! without `$` (an unset or empty one is 0; a value is read as an integer), the unary
//! `+ - ! ~`, `* / %`, `+ -`, `<< >>`, comparisons, `== !=`, `& ^ |`, `&& ||`, `?:`,
//! parentheses, and the assignments `= += -= *= /= %=` and `++`/`--`. The `$`
//! expansions inside are done before ([`super::exec`]). Division by zero or anything
//! else outside this subset is an error the caller turns into a skip.

use std::collections::BTreeMap;

/// Deepest nesting of parentheses and operators.
const MAX_DEPTH: usize = 64;
/// Longest expression read.
const MAX_LEN: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

/// Operators, longest first.
const OPS: &[&str] = &[
    "<<=", ">>=", "++", "--", "**", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
    "*=", "/=", "%=", "&=", "|=", "^=", "+", "-", "*", "/", "%", "<", ">", "!", "~", "&", "|", "^",
    "?", ":", "(", ")", "=",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    if src.len() > MAX_LEN {
        return Err("an expression longer than the replay's bound".into());
    }
    let cs: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '#') {
                i += 1;
            }
            let w: String = cs[start..i].iter().collect();
            out.push(Tok::Num(number(&w)?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            out.push(Tok::Name(cs[start..i].iter().collect()));
        } else {
            let rest: String = cs[i..cs.len().min(i + 3)].iter().collect();
            let Some(op) = OPS.iter().find(|o| rest.starts_with(**o)) else {
                return Err(format!("`{c}` in an arithmetic expression"));
            };
            out.push(Tok::Op(op));
            i += op.chars().count();
        }
    }
    Ok(out)
}

/// A constant: decimal, `0x…`, `0…` (octal). `base#n` is outside the subset.
fn number(w: &str) -> Result<i64, String> {
    let bad = || format!("value too great for base or invalid number `{w}`");
    if w.contains('#') {
        return Err(format!("the constant `{w}` (base#n)"));
    }
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16)
            .map(|v| v as i64)
            .map_err(|_| bad());
    }
    if w.len() > 1 && w.starts_with('0') {
        return u64::from_str_radix(&w[1..], 8)
            .map(|v| v as i64)
            .map_err(|_| bad());
    }
    w.parse::<u64>().map(|v| v as i64).map_err(|_| bad())
}

/// Evaluates `src` against (and assigning into) `vars`.
pub fn eval(src: &str, vars: &mut BTreeMap<String, String>) -> Result<i64, String> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Ok(0);
    }
    let mut p = Parser {
        toks,
        pos: 0,
        vars,
        depth: 0,
        // Names whose values are being read as expressions (no recursion through them).
        reading: Vec::new(),
    };
    let v = p.comma()?;
    if p.pos < p.toks.len() {
        return Err(format!(
            "syntax error in expression (error token is `{src}`)"
        ));
    }
    Ok(v)
}

struct Parser<'v> {
    toks: Vec<Tok>,
    pos: usize,
    vars: &'v mut BTreeMap<String, String>,
    depth: usize,
    reading: Vec<String>,
}

impl Parser<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("an expression nested deeper than the replay's bound".into());
        }
        Ok(())
    }

    fn comma(&mut self) -> Result<i64, String> {
        self.assign()
    }

    /// `name op= expr`, right-associative; else a conditional.
    fn assign(&mut self) -> Result<i64, String> {
        self.enter()?;
        if let (Some(Tok::Name(n)), Some(Tok::Op(op))) = (
            self.toks.get(self.pos).cloned(),
            self.toks.get(self.pos + 1),
        ) && matches!(
            *op,
            "=" | "+=" | "-=" | "*=" | "/=" | "%=" | "<<=" | ">>=" | "&=" | "|=" | "^="
        ) {
            let op = *op;
            self.pos += 2;
            let rhs = self.assign()?;
            let v = if op == "=" {
                rhs
            } else {
                let old = self.value(&n)?;
                binary(&op[..op.len() - 1], old, rhs)?
            };
            self.vars.insert(n, v.to_string());
            self.depth -= 1;
            return Ok(v);
        }
        let v = self.conditional()?;
        self.depth -= 1;
        Ok(v)
    }

    fn conditional(&mut self) -> Result<i64, String> {
        let c = self.binary_level(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let a = self.assign()?;
        if !self.eat(":") {
            return Err("`?` without `:`".into());
        }
        let b = self.assign()?;
        Ok(if c != 0 { a } else { b })
    }

    /// Binary operators by precedence, lowest first.
    fn binary_level(&mut self, level: usize) -> Result<i64, String> {
        const LEVELS: &[&[&str]] = &[
            &["||"],
            &["&&"],
            &["|"],
            &["^"],
            &["&"],
            &["==", "!="],
            &["<", ">", "<=", ">="],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.power();
        };
        self.enter()?;
        let mut l = self.binary_level(level + 1)?;
        while let Some(op) = self.peek_op().filter(|o| ops.contains(o)) {
            self.pos += 1;
            let r = self.binary_level(level + 1)?;
            l = binary(op, l, r)?;
        }
        self.depth -= 1;
        Ok(l)
    }

    fn power(&mut self) -> Result<i64, String> {
        let base = self.unary()?;
        if self.eat("**") {
            let exp = self.power()?;
            if exp < 0 {
                return Err("exponent less than 0".into());
            }
            return Ok(base.wrapping_pow(u32::try_from(exp).unwrap_or(u32::MAX)));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<i64, String> {
        self.enter()?;
        let v = match self.peek_op() {
            Some("-") => {
                self.pos += 1;
                self.unary()?.wrapping_neg()
            }
            Some("+") => {
                self.pos += 1;
                self.unary()?
            }
            Some("!") => {
                self.pos += 1;
                i64::from(self.unary()? == 0)
            }
            Some("~") => {
                self.pos += 1;
                !self.unary()?
            }
            Some(op @ ("++" | "--")) => {
                self.pos += 1;
                let Some(Tok::Name(n)) = self.toks.get(self.pos).cloned() else {
                    return Err(format!("`{op}` without a variable"));
                };
                self.pos += 1;
                let v = self.value(&n)?;
                let v = if op == "++" {
                    v.wrapping_add(1)
                } else {
                    v.wrapping_sub(1)
                };
                self.vars.insert(n, v.to_string());
                v
            }
            _ => self.postfix()?,
        };
        self.depth -= 1;
        Ok(v)
    }

    fn postfix(&mut self) -> Result<i64, String> {
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(n)) => {
                self.pos += 1;
                Ok(n)
            }
            Some(Tok::Name(n)) => {
                self.pos += 1;
                let v = self.value(&n)?;
                if let Some(op @ ("++" | "--")) = self.peek_op() {
                    self.pos += 1;
                    let next = if op == "++" {
                        v.wrapping_add(1)
                    } else {
                        v.wrapping_sub(1)
                    };
                    self.vars.insert(n, next.to_string());
                }
                Ok(v)
            }
            Some(Tok::Op("(")) => {
                self.pos += 1;
                let v = self.comma()?;
                if !self.eat(")") {
                    return Err("missing `)`".into());
                }
                Ok(v)
            }
            Some(Tok::Op(o)) => Err(format!(
                "syntax error: operand expected (error token is `{o}`)"
            )),
            None => Err("syntax error: operand expected".into()),
        }
    }

    /// A variable's value: unset or empty is 0, else its text as an expression.
    fn value(&mut self, name: &str) -> Result<i64, String> {
        let text = self.vars.get(name).cloned().unwrap_or_default();
        let text = text.trim();
        if text.is_empty() {
            return Ok(0);
        }
        if let Ok(n) = number(text) {
            return Ok(n);
        }
        if self.reading.iter().any(|r| r == name) || self.reading.len() > 8 {
            return Err(format!("expression recursion level exceeded (`{name}`)"));
        }
        self.reading.push(name.to_string());
        let toks = lex(text)?;
        let saved = (std::mem::replace(&mut self.toks, toks), self.pos);
        self.pos = 0;
        let r = self.comma();
        let whole = self.pos == self.toks.len();
        (self.toks, self.pos) = saved;
        self.reading.pop();
        let v = r?;
        if !whole {
            return Err(format!(
                "syntax error in expression (error token is `{text}`)"
            ));
        }
        Ok(v)
    }
}

fn binary(op: &str, l: i64, r: i64) -> Result<i64, String> {
    Ok(match op {
        "||" => i64::from(l != 0 || r != 0),
        "&&" => i64::from(l != 0 && r != 0),
        "|" => l | r,
        "^" => l ^ r,
        "&" => l & r,
        "==" => i64::from(l == r),
        "!=" => i64::from(l != r),
        "<" => i64::from(l < r),
        ">" => i64::from(l > r),
        "<=" => i64::from(l <= r),
        ">=" => i64::from(l >= r),
        "<<" => l.wrapping_shl(r as u32),
        ">>" => l.wrapping_shr(r as u32),
        "+" => l.wrapping_add(r),
        "-" => l.wrapping_sub(r),
        "*" => l.wrapping_mul(r),
        "/" | "%" if r == 0 => return Err("division by 0".into()),
        "/" => l.wrapping_div(r),
        "%" => l.wrapping_rem(r),
        other => return Err(format!("operator `{other}`")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(src: &str, vars: &[(&str, &str)]) -> Result<i64, String> {
        let mut v: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        eval(src, &mut v)
    }

    #[test]
    fn arithmetic_as_bash_evaluates_it() {
        for (src, want) in [
            ("attempt_counter+1", 1),
            ("1 + 2 * 3", 7),
            ("(1 + 2) * 3", 9),
            ("7 / 2", 3),
            ("-7 % 3", -1),
            ("2 ** 10", 1024),
            ("3 > 2 && 1", 1),
            ("5 == 4 ? 10 : 20", 20),
            ("010 + 0x10", 24),
            ("n * 2", 8),
            ("e", 4),
            ("1 << 4", 16),
            ("!0", 1),
        ] {
            assert_eq!(ev(src, &[("n", "4"), ("e", "n")]), Ok(want), "{src}");
        }
        assert!(ev("1 / 0", &[]).is_err());
        assert!(ev("1 +", &[]).is_err());
        assert!(ev("a", &[("a", "a")]).is_err());
        assert!(ev("2#101", &[]).is_err());
    }

    #[test]
    fn assignments_change_the_variables() {
        let mut v = BTreeMap::new();
        assert_eq!(eval("x = 5", &mut v), Ok(5));
        assert_eq!(eval("x += 2", &mut v), Ok(7));
        assert_eq!(eval("x++", &mut v), Ok(7));
        assert_eq!(v.get("x").map(String::as_str), Some("8"));
        assert_eq!(eval("--x", &mut v), Ok(7));
    }
}
