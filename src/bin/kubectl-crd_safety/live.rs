//! The commands that read the cluster: `apply-check`, and `apply`, which
//! runs the same check before it asks.

use std::sync::Arc;

use crd_safety::cluster;
use crd_safety::cluster_write::apply::{RESTORE_WITHIN, Stop};
use crd_safety::command::{self, Failure, apply_check};
use crd_safety::live_check::{CheckOptions, Step};
use crd_safety::manifest::{HelmUpgrade, ManifestSet};
use crd_safety::report::{render_outcomes, render_structured, retries_line};

use crate::cli::{ApplyArgs, ApplyCheckArgs, KubeArgs};
use crate::terminal::{
    ProgressLine, SPINNER, TerminalConfirm, emit, retries_so_far, show, show_retries, terminated,
    told_baseline, use_color,
};

/// What Ctrl-C or SIGTERM during `apply`'s writes prints.
const INTERRUPTED: &str = "\ninterrupted: no more writes start; the CRDs already written are \
restored to their checked state (within 30s)";

/// Connects as kubectl would; with `-v 6` or more, each request to the API
/// server is printed on stderr (never its headers or body, so never a
/// credential).
pub async fn connect(args: &KubeArgs) -> Result<cluster::Connection, Failure> {
    let conn = cluster::connect(&args.flags()).await?;
    if args.verbosity >= 6 {
        conn.on_request(|trace| eprintln!("request: {trace}"));
    }
    Ok(conn)
}

/// The runtime of the live commands: one thread is plenty for a client.
/// Its blocking threads validate objects against CEL rules.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_stack_size(crd_safety::parallel::STACK_BYTES)
        .build()
        .map_err(Failure::Runtime)
}

pub fn apply_check(args: ApplyCheckArgs) -> Result<u8, Failure> {
    let request = args.manifests()?;
    let new = apply_check::load(&request)?;
    let checked = runtime()?.block_on(async {
        let conn = connect(&args.kube)
            .await?
            .with_field_manager(&args.field_manager);
        check(&conn, &request, &new, &args, None).await
    })?;
    let report = &checked.check.report;
    show(report, &args.report)?;
    Ok(report.exit_code())
}

/// Runs the live check, with the object scan and a progress line when
/// asked.
pub async fn check(
    conn: &cluster::Connection,
    request: &command::Manifests,
    new: &ManifestSet,
    args: &ApplyCheckArgs,
    helm: Option<&HelmUpgrade>,
) -> Result<apply_check::Checked, Failure> {
    // A progress line on a terminal: the dry runs over the bundle's CRDs,
    // then the object scans.
    let line = ProgressLine::on_terminal(indicatif::ProgressBar::new_spinner(), SPINNER);
    show_retries(conn, line.as_ref());
    let progress = |step: Step<'_>| {
        let Some(line) = &line else { return };
        let message = match step {
            Step::DryRun { done, total } => format!(
                "server-side dry run: {done} of {}",
                crd_safety::text::plural(total, "CRD", "CRDs")
            ),
            Step::Scan(p) => {
                let total = p.total.map(|t| format!(" of ~{t}")).unwrap_or_default();
                format!(
                    "scanning {} {}: {} objects{total}",
                    p.crd, p.version, p.scanned
                )
            }
        };
        line.step(format!("{message}{}", retries_so_far(conn)));
    };
    let options = CheckOptions {
        concurrency: usize::from(args.concurrency),
        scan: args.scan(),
        probe_conversion: args.probe_conversion,
        probe_services: args.probe_conversion_service.clone(),
        progress: &progress,
    };
    let result = match helm {
        Some(spec) => command::helm_upgrade::run(conn, request, spec, new, &options).await,
        None => apply_check::run(conn, request, new, &options).await,
    };
    if let Some(line) = &line {
        line.bar().finish_and_clear();
    }
    show_retries(conn, None);
    let checked = result?;
    told_baseline(checked.baseline_written, &args.report);
    Ok(checked)
}

/// `apply`: the check, the report, the question, the writes (whole or
/// restored), the outcome table.
pub fn apply(args: ApplyArgs) -> Result<u8, Failure> {
    const _: () = assert!(RESTORE_WITHIN.as_secs() == 30, "INTERRUPTED names 30s");
    let request = args.check.manifests()?;
    let new = apply_check::load(&request)?;
    let output = args.check.report.output;
    runtime()?.block_on(async {
        let conn = connect(&args.check.kube)
            .await?
            .with_field_manager(&args.check.field_manager);
        let checked = check(&conn, &request, &new, &args.check, None).await?;
        let report = &checked.check.report;
        if !output.is_structured() {
            show(report, &args.check.report)?;
        }
        // Once the answer is yes: Ctrl-C or SIGTERM stops the writes and
        // restores what was written, instead of killing the run half-way.
        let stop = Arc::new(Stop::default());
        let mut started = || {
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                terminated().await;
                eprintln!("{INTERRUPTED}");
                stop.stop();
            });
        };
        let hooks = command::apply::Hooks {
            started: &mut started,
            stop: &stop,
        };
        let run = command::apply::run(
            &conn,
            &checked.check,
            args.request(),
            &mut TerminalConfirm,
            hooks,
        )
        .await?;
        if let Some(message) = &run.decided.message {
            eprintln!("{message}");
        }
        if output.is_structured() {
            let structured = command::apply::Output::new(report, &run);
            emit(&render_structured(
                &structured,
                output == crd_safety::report::OutputFormat::Yaml,
            )?)?;
        } else if run.decided.decision.went_ahead() {
            let color = use_color(args.check.report.color);
            let mut outcomes = render_outcomes(&conn.context, &run.results, run.interrupted, color);
            if run.retries > 0 {
                outcomes.push_str(&format!("{}\n", retries_line(run.retries)));
            }
            if output.is_for_tools() {
                eprint!("{outcomes}");
            } else {
                emit(&outcomes)?;
            }
        }
        Ok(run.decided.decision.exit_code())
    })
}
