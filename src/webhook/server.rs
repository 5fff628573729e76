//! The HTTPS server of `serve`: `POST /validate` takes AdmissionReviews,
//! `/healthz`, `/readyz` and `/metrics` are for the kubelet and
//! Prometheus. The certificate and the configuration are read again every
//! `reload_interval`; SIGTERM marks the server not ready, keeps answering
//! for `shutdown_delay` (while endpoints stop routing to it), then stops
//! accepting and lets requests in flight finish.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use kube::core::admission::AdmissionResponse;
use serde_json::{Value, json};
use thiserror::Error;
use tokio::net::TcpListener;

use super::metrics::Metrics;
use super::request;
use super::review::{Reviewed, Reviewer, SharedConfig};
use super::tls::{CertError, ReloadingCert, server_config};
use crate::cluster::Connection;
use crate::config::{Config, ConfigError};

/// How `serve` runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// PEM certificate chain.
    pub cert_file: PathBuf,
    /// PEM private key.
    pub key_file: PathBuf,
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
}

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
    reviewer: Reviewer,
    metrics: Metrics,
    ready: AtomicBool,
    max_body: usize,
}

/// One structured log line on stdout.
fn log(event: &str, mut fields: Value) {
    if let Value::Object(m) = &mut fields {
        let mut line = serde_json::Map::new();
        line.insert("time".into(), json!(now_rfc3339()));
        line.insert("event".into(), json!(event));
        line.append(m);
        println!("{}", Value::Object(line));
    }
}

fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    chrono::DateTime::from_timestamp(now.as_secs() as i64, now.subsec_nanos())
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

fn load_config(path: Option<&PathBuf>) -> Result<(Config, Option<String>), ConfigError> {
    let Some(path) = path else {
        return Ok((Config::default(), None));
    };
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.display().to_string(),
        source,
    })?;
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
    let (config, mut config_text) = load_config(opts.config_file.as_ref())?;
    let shared = Arc::new(SharedConfig::new(config));
    let cert = Arc::new(ReloadingCert::load(&opts.cert_file, &opts.key_file)?);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config(Arc::clone(&cert))?));
    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: opts.listen,
            source,
        })?;
    let addr = listener.local_addr().unwrap_or(opts.listen);
    let state = Arc::new(State {
        reviewer: Reviewer::new(conn, Arc::clone(&shared)),
        metrics: Metrics::default(),
        ready: AtomicBool::new(true),
        max_body: opts.max_body_bytes,
    });
    {
        let (_, c) = shared.get();
        log(
            "serving",
            json!({"address": addr.to_string(), "mode": c.webhook.mode.as_str(),
                   "config": opts.config_file.as_ref().map(|p| p.display().to_string())}),
        );
    }
    // Reloads: the certificate and the configuration file, as mounted
    // Secrets and ConfigMaps change under us.
    let reloader = {
        let state = Arc::clone(&state);
        let cert = Arc::clone(&cert);
        let config_file = opts.config_file.clone();
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
                match std::fs::read_to_string(path) {
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
        let acceptor = acceptor.clone();
        let state = Arc::clone(&state);
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            // A client that never finishes its handshake must not hold a task.
            let tls =
                match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => tls,
                    _ => return,
                };
            let service = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(handle(&state, req).await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service);
            let _ = watcher.watch(conn).await;
        });
    }
    drop(listener);
    reloader.abort();
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
        (&Method::POST, "/validate") => validate(state, req).await,
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
        (_, "/validate" | "/healthz" | "/readyz" | "/metrics") => {
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

async fn validate(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let started = Instant::now();
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
    let body = match Limited::new(req.into_body(), state.max_body)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return bad(
                state,
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is larger than {} bytes", state.max_body),
            );
        }
        Err(e) => {
            return bad(
                state,
                StatusCode::BAD_REQUEST,
                format!("the body could not be read: {e}"),
            );
        }
    };
    let request = match request::parse(&body) {
        Ok(r) => r,
        Err(why) => return bad(state, StatusCode::BAD_REQUEST, why),
    };
    let reviewed = state.reviewer.review(&request).await;
    state.metrics.review(
        reviewed.operation.as_str(),
        reviewed.decision.verdict.as_str(),
        started.elapsed(),
        reviewed.decision.break_glass.is_some(),
    );
    if let Some(outcome) = reviewed.scan {
        state.metrics.scan(outcome);
    }
    log(
        "review",
        serde_json::to_value(&reviewed).unwrap_or_default(),
    );
    let response = respond(&request, &reviewed);
    let body = serde_json::to_vec(&response.into_review()).unwrap_or_default();
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
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
