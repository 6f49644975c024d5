//! `kca lab watch`: grades again whenever a workspace file is saved (inotify through the
//! `notify` crate, debounced), and keeps one screen: the task you are on (its text, its
//! checks, the hint you asked for), the score line at the bottom. A task that passes
//! gives way to the next. Keys as rustlings has them: h hint, l task list, c every check,
//! q quit. The terminal is put in cbreak mode (no echo, keys one at a time) with termios
//! and restored on every way out.

use std::sync::mpsc;
use std::time::Duration;

use super::lifecycle::{Graded, current, grade_run, record, started, take_hint, view};
use super::progress::{self, LabProgress};
use super::report;
use crate::cli::lab::WatchArgs;
use crate::content::lab::Lab;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::exit::Exit;
use crate::settings::Lang;
use crate::state::Store;
use crate::ui::{self, Style, tr, tr_s};

/// Saves closer together than this are graded once.
const DEBOUNCE: Duration = Duration::from_millis(250);

enum Msg {
    Saved,
    Key(u8),
    KeysGone,
}

/// What the screen shows besides the task.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Task,
    List,
    All,
}

/// The terminal's settings before cbreak mode, put back on drop.
struct Cbreak(libc::termios);

impl Cbreak {
    fn enter() -> Option<Cbreak> {
        // SAFETY: termios is plain data; tcgetattr fills it or fails (not a terminal).
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(0, &mut t) } != 0 {
            return None;
        }
        let old = t;
        // Keys one at a time, not echoed; Ctrl-C arrives as a key (so quitting restores).
        t.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        t.c_cc[libc::VMIN] = 1;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: a termios read from this terminal, changed in its flags only.
        (unsafe { libc::tcsetattr(0, libc::TCSANOW, &t) } == 0).then_some(Cbreak(old))
    }
}

impl Drop for Cbreak {
    fn drop(&mut self) {
        // SAFETY: the settings tcgetattr returned for this terminal.
        unsafe { libc::tcsetattr(0, libc::TCSANOW, &self.0) };
    }
}

fn keys(tx: mpsc::Sender<Msg>) {
    std::thread::spawn(move || {
        use std::io::Read;
        let mut stdin = std::io::stdin();
        let mut b = [0u8; 1];
        loop {
            match stdin.read(&mut b) {
                Ok(1) => {
                    if tx.send(Msg::Key(b[0])).is_err() {
                        return;
                    }
                }
                _ => {
                    let _ = tx.send(Msg::KeysGone);
                    return;
                }
            }
        }
    });
}

/// `lab watch` without a terminal to draw on, with what to do instead.
fn needs_terminal(lang: Lang, hint: &str) -> Error {
    Error::usage(
        tr(
            lang,
            "`kca lab watch` は端末で使います",
            "`kca lab watch` needs a terminal",
        ),
        hint,
    )
}

