//! `kca::exec`, the one way kca runs a program: exit codes and output, stdin, process
//! groups killed whole at the deadline and after the program exits, reading stopped at
//! the deadline, capped output.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::running;
use kca::exec::{End, Finished, Job, run};

fn sh(script: &str, timeout: Duration) -> Finished {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script);
    run(Job::new(c, timeout)).unwrap()
}

#[test]
fn a_foreground_job_stays_in_kcas_group_so_ctrl_c_reaches_it() {
    // Field 5 of /proc/self/stat is the process group of `cut` (sh's, here).
    let mut c = Command::new("sh");
    c.arg("-c").arg("cut -d' ' -f5 /proc/self/stat");
    let f = run(Job::new(c, Duration::from_secs(10)).in_foreground()).unwrap();
    // SAFETY: getpgrp has no preconditions.
    let ours = unsafe { libc::getpgrp() };
    assert_eq!(f.stdout.text().trim(), ours.to_string());
    let f = sh("cut -d' ' -f5 /proc/self/stat", Duration::from_secs(10));
    assert_ne!(f.stdout.text().trim(), ours.to_string());
}

#[test]
fn a_foreground_job_is_ended_at_its_deadline() {
    let mut c = Command::new("sleep");
    c.arg("30");
    let started = Instant::now();
    let f = run(Job::new(c, Duration::from_millis(300)).in_foreground()).unwrap();
    assert_eq!(f.end, End::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn output_and_exit_code() {
    let f = sh("echo out; echo err >&2; exit 3", Duration::from_secs(10));
    assert_eq!(f.code(), Some(3));
    assert_eq!(f.stdout.text(), "out\n");
    assert_eq!(f.stderr.text(), "err\n");
    assert_eq!(f.truncation_note(), "");
}

#[test]
fn stdin_is_written_and_closed() {
    let mut c = Command::new("cat");
    c.arg("-");
    let mut job = Job::new(c, Duration::from_secs(10));
    job.stdin = Some(b"hello".to_vec());
    assert_eq!(run(job).unwrap().stdout.text(), "hello");
}

#[test]
fn a_background_child_holding_stdout_open_does_not_hang_and_does_not_survive() {
    let started = Instant::now();
    let f = sh(
        "sleep 1002 & echo $! > /dev/stderr; echo ok",
        Duration::from_secs(20),
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited {:?} for an orphan's pipe",
        started.elapsed()
    );
    assert_eq!(f.code(), Some(0));
    assert_eq!(f.stdout.text(), "ok\n");
    let orphan: i32 = f.stderr.text().trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!running(orphan), "the background sleep {orphan} survived");
}

#[test]
fn at_the_deadline_the_whole_group_is_killed() {
    let started = Instant::now();
    let f = sh(
        "sleep 1003 & echo $! >&2; sleep 1004",
        Duration::from_millis(500),
    );
    assert_eq!(f.end, End::TimedOut);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let child: i32 = f.stderr.text().trim().parse().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert!(!running(child), "sleep {child} survived the timeout");
}

#[test]
fn reading_stops_at_the_deadline_when_an_escaped_process_holds_the_pipe() {
    // setsid leaves the group: killing the group cannot close this pipe.
    let started = Instant::now();
    let f = sh(
        "setsid sleep 1005 & echo $! >&2; echo started; sleep 1006",
        Duration::from_millis(500),
    );
    assert_eq!(f.end, End::TimedOut);
    assert_eq!(f.stdout.text(), "started\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // Tidy up the escaped sleep ourselves, by its pid.
    let escaped: i32 = f.stderr.text().trim().parse().unwrap();
    // SAFETY: sends a signal to the process this test started.
    unsafe {
        libc::kill(escaped, libc::SIGKILL);
    }
}

#[test]
fn output_is_capped_and_the_cut_is_said() {
    let mut c = Command::new("sh");
    c.arg("-c").arg("head -c 3000000 /dev/zero");
    let mut job = Job::new(c, Duration::from_secs(20));
    job.cap = 1000;
    let f = run(job).unwrap();
    assert_eq!(
        f.code(),
        Some(0),
        "the program was not blocked by a full pipe"
    );
    assert_eq!(f.stdout.bytes.len(), 1000);
    assert_eq!(f.stdout.dropped, 2_999_000);
    assert!(
        f.truncation_note()
            .contains("2999000 bytes of stdout beyond the first 1000 dropped"),
        "{}",
        f.truncation_note()
    );
}

#[test]
fn a_setsid_grandchild_does_not_outlive_its_job() {
    // setsid takes the sleeps out of the job's group (and session); before kca became
    // their subreaper they ran on after the job, the first holding stdout open until the
    // deadline. The second is a grandchild of an escaped shell.
    let started = Instant::now();
    let f = sh(
        "setsid sleep 1008 & echo $! >&2; \
         setsid sh -c 'sleep 1009 & echo $! >&2; wait' & \
         sleep 0.2; echo ok",
        Duration::from_secs(20),
    );
    assert_eq!(f.code(), Some(0));
    assert_eq!(f.stdout.text(), "ok\n");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited {:?} for an escaped process's pipe",
        started.elapsed()
    );
    let pids: Vec<i32> = f
        .stderr
        .text()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{}", f.stderr.text());
    for pid in pids {
        if running(pid) {
            // SAFETY: tidies up the process this test caused.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            panic!("the escaped sleep {pid} outlived its job");
        }
    }
}
