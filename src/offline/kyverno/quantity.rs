//! Kubernetes resource quantities and Go durations as Kyverno compares and computes them.
//! It must not know about rules or patterns.

/// Parses a Kubernetes quantity (`512Mi`, `1.5`, `100m`, `2e3`) into its value.
pub fn parse_quantity(s: &str) -> Option<f64> {
    // Numbers too large for a float (a key modulus) are not quantities.
    parse_quantity_raw(s).filter(|v| v.is_finite())
}

fn parse_quantity_raw(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (num, suffix) = split_number(s)?;
    let mult = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        other => {
            let exp = other.strip_prefix(['e', 'E'])?;
            return Some(num * 10f64.powi(exp.parse::<i32>().ok()?));
        }
    };
    Some(num * mult)
}

/// The suffix of a quantity string (`Mi` of `512Mi`), if it parses.
pub fn quantity_suffix(s: &str) -> Option<&str> {
    split_number(s.trim()).map(|(_, suf)| suf)
}

fn split_number(s: &str) -> Option<(f64, &str)> {
    let bytes = s.as_bytes();
    let mut end = 0;
    if end < bytes.len() && (bytes[end] == b'+' || bytes[end] == b'-') {
        end += 1;
    }
    let digits_start = end;
    while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
        end += 1;
    }
    if end == digits_start {
        return None;
    }
    let num: f64 = s[..end].parse().ok()?;
    Some((num, &s[end..]))
}

/// Formats `value` with the suffix `like` uses, falling back to the largest exact suffix.
pub fn format_quantity(value: f64, like: &str) -> String {
    let candidates: &[(&str, f64)] = if like.ends_with('i') {
        &[
            ("Ei", 1152921504606846976.0),
            ("Pi", 1125899906842624.0),
            ("Ti", 1099511627776.0),
            ("Gi", 1073741824.0),
            ("Mi", 1048576.0),
            ("Ki", 1024.0),
            ("", 1.0),
        ]
    } else {
        &[
            ("E", 1e18),
            ("P", 1e15),
            ("T", 1e12),
            ("G", 1e9),
            ("M", 1e6),
            ("k", 1e3),
            ("", 1.0),
            ("m", 1e-3),
            ("u", 1e-6),
            ("n", 1e-9),
        ]
    };
    if value == 0.0 {
        return "0".into();
    }
    for (suf, mult) in candidates {
        let n = value / mult;
        if n.abs() >= 1.0 && (n - n.round()).abs() < 1e-9 {
            return format!("{}{}", n.round() as i64, suf);
        }
    }
    format!("{value}")
}

/// Parses a Go duration (`1h30m`, `300ms`, `-1.5h`) into seconds.
pub fn parse_duration(s: &str) -> Option<f64> {
    let s = s.trim();
    if s == "0" {
        return Some(0.0);
    }
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let num: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let uend = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..uend] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        rest = &rest[uend..];
        total += num * unit;
    }
    Some(if neg { -total } else { total })
}

/// Formats seconds the way Go prints a `time.Duration` (`1h30m0s`, `500ms`).
pub fn format_duration(secs: f64) -> String {
    let total_ns = (secs * 1e9).round() as i128;
    if total_ns == 0 {
        return "0s".into();
    }
    let neg = total_ns < 0;
    let ns = total_ns.abs();
    let sign = if neg { "-" } else { "" };
    if ns < 1_000_000_000 {
        let (unit, div) = if ns < 1_000 {
            ("ns", 1.0)
        } else if ns < 1_000_000 {
            ("µs", 1e3)
        } else {
            ("ms", 1e6)
        };
        return format!("{sign}{}{unit}", trim_float(ns as f64 / div));
    }
    let h = ns / 3_600_000_000_000;
    let m = (ns / 60_000_000_000) % 60;
    let s = (ns % 60_000_000_000) as f64 / 1e9;
    let mut out = sign.to_string();
    if h > 0 {
        out.push_str(&format!("{h}h{m}m"));
    } else if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&format!("{}s", trim_float(s)));
    out
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.9}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_compare_across_suffixes() {
        assert_eq!(parse_quantity("1Gi"), Some(1073741824.0));
        assert_eq!(parse_quantity("100m"), Some(0.1));
        assert_eq!(parse_quantity("2e3"), Some(2000.0));
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(parse_quantity("1Gb"), None);
        assert_eq!(format_quantity(1536.0 * 1048576.0, "Mi"), "1536Mi");
        assert_eq!(format_quantity(2.0 * 1073741824.0, "Mi"), "2Gi");
    }

    #[test]
    fn durations_parse_and_print_like_go() {
        assert_eq!(parse_duration("1h30m"), Some(5400.0));
        assert_eq!(parse_duration("300ms"), Some(0.3));
        assert_eq!(parse_duration("5"), None);
        assert_eq!(format_duration(5400.0), "1h30m0s");
        assert_eq!(format_duration(0.5), "500ms");
        assert_eq!(format_duration(90.0), "1m30s");
    }
}
