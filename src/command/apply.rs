//! `apply`: the live check, the question, then every CRD, or none and
//! the ones already written restored.

use std::time::Duration;

use serde::Serialize;

use super::Failure;
use crate::cluster::Connection;
use crate::cluster_write::apply::{self, ApplyOptions, RESTORE_WITHIN, Stop};
use crate::cluster_write::{Confirm, Decided, Decision, decide};
use crate::live_check::LiveCheck;
use crate::outcome::{Applied, ApplySection};
use crate::report::Report;

/// The flags of `apply` beyond its check's.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// `--yes`: do not ask.
    pub yes: bool,
    /// `--force`: apply despite error findings.
    pub force: bool,
    /// `--force-conflicts`: take over other field managers' fields.
    pub force_conflicts: bool,
    /// `--override-owners`: the answer to the second question (changing
    /// CRDs that Helm, Argo CD, Flux or OLM manage), which `--yes` is not.
    pub override_owners: bool,
    /// `--wait-timeout`: how long each CRD may take to be `Established`.
    pub wait: Duration,
    /// `--concurrency`: applies in flight at once.
    pub concurrency: usize,
}

/// What the binary hooks into the write phase.
pub struct Hooks<'a> {
    /// Called once, right before the first write (after the answer): the
    /// moment from which Ctrl-C should stop the run and restore, rather
    /// than kill it.
    pub started: &'a mut dyn FnMut(),
    /// Set to stop (Ctrl-C, SIGTERM): no new write starts, and what was
    /// written is restored.
    pub stop: &'a Stop,
}

/// How an `apply` ended.
#[derive(Debug)]
pub struct ApplyRun {
    /// What was decided, and the line that tells the user why when nothing
    /// was applied.
    pub decided: Decided,
    /// Each CRD's outcome, in manifest order (empty when nothing was
    /// applied).
    pub results: Vec<Applied>,
    /// Requests retried while applying.
    pub retries: u64,
    /// Ctrl-C or SIGTERM stopped the writes, and what was written was
    /// restored.
    pub interrupted: bool,
}

/// Decides (refused, nothing to do, `--yes` or the question through
/// `confirm`) and, when the answer is yes, applies the plan of `checked`.
/// A failure of any CRD makes the decision [`Decision::Failed`] (every CRD
/// as checked) or [`Decision::Partial`] (some left applied).
pub async fn run(
    conn: &Connection,
    checked: &LiveCheck,
    request: Request,
    confirm: &mut dyn Confirm,
    hooks: Hooks<'_>,
) -> Result<ApplyRun, Failure> {
    let proposal = apply::proposal(
        conn,
        &checked.report,
        &checked.plan,
        request.force,
        request.force_conflicts,
        request.override_owners,
    );
    let mut decided = decide(&proposal, request.yes, confirm)?;
    let retries_before = conn.retries();
    let mut results = Vec::new();
    let mut interrupted = false;
    if decided.decision == Decision::Done {
        let opts = ApplyOptions {
            force_conflicts: request.force_conflicts,
            // Going ahead with conflicts means their question was answered
            // yes (or --force-conflicts was given).
            take_over_conflicts: proposal.conflicts.is_some(),
            wait: request.wait,
            concurrency: request.concurrency,
            restore_within: RESTORE_WITHIN,
        };
        (hooks.started)();
        let end = apply::apply(conn, &checked.plan, opts, hooks.stop).await;
        decided.decision = apply::decision(&end);
        interrupted = end.interrupted;
        results = end.results;
    }
    Ok(ApplyRun {
        decided,
        results,
        retries: conn.retries() - retries_before,
        interrupted,
    })
}

/// `apply -o json|yaml`: the check's report with the `apply` section added
/// (`docs/output.schema.json`).
#[derive(Debug, Serialize)]
pub struct Output<'a> {
    /// The check.
    #[serde(flatten)]
    pub report: &'a Report,
    /// What `apply` did.
    pub apply: ApplySection<'a>,
}

impl<'a> Output<'a> {
    /// The structured output of `run`'s outcome over `report`.
    pub fn new(report: &'a Report, run: &'a ApplyRun) -> Self {
        Output {
            report,
            apply: ApplySection {
                decision: run.decided.decision.as_str(apply::VERB.done),
                results: &run.results,
                retries: run.retries,
            },
        }
    }
}
