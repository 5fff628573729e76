//! `migrate CRD...`: rewrite every stored object in the storage version,
//! then trim `status.storedVersions`.

use std::sync::atomic::AtomicBool;

use serde::Serialize;

use super::Failure;
use crate::cluster::Connection;
use crate::cluster_write::migrate::{self, PlanOptions, RewriteProgress, RunOptions};
use crate::cluster_write::{Confirm, Decided, Decision, decide, decide_dry_run};
use crate::outcome::{MigrateSection, Migrated, MigrationPlan};
use crate::scan::Progress;

/// Reads each named CRD and checks every object as a rewrite would judge
/// it; `progress` hears of each page.
pub async fn plan(
    conn: &Connection,
    names: &[String],
    options: PlanOptions,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<MigrationPlan, Failure> {
    Ok(migrate::plan(conn, names, options, progress).await?)
}

/// The flags of `migrate` beyond its plan's.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// `--dry-run`: plan, say what would happen, change nothing.
    pub dry_run: bool,
    /// `--yes`: do not ask.
    pub yes: bool,
    /// Page size, writes in flight, the server engine's wait.
    pub run: RunOptions,
}

/// What the caller hears while objects are rewritten.
pub struct Hooks<'a> {
    /// Called once, right before the first write (after the answer): the
    /// moment from which Ctrl-C should stop the run cleanly.
    pub started: &'a mut dyn FnMut(),
    /// Each object done.
    pub progress: &'a mut dyn FnMut(RewriteProgress<'_>),
    /// Set to stop: writes in flight finish, no new ones start, and
    /// `storedVersions` stays as it is.
    pub stop: &'a AtomicBool,
}

/// How a `migrate` ended.
#[derive(Debug)]
pub struct MigrateRun {
    /// What was decided, and the line that tells the user why when nothing
    /// was migrated.
    pub decided: Decided,
    /// Each CRD's outcome, in the order given (empty when nothing ran).
    pub results: Vec<Migrated>,
}

/// Decides (`--dry-run`, nothing to do, `--yes` or the question through
/// `confirm`) and, when the answer is yes, migrates what `plan` found.
pub async fn run(
    conn: &Connection,
    plan: &MigrationPlan,
    request: Request,
    confirm: &mut dyn Confirm,
    hooks: Hooks<'_>,
) -> Result<MigrateRun, Failure> {
    let proposal = migrate::proposal(plan);
    let mut decided = if request.dry_run {
        decide_dry_run(&proposal)
    } else {
        decide(&proposal, request.yes, confirm)?
    };
    let mut results = Vec::new();
    if decided.decision == Decision::Done {
        (hooks.started)();
        results = migrate::migrate(conn, plan, request.run, hooks.stop, hooks.progress).await;
        decided.decision = migrate::decision(&results);
    }
    Ok(MigrateRun { decided, results })
}

/// `migrate -o json|yaml`: the plan with the `migrate` section added
/// (`docs/output.schema.json`).
#[derive(Debug, Serialize)]
pub struct Output<'a> {
    /// The plan.
    #[serde(flatten)]
    pub plan: &'a MigrationPlan,
    /// What `migrate` did.
    pub migrate: MigrateSection<'a>,
}

impl<'a> Output<'a> {
    /// The structured output of `run`'s outcome over `plan`.
    pub fn new(plan: &'a MigrationPlan, run: &'a MigrateRun) -> Self {
        Output {
            plan,
            migrate: MigrateSection {
                decision: run.decided.decision.as_str(migrate::VERB.done),
                results: &run.results,
            },
        }
    }
}
