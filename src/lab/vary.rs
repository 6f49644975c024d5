//! Probes that cannot be hard-coded: before an admission probe is sent, its name gets a
//! suffix and it gets labels and annotations of its own, all drawn from a seed, so a
//! policy written for the lab's fixed probe (an annotations map written back whole, a
//! label list copied from the probe) meets objects it has never seen. The seed is chosen
//! per run, or given with `--seed` on `kca lab check` and `kca lab verify` to repeat a run.
//! An admitted probe must keep what it was sent with: a mutation that drops them fails.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

/// Prefix of every key kca adds; nothing in a lab selects on it.
pub const KEY_PREFIX: &str = "vary.kca.dev/";

static SEED: AtomicU64 = AtomicU64::new(0);

/// Sets this run's seed (`--seed`); 0 means "choose one".
pub fn set_seed(seed: u64) {
    SEED.store(seed, Ordering::Relaxed);
}

/// This run's seed: the one set, else one chosen now (and kept for the run).
pub fn seed() -> u64 {
    let s = SEED.load(Ordering::Relaxed);
    if s != 0 {
        return s;
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let chosen = (nanos ^ (u64::from(std::process::id()) << 32)) % 1_000_000_000 + 1;
    match SEED.compare_exchange(0, chosen, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => chosen,
        Err(now) => now,
    }
}

fn next(state: &mut u64) -> u64 {
    // SplitMix64: the same seed gives the same probes on every machine.
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn word(state: &mut u64, len: usize) -> String {
    let mut n = next(state);
    (0..len)
        .map(|_| {
            let c = char::from_digit((n % 36) as u32, 36).unwrap_or('x');
            n /= 36;
            c
        })
        .collect()
}

fn stable(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The probe as sent for `check` in this run: a name suffix (a `generateName` is left to
/// the server), one or two labels and two or three annotations under [`KEY_PREFIX`].
/// An update probe keeps its name (it names the object it updates).
pub fn probe(object: &Value, check: &str, update: bool) -> Value {
    let mut o = probe_with(object, check, seed());
    if update
        && let (Some(name), Some(meta)) = (
            object.pointer("/metadata/name").cloned(),
            o.get_mut("metadata").and_then(Value::as_object_mut),
        )
    {
        meta.insert("name".into(), name);
    }
    o
}

/// The note a failing verdict carries, so the run can be repeated.
pub fn note() -> String {
    let s = seed();
    format!(" (probes varied with seed {s}; `--seed {s}` repeats this run)")
}

pub fn probe_with(object: &Value, check: &str, seed: u64) -> Value {
    let mut state = seed ^ stable(check);
    let mut o = object.clone();
    let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else {
        return o;
    };
    if let Some(Value::String(name)) = meta.get("name").cloned() {
        let suffix = word(&mut state, 5);
        let mut n = format!("{name}-{suffix}");
        n.truncate(63);
        meta.insert("name".into(), Value::String(n.trim_end_matches('-').into()));
    }
    for (key, count) in [
        ("labels", 1 + next(&mut state) % 2),
        ("annotations", 2 + next(&mut state) % 2),
    ] {
        let entry = meta.entry(key).or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = entry {
            for _ in 0..count {
                let k = format!("{KEY_PREFIX}{}", word(&mut state, 6));
                m.insert(k, Value::String(word(&mut state, 8)));
            }
        }
    }
    o
}

/// The labels and annotations `sent` carried (kca's varied ones and the probe's own) that
/// `got` (the admitted object) lost or changed, for the report: `None` when everything
/// survived. A key the check's `expected` tree names (`metadata.labels.team`) is the
/// change asked for and not counted: a mutation must add what the task asks without
/// writing over what the object already had.
pub fn lost(sent: &Value, got: &Value, expected: Option<&Value>) -> Option<String> {
    let mut lost = Vec::new();
    for key in ["labels", "annotations"] {
        let Some(m) = sent
            .pointer(&format!("/metadata/{key}"))
            .and_then(Value::as_object)
        else {
            continue;
        };
        let asked = |k: &str| {
            expected
                .and_then(|e| e.pointer(&format!("/metadata/{key}")))
                .and_then(Value::as_object)
                .is_some_and(|m| m.contains_key(k))
        };
        for (k, v) in m.iter().filter(|(k, _)| !asked(k)) {
            let now = got
                .pointer(&format!("/metadata/{key}"))
                .and_then(|m| m.get(k));
            if now != Some(v) {
                lost.push(format!("{key} `{k}`"));
            }
        }
    }
    (!lost.is_empty()).then(|| lost.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_seed_gives_the_same_probe_and_another_seed_another() {
        let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n",
            "annotations": {"kca.io/purpose": "probe"}}});
        let a = probe_with(&p, "c", 7);
        assert_eq!(a, probe_with(&p, "c", 7));
        assert_ne!(a, probe_with(&p, "c", 8));
        assert_ne!(a, probe_with(&p, "d", 7), "each check its own");
        assert_eq!(
            a.pointer("/metadata/annotations/kca.io~1purpose"),
            Some(&json!("probe"))
        );
        assert!(a["metadata"]["name"].as_str().unwrap().starts_with("p-"));
        let n = a["metadata"]["annotations"].as_object().unwrap().len();
        assert!((3..=4).contains(&n), "{a}");
        assert_eq!(lost(&a, &a, None), None);
        // A patch that writes the annotations map back whole loses what kca added.
        let mut rewritten = a.clone();
        rewritten["metadata"]["annotations"] =
            json!({"kca.io/purpose": "probe", "kca.io/owner": "x"});
        assert!(lost(&a, &rewritten, None).unwrap().contains("annotations"));
    }

    #[test]
    fn a_mutation_that_writes_over_a_key_the_object_had_loses_it_unless_asked() {
        let sent = json!({"metadata": {"labels": {"app": "web"}, "annotations": {"a": "1"}}});
        let over = json!({"metadata": {"labels": {"app": "platform", "team": "x"}, "annotations": {"a": "1"}}});
        assert_eq!(lost(&sent, &over, None).as_deref(), Some("labels `app`"));
        // The check asks for the label to be set: that change is the task.
        let asked = json!({"metadata": {"labels": {"app": "platform"}}});
        assert_eq!(lost(&sent, &over, Some(&asked)), None);
    }
}
