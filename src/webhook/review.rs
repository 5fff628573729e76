//! One admission review, start to finish: read the CRDs out of the
//! request, find what `apply-check` would find (the same engine, the old
//! object's real `status.storedVersions`, the rules of the server's
//! version), count objects on DELETE, scan them on UPDATE when configured,
//! and decide.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, Operation as KubeOperation};
use serde::Serialize;
use serde_json::Value;
use tokio::sync::OnceCell;

use super::decision::{self, DELETION_CHECK, Decision, Operation, Problem};
use crate::cluster::Connection;
use crate::compare::{Check, Finding, Severity};
use crate::config::{Config, Unfinished};
use crate::crd::Crd;
use crate::crd_validation::{KubeVersion, KubeVersionSource};
use crate::diff::{StoredVersionsArg, entries};
use crate::manifest::{LoadedCrd, Location, ManifestSet};
use crate::scan::{ScanOptions, scan_crd};

/// The configuration in force; `serve` swaps it when the file changes.
pub type SharedConfig = Arc<RwLock<Arc<Config>>>;

/// Reviews CRD changes with one connection to the cluster.
pub struct Reviewer {
    conn: Connection,
    config: SharedConfig,
    /// The server's minor version, read once it answers.
    server_minor: OnceCell<u32>,
}

/// What the log line of one review says, besides the decision.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reviewed {
    /// The request's uid.
    pub uid: String,
    /// The operation.
    pub operation: Operation,
    /// The CRD's name.
    pub crd: String,
    /// Who asked.
    pub user: String,
    /// Whether it was a dry run (nothing is stored either way).
    pub dry_run: bool,
    /// The mode in force.
    pub mode: &'static str,
    /// Objects counted (DELETE) or scanned (UPDATE with `scanObjects`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<u64>,
    /// How the object scan ended, when one was asked for: `completed` or
    /// `unfinished`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<&'static str>,
    /// The decision.
    #[serde(flatten)]
    pub decision: Decision,
    /// How long the review took, in milliseconds.
    pub duration_ms: f64,
}

impl Reviewer {
    /// A reviewer reading the configuration from `config`.
    pub fn new(conn: Connection, config: SharedConfig) -> Reviewer {
        Reviewer {
            conn,
            config,
            server_minor: OnceCell::new(),
        }
    }

