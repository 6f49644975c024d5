//! What every command gets: the resolved settings and the printer, and `block_on` for the
//! few commands that talk to a network. Commands depend on this module, never on `app`
//! (which dispatches to them).

use crate::settings::Settings;
use crate::ui::Printer;

/// What every command gets: the settings and the printer.
pub struct Ctx {
    pub settings: Settings,
    pub printer: Printer,
}

impl Ctx {
    pub fn new(settings: Settings) -> Self {
        let printer = Printer::new(&settings);
        Ctx { settings, printer }
    }

    /// The warning when progress could not be saved: the result stands; how to fix it.
    pub fn not_saved(&self, e: &crate::error::Error) -> String {
        let lang = self.settings.lang;
        format!(
            "{} {} ({e})\n  {} XDG_STATE_HOME={} kca …",
            crate::ui::tr(
                lang,
                "結果は上のとおりですが、進捗を保存できませんでした:",
                "the result above stands, but progress was not saved:",
            ),
            self.settings.state_dir.display(),
            crate::ui::tr(
                lang,
                "書き込めるフォルダーを指定してください。例:",
                "point kca at a writable folder, e.g.",
            ),
            std::env::temp_dir().join("kca-state").display(),
        )
    }

    /// Runs a future on a fresh multi-threaded runtime: async lives only where the
    /// network is, so only commands that talk to a cluster start one.
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> F::Output {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
            .block_on(fut)
    }
}
