//! The HTTPS server of `serve`: `POST /validate` takes AdmissionReviews,
//! `/healthz`, `/readyz` and `/metrics` are for the kubelet and
//! Prometheus. The certificate and the configuration are read again every
//! `reload_interval`; SIGTERM marks the server not ready, keeps answering
//! for `shutdown_delay` (while endpoints stop routing to it), then stops
//! accepting and lets requests in flight finish.
//!
//! Every wait has a bound, so no client can hold the server: the TLS
//! handshake and the request header must arrive within
//! `header_read_timeout` (it also closes keep-alive connections idle that
//! long), the body within `body_read_timeout`, at most `max_connections`
//! are open at once (more are closed at once), and each review has its
//! deadline ([`super::review`]), counted from its arrival.
//!
//! Memory has two bounds that never wait on each other: the judgments'
//! budget ([`super::budget`], `--memory-budget`) and the bodies'
//! (`--body-memory`). Past its first 64 KiB (a connection's read buffer),
//! a body is read only once the room for its declared length is reserved;
//! until then it stays unread, in the client's and the kernel's buffers,
//! not ours, and a client that sends it a byte a second holds no room. Without that bound twenty clients
//! sending the largest CRD hold twenty bodies while two are judged. The
//! room also bounds how many large reviews are worked on at once (five of
//! ECK's with the default 8Mi), and the rest wait their turn in order: a
//! larger room shared the cores among more of them, so each took longer
//! (figures: docs/BENCHMARKS.md, "Admission webhook latency and memory").
//! A review that finds no room within its deadline is answered 503 unread
//! (its uid is in the body), so the API server's `failurePolicy` decides.
//! The bodies' room is not taken from the judgments' budget: a body that
//! waits for a judgment would hold the room that judgment needs.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Body as _;
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::{TokioIo, TokioTimer};
use kube::core::admission::AdmissionResponse;
use serde_json::json;
use thiserror::Error;
use tokio::net::TcpListener;

use super::admission::{
    AUTHENTICATED, Admission, Arrival, CLAIMED, Deadline, Examined, Reviewed, SharedConfig,
};
use super::budget::{Budget, Judging};
use super::connections::{Admitted, Connections};
use super::cpu::cpu_for;
use super::log::{self, log};
use super::metrics::Metrics;
use super::request;
use super::requirement_set::Requirements;
use super::review::Reviewer;
use super::tls::{CertError, ReloadingCert, client_roots, server_config};
use crate::cluster::Connection;
use crate::config::{Config, ConfigError};
use crate::manifest::{InputLimits, read_text};

/// How `serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// PEM certificate chain.
    pub cert_file: PathBuf,
    /// PEM private key.
    pub key_file: PathBuf,
    /// PEM CA certificates; when set, clients must present a certificate
    /// signed by one of them (the API server's admission kubeconfig).
    pub client_ca_file: Option<PathBuf>,
    /// The configuration file (a mounted ConfigMap), if any.
    pub config_file: Option<PathBuf>,
    /// How often the certificate and configuration are read again.
    pub reload_interval: Duration,
    /// Bodies larger than this are refused (413).
    pub max_body_bytes: usize,
    /// After SIGTERM: how long to keep answering while not ready.
    pub shutdown_delay: Duration,
    /// After that: how long requests in flight may take to finish.
    pub drain_timeout: Duration,
    /// How long a client may take for its TLS handshake, and for a
    /// request's header (or to start the next one on a kept-alive
    /// connection).
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's body.
    pub body_read_timeout: Duration,
    /// Connections open at once; more are closed as soon as accepted.
    pub max_connections: usize,
    /// The memory judgments and object scans may hold at once, in bytes.
    pub memory_budget: u64,
    /// The request bodies held in memory at once, in bytes (at least
    /// `max_body_bytes`, so every acceptable body can be read).
    pub body_memory: u64,
    /// How much the configuration file may hold (`--max-input-bytes`),
    /// read at start and at every reload.
    pub input_limits: InputLimits,
}

