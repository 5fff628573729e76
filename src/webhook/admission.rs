//! One admission review as `serve` holds it from its arrival to its
//! answer, the shape of kube-rs's `AdmissionRequest` answered by
//! `AdmissionResponse::from(&req)`: the body, read once into reserved
//! memory, and the request parsed from it once ([`super::request`]); the
//! configuration in force when it arrived and the deadline computed from it,
//! once; the request's CRDs, read from their place in the body when
//! something first needs them (the judgment, the object scan, the
//! requirements) and then shared by all of them, under one reservation of
//! the memory budget; and one decision over everything they found.
//!
//! Before, the review was four readers and two decisions: the reviewer,
//! the object scan and the requirements each read the new CRD out of the
//! body again (and reserved room for it again), the requirements decided
//! their own findings and merged that decision into the reviewer's, each
//! part computed the deadline anew, and three places built the log line.

use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

use hyper::body::Bytes;
use serde::Serialize;

use super::budget::{Judging, Reserved, judgment_cost};
use super::decision::{self, Decision, Found, Intent, NO_ANNOTATIONS, Operation, Requester};
use super::error::{Kind, ReviewError};
use super::request::{self, Outline, Request};
use super::stored_models::StoredModels;
use crate::config::Config;
use crate::crd::Crd;

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

/// Of the API server's own timeout for a review (the `timeout` query
/// parameter it sends), the share the review may use: the rest is for the
/// answer to travel back.
const SHARE_OF_CALLER_TIMEOUT: f64 = 0.8;

/// When a review must be answered: its length (the configured one, or
/// less when the API server's own timeout leaves less), counted from its
/// arrival, so the time its body took counts.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    /// The instant.
    pub at: Instant,
    /// Its distance from the arrival, as the answers name it.
    pub length: Duration,
}

impl Deadline {
    /// The deadline of a review that arrived at `started`, under
    /// `configured` (`webhook.reviewDeadline`) and the API server's
    /// `caller_timeout`, when it sent one.
    pub fn new(
        started: Instant,
        configured: Duration,
        caller_timeout: Option<Duration>,
    ) -> Deadline {
        let length = match caller_timeout {
            Some(t) if !t.is_zero() => configured.min(t.mul_f64(SHARE_OF_CALLER_TIMEOUT)),
            _ => configured,
        };
        Deadline {
            at: started + length,
            length,
        }
    }

    /// What is left of it.
    pub fn left(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// `8s`, as the answers name it.
    pub fn seconds(&self) -> String {
        format!("{}s", self.length.as_secs_f64())
    }
}

/// What is known of a review before its body is read.
pub struct Arrival {
    /// When it arrived.
    pub started: Instant,
    /// When it must be answered.
    pub deadline: Deadline,
    /// The configuration in force when it arrived, and its generation.
    pub config: Arc<Config>,
    pub generation: u64,
    /// What its `userInfo` is worth ([`CLAIMED`], [`AUTHENTICATED`]).
    pub identity: &'static str,
}

/// A request's CRD, read, with the room reserved for reading it and for
/// the work on it (a judgment, the requirements'), held as long as the
/// model is.
#[derive(Clone)]
pub struct Read {
    /// The model.
    pub crd: Arc<Crd>,
    /// Its room in the budget: blocking work on the model holds a clone.
    pub reserved: Arc<Reserved>,
}

/// Both CRDs of a pair, as a judgment reads them.
pub struct Pair {
    /// The new CRD.
    pub new: Read,
    /// The stored one, on UPDATE.
    pub old: Option<Arc<Crd>>,
    /// Room reserved for the stored one when the new one had been read
    /// alone first (its own room covers only itself).
    pub also: Option<Arc<Reserved>>,
}

/// One admission review: the request, borrowed from its body, and
/// everything worked out for it once.
pub struct Admission<'b> {
    body: &'b Bytes,
    /// The request, parsed once.
    pub request: Request<'b>,
    /// When it arrived.
    pub started: Instant,
    /// When it must be answered.
    pub deadline: Deadline,
    /// The configuration it is reviewed under.
    pub config: Arc<Config>,
    /// That configuration's generation (the verdict cache keys on it).
    pub generation: u64,
    /// What its `userInfo` is worth.
    pub identity: &'static str,
    /// The new CRD, once read (a parse that failed stays failed).
    new: OnceLock<Result<Read, ReviewError>>,
}

