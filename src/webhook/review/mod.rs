//! The webhook's own checks of one CRD review ([`super::admission`]): find
//! what `apply-check` would find (the same engine, the old object's real
//! `status.storedVersions`, the rules of the server's version), count
//! objects on DELETE, scan them on UPDATE when configured. What it finds
//! joins the requirements' ([`super::requirement_set`]) for the one decision.
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

mod deletion;
mod scan;

use deletion::*;
use scan::*;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::OnceCell;

use super::admission::{Admission, Examined};
use super::budget::{Judging, judgment_cost};
use super::cache::{Key, VerdictCache};
use super::decision::{
    self, ACCEPT_ANNOTATION, ACCEPT_GENERATION_ANNOTATION, DELETION_CHECK, Found, Operation,
    Problem, SKIP_CHECK, SKIP_LABEL,
};
use super::error::{Kind, ReviewError};
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
                unfinished: Some(why.kind),
                found: Found {
                    problems: vec![unfinished(why, fail_mode)],
                    ..Found::default()
                },
                ..Examined::default()
            },
            Err(_) => Examined {
                unfinished: Some(Kind::Deadline),
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
    async fn examined(&self, review: &Admission<'_>) -> Result<Examined, ReviewError> {
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
                    Err(why) => {
                        examined.unfinished = Some(why.kind);
                        (Some(unfinished(why, settings.fail_mode)), None)
                    }
                };
                problems.extend(problem);
                examined.objects = count;
                Ok(examined)
            }
            (Operation::Delete, None, _) => Err(ReviewError::unreadable(
                "the DELETE request carries no oldObject",
            )),
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
                        Err(why) => {
                            examined.unfinished = Some(why.kind);
                            (Some(unfinished(why, settings.fail_mode)), None)
                        }
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
                            Err(e) if e.kind == Kind::Refused => return Err(e),
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
                        Err(why) => Err(why.clone().within("the stored objects were not scanned")),
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
                            examined.unfinished = Some(why.kind);
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
            (_, _, None) => Err(ReviewError::unreadable(format!(
                "the {} request carries no object",
                operation.as_str()
            ))),
        }
    }

    /// The CRD the API server stores under the request's name, provided
    /// each of `claims` (the request's objects) is that CRD: the same name
    /// and uid, the same group and plural. What the webhook lists with its
    /// own rights is then that CRD's resources, never what a body names.
    async fn stored_crd(
        &self,
        request: &Request<'_>,
        claims: &[&Outline<'_>],
    ) -> Result<Crd, ReviewError> {
        let name = &request.name;
        let refused = |why: String| {
            ReviewError::refused(format!("crd-safety read nothing for this request: {why}"))
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
                return Err(ReviewError::cluster(format!(
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
            .map_err(ReviewError::from)?;
        let stored = self
            .judging
            .run(reserved, move || {
                Crd::from_json(&json).map_err(|e| {
                    ReviewError::unreadable(format!("the stored CRD cannot be read: {e}"))
                })
            })
            .await?;
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
            let claimed = claim.claimed().map_err(|e| refused(e.to_string()))?;
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
    ) -> Result<Vec<Finding>, ReviewError> {
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
fn crd_outline<'o, 'a>(outline: &'o Outline<'a>) -> Result<&'o Outline<'a>, ReviewError> {
    match (outline.api_version, outline.kind) {
        (Some("apiextensions.k8s.io/v1"), Some("CustomResourceDefinition")) => Ok(outline),
        (version, kind) => Err(ReviewError::unreadable(format!(
            "crd-safety reviews apiextensions.k8s.io/v1 CustomResourceDefinitions only, not {} {}: check the webhook's rules",
            version.unwrap_or("(no apiVersion)"),
            kind.unwrap_or("(no kind)")
        ))),
    }
}

/// A check that could not finish: blocking when `failMode` is closed.
pub(super) fn unfinished(why: impl std::fmt::Display, fail_mode: Unfinished) -> Problem {
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
