//! The webhook's own checks of one CRD review ([`super::admission`]): find
//! what `apply-check` would find (the same engine, the old object's real
//! `status.storedVersions`, the rules of the server's version), count
//! objects on DELETE, scan them on UPDATE when configured. What it finds
//! joins the requirements' ([`super::requirements`]) for the one decision.
//!
//! Anyone who reaches the Service can post a review, so the body is not
//! trusted about the cluster: before the webhook reads anything with its
//! own rights (the count, the scan) it reads the CRD the request names
//! from the API server, refuses a request whose object is not that CRD
//! (another uid, group or plural), and lists only that CRD's resources, as
//! the API server stores them. Every review has a deadline below the API
//! server's timeout, and every call to the API server is tried once and
//! retried at most once within it.
//!
//! Memory is bounded by [`super::budget`]: the request's CRDs (read once,
//! with room for judging them), the parse of the stored CRD and an object
//! scan each reserve their estimated cost first and hold it until their
//! work ends. The CRDs go to the blocking pool as slices of the request's
//! body (no copy), so reviews waiting for room hold their bodies and
//! nothing more.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::OnceCell;

use super::admission::{Admission, Examined, unchecked};
use super::budget::{Judging, judgment_cost};
use super::cache::{Key, VerdictCache};
use super::decision::{
    self, ACCEPT_ANNOTATION, ACCEPT_GENERATION_ANNOTATION, DELETION_CHECK, Found, Operation,
    Problem, SKIP_CHECK, SKIP_LABEL,
};
use super::request::{Outline, Request};
use super::stored_models::StoredModels;
use crate::cluster::access::Subject;
use crate::cluster::{Connection, RetryPolicy};
use crate::compare::{Check, Finding, GradeOutcome, Severity};
use crate::config::{Config, Unfinished};
use crate::crd::Crd;
use crate::crd_validation::{KubeVersion, KubeVersionSource};
use crate::engine::{StoredVersionsArg, entries};
use crate::manifest::{LoadedCrd, Location, ManifestSet};
use crate::outcome::ScanSummary;
use crate::scan::{ScanOptions, grade_by_objects, scan_crd};

/// Calls to the API server during a review: one try and at most one quick
/// retry. The CLI's policy (8 tries, up to 60 s) would outlast the API
/// server's `timeoutSeconds` many times over, retrying against a server
/// that may be the reason the review is slow; the review's deadline
/// bounds the rest.
const REVIEW_RETRIES: RetryPolicy = RetryPolicy {
    attempts: 2,
    backoff: Duration::from_millis(200),
    max_backoff: Duration::from_millis(200),
    max_wait: Duration::from_millis(500),
};

/// The server's version is a nicety (the rules of its minor); a review
/// waits this long for it at most, then uses the configured rules.
const VERSION_LOOKUP: Duration = Duration::from_secs(2);

/// What an object scan holds besides the new CRD's model: its pages of
/// objects. The webhook's scans share one page size ([`ScanOptions`]'s
/// `share`), so together they hold about two pages of 500 objects; this
/// is that at a few KiB per object, an estimate (an object can be far
/// larger, up to the API server's 1.5 MB).
const SCAN_PAGES_BYTES: u64 = 4 << 20;

/// Reviews CRD changes with one connection to the cluster.
pub struct Reviewer {
    conn: Connection,
    /// The server's minor version, read once it answers.
    server_minor: OnceCell<u32>,
    /// Findings of pairs already judged.
    cache: VerdictCache,
    /// Models of the stored CRDs judged against last.
    stored_models: Arc<StoredModels>,
    /// The memory budget and the cores, shared with the requirements.
    judging: Judging,
    /// Shared by every scan, so that scans at once split one page size.
    scan_options: ScanOptions,
    /// Who may see the stored objects of which resource, as the API
    /// server last answered.
    access: Mutex<HashMap<AccessKey, (bool, Instant)>>,
}

/// A requester and a resource: `(user, groups, group, plural)`.
type AccessKey = (String, Vec<String>, String, String);

/// How long an answer of the API server's authorizer is kept: a role
/// bound or removed takes effect within this, and a burst of reviews by
/// one requester asks once.
const ACCESS_TTL: Duration = Duration::from_secs(10);

/// Answers kept at most; past this the older half goes.
const ACCESS_KEPT: usize = 1024;