impl<'b> Admission<'b> {
    /// The review of `request`, parsed from `body`.
    pub fn new(body: &'b Bytes, request: Request<'b>, arrival: Arrival) -> Admission<'b> {
        let Arrival {
            started,
            deadline,
            config,
            generation,
            identity,
        } = arrival;
        Admission {
            body,
            request,
            started,
            deadline,
            config,
            generation,
            identity,
            new: OnceLock::new(),
        }
    }

    /// The operation.
    pub fn operation(&self) -> Operation {
        self.request.operation()
    }

    /// `outline`'s whole object, as it lies in the body.
    fn raw(&self, outline: Option<&Outline<'_>>) -> Result<Bytes, ReviewError> {
        outline
            .ok_or_else(|| ReviewError::unreadable("the request carries no object"))?
            .raw_in(self.body)
            .ok_or_else(|| {
                ReviewError::unreadable("the request's object was not found in its body")
            })
    }

    /// The new object's JSON as sent (a `CRDRequirement` under review).
    pub fn object_json(&self) -> Result<Bytes, ReviewError> {
        self.raw(self.request.object.as_ref())
    }

    /// The new CRD, read on first use, off the async threads, under room
    /// for reading it and for judging it; every later use shares it.
    pub async fn new_crd(&self, judging: &Judging) -> Result<Read, ReviewError> {
        if let Some(read) = self.new.get() {
            return read.clone();
        }
        let outline = self.request.object.as_ref();
        let raw = self.raw(outline)?;
        let len = outline.map_or(0, |o| o.json_len());
        // Room that could not be had is not kept as the answer: a later
        // use may need less.
        let reserved = judging
            .reserve(judgment_cost(raw.len()))
            .await
            .map_err(ReviewError::from)?;
        let read = judging
            .run(Arc::clone(&reserved), move || {
                Ok(request::read_crd(&raw, len))
            })
            .await?
            .map(|crd| Read {
                crd: Arc::new(crd),
                reserved,
            });
        let _ = self.new.set(read.clone());
        read
    }

    /// Both CRDs, read and handed to `work` (the judgment) in one run on a
    /// core, under one reservation for both (so a pair the whole budget
    /// cannot hold is refused at once, not half read); the stored one
    /// through `stored`, the models kept. One wait for a core, not one to
    /// read and another to judge: with many reviews at once, a second wait
    /// held every read model's room through the whole queue.
    pub async fn pair_judged<T: Send + 'static>(
        &self,
        judging: &Judging,
        stored: &Arc<StoredModels>,
        work: impl FnOnce(Arc<Crd>, Option<Arc<Crd>>) -> Result<T, ReviewError> + Send + 'static,
    ) -> Result<(Pair, T), ReviewError> {
        let old_outline = self.request.old_object.as_ref();
        let old_raw = old_outline.map(|o| self.raw(Some(o))).transpose()?;
        let old_len = old_outline.map_or(0, |o| o.json_len());
        let read_old = {
            let stored = Arc::clone(stored);
            move |raw: Bytes| stored.get_or_read(&raw, |r| request::read_crd(r, old_len))
        };
        if let Some(new) = self.new.get() {
            let new = new.clone()?;
            let also = match &old_raw {
                Some(raw) => Some(
                    judging
                        .reserve(judgment_cost(raw.len()))
                        .await
                        .map_err(ReviewError::from)?,
                ),
                None => None,
            };
            let crd = Arc::clone(&new.crd);
            let held = (Arc::clone(&new.reserved), also.clone());
            let (old, out) = judging
                .run(held, move || {
                    let old = old_raw.map(read_old).transpose()?;
                    let out = work(crd, old.clone())?;
                    Ok((old, out))
                })
                .await?;
            return Ok((Pair { new, old, also }, out));
        }
        let new_outline = self.request.object.as_ref();
        let new_raw = self.raw(new_outline)?;
        let new_len = new_outline.map_or(0, |o| o.json_len());
        let size = new_raw.len() + old_raw.as_ref().map_or(0, Bytes::len);
        let reserved = judging
            .reserve(judgment_cost(size))
            .await
            .map_err(ReviewError::from)?;
        let (new, rest) = judging
            .run(Arc::clone(&reserved), move || {
                let new = request::read_crd(&new_raw, new_len).map(Arc::new);
                let rest = match &new {
                    Ok(crd) => old_raw.map(read_old).transpose().and_then(|old| {
                        let out = work(Arc::clone(crd), old.clone())?;
                        Ok((old, out))
                    }),
                    Err(e) => Err(e.clone()),
                };
                Ok((new, rest))
            })
            .await?;
        let new = new.map(|crd| Read { crd, reserved });
        let _ = self.new.set(new.clone());
        let (old, out) = rest?;
        Ok((
            Pair {
                new: new?,
                old,
                also: None,
            },
            out,
        ))
    }

    /// The break-glass annotations of this request and what binds them to
    /// it: those of the object carrying the author's intent (the new CRD,
    /// or the one deleted), and of the stored one before.
    pub fn intent(&self) -> Intent<'_> {
        let (new, old) = (
            self.request.object.as_ref(),
            self.request.old_object.as_ref(),
        );
        let requester = Requester {
            user: &self.request.user_info.username,
            groups: &self.request.user_info.groups,
        };
        match (self.operation(), new, old) {
            (Operation::Delete, _, Some(old)) => Intent {
                annotations: old.annotations(),
                before: None,
                generation: old.generation(),
                requester,
            },
            (Operation::Create | Operation::Update, Some(new), old) => Intent {
                annotations: new.annotations(),
                before: Some(old.map_or(&NO_ANNOTATIONS, |o| o.annotations())),
                generation: new.generation(),
                requester,
            },
            _ => Intent {
                requester,
                ..Intent::none()
            },
        }
    }

    /// The answer to a CRD review: one decision over what the review and
    /// the requirements found.
    pub fn answer(&self, examined: Examined) -> Reviewed {
        let decision = decision::decide(
            &self.request.name,
            self.operation(),
            examined.found,
            self.intent(),
            &self.config.webhook,
        );
        Reviewed {
            objects: examined.objects,
            scan: examined.scan,
            unfinished: examined.unfinished.map(Kind::label),
            ..self.reviewed(self.request.name.clone(), decision)
        }
    }

    /// The answer to a request the API server cannot have sent
    /// ([`Request::inconsistency`]): denied in every mode and whatever
    /// `failMode` says, since no genuine change is ever refused by it, and
    /// never judged, so nothing of it reaches the verdict cache.
    pub fn refused(&self, why: &str) -> Reviewed {
        self.reviewed(
            self.request.name.clone(),
            Decision::refused(format!("crd-safety refused this review: {why}")),
        )
    }

    /// The log line of this review, deciding `decision` about `what`.
    pub fn reviewed(&self, what: String, decision: Decision) -> Reviewed {
        let request = &self.request;
        Reviewed {
            uid: request.uid.clone(),
            operation: self.operation(),
            crd: what,
            user: request.user_info.username.clone(),
            identity: self.identity,
            dry_run: request.dry_run,
            groups: request.user_info.groups.kept.clone(),
            groups_left_out: Some(request.user_info.groups.dropped).filter(|n| *n > 0),
            mode: self.config.webhook.mode.as_str(),
            objects: None,
            scan: None,
            unfinished: None,
            decision,
            duration_ms: self.started.elapsed().as_secs_f64() * 1000.0,
        }
    }
}

