//! One retry policy for every request to the API server: the reads of the
//! live commands (CRDs, LIST pages, the server version), the dry runs and
//! applies, and the writes of a migration.
//!
//! A busy API server answers 429 (often with `Retry-After`), 500, 502, 503
//! or 504, drops connections, and goes away for a few seconds when it is
//! restarted. Those are retried with exponential backoff, honouring
//! `Retry-After` (seconds or an HTTP date), within a bound on tries and on
//! the total wait, so a run either completes with exact counts or fails
//! with a clear error; it never stops short and reports what it saw as the
//! whole. kube-rs's own retry layer is not used, so every retry is ours,
//! counted and shown.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use http::HeaderMap;

/// How transient failures are retried, per request (or per object written).
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub attempts: u32,
    /// The first backoff; it doubles after each failure.
    pub backoff: Duration,
    /// The longest single backoff (a server's `Retry-After` may ask for more).
    pub max_backoff: Duration,
    /// The most one request waits between tries, in all.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    /// 8 tries, backoff 250 ms doubling up to 8 s, at most 60 s of waiting:
    /// about 24 s of backoff alone, enough for an API server to restart.
    fn default() -> Self {
        RetryPolicy {
            attempts: 8,
            backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            max_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// How long to wait before the next try after `attempt` tries that
    /// waited `waited` in all, with the current `backoff` and the server's
    /// `Retry-After`; `None` when the request has had its share.
    ///
    /// A backoff of our own is stretched by `spread` (0 to 1) times a fifth,
    /// so that the requests of a bundle in flight together, failed by one
    /// hiccup, do not all come back at the same instant; the server's own
    /// `Retry-After` is kept as it is.
    pub fn next_wait(
        &self,
        attempt: u32,
        waited: Duration,
        backoff: Duration,
        retry_after: Option<Duration>,
        spread: f64,
    ) -> Option<Duration> {
        let wait = retry_after.unwrap_or_else(|| {
            let base = backoff.min(self.max_backoff);
            base + base.mul_f64(JITTER * spread.clamp(0.0, 1.0))
        });
        (attempt < self.attempts && waited + wait <= self.max_wait).then_some(wait)
    }
}

/// The most a backoff is stretched by jitter: a fifth.
const JITTER: f64 = 0.2;

/// A number from 0 to 1 for [`RetryPolicy::next_wait`], different for every
/// call: std's hasher keys are random per instance, which is all the
/// randomness jitter needs.
pub fn spread() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(0);
    (h.finish() % 10_000) as f64 / 10_000.0
}

/// The wait a response asks for: `Retry-After` in seconds or as an HTTP
/// date (RFC 9110), relative to `now`. A date in the past means now.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(at.timestamp()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether an HTTP status is worth another try: the server (or a proxy in
/// front of it) is overloaded, restarting or timed out, and said nothing
/// about the request itself. A 500 is retried only when the server names a
/// wait (`retry_after`), as client-go does: without one it is a failure of
/// the request (a broken conversion webhook answers 500 to every read of
/// its objects), and trying again only keeps the user waiting.
pub fn is_transient_status(code: u16, retry_after: bool) -> bool {
    match code {
        429 | 502 | 503 | 504 => true,
        500 => retry_after,
        _ => false,
    }
}

/// Why a request failed without an HTTP answer, when that is worth another
/// try: the connection was reset, closed mid-response, or (only once the
/// server has answered in this run, so it is restarting rather than
/// absent) refused. Timeouts are not retried: `--request-timeout` is the
/// user's own limit.
pub fn transient_cause(
    error: &(dyn std::error::Error + 'static),
    reached: bool,
) -> Option<&'static str> {
    use std::io::ErrorKind;
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            match io.kind() {
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
                    return Some("connection reset");
                }
                ErrorKind::BrokenPipe | ErrorKind::UnexpectedEof => {
                    return Some("connection closed");
                }
                ErrorKind::ConnectionRefused if reached => return Some("connection refused"),
                ErrorKind::TimedOut => return None,
                _ => {}
            }
        }
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            if h.is_timeout() {
                return None;
            }
            if h.is_incomplete_message() || h.is_closed() || h.is_canceled() {
                return Some("connection closed mid-response");
            }
        }
        current = e.source();
    }
    None
}

/// One retry about to happen, for a progress line.
#[derive(Debug, Clone)]
pub struct RetryNotice {
    /// The request, e.g. `LIST example.com/v1 widgets`.
    pub request: String,
    /// What failed: `503 Service Unavailable`, `connection reset`, ...
    pub cause: String,
    /// Which retry of this request this is (1 for the second try).
    pub retry: u32,
    /// The wait before it.
    pub wait: Duration,
}

impl std::fmt::Display for RetryNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}; retry {} in {:.1}s",
            self.request,
            self.cause,
            self.retry,
            self.wait.as_secs_f64()
        )
    }
}

/// One request to the API server and its outcome, for `-v`. It holds no
/// header and no body: credentials are added below the layer that sees it.
#[derive(Debug, Clone)]
pub struct RequestTrace {
    /// `GET`, `PATCH`, ...
    pub method: String,
    /// Path and query.
    pub target: String,
    /// The HTTP status, or what failed.
    pub outcome: String,
    /// Time to the whole answer.
    pub elapsed: Duration,
}

