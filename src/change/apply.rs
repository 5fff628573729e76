//! `apply`: server-side apply of the planned CRDs, `--concurrency` at a
//! time, each waited on until it is `Established`.
//!
//! The first failure stops the run: an operator's CRDs usually go together,
//! and applying the rest after one failed would leave a mix the user did not
//! review. Every CRD gets an outcome, so the report always says which were
//! applied and which were not.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::{Proposal, Question, Second, Verb, plural};
use crate::cluster::{ApplyError, Connection, Established};
use crate::delivery::owners::Owner;
use crate::outcome::{Action, Applied, ApplyOutcome, Planned};
use crate::parallel::in_order;
use crate::report::Report;

/// `apply`'s words.
pub const VERB: Verb = Verb {
    verb: "apply",
    doing: "applying",
    done: "applied",
};

/// What `apply` proposes after its check: the CRDs that change, refused on
/// error findings unless `force`, and on another field manager's fields
/// unless `force_conflicts`; a second question for updates of CRDs whose
/// owner puts its own version back, which only `override_owners` answers.
pub fn proposal(
    conn: &Connection,
    report: &Report,
    plan: &[Planned],
    force: bool,
    force_conflicts: bool,
    override_owners: bool,
) -> Proposal {
    let changes: Vec<&Planned> = plan
        .iter()
        .filter(|p| p.action != Action::Unchanged)
        .collect();
    let nothing_to_do = changes
        .is_empty()
        .then(|| "Nothing to apply: the cluster already has these CRDs as written.".to_string());
    let refusal = if let Some(refused) = refused_by_server(&changes) {
        Some(refused)
    } else if report.summary.errors > 0 && !force {
        Some(format!(
            "not applying: {} (use --force to apply anyway)",
            plural(report.summary.errors, "error finding", "error findings")
        ))
    } else {
        conflicts(&changes)
            .filter(|_| !force_conflicts)
            .map(|owned| {
                format!(
                    "not applying: another field manager owns fields the manifests change ({owned}); \
                     use --force-conflicts to take them over"
                )
            })
    };
    Proposal {
        verb: VERB,
        nothing_to_do,
        refusal,
        question: Question {
            heading: format!(
                "About to apply to context {} ({}):",
                conn.context, conn.server
            ),
            items: changes
                .iter()
                .map(|p| {
                    let mut what = p.action.as_str().to_string();
                    if !p.take_over.is_empty() {
                        what.push_str(&format!(
                            " (takes over the fields of {})",
                            p.take_over.join(", ")
                        ));
                    }
                    if !p.owners.is_empty() {
                        let who: Vec<String> = p.owners.iter().map(Owner::who).collect();
                        what.push_str(&format!(" (managed by {})", who.join(", ")));
                    }
                    (p.name.clone(), what)
                })
                .collect(),
            prompt: format!(
                "Apply {} to context {}?",
                plural(changes.len(), "CRD", "CRDs"),
                conn.context
            ),
        },
        second: owned(&changes, override_owners),
    }
}

/// The second question, for the updates of CRDs whose owner puts its own
/// version back (a Helm release, Argo CD, Flux, OLM): changed here, the
/// change lasts until that owner's next sync or upgrade, so the user says
/// yes to that in so many words (`--override-owners` under `--yes`).
/// Creations have no owner yet; an operator known only by its field
/// manager is already held back by the server's conflict
/// (`--force-conflicts`).
fn owned(changes: &[&Planned], override_owners: bool) -> Option<Second> {
    let owned: Vec<(&Planned, Vec<&Owner>)> = changes
        .iter()
        .filter(|p| p.action == Action::Update)
        .map(|p| {
            (
                *p,
                p.owners.iter().filter(|o| o.reverts).collect::<Vec<_>>(),
            )
        })
        .filter(|(_, owners)| !owners.is_empty())
        .collect();
    if owned.is_empty() {
        return None;
    }
    let mut tools: Vec<&str> = Vec::new();
    for owner in owned.iter().flat_map(|(_, owners)| owners) {
        if !tools.contains(&owner.tool()) {
            tools.push(owner.tool());
        }
    }
    let named: Vec<String> = owned
        .iter()
        .map(|(p, owners)| {
            let who: Vec<String> = owners.iter().map(|o| o.who()).collect();
            format!("{} ({})", p.name, who.join(", "))
        })
        .collect();
    Some(Second {
        question: Question {
            heading: "These CRDs are managed by someone else, who will put their own version back:"
                .into(),
            items: owned
                .iter()
                .map(|(p, owners)| {
                    let lines: Vec<String> = owners.iter().map(|o| o.line()).collect();
                    (p.name.clone(), lines.join("; "))
                })
                .collect(),
            prompt: format!(
                "Change {} managed by {} anyway?",
                plural(owned.len(), "CRD", "CRDs"),
                tools.join(" and ")
            ),
        },
        answered: override_owners,
        refusal: format!(
            "not applying without --override-owners: {}, whose owners put their own version back; \
             change the CRDs at their source, or pass --override-owners with --yes to apply anyway",
            named.join("; ")
        ),
    })
}

