//! Consumers' requirements, enforced in the cluster: the `CRDRequirement`
//! objects the chart's custom resource holds, read by `serve` at start and
//! again every `--reload-interval`, and applied to every CRD review besides
//! the webhook's own checks.
//!
//! A requirement is the consumer's word, not the cluster operator's, so its
//! `action` applies whatever `webhook.mode` says: the error findings of a
//! `Deny` requirement deny the change even in `warn` mode, a `Warn`
//! requirement's come back as warnings. Deleting a CRD that a requirement
//! pins is refused, naming the requirements. Their findings name the
//! requirement (as in the CLI's reports) and join the webhook's own in the
//! review's one decision ([`super::decision::decide`]), so the break-glass
//! annotations accept them as they accept the rest (`crdDeletion` for the
//! deletion). The new CRD they are judged against is the one the review
//! read already ([`super::admission`]).
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
use std::time::Duration;

use serde_json::{Value, json};

use super::admission::{Admission, Reviewed};
use super::budget::{Judging, judgment_cost};
use super::decision::{DELETION_CHECK, Decision, Found, Operation, Problem};
use super::error::{Kind, ReviewError};
use super::log::log;
use super::metrics::Metrics;
use crate::cluster::{Connection, RetryPolicy};
use crate::compare::Finding;
use crate::config::Unfinished;
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
    loaded: RwLock<Arc<Loaded>>,
    /// The reviewer's budget and cores: a requirement's judgment, the read
    /// of a `CRDRequirement` under review and the parse of a relist run in
    /// them as the reviewer's work does.
    judging: Judging,
    /// The last relist failure logged, so a lasting one is logged once.
    last_failure: RwLock<Option<String>>,
}

impl Requirements {
    /// Nothing read yet.
    pub fn new(conn: Connection, judging: Judging) -> Requirements {
        Requirements {
            conn: conn.with_retry_policy(RELIST_RETRIES),
            loaded: RwLock::new(Arc::new(Loaded::default())),
            judging,
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
        let parsed = self
            .judging
            .run((), move || {
                Ok(changed
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
                    .collect::<Vec<_>>())
            })
            .await;
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

    /// What the requirements pinning a CRD review's CRD say of it, within
    /// the review's deadline: findings naming their requirement, problems
    /// the consumers' (decided as `enforce`), notices of requirements that
    /// cannot be read, all for the review's one decision.
    pub async fn examine(&self, review: &Admission<'_>) -> Found {
        let request = &review.request;
        let fail_mode = review.config.webhook.fail_mode;
        let loaded = self.current();
        let mut found = Found::default();
        let pinning: Vec<Arc<Requirement>> = loaded
            .objects
            .values()
            .filter_map(|p| p.read.as_ref().ok())
            .filter(|r| r.crd.name == request.name)
            .cloned()
            .collect();
        if !loaded.read {
            found.problems.push(unfinished(
                "the cluster's CRDRequirements have not been read yet, so none was checked",
                fail_mode,
            ));
        }
        found.notices = loaded
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
        found.notices.sort();
        if pinning.is_empty() {
            return found;
        }
        let (new, old) = (request.object.as_ref(), request.old_object.as_ref());
        match review.operation() {
            Operation::Delete => found.problems.push(pinned_by(&request.name, &pinning)),
            Operation::Create | Operation::Update => {
                // A change of metadata only cannot break a consumer.
                let unchanged = old.is_some_and(|o| {
                    new.is_some_and(|n| o.spec.map(|s| s.get()) == n.spec.map(|s| s.get()))
                });
                if new.is_some() && !unchanged {
                    let deadline = review.deadline;
                    let judged =
                        tokio::time::timeout_at(deadline.at.into(), self.judge(review, pinning))
                            .await
                            .unwrap_or_else(|_| {
                                Err(ReviewError::new(
                                    Kind::Deadline,
                                    format!(
                                        "the requirements on {} were not checked within the review's deadline ({})",
                                        request.name,
                                        deadline.seconds()
                                    ),
                                ))
                            });
                    match judged {
                        Ok(findings) => found.findings = findings,
                        Err(why) => found.problems.push(unfinished(why, fail_mode)),
                    }
                }
            }
        }
        found
    }

    /// The findings of the review's new CRD against each requirement
    /// pinning it, in the room the CRD was read with.
    async fn judge(
        &self,
        review: &Admission<'_>,
        pinning: Vec<Arc<Requirement>>,
    ) -> Result<Vec<Finding>, ReviewError> {
        let new = review.new_crd(&self.judging).await?;
        let crd = Arc::clone(&new.crd);
        self.judging
            .run(new.reserved, move || {
                Ok(pinning
                    .iter()
                    .flat_map(|r| requirement::judge(r, Some(&crd)))
                    .collect())
            })
            .await
    }

    /// Reviews a `CRDRequirement` being created or updated: refused, with
    /// the reason, when it does not parse. Deleting one is always allowed.
    /// The object is read off the async threads under the memory budget
    /// and within the review's deadline: a JSON tree takes many times its
    /// text (figures: docs/BENCHMARKS.md, "After the hostile-input bounds
    /// (2026-12-02)").
    pub async fn review_requirement(&self, review: &Admission<'_>) -> Reviewed {
        let refusal = match review.operation() {
            Operation::Delete => None,
            _ => {
                let read = self.read_requirement(review);
                match tokio::time::timeout_at(review.deadline.at.into(), read).await {
                    Ok(refusal) => refusal,
                    Err(_) => Some(format!(
                        "it was not read within the review's deadline ({})",
                        review.deadline.seconds()
                    )),
                }
            }
        };
        let decision = match refusal {
            Some(why) => Decision::refused(format!(
                "crd-safety: this CRDRequirement cannot be read: {why}"
            )),
            None => Decision::allow(),
        };
        review.reviewed(format!("CRDRequirement {}", review.request.name), decision)
    }

    /// Why the `CRDRequirement` of a CREATE or UPDATE cannot be read, if
    /// it cannot.
    async fn read_requirement(&self, review: &Admission<'_>) -> Option<String> {
        let object = match review.object_json() {
            Ok(object) => object,
            Err(why) => return Some(why.to_string()),
        };
        let reserved = match self.judging.reserve(judgment_cost(object.len())).await {
            Ok(r) => r,
            Err(e) => return Some(format!("crd-safety did not check this request: {e}")),
        };
        let read = self.judging.run(reserved, move || {
            Ok(match serde_json::from_slice::<Value>(&object) {
                Err(e) => Some(format!("unreadable object: {e}")),
                Ok(value) => in_cluster::from_object(value).err().map(|e| e.to_string()),
            })
        });
        read.await.unwrap_or_else(|e| Some(e.to_string()))
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
        by_requirement: true,
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

/// A check of the requirements that could not finish: the consumers'
/// problem, blocking when `failMode` is closed, in every mode.
fn unfinished(why: impl std::fmt::Display, fail_mode: Unfinished) -> Problem {
    Problem {
        by_requirement: true,
        ..super::review::unfinished(why, fail_mode)
    }
}
