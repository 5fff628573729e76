//! One admission review, start to finish: read the CRDs out of the
//! request, find what `apply-check` would find (the same engine, the old
//! object's real `status.storedVersions`, the rules of the server's
//! version), count objects on DELETE, scan them on UPDATE when configured,
//! and decide.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{OnceCell, Semaphore};

use super::cache::{Key, VerdictCache};
use super::decision::{self, DELETION_CHECK, Decision, Operation, Problem};
use super::request::{Outline, Request};
use crate::cluster::Connection;
use crate::compare::{Check, Finding, Severity};
use crate::config::{Config, Unfinished};
use crate::crd::Crd;
use crate::crd_validation::{KubeVersion, KubeVersionSource};
use crate::diff::{StoredVersionsArg, entries};
use crate::manifest::{LoadedCrd, Location, ManifestSet};
use crate::scan::{ScanOptions, scan_crd};

/// The configuration in force and its generation; `serve` replaces it when
/// the file changes, and the generation tells cached verdicts apart.
#[derive(Default)]
pub struct SharedConfig {
    current: RwLock<(u64, Arc<Config>)>,
}

impl SharedConfig {
    /// Starts with `config`.
    pub fn new(config: Config) -> SharedConfig {
        SharedConfig {
            current: RwLock::new((0, Arc::new(config))),
        }
    }

    /// The configuration in force, with its generation.
    pub fn get(&self) -> (u64, Arc<Config>) {
        match self.current.read() {
            Ok(c) => (c.0, Arc::clone(&c.1)),
            // A panic while swapping cannot leave a half-written pair.
            Err(p) => {
                let c = p.into_inner();
                (c.0, Arc::clone(&c.1))
            }
        }
    }

    /// Puts `config` in force.
    pub fn set(&self, config: Config) {
        let mut slot = match self.current.write() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        };
        *slot = (slot.0 + 1, Arc::new(config));
    }
}