impl std::fmt::Display for RequestTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} in {} ms",
            self.method,
            self.target,
            self.outcome,
            self.elapsed.as_millis()
        )
    }
}

type Observer = Box<dyn Fn(&RetryNotice) + Send + Sync>;
type Tracer = Box<dyn Fn(&RequestTrace) + Send + Sync>;

/// What one connection tells about its requests: the count of retries for
/// the report, each retry for the progress line, each request for `-v`.
#[derive(Default)]
pub struct RequestLog {
    count: AtomicU64,
    observer: Mutex<Option<Observer>>,
    tracer: Mutex<Option<Tracer>>,
}

impl RequestLog {
    /// Counts `notice` and shows it to the observer.
    pub fn note(&self, notice: &RetryNotice) {
        self.count.fetch_add(1, Ordering::SeqCst);
        if let Ok(observer) = self.observer.lock()
            && let Some(f) = observer.as_ref()
        {
            f(notice);
        }
    }

    /// Retries so far.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::SeqCst)
    }

    /// Shows one request to the tracer, if there is one.
    pub fn trace(&self, trace: impl FnOnce() -> RequestTrace) {
        if let Ok(tracer) = self.tracer.lock()
            && let Some(f) = tracer.as_ref()
        {
            f(&trace());
        }
    }

    /// Replaces the tracer.
    pub fn trace_with(&self, f: Tracer) {
        if let Ok(mut tracer) = self.tracer.lock() {
            *tracer = Some(f);
        }
    }

    /// Replaces the observer.
    pub fn observe(&self, f: Observer) {
        if let Ok(mut observer) = self.observer.lock() {
            *observer = Some(f);
        }
    }
}

impl std::fmt::Debug for RequestLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLog")
            .field("count", &self.count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_honor_retry_after_and_give_up() {
        let policy = RetryPolicy::default();
        let ms = Duration::from_millis;
        // The backoff the caller doubles, unless the server names a wait.
        assert_eq!(
            policy.next_wait(1, ms(0), ms(250), None, 0.0),
            Some(ms(250))
        );
        assert_eq!(
            policy.next_wait(2, ms(250), ms(500), Some(Duration::from_secs(3)), 0.5),
            Some(Duration::from_secs(3)),
            "the server's wait is kept as it is"
        );
        // Jitter stretches our own backoff by up to a fifth.
        assert_eq!(
            policy.next_wait(1, ms(0), ms(250), None, 1.0),
            Some(ms(300))
        );
        // A single backoff is capped ...
        assert_eq!(
            policy.next_wait(6, ms(0), Duration::from_secs(16), None, 0.0),
            Some(Duration::from_secs(8))
        );
        // ... at most `attempts` tries ...
        assert_eq!(policy.next_wait(8, ms(0), ms(250), None, 0.0), None);
        // ... and at most `max_wait` of waiting per request.
        assert_eq!(
            policy.next_wait(
                2,
                Duration::from_secs(59),
                ms(0),
                Some(Duration::from_secs(2)),
                0.0
            ),
            None
        );
        let spreads: Vec<f64> = (0..20).map(|_| spread()).collect();
        assert!(spreads.iter().all(|s| (0.0..1.0).contains(s)));
        assert!(
            spreads.iter().any(|s| *s != spreads[0]),
            "every call spreads anew"
        );
    }

    #[test]
    fn the_default_policy_waits_out_a_restart_within_its_bound() {
        let policy = RetryPolicy::default();
        let (mut waited, mut backoff, mut attempt) = (Duration::ZERO, policy.backoff, 1);
        while let Some(wait) = policy.next_wait(attempt, waited, backoff, None, 0.0) {
            waited += wait;
            backoff *= 2;
            attempt += 1;
        }
        assert_eq!(attempt, 8);
        assert_eq!(waited, Duration::from_millis(23_750));
    }

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::RETRY_AFTER,
            value.parse().expect("header value"),
        );
        h
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        // Sun, 06 Nov 1994 08:49:37 GMT
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777);
        assert_eq!(
            retry_after(&headers("7"), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:49:40 GMT"), now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers("Sun, 06 Nov 1994 08:00:00 GMT"), now),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(retry_after(&headers("soon"), now), None);
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
    }

    #[test]
    fn a_500_is_retried_only_when_the_server_names_a_wait() {
        assert!(!is_transient_status(500, false));
        assert!(is_transient_status(500, true));
        assert!(is_transient_status(503, false) && is_transient_status(429, false));
        assert!(!is_transient_status(404, true) && !is_transient_status(422, false));
    }

    #[test]
    fn refused_connections_are_retried_only_once_the_server_has_answered() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(transient_cause(&refused, false), None);
        assert_eq!(transient_cause(&refused, true), Some("connection refused"));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(transient_cause(&reset, false), Some("connection reset"));
        let timeout = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert_eq!(transient_cause(&timeout, true), None);
    }
}