    /// The configuration in force now.
    fn config(&self) -> Arc<Config> {
        match self.config.read() {
            Ok(c) => Arc::clone(&c),
            // A panic while swapping cannot leave a half-written Arc.
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// The rules of the server's version; the configured ones until the
    /// server has told its version.
    async fn kube_version(&self, config: &Config) -> KubeVersion {
        let minor = self
            .server_minor
            .get_or_try_init(|| self.conn.server_minor())
            .await;
        match minor {
            Ok(m) => KubeVersion::for_server(*m),
            Err(_) => config.kube_version,
        }
    }

    /// Reviews one request.
    pub async fn review(&self, request: &AdmissionRequest<DynamicObject>) -> Reviewed {
        let started = Instant::now();
        let config = self.config();
        let settings = config.webhook;
        let operation = match request.operation {
            KubeOperation::Create => Operation::Create,
            KubeOperation::Update => Operation::Update,
            KubeOperation::Delete => Operation::Delete,
            // CONNECT never applies to CRDs.
            KubeOperation::Connect => Operation::Update,
        };
        let examined = match self.examine(request, operation, &config).await {
            Ok(found) => found,
            Err(why) => Examined {
                problems: vec![unfinished(why, settings.fail_mode)],
                ..Examined::default()
            },
        };
        let decision = decision::decide(
            &request.name,
            operation,
            &examined.findings,
            examined.problems,
            &examined.annotations,
            &settings,
        );
        Reviewed {
            uid: request.uid.clone(),
            operation,
            crd: request.name.clone(),
            user: request.user_info.username.clone().unwrap_or_default(),
            dry_run: request.dry_run,
            mode: settings.mode.as_str(),
            objects: examined.objects,
            scan: examined.scan,
            decision,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        }
    }

    /// What one request holds to decide on.
    async fn examine(
        &self,
        request: &AdmissionRequest<DynamicObject>,
        operation: Operation,
        config: &Arc<Config>,
    ) -> Result<Examined, String> {
        let settings = config.webhook;
        let new = request.object.as_ref().map(crd_of).transpose()?;
        let old = request.old_object.as_ref().map(crd_of).transpose()?;
        match (operation, old, new) {
            (Operation::Delete, Some(old), _) => {
                let annotations = annotations_of(&old);
                if !settings.delete_guard {
                    return Ok(Examined {
                        annotations,
                        ..Examined::default()
                    });
                }
                let (problem, count) = match self.count_objects(&old).await {
                    Ok(0) => (None, Some(0)),
                    Ok(n) => (Some(objects_exist(&old, n)), Some(n)),
                    Err(why) => (
                        Some(unfinished(
                            format!("cannot count the objects of {}: {why}", old.name),
                            settings.fail_mode,
                        )),
                        None,
                    ),
                };
                Ok(Examined {
                    problems: problem.into_iter().collect(),
                    annotations,
                    objects: count,
                    ..Examined::default()
                })
            }
            (Operation::Delete, None, _) => {
                Err("the DELETE request carries no oldObject".to_string())
            }
            (_, old, Some(new)) => {
                let annotations = annotations_of(&new);
                // Only metadata or status changed: nothing to compare.
                if let Some(old) = &old
                    && old.manifest.get("spec") == new.manifest.get("spec")
                {
                    return Ok(Examined {
                        annotations,
                        ..Examined::default()
                    });
                }
                let mut judged = Config::clone(config);
                judged.kube_version = self.kube_version(config).await;
                judged.kube_version_source = KubeVersionSource::Server;
                let (new, old, findings) = tokio::task::spawn_blocking(move || {
                    let found = findings_of(old.as_ref(), &new, &judged);
                    (new, old, found)
                })
                .await
                .map_err(|e| format!("the check stopped inside crd-safety: {e}"))?;
                let mut examined = Examined {
                    findings,
                    annotations,
                    ..Examined::default()
                };
                if let Some(old) = old.as_ref().filter(|_| settings.scan_objects.enabled) {
                    match self.scan(old, &new, config).await {
                        Ok((found, scanned)) => {
                            examined.findings.extend(found);
                            examined.objects = Some(scanned);
                            examined.scan = Some("completed");
                        }
                        Err(why) => {
                            examined.problems.push(unfinished(why, settings.fail_mode));
                            examined.scan = Some("unfinished");
                        }
                    }
                }
                Ok(examined)
            }
            (_, _, None) => Err(format!(
                "the {} request carries no object",
                operation.as_str()
            )),
        }
    }

    /// How many objects the CRD has: one `limit=1` LIST per served
    /// version, storage version first, until one answers (every version
    /// lists the same stored objects; another may fail to convert).
    async fn count_objects(&self, crd: &Crd) -> Result<u64, String> {
        let storage = crd.storage_version().name().to_string();
        let mut versions: Vec<String> = crd
            .served_versions()
            .map(|v| v.name().to_string())
            .collect();
        versions.sort_by_key(|v| *v != storage);
        let mut last = "no version is served".to_string();
        for version in versions {
            match self.conn.list_page(&crd.resource(&version), 1, None).await {
                Ok(page) => {
                    let rest = page.metadata.remaining_item_count.unwrap_or(0).max(0);
                    return Ok(page.items.len() as u64 + rest as u64);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    }

    /// Validates the stored objects against the new schema, within the
    /// configured deadline and object cap.
    async fn scan(
        &self,
        old: &Crd,
        new: &Crd,
        config: &Config,
    ) -> Result<(Vec<Finding>, u64), String> {
        let limits = config.webhook.scan_objects;
        let count = self
            .count_objects(old)
            .await
            .map_err(|why| format!("the stored objects were not scanned: {why}"))?;
        if count > limits.max_objects {
            return Err(format!(
                "the stored objects were not scanned: {count} objects, more than scanObjects.maxObjects ({})",
                limits.max_objects
            ));
        }
        let minor = self.kube_version(config).await.minor;
        let mut quiet = |_: crate::scan::Progress<'_>| {};
        let scan = scan_crd(
            &self.conn,
            old,
            new,
            minor,
            ScanOptions::default(),
            &mut quiet,
        );
        let result = tokio::time::timeout(limits.deadline, scan)
            .await
            .map_err(|_| {
                format!(
                    "the scan of the stored objects did not finish within scanObjects.deadline ({})",
                    seconds(limits.deadline)
                )
            })?
            .map_err(|e| format!("the stored objects were not scanned: {e}"))?;
        let (kept, _) = config.policy().apply(&old.name, result.findings);
        Ok((kept, result.summary.scanned))
    }
}

/// What a review found, before the decision.
#[derive(Default)]
struct Examined {
    /// After the configured levels and exceptions.
    findings: Vec<Finding>,
    problems: Vec<Problem>,
    /// Those of the object carrying the author's intent (the new CRD, or
    /// the one deleted).
    annotations: BTreeMap<String, String>,
    /// Objects counted (DELETE) or scanned.
    objects: Option<u64>,
    /// How the object scan ended.
    scan: Option<&'static str>,
}

/// What `apply-check` would report for this change, after the configured
/// levels and exceptions. `invalidCrd` is capped at a warning: the API
/// server validated the CRD before it asked the webhook, so an error of
/// ours there is a disagreement with the server, whose verdict stands.
pub fn findings_of(old: Option<&Crd>, new: &Crd, config: &Config) -> Vec<Finding> {
    let set = |crd: Option<&Crd>, side: &str| ManifestSet {
        crds: crd
            .map(|c| LoadedCrd {
                crd: c.clone(),
                location: Location {
                    file: format!("admission request ({side})"),
                    line: 0,
                },
                text: None,
            })
            .into_iter()
            .collect(),
        ..ManifestSet::default()
    };
    let reports = entries(
        &set(old, "oldObject"),
        &set(Some(new), "object"),
        &StoredVersionsArg::default(),
        config,
    );
    let mut findings: Vec<Finding> = reports.into_iter().flat_map(|r| r.findings).collect();
    for f in &mut findings {
        if f.check == Check::InvalidCrd && f.severity == Severity::Error {
            f.severity = Severity::Warning;
            f.message = format!(
                "{} (the API server accepted this CRD before asking the webhook: its verdict stands)",
                f.message
            );
        }
    }
    findings
}

/// The CRD in a request's object.
fn crd_of(object: &DynamicObject) -> Result<Crd, String> {
    let value = serde_json::to_value(object).map_err(|e| format!("unreadable object: {e}"))?;
    if value.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
        return Err(format!(
            "crd-safety reviews CustomResourceDefinitions only, not {}: check the webhook's rules",
            value
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("(no kind)")
        ));
    }
    Crd::from_manifest(value).map_err(|e| format!("the CRD cannot be read: {e}"))
}

fn annotations_of(crd: &Crd) -> BTreeMap<String, String> {
    crd.manifest
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The deletion guard's problem.
fn objects_exist(crd: &Crd, count: u64) -> Problem {
    let kind = &crd.spec.names.kind;
    Problem {
        id: DELETION_CHECK,
        blocking: true,
        message: format!(
            "{count} {kind} {} still exist, and deleting the CRD deletes every one of them; \
             delete them first (kubectl delete {} --all -A), or accept the loss",
            if count == 1 { "object" } else { "objects" },
            crd.spec.names.plural
        ),
    }
}

/// A check that could not finish: blocking when `failMode` is closed.
fn unfinished(why: String, fail_mode: Unfinished) -> Problem {
    Problem {
        id: "unfinished",
        blocking: fail_mode == Unfinished::Closed,
        message: format!(
            "{why} ({})",
            match fail_mode {
                Unfinished::Closed => "failMode: closed denies what could not be checked",
                Unfinished::Open => "failMode: open allows it unchecked",
            }
        ),
    }
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}
