//! `apply-check`: the comparison with the live cluster as the old side, its
//! real `status.storedVersions`, and the API server's own dry run of the
//! update. The result also says what `apply` would do to each CRD.

mod conversion;

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

use crate::cluster::{ClusterError, Connection, DryRun, ownership, same_content};
use crate::compare::{Check, Finding, Severity};
use crate::config::Config;
use crate::crd::Crd;
use crate::crd_validation::{KubeVersion, KubeVersionSource};
use crate::delivery::{engines, owners};
use crate::engine::{StoredVersionsArg, entries};
use crate::manifest::{LoadedCrd, Location, ManifestSet, normalize_to_v1};
use crate::outcome::{Action, Planned};
use crate::parallel::in_order;
use crate::report::{ClusterInfo, Report, SkippedDocument};
use crate::scan::{Progress, ScanError, ScanOptions, grade_by_objects, scan_crd};

/// The report of `apply-check`, and the plan `apply` follows.
#[derive(Debug, Clone)]
pub struct LiveCheck {
    /// Findings per CRD, with the cluster in the header.
    pub report: Report,
    /// One entry per manifest CRD, in manifest order.
    pub plan: Vec<Planned>,
}

/// How `apply_check` runs.
pub struct CheckOptions<'a> {
    /// Requests (reads, dry runs, object scans) in flight at once: the wait
    /// is then proportional to the work, not to the count of round trips.
    pub concurrency: usize,
    /// Validate the stored objects of every CRD that changes (`--objects`).
    pub scan: Option<ScanOptions>,
    /// Send one stored object to each changed CRD's conversion webhook and
    /// back (`--probe-conversion`), when that webhook is the one the live
    /// CRD already converts through.
    pub probe_conversion: bool,
    /// Services the probe may also send to although the live CRD does not
    /// convert through them (`--probe-conversion-service`): a destination
    /// the manifest chose gets the cluster's objects only when the user
    /// named it.
    pub probe_services: Vec<ProbeService>,
    /// Told as the check moves on, for a progress line; called from the
    /// requests in flight, in the order they finish.
    pub progress: &'a (dyn Fn(Step<'_>) + Sync),
}

/// A Service named by `--probe-conversion-service NAMESPACE/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeService {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
}

impl std::fmt::Display for ProbeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// `NAMESPACE/NAME`, as `--probe-conversion-service` takes it.
pub fn parse_probe_service(text: &str) -> Result<ProbeService, String> {
    match text.trim().split_once('/') {
        Some((namespace, name))
            if !namespace.is_empty() && !name.is_empty() && !name.contains('/') =>
        {
            Ok(ProbeService {
                namespace: namespace.to_string(),
                name: name.to_string(),
            })
        }
        _ => Err(format!(
            "expected NAMESPACE/NAME of a Service (e.g. webhook-system/widget-webhook), got {text:?}"
        )),
    }
}

/// Where `apply_check` is.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// The server's dry run has answered for `done` of `total` CRDs.
    DryRun {
        /// CRDs answered so far.
        done: usize,
        /// CRDs of the manifests.
        total: usize,
    },
    /// An object scan moved on.
    Scan(Progress<'a>),
}

/// Why a live check could not finish.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The cluster did not answer.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The object scan could not finish.
    #[error(transparent)]
    Scan(#[from] ScanError),
}

/// What the server's dry run of one CRD came to, kept small: the object it
/// would store is only compared and dropped, so a bundle's answers never
/// sit in memory together.
struct Verdict {
    /// The dry run would store what the cluster has.
    unchanged: bool,
    /// Another field manager's conflict (the message).
    conflict: Option<String>,
    /// The server's refusal (the message).
    rejected: Option<String>,
}