/// The most a connection's read buffer grows to. hyper's default (about
/// 400 KiB) is kept by every kept-alive connection once a large body has
/// passed through it, which added up over the API server's connections
/// with the largest CRDs. 64 KiB reads a body in chunks as large as TLS
/// records come anyway (figures: docs/BENCHMARKS.md, "Admission webhook
/// latency and memory").
const READ_BUFFER: usize = 64 << 10;

/// Why `serve` could not start.
#[derive(Debug, Error)]
pub enum ServeError {
    /// The certificate or key is unusable.
    #[error("TLS certificate: {0}")]
    Cert(#[from] CertError),
    /// The configuration file is unusable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The TLS settings were refused.
    #[error("TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// The address cannot be listened on.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// Everything a request handler reads.
struct State {
    /// The configuration in force (each review takes it once, on arrival).
    config: Arc<SharedConfig>,
    reviewer: Reviewer,
    requirements: Requirements,
    metrics: Metrics,
    ready: AtomicBool,
    max_body: usize,
    body_timeout: Duration,
    /// Room for the bodies being read or held (`--body-memory`).
    bodies: Budget,
    /// Whether clients must present a certificate (`--client-ca-file`):
    /// then a review's `userInfo` is the API server's, not a claim.
    client_auth: bool,
}

fn load_config(
    path: Option<&PathBuf>,
    limits: InputLimits,
) -> Result<(Config, Option<String>), ConfigError> {
    let Some(path) = path else {
        return Ok((Config::default(), None));
    };
    let text = read_text(path, limits)?;
    Ok((
        Config::parse(&text, &path.display().to_string())?,
        Some(text),
    ))
}

/// Serves until `shutdown` completes, then drains.
pub async fn serve(
    conn: Connection,
    opts: ServeOptions,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), ServeError> {
    // Whichever way `serve` returns, the lines it logged are written first.
    let _written = log::Flushed(opts.drain_timeout);
    crate::re2::limit_memory(PATTERN_MEMORY);
    let (config, mut config_text) = load_config(opts.config_file.as_ref(), opts.input_limits)?;
    let shared = Arc::new(SharedConfig::new(config));
    let cert = Arc::new(ReloadingCert::load(&opts.cert_file, &opts.key_file)?);
    let roots = opts
        .client_ca_file
        .as_deref()
        .map(client_roots)
        .transpose()?;
    let acceptor =
        tokio_rustls::TlsAcceptor::from(Arc::new(server_config(Arc::clone(&cert), roots)?));
    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: opts.listen,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(opts.listen);
    // One budget and one permit per core for every judgment, the
    // requirements' included.
    let judging = Judging::new(Budget::new(opts.memory_budget));
    let state = Arc::new(State {
        config: Arc::clone(&shared),
        reviewer: Reviewer::new(conn.clone(), judging.clone()),
        requirements: Requirements::new(conn, judging),
        metrics: Metrics::default(),
        ready: AtomicBool::new(true),
        max_body: opts.max_body_bytes,
        body_timeout: opts.body_read_timeout,
        bodies: Budget::new(body_room(opts.body_memory, opts.max_body_bytes)),
        client_auth: opts.client_ca_file.is_some(),
    });
    let connections = Connections::new(opts.max_connections);
    // The consumers' requirements, read before the first review so that it
    // does not meet an empty set (the relist has its own deadline), then
    // read again with every reload.
    state.requirements.relist(&state.metrics).await;
    {
        let (_, c) = shared.get();
        log(
            "serving",
            json!({"address": addr.to_string(), "mode": c.webhook.mode.as_str(),
                   "config": opts.config_file.as_ref().map(|p| p.display().to_string()),
                   "clientCa": opts.client_ca_file.as_ref().map(|p| p.display().to_string()),
                   "memoryBudgetBytes": opts.memory_budget.max(super::budget::MIN_BYTES),
                   "bodyMemoryBytes": state.bodies.total()}),
        );
    }
    // The server's version, read before the first review needs it.
    {
        let state = Arc::clone(&state);
        tokio::spawn(async move { state.reviewer.prime().await });
    }
    // Reloads: the certificate and the configuration file, as mounted
    // Secrets and ConfigMaps change under us.
    let reloader = {
        let state = Arc::clone(&state);
        let cert = Arc::clone(&cert);
        let config_file = opts.config_file.clone();
        let limits = opts.input_limits;
        let interval = opts.reload_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                match cert.reload() {
                    Ok(true) => {
                        state.metrics.reload("certificate", "ok");
                        log("certificate reloaded", json!({}));
                    }
                    Ok(false) => {}
                    Err(e) => {
                        state.metrics.reload("certificate", "error");
                        log("certificate reload failed", json!({"error": e.to_string()}));
                    }
                }
                let Some(path) = &config_file else { continue };
                match read_text(path, limits) {
                    Ok(text) if Some(&text) == config_text.as_ref() => {}
                    Ok(text) => match Config::parse(&text, &path.display().to_string()) {
                        Ok(c) => {
                            let mode = c.webhook.mode.as_str();
                            shared.set(c);
                            config_text = Some(text);
                            state.metrics.reload("config", "ok");
                            log("configuration reloaded", json!({"mode": mode}));
                        }
                        Err(e) => {
                            // Keep the last good one; say so once per change.
                            config_text = Some(text);
                            state.metrics.reload("config", "error");
                            log(
                                "configuration reload failed, the previous one stays",
                                json!({"error": e.to_string()}),
                            );
                        }
                    },
                    Err(e) => {
                        state.metrics.reload("config", "error");
                        log(
                            "configuration reload failed",
                            json!({"error": e.to_string()}),
                        );
                    }
                }
            }
        })
    };
    // The requirements on their own ticks: a slow API server delays them,
    // not the certificate's reload.
    let relister = {
        let state = Arc::clone(&state);
        let interval = opts.reload_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                state.requirements.relist(&state.metrics).await;
            }
        })
    };
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    let mut stopping: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown, if stopping.is_none() => {
                state.ready.store(false, Ordering::SeqCst);
                log("shutting down", json!({"delaySeconds": opts.shutdown_delay.as_secs_f64()}));
                stopping = Some(Box::pin(tokio::time::sleep(opts.shutdown_delay)));
                continue;
            }
            () = async { if let Some(s) = stopping.as_mut() { s.await } }, if stopping.is_some() => break,
            accepted = listener.accept() => accepted,
        };
        let Ok((tcp, _peer)) = accepted else {
            continue;
        };
        // Over the limit with nothing idle to close: closed unanswered,
        // counted, not logged (a flood would flood the log too).
        let Some((held, how)) = connections.admit() else {
            state.metrics.connection_refused();
            drop(tcp);
            continue;
        };
        if how == Admitted::Evicted {
            state.metrics.connection_evicted();
        }
        // As Go's net package does for the API server's side: a small
        // answer is sent at once, not held back until the client
        // acknowledges what went before (Nagle's algorithm).
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let state = Arc::clone(&state);
        let watcher = graceful.watcher();
        let header_timeout = opts.header_read_timeout;
        tokio::spawn(async move {
            // A client that never finishes its handshake must not hold a
            // task, nor its place once another connection needs it.
            let handshake = tokio::time::timeout(header_timeout, acceptor.accept(tcp));
            let tls = tokio::select! {
                tls = handshake => match tls {
                    Ok(Ok(tls)) => tls,
                    _ => return,
                },
                () = held.evicted() => return,
            };
            held.handshaken();
            let marker = held.marker();
            let service = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                let busy = marker.busy();
                async move {
                    let _busy = busy;
                    Ok::<_, Infallible>(handle(&state, req).await)
                }
            });
            // Without a timer hyper has no header timeout at all.
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(READ_BUFFER)
                .serve_connection(TokioIo::new(tls), service);
            // Closed for a newcomer only while no request is in flight.
            tokio::select! {
                _ = watcher.watch(conn) => {}
                () = held.evicted() => {}
            }
        });
    }
    drop(listener);
    reloader.abort();
    relister.abort();
    match tokio::time::timeout(opts.drain_timeout, graceful.shutdown()).await {
        Ok(()) => log("stopped", json!({})),
        Err(_) => log("stopped with requests still in flight", json!({})),
    }
    Ok(())
}

