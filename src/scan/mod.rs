//! The object scan (`--objects`): every stored custom resource of a CRD
//! that changes, read page by page in each version whose schema changes and
//! that is served before and after, validated against the NEW schema of that
//! version. What it finds becomes ordinary findings (`invalidObjects`,
//! `prunedFields`, `defaultedFields`, `notEvaluated`), so levels, exceptions
//! and exit codes work as for every other check.
//!
//! Versions whose schema is identical on both sides are not scanned: the
//! update cannot change how their objects validate.

mod documents;
mod grade;
mod tally;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::Value;
use thiserror::Error;

use crate::cluster::{ClusterError, Connection, ListError};
use crate::compare::{Check, Finding, ObjectsDetail};
use crate::crd::{Crd, ResourceRef};
use crate::object_validation::{PrunedKind, Rule, Validator};
use crate::outcome::ScanSummary;
use crate::schema::{FieldPath, Lookup, Schema};

pub use documents::{judge_documents, judge_resources};
pub use grade::{Graded, grade_by_objects};
use tally::{Group, GroupKey, Kind, Tally};

/// Kubernetes ratchets unchanged invalid fields on update from 1.30 on
/// (beta, on by default; GA in 1.33).
pub const RATCHETING_SINCE_MINOR: u32 = 30;

/// How to scan.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Objects per LIST page (`--chunk-size`).
    pub chunk_size: u32,
    /// Example objects per finding in the table (`--max-examples`).
    pub max_examples: usize,
    /// Only the objects of this namespace (`-n`); cluster-scoped CRDs are
    /// scanned whole.
    pub namespace: Option<String>,
    /// The scans running at once with these options, which share
    /// `chunk_size` between them.
    pub share: PageShare,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            chunk_size: 500,
            max_examples: 5,
            namespace: None,
            share: PageShare::default(),
        }
    }
}

impl ScanOptions {
    /// Objects per page for the next LIST: `chunk_size` split between the
    /// scans running now. A scan holds at most two pages (one validated,
    /// the next one fetched), so however many CRDs are scanned at once they
    /// hold about two `chunk_size` pages together, as one scan alone does;
    /// when the others finish, the last one grows back to whole pages.
    fn page_limit(&self) -> u32 {
        let running = u32::try_from(self.share.0.load(Ordering::Relaxed))
            .unwrap_or(u32::MAX)
            .max(1);
        (self.chunk_size / running).max(MIN_PAGE.min(self.chunk_size))
    }
}

/// The smallest page a shared scan asks for: below it round trips, not
/// memory, bound the scan.
const MIN_PAGE: u32 = 50;

/// A count of the scans running at once (clones share it).
#[derive(Debug, Clone, Default)]
pub struct PageShare(Arc<AtomicUsize>);

/// One running scan, counted in its [`PageShare`] until dropped.
struct Running<'a>(&'a PageShare);

impl PageShare {
    fn enter(&self) -> Running<'_> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Running(self)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
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
    opts: &ScanOptions,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<CrdScan, ScanError> {
    let _running = opts.share.enter();
    let ratcheting = server_minor >= RATCHETING_SINCE_MINOR;
    // Its own retries, when other scans share the connection.
    let conn = &conn.counting();
    let mut tally = Tally::new(opts.max_examples, ratcheting);
    let mut summary = ScanSummary::new(server_minor);
    if live.spec.scope == "Namespaced" {
        summary.namespace.clone_from(&opts.namespace);
    }
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
        let validator = Compiled::new(&new_version.schema, server_minor);
        let resource = live.resource_in(&name, opts.namespace.as_deref());
        let old_schema = &old_version.schema;
        let keep_default = |p: &FieldPath| default_is_new(old_schema, &new_version.schema, p);
        let listing = Listing {
            conn,
            crd: &live.name,
            label: resource.version.clone(),
            resource,
            validator: &validator,
            keep_default: &keep_default,
            data_loss_only: false,
            by_namespace: false,
            opts,
        };
        let listed =
            match scan_version(&listing, &mut tally, progress, &mut summary.restarts).await? {
                Ok(listed) => listed,
                Err(why) => {
                    findings.push(unscannable(&name, &why));
                    continue;
                }
            };
        scanned_per_version.push((name.clone(), listed.scanned));
        summary.versions.push(name);
    }
    let storage = new.storage_version();
    for (read, listed) in scan_rewrites(
        conn,
        live,
        new,
        server_minor,
        opts,
        &mut tally,
        progress,
        &mut summary,
    )
    .await?
    {
        scanned_per_version.push((format!("{read} -> {}", storage.name()), listed));
    }
    summary.retries = conn.own_retries();
    let rewritten = format!("the new storage version's ({}) schema", storage.name());
    Ok(conclude(
        summary,
        tally,
        &scanned_per_version,
        findings,
        server_minor,
        &|label: &str| {
            if label.contains(" -> ") {
                rewritten.clone()
            } else {
                "the new schema".to_string()
            }
        },
    ))
}

