//! Large batches of independent work (questions of a long quiz, objects of a big
//! manifest) split over two threads. Results come back in input order; small batches
//! stay on the calling thread. It must not print, and keeps no state between calls.

/// How many threads can run at once here; asked once per process (the answer reads
/// cgroup files, too slow to ask for every small file kca parses).
pub fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `f` over `items` in order, with the state `start` made for each half: the second half
/// runs on another thread when there are at least `min` items and more than one core.
/// Returns each half's state and results, first half first (one entry when not split).
pub fn halves<I: Sync, S: Send, T: Send>(
    items: &[I],
    min: usize,
    start: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &I) -> Option<T> + Sync,
) -> Vec<(S, Vec<T>)> {
    let run = |part: &[I]| {
        let mut state = start();
        let out: Vec<T> = part.iter().filter_map(|i| f(&mut state, i)).collect();
        (state, out)
    };
    if items.len() < min.max(2) || cores() < 2 {
        return vec![run(items)];
    }
    let (first, second) = items.split_at(items.len() / 2);
    std::thread::scope(|scope| {
        let second = scope.spawn(|| run(second));
        let first = run(first);
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        vec![first, second]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_and_states_keep_the_input_order() {
        let items: Vec<usize> = (0..10_000).collect();
        let parts = halves(&items, 100, Vec::new, |seen: &mut Vec<usize>, &i| {
            seen.push(i);
            (i % 3 != 0).then_some(i * 2)
        });
        assert_eq!(parts.len(), if cores() > 1 { 2 } else { 1 });
        let seen: Vec<usize> = parts.iter().flat_map(|(s, _)| s.clone()).collect();
        assert_eq!(seen, items);
        let out: Vec<usize> = parts.into_iter().flat_map(|(_, o)| o).collect();
        let want: Vec<usize> = items
            .iter()
            .filter(|i| *i % 3 != 0)
            .map(|i| i * 2)
            .collect();
        assert_eq!(out, want);
        // Small batches stay whole.
        assert_eq!(halves(&items[..50], 100, || (), |_, &i| Some(i)).len(), 1);
    }
}
