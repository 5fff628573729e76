//! `apply`: the planned CRDs written whole, or restored.
//!
//! Each write is conditional on the CRD being as its check read it: an
//! update's server-side apply names the checked `resourceVersion`, a create
//! is a POST that fails if the CRD appeared meanwhile. A change another
//! client made after the check is a conflict, reported, never overwritten.
//!
//! An operator's CRDs go together, so the first failure (a write refused,
//! a CRD changed since the check, one never `Established`) stops the run,
//! and so does [`Stop`] (Ctrl-C, SIGTERM): writes not yet started are not
//! started, and every CRD already written is restored to its checked state.
//! An update is written back as it was checked, conditional on the
//! `resourceVersion` of our own write, so a change someone made after it is
//! never clobbered (it is left, and said). A CRD this run created is
//! deleted again only when it has no objects: deleting a CRD deletes its
//! objects, and a controller may have stored some already; otherwise it is
//! left, and said. Restores get [`RESTORE_WITHIN`] in all, so a cluster
//! that stopped answering does not hold the run. Every CRD ends in one
//! stated [`ApplyOutcome`]; a kill (SIGKILL) leaves what was written.
//!
//! Writes go `--concurrency` at a time rather than one after another: a
//! bundle of 1,000 CRDs a 50 ms round trip away would otherwise spend most
//! of its time waiting, and restoring makes a failure whole however many
//! writes were in flight. Those in flight when a failure comes finish their
//! request (so that what they did is known) but no longer wait for
//! `Established`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::{Decision, Proposal, Question, Second, Verb, plural};
use crate::cluster::{
    ApplyError, Connection, Deleted, Established, RestoreError, created_by, only_status_moved,
    ownership, resource_version, same_managers,
};
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
/// error findings unless `force`; another field manager's fields are a
/// question on a terminal (take them over?) that `force_conflicts` answers,
/// and a refusal without one; a second question for updates of CRDs whose
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
        None
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
        conflicts: conflicts(&changes, force_conflicts),
        second: owned(&changes, override_owners),
    }
}

/// Fields named per conflict in the question at most; the rest are
/// counted.
const FIELDS_SHOWN: usize = 6;

/// The question about the CRDs whose apply would conflict with another
/// field manager: each manager and the fields of the change it owns, as
/// the server's dry run named them. A yes (or `force_conflicts`) takes
/// those fields over, in those CRDs only; without a terminal or under
/// `--yes` it is the refusal, which names the flags that lift it:
/// `--force-conflicts`, or `--field-manager` when one manager owns them
/// all through server-side apply (`kubectl apply --server-side`).
fn conflicts(changes: &[&Planned], force_conflicts: bool) -> Option<Second> {
    let conflicting: Vec<(&Planned, Vec<ownership::Owned>)> = changes
        .iter()
        .filter_map(|p| Some((*p, ownership::conflicts(p.conflict.as_deref()?))))
        .collect();
    if conflicting.is_empty() {
        return None;
    }
    let names: Vec<&str> = conflicting.iter().map(|(p, _)| p.name.as_str()).collect();
    let mut appliers = conflicting
        .iter()
        .map(|(_, owned)| ownership::sole_applier(owned));
    let first = appliers.next().flatten();
    let sole = first.filter(|m| appliers.all(|other| other == Some(m)));
    let as_owner = sole.map_or_else(String::new, |m| {
        format!(", or --field-manager {m} to apply as their owner")
    });
    let items = conflicting
        .iter()
        .map(|(p, owned)| {
            let described: Vec<String> = owned
                .iter()
                .map(|o| {
                    let mut fields: Vec<&str> = o
                        .fields
                        .iter()
                        .take(FIELDS_SHOWN)
                        .map(String::as_str)
                        .collect();
                    let more = o.fields.len().saturating_sub(FIELDS_SHOWN);
                    let more = format!("{more} more");
                    if o.fields.len() > FIELDS_SHOWN {
                        fields.push(&more);
                    }
                    format!("{} owns {}", o.manager, fields.join(", "))
                })
                .collect();
            let described = if described.is_empty() {
                // A message this build cannot read: the server's own words.
                p.conflict.clone().unwrap_or_default()
            } else {
                described.join("; ")
            };
            (p.name.clone(), described)
        })
        .collect();
    let instead = sole.map_or_else(String::new, |m| {
        format!(
            " (to apply as their owner instead, answer no and run again with --field-manager {m})"
        )
    });
    Some(Second {
        question: Question {
            heading: format!("Other field managers own fields the manifests change{instead}:"),
            items,
            prompt: format!(
                "Take these fields over in {} (as --force-conflicts does)?",
                plural(conflicting.len(), "CRD", "CRDs")
            ),
        },
        answered: force_conflicts,
        refusal: format!(
            "not applying: another field manager owns fields the manifests change ({}); \
             use --force-conflicts to take them over{as_owner}",
            names.join(", ")
        ),
    })
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

/// How long restoring the CRDs already written may take in all, once a
/// run stops: enough for a few rounds of requests on a busy server, short
/// enough that a cluster that stopped answering ends the run soon, with
/// what was not restored said.
pub const RESTORE_WITHIN: Duration = Duration::from_secs(30);

/// How to apply.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions {
    /// Take over fields owned by other field managers (`--force-conflicts`).
    pub force_conflicts: bool,
    /// Take over the fields the check found other managers own, in the
    /// CRDs where it found them: the yes to that question on a terminal.
    pub take_over_conflicts: bool,
    /// How long to wait for each CRD to be `Established`.
    pub wait: Duration,
    /// Writes (and restores) in flight at once.
    pub concurrency: usize,
    /// How long the restores may take in all ([`RESTORE_WITHIN`]).
    pub restore_within: Duration,
}