/// Reviews CRD changes with one connection to the cluster.
pub struct Reviewer {
    conn: Connection,
    config: Arc<SharedConfig>,
    /// The server's minor version, read once it answers.
    server_minor: OnceCell<u32>,
    /// Findings of pairs already judged.
    cache: VerdictCache,
    /// Judgments run at once: one per core. Each holds two parsed CRDs
    /// (tens of MB for the largest), and more at once only adds memory,
    /// not speed.
    judging: Semaphore,
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

impl Reviewer {
    /// A reviewer reading the configuration from `config`.
    pub fn new(conn: Connection, config: Arc<SharedConfig>) -> Reviewer {
        let cores = crate::parallel::cores();
        Reviewer {
            conn,
            config,
            server_minor: OnceCell::new(),
            cache: VerdictCache::default(),
            judging: Semaphore::new(cores),
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
    pub async fn review(&self, request: &Request<'_>) -> Reviewed {
        let started = Instant::now();
        let (generation, config) = self.config.get();
        let settings = config.webhook;
        let operation = request.operation();
        let examined = match self.examine(request, operation, generation, &config).await {
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
            user: request.user_info.username.clone(),
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
        request: &Request<'_>,
        operation: Operation,
        generation: u64,
        config: &Arc<Config>,
    ) -> Result<Examined, String> {
        let settings = config.webhook;
        let new = request.object.map(outline_of).transpose()?;
        let old = request.old_object.map(outline_of).transpose()?;
        match (operation, old, new) {
            (Operation::Delete, Some(old_outline), _) => {
                let annotations = old_outline.annotations().clone();
                if !settings.delete_guard {
                    return Ok(Examined {
                        annotations,
                        ..Examined::default()
                    });
                }
                let old = parse_crd(request.old_object)?;
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
            (_, old_outline, Some(new_outline)) => {
                let annotations = new_outline.annotations().clone();
                let new_spec = new_outline.spec.map_or("", |s| s.get());
                let old_spec = old_outline
                    .as_ref()
                    .and_then(|o| o.spec)
                    .map_or("", |s| s.get());
                // Only metadata or status changed: nothing to compare.
                if old_outline.is_some() && old_spec == new_spec {
                    return Ok(Examined {
                        annotations,
                        ..Examined::default()
                    });
                }
                let kube = self.kube_version(config).await;
                let key = Key {
                    name: &request.name,
                    new_annotations: &annotations,
                    old_spec,
                    old_stored: old_outline.as_ref().map_or("", |o| o.stored_versions()),
                    new_spec,
                    config_generation: generation,
                    kube_minor: kube.minor,
                };
                let findings = self
                    .cache
                    .get_or_judge(&key, || self.judge(request, kube, config))
                    .await?;
                let mut examined = Examined {
                    findings: findings.as_ref().clone(),
                    annotations,
                    ..Examined::default()
                };
                if old_outline.is_some() && settings.scan_objects.enabled {
                    let scanned = match (parse_crd(request.old_object), parse_crd(request.object)) {
                        (Ok(old), Ok(new)) => self.scan(&old, &new, config).await,
                        (Err(e), _) | (_, Err(e)) => Err(e),
                    };
                    match scanned {
                        Ok((found, count)) => {
                            examined.findings.extend(found);
                            examined.objects = Some(count);
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

    /// Parses both CRDs and finds what `apply-check` would, one judgment
    /// per core at a time, off the async threads.
    async fn judge(
        &self,
        request: &Request<'_>,
        kube: KubeVersion,
        config: &Config,
    ) -> Result<Vec<Finding>, String> {
        let _permit = self
            .judging
            .acquire()
            .await
            .map_err(|e| format!("the check stopped inside crd-safety: {e}"))?;
        // Owned copies for the blocking pool, made under the permit, so
        // waiting reviews hold only their bodies.
        let new_raw = request.object.map(|r| r.get().to_owned());
        let old_raw = request.old_object.map(|r| r.get().to_owned());
        let mut judged = config.clone();
        judged.kube_version = kube;
        judged.kube_version_source = KubeVersionSource::Server;
        tokio::task::spawn_blocking(move || {
            let new = parse_crd_text(new_raw.as_deref())?;
            let old = old_raw
                .as_deref()
                .map(|r| parse_crd_text(Some(r)))
                .transpose()?;
            Ok(findings_of(old, new, &judged))
        })
        .await
        .map_err(|e| format!("the check stopped inside crd-safety: {e}"))?
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
        // The deadline covers the count too: both are round trips to a
        // server that may be slow, and the answer must beat the webhook's
        // timeout.
        let bounded = async {
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
            scan_crd(
                &self.conn,
                old,
                new,
                minor,
                &ScanOptions::default(),
                &mut quiet,
            )
            .await
            .map_err(|e| format!("the stored objects were not scanned: {e}"))
        };
        let result = tokio::time::timeout(limits.deadline, bounded)
            .await
            .map_err(|_| {
                format!(
                    "the scan of the stored objects did not finish within scanObjects.deadline ({})",
                    seconds(limits.deadline)
                )
            })??;
        let (kept, _) = config.policy().apply(&old.name, result.findings);
        Ok((kept, result.summary.scanned))
    }
}

/// What `apply-check` would report for this change, after the configured
/// levels and exceptions. `invalidCrd` is capped at a warning: the API
/// server validated the CRD before it asked the webhook, so an error of
/// ours there is a disagreement with the server, whose verdict stands.
pub fn findings_of(old: Option<Crd>, new: Crd, config: &Config) -> Vec<Finding> {
    let set = |crd: Option<Crd>, side: &str| ManifestSet {
        crds: crd
            .map(|crd| LoadedCrd {
                crd,
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

/// The outline of a request's object, refusing anything but a CRD.
fn outline_of(raw: &RawValue) -> Result<Outline<'_>, String> {
    let outline = Outline::of(raw)?;
    match outline.kind.as_deref() {
        Some("CustomResourceDefinition") => Ok(outline),
        other => Err(format!(
            "crd-safety reviews CustomResourceDefinitions only, not {}: check the webhook's rules",
            other.unwrap_or("(no kind)")
        )),
    }
}

/// The CRD in a request's object (already known to be one).
fn parse_crd(raw: Option<&RawValue>) -> Result<Crd, String> {
    parse_crd_text(raw.map(RawValue::get))
}

fn parse_crd_text(raw: Option<&str>) -> Result<Crd, String> {
    let raw = raw.ok_or("the request carries no object")?;
    let value = serde_json::from_str(raw).map_err(|e| format!("unreadable object: {e}"))?;
    Crd::from_manifest(value).map_err(|e| format!("the CRD cannot be read: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn widgets(spec_props: serde_json::Value) -> Crd {
        Crd::from_manifest(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": spec_props}}}}}]},
            "status": {"storedVersions": ["v1"]}
        }))
        .expect("a CRD")
    }

    #[test]
    fn levels_and_exceptions_of_the_configuration_apply_in_the_webhook() {
        let old = || widgets(json!({"size": {"type": "integer"}, "color": {"type": "string"}}));
        let new = || widgets(json!({"size": {"type": "integer"}}));
        let removal = |fs: &[Finding]| {
            fs.iter()
                .find(|f| f.check == Check::ExistingFieldRemoval)
                .map(|f| f.severity)
        };
        let plain = findings_of(Some(old()), new(), &Config::default());
        assert_eq!(removal(&plain), Some(Severity::Error));
        let lowered = Config::parse("checks:\n  existingFieldRemoval: warning\n", "c").unwrap();
        assert_eq!(
            removal(&findings_of(Some(old()), new(), &lowered)),
            Some(Severity::Warning)
        );
        let excepted = Config::parse(
            "exceptions:\n- crd: widgets.example.com\n  check: existingFieldRemoval\n  reason: unused\n",
            "c",
        )
        .unwrap();
        assert_eq!(removal(&findings_of(Some(old()), new(), &excepted)), None);
    }
}
