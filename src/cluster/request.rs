//! Sending one request under the [`super::retry`] policy: a transient
//! failure (429/5xx, a reset or cut connection, a server that is
//! restarting) is tried again after a backoff, counted and shown; anything
//! else, or a failure that outlasts the policy, comes back as [`Failed`].
//!
//! The whole body is read inside the loop, so a connection cut mid-body is
//! retried like one cut before the answer. A LIST page retried sends the
//! same `continue` token again, so paging resumes where it was.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use http::Request;
use hyper::body::Bytes;
use kube::client::Body;
use kube::core::Status;
use serde::de::DeserializeOwned;

use super::retry::{RequestTrace, RetryNotice, is_transient_status, retry_after, transient_cause};
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

/// One try's failure.
enum TryError {
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

    /// Sends `request` until it succeeds, fails for good, or the policy
    /// runs out; returns the body with the tries and wait it took.
    async fn send_retried(
        &self,
        what: &str,
        request: Request<Vec<u8>>,
    ) -> Result<(Bytes, u32, Duration), Failed> {
        let policy = self.retry_policy;
        let mut waited = Duration::ZERO;
        let mut backoff = policy.backoff;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (error, cause, after) = match self.try_once(copy(&request)).await {
                Ok(bytes) => return Ok((bytes, attempt, waited)),
                Err(TryError::Fatal(error)) => {
                    return Err(Failed {
                        error,
                        tries: attempt,
                        waited,
                        exhausted: false,
                    });
                }
                Err(TryError::Transient {
                    error,
                    cause,
                    after,
                }) => (error, cause, after),
            };
            let Some(wait) = policy.next_wait(attempt, waited, backoff, after) else {
                return Err(Failed {
                    error,
                    tries: attempt,
                    waited,
                    exhausted: true,
                });
            };
            self.own_retries
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.log.note(&RetryNotice {
                request: what.to_string(),
                cause,
                retry: attempt,
                wait,
            });
            tokio::time::sleep(wait).await;
            waited += wait;
            backoff = backoff.saturating_mul(2);
        }
    }

    /// One try, traced for `-v` with its status or what failed.
    async fn try_once(&self, request: Request<Vec<u8>>) -> Result<Bytes, TryError> {
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
        if !is_transient_status(code) {
            return Err(TryError::Fatal(kube::Error::Api(api.boxed())));
        }
        // The API server also names the wait in the Status it sends.
        let after = after.or_else(|| {
            api.details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(u64::from(s)))
        });
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