fn text(status: StatusCode, body: impl Into<String>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.into())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::POST, "/validate") => validate(state, req, Reviewing::Crds).await,
        (&Method::POST, "/requirements") => validate(state, req, Reviewing::Requirements).await,
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz") if state.ready.load(Ordering::SeqCst) => {
            text(StatusCode::OK, "ok\n")
        }
        (&Method::GET, "/readyz") => text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n"),
        (&Method::GET, "/metrics") => {
            let mut r = text(StatusCode::OK, state.metrics.render());
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        (_, "/validate" | "/requirements" | "/healthz" | "/readyz" | "/metrics") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        (_, path) => text(StatusCode::NOT_FOUND, format!("no such path: {path}\n")),
    }
}

/// Why a body is not a review we can answer.
fn bad(state: &State, status: StatusCode, why: String) -> Response<Full<Bytes>> {
    state.metrics.bad_request();
    log(
        "bad request",
        json!({"status": status.as_u16(), "error": why}),
    );
    text(status, why + "\n")
}

/// The API server's own timeout for a review: it calls
/// `/validate?timeout=10s` (the webhook's `timeoutSeconds`).
fn caller_timeout(query: Option<&str>) -> Option<Duration> {
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("timeout="))
        .and_then(|t| crate::duration::parse(t).ok())
}

