//! Consumers' requirements, enforced in the cluster: the `CRDRequirement`
//! objects the chart's custom resource holds, read by `serve` at start and
//! again every `--reload-interval`, and applied to every CRD review besides
//! the webhook's own checks.
//!
//! A requirement is the consumer's word, not the cluster operator's, so its
//! `action` applies whatever `webhook.mode` says: the error findings of a
//! `Deny` requirement deny the change even in `warn` mode, a `Warn`
//! requirement's come back as warnings. Deleting a CRD that a requirement
//! pins is refused, naming the requirements. Both go through the same
//! [`decide`] as the webhook's own findings, so the break-glass annotations
//! accept them as they accept the rest (`crdDeletion` for the deletion).
//!
//! The set is re-listed rather than watched: a LIST of a handful of objects
//! every few seconds is cheap, and each relist has a deadline and re-parses
//! only the objects whose `resourceVersion` moved. A relist that fails keeps
//! the last set read; before the first one succeeds, a CRD review cannot
//! know its requirements and follows `failMode`.
//!
//! The webhook also validates `CRDRequirement` objects themselves
//! (`POST /requirements`): one that does not parse is refused with the
//! reason, so a consumer learns at `kubectl apply` time, not when the
//! requirement silently holds nothing.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Semaphore;

use hyper::body::Bytes;

use super::budget::{Budget, judgment_cost};
use super::cpu::cpu_for;
use super::decision::{
    self, DELETION_CHECK, Decision, Intent, Operation, Problem, Requester, Verdict,
};
use super::log::log;
use super::metrics::Metrics;
use super::request::{self, Request};
use super::review::{Reviewed, SharedConfig, review_deadline, slice_of};
use crate::cluster::{Connection, RetryPolicy};
use crate::compare::Finding;
use crate::config::{Unfinished, WebhookMode, WebhookSettings};
use crate::requirement::in_cluster::{self, Unreadable};
use crate::requirement::{self, Requirement};

/// One relist may take this long; the next tick tries again.
const RELIST_DEADLINE: Duration = Duration::from_secs(10);

/// Calls of the relist: a quick retry, then the next tick.
const RELIST_RETRIES: RetryPolicy = RetryPolicy {
    attempts: 2,
    backoff: Duration::from_millis(200),
    max_backoff: Duration::from_millis(200),
    max_wait: Duration::from_millis(500),
};

/// One object as last read: its `resourceVersion` and what it parsed to.
struct Parsed {
    resource_version: String,
    read: Result<Arc<Requirement>, Arc<Unreadable>>,
}

/// The requirements in force.
#[derive(Default)]
struct Loaded {
    /// Whether a LIST has answered yet.
    read: bool,
    /// By `metadata.name`.
    objects: HashMap<String, Parsed>,
}

/// Reads the cluster's requirements and applies them to reviews.
pub struct Requirements {
    conn: Connection,
    config: Arc<SharedConfig>,
    loaded: RwLock<Arc<Loaded>>,
    /// Judgments against requirements run one per core, as the reviewer's
    /// do: parsed CRDs are large and more at once only adds memory.
    judging: Arc<Semaphore>,
    /// The reviewer's memory budget: a requirement's judgment, and the
    /// read of a `CRDRequirement` under review, reserve their cost in it
    /// as the reviewer's judgments do.
    budget: Budget,
    /// The last relist failure logged, so a lasting one is logged once.
    last_failure: RwLock<Option<String>>,
}

impl Requirements {
    /// Nothing read yet.
    pub fn new(conn: Connection, config: Arc<SharedConfig>, budget: Budget) -> Requirements {
        Requirements {
            conn: conn.with_retry_policy(RELIST_RETRIES),
            config,
            loaded: RwLock::new(Arc::new(Loaded::default())),
            judging: Arc::new(Semaphore::new(crate::parallel::cores())),
            budget,
            last_failure: RwLock::new(None),
        }
    }

