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
        // No second thread to be had (a pids limit): the calling thread does both halves.
        let Ok(second) = std::thread::Builder::new().spawn_scoped(scope, || run(second)) else {
            return vec![run(items)];
        };
        let first = run(first);
        let second = second
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        vec![first, second]
    })
}

/// Why an item of [`pool`] has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unrun {
    /// Not one worker of its lane could be started (a pids or memory limit).
    NoThread(String),
    /// `f` panicked on it.
    Crashed,
}

/// `f` over `items` on a bounded pool of threads, results in input order. Each item goes
/// to a lane (`lane(item)`, an index into `workers`), and lane `i` runs at most
/// `workers[i]` items at once. A worker that cannot be started is only a smaller pool; a
/// lane with no worker at all, or an item whose `f` panicked, is an [`Unrun`] result,
/// never a panic of the caller.
pub fn pool<I: Sync, T: Send>(
    items: &[I],
    workers: &[usize],
    lane: impl Fn(&I) -> usize,
    f: impl Fn(&I) -> T + Sync,
) -> Vec<Result<T, Unrun>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let mut lanes: Vec<Vec<usize>> = vec![Vec::new(); workers.len()];
    for (i, item) in items.iter().enumerate() {
        lanes[lane(item).min(workers.len() - 1)].push(i);
    }
    let results: Vec<Mutex<Option<Result<T, Unrun>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    let put = |i: usize, r: Result<T, Unrun>| {
        *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    };
    let (f, put) = (&f, &put);
    let cursors: Vec<AtomicUsize> = workers.iter().map(|_| AtomicUsize::new(0)).collect();
    std::thread::scope(|scope| {
        for ((queue, &most), next) in lanes.iter().zip(workers).zip(&cursors) {
            let work = move || {
                while let Some(&i) = queue.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let done =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&items[i])));
                    put(i, done.map_err(|_| Unrun::Crashed));
                }
            };
            let mut started = 0;
            let mut refused = None;
            for _ in 0..most.max(1).min(queue.len()) {
                match std::thread::Builder::new().spawn_scoped(scope, work) {
                    Ok(_) => started += 1,
                    Err(e) => {
                        refused = Some(e.to_string());
                        break;
                    }
                }
            }
            if started == 0
                && let Some(why) = refused
            {
                for &i in queue {
                    put(i, Err(Unrun::NoThread(why.clone())));
                }
            }
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or(Err(Unrun::Crashed))
        })
        .collect()
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

    #[test]
    fn the_pool_bounds_each_lane_and_keeps_the_order() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        // Before, every check had a thread of its own at once.
        let items: Vec<usize> = (0..200).collect();
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let out = pool(
            &items,
            &[1, 3],
            |i| i % 2,
            |&i| {
                if i % 2 == 1 {
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    now.fetch_sub(1, Ordering::SeqCst);
                }
                assert_ne!(i, 7, "a crash in one item");
                i * 10
            },
        );
        assert!(most.load(Ordering::SeqCst) <= 3, "{most:?}");
        for (i, r) in out.iter().enumerate() {
            match i {
                7 => assert_eq!(r, &Err(Unrun::Crashed)),
                _ => assert_eq!(r, &Ok(i * 10)),
            }
        }
    }
}