/// What a review path is for.
#[derive(Clone, Copy)]
enum Reviewing {
    /// `/validate`: CRDs, by the webhook's checks and the requirements
    /// pinning them.
    Crds,
    /// `/requirements`: `CRDRequirement` objects, refused when they do not
    /// parse.
    Requirements,
}

async fn validate(
    state: &State,
    req: Request<Incoming>,
    reviewing: Reviewing,
) -> Response<Full<Bytes>> {
    let started = Instant::now();
    // The configuration and the deadline of this review, once: the wait
    // for body room, the checks and the requirements all end with it.
    let (generation, config) = state.config.get();
    let deadline = Deadline::new(
        started,
        config.webhook.review_deadline,
        caller_timeout(req.uri().query()),
    );
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > state.max_body) {
        return bad(
            state,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {} bytes", state.max_body),
        );
    }
    // A body without a declared length may be as long as the largest.
    let size = declared.unwrap_or(state.max_body);
    // Room for the window first; the whole declared length only once the
    // room for it is reserved. A buffer of the declared length from the
    // start (untouched pages cost nothing until written) peaked higher
    // (figures: docs/BENCHMARKS.md, "After the hostile-input bounds
    // (2026-12-02)").
    let mut body = BodyReader::new(req.into_body(), state.max_body, size.min(BODY_WINDOW));
    // The first bytes come before any room is reserved: a client that
    // declares a large body and sends it a byte a second holds no more
    // than this (what its connection's read buffer holds anyway), where
    // it held the room of its whole declared length, in order, and two
    // such clients kept every genuine review out past its deadline.
    let window = size.min(BODY_WINDOW);
    let first = tokio::time::timeout(state.body_timeout, body.fill(window)).await;
    if let Some(refused) = body_refusal(state, first, state.body_timeout) {
        return refused;
    }
    let rest = if body.ended() {
        0
    } else {
        size.saturating_sub(body.len())
    };
    // Held until the answer is written, with the body it pays for.
    let mut _room = None;
    if rest > 0 {
        let wait = deadline.left();
        // The room pays for the whole body, the bytes already read too:
        // as many large bodies are worked on at once as before the window
        // (a room that paid only the rest let one more ECK-sized review
        // in: p50 and peak RSS both rose with 20 at once).
        let whole = size as u64;
        let Ok(Ok(room)) = tokio::time::timeout(wait, state.bodies.reserve(whole)).await else {
            state.metrics.body_waited_out();
            log(
                "body not read",
                json!({"status": 503, "bytes": size, "waitedSeconds": wait.as_secs_f64()}),
            );
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "busy: no room for a body of {size} bytes within {:.1}s among the bodies being \
                     judged (--body-memory {} bytes)\n",
                    wait.as_secs_f64(),
                    state.bodies.total()
                ),
            );
        };
        _room = Some(room);
        if declared.is_some() {
            body.expect(size);
        }
        // Once room is held, the rest arrives at a rate no network between
        // an API server and its webhook falls below, or the room is given
        // back: holding it at a byte a second kept others waiting.
        let within = state
            .body_timeout
            .min(BODY_RATE_GRACE + Duration::from_secs_f64(rest as f64 / BODY_MIN_RATE as f64));
        let read = tokio::time::timeout(within, body.fill(usize::MAX)).await;
        if let Some(refused) = body_refusal(state, read, within) {
            return refused;
        }
    }
    let body = Bytes::from(body.into_bytes());
    let request = match cpu_for(body.len(), || request::parse(&body)) {
        Ok(r) => r,
        Err(why) => return bad(state, StatusCode::BAD_REQUEST, why.to_string()),
    };
    let review = Admission::new(
        &body,
        request,
        Arrival {
            started,
            deadline,
            config,
            generation,
            identity: if state.client_auth {
                AUTHENTICATED
            } else {
                CLAIMED
            },
        },
    );
    let reviewed = match (reviewing, review.request.inconsistency()) {
        (_, Some(why)) => review.refused(&why),
        (Reviewing::Crds, None) => {
            // The webhook's own checks, then the consumers' requirements,
            // on the same CRDs; one decision over both.
            let mut examined: Examined = state.reviewer.examine(&review).await;
            examined
                .found
                .extend(state.requirements.examine(&review).await);
            review.answer(examined)
        }
        (Reviewing::Requirements, None) => state.requirements.review_requirement(&review).await,
    };
    state.metrics.review(
        reviewed.operation.as_str(),
        reviewed.decision.verdict.as_str(),
        started.elapsed(),
        reviewed.decision.break_glass.is_some(),
    );
    if let Some(outcome) = reviewed.scan {
        state.metrics.scan(outcome);
    }
    if let Some(kind) = reviewed.unfinished {
        state.metrics.unfinished(kind);
    }
    let answer = cpu_for(body.len(), || {
        log(
            "review",
            serde_json::to_value(&reviewed).unwrap_or_default(),
        );
        serde_json::to_vec(&respond(&review.request, &reviewed).into_review()).unwrap_or_default()
    });
    let mut r = Response::new(Full::new(Bytes::from(answer)));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// What one `pattern` may take in `serve` (its program, and its matching
