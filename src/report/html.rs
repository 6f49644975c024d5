//! The HTML rendering of the class model (`kca report --html FILE`): one self-contained
//! page — inline CSS, inline SVG charts, one small inline script, no network, no fonts
//! to fetch. Every number comes from `ClassReport`; the charts carry them in `data-*`
//! attributes (and the tables in cells) so a test can find what was rendered. Every
//! string from a file is HTML-escaped (control characters shown as escapes first), and
//! the page's Content-Security-Policy runs only the script bearing this page's nonce.

use std::fmt::Write as _;

use super::model::{ClassReport, Rate};
use crate::settings::Lang;
use crate::ui::tr;

/// Bars shown per failure chart: the most failed; the tables below list every row.
const TOP: usize = 15;
const WIDTH: u32 = 760;

/// `s` safe as HTML text and as a quoted attribute value: control characters shown as
/// escapes, then the XML escaping JUnit uses (HTML5 reads `&apos;` as XML does).
pub fn esc(s: &str) -> String {
    crate::junit::escape(&crate::escape::escape(s))
}

/// A value for a CSP nonce: 128 bits from the standard library's per-process random
/// hash keys, so data written into the page before it cannot guess it.
fn nonce() -> String {
    use std::hash::BuildHasher;
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let a = std::collections::hash_map::RandomState::new().hash_one(t);
    let b = std::collections::hash_map::RandomState::new().hash_one(a);
    format!("{a:016x}{b:016x}")
}

const STYLE: &str = "
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1b1b1b;background:#fff}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9rem;margin:.5rem 0}
th,td{border-bottom:1px solid #eee;padding:.2rem .6rem;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.warn{background:#fff4e5;border-left:4px solid #e67e22;padding:.5rem 1rem}
svg{max-width:100%;height:auto}svg text{font-size:12px;fill:#1b1b1b}
.fail rect{fill:#c0392b}.score rect{fill:#2e86c1}.day rect{fill:#27ae60}
.none{color:#666}output{display:block;color:#666;font-size:.8rem;margin-top:2rem}
";

/// The page's script: counts what the browser rendered from the `data-*` attributes and
/// writes the totals into `#rendered`, with whether they agree with the summary.
const SCRIPT: &str = "
(function(){
var all=function(s){return Array.prototype.slice.call(document.querySelectorAll(s));};
var sum=function(s,a){return all(s).reduce(function(t,e){return t+Number(e.getAttribute(a));},0);};
var s=document.getElementById('summary').dataset,o=document.getElementById('rendered');
var n={checkBars:all('#checks-chart .bar').length,questionBars:all('#questions-chart .bar').length,
histogramLearners:sum('#scores-chart .bar','data-learners'),dayAttempts:sum('#days-chart .bar','data-attempts'),
learnerRows:all('#learners tbody tr').length};
Object.keys(n).forEach(function(k){o.dataset[k]=n[k];});
o.dataset.consistent=String(n.histogramLearners==Number(s.scored)&&n.dayAttempts==Number(s.dated)&&n.learnerRows==Number(s.learners));
o.textContent=Object.keys(n).map(function(k){return k+'='+n[k];}).join(' ');
})();
";

pub fn page(rep: &ClassReport, lang: Lang) -> String {
    let nonce = nonce();
    let mut h = String::with_capacity(64 * 1024);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-{nonce}'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        match lang {
            Lang::Ja => "ja",
            Lang::En => "en",
        },
        tr(lang, "kca クラスのレポート", "kca class report"),
        tr(lang, "クラスのレポート", "Class report"),
    );
    summary(&mut h, rep, lang);
    if !rep.skipped.is_empty() {
        let _ = write!(
            h,
            "<div class=\"warn\" id=\"skipped\" data-count=\"{}\"><p>{}</p><ul>",
            rep.skipped.len(),
            tr(
                lang,
                "読めなかったファイル(この表に含まれていません):",
                "Files that could not be read (not in these tables):"
            )
        );
        for s in &rep.skipped {
            let _ = write!(h, "<li>{}</li>", esc(s));
        }
        h.push_str("</ul></div>\n");
    }
    failures(
        &mut h,
        "checks-chart",
        tr(lang, "失敗の多いラボのチェック", "Lab checks failed most"),
        &rep.checks,
        lang,
    );
    failures(
        &mut h,
        "questions-chart",
        tr(
            lang,
            "間違いの多いクイズの問題",
            "Quiz questions missed most",
        ),
        &rep.questions,
        lang,
    );
    histogram(&mut h, rep, lang);
    days(&mut h, rep, lang);
    tables(&mut h, rep, lang);
    let _ = write!(
        h,
        "<output id=\"rendered\"></output>\n<script nonce=\"{nonce}\">{SCRIPT}</script>\n</body>\n</html>\n"
    );
    h
}

fn summary(h: &mut String, rep: &ClassReport, lang: Lang) {
    let scored: u32 = rep.scores.iter().map(|b| b.learners).sum();
    let dated: u32 = rep.days.iter().map(|d| d.attempts).sum();
    let _ = writeln!(
        h,
        "<p id=\"summary\" data-files=\"{}\" data-learners=\"{}\" data-attempts=\"{}\" data-scored=\"{scored}\" data-dated=\"{dated}\" data-skipped=\"{}\">{}: {} · {}: {} · {}: {} · {}: {}</p>",
        rep.files,
        rep.learners.len(),
        rep.attempts,
        rep.skipped.len(),
        tr(lang, "結果ファイル", "result files"),
        rep.files,
        tr(lang, "受講者", "learners"),
        rep.learners.len(),
        tr(lang, "試行", "attempts"),
        rep.attempts,
        tr(lang, "読めなかったファイル", "files not read"),
        rep.skipped.len(),
    );
}

fn open(h: &mut String, id: &str, title: &str) {
    let _ = write!(h, "<section id=\"{id}\">\n<h2>{title}</h2>\n");
}

/// A horizontal bar per check or question, the most failed first.
fn failures(h: &mut String, id: &str, title: &str, rows: &[Rate], lang: Lang) {
    if rows.is_empty() {
        return;
    }
    open(h, id, title);
    let shown: Vec<&Rate> = rows.iter().filter(|r| r.failed > 0).take(TOP).collect();
    if shown.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"none\">{}</p></section>",
            tr(lang, "失敗はありません。", "No failures.")
        );
        return;
    }
    let (label, bar_x, bar_w, row) = (300u32, 310u32, 330u32, 24u32);
    let height = row * shown.len() as u32 + 8;
    let _ = writeln!(
        h,
        "<svg class=\"fail\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">",
        esc(title)
    );
    for (i, r) in shown.iter().enumerate() {
        let y = i as u32 * row + 4;
        let w = (r.percent / 100.0 * f64::from(bar_w)).round().max(1.0);
        let _ = writeln!(
            h,
            "<g class=\"bar\" data-id=\"{id}\" data-failed=\"{}\" data-seen=\"{}\" data-percent=\"{:.1}\"><title>{id}: {}/{}</title>\
             <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
             <rect x=\"{bar_x}\" y=\"{y}\" width=\"{w}\" height=\"{}\"></rect>\
             <text class=\"value\" x=\"{}\" y=\"{}\">{:.1}% ({}/{})</text></g>",
            r.failed,
            r.seen,
            r.percent,
            r.failed,
            r.seen,
            label - 4,
            y + 15,
            esc(&crate::ui::truncate(&r.id, 44)),
            row - 6,
            f64::from(bar_x) + w + 6.0,
            y + 15,
            r.percent,
            r.failed,
            r.seen,
            id = esc(&r.id),
        );
    }
    h.push_str("</svg>\n</section>\n");
}

