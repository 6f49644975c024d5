//! Kyverno's JMESPath `random(pattern)`: a random string the regular expression matches
//! (pkg/engine/jmespath/functions.go `jpRandom`, which uses goregen's `Generate`:
//! a repetition without an upper bound repeats at most 10 times more than its least,
//! anchors and word boundaries make nothing). Bounded: the string is at most
//! [`MAX_CHARS`] characters, or the call fails.

use std::hash::{BuildHasher, Hasher};

use regex_syntax::hir::{Class, Hir, HirKind};

/// The longest string `random` makes.
pub const MAX_CHARS: usize = 4096;

/// goregen's `DefaultMaxUnboundedRepeatCount`.
const UNBOUNDED_EXTRA: u32 = 10;

/// A random string `pattern` matches, or why there is none.
pub fn random(pattern: &str) -> Result<String, String> {
    if pattern.is_empty() {
        return Err("no pattern provided".into());
    }
    let hir = regex_syntax::parse(pattern).map_err(|e| format!("invalid pattern: {e}"))?;
    let mut rng = Rng::seeded();
    let mut out = String::new();
    generate(&hir, &mut rng, &mut out)?;
    Ok(out)
}

fn generate(hir: &Hir, rng: &mut Rng, out: &mut String) -> Result<(), String> {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => push(out, &String::from_utf8_lossy(&lit.0))?,
        HirKind::Class(Class::Unicode(c)) => {
            let ranges = c.ranges();
            let total: u64 = ranges
                .iter()
                .map(|r| u64::from(r.end() as u32 - r.start() as u32) + 1)
                .sum();
            if total == 0 {
                return Err("a class that matches nothing".into());
            }
            let mut pick = rng.below(total);
            for r in ranges {
                let size = u64::from(r.end() as u32 - r.start() as u32) + 1;
                if pick < size {
                    let code = r.start() as u32 + pick as u32;
                    push(out, &char::from_u32(code).unwrap_or(r.start()).to_string())?;
                    break;
                }
                pick -= size;
            }
        }
        HirKind::Class(Class::Bytes(c)) => {
            let ranges = c.ranges();
            let total: u64 = ranges
                .iter()
                .map(|r| u64::from(r.end() - r.start()) + 1)
                .sum();
            let mut pick = rng.below(total.max(1));
            for r in ranges {
                let size = u64::from(r.end() - r.start()) + 1;
                if pick < size {
                    push(out, &char::from(r.start() + pick as u8).to_string())?;
                    break;
                }
                pick -= size;
            }
        }
        HirKind::Repetition(rep) => {
            let max = rep
                .max
                .unwrap_or_else(|| rep.min.saturating_add(UNBOUNDED_EXTRA));
            let span = u64::from(max.saturating_sub(rep.min)) + 1;
            let times = u64::from(rep.min) + rng.below(span);
            if times > MAX_CHARS as u64 && !matches!(rep.sub.kind(), HirKind::Empty) {
                return Err(too_long());
            }
            for _ in 0..times {
                generate(&rep.sub, rng, out)?;
            }
        }
        HirKind::Capture(cap) => generate(&cap.sub, rng, out)?,
        HirKind::Concat(parts) => {
            for p in parts {
                generate(p, rng, out)?;
            }
        }
        HirKind::Alternation(alts) => {
            let i = rng.below(alts.len() as u64) as usize;
            generate(&alts[i], rng, out)?;
        }
    }
    Ok(())
}

fn push(out: &mut String, s: &str) -> Result<(), String> {
    if out.chars().count() + s.chars().count() > MAX_CHARS {
        return Err(too_long());
    }
    out.push_str(s);
    Ok(())
}

fn too_long() -> String {
    format!("the pattern makes more than {MAX_CHARS} characters")
}

/// xorshift64*, seeded from the standard library's per-process random keys.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_random_makes_matches_its_pattern() {
        for pattern in [
            "[a-z0-9]{12}",
            "edit\\.[a-f]{3,5}",
            "(foo|bar)-[0-9]+",
            "^x[[:alpha:]]*y$",
            "\\d{4}-\\d{2}",
        ] {
            let re = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
            for _ in 0..50 {
                let s = random(pattern).unwrap();
                assert!(re.is_match(&s), "{pattern}: {s}");
            }
        }
        assert_eq!(random("[a-z0-9]{12}").unwrap().len(), 12);
        // Two calls differ (a random name each time).
        assert_ne!(random("[a-z]{16}").unwrap(), random("[a-z]{16}").unwrap());
    }

    #[test]
    fn random_is_bounded_and_refuses_what_it_cannot_make() {
        assert!(random("").is_err());
        assert!(random("[").unwrap_err().starts_with("invalid pattern"));
        assert!(random("a{5000}").unwrap_err().contains("4096"));
        assert!(random("(a{1000}){1000}").unwrap_err().contains("4096"));
        // Unbounded repeats stop at ten more than their least.
        for _ in 0..50 {
            assert!(random("a+").unwrap().len() <= 11);
        }
    }
}