/// cache): anyone who may write CRDs chooses the patterns, and a pattern
/// Go compiles to a few KB (`\pL{1000}`) took far more memory and time
/// within the CLI's limit. Patterns past it stay undecided, so the
/// finding they would have cleared denies, within the deadline (figures:
/// docs/BENCHMARKS.md, "After the hostile-input bounds (2026-12-02)").
const PATTERN_MEMORY: usize = 8 << 20;

/// Why a body was not read whole.
enum Unread {
    /// More than `--max-body-bytes` arrived.
    TooLarge,
    /// The connection failed, or the framing was wrong.
    Broken(hyper::Error),
}

/// The bytes of a body a client has sent before any room is reserved for
/// it: about a connection's read buffer ([`READ_BUFFER`]), which every
/// open connection may hold anyway.
const BODY_WINDOW: usize = READ_BUFFER;

/// The rate below which a body whose room is reserved gives it back (a
/// 408), after [`BODY_RATE_GRACE`], within `--body-read-timeout`: a 1 MB
/// body has 1.25 s, where a network between an API server and its webhook
/// carries it in a hundredth of that. A floor of 4 MiB/s cut genuine 7 MiB
/// bodies on a machine busy enough to slow their sender's TLS.
const BODY_MIN_RATE: usize = 1 << 20;
const BODY_RATE_GRACE: Duration = Duration::from_millis(250);

