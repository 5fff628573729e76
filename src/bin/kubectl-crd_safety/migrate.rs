//! `migrate`: the plan, the question, then the rewrite with a bar.

use std::cell::OnceCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crd_safety::cluster_write::migrate;
use crd_safety::command::{self, Failure};
use crd_safety::report::{
    TableOptions, render_migration_outcome, render_migration_plan, render_structured,
};
use crd_safety::scan::Progress;

use crate::cli::{ChangeOutput, MigrateArgs};
use crate::live::{connect, runtime};
use crate::terminal::{
    ProgressLine, SPINNER, TerminalConfirm, emit, retries_so_far, show_retries, table_width,
    use_color,
};

/// What Ctrl-C during the rewrite prints.
const INTERRUPTED: &str =
    "\ninterrupted: finishing the writes in flight; storedVersions stays as it is";

pub fn migrate(args: MigrateArgs) -> Result<u8, Failure> {
    let structured = args.output != ChangeOutput::Table;
    let color = use_color(args.color);
    runtime()?.block_on(async {
        let conn = connect(&args.kube).await?;
        let spinner = ProgressLine::on_terminal(indicatif::ProgressBar::new_spinner(), SPINNER);
        show_retries(&conn, spinner.as_ref());
        let mut progress = |p: Progress<'_>| {
            if let Some(line) = &spinner {
                line.step(format!(
                    "checking {} in {}: {} objects{}",
                    p.crd,
                    p.version,
                    p.scanned,
                    retries_so_far(&conn)
                ));
            }
        };
        let planned = command::migrate::plan(&conn, &args.crds, args.plan(), &mut progress).await;
        if let Some(line) = &spinner {
            line.bar().finish_and_clear();
        }
        show_retries(&conn, None);
        let plan = planned?;
        if !structured {
            emit(&render_migration_plan(
                &plan,
                TableOptions {
                    color,
                    width: table_width(),
                    show_info: false,
                    wide: false,
                    cwd: None,
                },
            ))?;
        }
        // Once the answer is yes: Ctrl-C stops the run cleanly instead of
        // killing it, and a bar counts the objects.
        let stop = Arc::new(AtomicBool::new(false));
        let bar: OnceCell<Option<ProgressLine>> = OnceCell::new();
        let mut started = || {
            let flag = Arc::clone(&stop);
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    flag.store(true, Ordering::SeqCst);
                    eprintln!("{INTERRUPTED}");
                }
            });
            let total: u64 = plan.crds.iter().filter_map(|c| c.objects).sum();
            let drawn = ProgressLine::on_terminal(
                indicatif::ProgressBar::new(total),
                "{msg} [{bar:30}] {pos}/{len} {rate} ETA {eta}",
            );
            show_retries(&conn, drawn.as_ref());
            let _ = bar.set(drawn);
        };
        let mut before = 0u64;
        let mut current = String::new();
        let mut tick = |p: migrate::RewriteProgress<'_>| {
            if let Some(line) = bar.get().and_then(Option::as_ref) {
                if current != p.crd {
                    before = line.bar().position();
                    current = p.crd.to_string();
                    line.step(format!("rewriting {}", p.crd));
                }
                line.bar().set_position(before + p.done);
            }
        };
        let hooks = command::migrate::Hooks {
            started: &mut started,
            progress: &mut tick,
            stop: &stop,
        };
        let run =
            command::migrate::run(&conn, &plan, args.request(), &mut TerminalConfirm, hooks).await;
        if let Some(line) = bar.get().and_then(Option::as_ref) {
            line.bar().finish_and_clear();
        }
        show_retries(&conn, None);
        let run = run?;
        if let Some(message) = &run.decided.message {
            eprintln!("{message}");
        }
        if structured {
            let output = command::migrate::Output::new(&plan, &run);
            emit(&render_structured(
                &output,
                args.output == ChangeOutput::Yaml,
            )?)?;
        } else if run.decided.decision.went_ahead() {
            emit(&render_migration_outcome(
                &conn.context,
                &run.results,
                color,
            ))?;
        }
        Ok(run.decided.decision.exit_code())
    })
}
