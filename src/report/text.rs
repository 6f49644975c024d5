//! The text rendering of the class model: one table per view, fitted to the terminal's
//! width by `ui::table` (ids last, cut with `…`). Lays out numbers the model computed;
//! every string from a file is escaped.

use super::model::{ClassReport, Rate};
use crate::settings::Lang;
use crate::ui::{Printer, Style, tr, tr_s};

fn esc(s: &str) -> String {
    crate::escape::escape(s).into_owned()
}

fn pct(p: f64) -> String {
    format!("{p:.1}%")
}

/// `x` without a needless `.0` (quiz points can be fractions).
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn section(p: &Printer, title: &str, rows: Vec<Vec<String>>) {
    if rows.len() < 2 {
        return;
    }
    p.out("");
    p.out(&p.paint(Style::Heading, title));
    for line in crate::ui::table(&rows, p.width()) {
        p.out(&line);
    }
}

fn rates(p: &Printer, lang: Lang, title: &str, rows: &[Rate], other: &str) {
    let mut t = vec![vec![
        tr(lang, "失敗率", "FAILED").to_string(),
        tr(lang, "失敗/件数", "FAIL/SEEN").to_string(),
        other.to_string(),
        "ID".to_string(),
    ]];
    for r in rows {
        let id = if r.concepts.is_empty() {
            esc(&r.id)
        } else {
            esc(&format!("{} [{}]", r.id, r.concepts.join(", ")))
        };
        t.push(vec![
            pct(r.percent),
            format!("{}/{}", r.failed, r.seen),
            r.other.to_string(),
            id,
        ]);
    }
    section(p, title, t);
}

pub fn print(p: &Printer, lang: Lang, rep: &ClassReport) {
    p.out(&tr_s(
        lang,
        format!(
            "{} 件の結果(受講者 {} 人、試行 {} 回)",
            rep.files,
            rep.learners.len(),
            rep.attempts
        ),
        format!(
            "{} result file(s) ({} learner(s), {} attempt(s))",
            rep.files,
            rep.learners.len(),
            rep.attempts
        ),
    ));
    let mut t = vec![vec![
        tr(lang, "得点率", "SCORE%").to_string(),
        tr(lang, "得点", "SCORE").to_string(),
        tr(lang, "失敗", "FAILED").to_string(),
        tr(lang, "誤答", "WRONG").to_string(),
        tr(lang, "採点不可", "NOT GRADED").to_string(),
        tr(lang, "受講者", "LEARNER").to_string(),
    ]];
    for l in &rep.learners {
        t.push(vec![
            l.percent.map_or("-".into(), pct),
            format!("{}/{}", num(l.score), num(l.max)),
            l.failed_checks.to_string(),
            l.wrong_questions.to_string(),
            l.not_graded.to_string(),
            esc(&l.learner),
        ]);
    }
    section(p, tr(lang, "受講者ごと", "Learners"), t);
    let mut t = vec![vec![
        tr(lang, "完了/人数", "DONE/LEARNERS").to_string(),
        tr(lang, "失敗あり", "FAILING").to_string(),
        tr(lang, "平均", "MEAN").to_string(),
        tr(lang, "タスク", "TASK").to_string(),
    ]];
    for k in &rep.tasks {
        t.push(vec![
            format!("{}/{}", k.complete, k.learners),
            k.failed.to_string(),
            pct(k.mean_percent),
            esc(&k.id),
        ]);
    }
    section(p, tr(lang, "タスクごと", "Tasks"), t);
    rates(
        p,
        lang,
        tr(lang, "ラボのチェック", "Lab checks"),
        &rep.checks,
        tr(lang, "エラー等", "ERR/SKIP"),
    );
    rates(
        p,
        lang,
        tr(lang, "クイズの問題", "Quiz questions"),
        &rep.questions,
        tr(lang, "未回答", "UNANSWERED"),
    );
    let most = rep.scores.iter().map(|b| b.learners).max().unwrap_or(0);
    if most > 0 {
        // The bars get what the two number columns leave of the width.
        let room = p.width().saturating_sub(20).clamp(10, 50) as u32;
        let mut t = vec![vec![
            tr(lang, "得点率", "SCORE%").to_string(),
            tr(lang, "人数", "LEARNERS").to_string(),
            String::new(),
        ]];
        for b in &rep.scores {
            let bar = (b.learners * room).div_ceil(most) as usize;
            t.push(vec![
                format!("{}-{}%", b.from, b.to),
                b.learners.to_string(),
                "#".repeat(bar),
            ]);
        }
        section(p, tr(lang, "得点の分布", "Score distribution"), t);
    }
    let mut t = vec![vec![
        tr(lang, "日付 (UTC)", "DAY (UTC)").to_string(),
        tr(lang, "試行", "ATTEMPTS").to_string(),
        tr(lang, "人数", "LEARNERS").to_string(),
        tr(lang, "平均", "MEAN").to_string(),
    ]];
    for d in &rep.days {
        t.push(vec![
            d.day.clone(),
            d.attempts.to_string(),
            d.learners.to_string(),
            pct(d.mean_percent),
        ]);
    }
    section(p, tr(lang, "日ごとの試行", "Attempts per day"), t);
    if rep.undated > 0 {
        p.out(&tr_s(
            lang,
            format!("日時のない試行: {} 回", rep.undated),
            format!("attempts without a time: {}", rep.undated),
        ));
    }
    if !rep.skipped.is_empty() {
        p.out("");
        p.out(&p.paint(
            Style::Fail,
            &tr_s(
                lang,
                format!(
                    "{} 件のファイルを読めませんでした(上の警告)",
                    rep.skipped.len()
                ),
                format!(
                    "{} file(s) could not be read (warnings above)",
                    rep.skipped.len()
                ),
            ),
        ));
    }
}
