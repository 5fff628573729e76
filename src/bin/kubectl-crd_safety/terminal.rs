//! The terminal: stdout that tolerates a closed pipe, colors and widths,
//! the confirmation question, and progress lines on stderr.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};

use crd_safety::cluster;
use crd_safety::cluster_write::{Answer, Confirm, Question};
use crd_safety::command::Failure;
use crd_safety::report::{Report, write_report};

use crate::cli::{ColorChoice, ReportArgs};

/// Writes to stdout; a closed pipe (`| head`) is a normal end, not an error.
pub fn emit(text: &str) -> Result<(), Failure> {
    emit_with(|out| out.write_all(text.as_bytes()))
}

/// Writes to stdout through a buffer; a reader that went away (`| head`)
/// is not an error.
pub fn emit_with(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<(), Failure> {
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    match write(&mut out).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::Output(e)),
    }
}

/// `--color`, with `auto` deciding as other CLIs do: `NO_COLOR`, a
/// terminal on stdout, and not `TERM=dumb`.
pub fn use_color(choice: ColorChoice) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stdout().is_terminal()
                && std::env::var("TERM").map_or(true, |t| t != "dumb")
        }
    }
}

/// The width tables are drawn to: `COLUMNS`, else the terminal's, else 140.
pub fn table_width() -> u16 {
    if let Some(w) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<u16>().ok())
    {
        return w.max(60);
    }
    if std::io::stdout().is_terminal()
        && let Some(w) = comfy_table::Table::new().width()
    {
        return w.max(60);
    }
    140
}

/// Shows the report on stdout in the format the flags chose.
pub fn show(report: &Report, args: &ReportArgs) -> Result<(), Failure> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let options = args.render(&cwd);
    emit_with(|mut out| write_report(report, &options, &mut out))
}

/// Tells the user that `--write-baseline` wrote its file.
pub fn told_baseline(written: Option<usize>, args: &ReportArgs) {
    if let (Some(count), Some(path)) = (written, &args.write_baseline) {
        eprintln!(
            "wrote {} to the baseline {}",
            crd_safety::text::plural(count, "finding", "findings"),
            path.display()
        );
    }
}

/// Asks the user on the terminal (stderr), default No. Without a terminal
/// there is nobody to ask, which the library turns into a refusal.
pub struct TerminalConfirm;

impl Confirm for TerminalConfirm {
    fn confirm(&mut self, question: &Question) -> Result<Answer, String> {
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Ok(Answer::NoTerminal);
        }
        eprint!("{}", question.text());
        match dialoguer::Confirm::new()
            .with_prompt(question.prompt.clone())
            .default(false)
            .interact_opt()
        {
            Ok(Some(true)) => Ok(Answer::Yes),
            // Esc or q: no answer is a no.
            Ok(Some(false) | None) => Ok(Answer::No),
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Completes on SIGTERM (the kubelet stopping a pod, a CI job cancelled)
/// or Ctrl-C.
pub async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// The template of a spinner line.
pub const SPINNER: &str = "{spinner} {msg} [{elapsed}]";

/// A progress line on stderr. Its message has two parts: the step the
/// command is at, and the latest retry the connection reported; each
/// update redraws both, so neither has to be recovered from the text.
#[derive(Clone)]
pub struct ProgressLine {
    bar: indicatif::ProgressBar,
    parts: Arc<Mutex<Parts>>,
}

#[derive(Default)]
struct Parts {
    step: String,
    retry: Option<String>,
}

impl ProgressLine {
    /// `bar` drawn with `template`, when stderr is a terminal.
    pub fn on_terminal(bar: indicatif::ProgressBar, template: &str) -> Option<ProgressLine> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let style = indicatif::ProgressStyle::with_template(template)
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            // `{per_sec}` shows four decimals (`41.9873/s`); a rate is read whole.
            .with_key(
                "rate",
                |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{:.0}/s", state.per_sec());
                },
            );
        bar.set_style(style);
        Some(ProgressLine::new(bar))
    }

    fn new(bar: indicatif::ProgressBar) -> ProgressLine {
        ProgressLine {
            bar,
            parts: Arc::default(),
        }
    }

    /// The bar, for positions and for finishing it.
    pub fn bar(&self) -> &indicatif::ProgressBar {
        &self.bar
    }

    /// A new step: the retry note of the previous one goes.
    pub fn step(&self, step: String) {
        self.update(|p| {
            p.step = step;
            p.retry = None;
        });
    }

    /// A retry, shown after the step until the next step.
    pub fn retried(&self, notice: String) {
        self.update(|p| p.retry = Some(notice));
    }

    fn update(&self, change: impl FnOnce(&mut Parts)) {
        let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut parts);
        let message = match &parts.retry {
            Some(notice) => format!("{}  | retrying {notice}", parts.step),
            None => parts.step.clone(),
        };
        self.bar.set_message(message);
        self.bar.tick();
    }
}

/// Shows every retry as it happens: on the progress line when there is
/// one, else as a warning line on stderr.
pub fn show_retries(conn: &cluster::Connection, line: Option<&ProgressLine>) {
    let line = line.cloned();
    conn.on_retry(move |notice| match &line {
        Some(line) => line.retried(notice.to_string()),
        None => eprintln!("warning: {notice}"),
    });
}

/// `, 3 retries` for a progress line, once there are any.
pub fn retries_so_far(conn: &cluster::Connection) -> String {
    match conn.retries() {
        0 => String::new(),
        1 => ", 1 retry".to_string(),
        n => format!(", {n} retries"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crd_safety::cluster::RetryNotice;
    use std::time::Duration;

    #[tokio::test]
    async fn the_progress_line_shows_the_latest_retry_and_the_count() {
        let never = tower::service_fn(|_: http::Request<kube::client::Body>| async {
            Err::<http::Response<kube::client::Body>, _>(std::io::Error::other("unused"))
        });
        let conn = cluster::Connection::from_client(
            kube::Client::new(never, "default"),
            "test",
            "http://test",
        );
        let line = ProgressLine::new(indicatif::ProgressBar::hidden());
        line.step("scanning widgets v1: 500 objects".to_string());
        show_retries(&conn, Some(&line));
        for retry in 1..=2 {
            conn.note_retry(&RetryNotice {
                request: "LIST example.com/v1 widgets".into(),
                cause: "503 Service Unavailable".into(),
                retry,
                wait: Duration::from_millis(250 * u64::from(retry)),
            });
        }
        assert_eq!(
            line.bar().message(),
            "scanning widgets v1: 500 objects  | retrying LIST example.com/v1 widgets: \
             503 Service Unavailable; retry 2 in 0.5s"
        );
        assert_eq!(retries_so_far(&conn), ", 2 retries");
        line.step(format!(
            "scanning widgets v1: 900 objects{}",
            retries_so_far(&conn)
        ));
        assert_eq!(
            line.bar().message(),
            "scanning widgets v1: 900 objects, 2 retries"
        );
    }
}
