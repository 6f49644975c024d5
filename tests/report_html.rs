//! `kca report --html` rendered in headless Chromium (Debian's `chromium`): the page's
//! charts and tables show the numbers of the class, the same numbers as the JSON
//! document of the same run, its own script (the only one) counts what the browser
//! rendered, markup in a learner's id stays text, and a screenshot goes to the
//! artifacts folder (`$KCA_ARTIFACTS`, else `target/artifacts/`). Without chromium the
//! test says `skipped: chromium not installed` (CI installs it).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
mod report_class;
use common::{Env, stderr};
use report_class as class;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Runs headless Chromium on `page` with `extra` flags; its stdout. Stopped after 60 s.
fn browse(bin: &str, home: &Path, page: &Path, extra: &[String]) -> String {
    let out = home.join("chromium.out");
    let mut child = Command::new(bin)
        .env("HOME", home)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!(
            "--user-data-dir={}",
            home.join("chromium").display()
        ))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            assert!(s.success(), "chromium: {s}");
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::read_to_string(out).unwrap()
}

/// The value of attribute `attr` on the element whose opening tag contains `marker`.
fn attr(dom: &str, marker: &str, attr: &str) -> String {
    let start = dom
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in the page"));
    let tag_start = dom[..start].rfind('<').unwrap();
    let tag = &dom[tag_start..tag_start + dom[tag_start..].find('>').unwrap()];
    let re = regex::Regex::new(&format!(r#"\b{attr}="([^"]*)""#)).unwrap();
    re.captures(tag)
        .unwrap_or_else(|| panic!("no {attr} in {tag}"))[1]
        .to_string()
}

fn artifacts() -> PathBuf {
    std::env::var_os("KCA_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::repo().join("target/artifacts"))
}

#[test]
fn the_page_renders_the_class_numbers_in_chromium() {
    let Some(bin) = chromium() else {
        eprintln!("skipped: chromium not installed (apt-get install chromium)");
        return;
    };
    let env = Env::new();
    let dir = env.home.path().join("results");
    let n = 30;
    class::write(&dir, n);
    let page = env.home.path().join("class.html");
    let out = env
        .kca()
        .args(["-o", "json", "report", "--html"])
        .arg(&page)
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let model: Value = serde_json::from_slice(&out.stdout).unwrap();

    // One browser run: the DOM after the page's script, and the screenshot.
    let shots = artifacts();
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("report.png");
    let _ = std::fs::remove_file(&shot);
    let dom = browse(
        bin,
        env.home.path(),
        &page,
        &[
            "--dump-dom".into(),
            format!("--screenshot={}", shot.display()),
            "--window-size=1000,2600".into(),
            "--hide-scrollbars".into(),
        ],
    );
    // The page's own script ran and counted what was rendered.
    let rendered = |a: &str| attr(&dom, "id=\"rendered\"", a);
    assert_eq!(rendered("data-consistent"), "true", "{dom}");
    assert_eq!(rendered("data-learner-rows"), n.to_string());
    assert_eq!(rendered("data-histogram-learners"), n.to_string());
    assert_eq!(rendered("data-day-attempts"), (2 * n - 2).to_string());
    // Checks with failures: c1 and c2 (c3 only errs); questions: q1 (q2 is unanswered).
    assert_eq!(rendered("data-check-bars"), "2");
    assert_eq!(rendered("data-question-bars"), "1");

    // Each bar shows the class's count, as the test counts it and as the JSON says.
    let bar = |id: &str, a: &str| attr(&dom, &format!("data-id=\"{id}\""), a);
    let c1 = class::count(n, |i| i.is_multiple_of(3));
    assert_eq!(bar("kca-gates/c1", "data-failed"), c1.to_string());
    assert_eq!(bar("kca-gates/c1", "data-seen"), n.to_string());
    let q1 = class::count(n, |i| i >= 2 && i.is_multiple_of(2));
    assert_eq!(bar("module-1/q1", "data-failed"), q1.to_string());
    for c in model["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["failed"] != 0)
    {
        let id = c["id"].as_str().unwrap();
        assert_eq!(bar(id, "data-failed"), c["failed"].to_string(), "{id}");
        assert_eq!(
            bar(id, "data-percent"),
            format!("{:.1}", c["percent"].as_f64().unwrap())
        );
    }
    let top = class::count(n, |i| class::percent(i) >= 90.0);
    assert_eq!(
        attr(&dom, "data-from=\"90\"", "data-learners"),
        top.to_string()
    );
    for b in model["scores"].as_array().unwrap() {
        let from = format!("data-from=\"{}\"", b["from"]);
        assert_eq!(
            attr(&dom, &from, "data-learners"),
            b["learners"].to_string()
        );
    }
    let first = class::count(n, |i| i.is_multiple_of(3));
    assert_eq!(
        attr(&dom, "data-day=\"2026-12-01\"", "data-attempts"),
        first.to_string()
    );

    // Markup from a file is text: the only script is the page's own.
    assert!(
        dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{dom}"
    );
    assert_eq!(dom.matches("<script").count(), 1, "{dom}");
    assert!(dom.contains("eve\\u{1b}]0;owned\\u{7}"));
    // Nothing to fetch: no URL other than the page's own anchors.
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("src="));

    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
}
