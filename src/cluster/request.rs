//! Sending one request under the [`super::retry`] policy: a transient
//! failure (429/5xx, a reset or cut connection, a server that is
//! restarting) is tried again after a backoff, counted and shown; anything
//! else, or a failure that outlasts the policy, comes back as [`Failed`].
//!
//! The whole body is read inside the loop, so a connection cut mid-body is
//! retried like one cut before the answer. A LIST page retried sends the
//! same `continue` token again, so paging resumes where it was.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use http::Request;
use hyper::body::Bytes;
use kube::client::Body;
use kube::core::Status;
use serde::de::DeserializeOwned;

use super::retry::{
    RequestTrace, RetryNotice, is_transient_status, retry_after, spread, transient_cause,
};
use super::{ClusterError, Connection};

/// A request that did not succeed.
#[derive(Debug)]
pub(crate) struct Failed {
    /// The last failure.
    pub error: kube::Error,
    /// Tries made, the first included.
    pub tries: u32,
    /// Time spent waiting between tries.
    pub waited: Duration,
    /// Whether the failure was transient and the policy ran out.
    pub exhausted: bool,
}

impl Failed {
    /// The HTTP status of an API error.
    pub fn code(&self) -> Option<u16> {
        match &self.error {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }

    /// Whether the server refused the object itself: invalid (400, 422), or
    /// denied by an admission webhook or policy, whatever code the webhook
    /// chose (crd-safety's own `serve` answers 403). A 403 of RBAC is not a
    /// refusal of the object but of the user, and stays a cluster error.
    pub fn refused(&self) -> bool {
        match self.code() {
            Some(400 | 422) => true,
            Some(403) => {
                let m = self.message();
                (m.starts_with("admission webhook ") && m.contains(" denied the request"))
                    || m.starts_with("ValidatingAdmissionPolicy ")
            }
            _ => false,
        }
    }

    /// The server's message of an API error.
    pub fn message(&self) -> String {
        match &self.error {
            kube::Error::Api(status) => status.message.clone(),
            other => other.to_string(),
        }
    }
}

/// What one try came to, for [`Connection::retried`].
pub(crate) enum Attempt<T, E> {
    /// It worked.
    Done(T),
    /// It failed for good.
    Fatal(E),
    /// Worth another try, after `after` if the server named a wait.
    Transient {
        error: E,
        /// What failed, for the retry notice (`503 Service Unavailable`).
        cause: String,
        after: Option<Duration>,
    },
}

/// How a retried request ended when it did not succeed.
pub(crate) struct GaveUp<E> {
    /// The last failure.
    pub error: E,
    /// Tries made, the first included.
    pub tries: u32,
    /// Time spent waiting between tries.
    pub waited: Duration,
    /// Whether the failure was transient and the policy ran out.
    pub exhausted: bool,
}

/// Sleeps `wait`, waking early when `stop` is set, so Ctrl-C does not wait
/// out a backoff.
async fn sleep_unless_stopped(wait: Duration, stop: Option<&AtomicBool>) {
    let Some(stop) = stop else {
        return tokio::time::sleep(wait).await;
    };
    let deadline = tokio::time::Instant::now() + wait;
    while tokio::time::Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
        let slice = deadline.saturating_duration_since(tokio::time::Instant::now());
        tokio::time::sleep(slice.min(Duration::from_millis(100))).await;
    }
}

/// One try's failure.
pub(crate) enum TryError {
    /// Worth another try, after `after` if the server named a wait.
    Transient {
        error: kube::Error,
        cause: String,
        after: Option<Duration>,
    },
    Fatal(kube::Error),
}

/// The body of a `Content-Encoding: gzip` answer, decompressed. The whole
/// body is in memory anyway (one LIST page), so this is one pass.
fn gunzip(compressed: &[u8]) -> std::io::Result<Bytes> {
    use std::io::Read;
    let mut out = Vec::with_capacity(compressed.len() * 8);
    flate2::read::GzDecoder::new(compressed).read_to_end(&mut out)?;
    Ok(Bytes::from(out))
}