/// Why the CRD the API server stores does not stand behind a request.
enum Untrusted {
    /// The request's object is not the CRD stored under the request's name:
    /// nothing may be read on its behalf, and nothing else is said.
    Refused(String),
    /// The stored CRD could not be read (the API server is slow or down).
    Unread(String),
}

impl Reviewer {
    /// A reviewer whose CPU work runs under `judging`.
    pub fn new(conn: Connection, judging: Judging) -> Reviewer {
        Reviewer {
            conn: conn.with_retry_policy(REVIEW_RETRIES),
            server_minor: OnceCell::new(),
            cache: VerdictCache::default(),
            stored_models: Arc::default(),
            judging,
            scan_options: ScanOptions::default(),
            access: Mutex::default(),
        }
    }

    /// Whether the requester may list `crd`'s objects in every namespace,
    /// as the API server's authorizer says (a `SubjectAccessReview`, kept
    /// [`ACCESS_TTL`]): only then does an answer say which stored objects
    /// exist or fail, and how many. `serve` reads them with its own rights,
    /// and a requester who may change CRDs but not read their objects
    /// could otherwise learn them (a schema whose `pattern` only some
    /// values match names the objects that hold them). An answer that
    /// cannot be had counts as no.
    async fn may_see(&self, request: &Request<'_>, crd: &Crd) -> bool {
        let key: AccessKey = (
            request.user_info.username.clone(),
            request.user_info.groups.kept.clone(),
            crd.spec.group.clone(),
            crd.spec.names.plural.clone(),
        );
        let now = Instant::now();
        if let Some((allowed, at)) = self.access_kept().get(&key)
            && now.duration_since(*at) < ACCESS_TTL
        {
            return *allowed;
        }
        let subject = Subject {
            user: &key.0,
            groups: &key.1,
        };
        let Ok(allowed) = self.conn.may_list(subject, &key.2, &key.3).await else {
            return false;
        };
        let mut kept = self.access_kept();
        if kept.len() >= ACCESS_KEPT {
            let mut ages: Vec<Instant> = kept.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let median = ages[ages.len() / 2];
            kept.retain(|_, (_, at)| *at > median);
        }
        kept.insert(key, (allowed, now));
        allowed
    }

    /// `objects` as the requester may learn them ([`Reviewer::may_see`]).
    async fn shown(&self, request: &Request<'_>, crd: &Crd, objects: Objects) -> Objects {
        match objects {
            Objects::Counted(_) if !self.may_see(request, crd).await => {
                Objects::Hidden(not_said("how many", request, crd))
            }
            other => other,
        }
    }

    fn access_kept(&self) -> std::sync::MutexGuard<'_, HashMap<AccessKey, (bool, Instant)>> {
        self.access
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reads the server's version ahead of the first review, so that one
    /// does not wait for it.
    pub async fn prime(&self) {
        let _ = self.server_minor().await;
    }

    async fn server_minor(&self) -> Result<u32, ()> {
        self.server_minor
            .get_or_try_init(|| async {
                match tokio::time::timeout(VERSION_LOOKUP, self.conn.server_minor()).await {
                    Ok(Ok(minor)) => Ok(minor),
                    _ => Err(()),
                }
            })
            .await
            .copied()
    }

    /// The rules of the server's version; the configured ones until the
    /// server has told its version.
    async fn kube_version(&self, config: &Config) -> KubeVersion {
        match self.server_minor().await {
            Ok(m) => KubeVersion::for_server(m),
            Err(()) => config.kube_version,
        }
    }

    /// What the webhook's own checks find of one CRD review, within its
    /// deadline: a check that did not finish is a problem `failMode`
    /// decides.
    pub async fn examine(&self, review: &Admission<'_>) -> Examined {
        let fail_mode = review.config.webhook.fail_mode;
        let deadline = review.deadline;
        match tokio::time::timeout_at(deadline.at.into(), self.examined(review)).await {
            Ok(Ok(examined)) => examined,
            Ok(Err(why)) => Examined {
                found: Found {
                    problems: vec![unfinished(why, fail_mode)],
                    ..Found::default()
                },
                ..Examined::default()
            },
            Err(_) => Examined {
                found: Found {
                    problems: vec![unfinished(
                        format!(
                            "the review did not finish within its deadline ({}; webhook.reviewDeadline, \
                             or a share of the API server's timeout)",
                            deadline.seconds()
                        ),
                        fail_mode,
                    )],
                    ..Found::default()
                },
                ..Examined::default()
            },
        }
    }

