//! How far apart the cron ticks of a cleanup or deleting policy can be. The replay does not
//! know the wall clock, so it does not know when the first tick after a write falls; it
//! knows only that one falls within the schedule's longest gap between two ticks. The
//! controllers compute the next tick with a cron parser (robfig/cron for cleanup policies,
//! supercronic's cronexpr for deleting policies, api/kyverno/v1beta1 and
//! api/policies.kyverno.io/v1beta1 `GetNextExecutionTime`); both agree on the five-field
//! forms this module reads.

/// The longest time, in seconds, between two consecutive ticks of `schedule`; `None` when
/// this model does not compute it (days, months, weekdays restricted; descriptors other
/// than hourly/daily; an unreadable field).
pub fn max_gap(schedule: &str) -> Option<u64> {
    let s = schedule.trim();
    match s {
        "@hourly" => return Some(3600),
        "@daily" | "@midnight" => return Some(86_400),
        _ if s.starts_with('@') => return None,
        _ => {}
    }
    let fields: Vec<&str> = s.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = fields.as_slice() else {
        return None;
    };
    if ![dom, month, dow].iter().all(|f| matches!(**f, "*" | "?")) {
        return None;
    }
    let minutes = expand(minute, 0, 59)?;
    let hours = expand(hour, 0, 23)?;
    let mut ticks: Vec<u64> = hours
        .iter()
        .flat_map(|h| {
            minutes
                .iter()
                .map(move |m| u64::from(*h) * 60 + u64::from(*m))
        })
        .collect();
    ticks.sort_unstable();
    ticks.dedup();
    let first = *ticks.first()?;
    let last = *ticks.last()?;
    let wrap = first + 24 * 60 - last;
    let inner = ticks.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    Some(inner.max(wrap) * 60)
}

/// The values of one numeric cron field (`*`, `n`, `n-m`, each with an optional `/step`,
/// comma separated), within `lo..=hi`.
fn expand(field: &str, lo: u32, hi: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|n| *n > 0)?),
            None => (part, 1),
        };
        let (start, end) = match range {
            "*" | "?" => (lo, hi),
            _ => match range.split_once('-') {
                Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                None => {
                    let a: u32 = range.parse().ok()?;
                    (a, if part.contains('/') { hi } else { a })
                }
            },
        };
        if start < lo || end > hi || start > end {
            return None;
        }
        out.extend((start..=end).step_by(step as usize));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_of_common_schedules() {
        let table = [
            ("*/1 * * * *", Some(60)),
            ("* * * * *", Some(60)),
            ("*/5 * * * *", Some(300)),
            ("0,10 * * * *", Some(50 * 60)),
            ("0 * * * *", Some(3600)),
            ("30 2 * * *", Some(86_400)),
            ("0 0 1 * *", None),
            ("@hourly", Some(3600)),
            ("@every 1m", None),
            ("*/0 * * * *", None),
            ("61 * * * *", None),
            ("* * * *", None),
        ];
        for (s, want) in table {
            assert_eq!(max_gap(s), want, "{s}");
        }
    }
}