/// A copy of `request` for another try.
fn copy(request: &Request<Vec<u8>>) -> Request<Vec<u8>> {
    let mut copy = Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

impl Connection {
    /// Sends `request` (described as `what` on the progress line) and
    /// decodes the JSON answer, retrying transient failures.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        what: &str,
        request: Request<Vec<u8>>,
    ) -> Result<T, Failed> {
        let (bytes, tries, waited) = self.send_retried(what, request).await?;
        serde_json::from_slice(&bytes).map_err(|e| Failed {
            error: kube::Error::SerdeError(e),
            tries,
            waited,
            exhausted: false,
        })
    }

    /// Sends `request` like [`Connection::call`] and returns the answer's
    /// JSON unread, for a caller that reads it elsewhere than on the async
    /// threads (the webhook, a stored CRD of megabytes).
    pub(crate) async fn call_raw(
        &self,
        what: &str,
        request: Request<Vec<u8>>,
    ) -> Result<Bytes, Failed> {
        self.send_retried(what, request)
            .await
            .map(|(bytes, _, _)| bytes)
    }

    /// Sends `request` until it succeeds, fails for good, or the policy
    /// runs out; returns the body with the tries and wait it took.
    async fn send_retried(
        &self,
        what: &str,
        request: Request<Vec<u8>>,
    ) -> Result<(Bytes, u32, Duration), Failed> {
        let answered = self
            .retried(what, None, || async {
                match self.try_once(copy(&request)).await {
                    Ok(bytes) => Attempt::Done(bytes),
                    Err(TryError::Fatal(error)) => Attempt::Fatal(error),
                    Err(TryError::Transient {
                        error,
                        cause,
                        after,
                    }) => Attempt::Transient {
                        error,
                        cause,
                        after,
                    },
                }
            })
            .await;
        answered.map_err(|g| Failed {
            error: g.error,
            tries: g.tries,
            waited: g.waited,
            exhausted: g.exhausted,
        })
    }

    /// The one retry loop: tries `once` under the connection's policy
    /// until it is done, fails for good, or the policy runs out, counting
    /// and announcing every retry. With `stop` (Ctrl-C), a wait ends early
    /// and `once` is left to decide what a stopped try is.
    pub(crate) async fn retried<T, E, Fut>(
        &self,
        what: &str,
        stop: Option<&AtomicBool>,
        mut once: impl FnMut() -> Fut,
    ) -> Result<(T, u32, Duration), GaveUp<E>>
    where
        Fut: Future<Output = Attempt<T, E>>,
    {
        let policy = self.retry_policy;
        let (mut waited, mut backoff, mut attempt) = (Duration::ZERO, policy.backoff, 0u32);
        loop {
            attempt += 1;
            let (error, cause, after) = match once().await {
                Attempt::Done(t) => return Ok((t, attempt, waited)),
                Attempt::Fatal(error) => {
                    return Err(GaveUp {
                        error,
                        tries: attempt,
                        waited,
                        exhausted: false,
                    });
                }
                Attempt::Transient {
                    error,
                    cause,
                    after,
                } => (error, cause, after),
            };
            let Some(wait) = policy.next_wait(attempt, waited, backoff, after, spread()) else {
                return Err(GaveUp {
                    error,
                    tries: attempt,
                    waited,
                    exhausted: true,
                });
            };
            self.own_retries.fetch_add(1, Ordering::Relaxed);
            self.log.note(&RetryNotice {
                request: what.to_string(),
                cause,
                retry: attempt,
                wait,
            });
            sleep_unless_stopped(wait, stop).await;
            waited += wait;
            backoff = backoff.saturating_mul(2);
        }
    }

    /// One try, traced for `-v` with its status or what failed.
    pub(crate) async fn try_once(&self, request: Request<Vec<u8>>) -> Result<Bytes, TryError> {
        let method = request.method().to_string();
        let target = request
            .uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default();
        let started = std::time::Instant::now();
        // The status, once the server answered (0 before).
        let answered = std::sync::atomic::AtomicU16::new(0);
        let result = self.try_once_inner(request, &answered).await;
        self.log.trace(|| RequestTrace {
            method,
            target,
            outcome: match (
                &result,
                Some(answered.load(Ordering::Relaxed)).filter(|c| *c != 0),
            ) {
                (Err(TryError::Transient { cause, .. }), _) => cause.clone(),
                (_, Some(code)) => code.to_string(),
                _ => "failed".to_string(),
            },
            elapsed: started.elapsed(),
        });
        result
    }

    async fn try_once_inner(
        &self,
        mut request: Request<Vec<u8>>,
        answered: &std::sync::atomic::AtomicU16,
    ) -> Result<Bytes, TryError> {
        if self.compression {
            request.headers_mut().insert(
                http::header::ACCEPT_ENCODING,
                http::HeaderValue::from_static("gzip"),
            );
        }
        let response = match self.client.send(request.map(Body::from)).await {
            Ok(r) => r,
            Err(error) => return Err(self.unanswered(error)),
        };
        self.reached.store(true, Ordering::SeqCst);
        let status = response.status();
        answered.store(status.as_u16(), Ordering::Relaxed);
        let after = retry_after(response.headers(), SystemTime::now());
        let gzipped = response
            .headers()
            .get(http::header::CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        let bytes = match response.into_body().collect_bytes().await {
            Ok(b) if gzipped => gunzip(&b).map_err(|e| {
                TryError::Fatal(kube::Error::Service(
                    format!("the server's gzip-compressed answer cannot be read: {e}").into(),
                ))
            })?,
            Ok(b) => b,
            Err(error) => return Err(self.unanswered(error)),
        };
        if status.is_success() {
            return Ok(bytes);
        }
        let code = status.as_u16();
        let text = String::from_utf8_lossy(&bytes);
        let parsed = serde_json::from_str::<Status>(&text)
            .ok()
            .filter(|s| s.code != 0 || !s.message.is_empty());
        let api = parsed.unwrap_or_else(|| {
            Status::failure(text.trim(), "Failed to parse error data").with_code(code)
        });
        // The API server also names the wait in the Status it sends.
        let after = after.or_else(|| {
            api.details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(u64::from(s)))
        });
        if !is_transient_status(code, after.is_some()) {
            return Err(TryError::Fatal(kube::Error::Api(api.boxed())));
        }
        let cause = format!(
            "{code} {}",
            status.canonical_reason().unwrap_or("from the server")
        );
        Err(TryError::Transient {
            error: kube::Error::Api(api.boxed()),
            cause,
            after,
        })
    }

    /// A request that got no (complete) answer: transient or not.
    fn unanswered(&self, error: kube::Error) -> TryError {
        match transient_cause(&error, self.reached.load(Ordering::SeqCst)) {
            Some(cause) => TryError::Transient {
                error,
                cause: cause.to_string(),
                after: None,
            },
            None => TryError::Fatal(error),
        }
    }

    /// What a user reads about a failed request: the classified error, and
    /// how long it was retried when the policy ran out.
    pub(crate) fn classify_failed(&self, failed: Failed) -> ClusterError {
        let (tries, waited, exhausted) = (failed.tries, failed.waited, failed.exhausted);
        let last = self.classify(failed.error);
        if exhausted && tries > 1 {
            ClusterError::GaveUp {
                last: Box::new(last),
                tries,
                waited_secs: waited.as_secs_f64(),
            }
        } else {
            last
        }
    }
}
