//! `migrate`: finish a storage-version migration, so that a release may drop
//! a version `status.storedVersions` still lists (`storedVersionRemoval`).
//!
//! The flow is the one every change takes ([`crate::cluster_write`]):
//! - **plan and check** ([`plan`]): per CRD the storage version, the stored
//!   versions and the objects, each validated with the object scan as a
//!   rewrite in the storage version would judge it;
//! - **propose** ([`proposal`]): refused while a write would reject objects
//!   or drop fields (the latter unless `--allow-pruning`);
//! - **execute** ([`migrate`]): every object is written back unchanged in the
//!   storage version ([`rewrite`]); only when every listed object was
//!   written (or written by someone else since, or deleted) is
//!   `status.storedVersions` set to the storage version alone, with the
//!   CRD's `resourceVersion` from the plan as a precondition. Any failure or
//!   interruption leaves storedVersions as it was, so running again is
//!   always safe: objects already in the storage version are written again
//!   at no risk.
//!
//! Two engines do the execute step ([`Engine`]): the client engine above,
//! and the server engine ([`server`]), which hands the rewrite to the
//! cluster's own storage-version migrator where the cluster serves
//! `storagemigration.k8s.io`. The plan, the check and the confirmation are
//! the same for both.

mod rewrite;
mod server;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use thiserror::Error;

pub use server::ServerWait;

use super::{Decision, Proposal, Question, Verb, plural};
use crate::cluster::{ClusterError, Connection, MigrationApi, StoredVersionsUpdate};
use crate::compare::{Check, Finding, Severity};
use crate::crd::Crd;
use crate::manifest::normalize_to_v1;
use crate::outcome::{
    CrdPlan, EngineName, Migrated, MigrationOutcome, MigrationPlan, ObjectFailure, PlannedEngine,
    ScanSummary,
};
use crate::scan::{Progress, ScanError, ScanOptions, scan_for_migration};

/// `migrate`'s words.
pub const VERB: Verb = Verb {
    verb: "migrate",
    doing: "migrating",
    done: "migrated",
};

/// How to plan and check.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    /// LIST page size and examples per finding.
    pub scan: ScanOptions,
    /// Count objects per namespace.
    pub by_namespace: bool,
    /// Accept that fields the storage schema does not describe are dropped.
    pub allow_pruning: bool,
    /// Who writes the objects back.
    pub engine: Engine,
}

/// Who writes the objects back (`--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// The cluster's migrator where `storagemigration.k8s.io` is served,
    /// with the client taking over a CRD the cluster does not take up;
    /// the client elsewhere.
    Auto,
    /// The cluster's migrator, or an error where it is not served.
    Server,
    /// crd-safety's own rewrite.
    Client,
}

/// Why there is no plan.
#[derive(Debug, Error)]
pub enum MigrateError {
    /// The cluster failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// Checking the objects failed.
    #[error(transparent)]
    Scan(#[from] ScanError),
    /// No such CRD.
    #[error("customresourcedefinition {name} not found in context {context}")]
    NotFound { name: String, context: String },
    /// The live CRD cannot be read as a CRD.
    #[error("the live CRD {name} cannot be read: {detail}")]
    Unreadable { name: String, detail: String },
    /// Objects can only be read and written through a served version.
    #[error(
        "{name}: the storage version {version} is not served, so its objects cannot be read \
         and written back through it; serve it first"
    )]
    StorageNotServed { name: String, version: String },
    /// `--engine server` on a cluster without the API.
    #[error(
        "--engine server: context {context} does not serve storagemigration.k8s.io (Kubernetes \
         1.37 serves v1 by default; 1.30 to 1.36 only with the StorageVersionMigrator feature \
         gate and the API enabled); use --engine client"
    )]
    NoServerEngine { context: String },
}