/// Stops a write phase: set by the binary on Ctrl-C or SIGTERM, and by the
/// run itself at its first failure. Writes not started are not started,
/// waits for `Established` end at once, and what was written is restored.
#[derive(Debug, Default)]
pub struct Stop {
    stopped: AtomicBool,
    notify: Notify,
}

impl Stop {
    /// Stops the run.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Whether the run was stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Completes once the run is stopped.
    pub async fn stopped(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a stop in between is
            // not missed.
            notified.as_mut().enable();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// How an apply ended: each CRD's state, in plan order.
#[derive(Debug, Clone)]
pub struct ApplyEnd {
    /// Each CRD's outcome.
    pub results: Vec<Applied>,
    /// Stopped by [`Stop`] from outside (Ctrl-C) before the bundle was
    /// whole, with no failure of its own.
    pub interrupted: bool,
}

/// The run's decision: [`Decision::Partial`] when any CRD is left applied
/// (the cluster has part of the bundle), else interrupted, failed (every
/// CRD as checked), or done.
pub fn decision(end: &ApplyEnd) -> Decision {
    let outcomes = || end.results.iter().map(|r| &r.outcome);
    if outcomes().any(|o| matches!(o, ApplyOutcome::LeftApplied(_))) {
        Decision::Partial
    } else if end.interrupted {
        Decision::Interrupted
    } else if outcomes().any(ApplyOutcome::is_failure) {
        Decision::Failed
    } else {
        Decision::Done
    }
}

/// What a written CRD's answer says that a restore is guarded by: its
/// identity, the `resourceVersion` the write produced, and its content in
/// small (a spec change moves `generation`), so the answers of a big bundle
/// are not kept whole.
#[derive(Debug, Clone, PartialEq)]
struct Stamp {
    uid: String,
    resource_version: String,
    generation: Option<i64>,
    labels: Value,
    annotations: Value,
}

impl Stamp {
    fn of(crd: &Value) -> Stamp {
        let meta = &crd["metadata"];
        Stamp {
            uid: meta["uid"].as_str().unwrap_or_default().to_string(),
            resource_version: resource_version(crd).to_string(),
            generation: meta["generation"].as_i64(),
            labels: meta["labels"].clone(),
            annotations: meta["annotations"].clone(),
        }
    }

    /// Whether `other` has the same spec (generation), labels and
    /// annotations: a change by anyone but the API server's status
    /// controllers.
    fn same_content(&self, other: &Stamp) -> bool {
        self.generation == other.generation
            && self.labels == other.labels
            && self.annotations == other.annotations
    }
}

/// Whether a written CRD is usable.
#[derive(Debug, Clone, PartialEq)]
enum Usable {
    Yes,
    /// Not: why (names refused, never established): a failure of the run.
    No(String),
    /// The wait was ended by a stop.
    Unknown,
}

/// What one write came to, before any restore.
#[derive(Debug, Clone, PartialEq)]
enum Write {
    NotAttempted,
    Unchanged,
    Written {
        created: bool,
        /// Boxed: the other outcomes are a message or nothing.
        stamp: Box<Stamp>,
        usable: Usable,
    },
    /// Refused or failed: not written.
    Failed(String),
    /// Changed since the check: not written.
    Conflict(String),
    /// Failed after the request may have reached the server.
    Unsure(String),
}

impl Write {
    fn of_error(e: ApplyError, step: &str) -> Write {
        let message = format!("{step}{e}");
        match e {
            ApplyError::Changed(_) => Write::Conflict(message),
            ApplyError::Unsure(_) => Write::Unsure(message),
            ApplyError::Conflict(_) | ApplyError::Rejected(_) | ApplyError::Cluster(_) => {
                Write::Failed(message)
            }
        }
    }

    /// Whether this write stops the run.
    fn stops(&self) -> bool {
        match self {
            Write::Failed(_) | Write::Conflict(_) | Write::Unsure(_) => true,
            Write::Written { usable, .. } => matches!(usable, Usable::No(_)),
            Write::NotAttempted | Write::Unchanged => false,
        }
    }

    /// Whether it may have changed the cluster, so a stopped run restores
    /// it.
    fn to_restore(&self) -> bool {
        matches!(self, Write::Written { .. } | Write::Unsure(_))
    }
}

/// What restoring one CRD takes, decided from the CRD as checked, what our
/// write produced (`None` when its answer was lost) and the CRD as it is
/// now.
#[derive(Debug, Clone, PartialEq)]
enum RestorePlan {
    /// The write never landed: the CRD is as checked.
    NotWritten,
    /// Already in its checked state (why).
    AsChecked(String),
    /// PUT the checked CRD back, conditional on this `resourceVersion`.
    WriteBack { resource_version: String },
    /// Delete the CRD this run created, if it has no objects, conditional
    /// on its uid and `resourceVersion`.
    Delete {
        uid: String,
        resource_version: String,
    },
    /// Leave it as it is (why).
    Leave(String),
}

fn plan_restore(
    checked: Option<&Value>,
    written: Option<&Stamp>,
    now: Option<&Value>,
    ours: &str,
) -> RestorePlan {
    let Some(now) = now else {
        return match (checked, written) {
            (None, None) => RestorePlan::NotWritten,
            (None, Some(_)) => RestorePlan::AsChecked("deleted by another client since".into()),
            (Some(_), _) => RestorePlan::Leave(
                "not restored: deleted by another client since, and not created again".into(),
            ),
        };
    };
    let now_stamp = Stamp::of(now);
    let written = match written {
        Some(w) => w.clone(),
        // The answer was lost: the CRD as it is now tells whether the write
        // landed, where it can.
        None => match checked {
            Some(c) if resource_version(c) == now_stamp.resource_version => {
                return RestorePlan::NotWritten;
            }
            Some(_) => {
                return RestorePlan::Leave(
                    "not restored: the write's answer was lost and the CRD changed since the \
                     check, so whether this run wrote it cannot be told"
                        .into(),
                );
            }
            None if created_by(now, ours) => now_stamp.clone(),
            None => {
                return RestorePlan::Leave(
                    "not deleted: the create's answer was lost and the CRD has other field \
                     managers, so whether this run created it cannot be told"
                        .into(),
                );
            }
        },
    };
    if now_stamp.uid != written.uid {
        return RestorePlan::Leave(
            "not restored: deleted and created again by another client since this run wrote it"
                .into(),
        );
    }
    if !now_stamp.same_content(&written) {
        return RestorePlan::Leave(
            "not restored: changed by another client since this run wrote it, so that change \
             stays"
                .into(),
        );
    }
    match checked {
        Some(_) => RestorePlan::WriteBack {
            resource_version: now_stamp.resource_version,
        },
        None => RestorePlan::Delete {
            uid: now_stamp.uid,
            resource_version: now_stamp.resource_version,
        },
    }
}

/// The PUT that restores `checked` over the write whose `resourceVersion`
/// is `rv`: the checked CRD whole (its `managedFields` included), without
/// status, which a write of the CRD itself does not change.
fn restore_body(checked: &Value, rv: &str) -> Value {
    let mut body = checked.clone();
    if let Some(obj) = body.as_object_mut() {
        obj.remove("status");
    }
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
    body
}

/// What restoring one CRD came to.
#[derive(Debug, Clone, PartialEq)]
enum Undo {
    /// Its write never landed.
    NotWritten,
    /// In its checked state (how).
    Restored(String),
    /// Left as written (why).
    Left(String),
}

/// Each CRD's final state, and whether its own write stopped the run, from
/// its write and, when the run was restored, its restore.
fn settle(write: Write, undo: Option<Undo>) -> (ApplyOutcome, bool) {
    let stops = write.stops();
    let outcome = match (write, undo) {
        (Write::NotAttempted, _) => ApplyOutcome::NotApplied,
        (Write::Unchanged, _) => ApplyOutcome::Unchanged,
        (Write::Failed(m), _) => ApplyOutcome::Failed(m),
        (Write::Conflict(m), _) => ApplyOutcome::Conflict(m),
        (Write::Unsure(m), Some(Undo::NotWritten)) => {
            ApplyOutcome::Failed(format!("{m}; it was not written"))
        }
        (Write::Unsure(m), Some(Undo::Restored(how))) => {
            ApplyOutcome::Restored(format!("{m}; it had been written, then {how}"))
        }
        (Write::Unsure(m), Some(Undo::Left(why))) => {
            ApplyOutcome::LeftApplied(format!("{m}; {why}"))
        }
        (Write::Unsure(m), None) => ApplyOutcome::LeftApplied(format!("{m}; not restored")),
        (
            Write::Written {
                created, usable, ..
            },
            undo,
        ) => {
            let done = if created { "created" } else { "configured" };
            let what = match &usable {
                Usable::No(why) => format!("{done}, but {why}"),
                _ => done.to_string(),
            };
            match undo {
                None if created => ApplyOutcome::Created,
                None => ApplyOutcome::Configured,
                Some(Undo::Restored(how)) => ApplyOutcome::Restored(format!("{what}, then {how}")),
                Some(Undo::Left(why)) => ApplyOutcome::LeftApplied(format!("{what}; {why}")),
                Some(Undo::NotWritten) => ApplyOutcome::LeftApplied(format!(
                    "{what}; not restored: it shows no write of this run"
                )),
            }
        }
    };
    (outcome, stops)
}

/// Applies every planned change, `concurrency` at a time; at the first
/// failure, or when `stop` is set, starts no more and restores what was
/// written. Reported in plan order.
pub async fn apply(
    conn: &Connection,
    plan: &[Planned],
    opts: ApplyOptions,
    stop: &Stop,
) -> ApplyEnd {
    let failed = &AtomicBool::new(false);
    let writes = plan.iter().map(|p| async move {
        let write = if p.action == Action::Unchanged {
            Write::Unchanged
        } else if stop.is_stopped() {
            Write::NotAttempted
        } else {
            write_one(conn, p, opts, stop).await
        };
        if write.stops() {
            failed.store(true, Ordering::SeqCst);
            stop.stop();
        }
        Ok::<_, Infallible>(write)
    });
    let writes = match in_order(writes, opts.concurrency).await {
        Ok(w) => w,
        Err(never) => match never {},
    };
    let failed = failed.load(Ordering::SeqCst);
    // A stop from outside after every write was done and usable changes
    // nothing: the bundle is whole.
    let unfinished = writes.iter().any(|w| {
        matches!(
            w,
            Write::NotAttempted
                | Write::Written {
                    usable: Usable::Unknown,
                    ..
                }
        )
    });
    let restoring = failed || (stop.is_stopped() && unfinished);
    let undos: Vec<Option<Undo>> = if restoring {
        let deadline = Instant::now() + opts.restore_within;
        let undos = plan.iter().zip(&writes).map(|(p, w)| async move {
            if !w.to_restore() {
                return Ok::<_, Infallible>(None);
            }
            let undo = tokio::time::timeout_at(deadline, restore_one(conn, p, w, deadline))
                .await
                .unwrap_or_else(|_| {
                    Undo::Left(format!(
                        "restore did not finish within {}s; its last request may or may not have \
                         landed",
                        opts.restore_within.as_secs()
                    ))
                });
            Ok(Some(undo))
        });
        match in_order(undos, opts.concurrency).await {
            Ok(u) => u,
            Err(never) => match never {},
        }
    } else {
        vec![None; writes.len()]
    };
    let results = plan
        .iter()
        .zip(writes)
        .zip(undos)
        .map(|((p, write), undo)| {
            let (outcome, stopped_run) = settle(write, undo);
            Applied {
                name: p.name.clone(),
                action: p.action,
                outcome,
                stopped_run,
            }
        })
        .collect();
    ApplyEnd {
        results,
        interrupted: restoring && !failed,
    }
}

/// How many times an update is written again after its precondition met
/// a write of the API server's own controllers (see
/// [`only_status_moved`]).
const WRITE_TRIES: usize = 3;

/// Writes one CRD, conditional on its checked state, and waits until it is
/// `Established` (or the run is stopped).
async fn write_one(conn: &Connection, p: &Planned, opts: ApplyOptions, stop: &Stop) -> Write {
    let (created, answer) = match p.checked_json() {
        Some(checked) => match update(conn, p, checked, opts).await {
            Ok(answer) => (false, answer),
            Err(write) => return write,
        },
        None => match conn.create_crd(&p.name, &p.manifest).await {
            Ok(answer) => (true, answer),
            Err(e) => return Write::of_error(e, ""),
        },
    };
    let stamp = Box::new(Stamp::of(&answer));
    if created && let Err(e) = conn.adopt_created(&p.name).await {
        return Write::Written {
            created,
            stamp,
            usable: Usable::No(format!(
                "its fields could not be made the Apply entry of {}: {e}",
                conn.field_manager()
            )),
        };
    }
    let usable = tokio::select! {
        waited = conn.wait_established(&p.name, opts.wait, Some(&answer)) => match waited {
            Ok(Established::Yes) => Usable::Yes,
            Ok(Established::NamesRefused(m)) => {
                Usable::No(format!("the API server refused its names: {m}"))
            }
            Ok(Established::TimedOut) => Usable::No(format!(
                "it was not Established after {}s (--wait-timeout)",
                opts.wait.as_secs_f64()
            )),
            Ok(Established::Gone) => Usable::No("it was deleted by someone else".into()),
            Err(e) => Usable::No(format!("its status cannot be read: {e}")),
        },
        () = stop.stopped() => Usable::Unknown,
    };
    Write::Written {
        created,
        stamp,
        usable,
    }
}

/// How many times a restore reads the CRD and tries again after its write
/// met a `resourceVersion` the API server's own controllers moved (a new
/// CRD's status is written while it is being established): each time the
/// CRD is judged again, so a change by anyone else still stops it.
const RESTORE_TRIES: usize = 5;

/// The server-side apply of an update (after taking over kubectl's fields
/// when the plan says so), conditional on the CRD as it was checked: its
/// answer, or how the write ended without one.
async fn update(
    conn: &Connection,
    p: &Planned,
    checked: &Value,
    opts: ApplyOptions,
) -> Result<Value, Write> {
    let from: Vec<&str> = p.take_over.iter().map(String::as_str).collect();
    let take_over_step = format!("taking over the fields of {}: ", p.take_over.join(", "));
    // The CRD the next write is conditional on: as checked, or as our
    // take-over or the API server's status controllers left it since.
    let mut base: Option<Value> = None;
    let mut taken = from.is_empty();
    let mut tries = 0;
    loop {
        let current = base.as_ref().unwrap_or(checked);
        let (step, failed) = if taken {
            match conn
                .apply_at(
                    &p.name,
                    &p.manifest,
                    opts.force_conflicts || (opts.take_over_conflicts && p.conflict.is_some()),
                    resource_version(current),
                )
                .await
            {
                Ok(answer) => return Ok(answer),
                Err(e) => ("", e),
            }
        } else {
            match conn.take_over_fields(current, &from).await {
                Ok(after) => {
                    taken = true;
                    if after.is_some() {
                        base = after;
                    }
                    continue;
                }
                Err(e) => (take_over_step.as_str(), e),
            }
        };
        tries += 1;
        if matches!(failed, ApplyError::Changed(_)) && tries < WRITE_TRIES {
            // Moved by the API server's own status writes only: write again
            // over them; moved by anyone else: a conflict.
            if let Ok(Some(live)) = conn.get_crd(&p.name).await
                && only_status_moved(current, &live)
            {
                base = Some(live);
                continue;
            }
        }
        return Err(Write::of_error(failed, step));
    }
}

/// Puts one CRD that may have been written back in its checked state
/// (see the module's comment); `deadline` bounds waiting for a deleted
/// CRD to go.
async fn restore_one(conn: &Connection, p: &Planned, write: &Write, deadline: Instant) -> Undo {
    let written = match write {
        Write::Written { stamp, .. } => Some(&**stamp),
        _ => None,
    };
    let checked = p.checked_json();
    let mut last = String::new();
    for _ in 0..RESTORE_TRIES {
        let now = match conn.get_crd(&p.name).await {
            Ok(now) => now,
            Err(e) => return Undo::Left(format!("restore failed: it cannot be read: {e}")),
        };
        let done = match plan_restore(checked, written, now.as_ref(), conn.field_manager()) {
            RestorePlan::NotWritten => return Undo::NotWritten,
            RestorePlan::AsChecked(why) => return Undo::Restored(why),
            RestorePlan::Leave(why) => return Undo::Left(why),
            RestorePlan::WriteBack { resource_version } => match checked {
                Some(checked) => write_back(conn, &p.name, checked, &resource_version).await,
                None => return Undo::Left("not restored: nothing was checked to put back".into()),
            },
            RestorePlan::Delete {
                uid,
                resource_version,
            } => match now {
                Some(now) => {
                    delete_created(conn, &p.name, &now, &uid, &resource_version, deadline).await
                }
                None => return Undo::Restored("deleted by another client since".into()),
            },
        };
        match done {
            Ok(undo) => return undo,
            // Read again: a status write moved it, or someone else did.
            Err(RestoreError::Changed(m)) => last = m,
            Err(e) => return Undo::Left(restore_refused(e)),
        }
    }
    Undo::Left(restore_refused(RestoreError::Changed(last)))
}

/// Restores an update: the checked CRD PUT back, then its field owners as
/// they were (the PUT made our `Update` entry the owner of what it put
/// back, which the next `apply` would conflict with).
async fn write_back(
    conn: &Connection,
    name: &str,
    checked: &Value,
    rv: &str,
) -> Result<Undo, RestoreError> {
    let after = conn.write_back(&restore_body(checked, rv)).await?;
    let restored = || Ok(Undo::Restored("written back as it was checked".into()));
    let owners = checked["metadata"]["managedFields"].as_array();
    let Some(owners) = owners.filter(|o| !o.is_empty()) else {
        return restored();
    };
    if same_managers(&after["metadata"]["managedFields"], owners) {
        return restored();
    }
    match conn
        .set_managed_fields(name, resource_version(&after), owners)
        .await
    {
        Ok(_) => restored(),
        Err(e) => Ok(Undo::Restored(format!(
            "written back as it was checked (its field owners could not be put back: {e})"
        ))),
    }
}

/// Restores a create: the CRD deleted again when it has no objects.
async fn delete_created(
    conn: &Connection,
    name: &str,
    now: &Value,
    uid: &str,
    rv: &str,
    deadline: Instant,
) -> Result<Undo, RestoreError> {
    match conn.has_objects(now).await {
        Ok(false) => {}
        Ok(true) => {
            return Ok(Undo::Left(
                "not deleted: it has objects now, and deleting a CRD deletes its objects".into(),
            ));
        }
        Err(e) => {
            return Ok(Undo::Left(format!(
                "not deleted: whether it has objects cannot be read ({e}), and deleting a CRD \
                 deletes its objects"
            )));
        }
    }
    Ok(match conn.delete_crd_at(name, uid, rv).await? {
        Deleted::AlreadyGone => Undo::Restored("deleted by another client since".into()),
        Deleted::Yes => match conn.wait_deleted(name, deadline).await {
            Ok(true) => Undo::Restored("deleted again (it had no objects)".into()),
            Ok(false) | Err(_) => {
                Undo::Restored("deleted again (it had no objects; still terminating)".into())
            }
        },
    })
}

/// Why a restore write did not happen, for the outcome.
fn restore_refused(e: RestoreError) -> String {
    match e {
        RestoreError::Changed(m) => format!(
            "not restored: changed by another client since this run wrote it, so that change \
             stays ({m})"
        ),
        RestoreError::Gone => {
            "not restored: deleted by another client since this run wrote it".to_string()
        }
        RestoreError::Rejected(m) => format!("restore refused by the API server: {m}"),
        RestoreError::Cluster(c) => format!("restore failed: {c}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conflicting(name: &str, message: &str) -> Planned {
        Planned {
            name: name.into(),
            action: Action::Update,
            manifest: json!({}),
            conflict: Some(message.into()),
            take_over: Vec::new(),
            rejected: None,
            owners: Vec::new(),
            checked: None,
        }
    }

    #[test]
    fn the_conflicts_question_names_each_manager_and_its_fields() {
        let fields: Vec<String> = (0..8).map(|i| format!("- .spec.f{i}")).collect();
        let many = format!(
            "Apply failed with 8 conflicts: conflicts with \"helm\" using apiextensions.k8s.io/v1:\n{}",
            fields.join("\n")
        );
        let a = conflicting("a.example.com", &many);
        let b = conflicting(
            "b.example.com",
            r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.versions"#,
        );
        let asked = conflicts(&[&a, &b], false).expect("a question");
        assert_eq!(
            asked.question.items,
            [
                (
                    "a.example.com".to_string(),
                    "helm owns .spec.f0, .spec.f1, .spec.f2, .spec.f3, .spec.f4, .spec.f5, 2 more"
                        .to_string()
                ),
                (
                    "b.example.com".to_string(),
                    "kubectl owns .spec.versions".to_string()
                ),
            ]
        );
        assert!(!asked.answered);
        // Two owners, one of them an Update manager: no manager to apply as.
        assert_eq!(
            asked.refusal,
            "not applying: another field manager owns fields the manifests change \
             (a.example.com, b.example.com); use --force-conflicts to take them over"
        );
        let asked = conflicts(&[&b], true).expect("a question");
        assert!(asked.answered, "--force-conflicts answers it");
        assert!(
            asked
                .refusal
                .ends_with(", or --field-manager kubectl to apply as their owner"),
            "{}",
            asked.refusal
        );
        assert!(conflicts(&[], false).is_none());
    }

    /// A CRD as the API server returns it.
    fn crd(uid: &str, rv: &str, generation: i64, managers: &[&str]) -> Value {
        let managed: Vec<Value> = managers
            .iter()
            .map(|m| json!({"manager": m, "operation": "Apply", "fieldsV1": {"f:spec": {}}}))
            .collect();
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {
                "name": "widgets.example.com", "uid": uid, "resourceVersion": rv,
                "generation": generation, "labels": {"app": "w"},
                "managedFields": managed,
            },
            "spec": {"group": "example.com"},
            "status": {"storedVersions": ["v1"]},
        })
    }

    const US: &str = crate::cluster::FIELD_MANAGER;

    #[test]
    fn an_update_is_written_back_over_our_own_write_and_a_status_write_after_it() {
        let checked = crd("u1", "10", 1, &["helm"]);
        let ours = crd("u1", "11", 2, &["helm", US]);
        let stamp = Stamp::of(&ours);
        assert_eq!(
            plan_restore(Some(&checked), Some(&stamp), Some(&ours), US),
            RestorePlan::WriteBack {
                resource_version: "11".into()
            }
        );
        // The API server's controllers wrote the status since: not a change
        // of anyone's, and the guard is the resourceVersion it left.
        let mut status_since = ours.clone();
        status_since["metadata"]["resourceVersion"] = json!("12");
        status_since["status"]["acceptedNames"] = json!({"kind": "Widget"});
        assert_eq!(
            plan_restore(Some(&checked), Some(&stamp), Some(&status_since), US),
            RestorePlan::WriteBack {
                resource_version: "12".into()
            }
        );
    }

    #[test]
    fn a_change_by_someone_else_after_our_write_is_never_restored_over() {
        let checked = crd("u1", "10", 1, &[]);
        let stamp = Stamp::of(&crd("u1", "11", 2, &[US]));
        let mut spec_since = crd("u1", "12", 3, &[US, "kubectl-edit"]);
        let plan = plan_restore(Some(&checked), Some(&stamp), Some(&spec_since), US);
        assert!(
            matches!(&plan, RestorePlan::Leave(why) if why.contains("changed by another client since this run wrote it")),
            "{plan:?}"
        );
        spec_since["metadata"]["generation"] = json!(2);
        spec_since["metadata"]["annotations"] = json!({"note": "theirs"});
        assert!(matches!(
            plan_restore(Some(&checked), Some(&stamp), Some(&spec_since), US),
            RestorePlan::Leave(_)
        ));
        // Deleted and created again: another CRD of the same name.
        let again = crd("u2", "13", 1, &["helm"]);
        let plan = plan_restore(Some(&checked), Some(&stamp), Some(&again), US);
        assert!(
            matches!(&plan, RestorePlan::Leave(why) if why.contains("created again")),
            "{plan:?}"
        );
        // Deleted: an update is not put back by creating it.
        let plan = plan_restore(Some(&checked), Some(&stamp), None, US);
        assert!(
            matches!(&plan, RestorePlan::Leave(why) if why.contains("deleted by another client")),
            "{plan:?}"
        );
    }

    #[test]
    fn a_created_crd_is_deleted_by_uid_and_resource_version_or_found_gone() {
        let ours = crd("u9", "20", 1, &[US]);
        let stamp = Stamp::of(&ours);
        let mut established = ours.clone();
        established["metadata"]["resourceVersion"] = json!("21");
        assert_eq!(
            plan_restore(None, Some(&stamp), Some(&established), US),
            RestorePlan::Delete {
                uid: "u9".into(),
                resource_version: "21".into()
            }
        );
        assert!(matches!(
            plan_restore(None, Some(&stamp), None, US),
            RestorePlan::AsChecked(_)
        ));
    }

    #[test]
    fn a_write_whose_answer_was_lost_is_judged_by_the_crd_as_it_is_now() {
        let checked = crd("u1", "10", 1, &["helm"]);
        assert_eq!(
            plan_restore(Some(&checked), None, Some(&checked), US),
            RestorePlan::NotWritten,
            "still the checked resourceVersion: the write did not land"
        );
        let plan = plan_restore(Some(&checked), None, Some(&crd("u1", "11", 2, &[US])), US);
        assert!(
            matches!(&plan, RestorePlan::Leave(why) if why.contains("cannot be told")),
            "{plan:?}"
        );
        assert_eq!(plan_restore(None, None, None, US), RestorePlan::NotWritten);
        assert_eq!(
            plan_restore(None, None, Some(&crd("u3", "30", 1, &[US])), US),
            RestorePlan::Delete {
                uid: "u3".into(),
                resource_version: "30".into()
            },
            "only our field manager: our create landed"
        );
        assert!(matches!(
            plan_restore(None, None, Some(&crd("u3", "30", 1, &["helm"])), US),
            RestorePlan::Leave(_)
        ));
    }

    #[test]
    fn the_restore_puts_the_checked_crd_back_owners_included_without_status() {
        let checked = crd("u1", "10", 1, &["kubectl-client-side-apply"]);
        let body = restore_body(&checked, "11");
        assert_eq!(body["metadata"]["resourceVersion"], "11");
        assert_eq!(body["metadata"]["uid"], "u1");
        assert_eq!(
            body["metadata"]["managedFields"],
            checked["metadata"]["managedFields"]
        );
        assert_eq!(body["spec"], checked["spec"]);
        assert!(body.get("status").is_none());
    }

    fn written(created: bool, usable: Usable) -> Write {
        Write::Written {
            created,
            stamp: Box::new(Stamp::of(&crd("u", "1", 1, &[]))),
            usable,
        }
    }

    #[test]
    fn each_crd_ends_in_one_stated_state() {
        let restored = Some(Undo::Restored("deleted again (it had no objects)".into()));
        assert_eq!(
            settle(written(true, Usable::Yes), None),
            (ApplyOutcome::Created, false)
        );
        assert_eq!(
            settle(written(false, Usable::Yes), None),
            (ApplyOutcome::Configured, false)
        );
        assert_eq!(
            settle(written(true, Usable::Yes), restored.clone()),
            (
                ApplyOutcome::Restored("created, then deleted again (it had no objects)".into()),
                false
            )
        );
        // The CRD that was never established stopped the run, and says why.
        assert_eq!(
            settle(
                written(
                    true,
                    Usable::No("the API server refused its names: x".into())
                ),
                restored
            ),
            (
                ApplyOutcome::Restored(
                    "created, but the API server refused its names: x, then deleted again (it \
                     had no objects)"
                        .into()
                ),
                true
            )
        );
        assert_eq!(
            settle(
                written(false, Usable::Unknown),
                Some(Undo::Left("restore failed: timeout".into()))
            ),
            (
                ApplyOutcome::LeftApplied("configured; restore failed: timeout".into()),
                false
            )
        );
        assert_eq!(
            settle(Write::Unsure("lost".into()), Some(Undo::NotWritten)),
            (
                ApplyOutcome::Failed("lost; it was not written".into()),
                true
            )
        );
        assert_eq!(
            settle(Write::Conflict("changed".into()), None),
            (ApplyOutcome::Conflict("changed".into()), true)
        );
        assert_eq!(
            settle(Write::NotAttempted, None),
            (ApplyOutcome::NotApplied, false)
        );
    }

    fn end(outcomes: Vec<ApplyOutcome>, interrupted: bool) -> ApplyEnd {
        ApplyEnd {
            results: outcomes
                .into_iter()
                .map(|outcome| Applied {
                    name: "a".into(),
                    action: Action::Update,
                    outcome,
                    stopped_run: false,
                })
                .collect(),
            interrupted,
        }
    }

    #[test]
    fn left_applied_wins_over_interrupted_and_failed_with_its_own_exit_code() {
        let partial = end(
            vec![
                ApplyOutcome::LeftApplied("x".into()),
                ApplyOutcome::NotApplied,
            ],
            true,
        );
        assert_eq!(decision(&partial), Decision::Partial);
        assert_eq!(decision(&partial).exit_code(), crate::exit::PARTIAL);
        let stopped = end(
            vec![ApplyOutcome::Restored("x".into()), ApplyOutcome::NotApplied],
            true,
        );
        assert_eq!(decision(&stopped).exit_code(), crate::exit::INTERRUPTED);
        let failed = end(
            vec![
                ApplyOutcome::Restored("x".into()),
                ApplyOutcome::Failed("y".into()),
            ],
            false,
        );
        assert_eq!(decision(&failed).exit_code(), crate::exit::CLUSTER);
        let done = end(vec![ApplyOutcome::Created, ApplyOutcome::Unchanged], false);
        assert_eq!(decision(&done), Decision::Done);
    }

    #[tokio::test]
    async fn a_stop_ends_the_waits_already_waiting_and_those_after() {
        let stop = std::sync::Arc::new(Stop::default());
        let waiting = tokio::spawn({
            let stop = std::sync::Arc::clone(&stop);
            async move { stop.stopped().await }
        });
        tokio::task::yield_now().await;
        stop.stop();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("joined");
        tokio::time::timeout(Duration::from_secs(5), stop.stopped())
            .await
            .expect("already stopped");
    }
}