pub fn watch(ctx: &Ctx, store: &Store, args: &WatchArgs) -> Result<Exit> {
    let lang = ctx.settings.lang;
    let (lab, entry) = current(ctx, store, args.lab.as_deref())?;
    let entry = started(lang, &lab, entry, &[])?;
    if !ctx.printer.is_interactive() {
        return Err(needs_terminal(
            lang,
            tr(
                lang,
                "スクリプトや CI では `kca lab check` を使います",
                "in scripts and CI, use `kca lab check`",
            ),
        ));
    }
    let (tx, rx) = mpsc::channel();
    let fs_tx = tx.clone();
    let mut watcher = notify::recommended_watcher(move |ev: notify::Result<notify::Event>| {
        if let Ok(ev) = ev
            && !matches!(ev.kind, notify::EventKind::Access(_))
            && !ev
                .paths
                .iter()
                .all(|p| p.components().any(|c| c.as_os_str() == super::reset::ASIDE))
        {
            let _ = fs_tx.send(Msg::Saved);
        }
    })
    .map_err(|e| watch_error(lang, &entry, e))?;
    use notify::Watcher as _;
    watcher
        .watch(&entry.workspace, notify::RecursiveMode::Recursive)
        .map_err(|e| watch_error(lang, &entry, e))?;
    let Some(term) = Cbreak::enter() else {
        return Err(needs_terminal(
            lang,
            tr(
                lang,
                "端末から実行するか、`kca lab check` を使います",
                "run it in a terminal, or use `kca lab check`",
            ),
        ));
    };
    keys(tx);
    let mut s = Screen {
        mode: Mode::Task,
        hint: None,
        banner: None,
        on: None,
    };
    let mut last = grade_once(ctx, store, &lab)?;
    s.follow(&lab, &last, lang);
    s.draw(ctx, store, &lab, &last);
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Saved => {
                // Debounce: an editor's save is several events; grade once they stop.
                while let Ok(m) = rx.recv_timeout(DEBOUNCE) {
                    if let Msg::Key(k) = m
                        && quits(k)
                    {
                        drop(term);
                        return Ok(farewell(ctx, &last));
                    }
                }
                last = grade_once(ctx, store, &lab)?;
                s.follow(&lab, &last, lang);
            }
            Msg::Key(k) if quits(k) => break,
            Msg::Key(b'h') => {
                if let Some(t) = s.on.as_deref().and_then(|id| lab.task(id))
                    && !t.hints.is_empty()
                {
                    let n = take_hint(store, &lab, t)?;
                    s.hint = Some((t.id.clone(), n));
                }
                s.mode = Mode::Task;
            }
            Msg::Key(b'l') => s.mode = toggle(s.mode, Mode::List),
            Msg::Key(b'c') => s.mode = toggle(s.mode, Mode::All),
            Msg::Key(_) => s.mode = Mode::Task,
            Msg::KeysGone => break,
        }
        s.draw(ctx, store, &lab, &last);
    }
    drop(term);
    Ok(farewell(ctx, &last))
}

fn quits(k: u8) -> bool {
    matches!(k, b'q' | b'Q' | 3 | 4 | 27)
}

fn toggle(now: Mode, to: Mode) -> Mode {
    if now == to { Mode::Task } else { to }
}

fn watch_error(lang: Lang, e: &LabProgress, err: notify::Error) -> Error {
    Error::environment_with(
        tr_s(
            lang,
            format!("{} の変更を見張れません", e.workspace.display()),
            format!("cannot watch {} for changes", e.workspace.display()),
        ),
        tr(
            lang,
            "inotify の上限 (fs.inotify.max_user_watches) を確かめるか、`kca lab check` を使います",
            "check the inotify limits (fs.inotify.max_user_watches), or use `kca lab check`",
        ),
        err,
    )
}

/// Grades the whole lab once and records it, as `lab check` does.
fn grade_once(ctx: &Ctx, store: &Store, lab: &Lab) -> Result<(Graded, Option<progress::Standing>)> {
    let entry = progress::read(store)?
        .labs
        .get(&lab.id)
        .cloned()
        .unwrap_or_default();
    let g = grade_run(
        ctx,
        lab,
        &entry,
        &Default::default(),
        false,
        &[],
        super::lifecycle::Run::Learner,
    )?;
    let standing = record(ctx, store, lab, &g, &[]);
    Ok((g, standing))
}

/// The last line after watch ends: where the learner stands.
fn farewell(ctx: &Ctx, last: &(Graded, Option<progress::Standing>)) -> Exit {
    ctx.printer.prompt("\x1b[H\x1b[2J");
    ctx.printer
        .out(&report::score_line(&last.0.report, ctx.settings.lang));
    last.0.report.exit()
}

struct Screen {
    mode: Mode,
    /// The hint asked for with `h`: task id and how many are shown.
    hint: Option<(String, usize)>,
    /// Said once after a task passed.
    banner: Option<String>,
    /// The task on screen.
    on: Option<String>,
}