/// Reads the live CRDs named in `new`, compares, dry-runs each update and,
/// with a scan, validates the stored objects of every CRD that changes
/// against its new schema. Everything goes `concurrency` requests at a time
/// (big bundles read the live CRDs with one LIST); the report keeps
/// manifest order.
pub async fn apply_check(
    conn: &Connection,
    new: &ManifestSet,
    config: &Config,
    options: &CheckOptions<'_>,
) -> Result<LiveCheck, LiveError> {
    let concurrency = options.concurrency.max(1);
    let names: Vec<&str> = new.crds.iter().map(|n| n.crd.name.as_str()).collect();
    let reads = conn.get_crds(&names, concurrency);
    // The CRD rules are those of the connected server's version.
    let (fetched, server) = futures::try_join!(reads, conn.server_version())?;
    let mut live = ManifestSet::default();
    // For each manifest CRD, its index in `live`, if the cluster has it.
    let mut live_index = Vec::with_capacity(new.crds.len());
    for value in fetched {
        let Some(value) = value else {
            live_index.push(None);
            continue;
        };
        live_index.push(Some(live.crds.len()));
        let crd = Crd::from_manifest(normalize_to_v1(value)).map_err(|e| ClusterError::Other {
            server: conn.server.clone(),
            detail: format!("the live CRD cannot be read: {e}"),
        })?;
        live.crds.push(LoadedCrd {
            crd: crd.into(),
            location: Location {
                file: format!("cluster (context {})", conn.context),
                line: 0,
            },
            text: None,
            readings: Vec::new(),
            origin: Default::default(),
        });
    }
    let minor = server.minor;
    let mut judged = config.clone();
    judged.kube_version = KubeVersion::for_server(minor);
    judged.kube_version_source = KubeVersionSource::Server;
    let config = &judged;
    // The live object carries status.storedVersions; no flag needed.
    let mut crds = entries(&live, new, &StoredVersionsArg::default(), config);
    let live_crds: Vec<Option<&Crd>> = live_index
        .iter()
        .map(|i| i.map(|i| &*live.crds[i].crd))
        .collect();
    let answered = &AtomicUsize::new(0);
    let total = new.crds.len();
    // Each CRD's objects are scanned as soon as its own dry run says it
    // changes, so the scans overlap the other CRDs' dry runs; they share one
    // page budget (`PageShare`), so the objects in memory stay those of
    // about two pages.
    let checked = in_order(
        new.crds
            .iter()
            .zip(&live_crds)
            .map(|(n, live_crd)| async move {
                let verdict = conn
                    .dry_run_apply(&n.crd.name, &n.crd.manifest, live_crd.map(|l| &l.manifest))
                    .await?;
                let done = answered.fetch_add(1, Ordering::Relaxed) + 1;
                (options.progress)(Step::DryRun { done, total });
                // The webhook as the CRD would be stored: a caBundle that
                // cert-manager keeps in the live CRD stays.
                let readiness = match &verdict {
                    DryRun::Accepted(stored)
                    | DryRun::Conflict {
                        would_store: stored,
                        ..
                    } => {
                        conversion::findings(
                            conn,
                            &n.crd,
                            stored,
                            *live_crd,
                            options
                                .probe_conversion
                                .then_some(options.probe_services.as_slice()),
                        )
                        .await?
                    }
                    DryRun::Rejected(_) => Vec::new(),
                };
                let verdict = match verdict {
                    DryRun::Accepted(would_be) => Verdict {
                        unchanged: live_crd.is_some_and(|l| same_content(&would_be, &l.manifest)),
                        conflict: None,
                        rejected: None,
                    },
                    DryRun::Conflict {
                        message,
                        would_store,
                    } => Verdict {
                        unchanged: live_crd
                            .is_some_and(|l| same_content(&would_store, &l.manifest)),
                        conflict: Some(message),
                        rejected: None,
                    },
                    DryRun::Rejected(message) => Verdict {
                        unchanged: false,
                        conflict: None,
                        rejected: Some(message),
                    },
                };
                let scan = match (&options.scan, live_crd) {
                    (Some(opts), Some(old)) if !verdict.unchanged => {
                        let mut progress = |p: Progress<'_>| (options.progress)(Step::Scan(p));
                        Some(scan_crd(conn, old, &n.crd, minor, opts, &mut progress).await?)
                    }
                    _ => None,
                };
                Ok::<_, LiveError>((verdict, scan, readiness))
            }),
        concurrency,
    )
    .await?;
    let mut verdicts = Vec::with_capacity(checked.len());
    let mut scans = Vec::with_capacity(checked.len());
    let mut readiness = Vec::with_capacity(checked.len());
    for (verdict, scan, ready) in checked {
        verdicts.push(verdict);
        scans.push(scan);
        readiness.push(ready);
    }
    let policy = config.policy();
    let mut engine_notices = Vec::new();
    let mut plan = Vec::with_capacity(new.crds.len());
    let checked = live_index
        .iter()
        .map(|i| i.map(|i| std::sync::Arc::clone(&live.crds[i].crd)));
    for ((((entry, n), live_crd), verdict), checked) in crds
        .iter_mut()
        .zip(&new.crds)
        .zip(&live_crds)
        .zip(verdicts)
        .zip(checked)
    {
        let action = match live_crd {
            None => Action::Create,
            Some(_) if verdict.unchanged => Action::Unchanged,
            Some(_) => Action::Update,
        };
        let mut conflict = verdict.conflict.filter(|_| action != Action::Unchanged);
        let mut take_over = Vec::new();
        if let Some(message) = conflict.clone() {
            let managers = ownership::conflicting_managers(&message);
            let finding = if ownership::all_migratable(&managers) {
                conflict = None;
                take_over = managers.clone();
                Finding::new(
                    Check::FieldManagerConflict,
                    Severity::Info,
                    format!(
                        "fields owned by {} (installed with plain kubectl) move to {} on apply, \
                         as `kubectl apply --server-side` does: {message}",
                        managers.join(", "),
                        conn.field_manager()
                    ),
                )
                .values(None, Some(Value::String(message.clone())))
            } else {
                let owners: Vec<String> = managers
                    .iter()
                    .filter_map(|m| ownership::describe_owner(m).map(|d| format!("{m} is {d}")))
                    .collect();
                let owners = if owners.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", owners.join("; "))
                };
                Finding::new(
                    Check::FieldManagerConflict,
                    Severity::Warning,
                    format!(
                        "{message}{owners}: `apply` takes the fields over only after a yes to its question (on a terminal) \
                         or with --force-conflicts{}",
                        as_owner(&message)
                    ),
                )
                .values(None, Some(Value::String(message.clone())))
            };
            let (kept, excepted) = policy.apply(&n.crd.name, vec![finding]);
            entry.add(kept, excepted);
        }
        let (owners, found) = live_crd.map_or_else(Default::default, |l| {
            owners::judge(&l.manifest, n, conn.field_manager())
        });
        let (kept, excepted) = policy.apply(&n.crd.name, found);
        entry.add(kept, excepted);
        if let Some(l) = live_crd {
            let changes = action != Action::Unchanged;
            let found = engine_policies(
                conn,
                &owners,
                &l.manifest,
                &n.crd.manifest,
                changes,
                &mut engine_notices,
            )
            .await;
            let (kept, excepted) = policy.apply(&n.crd.name, found);
            entry.add(kept, excepted);
        }
        entry.owners = owners.clone();
        plan.push(Planned {
            name: n.crd.name.clone(),
            action,
            manifest: n.crd.manifest.clone(),
            conflict,
            take_over,
            rejected: verdict.rejected.clone(),
            owners,
            checked,
        });
        if let Some(message) = verdict.rejected {
            let finding = Finding::new(
                Check::ApiServerRejects,
                Severity::Error,
                format!("the API server refuses this update (server-side dry run): {message}"),
            )
            .values(None, Some(Value::String(message)));
            let (kept, excepted) = policy.apply(&n.crd.name, vec![finding]);
            entry.add(kept, excepted);
        }
    }
    for ((entry, planned), found) in crds.iter_mut().zip(&plan).zip(readiness) {
        if !found.is_empty() {
            let (kept, excepted) = policy.apply(&planned.name, found);
            entry.add(kept, excepted);
        }
    }
    // Last, once every other finding is in: the stored objects grade what
    // they decide, and what the scan found that no finding took in is
    // reported on its own.
    for ((entry, planned), scan) in crds.iter_mut().zip(&plan).zip(scans) {
        if let Some(result) = scan {
            let scan_findings = if !config.keep_schema_grades {
                let graded = grade_by_objects(
                    std::mem::take(&mut entry.findings),
                    &result.summary,
                    result.findings,
                );
                entry.add(graded.findings, Vec::new());
                entry.grading = Some(graded.grading);
                graded.scan_findings
            } else {
                result.findings
            };
            let (kept, excepted) = policy.apply(&planned.name, scan_findings);
            entry.add(kept, excepted);
            entry.scan = Some(result.summary);
        }
    }
    // The objects that come with the manifests, judged against the live CRD.
    crate::scan::judge_resources(&live, new, config, &mut crds);
    let skipped: Vec<SkippedDocument> = new.skipped.iter().map(SkippedDocument::from).collect();
    let mut report = Report::new(crds, skipped, config.mode, config.fail_mode);
    report.notices = new.notices.clone();
    report.notices.extend(engine_notices);
    if report
        .summary
        .grading
        .is_some_and(|g| g.reach_no_object > 0)
    {
        report.notices.push(
            "the stored objects cleared findings as they were during this check: an object \
             created before the apply is not judged by it (serve in enforce mode with scanObjects \
             guards that window)"
                .to_string(),
        );
    }
    report.cluster = Some(ClusterInfo {
        context: conn.context.clone(),
        server: conn.server.clone(),
        retries: conn.retries(),
    });
    report.kube_version = Some(config.kube_version.to_string());
    report.kube_version_source = Some(config.kube_version_source);
    report.server_version = Some(server.git_version.clone());
    if let Some(notice) = config
        .kube_version
        .notice_for_server(minor, &server.git_version)
    {
        report.notices.push(notice);
    }
    Ok(LiveCheck { report, plan })
}
/// What the engines among `owners` (a Flux HelmRelease, an Argo CD
/// application) will do to the CRD, from their objects
/// ([`crate::delivery::engines`]). An object that cannot be read leaves a
/// notice, not a failure: the rest of the check stands without it.
async fn engine_policies(
    conn: &Connection,
    owners: &[owners::Owner],
    live: &Value,
    new: &Value,
    changes: bool,
    notices: &mut Vec<String>,
) -> Vec<Finding> {
    let mut found = Vec::new();
    for owner in owners {
        let Some((resource, name)) = engines::object_of(owner) else {
            continue;
        };
        match conn.get_object(&resource, &name).await {
            Ok(Some(engine)) => found.extend(engines::findings(owner, &engine, live, new, changes)),
            Ok(None) => {}
            Err(e) => notices.push(format!(
                "{} could not be read ({e}): what it does to the CRD is not checked",
                owner.who()
            )),
        }
    }
    found
}

/// The other way out of a conflict with one manager that owns the fields
/// through server-side apply (a CRD installed with `kubectl apply
/// --server-side`): applying as that manager, which owns them with no
/// conflict and leaves no second owner behind.
pub fn as_owner(message: &str) -> String {
    match ownership::sole_applier(&ownership::conflicts(message)) {
        Some(manager) => format!(", or apply as their owner with --field-manager {manager}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_service_is_a_namespace_and_a_name() {
        assert_eq!(
            parse_probe_service("system/hook"),
            Ok(ProbeService {
                namespace: "system".into(),
                name: "hook".into()
            })
        );
        for wrong in ["hook", "/hook", "system/", "a/b/c", ""] {
            assert!(parse_probe_service(wrong).is_err(), "{wrong}");
        }
    }
}