/// Why nothing is applied when the API server's dry run refuses any CRD of
/// the bundle: applying the others would leave the operator half upgraded,
/// and no flag makes the server accept what it refuses, so the message
/// names the way out instead (`migrate` when stored versions are the cause).
fn refused_by_server(changes: &[&Planned]) -> Option<String> {
    let refused: Vec<&&Planned> = changes.iter().filter(|p| p.rejected.is_some()).collect();
    if refused.is_empty() {
        return None;
    }
    let reasons: Vec<String> = refused
        .iter()
        .map(|p| {
            let reason = p.rejected.as_deref().unwrap_or_default();
            let way_out = if reason.contains("storedVersions") {
                format!(
                    " (run `kubectl crd-safety migrate {}` first, then apply again)",
                    p.name
                )
            } else {
                String::new()
            };
            format!("{}: {reason}{way_out}", p.name)
        })
        .collect();
    Some(format!(
        "not applying any of the {}: the API server refuses {} of them (server-side dry run), and applying \
the rest would leave the bundle half applied; {}",
        plural(changes.len(), "CRD", "CRDs"),
        refused.len(),
        reasons.join("; ")
    ))
}

/// The CRDs whose apply would conflict with another field manager, named
/// for the refusal message, or `None`.
fn conflicts(changes: &[&Planned]) -> Option<String> {
    let names: Vec<&str> = changes
        .iter()
        .filter(|p| p.conflict.is_some())
        .map(|p| p.name.as_str())
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// How to apply.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions {
    /// Take over fields owned by other field managers (`--force-conflicts`).
    pub force_conflicts: bool,
    /// How long to wait for each CRD to be `Established`.
    pub wait: Duration,
    /// Applies in flight at once.
    pub concurrency: usize,
}

/// Applies every planned change, `concurrency` at a time, reported in
/// plan order; the first failure stops those not yet started.
pub async fn apply(conn: &Connection, plan: &[Planned], opts: ApplyOptions) -> Vec<Applied> {
    // The first failure stops the rest: applies not yet started are not
    // started; those in flight finish and say how they ended.
    let stopped = AtomicBool::new(false);
    let stopped = &stopped;
    let applies = plan.iter().map(|p| async move {
        let outcome = if stopped.load(Ordering::SeqCst) {
            ApplyOutcome::NotApplied
        } else if p.action == Action::Unchanged {
            ApplyOutcome::Unchanged
        } else {
            apply_one(conn, p, opts).await
        };
        if matches!(
            outcome,
            ApplyOutcome::Failed(_) | ApplyOutcome::NotEstablished(_)
        ) {
            stopped.store(true, Ordering::SeqCst);
        }
        Ok::<_, Infallible>(Applied {
            name: p.name.clone(),
            action: p.action,
            outcome,
        })
    });
    match in_order(applies, opts.concurrency).await {
        Ok(applied) => applied,
        Err(never) => match never {},
    }
}

async fn apply_one(conn: &Connection, p: &Planned, opts: ApplyOptions) -> ApplyOutcome {
    if !p.take_over.is_empty() {
        let from: Vec<&str> = p.take_over.iter().map(String::as_str).collect();
        if let Err(e) = conn.take_over_fields(&p.name, &from).await {
            return ApplyOutcome::Failed(format!(
                "taking over the fields of {}: {e}",
                p.take_over.join(", ")
            ));
        }
    }
    let applied = match conn.apply(&p.name, &p.manifest, opts.force_conflicts).await {
        Ok(applied) => applied,
        Err(e) => {
            return ApplyOutcome::Failed(match e {
                ApplyError::Conflict(_) | ApplyError::Rejected(_) => e.to_string(),
                ApplyError::Cluster(c) => c.to_string(),
            });
        }
    };
    match conn
        .wait_established(&p.name, opts.wait, Some(&applied))
        .await
    {
        Ok(Established::Yes) if p.action == Action::Create => ApplyOutcome::Created,
        Ok(Established::Yes) => ApplyOutcome::Configured,
        Ok(Established::NamesRefused(m)) => {
            ApplyOutcome::NotEstablished(format!("the API server refused its names: {m}"))
        }
        Ok(Established::TimedOut) => ApplyOutcome::NotEstablished(format!(
            "applied, but not Established after {}s (--wait-timeout)",
            opts.wait.as_secs_f64()
        )),
        Ok(Established::Gone) => {
            ApplyOutcome::NotEstablished("applied, then deleted by someone else".into())
        }
        Err(e) => {
            ApplyOutcome::NotEstablished(format!("applied, but its status cannot be read: {e}"))
        }
    }
}