/// Vertical bars, one per label, `value` scaled to the tallest.
struct Columns<'a> {
    id: &'a str,
    class: &'a str,
    title: &'a str,
    /// Label, value, the bar's `data-*` attributes.
    bars: Vec<(String, u32, String)>,
}

fn columns(h: &mut String, c: Columns) {
    open(h, c.id, c.title);
    let (top, plot, foot) = (18u32, 180u32, 34u32);
    let n = c.bars.len().max(1) as u32;
    let step = ((WIDTH - 40) / n).clamp(4, 96);
    let most = c.bars.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    // Labels stay readable: at most about fifteen of them under the bars.
    let every = (n as usize).div_ceil(15).max(1);
    let height = top + plot + foot;
    let _ = writeln!(
        h,
        "<svg class=\"{}\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">",
        c.class,
        esc(c.title)
    );
    for (i, (label, value, data)) in c.bars.iter().enumerate() {
        let x = 20 + i as u32 * step;
        let bh = value * plot / most;
        let y = top + plot - bh;
        let mid = x + step / 2;
        let _ = write!(
            h,
            "<g class=\"bar\" {data}><title>{label}: {value}</title><rect x=\"{}\" y=\"{y}\" width=\"{}\" height=\"{bh}\"></rect>",
            x + 1,
            step.saturating_sub(2).max(1),
        );
        if step >= 16 {
            let _ = write!(
                h,
                "<text class=\"value\" x=\"{mid}\" y=\"{}\" text-anchor=\"middle\">{value}</text>",
                y.saturating_sub(4).max(12)
            );
        }
        if i % every == 0 {
            let _ = write!(
                h,
                "<text x=\"{mid}\" y=\"{}\" text-anchor=\"middle\">{label}</text>",
                top + plot + 16
            );
        }
        h.push_str("</g>\n");
    }
    h.push_str("</svg>\n</section>\n");
}

fn histogram(h: &mut String, rep: &ClassReport, lang: Lang) {
    if rep.scores.iter().all(|b| b.learners == 0) {
        return;
    }
    columns(
        h,
        Columns {
            id: "scores-chart",
            class: "score",
            title: tr(
                lang,
                "得点の分布(受講者の得点率)",
                "Score distribution (learners' percent)",
            ),
            bars: rep
                .scores
                .iter()
                .map(|b| {
                    (
                        format!("{}–{}%", b.from, b.to),
                        b.learners,
                        format!(
                            "data-from=\"{}\" data-to=\"{}\" data-learners=\"{}\"",
                            b.from, b.to, b.learners
                        ),
                    )
                })
                .collect(),
        },
    );
}

