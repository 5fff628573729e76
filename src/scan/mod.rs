//! The object scan (`--objects`): every stored custom resource of a CRD
//! that changes, read page by page in each version whose schema changes and
//! that is served before and after, validated against the NEW schema of that
//! version. What it finds becomes ordinary findings (`invalidObjects`,
//! `prunedFields`, `defaultedFields`, `notEvaluated`), so levels, exceptions
//! and exit codes work as for every other check.
//!
//! Versions whose schema is identical on both sides are not scanned: the
//! update cannot change how their objects validate.

mod tally;

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use thiserror::Error;

use crate::cluster::{ClusterError, Connection, ListError, ResourceRef};
use crate::compare::{Check, Finding, ObjectsDetail};
use crate::crd::Crd;
use crate::schema::{FieldPath, Lookup, Schema};
use crate::validate::Validator;

use tally::{Group, GroupKey, Kind, Tally};
pub use tally::{ObjectDataLoss, ObjectReport, ObjectViolation};

/// Kubernetes ratchets unchanged invalid fields on update from 1.30 on
/// (beta, on by default; GA in 1.33).
pub const RATCHETING_SINCE_MINOR: u32 = 30;

/// How to scan.
#[derive(Debug, Clone, Copy)]
pub struct ScanOptions {
    /// Objects per LIST page (`--chunk-size`).
    pub chunk_size: u32,
    /// Example objects per finding in the table (`--max-examples`).
    pub max_examples: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            chunk_size: 500,
            max_examples: 5,
        }
    }
}

/// Where a scan is, for a progress bar.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// The CRD being scanned.
    pub crd: &'a str,
    /// The version being listed.
    pub version: &'a str,
    /// Objects validated so far in this version.
    pub scanned: u64,
    /// The server's estimate of the total, when it gives one.
    pub total: Option<u64>,
}

/// What the scan of one CRD found, besides its findings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanSummary {
    /// `1.34`.
    pub server_version: String,
    /// Whether the server ratchets unchanged invalid fields on update.
    pub ratcheting: bool,
    /// Versions scanned.
    pub versions: Vec<String>,
    /// Served before and after, but with an unchanged schema: not scanned.
    pub unchanged_versions: Vec<String>,
    /// Objects scanned (in the version with the most; every version lists
    /// the same stored objects).
    pub scanned: u64,
    /// Objects the new schema rejects (in any scanned version).
    pub invalid: u64,
    /// Objects that lose or change data.
    pub losing_data: u64,
    /// Times a listing restarted after its continue token expired.
    pub restarts: u32,
    /// Every offending object.
    pub objects: Vec<ObjectReport>,
}

/// The scan of one CRD.
#[derive(Debug, Clone)]
pub struct CrdScan {
    /// Totals and every offending object.
    pub summary: ScanSummary,
    /// One finding per (check, version, path, rule), at default severity.
    pub findings: Vec<Finding>,
}

/// Why a scan could not finish.
#[derive(Debug, Error)]
pub enum ScanError {
    /// Listing failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The continue token expired twice in a row: the result would be
    /// incomplete, so there is none.
    #[error(
        "listing {crd} in {version} expired twice (410 Gone) after {scanned} objects; \
         the scan is incomplete: retry, or use a larger --chunk-size"
    )]
    Expired {
        crd: String,
        version: String,
        scanned: u64,
    },
    /// Validation failed unexpectedly (a bug in crd-safety).
    #[error("scanning {crd} failed inside crd-safety: {why}")]
    Internal { crd: String, why: String },
}