/// With conversion `None`, an object still stored in another version is
/// written back in the new storage version by its next update (or by
/// `migrate`), and that version's schema prunes whatever it does not
/// describe. Each served version of `status.storedVersions` other than the
/// new storage version is read as stored and checked for such fields, as
/// [`scan_for_migration`] does: the number read per version.
#[allow(clippy::too_many_arguments)]
async fn scan_rewrites(
    conn: &Connection,
    live: &Crd,
    new: &Crd,
    server_minor: u32,
    opts: &ScanOptions,
    tally: &mut Tally,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
    summary: &mut ScanSummary,
) -> Result<Vec<(String, u64)>, ScanError> {
    let storage = new.storage_version();
    if new.conversion_strategy() != "None" {
        return Ok(Vec::new());
    }
    let (readable, _) = stored_elsewhere(live, storage.name());
    if readable.is_empty() {
        return Ok(Vec::new());
    }
    let validator = Compiled::new(&storage.schema, server_minor);
    let never = |_: &FieldPath| false;
    let mut read = Vec::new();
    for version in readable {
        let listing = Listing {
            conn,
            crd: &live.name,
            resource: live.resource_in(&version, opts.namespace.as_deref()),
            label: format!("{version} -> {}", storage.name()),
            validator: &validator,
            keep_default: &never,
            data_loss_only: true,
            by_namespace: false,
            opts,
        };
        let Ok(listed) = scan_version(&listing, tally, progress, &mut summary.restarts).await?
        else {
            // The new storage schema is judged by invalidCrd; nothing to add.
            return Ok(Vec::new());
        };
        read.push((version, listed.scanned));
    }
    Ok(read)
}

/// What [`scan_for_migration`] found about one CRD.
#[derive(Debug, Clone)]
pub struct MigrationScan {
    /// Totals, offending objects and findings; `summary.scanned` counts the
    /// objects read in the storage version.
    pub scan: CrdScan,
    /// Objects per namespace (`""` for cluster-scoped ones), when asked.
    pub namespaces: BTreeMap<String, u64>,
    /// Versions in `status.storedVersions` that are not served, so their
    /// objects could only be seen through the storage version.
    pub unreadable_versions: Vec<String>,
}