fn days(h: &mut String, rep: &ClassReport, lang: Lang) {
    if rep.days.is_empty() {
        return;
    }
    columns(
        h,
        Columns {
            id: "days-chart",
            class: "day",
            title: tr(lang, "日ごとの試行 (UTC)", "Attempts per day (UTC)"),
            bars: rep
                .days
                .iter()
                .map(|d| {
                    (
                        d.day.clone(),
                        d.attempts,
                        format!(
                            "data-day=\"{}\" data-attempts=\"{}\" data-learners=\"{}\" data-mean=\"{:.1}\"",
                            d.day, d.attempts, d.learners, d.mean_percent
                        ),
                    )
                })
                .collect(),
        },
    );
}

/// A table: a header row, then rows of cells; a cell starting with `#` is a number
/// (right-aligned), the `#` dropped. Cells are escaped here.
fn table(h: &mut String, id: &str, title: &str, head: &[&str], rows: Vec<Vec<String>>) {
    if rows.is_empty() {
        return;
    }
    open(h, id, title);
    h.push_str("<table><thead><tr>");
    for (i, c) in head.iter().enumerate() {
        let class = if i + 1 < head.len() {
            " class=\"n\""
        } else {
            ""
        };
        let _ = write!(h, "<th{class}>{}</th>", esc(c));
    }
    h.push_str("</tr></thead><tbody>\n");
    for r in rows {
        h.push_str("<tr>");
        for c in r {
            match c.strip_prefix('#') {
                Some(n) => {
                    let _ = write!(h, "<td class=\"n\">{}</td>", esc(n));
                }
                None => {
                    let _ = write!(h, "<td>{}</td>", esc(&c));
                }
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</tbody></table>\n</section>\n");
}

fn tables(h: &mut String, rep: &ClassReport, lang: Lang) {
    let pct = |p: f64| format!("#{p:.1}%");
    table(
        h,
        "learners",
        tr(lang, "受講者ごと", "Learners"),
        &[
            tr(lang, "得点率", "Score %"),
            tr(lang, "得点", "Score"),
            tr(lang, "失敗したチェック", "Failed checks"),
            tr(lang, "誤答", "Wrong answers"),
            tr(lang, "採点不可", "Not graded"),
            tr(lang, "試行", "Attempts"),
            tr(lang, "受講者", "Learner"),
        ],
        rep.learners
            .iter()
            .map(|l| {
                vec![
                    l.percent.map_or("#-".into(), pct),
                    format!("#{}/{}", l.score, l.max),
                    format!("#{}", l.failed_checks),
                    format!("#{}", l.wrong_questions),
                    format!("#{}", l.not_graded),
                    format!("#{}", l.attempts),
                    l.learner.clone(),
                ]
            })
            .collect(),
    );
    table(
        h,
        "tasks",
        tr(lang, "タスクごと", "Tasks"),
        &[
            tr(lang, "完了", "Done"),
            tr(lang, "人数", "Learners"),
            tr(lang, "失敗あり", "Failing"),
            tr(lang, "平均", "Mean"),
            tr(lang, "タスク", "Task"),
        ],
        rep.tasks
            .iter()
            .map(|t| {
                vec![
                    format!("#{}", t.complete),
                    format!("#{}", t.learners),
                    format!("#{}", t.failed),
                    pct(t.mean_percent),
                    t.id.clone(),
                ]
            })
            .collect(),
    );
    let rates = |rows: &[Rate]| -> Vec<Vec<String>> {
        rows.iter()
            .map(|r| {
                let id = if r.concepts.is_empty() {
                    r.id.clone()
                } else {
                    format!("{} [{}]", r.id, r.concepts.join(", "))
                };
                vec![
                    pct(r.percent),
                    format!("#{}", r.failed),
                    format!("#{}", r.seen),
                    format!("#{}", r.other),
                    id,
                ]
            })
            .collect()
    };
    table(
        h,
        "checks",
        tr(lang, "ラボのチェック", "Lab checks"),
        &[
            tr(lang, "失敗率", "Failed %"),
            tr(lang, "失敗", "Failed"),
            tr(lang, "件数", "Seen"),
            tr(lang, "エラー等", "Error/skip"),
            "ID",
        ],
        rates(&rep.checks),
    );
    table(
        h,
        "questions",
        tr(lang, "クイズの問題", "Quiz questions"),
        &[
            tr(lang, "誤答率", "Wrong %"),
            tr(lang, "誤答", "Wrong"),
            tr(lang, "件数", "Seen"),
            tr(lang, "未回答", "Unanswered"),
            "ID",
        ],
        rates(&rep.questions),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_markup_character_of_a_file_is_escaped() {
        assert_eq!(
            esc("<script>alert(\"x\")</script>&'"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&apos;"
        );
        assert_eq!(esc("a\u{1b}[2J\u{202e}"), "a\\u{1b}[2J\\u{202e}");
        assert_eq!(esc("受講者"), "受講者");
    }
}