/// Scans the stored objects of `live` against the schemas of `new`.
pub async fn scan_crd(
    conn: &Connection,
    live: &Crd,
    new: &Crd,
    server_minor: u32,
    opts: ScanOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<CrdScan, ScanError> {
    let ratcheting = server_minor >= RATCHETING_SINCE_MINOR;
    let mut tally = Tally::new(opts.max_examples, ratcheting);
    let mut summary = ScanSummary {
        server_version: format!("1.{server_minor}"),
        ratcheting,
        versions: Vec::new(),
        unchanged_versions: Vec::new(),
        scanned: 0,
        invalid: 0,
        losing_data: 0,
        restarts: 0,
        objects: Vec::new(),
    };
    let mut findings = Vec::new();
    let mut scanned_per_version = Vec::new();
    for old_version in live.served_versions() {
        let Some(new_version) = new.version(old_version.name()).filter(|v| v.spec.served) else {
            continue;
        };
        let name = old_version.name().to_string();
        if old_version.schema == new_version.schema {
            summary.unchanged_versions.push(name);
            continue;
        }
        let validator = match Validator::new(&new_version.schema, server_minor) {
            Ok(v) => Arc::new(v),
            Err(e) => {
                findings.push(unscannable(&name, &e.to_string()));
                continue;
            }
        };
        let resource = ResourceRef {
            group: live.spec.group.clone(),
            version: name.clone(),
            plural: live.spec.names.plural.clone(),
        };
        let old_schema = &old_version.schema;
        let keep_default = |p: &FieldPath| default_is_new(old_schema, &new_version.schema, p);
        let mut restarted = false;
        let scanned = loop {
            match list_and_validate(
                conn,
                &resource,
                &live.name,
                &validator,
                &mut tally,
                &keep_default,
                opts,
                progress,
            )
            .await
            {
                Ok(n) => break n,
                Err(Stop::Cluster(e)) => return Err(e.into()),
                Err(Stop::Internal(why)) => {
                    return Err(ScanError::Internal {
                        crd: live.name.clone(),
                        why,
                    });
                }
                Err(Stop::Restart(scanned)) if restarted => {
                    return Err(ScanError::Expired {
                        crd: live.name.clone(),
                        version: name,
                        scanned,
                    });
                }
                Err(Stop::Restart(_)) => {
                    // Start this version over with clean totals: counting
                    // objects twice would be as wrong as missing some.
                    restarted = true;
                    summary.restarts += 1;
                    tally.reset_version(&name);
                }
            }
        };
        scanned_per_version.push((name.clone(), scanned));
        summary.versions.push(name);
    }
    summary.scanned = scanned_per_version
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0);
    let distinct = |set: &std::collections::BTreeSet<(String, String)>| {
        set.iter()
            .map(|(_, o)| o.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len() as u64
    };
    summary.invalid = distinct(&tally.invalid);
    summary.losing_data = distinct(&tally.losing_data);
    for (key, group) in &tally.groups {
        let scanned = scanned_per_version
            .iter()
            .find(|(v, _)| *v == key.version)
            .map_or(0, |(_, n)| *n);
        findings.push(finding(key, group, scanned, server_minor));
    }
    summary.objects = std::mem::take(&mut tally.objects);
    Ok(CrdScan { summary, findings })
}

/// Why one listing stopped early.
enum Stop {
    /// The continue token expired after this many objects: start over.
    Restart(u64),
    /// The cluster failed.
    Cluster(ClusterError),
    /// The validation thread died (a bug, reported rather than hidden).
    Internal(String),
}

impl From<ListError> for Stop {
    fn from(e: ListError) -> Self {
        match e {
            ListError::Expired => Stop::Restart(0),
            ListError::Cluster(c) => Stop::Cluster(c),
        }
    }
}

/// Lists `resource` page by page and validates every object. Each page is
/// validated on a blocking thread while the next one is fetched, so the
/// scan takes about as long as the slower of the two, and at most two pages
/// are in memory.
#[allow(clippy::too_many_arguments)]
async fn list_and_validate(
    conn: &Connection,
    resource: &ResourceRef,
    crd: &str,
    validator: &Arc<Validator>,
    tally: &mut Tally,
    keep_default: &dyn Fn(&FieldPath) -> bool,
    opts: ScanOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<u64, Stop> {
    let mut scanned = 0u64;
    let mut page = conn.list_page(resource, opts.chunk_size, None).await?;
    loop {
        let next = page.next().map(str::to_string);
        let remaining = page.metadata.remaining_item_count;
        let items = std::mem::take(&mut page.items);
        let v = Arc::clone(validator);
        let checking = tokio::task::spawn_blocking(move || {
            let outcomes: Vec<_> = items.iter().map(|o| v.validate(o)).collect();
            (items, outcomes)
        });
        let fetching = async {
            match &next {
                Some(t) => Some(conn.list_page(resource, opts.chunk_size, Some(t)).await),
                None => None,
            }
        };
        let (checked, fetched) = tokio::join!(checking, fetching);
        let (items, outcomes) = checked.map_err(|e| Stop::Internal(e.to_string()))?;
        for (object, outcome) in items.iter().zip(outcomes) {
            // Names are only built for objects that have something to report.
            if !outcome.is_clean() {
                tally.add(
                    &resource.version,
                    &object_name(object),
                    outcome,
                    keep_default,
                );
            }
            scanned += 1;
        }
        let total = remaining
            .and_then(|r| u64::try_from(r).ok())
            .map(|r| r + scanned);
        progress(Progress {
            crd,
            version: &resource.version,
            scanned,
            total,
        });
        page = match fetched {
            None => return Ok(scanned),
            Some(Ok(p)) => p,
            Some(Err(ListError::Expired)) => return Err(Stop::Restart(scanned)),
            Some(Err(ListError::Cluster(e))) => return Err(Stop::Cluster(e)),
        };
    }
}

/// `namespace/name`, or `name` for cluster-scoped objects.
fn object_name(object: &Value) -> String {
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or("<unnamed>");
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_string(),
    }
}

/// Whether the new schema's default at `path` differs from the old one's
/// (an unchanged default was already what clients saw).
fn default_is_new(old: &Schema, new: &Schema, path: &FieldPath) -> bool {
    let default_at = |s: &Schema| match s.lookup(path) {
        Lookup::Found(node) => node.keyword("default").cloned(),
        _ => None,
    };
    default_at(old) != default_at(new)
}

fn unscannable(version: &str, why: &str) -> Finding {
    Finding {
        check: Check::NotEvaluated,
        severity: Check::NotEvaluated.default_severity(),
        version: Some(version.to_string()),
        path: None,
        message: format!(
            "the objects of {version} were not scanned: the new schema cannot be used \
             for validation ({why})"
        ),
        old: None,
        new: None,
        objects: None,
    }
}

fn ratchet_note(ratchetable: bool, server_minor: u32) -> String {
    if server_minor < RATCHETING_SINCE_MINOR {
        format!(
            "Kubernetes 1.{server_minor} does not ratchet: every write of these objects fails \
             until they are fixed, and creating such an object fails"
        )
    } else if ratchetable {
        format!(
            "ratcheted on this 1.{server_minor} cluster: updates that leave the field unchanged \
             still succeed, but creating such an object (re-applying it, restoring a backup) fails"
        )
    } else {
        "not ratcheted (this kind of rule never is): every write of these objects fails until \
         they are fixed, and creating such an object fails"
            .to_string()
    }
}

fn finding(key: &GroupKey, group: &Group, scanned: u64, server_minor: u32) -> Finding {
    let path = key.path.to_string();
    let of = format!("{} of {scanned} objects", group.count);
    let (check, message, ratcheted) = match key.kind {
        Kind::Invalid => (
            Check::InvalidObjects,
            format!(
                "{of} fail {} at {path} under the new schema (e.g. {}); {}",
                key.rule,
                group.sample,
                ratchet_note(group.ratchetable, server_minor)
            ),
            Some(group.ratchetable && server_minor >= RATCHETING_SINCE_MINOR),
        ),
        Kind::Pruned => (
            Check::PrunedFields,
            format!(
                "{of} carry {path}, which the new schema does not describe: the API server \
                 drops it on their next write (data loss)"
            ),
            None,
        ),
        Kind::NullDropped => (
            Check::PrunedFields,
            format!(
                "{of} store null at {path}, which the new schema no longer allows: the null is \
                 dropped when they are next read and written"
            ),
            None,
        ),
        Kind::Defaulted => (
            Check::DefaultedFields,
            format!(
                "{of} lack {path}, which now has a default: clients see the default on read, \
                 and the next write stores it"
            ),
            None,
        ),
        Kind::NotEvaluated => (
            Check::NotEvaluated,
            format!(
                "rule `{}` at {path} could not be evaluated here for {of} ({}); they are not \
                 counted as valid",
                key.rule, group.sample
            ),
            None,
        ),
    };
    Finding {
        check,
        severity: check.default_severity(),
        version: Some(key.version.clone()),
        path: Some(path),
        message,
        old: None,
        new: None,
        objects: Some(ObjectsDetail {
            rule: key.rule.clone(),
            count: group.count,
            scanned,
            ratcheted,
            examples: group.examples.clone(),
        }),
    }
}