/// Checks the stored objects of `live` as rewriting them in its storage
/// version would judge them: every object read in the storage version is
/// validated against that version's schema (what the write sends), and,
/// because the server may prune on read what a schema does not describe,
/// every object is also read in each other served version of
/// `status.storedVersions` (where it may still be stored as written) and
/// checked for fields the storage schema would drop.
pub async fn scan_for_migration(
    conn: &Connection,
    live: &Crd,
    server_minor: u32,
    opts: &ScanOptions,
    by_namespace: bool,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<MigrationScan, ScanError> {
    let ratcheting = server_minor >= RATCHETING_SINCE_MINOR;
    // Its own retries, when other scans share the connection.
    let conn = &conn.counting();
    let mut tally = Tally::new(opts.max_examples, ratcheting);
    let storage = live.storage_version();
    let mut summary = ScanSummary::new(server_minor);
    let mut findings = Vec::new();
    let mut scanned_per_version = Vec::new();
    let mut namespaces = BTreeMap::new();
    let validator = Compiled::new(&storage.schema, server_minor);
    let (others, unreadable_versions) = stored_elsewhere(live, storage.name());
    let views = std::iter::once(storage.name().to_string()).chain(others);
    let never = |_: &FieldPath| false;
    for (i, version) in views.enumerate() {
        let listing = Listing {
            conn,
            crd: &live.name,
            resource: live.resource_in(&version, opts.namespace.as_deref()),
            label: version.clone(),
            validator: &validator,
            keep_default: &never,
            data_loss_only: i > 0,
            by_namespace: by_namespace && i == 0,
            opts,
        };
        let listed =
            match scan_version(&listing, &mut tally, progress, &mut summary.restarts).await? {
                Ok(listed) => listed,
                Err(why) => {
                    // The first objects of any view: nothing was tallied yet.
                    findings.push(unscannable(storage.name(), &why));
                    return Ok(MigrationScan {
                        scan: conclude(summary, tally, &[], findings, server_minor, &|_| {
                            String::new()
                        }),
                        namespaces: BTreeMap::new(),
                        unreadable_versions: Vec::new(),
                    });
                }
            };
        if i == 0 {
            namespaces = listed.namespaces;
            summary.scanned = listed.scanned;
        }
        scanned_per_version.push((version.clone(), listed.scanned));
        summary.versions.push(version);
    }
    summary.retries = conn.own_retries();
    let against = format!("the storage version's ({}) schema", storage.name());
    let mut scan = conclude(
        summary,
        tally,
        &scanned_per_version,
        findings,
        server_minor,
        &|_| against.clone(),
    );
    // Every view lists the same objects; the storage version's count is
    // the one a rewrite works through.
    scan.summary.scanned = scanned_per_version.first().map_or(0, |(_, n)| *n);
    Ok(MigrationScan {
        scan,
        namespaces,
        unreadable_versions,
    })
}

impl ScanSummary {
    fn new(server_minor: u32) -> ScanSummary {
        ScanSummary {
            server_version: format!("1.{server_minor}"),
            ratcheting: server_minor >= RATCHETING_SINCE_MINOR,
            versions: Vec::new(),
            unchanged_versions: Vec::new(),
            namespace: None,
            scanned: 0,
            invalid: 0,
            losing_data: 0,
            restarts: 0,
            retries: 0,
            objects: Vec::new(),
        }
    }
}

/// The versions of `status.storedVersions` (the storage version when the
/// status is missing) other than `storage`, once each: those that can be
/// read (served) and those that cannot.
fn stored_elsewhere(live: &Crd, storage: &str) -> (Vec<String>, Vec<String>) {
    let stored = live
        .stored_versions
        .clone()
        .unwrap_or_else(|| vec![live.storage_version().name().to_string()]);
    let (mut readable, mut unreadable) = (Vec::new(), Vec::new());
    for v in stored {
        if v == storage || readable.contains(&v) || unreadable.contains(&v) {
            continue;
        }
        if live.version(&v).is_some_and(|l| l.spec.served) {
            readable.push(v);
        } else {
            unreadable.push(v);
        }
    }
    (readable, unreadable)
}

/// Totals and findings from a finished tally. `against` names the schema
/// a version label's objects were judged by, in messages (`the new schema`).
fn conclude(
    mut summary: ScanSummary,
    mut tally: Tally,
    scanned_per_version: &[(String, u64)],
    mut findings: Vec<Finding>,
    server_minor: u32,
    against: &dyn Fn(&str) -> String,
) -> CrdScan {
    summary.scanned = scanned_per_version
        .iter()
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0);
    let distinct = |set: &BTreeSet<(String, String)>| {
        set.iter()
            .map(|(_, o)| o.as_str())
            .collect::<BTreeSet<_>>()
            .len() as u64
    };
    summary.invalid = distinct(&tally.invalid);
    summary.losing_data = distinct(&tally.losing_data);
    for (key, group) in &tally.groups {
        let scanned = scanned_per_version
            .iter()
            .find(|(v, _)| *v == key.version)
            .map_or(0, |(_, n)| *n);
        findings.push(finding(
            key,
            group,
            scanned,
            server_minor,
            &against(&key.version),
        ));
    }
    summary.objects = std::mem::take(&mut tally.objects);
    CrdScan { summary, findings }
}