/// Reads each CRD and, where storedVersions lists more than the storage
/// version, checks every object as a rewrite would judge it.
pub async fn plan(
    conn: &Connection,
    names: &[String],
    opts: PlanOptions,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<MigrationPlan, MigrateError> {
    let mut crds: Vec<CrdPlan> = Vec::with_capacity(names.len());
    let mut minor = None;
    for name in names {
        // Named twice, migrated once: a second pass would only find the
        // CRD changed by the first.
        if crds.iter().any(|c| c.name == *name) {
            continue;
        }
        let value = conn
            .get_crd(name)
            .await?
            .ok_or_else(|| MigrateError::NotFound {
                name: name.clone(),
                context: conn.context.clone(),
            })?;
        let resource_version = value["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let generation = value["metadata"]["generation"].as_i64().unwrap_or_default();
        let crd =
            Crd::from_manifest(normalize_to_v1(value)).map_err(|e| MigrateError::Unreadable {
                name: name.clone(),
                detail: e.to_string(),
            })?;
        let storage = crd.storage_version();
        let storage_version = storage.name().to_string();
        let stored_versions = crd.stored_versions.clone().unwrap_or_default();
        let needs_migration = stored_versions.iter().any(|v| *v != storage_version);
        let mut planned = CrdPlan {
            name: crd.name.clone(),
            storage_version: storage_version.clone(),
            stored_versions,
            needs_migration,
            objects: None,
            namespaces: None,
            findings: Vec::new(),
            check: None,
            unreadable_versions: Vec::new(),
            rejected: 0,
            losing_data: 0,
            resource: crd.resource(&storage_version),
            resource_version,
            generation,
        };
        if needs_migration {
            if !storage.spec.served {
                return Err(MigrateError::StorageNotServed {
                    name: crd.name.clone(),
                    version: storage_version,
                });
            }
            let minor = match minor {
                Some(m) => m,
                None => *minor.insert(conn.server_minor().await?),
            };
            let found = scan_for_migration(
                conn,
                &crd,
                minor,
                &opts.scan,
                opts.by_namespace,
                &mut *progress,
            )
            .await?;
            let summary = found.scan.summary;
            planned.objects = Some(summary.scanned);
            planned.namespaces = opts.by_namespace.then_some(found.namespaces);
            planned.unreadable_versions = found.unreadable_versions;
            (planned.rejected, planned.losing_data) = blocking_objects(&summary);
            planned.findings = judged(found.scan.findings, opts.allow_pruning);
            planned.check = Some(summary);
        }
        crds.push(planned);
    }
    let engine = if crds.iter().any(|c| c.needs_migration) {
        choose_engine(conn, opts.engine).await?
    } else {
        PlannedEngine {
            name: EngineName::Client,
            api: None,
            reason: "nothing to migrate".into(),
            fallback: false,
        }
    };
    Ok(MigrationPlan {
        context: conn.context.clone(),
        server: conn.server.clone(),
        allow_pruning: opts.allow_pruning,
        engine,
        crds,
    })
}

/// The engine `--engine` and the cluster leave.
async fn choose_engine(conn: &Connection, engine: Engine) -> Result<PlannedEngine, MigrateError> {
    if engine == Engine::Client {
        return Ok(PlannedEngine {
            name: EngineName::Client,
            api: None,
            reason: "--engine client".into(),
            fallback: false,
        });
    }
    match conn.storage_migration_api().await? {
        Some(api) => Ok(PlannedEngine {
            name: EngineName::Server,
            api: Some(api.api_version()),
            reason: format!("the cluster serves {}", api.api_version()),
            fallback: engine == Engine::Auto,
        }),
        None if engine == Engine::Server => Err(MigrateError::NoServerEngine {
            context: conn.context.clone(),
        }),
        None => Ok(PlannedEngine {
            name: EngineName::Client,
            api: None,
            reason: "the cluster does not serve storagemigration.k8s.io".into(),
            fallback: false,
        }),
    }
}

/// The API the plan chose for the server engine.
fn server_api(engine: &PlannedEngine) -> Option<MigrationApi> {
    let api = engine.api.as_deref()?;
    MigrationApi::ALL
        .into_iter()
        .find(|a| a.api_version() == api)
}

/// Objects whose rewrite the server would refuse (violations ratcheting
/// does not let through: the rewrite leaves every field unchanged), and
/// objects that would lose fields.
fn blocking_objects(summary: &ScanSummary) -> (u64, u64) {
    let mut rejected = BTreeSet::new();
    let mut losing = BTreeSet::new();
    for o in &summary.objects {
        if o.violations.iter().any(|v| !v.ratcheted) {
            rejected.insert(o.object.as_str());
        }
        if o.data_loss.iter().any(|d| d.kind != "defaulted") {
            losing.insert(o.object.as_str());
        }
    }
    (rejected.len() as u64, losing.len() as u64)
}

/// The scan's findings, weighed for a rewrite: a violation ratcheting lets
/// through does not stop it (a warning: those objects still cannot be
/// created again as they are); dropped fields stop it unless accepted.
fn judged(findings: Vec<Finding>, allow_pruning: bool) -> Vec<Finding> {
    let mut findings: Vec<Finding> = findings
        .into_iter()
        .map(|mut f| {
            let ratcheted = f.objects.as_ref().and_then(|o| o.ratcheted) == Some(true);
            if f.check == Check::InvalidObjects && ratcheted {
                f.severity = Severity::Warning;
                f.message.push_str(
                    "; the rewrite leaves the field unchanged, so ratcheting lets it through",
                );
            }
            if f.check == Check::PrunedFields && allow_pruning {
                f.severity = Severity::Warning;
                f.message.push_str(" (accepted with --allow-pruning)");
            }
            f
        })
        .collect();
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    findings
}

/// What `migrate` proposes: nothing when every storedVersions list is just
/// the storage version; refused while a rewrite would reject objects or
/// (without `--allow-pruning`) drop fields.
pub fn proposal(plan: &MigrationPlan) -> Proposal {
    let todo: Vec<&CrdPlan> = plan.crds.iter().filter(|c| c.needs_migration).collect();
    let nothing_to_do = todo.is_empty().then(|| {
        let names: Vec<String> = plan
            .crds
            .iter()
            .map(|c| format!("{} [{}]", c.name, c.stored_versions.join(", ")))
            .collect();
        format!(
            "Nothing to migrate: status.storedVersions is already just the storage version ({}).",
            names.join("; ")
        )
    });
    let rejected: u64 = todo.iter().map(|c| c.rejected).sum();
    let losing: u64 = todo.iter().map(|c| c.losing_data).sum();
    let mut reasons = Vec::new();
    if rejected > 0 {
        reasons.push(format!(
            "{} the API server would reject when written back (fix them first)",
            plural(rejected as usize, "object", "objects")
        ));
    }
    if losing > 0 && !plan.allow_pruning {
        reasons.push(format!(
            "{} would lose fields the storage version's schema does not describe \
             (use --allow-pruning to accept the loss)",
            plural(losing as usize, "object", "objects")
        ));
    }
    let refusal = (!reasons.is_empty()).then(|| format!("not migrating: {}", reasons.join("; ")));
    let objects: u64 = todo.iter().filter_map(|c| c.objects).sum();
    let by = match &plan.engine.api {
        Some(api) => format!("the cluster's storage-version migrator ({api}) will "),
        None => String::new(),
    };
    Proposal {
        verb: VERB,
        nothing_to_do,
        refusal,
        question: Question {
            heading: format!(
                "About to migrate in context {} ({}):",
                plan.context, plan.server
            ),
            items: todo
                .iter()
                .map(|c| {
                    (
                        c.name.clone(),
                        format!(
                            "{}rewrite {} in {}, then storedVersions [{}] -> [{}]",
                            by,
                            plural(c.objects.unwrap_or(0) as usize, "object", "objects"),
                            c.storage_version,
                            c.stored_versions.join(", "),
                            c.storage_version
                        ),
                    )
                })
                .collect(),
            prompt: format!(
                "Migrate {} ({}) in context {}?",
                plural(todo.len(), "CRD", "CRDs"),
                plural(objects as usize, "object", "objects"),
                plan.context
            ),
        },
        conflicts: None,
        second: None,
    }
}

/// How to rewrite.
#[derive(Debug, Clone, Copy)]
pub struct RunOptions {
    /// Objects per LIST page.
    pub chunk_size: u32,
    /// Writes in flight at once.
    pub concurrency: usize,
    /// How the server engine waits for the cluster's migrator.
    pub server: ServerWait,
}

/// Where the rewrite is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct RewriteProgress<'a> {
    /// The CRD being migrated.
    pub crd: &'a str,
    /// Objects of this CRD done (written, written by others, deleted or failed).
    pub done: u64,
    /// Objects the plan counted for this CRD (the rewrite may find a few
    /// more or fewer).
    pub planned: u64,
}

/// Migrates every CRD of the plan that needs it, in order, with the
/// plan's engine. Setting `stop` (Ctrl-C) ends the run after the writes in
/// flight; storedVersions of a CRD is only changed when its rewrite
/// completed and `stop` is unset.
pub async fn migrate(
    conn: &Connection,
    plan: &MigrationPlan,
    opts: RunOptions,
    stop: &AtomicBool,
    progress: &mut dyn FnMut(RewriteProgress<'_>),
) -> Vec<Migrated> {
    let mut results = Vec::with_capacity(plan.crds.len());
    let mut halted = false;
    // Once the cluster did not take a migration up, the next would fare
    // no better: the client does the rest.
    let mut api = server_api(&plan.engine);
    let mut fallback = None;
    for c in &plan.crds {
        let mut result = Migrated {
            name: c.name.clone(),
            outcome: MigrationOutcome::Unchanged,
            engine: EngineName::Client,
            migration: None,
            trimmed_by: None,
            fallback: None,
            rewritten: 0,
            written_by_others: 0,
            deleted: 0,
            retries: 0,
            failed: Vec::new(),
            stored_versions: c.stored_versions.clone(),
        };
        if !c.needs_migration {
            results.push(result);
            continue;
        }
        if halted {
            result.outcome = MigrationOutcome::NotMigrated;
            results.push(result);
            continue;
        }
        let planned = c.objects.unwrap_or(0);
        let mut tick = |done| {
            progress(RewriteProgress {
                crd: &c.name,
                done,
                planned,
            })
        };
        if let Some(server_api) = api {
            result.engine = EngineName::Server;
            let (name, end) =
                server::migrate_on_server(conn, server_api, c, opts.server, stop, &mut tick).await;
            result.migration = name;
            match end {
                server::ServerEnd::Migrated { trimmed_by_server } => {
                    result.outcome = MigrationOutcome::Migrated;
                    result.trimmed_by = Some(if trimmed_by_server {
                        EngineName::Server
                    } else {
                        EngineName::Client
                    });
                }
                server::ServerEnd::NotTakenUp(why) if plan.engine.fallback => {
                    api = None;
                    fallback = Some(why);
                }
                server::ServerEnd::NotTakenUp(why) => {
                    result.outcome = MigrationOutcome::Failed(format!(
                        "{why}; storedVersions untouched [{}]; use --engine client",
                        c.stored_versions.join(", ")
                    ));
                }
                server::ServerEnd::Failed(why) => {
                    result.outcome = MigrationOutcome::Failed(why);
                }
                server::ServerEnd::Interrupted(why) => {
                    halted = true;
                    result.outcome = MigrationOutcome::Interrupted(why);
                }
            }
            if api.is_some() {
                if result.outcome == MigrationOutcome::Migrated {
                    result.stored_versions = vec![c.storage_version.clone()];
                }
                results.push(result);
                continue;
            }
        }
        result.engine = EngineName::Client;
        result.fallback = fallback.clone();
        halted |= rewrite_on_client(conn, c, opts, stop, &mut tick, &mut result).await;
        results.push(result);
    }
    results
}

/// The client engine for one CRD: every object written back, then
/// storedVersions trimmed. Returns whether the run must stop (denied or
/// interrupted).
async fn rewrite_on_client(
    conn: &Connection,
    c: &CrdPlan,
    opts: RunOptions,
    stop: &AtomicBool,
    tick: &mut dyn FnMut(u64),
    result: &mut Migrated,
) -> bool {
    let planned = c.objects.unwrap_or(0);
    let done = rewrite::rewrite_all(conn, &c.resource, opts, stop, tick).await;
    result.rewritten = done.rewritten;
    result.written_by_others = done.written_by_others;
    result.deleted = done.deleted;
    result.retries = done.retries;
    let untouched = format!(
        "storedVersions untouched [{}]",
        c.stored_versions.join(", ")
    );
    let handled = done.rewritten + done.written_by_others + done.deleted;
    let mut halted = false;
    result.outcome = match done.end {
        rewrite::End::Interrupted => {
            halted = true;
            MigrationOutcome::Interrupted(format!(
                "interrupted after {handled} of about {planned} objects; {untouched}; \
                 run migrate again to finish"
            ))
        }
        rewrite::End::Denied(why) => {
            halted = true;
            MigrationOutcome::Failed(format!(
                "{why}; {handled} of about {planned} objects done; {untouched}"
            ))
        }
        rewrite::End::ListFailed(why) => MigrationOutcome::Failed(format!(
            "listing the objects failed: {why}; {handled} of about {planned} objects done; \
             {untouched}; run migrate again"
        )),
        rewrite::End::Complete if !done.failed.is_empty() => MigrationOutcome::Failed(format!(
            "{} could not be rewritten ({}); {untouched}; fix them and run migrate again",
            plural(done.failed.len(), "object", "objects"),
            failure_sample(&done.failed)
        )),
        rewrite::End::Complete if stop.load(Ordering::SeqCst) => {
            halted = true;
            MigrationOutcome::Interrupted(format!(
                "interrupted after every object was rewritten; {untouched}; run migrate \
                 again to finish"
            ))
        }
        rewrite::End::Complete => finish(conn, c, &untouched).await,
    };
    if result.outcome == MigrationOutcome::Migrated {
        result.stored_versions = vec![c.storage_version.clone()];
        result.trimmed_by = Some(EngineName::Client);
    }
    result.failed = done.failed;
    halted
}

/// Trims storedVersions to the storage version, only if the CRD is as
/// planned.
async fn finish(conn: &Connection, c: &CrdPlan, untouched: &str) -> MigrationOutcome {
    let target = [c.storage_version.clone()];
    match conn
        .set_stored_versions(&c.name, &c.resource_version, &target)
        .await
    {
        Ok(StoredVersionsUpdate::Set) => MigrationOutcome::Migrated,
        Ok(StoredVersionsUpdate::CrdChanged(m)) => MigrationOutcome::Failed(format!(
            "every object was rewritten, but the CRD changed during the migration ({m}); \
             {untouched}; run migrate again"
        )),
        Err(e) => MigrationOutcome::Failed(format!(
            "every object was rewritten, but storedVersions could not be set: {e}; {untouched}; \
             run migrate again"
        )),
    }
}

/// The first few failures, `ns/name: why`.
fn failure_sample(failed: &[ObjectFailure]) -> String {
    let mut parts: Vec<String> = failed
        .iter()
        .take(3)
        .map(|f| format!("{}: {}", f.object, f.message))
        .collect();
    if failed.len() > 3 {
        parts.push(format!("+{} more", failed.len() - 3));
    }
    parts.join("; ")
}

/// The run's decision: interrupted, failed, or done.
pub fn decision(results: &[Migrated]) -> Decision {
    if results
        .iter()
        .any(|r| matches!(r.outcome, MigrationOutcome::Interrupted(_)))
    {
        Decision::Interrupted
    } else if results
        .iter()
        .any(|r| matches!(r.outcome, MigrationOutcome::Failed(_)))
    {
        Decision::Failed
    } else {
        Decision::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::ObjectsDetail;
    use crate::crd::ResourceRef;

    fn scan_finding(check: Check, ratcheted: Option<bool>) -> Finding {
        Finding::new(check, Severity::Error, "m")
            .in_version("v1")
            .at("^.spec.size")
            .with_objects(ObjectsDetail {
                rule: "minimum".into(),
                count: 1,
                scanned: 2,
                ratcheted,
                examples: vec!["default/a".into()],
            })
    }

    #[test]
    fn a_ratcheted_violation_does_not_stop_the_rewrite() {
        let f = judged(
            vec![
                scan_finding(Check::InvalidObjects, Some(true)),
                scan_finding(Check::InvalidObjects, Some(false)),
            ],
            false,
        );
        let severities: Vec<Severity> = f.iter().map(|f| f.severity).collect();
        assert_eq!(severities, [Severity::Error, Severity::Warning]);
    }

    #[test]
    fn pruning_is_an_error_until_accepted() {
        let f = judged(vec![scan_finding(Check::PrunedFields, None)], false);
        assert_eq!(f[0].severity, Severity::Error);
        let f = judged(vec![scan_finding(Check::PrunedFields, None)], true);
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(f[0].message.ends_with("(accepted with --allow-pruning)"));
    }

    fn planned(name: &str, stored: &[&str], rejected: u64, losing: u64) -> CrdPlan {
        CrdPlan {
            name: name.into(),
            storage_version: "v1".into(),
            stored_versions: stored.iter().map(|s| s.to_string()).collect(),
            needs_migration: stored.iter().any(|s| *s != "v1"),
            objects: Some(10),
            namespaces: None,
            findings: Vec::new(),
            check: None,
            unreadable_versions: Vec::new(),
            rejected,
            losing_data: losing,
            resource: ResourceRef {
                group: "example.com".into(),
                version: "v1".into(),
                plural: "widgets".into(),
                namespace: None,
            },
            resource_version: "1".into(),
            generation: 1,
        }
    }

    fn plan_of(crds: Vec<CrdPlan>, allow_pruning: bool) -> MigrationPlan {
        MigrationPlan {
            context: "prod".into(),
            server: "https://k".into(),
            allow_pruning,
            engine: PlannedEngine {
                name: EngineName::Client,
                api: None,
                reason: "--engine client".into(),
                fallback: false,
            },
            crds,
        }
    }

    #[test]
    fn only_the_storage_version_stored_means_nothing_to_do() {
        let p = proposal(&plan_of(
            vec![planned("w.example.com", &["v1"], 0, 0)],
            false,
        ));
        assert_eq!(
            p.nothing_to_do.as_deref(),
            Some(
                "Nothing to migrate: status.storedVersions is already just the storage version \
                 (w.example.com [v1])."
            )
        );
    }

    #[test]
    fn rejected_objects_and_pruning_refuse_with_counts() {
        let p = proposal(&plan_of(
            vec![planned("w.example.com", &["v1alpha1", "v1"], 2, 1)],
            false,
        ));
        assert_eq!(
            p.refusal.as_deref(),
            Some(
                "not migrating: 2 objects the API server would reject when written back (fix \
                 them first); 1 object would lose fields the storage version's schema does not \
                 describe (use --allow-pruning to accept the loss)"
            )
        );
        let p = proposal(&plan_of(
            vec![planned("w.example.com", &["v1alpha1", "v1"], 0, 1)],
            true,
        ));
        assert_eq!(p.refusal, None);
        assert_eq!(
            p.question.items,
            [(
                "w.example.com".to_string(),
                "rewrite 10 objects in v1, then storedVersions [v1alpha1, v1] -> [v1]".to_string()
            )]
        );
        assert_eq!(
            p.question.prompt,
            "Migrate 1 CRD (10 objects) in context prod?"
        );
    }
}