impl Screen {
    /// After a grade: the task to show (the incident in effect, else the first
    /// unfinished), and a banner when the one on screen passed.
    fn follow(&mut self, lab: &Lab, last: &(Graded, Option<progress::Standing>), lang: Lang) {
        let v = view(lab, &last.0, last.1.as_ref(), false);
        let now = report::focus(&last.0.report, &v).map(|t| t.id.clone());
        self.banner = None;
        if let Some(prev) = &self.on
            && now.as_ref() != Some(prev)
            && last.0.report.tasks.iter().any(|t| {
                &t.id == prev
                    && t.checks
                        .iter()
                        .all(|c| c.verdict == super::check::Verdict::Pass)
            })
        {
            let n = super::incident::number(lab, prev);
            self.banner = Some(match &now {
                Some(next) => tr_s(
                    lang,
                    format!(
                        "✓ タスク {n} 合格! 次はタスク {}",
                        super::incident::number(lab, next)
                    ),
                    format!(
                        "✓ task {n} passed! On to task {}",
                        super::incident::number(lab, next)
                    ),
                ),
                None => tr_s(
                    lang,
                    format!("✓ タスク {n} 合格!"),
                    format!("✓ task {n} passed!"),
                ),
            });
            self.hint = None;
        }
        if now.is_some() {
            self.on = now;
        }
        if self
            .hint
            .as_ref()
            .is_some_and(|(t, _)| Some(t) != self.on.as_ref())
        {
            self.hint = None;
        }
    }

    fn draw(
        &self,
        ctx: &Ctx,
        store: &Store,
        lab: &Lab,
        last: &(Graded, Option<progress::Standing>),
    ) {
        let lang = ctx.settings.lang;
        let p = &ctx.printer;
        let rows = terminal_size::terminal_size().map_or(30, |(_, h)| usize::from(h.0));
        let entry = progress::read(store)
            .ok()
            .and_then(|pr| pr.labs.get(&lab.id).cloned());
        let (g, standing) = last;
        let v = view(lab, g, standing.as_ref(), self.mode == Mode::All);
        let mut body = Vec::new();
        if let Some(b) = &self.banner {
            body.push(p.paint(Style::Pass, b));
        }
        let focus = report::focus(&g.report, &v);
        match self.mode {
            Mode::List => body.extend(super::task::list_lines(ctx, lab, entry.as_ref())),
            Mode::All => body.extend(report::text(&g.report, lab, lang, p, &v)),
            Mode::Task => match (focus, self.on.as_deref().and_then(|id| lab.task(id))) {
                (Some(t), Some(task)) => {
                    for inc in v.incidents.iter().filter(|i| i.task.id != task.id) {
                        for l in super::incident::notice(lang, inc) {
                            body.extend(
                                ui::wrap(&l, p.width(), "")
                                    .into_iter()
                                    .map(|l| p.paint(Style::Skip, &l)),
                            );
                        }
                    }
                    body.extend(super::task::intro(ctx, lab, task, entry.as_ref(), false));
                    body.push(String::new());
                    body.extend(report::task_lines(t, lab, lang, p, false, None));
                    if let Some((id, n)) = &self.hint
                        && id == &task.id
                        && let Some(text) = task.hints.get(n - 1)
                    {
                        body.push(String::new());
                        body.push(p.paint(
                            Style::Hint,
                            &format!("{} {n}/{}", tr(lang, "ヒント", "hint"), task.hints.len()),
                        ));
                        body.extend(ui::wrap(text.get(lang).trim_end(), p.width(), "  "));
                    }
                }
                _ => {
                    body.push(p.paint(
                        Style::Pass,
                        &tr_s(
                            lang,
                            format!("✓ ラボ完了 {} — 全タスク合格", lab.id),
                            format!("✓ lab finished: {} — every task passed", lab.id),
                        ),
                    ));
                    if let Some(s) = standing
                        && let Some(l) = super::overview::offline_line(lang, s)
                    {
                        body.push(l);
                    }
                }
            },
        }
        let footer = [
            report::score_line(&g.report, lang),
            p.paint(
                Style::Hint,
                &ui::truncate(
                    tr(
                        lang,
                        "保存すると採点 · h ヒント · l タスク一覧 · c 全チェック · q 終了",
                        "grades on save · h hint · l task list · c every check · q quit",
                    ),
                    p.width(),
                ),
            ),
        ];
        let room = rows.saturating_sub(footer.len() + 1).max(1);
        if body.len() > room {
            body.truncate(room - 1);
            body.push(p.paint(
                Style::Dim,
                tr(lang, "… (c で全チェック)", "… (c shows every check)"),
            ));
        }
        while body.len() < room {
            body.push(String::new());
        }
        p.prompt("\x1b[H\x1b[2J");
        for l in &body {
            p.out(l);
        }
        p.out("");
        p.out(&footer[0]);
        // The last line without a newline: the screen does not scroll.
        p.prompt(&footer[1]);
    }
}