/// What the reviewer found of a CRD review, before the decision.
#[derive(Default)]
pub struct Examined {
    /// The findings and problems, the requirements' added to them.
    pub found: Found,
    /// Objects counted (DELETE) or scanned.
    pub objects: Option<u64>,
    /// How the object scan ended.
    pub scan: Option<&'static str>,
    /// What kept a check of it from finishing, if anything did.
    pub unfinished: Option<Kind>,
}

/// What a review's `userInfo` is worth without client authentication.
pub const CLAIMED: &str = "claimed";
/// ... and with it: only the API server can post reviews.
pub const AUTHENTICATED: &str = "authenticated";

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
    /// Who asked, as the request says.
    pub user: String,
    /// Whether that is a claim (`claimed`: anyone who reaches the Service
    /// can post a review naming any user) or the API server's word
    /// (`authenticated`: with `--client-ca-file` only it can post).
    pub identity: &'static str,
    /// Whether it was a dry run (nothing is stored either way).
    pub dry_run: bool,
    /// The requester's groups (`webhook.breakGlassBy` may list some), as
    /// claimed: the first [`super::request::GROUPS_MAX`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Groups the request listed beyond those kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups_left_out: Option<usize>,
    /// The mode in force.
    pub mode: &'static str,
    /// Objects counted (DELETE) or scanned (UPDATE with `scanObjects`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<u64>,
    /// How the object scan ended, when one was asked for: `completed` or
    /// `unfinished`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<&'static str>,
    /// What kept a check of the review from finishing (`cluster`,
    /// `tooLarge`, `deadline`, ...: [`Kind::label`](super::error::Kind::label)), if anything did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unfinished: Option<&'static str>,
    /// The decision.
    #[serde(flatten)]
    pub decision: Decision,
    /// How long the review took, in milliseconds.
    pub duration_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_review_deadline_leaves_room_within_the_api_servers_timeout() {
        let now = Instant::now();
        let length = |caller| Deadline::new(now, Duration::from_secs(8), caller).length;
        let eight = Duration::from_secs(8);
        assert_eq!(length(None), eight);
        assert_eq!(length(Some(Duration::from_secs(10))), eight);
        assert_eq!(length(Some(Duration::from_secs(5))), Duration::from_secs(4));
        assert_eq!(length(Some(Duration::ZERO)), eight);
        let d = Deadline::new(now, eight, None);
        assert_eq!(d.at, now + eight);
        assert_eq!(d.seconds(), "8s");
    }

    fn widgets(uid: &str, props: serde_json::Value) -> serde_json::Value {
        serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "uid": uid},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": props}}}]},
            "status": {"storedVersions": ["v1"]}
        })
    }

    /// The judgment, the scan and the requirements share one read of the
    /// new CRD: the same model, whoever asks first, under one reservation
    /// of the budget that lasts as long as the review holds the model.
    /// Before, each read the CRD out of the body again and reserved room
    /// for it again.
    #[tokio::test]
    async fn a_reviews_crds_are_read_once_and_shared_under_one_reservation() {
        let old = widgets("1", serde_json::json!({"a": {"type": "string"}}));
        let new = widgets("1", serde_json::json!({}));
        let body = Bytes::from(
            serde_json::json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u", "name": "widgets.example.com", "operation": "UPDATE",
                            "object": new, "oldObject": old}
            })
            .to_string(),
        );
        let budget = super::super::budget::Budget::new(8 << 20);
        let judging = Judging::new(budget.clone());
        let stored = Arc::new(StoredModels::default());
        let arrival = |config: Config| Arrival {
            started: Instant::now(),
            deadline: Deadline::new(Instant::now(), Duration::from_secs(8), None),
            config: Arc::new(config),
            generation: 0,
            identity: CLAIMED,
        };
        let review = Admission::new(
            &body,
            request::parse(&body).unwrap(),
            arrival(Config::default()),
        );
        let (pair, ()) = review
            .pair_judged(&judging, &stored, |_, _| Ok(()))
            .await
            .unwrap();
        let (new_len, old_len) = (new.to_string().len(), old.to_string().len());
        let held = budget.total() - budget.available();
        assert_eq!(
            held.div_ceil(1024),
            judgment_cost(new_len + old_len).div_ceil(1024)
        );
        assert_eq!(
            pair.old.as_ref().map(|o| o.name.as_str()),
            Some("widgets.example.com")
        );
        let again = review.new_crd(&judging).await.unwrap();
        assert!(Arc::ptr_eq(&again.crd, &pair.new.crd), "the same model");
        assert_eq!(
            budget.total() - budget.available(),
            held,
            "no second reservation"
        );
        drop((pair, again));
        assert_eq!(
            budget.total() - budget.available(),
            held,
            "held with the review"
        );
        drop(review);
        assert_eq!(budget.available(), budget.total());

        // Read alone first (a verdict already known, then the scan), the
        // new CRD's room is its own; a pair asked for after adds the old.
        let review = Admission::new(
            &body,
            request::parse(&body).unwrap(),
            arrival(Config::default()),
        );
        let first = review.new_crd(&judging).await.unwrap();
        let alone = budget.total() - budget.available();
        assert_eq!(alone.div_ceil(1024), judgment_cost(new_len).div_ceil(1024));
        let (pair, ()) = review
            .pair_judged(&judging, &stored, |_, _| Ok(()))
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&first.crd, &pair.new.crd));
        assert!(pair.also.is_some() && pair.old.is_some());

        // Both at once must fit the budget: refused at once with the
        // reason, and nothing kept, so a later, smaller read can succeed.
        let tight = Judging::new(super::super::budget::Budget::new(1 << 20));
        let huge = Bytes::from(
            serde_json::json!({
                "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "request": {"uid": "u", "name": "widgets.example.com", "operation": "UPDATE",
                            "object": widgets("1", serde_json::json!({"d": {"description": "x".repeat(40_000)}})),
                            "oldObject": widgets("1", serde_json::json!({"d": {"description": "y".repeat(40_000)}}))}
            })
            .to_string(),
        );
        let review = Admission::new(
            &huge,
            request::parse(&huge).unwrap(),
            arrival(Config::default()),
        );
        let why = review
            .pair_judged(&tight, &stored, |_, _| Ok(()))
            .await
            .map(|_| ())
            .unwrap_err();
        assert_eq!(why.kind, Kind::TooLarge);
        assert!(
            why.to_string()
                .starts_with("crd-safety did not check this CRD: judging it needs about"),
            "{why}"
        );
        assert!(
            review.new_crd(&tight).await.is_ok(),
            "the new CRD alone fits"
        );
    }
}