/// The answer to a body that did not arrive whole within `within`, or
/// that broke; `None` when it came.
fn body_refusal(
    state: &State,
    read: Result<Result<(), Unread>, tokio::time::error::Elapsed>,
    within: Duration,
) -> Option<Response<Full<Bytes>>> {
    Some(match read {
        Ok(Ok(())) => return None,
        Err(_) => bad(
            state,
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {}s (--body-read-timeout, and at least {} MiB/s once \
                 the room for it is reserved)",
                within.as_secs_f64(),
                BODY_MIN_RATE >> 20
            ),
        ),
        Ok(Err(Unread::TooLarge)) => bad(
            state,
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {} bytes", state.max_body),
        ),
        Ok(Err(Unread::Broken(e))) => bad(
            state,
            StatusCode::BAD_REQUEST,
            format!("the body could not be read: {e}"),
        ),
    })
}

/// A body read into one buffer as its frames arrive, each copied and
/// dropped, refusing more than `max` bytes. Collecting the frames and
/// joining them at the end (`Limited` and `collect`) kept every frame,
/// and so hyper's read buffers, until the last byte came, and answered
/// the same large pair again more slowly (figures: docs/BENCHMARKS.md,
/// "Admission webhook latency and memory").
struct BodyReader {
    incoming: Incoming,
    buf: Vec<u8>,
    max: usize,
    ended: bool,
}

impl BodyReader {
    /// A reader with a buffer of `capacity` bytes.
    fn new(incoming: Incoming, max: usize, capacity: usize) -> BodyReader {
        BodyReader {
            incoming,
            buf: Vec::with_capacity(capacity),
            max,
            ended: false,
        }
    }

    /// Reads until `want` bytes are here or the body ends.
    async fn fill(&mut self, want: usize) -> Result<(), Unread> {
        while !self.ended && self.buf.len() < want {
            let Some(frame) = self.incoming.frame().await else {
                self.ended = true;
                break;
            };
            let frame = frame.map_err(Unread::Broken)?;
            if let Ok(data) = frame.into_data() {
                if data.len() > self.max - self.buf.len() {
                    return Err(Unread::TooLarge);
                }
                self.buf.extend_from_slice(&data);
            }
        }
        // A body of its declared length has nothing more to come.
        if !self.ended && self.incoming.is_end_stream() {
            self.ended = true;
        }
        Ok(())
    }

    /// Makes room for a body of `total` bytes at once, which the room
    /// reserved for it pays for: growing by doubling would hold up to
    /// twice as much.
    fn expect(&mut self, total: usize) {
        self.buf.reserve_exact(total.saturating_sub(self.buf.len()));
    }

    fn len(&self) -> usize {
        self.buf.len()
    }

    fn ended(&self) -> bool {
        self.ended
    }

    fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// The room for bodies: what `--body-memory` asks, and never less than
/// the largest body `--max-body-bytes` accepts (counted in whole KiB), so
/// that every body the server would read can be.
fn body_room(body_memory: u64, max_body: usize) -> u64 {
    body_memory.max((max_body as u64).next_multiple_of(1024))
}

fn respond(request: &request::Request, reviewed: &Reviewed) -> AdmissionResponse {
    let mut response = request::response(&request.uid);
    let d = &reviewed.decision;
    if let Some(message) = &d.message {
        response = response.deny(message);
        response.result.code = 403;
        response.result.reason = "Forbidden".into();
    }
    if !d.warnings.is_empty() {
        response.warnings = Some(d.warnings.clone());
    }
    if let Some(g) = &d.break_glass {
        // Kept in the API server's audit log with the request.
        response.audit_annotations.insert(
            "break-glass".into(),
            format!("{} ({})", g.checks.join(","), g.reason),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_servers_timeout_is_read_from_the_query() {
        assert_eq!(
            caller_timeout(Some("timeout=10s")),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            caller_timeout(Some("a=b&timeout=2500ms")),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(caller_timeout(Some("timeout=soon")), None);
        assert_eq!(caller_timeout(None), None);
    }

    #[test]
    fn the_bodies_room_holds_at_least_the_largest_body_accepted() {
        assert_eq!(body_room(16 << 20, 8 << 20), 16 << 20);
        assert_eq!(body_room(1 << 20, 8 << 20), 8 << 20);
        // Counted in KiB: one byte over a KiB needs the next one whole.
        assert_eq!(body_room(0, 1025), 2048);
        let room = Budget::new(body_room(0, 8 << 20));
        assert!(room.total() >= 8 << 20);
    }
}