/// One version's listing: what to read and how to judge it.
struct Listing<'a> {
    conn: &'a Connection,
    crd: &'a str,
    resource: ResourceRef,
    /// The version label of its findings: the version read, or `read ->
    /// storage` when judged as a rewrite in another version.
    label: String,
    validator: &'a Compiled<'a>,
    /// Whether a default at a path is new (an unchanged one was already seen).
    keep_default: &'a (dyn Fn(&FieldPath) -> bool + Sync),
    /// Only report fields that would be dropped, not violations.
    data_loss_only: bool,
    /// Count objects per namespace.
    by_namespace: bool,
    opts: &'a ScanOptions,
}

/// A schema's validator, compiled when the first object to check arrives:
/// most CRDs of a large bundle have no objects in a given cluster, and
/// compiling a schema (its patterns, its CEL rules) costs more than listing
/// nothing. A schema that does not compile is reported only where an
/// object is there to be checked.
struct Compiled<'a> {
    schema: &'a Schema,
    server_minor: u32,
    validator: OnceLock<Result<Arc<Validator>, String>>,
}

impl<'a> Compiled<'a> {
    fn new(schema: &'a Schema, server_minor: u32) -> Compiled<'a> {
        Compiled {
            schema,
            server_minor,
            validator: OnceLock::new(),
        }
    }

    fn get(&self) -> Result<Arc<Validator>, String> {
        self.validator
            .get_or_init(|| {
                Validator::new(self.schema, self.server_minor)
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }
}

/// What one complete listing read.
struct Listed {
    scanned: u64,
    namespaces: BTreeMap<String, u64>,
}

/// Lists and validates one version, starting over once if the continue
/// token expires: counting objects twice would be as wrong as missing some.
/// The inner error: objects are there, and the schema does not compile.
async fn scan_version(
    listing: &Listing<'_>,
    tally: &mut Tally,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
    restarts: &mut u32,
) -> Result<Result<Listed, String>, ScanError> {
    let mut restarted = false;
    loop {
        match list_and_validate(listing, tally, progress).await {
            Ok(listed) => return Ok(Ok(listed)),
            Err(Stop::Unscannable(why)) => return Ok(Err(why)),
            Err(Stop::Cluster(e)) => return Err(e.into()),
            Err(Stop::Internal(why)) => {
                return Err(ScanError::Internal {
                    crd: listing.crd.to_string(),
                    why,
                });
            }
            Err(Stop::Restart(scanned)) if restarted => {
                return Err(ScanError::Expired {
                    crd: listing.crd.to_string(),
                    version: listing.label.clone(),
                    scanned,
                });
            }
            Err(Stop::Restart(_)) => {
                restarted = true;
                *restarts += 1;
                tally.reset_version(&listing.label);
            }
        }
    }
}

/// Why one listing stopped early.
enum Stop {
    /// The continue token expired after this many objects: start over.
    Restart(u64),
    /// The cluster failed.
    Cluster(ClusterError),
    /// The validation thread died (a bug, reported rather than hidden).
    Internal(String),
    /// The schema does not compile into a validator.
    Unscannable(String),
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
/// validated on all cores while the next one is fetched, so the scan takes
/// about as long as the slower of the two, and at most two pages are in
/// memory. The same threads validate every page, so their caches stay warm. Outcomes are added up in the page's order, so the examples
/// shown do not depend on which thread finished first.
async fn list_and_validate(
    listing: &Listing<'_>,
    tally: &mut Tally,
    progress: &mut (dyn FnMut(Progress<'_>) + Send),
) -> Result<Listed, Stop> {
    let Listing {
        conn,
        resource,
        opts,
        ..
    } = listing;
    let mut listed = Listed {
        scanned: 0,
        namespaces: BTreeMap::new(),
    };
    // Threads, like the validator, only once there is an object to check.
    let mut pool: Option<Arc<crate::parallel::Pool>> = None;
    let mut page = conn.list_page(resource, opts.page_limit(), None).await?;
    loop {
        let next = page.next().map(str::to_string);
        let remaining = page.metadata.remaining_item_count;
        let items = Arc::new(std::mem::take(&mut page.items));
        let data_loss_only = listing.data_loss_only;
        let checking = if items.is_empty() {
            None
        } else {
            let v = listing.validator.get().map_err(Stop::Unscannable)?;
            let workers = Arc::clone(pool.get_or_insert_with(Default::default));
            Some(tokio::task::spawn_blocking(move || {
                let outcomes = workers.map(Arc::clone(&items), move |o| {
                    let mut outcome = v.validate(o);
                    if data_loss_only {
                        outcome.violations.clear();
                        outcome.not_evaluated.clear();
                        outcome.pruned.retain(|p| p.kind != PrunedKind::Defaulted);
                    }
                    outcome
                });
                (items, outcomes)
            }))
        };
        let checking = async {
            match checking {
                Some(task) => task.await,
                None => Ok((Arc::new(Vec::new()), Vec::new())),
            }
        };
        let fetching = async {
            match &next {
                Some(t) => Some(conn.list_page(resource, opts.page_limit(), Some(t)).await),
                None => None,
            }
        };
        let (checked, fetched) = tokio::join!(checking, fetching);
        let (items, outcomes) = checked.map_err(|e| Stop::Internal(e.to_string()))?;
        for (object, outcome) in items.iter().zip(outcomes) {
            // Names are only built for objects that have something to report.
            if !outcome.is_clean() {
                tally.add(
                    &listing.label,
                    &object_name(object),
                    outcome,
                    listing.keep_default,
                );
            }
            if listing.by_namespace {
                let ns = object["metadata"]["namespace"].as_str().unwrap_or_default();
                *listed.namespaces.entry(ns.to_string()).or_default() += 1;
            }
            listed.scanned += 1;
        }
        let total = remaining
            .and_then(|r| u64::try_from(r).ok())
            .map(|r| r + listed.scanned);
        progress(Progress {
            crd: listing.crd,
            version: &resource.version,
            scanned: listed.scanned,
            total,
        });
        page = match fetched {
            None => return Ok(listed),
            Some(Ok(p)) => p,
            Some(Err(ListError::Expired)) => return Err(Stop::Restart(listed.scanned)),
            Some(Err(ListError::Cluster(e))) => return Err(Stop::Cluster(e)),
        };
    }
}

/// `namespace/name`, or `name` for cluster-scoped objects.
pub fn object_name(object: &Value) -> String {
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
    Finding::new(
        Check::NotEvaluated,
        Check::NotEvaluated.default_severity(),
        format!(
            "the objects of {version} were not scanned: the new schema cannot be used \
             for validation ({why})"
        ),
    )
    .in_version(version)
}

fn ratchet_note(ratchetable: bool, rule: &str, server_minor: u32) -> String {
    let list_type = [Rule::ListSet, Rule::ListMap]
        .iter()
        .any(|r| r.id() == rule);
    if list_type {
        // Older than ratcheting, and the same on every version.
        "updates of these objects still succeed, even those that change the list (the API server \
         checks list types on update only if the stored object passed them), but creating such an \
         object (re-applying it, restoring a backup) fails"
            .to_string()
    } else if server_minor < RATCHETING_SINCE_MINOR {
        format!(
            "Kubernetes 1.{server_minor} does not ratchet: every write of these objects fails \
             until they are fixed, and creating such an object fails"
        )
    } else if ratchetable && rule == Rule::Required.id() {
        format!(
            "ratcheted on this 1.{server_minor} cluster at the object that lacks the field: updates \
             that leave that object as it was (labels, status) still succeed, any change to it is \
             refused, and creating such an object (re-applying it, restoring a backup) fails"
        )
    } else if ratchetable {
        format!(
            "ratcheted on this 1.{server_minor} cluster: updates that leave the field unchanged \
             (in a list that is not listType: map, the whole list) still succeed, but creating such an object (re-applying it, restoring a backup) fails"
        )
    } else {
        "not ratcheted (this kind of rule never is): every write of these objects fails until \
         they are fixed, and creating such an object fails"
            .to_string()
    }
}

fn finding(
    key: &GroupKey,
    group: &Group,
    scanned: u64,
    server_minor: u32,
    against: &str,
) -> Finding {
    let path = key.path.to_string();
    let of = format!("{} of {scanned} objects", group.count);
    let list_type = [Rule::ListSet, Rule::ListMap]
        .iter()
        .any(|r| r.id() == key.rule);
    let (check, message, ratcheted) = match key.kind {
        Kind::Invalid => (
            Check::InvalidObjects,
            format!(
                "{of} fail {} at {path} under {against} (e.g. {}); {}",
                key.rule,
                group.sample,
                ratchet_note(group.ratchetable, &key.rule, server_minor)
            ),
            Some(list_type || (group.ratchetable && server_minor >= RATCHETING_SINCE_MINOR)),
        ),
        Kind::Pruned => (
            Check::PrunedFields,
            format!(
                "{of} carry {path}, which {against} does not describe: the API server \
                 drops it on their next write (data loss)"
            ),
            None,
        ),
        Kind::NullDropped => (
            Check::PrunedFields,
            format!(
                "{of} store null at {path}, which {against} no longer allows: the null is \
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
    Finding::new(check, check.default_severity(), message)
        .in_version(key.version.clone())
        .at(path)
        .with_objects(ObjectsDetail {
            rule: key.rule.clone(),
            count: group.count,
            scanned,
            ratcheted,
            examples: group.examples.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_running_at_once_split_the_page_and_the_last_one_grows_back() {
        let opts = ScanOptions::default();
        assert_eq!(opts.page_limit(), 500, "alone: whole pages");
        let running: Vec<Running<'_>> = (0..4).map(|_| opts.share.enter()).collect();
        assert_eq!(opts.page_limit(), 125);
        let more: Vec<Running<'_>> = (0..16).map(|_| opts.share.enter()).collect();
        assert_eq!(opts.page_limit(), MIN_PAGE, "never below the smallest page");
        drop(more);
        drop(running);
        assert_eq!(opts.page_limit(), 500);
        let small = ScanOptions {
            chunk_size: 4,
            ..ScanOptions::default()
        };
        let _four: Vec<Running<'_>> = (0..4).map(|_| small.share.enter()).collect();
        assert_eq!(
            small.page_limit(),
            4,
            "a chunk smaller than the floor stays"
        );
    }

    #[test]
    fn list_type_duplicates_never_block_updates_whatever_the_server_version() {
        let key = |rule: Rule| GroupKey {
            kind: Kind::Invalid,
            version: "v1".to_string(),
            path: FieldPath::root().property("spec").property("tags"),
            rule: rule.id().to_string(),
        };
        let group = Group {
            count: 1,
            ratchetable: true,
            examples: vec!["default/a".to_string()],
            sample: "duplicate".to_string(),
        };
        for minor in [28, 29, 30, 34] {
            let f = finding(&key(Rule::ListSet), &group, 3, minor, "the new schema");
            assert!(
                f.message.contains(
                    "updates of these objects still succeed, even those that change the list"
                ),
                "1.{minor}: {}",
                f.message
            );
            assert_eq!(f.objects.as_ref().and_then(|o| o.ratcheted), Some(true));
        }
        // Any other rule ratchets only from 1.30.
        let before = finding(&key(Rule::MaxLength), &group, 3, 29, "the new schema");
        assert!(
            before.message.contains("Kubernetes 1.29 does not ratchet"),
            "{}",
            before.message
        );
        assert_eq!(
            before.objects.as_ref().and_then(|o| o.ratcheted),
            Some(false)
        );
    }
}