    fn current(&self) -> Arc<Loaded> {
        match self.loaded.read() {
            Ok(l) => Arc::clone(&l),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    fn set(&self, loaded: Loaded) {
        let mut slot = match self.loaded.write() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        *slot = Arc::new(loaded);
    }

    /// Lists the requirements again, within [`RELIST_DEADLINE`]; parses
    /// what changed, logs what is now in force when that changed, and keeps
    /// the last set on failure.
    pub async fn relist(&self, metrics: &Metrics) {
        let listed =
            tokio::time::timeout(RELIST_DEADLINE, self.conn.list_all(&in_cluster::resource()))
                .await;
        let items = match listed {
            Ok(Ok(Some(items))) => items,
            // The custom resource is not installed: no requirement exists.
            Ok(Ok(None)) => Vec::new(),
            Ok(Err(e)) => return self.failed(metrics, e.to_string()),
            Err(_) => {
                return self.failed(
                    metrics,
                    format!(
                        "the LIST did not finish within {}s",
                        RELIST_DEADLINE.as_secs()
                    ),
                );
            }
        };
        if let Ok(mut last) = self.last_failure.write() {
            *last = None;
        }
        let before = self.current();
        let removed = before.objects.keys().any(|name| {
            !items
                .iter()
                .any(|item| text(item, "/metadata/name") == name.as_str())
        });
        let mut objects = HashMap::new();
        let mut changed: Vec<Value> = Vec::new();
        for item in items {
            let name = text(&item, "/metadata/name").to_string();
            let resource_version = text(&item, "/metadata/resourceVersion").to_string();
            if let Some(old) = before.objects.get(&name)
                && old.resource_version == resource_version
            {
                let kept = match &old.read {
                    Ok(r) => Ok(Arc::clone(r)),
                    Err(u) => Err(Arc::clone(u)),
                };
                objects.insert(
                    name,
                    Parsed {
                        resource_version,
                        read: kept,
                    },
                );
                continue;
            }
            changed.push(item);
        }
        let anything = !changed.is_empty() || removed || !before.read;
        // Parsing a pinned CRD is CPU work: off the async threads.
        let parsed = match Arc::clone(&self.judging).acquire_owned().await {
            Ok(permit) => tokio::task::spawn_blocking(move || {
                let _held = permit;
                changed
                    .into_iter()
                    .map(|item| {
                        let name = text(&item, "/metadata/name").to_string();
                        let resource_version = text(&item, "/metadata/resourceVersion").to_string();
                        let crd = in_cluster::pinned_name(&item);
                        let read = match in_cluster::from_object(item) {
                            Ok(r) => Ok(Arc::new(r)),
                            Err(error) => Err(Arc::new(Unreadable {
                                name: name.clone(),
                                crd,
                                error,
                            })),
                        };
                        (
                            name,
                            Parsed {
                                resource_version,
                                read,
                            },
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .await
            .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        // A parse that did not finish (a panic inside crd-safety) must not
        // drop requirements silently: the previous set stays.
        let parsed = match parsed {
            Ok(p) => p,
            Err(why) => {
                return self.failed(
                    metrics,
                    format!("the requirements could not be parsed: {why}"),
                );
            }
        };
        for (name, p) in parsed {
            if let Err(u) = &p.read {
                log(
                    "requirement unreadable",
                    json!({"requirement": name, "crd": u.crd, "error": u.error.to_string()}),
                );
            }
            objects.insert(name, p);
        }
        let loaded = Loaded {
            read: true,
            objects,
        };
        if anything {
            // Counted as the other reloads are: when something changed.
            metrics.reload("requirements", "ok");
            let mut names: Vec<&str> = loaded
                .objects
                .iter()
                .filter(|(_, p)| p.read.is_ok())
                .map(|(n, _)| n.as_str())
                .collect();
            names.sort_unstable();
            let mut unreadable: Vec<&str> = loaded
                .objects
                .iter()
                .filter(|(_, p)| p.read.is_err())
                .map(|(n, _)| n.as_str())
                .collect();
            unreadable.sort_unstable();
            log(
                "requirements read",
                json!({"requirements": names, "unreadable": unreadable}),
            );
        }
        self.set(loaded);
    }

    fn failed(&self, metrics: &Metrics, why: String) {
        metrics.reload("requirements", "error");
        let mut last = match self.last_failure.write() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        if last.as_deref() != Some(why.as_str()) {
            log(
                "requirements not read, the previous ones stay",
                json!({"error": why}),
            );
            *last = Some(why);
        }
    }

    /// Adds to a CRD review what the requirements pinning its CRD say,
    /// within what is left of the review's deadline (`started` is when the
    /// request arrived, `caller_timeout` the API server's own timeout).
    pub async fn amend(
        &self,
        body: &[u8],
        request: &Request<'_>,
        mut reviewed: Reviewed,
        caller_timeout: Option<Duration>,
        started: Instant,
    ) -> Reviewed {
        let (_, config) = self.config.get();
        let settings = &config.webhook;
        let deadline = review_deadline(settings.review_deadline, caller_timeout);
        let loaded = self.current();
        let operation = request.operation();
        let mut problems = Vec::new();
        let mut findings = Vec::new();
        let pinning: Vec<Arc<Requirement>> = loaded
            .objects
            .values()
            .filter_map(|p| p.read.as_ref().ok())
            .filter(|r| r.crd.name == request.name)
            .cloned()
            .collect();
        if !loaded.read {
            problems.push(unfinished(
                "the cluster's CRDRequirements have not been read yet, so none was checked".into(),
                settings.fail_mode,
            ));
        }
        let mut notes: Vec<String> = loaded
            .objects
            .values()
            .filter_map(|p| p.read.as_ref().err())
            .filter(|u| u.crd.as_deref() == Some(request.name.as_str()))
            .map(|u| {
                // The error names the object too: said once here.
                let why = match &u.error {
                    requirement::RequirementError::Invalid { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                format!(
                    "CRDRequirement {} is not enforced, it cannot be read: {why}",
                    u.name
                )
            })
            .collect();
        notes.sort();
        let (new, old) = (request.object.as_ref(), request.old_object.as_ref());
        let mut intent_annotations = Default::default();
        let mut before = None;
        let mut generation = None;
        match operation {
            Operation::Delete => {
                if let Some(old) = &old {
                    intent_annotations = old.annotations().clone();
                    generation = old.generation();
                }
                if !pinning.is_empty() {
                    problems.push(pinned_by(&request.name, &pinning));
                }
            }
            Operation::Create | Operation::Update => {
                let Some(new) = new else { return reviewed };
                intent_annotations = new.annotations().clone();
                generation = new.generation();
                before = Some(old.map(|o| o.annotations().clone()).unwrap_or_default());
                // A change of metadata only cannot break a consumer.
                let unchanged =
                    old.is_some_and(|o| o.spec.map(|s| s.get()) == new.spec.map(|s| s.get()));
                if !pinning.is_empty() && !unchanged {
                    let left = deadline.saturating_sub(started.elapsed());
                    match self.judge(body, &request.name, pinning, left).await {
                        Ok(found) => findings = found,
                        Err(why) => problems.push(unfinished(why, settings.fail_mode)),
                    }
                }
            }
        }
        if findings.is_empty() && problems.is_empty() && notes.is_empty() {
            return reviewed;
        }
        // The consumer's action decides, not the webhook's mode.
        let as_consumers = WebhookSettings {
            mode: WebhookMode::Enforce,
            ..settings.clone()
        };
        let mut decided = decision::decide(
            &request.name,
            operation,
            &findings,
            problems,
            Intent {
                annotations: &intent_annotations,
                before: before.as_ref(),
                generation,
                requester: Requester {
                    user: &request.user_info.username,
                    groups: &request.user_info.groups,
                },
            },
            &as_consumers,
        );
        for note in notes {
            if !decided.warnings.contains(&note) {
                decided.warnings.push(note);
            }
        }
        merge(&mut reviewed.decision, decided);
        reviewed
    }

    /// The findings of the new CRD against each requirement pinning it.
    async fn judge(
        &self,
        body: &[u8],
        name: &str,
        pinning: Vec<Arc<Requirement>>,
        deadline: Duration,
    ) -> Result<Vec<Finding>, String> {
        let raw = cpu_for(body.len(), || request::raw_objects(body))?
            .object
            .map(|r| r.get().to_owned())
            .ok_or("the request carries no object")?;
        let work = self.blocking(judgment_cost(raw.len()), move || {
            let new = request::read_crd(Some(raw.as_bytes()), None)?;
            Ok(pinning
                .iter()
                .flat_map(|r| requirement::judge(r, Some(&new)))
                .collect())
        });
        tokio::time::timeout(deadline, work).await.map_err(|_| {
            format!(
                "the requirements on {} were not checked within the review's deadline ({}s)",
                name,
                deadline.as_secs_f64()
            )
        })?
    }

    /// Runs `work` on the blocking pool once `cost` is reserved in the
    /// budget and a judging permit is had, both held by the work itself.
    async fn blocking<T: Send + 'static>(
        &self,
        cost: u64,
        work: impl FnOnce() -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let reserved = self
            .budget
            .reserve(cost)
            .await
            .map_err(|e| format!("crd-safety did not check this request: {e}"))?;
        let permit = Arc::clone(&self.judging)
            .acquire_owned()
            .await
            .map_err(|e| format!("the check stopped inside crd-safety: {e}"))?;
        tokio::task::spawn_blocking(move || {
            let _held = (permit, reserved);
            work()
        })
        .await
        .map_err(|e| format!("the check stopped inside crd-safety: {e}"))?
    }

    /// Reviews a `CRDRequirement` being created or updated: refused, with
    /// the reason, when it does not parse. Deleting one is always allowed.
    /// The object is read off the async threads under the memory budget
    /// and within the review's deadline: a JSON tree takes many times its
    /// text (a 7 MiB body peaked at 314 MiB read in place).
    pub async fn review_requirement(
        &self,
        body: &Bytes,
        request: &Request<'_>,
        caller_timeout: Option<Duration>,
        started: Instant,
    ) -> Reviewed {
        let (_, config) = self.config.get();
        let operation = request.operation();
        let deadline = review_deadline(config.webhook.review_deadline, caller_timeout)
            .saturating_sub(started.elapsed());
        let refusal = match operation {
            Operation::Delete => None,
            _ => {
                let read = self.read_requirement(body);
                match tokio::time::timeout(deadline, read).await {
                    Ok(refusal) => refusal,
                    Err(_) => Some(format!(
                        "it was not read within the review's deadline ({}s)",
                        deadline.as_secs_f64()
                    )),
                }
            }
        };
        let decision = Decision {
            verdict: if refusal.is_some() {
                Verdict::Deny
            } else {
                Verdict::Allow
            },
            message: refusal
                .map(|why| format!("crd-safety: this CRDRequirement cannot be read: {why}")),
            warnings: Vec::new(),
            findings: Vec::new(),
            problems: Vec::new(),
            accepted: Vec::new(),
            break_glass: None,
        };
        Reviewed {
            uid: request.uid.clone(),
            operation,
            crd: format!("CRDRequirement {}", request.name),
            user: request.user_info.username.clone(),
            identity: super::review::CLAIMED,
            groups: request.user_info.groups.kept.clone(),
            groups_left_out: super::review::left_out(request),
            dry_run: request.dry_run,
            mode: config.webhook.mode.as_str(),
            objects: None,
            scan: None,
            decision,
            duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        }
    }
}

impl Requirements {
    /// Why the `CRDRequirement` of a CREATE or UPDATE cannot be read, if
    /// it cannot.
    async fn read_requirement(&self, body: &Bytes) -> Option<String> {
        let object = match cpu_for(body.len(), || request::raw_objects(body)) {
            Err(why) => return Some(why),
            Ok(raw) => raw.object.map(|r| slice_of(body, r)),
        };
        let Some(object) = object else {
            return Some("the request carries no object".to_string());
        };
        let read = self.blocking(judgment_cost(object.len()), move || {
            Ok(match serde_json::from_slice::<Value>(&object) {
                Err(e) => Some(format!("unreadable object: {e}")),
                Ok(value) => in_cluster::from_object(value).err().map(|e| e.to_string()),
            })
        });
        read.await.unwrap_or_else(Some)
    }
}

fn text<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The problem of deleting a CRD that requirements pin.
fn pinned_by(crd: &str, pinning: &[Arc<Requirement>]) -> Problem {
    let mut named: Vec<String> = pinning
        .iter()
        .map(|r| match &r.owner {
            Some(owner) => format!("`{}` (owner: {owner})", r.name),
            None => format!("`{}`", r.name),
        })
        .collect();
    named.sort();
    let mut names: Vec<&str> = pinning.iter().map(|r| r.name.as_str()).collect();
    names.sort_unstable();
    Problem {
        id: DELETION_CHECK,
        blocking: true,
        message: format!(
            "{crd} is pinned by {} {}: the consumers' objects and the controllers that read them stop \
             working once it is deleted; agree its removal with them and delete the requirements first \
             (kubectl delete crdrequirements {})",
            if named.len() == 1 {
                "the requirement"
            } else {
                "the requirements"
            },
            named.join(", "),
            names.join(" "),
        ),
    }
}

/// A check that could not finish, as the review says it.
fn unfinished(why: String, fail_mode: Unfinished) -> Problem {
    super::review::unfinished(why, fail_mode)
}

/// Folds the requirements' decision into the review's: denied when either
/// denies, the messages and warnings of both, every finding and problem.
fn merge(base: &mut Decision, extra: Decision) {
    let denied = base.verdict == Verdict::Deny || extra.verdict == Verdict::Deny;
    base.message = match (base.message.take(), extra.message) {
        (Some(a), Some(b)) => Some(format!("{a}\n{b}")),
        (a, b) => a.or(b),
    };
    for w in extra.warnings {
        if !base.warnings.contains(&w) {
            base.warnings.push(w);
        }
    }
    base.findings.extend(extra.findings);
    base.problems.extend(extra.problems);
    for a in extra.accepted {
        if !base.accepted.contains(&a) {
            base.accepted.push(a);
        }
    }
    if base.break_glass.is_none() {
        base.break_glass = extra.break_glass;
    }
    base.verdict = if denied {
        Verdict::Deny
    } else if !base.warnings.is_empty() {
        Verdict::Warn
    } else if base.verdict == Verdict::Audit || extra.verdict == Verdict::Audit {
        Verdict::Audit
    } else {
        Verdict::Allow
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(verdict: Verdict, message: Option<&str>, warnings: &[&str]) -> Decision {
        Decision {
            verdict,
            message: message.map(str::to_string),
            warnings: warnings.iter().map(|w| w.to_string()).collect(),
            findings: Vec::new(),
            problems: Vec::new(),
            accepted: Vec::new(),
            break_glass: None,
        }
    }

    #[test]
    fn a_requirements_denial_wins_over_the_webhooks_warnings() {
        let mut base = decision(Verdict::Warn, None, &["own finding"]);
        merge(
            &mut base,
            decision(Verdict::Deny, Some("breaks `team-b/uses-route`"), &[]),
        );
        assert_eq!(base.verdict, Verdict::Deny);
        assert_eq!(base.message.as_deref(), Some("breaks `team-b/uses-route`"));
        assert_eq!(base.warnings, ["own finding"]);
    }

    #[test]
    fn warnings_of_a_requirement_reach_the_requester_even_in_audit_mode() {
        let mut base = decision(Verdict::Audit, None, &[]);
        merge(&mut base, decision(Verdict::Warn, None, &["breaks `x`"]));
        assert_eq!(base.verdict, Verdict::Warn);
        assert_eq!(base.warnings, ["breaks `x`"]);
    }

    #[test]
    fn two_denials_say_both_and_a_note_is_said_once() {
        let mut base = decision(Verdict::Deny, Some("own"), &["note"]);
        merge(
            &mut base,
            decision(Verdict::Deny, Some("theirs"), &["note"]),
        );
        assert_eq!(base.message.as_deref(), Some("own\ntheirs"));
        assert_eq!(base.warnings, ["note"]);
    }
}