    /// What one request holds to decide on; `Err` is a check that could
    /// not finish.
    async fn examined(&self, review: &Admission<'_>) -> Result<Examined, String> {
        let request = &review.request;
        let config = &review.config;
        let settings = &config.webhook;
        let operation = review.operation();
        let new = request.object.as_ref().map(crd_outline).transpose()?;
        let old = request.old_object.as_ref().map(crd_outline).transpose()?;
        let mut examined = Examined::default();
        let problems = &mut examined.found.problems;
        match (operation, old, new) {
            (Operation::Delete, Some(old_outline), _) => {
                if !settings.delete_guard {
                    return Ok(examined);
                }
                let (problem, count) = match self.objects_at_stake(request, &[old_outline]).await? {
                    Ok((_, Objects::Counted(0))) => (None, Some(0)),
                    Ok((stored, objects)) => {
                        let count = objects.count();
                        let shown = self.shown(request, &stored, objects).await;
                        (Some(objects_exist(&stored, shown)), count)
                    }
                    Err(why) => (Some(unfinished(why, settings.fail_mode)), None),
                };
                problems.extend(problem);
                examined.objects = count;
                Ok(examined)
            }
            (Operation::Delete, None, _) => {
                Err("the DELETE request carries no oldObject".to_string())
            }
            (_, old_outline, Some(new_outline)) => {
                let new_spec = new_outline.spec.map_or("", |s| s.get());
                let old_spec = old_outline
                    .as_ref()
                    .and_then(|o| o.spec)
                    .map_or("", |s| s.get());
                // The label that keeps the CRD out of review from now on
                // is added only as break-glass is.
                if new_outline.skip_label() && !old_outline.is_some_and(|o| o.skip_label()) {
                    problems.push(skip_added());
                }
                // Only metadata or status changed: nothing to compare, but
                // an update that arms the deletion guard's break-glass is
                // judged as the deletion it lets through.
                if let Some(old_outline) = old_outline.as_ref().filter(|_| old_spec == new_spec) {
                    let arming = settings.delete_guard
                        && arms_deletion(new_outline.annotations(), old_outline.annotations());
                    if !arming {
                        return Ok(examined);
                    }
                    let claims: [&Outline<'_>; 2] = [old_outline, new_outline];
                    let (problem, count) = match self.objects_at_stake(request, &claims).await? {
                        Ok((_, Objects::Counted(0))) => (None, Some(0)),
                        Ok((stored, objects)) => {
                            let count = objects.count();
                            let shown = self.shown(request, &stored, objects).await;
                            (Some(armed(&stored, shown, new_outline.generation())), count)
                        }
                        Err(why) => (Some(unfinished(why, settings.fail_mode)), None),
                    };
                    problems.extend(problem);
                    examined.objects = count;
                    return Ok(examined);
                }
                // The scan reads the cluster: the request must be about the
                // CRD the API server stores, or nothing at all is said.
                let stored = match &old_outline {
                    Some(old_outline) if settings.scan_objects.enabled => {
                        match self.stored_crd(request, &[old_outline, new_outline]).await {
                            Err(Untrusted::Refused(why)) => return Err(why),
                            other => Some(other),
                        }
                    }
                    _ => None,
                };
                let kube = self.kube_version(config).await;
                let key = Key {
                    name: &request.name,
                    operation,
                    new_annotations: new_outline.annotations_raw(),
                    old_annotations: old_outline.as_ref().map_or("", |o| o.annotations_raw()),
                    old_spec,
                    old_stored: old_outline.as_ref().map_or("", |o| o.stored_versions()),
                    new_spec,
                    lengths: (
                        new_outline.json_len(),
                        old_outline.as_ref().map_or(0, |o| o.json_len()),
                    ),
                    config_generation: review.generation,
                    kube_minor: kube.minor,
                };
                let findings = self
                    .cache
                    .get_or_judge(&key, || self.judge(review, kube))
                    .await?;
                examined.found.findings = findings.as_ref().clone();
                if let Some(stored) = stored {
                    let scanned = match &stored {
                        Ok(stored) => self.scan(stored, review).await,
                        Err(Untrusted::Unread(why) | Untrusted::Refused(why)) => {
                            Err(format!("the stored objects were not scanned: {why}"))
                        }
                    };
                    match scanned {
                        Ok((mut found, summary)) => {
                            // The objects decide what they decide, before
                            // anything is hidden from the requester: a
                            // grade rests on the whole scan either way.
                            if !config.keep_schema_grades {
                                let graded = grade_by_objects(
                                    std::mem::take(&mut examined.found.findings),
                                    &summary,
                                    found,
                                );
                                examined.found.findings = graded.findings;
                                found = graded.scan_findings;
                            }
                            let graded = |f: &Finding| f.grade.is_some() || f.objects.is_some();
                            if let Ok(stored) = &stored
                                && (!found.is_empty() || examined.found.findings.iter().any(graded))
                                && !self.may_see(request, stored).await
                            {
                                let why = not_said("which and how many", request, stored);
                                found.iter_mut().for_each(|f| without_objects(f, &why));
                                examined
                                    .found
                                    .findings
                                    .iter_mut()
                                    .for_each(|f| without_counts(f, &why));
                            }
                            examined.found.findings.extend(found);
                            examined.objects = Some(summary.scanned);
                            examined.scan = Some("completed");
                        }
                        Err(why) => {
                            examined
                                .found
                                .problems
                                .push(unfinished(why, settings.fail_mode));
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

    /// What deleting the CRD would take with it: the stored CRD and the
    /// number of its objects, or why they could not be counted. The outer
    /// `Err` refuses the request (it is not about the stored CRD).
    async fn objects_at_stake(
        &self,
        request: &Request<'_>,
        claims: &[&Outline<'_>],
    ) -> Result<Result<(Crd, Objects), String>, String> {
        let stored = match self.stored_crd(request, claims).await {
            Ok(crd) => crd,
            Err(Untrusted::Refused(why)) => return Err(why),
            Err(Untrusted::Unread(why)) => {
                return Ok(Err(format!(
                    "cannot count the objects of {}: {why}",
                    request.name
                )));
            }
        };
        // Nothing served, nothing to count with: the objects stay stored
        // all the same, so the guard assumes they exist. Treating this
        // as an unfinished check let `failMode: open` allow deleting a
        // CRD whose versions had all been unserved first.
        if stored.served_versions().next().is_none() {
            return Ok(Ok((stored, Objects::Unseen)));
        }
        Ok(match self.count_objects(&stored).await {
            Ok(n) => Ok((stored, Objects::Counted(n))),
            Err(why) => Err(format!(
                "cannot count the objects of {}: {why}",
                stored.name
            )),
        })
    }

    /// The CRD the API server stores under the request's name, provided
    /// each of `claims` (the request's objects) is that CRD: the same name
    /// and uid, the same group and plural. What the webhook lists with its
    /// own rights is then that CRD's resources, never what a body names.
    async fn stored_crd(
        &self,
        request: &Request<'_>,
        claims: &[&Outline<'_>],
    ) -> Result<Crd, Untrusted> {
        let name = &request.name;
        let refused = |why: String| {
            Untrusted::Refused(format!("crd-safety read nothing for this request: {why}"))
        };
        // Not found and another uid say the same, so the answer tells
        // nothing about which CRDs exist.
        let not_stored = || {
            refused(format!(
                "no CRD {name:?} with the uid of the request's object is stored in the cluster"
            ))
        };
        if !is_crd_name(name) {
            return Err(refused(format!("{name:?} is not the name of a CRD")));
        }
        if claims.iter().any(|c| c.name() != name) {
            return Err(refused(
                "the request's object is not the CRD the request names".to_string(),
            ));
        }
        let json = match self.conn.get_crd_json(name).await {
            Ok(Some(json)) => json,
            Ok(None) => return Err(not_stored()),
            Err(e) => {
                return Err(Untrusted::Unread(format!(
                    "cannot read the stored CRD {name}: {e}"
                )));
            }
        };
        // Read, under the memory budget and off the async threads, before
        // it is compared with the request: the fields compared are in the
        // model's document, and the stored CRD is the API server's own.
        let reserved = self
            .judging
            .reserve(judgment_cost(json.len()))
            .await
            .map_err(|e| Untrusted::Unread(unchecked(e)))?;
        let stored = self
            .judging
            .run(reserved, move || {
                Crd::from_json(&json).map_err(|e| format!("the stored CRD cannot be read: {e}"))
            })
            .await
            .map_err(Untrusted::Unread)?;
        let text = |pointer: &str| {
            stored
                .manifest
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let uid = text("/metadata/uid");
        if uid.is_empty() || claims.iter().any(|c| c.uid() != uid) {
            return Err(not_stored());
        }
        for claim in claims {
            let claimed = claim.claimed().map_err(refused)?;
            if claimed.group != text("/spec/group")
                || claimed.names.plural != text("/spec/names/plural")
            {
                return Err(refused(format!(
                    "the request's object claims group {:?} and plural {:?}, which the stored CRD {name} does not have",
                    claimed.group, claimed.names.plural
                )));
            }
        }
        Ok(stored)
    }

    /// Finds what `apply-check` would of the request's pair, its CRDs
    /// read for it (and shared with the rest of the review), one judgment
    /// per core at a time, off the async threads.
    async fn judge(
        &self,
        review: &Admission<'_>,
        kube: KubeVersion,
    ) -> Result<Vec<Finding>, String> {
        let mut judged = (*review.config).clone();
        judged.kube_version = kube;
        judged.kube_version_source = KubeVersionSource::Server;
        let (_, findings) = review
            .pair_judged(&self.judging, &self.stored_models, move |new, old| {
                // Info findings never reach a verdict, and the cache keeps
                // what this returns: they are most of a large upgrade's.
                let mut findings = findings_of(old, new, &judged);
                findings.retain(|f| f.severity > Severity::Info);
                Ok(findings)
            })
            .await?;
        Ok(findings)
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

    /// Validates the objects the API server stores for `stored` against
    /// the new schema (the request's object), within the configured deadline and
    /// object cap.
    async fn scan(
        &self,
        stored: &Crd,
        review: &Admission<'_>,
    ) -> Result<(Vec<Finding>, ScanSummary), String> {
        let config = &review.config;
        let settings = &config.webhook;
        let limits = settings.scan_objects;
        let not_scanned = |why: String| format!("the stored objects were not scanned: {why}");
        // The deadline covers the count too: both are round trips to a
        // server that may be slow, and the answer must beat the webhook's
        // timeout.
        let bounded = async {
            let count = self.count_objects(stored).await.map_err(not_scanned)?;
            if count > limits.max_objects {
                return Err(format!(
                    "the stored objects were not scanned: {count} objects, more than scanObjects.maxObjects ({})",
                    limits.max_objects
                ));
            }
            // The new model, as the judgment read it (or read now, on a
            // verdict already known), and room for the pages of objects,
            // held for the whole scan.
            let new = review.new_crd(&self.judging).await.map_err(not_scanned)?;
            let pages = self
                .judging
                .reserve(SCAN_PAGES_BYTES)
                .await
                .map_err(|e| not_scanned(unchecked(e)))?;
            let minor = self.kube_version(config).await.minor;
            let mut quiet = |_: crate::scan::Progress<'_>| {};
            let scanned = scan_crd(
                &self.conn,
                stored,
                &new.crd,
                minor,
                &self.scan_options,
                &mut quiet,
            )
            .await
            .map_err(|e| not_scanned(e.to_string()));
            drop(pages);
            scanned
        };
        let result = tokio::time::timeout(limits.deadline, bounded)
            .await
            .map_err(|_| {
                format!(
                    "the scan of the stored objects did not finish within scanObjects.deadline ({})",
                    seconds(limits.deadline)
                )
            })??;
        let (mut kept, _) = config.policy().apply(&stored.name, result.findings);
        if !settings.reveals_values() {
            kept.iter_mut().for_each(without_values);
        }
        Ok((kept, result.summary))
    }
}

/// Whether `name` can be a CRD's name (`<plural>.<group>`, a DNS
/// subdomain): it goes into the path of a GET, so nothing else is sent.
fn is_crd_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && !name.starts_with(['.', '-'])
        && !name.ends_with(['.', '-'])
        && !name.contains("..")
}

/// A scan finding as the requester may see it: the objects by
/// `namespace/name` and the rule that fails, never the values the scan
/// read with the webhook's rights (the sample of a validation error
/// quotes them). `webhook.reveal: values` keeps the full message.
fn without_values(f: &mut Finding) {
    let Some(d) = &f.objects else { return };
    let at = f.path.as_deref().unwrap_or("the object");
    let of = format!("{} of {} objects", d.count, d.scanned);
    let examples = if d.examples.is_empty() {
        String::new()
    } else {
        format!(" ({})", d.examples.join(", "))
    };
    let hidden = "values not shown (webhook.reveal: values shows them)";
    f.message = match f.check {
        Check::InvalidObjects => {
            let writes = match d.ratcheted {
                Some(true) => {
                    "updates that leave the field unchanged (in a list that is not listType: map, the whole list) still succeed (ratcheting), creating such an object fails"
                }
                _ => "every write of these objects fails until they are fixed",
            };
            format!(
                "{of}{examples} fail {} at {at} under the new schema; {writes}; {hidden}",
                d.rule
            )
        }
        Check::NotEvaluated => format!(
            "rule `{}` at {at} could not be evaluated here for {of}{examples}; they are not counted as valid; {hidden}",
            d.rule
        ),
        _ => return,
    };
}

/// Why an answer does not say `what` of the stored objects (`which and
/// how many`).
fn not_said(what: &str, request: &Request<'_>, crd: &Crd) -> String {
    format!(
        "{what} is not said: {:?} may not list {}.{}",
        request.user_info.username, crd.spec.names.plural, crd.spec.group
    )
}

/// A scan finding as a requester who may not list the objects sees it:
/// that stored objects fail, and the rule, not which or how many.
fn without_objects(f: &mut Finding, why: &str) {
    let Some(d) = &f.objects else { return };
    let at = f.path.as_deref().unwrap_or("the object");
    f.message = match f.check {
        Check::NotEvaluated => format!(
            "rule `{}` at {at} could not be evaluated here for stored objects; they are not counted as valid; {why}",
            d.rule
        ),
        _ => format!(
            "stored objects fail {} at {at} under the new schema; {why}",
            d.rule
        ),
    };
}

/// A finding the stored objects graded, as a requester who may not list
/// them sees it: the grade and the rule, not how many objects there are or
/// which of them fail.
fn without_counts(f: &mut Finding, why: &str) {
    let Some(grade) = &mut f.grade else { return };
    let said = match grade.outcome {
        GradeOutcome::NoStoredObjectAffected => "On this cluster no stored object fails it",
        GradeOutcome::StoredObjectsAffected => "On this cluster stored objects fail it",
        GradeOutcome::Undecided => "Not decided by the stored objects",
    };
    // The message is the grade's reason, then the schema's own words.
    let schema_part = f
        .message
        .strip_prefix(grade.reason.as_str())
        .and_then(|rest| rest.strip_prefix(". "))
        .unwrap_or(&f.message)
        .to_string();
    grade.reason = format!("{said}; {why}");
    f.message = format!("{}. {schema_part}", grade.reason);
    grade.objects_scanned = None;
    grade.objects_affected = None;
    if let Some(d) = &mut f.objects {
        d.examples.clear();
    }
}

/// What `apply-check` would report for this change, after the configured
/// levels and exceptions, but for `invalidCrd`: the API server validates a
/// CRD before it calls validating webhooks (its registry's validation runs
/// first), so every CRD that reaches `serve` is one the server accepted,
/// and our validation could only disagree with the server, whose verdict
/// stands. Not running it spares a tenth of a judgment's CPU.
pub fn findings_of(old: Option<Arc<Crd>>, new: Arc<Crd>, config: &Config) -> Vec<Finding> {
    let set = |crd: Option<Arc<Crd>>, side: &str| ManifestSet {
        crds: crd
            .map(|crd| LoadedCrd {
                crd,
                location: Location {
                    file: format!("admission request ({side})"),
                    line: 0,
                },
                text: None,
                readings: Vec::new(),
                origin: Default::default(),
            })
            .into_iter()
            .collect(),
        ..ManifestSet::default()
    };
    let mut config = config.clone();
    config.skip_crd_validation = true;
    let reports = entries(
        &set(old, "oldObject"),
        &set(Some(new), "object"),
        &StoredVersionsArg::default(),
        &config,
    );
    reports.into_iter().flat_map(|r| r.findings).collect()
}

/// The outline of a request's object, refusing anything but a v1 CRD
/// (the webhook is registered for v1, and the API server converts what
/// it sends to the registered version).
fn crd_outline<'o, 'a>(outline: &'o Outline<'a>) -> Result<&'o Outline<'a>, String> {
    match (outline.api_version, outline.kind) {
        (Some("apiextensions.k8s.io/v1"), Some("CustomResourceDefinition")) => Ok(outline),
        (version, kind) => Err(format!(
            "crd-safety reviews apiextensions.k8s.io/v1 CustomResourceDefinitions only, not {} {}: check the webhook's rules",
            version.unwrap_or("(no apiVersion)"),
            kind.unwrap_or("(no kind)")
        )),
    }
}

/// What the deletion guard knows of a CRD's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Objects {
    /// Counted through a served version.
    Counted(u64),
    /// No version is served, so none can be counted; they may exist.
    Unseen,
    /// Counted, but the requester may not list them, so the count is not
    /// said: why.
    Hidden(String),
}

impl Objects {
    fn count(&self) -> Option<u64> {
        match self {
            Objects::Counted(n) => Some(*n),
            Objects::Unseen | Objects::Hidden(_) => None,
        }
    }

    /// `3 Widget objects still exist` (`still` is the word before
    /// `exist`), or why some may.
    fn exist(&self, crd: &Crd, still: &str) -> String {
        let kind = &crd.spec.names.kind;
        match self {
            Objects::Hidden(why) => format!("{kind} objects {still}exist ({why})"),
            Objects::Counted(n) => format!(
                "{n} {kind} {} {still}exist",
                if *n == 1 { "object" } else { "objects" }
            ),
            Objects::Unseen => format!(
                "{} serves no version, so its {kind} objects cannot be counted and may exist \
                 (status.storedVersions: {})",
                crd.name,
                crd.stored_versions
                    .as_deref()
                    .map_or_else(|| "not set".to_string(), |v| v.join(", "))
            ),
        }
    }
}

/// The deletion guard's problem.
fn objects_exist(crd: &Crd, objects: Objects) -> Problem {
    let first = match objects {
        Objects::Counted(_) | Objects::Hidden(_) => format!(
            "delete them first (kubectl delete {} --all -A)",
            crd.spec.names.plural
        ),
        Objects::Unseen => "serve a version again to see and delete them first".to_string(),
    };
    Problem {
        id: DELETION_CHECK,
        blocking: true,
        by_requirement: false,
        message: format!(
            "{}, and deleting the CRD deletes every one of them; {first}, or accept the loss",
            objects.exist(crd, "still ")
        ),
    }
}

/// Whether an update arms the deletion guard's break-glass: its accept
/// annotation lists `crdDeletion`, and the update adds or changes the
/// break-glass annotations.
fn arms_deletion(
    annotations: &BTreeMap<String, String>,
    before: &BTreeMap<String, String>,
) -> bool {
    let lists_deletion = annotations
        .get(ACCEPT_ANNOTATION)
        .is_some_and(|list| list.split(',').any(|c| c.trim() == DELETION_CHECK));
    lists_deletion && decision::bound(annotations, Some(before), None).is_ok()
}

/// The problem of an update that arms `crdDeletion` while objects exist:
/// accepted only as break-glass is (with a reason; logged with the user),
/// so arming the deletion is itself a recorded decision.
fn armed(crd: &Crd, objects: Objects, generation: Option<i64>) -> Problem {
    let then = match generation {
        Some(g) => format!(
            "; the deletion itself is accepted only while {ACCEPT_GENERATION_ANNOTATION} is \"{g}\", this CRD's metadata.generation"
        ),
        None => String::new(),
    };
    Problem {
        id: DELETION_CHECK,
        blocking: true,
        by_requirement: false,
        message: format!(
            "this update arms {ACCEPT_ANNOTATION}: {DELETION_CHECK} while {}, \
             and deleting the CRD deletes every one of them{then}",
            objects.exist(crd, ""),
        ),
    }
}

/// The problem of a change that adds [`SKIP_LABEL`]: the chart's
/// `objectSelector` example sends no later change of such a CRD to
/// `serve`, so anyone who may write CRDs could switch its checks off (the
/// deletion guard's too) by adding a label first.
fn skip_added() -> Problem {
    Problem {
        id: SKIP_CHECK,
        blocking: true,
        by_requirement: false,
        message: format!(
            "this change adds the label {SKIP_LABEL}, which keeps every later change of the CRD out of review \
             where the webhook's objectSelector leaves it out; only break-glass adds it \
             ({ACCEPT_ANNOTATION}: {SKIP_CHECK}, with a reason, by a requester webhook.breakGlassBy admits)"
        ),
    }
}

/// A check that could not finish: blocking when `failMode` is closed.
pub(super) fn unfinished(why: String, fail_mode: Unfinished) -> Problem {
    Problem {
        id: "unfinished",
        blocking: fail_mode == Unfinished::Closed,
        by_requirement: false,
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
        let plain = findings_of(Some(Arc::new(old())), Arc::new(new()), &Config::default());
        assert_eq!(removal(&plain), Some(Severity::Error));
        let lowered = Config::parse("checks:\n  existingFieldRemoval: warning\n", "c").unwrap();
        assert_eq!(
            removal(&findings_of(
                Some(Arc::new(old())),
                Arc::new(new()),
                &lowered
            )),
            Some(Severity::Warning)
        );
        let excepted = Config::parse(
            "exceptions:\n- crd: widgets.example.com\n  check: existingFieldRemoval\n  reason: unused\n",
            "c",
        )
        .unwrap();
        assert_eq!(
            removal(&findings_of(
                Some(Arc::new(old())),
                Arc::new(new()),
                &excepted
            )),
            None
        );
    }

    #[test]
    fn a_scan_finding_names_objects_and_the_rule_but_not_the_values() {
        let mut f = Finding::new(
            Check::InvalidObjects,
            Severity::Error,
            "1 of 3 objects fail enum at ^.spec.color under the new schema \
             (e.g. default/v7: spec.color: Unsupported value: \"hunter2\"); not ratcheted",
        )
        .in_version("v1")
        .at("^.spec.color")
        .with_objects(crate::compare::ObjectsDetail {
            rule: "enum".into(),
            count: 1,
            scanned: 3,
            ratcheted: Some(false),
            examples: vec!["default/v7".into()],
        });
        without_values(&mut f);
        assert_eq!(
            f.message,
            "1 of 3 objects (default/v7) fail enum at ^.spec.color under the new schema; \
             every write of these objects fails until they are fixed; \
             values not shown (webhook.reveal: values shows them)"
        );
        // Findings of the comparison carry no object values: untouched.
        let mut plain = Finding::new(Check::Enum, Severity::Error, "enum narrowed");
        without_values(&mut plain);
        assert_eq!(plain.message, "enum narrowed");
    }

    #[test]
    fn only_what_can_be_a_crds_name_is_looked_up() {
        assert!(is_crd_name("widgets.example.com"));
        assert!(is_crd_name("deployments.apps"));
        for bad in [
            "",
            "../../api/v1/namespaces/default/secrets/x",
            "widgets.example.com/status",
            "Widgets.example.com",
            "widgets..example.com",
            ".widgets",
            "widgets.example.com?watch=1",
        ] {
            assert!(!is_crd_name(bad), "{bad:?}");
        }
    }

    /// A CRD whose `spec.n` (an integer) carries `rules`.
    fn ruled(rules: &[String]) -> Crd {
        let rules: Vec<serde_json::Value> = rules.iter().map(|r| json!({"rule": r})).collect();
        widgets(json!({"n": {"type": "integer", "x-kubernetes-validations": rules}}))
    }

    /// A forged review can carry any rule; the API server's own check is
    /// not in its way. Rules as deep as the server accepts are judged on
    /// the stack `serve`'s blocking threads have ([`STACK_BYTES`], here in
    /// a debug build), and deeper ones are refused in the server's words,
    /// never parsed. Before, a chain of a few hundred `+` overflowed the
    /// stack, which aborts `serve` with every review in flight.
    ///
    /// [`STACK_BYTES`]: crate::parallel::STACK_BYTES
    #[test]
    fn rules_as_deep_as_the_server_accepts_are_judged_and_deeper_ones_refused() {
        let (accepted, refused) = crate::cel::depth::deepest_rules();
        let counts = (accepted.len(), refused.len());
        let judged = crate::parallel::thread()
            .spawn(move || {
                let old = Arc::new(ruled(&[]));
                let judge = |rules: &[String]| {
                    findings_of(
                        Some(Arc::clone(&old)),
                        Arc::new(ruled(rules)),
                        &Config::default(),
                    )
                };
                (judge(&accepted), judge(&refused))
            })
            .expect("a thread")
            .join();
        let Ok((fine, deep)) = judged else {
            panic!("the judgment panicked");
        };
        // Every rule added is reported, the deepest too.
        let added = |fs: &[Finding]| fs.iter().filter(|f| f.check == Check::XValidations).count();
        assert_eq!((added(&fine), added(&deep)), counts);
    }
}
