//! A fault-injecting HTTP proxy in front of the real API server, for the
//! faults a healthy test server does not produce on demand: 429 with
//! `Retry-After`, 503, a connection closed before the answer, an answer
//! cut mid-body. Everything else is forwarded to the real kube-apiserver
//! (as the admin), so counts and verdicts come from the real server.
//!
//! The plugin talks plain HTTP to the proxy on loopback (a kubeconfig
//! without credentials); the proxy talks HTTPS to the server.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::client::Body;

use super::envtest::ControlPlane;

/// What the proxy does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// Forward it and return the server's answer.
    Forward,
    /// Answer this status without forwarding, with `Retry-After` if given.
    Status {
        code: u16,
        retry_after: Option<String>,
    },
    /// Close the connection without an answer (not forwarded).
    Close,
    /// Forward it, then send only the first half of the answer's body and
    /// close: the server did the work, the client lost the answer.
    CutMidBody,
    /// Forward it after this long (half before sending it on, half before
    /// answering): a round trip to a server that far away.
    Delay(std::time::Duration),
}

impl Fault {
    /// `503` with `Retry-After`.
    pub fn status(code: u16, retry_after: Option<&str>) -> Fault {
        Fault::Status {
            code,
            retry_after: retry_after.map(str::to_string),
        }
    }
}

/// One request the proxy saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// `GET`, `PATCH`, ...
    pub method: String,
    /// Path and query, as sent.
    pub target: String,
    /// What was done with it.
    pub fault: Fault,
    /// When it arrived.
    pub at: Instant,
}

/// A request as the script sees it.
pub struct Incoming<'a> {
    pub method: &'a str,
    /// Path and query.
    pub target: &'a str,
    /// How many requests with this method and target arrived so far,
    /// this one included (1 for the first try, 2 for its retry, ...).
    pub nth: usize,
}

type Script = dyn Fn(&Incoming<'_>) -> Fault + Send + Sync;

/// A running proxy; it stops with the test process.
pub struct FaultProxy {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    answers: Arc<Mutex<Vec<Answer>>>,
}

/// A forwarded answer, as sent on to the client.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Path and query of the request.
    pub target: String,
    /// Its `Content-Encoding`, if any.
    pub encoding: Option<String>,
    /// Body bytes, as they went over the wire.
    pub bytes: usize,
}

impl FaultProxy {
    /// Starts a proxy to `plane`'s API server that treats each request as
    /// `script` says.
    pub fn start(
        plane: &ControlPlane,
        script: impl Fn(&Incoming<'_>) -> Fault + Send + Sync + 'static,
    ) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(Vec::new()));
        let runtime = Arc::new(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("proxy runtime"),
        );
        // Tests call this from inside their own runtime: build the client
        // on a thread of its own so the two runtimes never nest.
        let client = std::thread::scope(|scope| {
            scope
                .spawn(|| upstream(&runtime, &plane.admin_kubeconfig))
                .join()
                .expect("upstream client")
        });
        let script: Arc<Script> = Arc::new(script);
        let (shared, shared_answers) = (Arc::clone(&seen), Arc::clone(&answers));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Log {
                    seen: Arc::clone(&shared),
                    answers: Arc::clone(&shared_answers),
                };
                let (script, runtime, client) =
                    (Arc::clone(&script), Arc::clone(&runtime), client.clone());
                std::thread::spawn(move || serve(stream, &*script, &log, &runtime, &client));
            }
        });
        FaultProxy { url, seen, answers }
    }

    /// A proxy that forwards every request `round_trip` later, as a
    /// server that far away answers.
    pub fn delaying(plane: &ControlPlane, round_trip: std::time::Duration) -> FaultProxy {
        FaultProxy::start(plane, move |_| Fault::Delay(round_trip))
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("proxy log").clone()
    }

    /// Every answer forwarded so far.
    pub fn answers(&self) -> Vec<Answer> {
        self.answers.lock().expect("proxy log").clone()
    }

    /// A kubeconfig that reaches the server through this proxy.
    pub fn kubeconfig(&self, dir: &Path) -> String {
        self.kubeconfig_with(dir, "")
    }

    /// [`Self::kubeconfig`] with `extra` lines in the cluster entry
    /// (`"    disable-compression: true\n"`).
    pub fn kubeconfig_with(&self, dir: &Path, extra: &str) -> String {
        let path = dir.join("faults.kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: faults\n  cluster:\n    server: {}\n{extra}\
                 users:\n- name: faults\n  user: {{}}\ncontexts:\n- name: faults\n  context:\n    \
                 cluster: faults\n    user: faults\ncurrent-context: faults\n",
                self.url
            ),
        )
        .expect("kubeconfig written");
        path.display().to_string()
    }
}

/// The admin's client, without kube's own retries, so the proxy passes on
/// exactly what the server answered.
fn upstream(runtime: &tokio::runtime::Runtime, kubeconfig: &Path) -> kube::Client {
    runtime.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("admin kubeconfig");
        let mut config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .expect("admin config");
        config.default_retry = false;
        kube::Client::try_from(config).expect("admin client")
    })
}

/// A request read off the wire.
struct Raw {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Raw> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        let (name, value) = (name.trim().to_string(), value.trim().to_string());
        if name.eq_ignore_ascii_case("content-length") {
            length = value.parse().ok()?;
        }
        headers.push((name, value));
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Raw {
        method,
        target,
        headers,
        body,
    })
}

/// Answers the requests of one keep-alive connection.
fn serve(
    stream: TcpStream,
    script: &Script,
    log: &Log,
    runtime: &tokio::runtime::Runtime,
    client: &kube::Client,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("stream"));
    let mut writer = stream;
    while let Some(raw) = read_request(&mut reader) {
        let fault = {
            let mut log = log.seen.lock().expect("proxy log");
            let nth = 1 + log
                .iter()
                .filter(|s| s.method == raw.method && s.target == raw.target)
                .count();
            let fault = script(&Incoming {
                method: &raw.method,
                target: &raw.target,
                nth,
            });
            log.push(Seen {
                method: raw.method.clone(),
                target: raw.target.clone(),
                fault: fault.clone(),
                at: Instant::now(),
            });
            fault
        };
        match fault {
            Fault::Close => {
                let _ = writer.shutdown(Shutdown::Both);
                return;
            }
            Fault::Status { code, retry_after } => {
                let body = format!(
                    r#"{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected {code}","code":{code}}}"#
                );
                let mut extra = String::new();
                if let Some(after) = retry_after {
                    extra.push_str(&format!("Retry-After: {after}\r\n"));
                }
                let head = format!(
                    "HTTP/1.1 {code} Injected\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n",
                    body.len()
                );
                if writer.write_all(head.as_bytes()).is_err()
                    || writer.write_all(body.as_bytes()).is_err()
                {
                    return;
                }
            }
            Fault::Forward | Fault::CutMidBody | Fault::Delay(_) => {
                let target = raw.target.clone();
                let delay = match fault {
                    Fault::Delay(d) => d / 2,
                    _ => std::time::Duration::ZERO,
                };
                std::thread::sleep(delay);
                let forwarded = forward(runtime, client, raw);
                std::thread::sleep(delay);
                let Some((status, content_type, encoding, body)) = forwarded else {
                    // The server is away: so is the answer.
                    let _ = writer.shutdown(Shutdown::Both);
                    return;
                };
                let content_encoding = encoding
                    .as_ref()
                    .map(|e| format!("Content-Encoding: {e}\r\n"))
                    .unwrap_or_default();
                log.answers.lock().expect("proxy log").push(Answer {
                    target,
                    encoding,
                    bytes: body.len(),
                });
                let head = format!(
                    "HTTP/1.1 {status} Forwarded\r\nContent-Type: {content_type}\r\n{content_encoding}Content-Length: {}\r\n\r\n",
                    body.len()
                );
                let sent = if fault == Fault::CutMidBody {
                    &body[..body.len() / 2]
                } else {
                    &body[..]
                };
                if writer.write_all(head.as_bytes()).is_err() || writer.write_all(sent).is_err() {
                    return;
                }
                if fault == Fault::CutMidBody {
                    let _ = writer.flush();
                    let _ = writer.shutdown(Shutdown::Both);
                    return;
                }
            }
        }
    }
}

/// What the proxy records.
struct Log {
    seen: Arc<Mutex<Vec<Seen>>>,
    answers: Arc<Mutex<Vec<Answer>>>,
}

/// Sends `raw` to the real server; its status, content type, content
/// encoding and body (still encoded).
fn forward(
    runtime: &tokio::runtime::Runtime,
    client: &kube::Client,
    raw: Raw,
) -> Option<(u16, String, Option<String>, Vec<u8>)> {
    let mut request = http::Request::builder()
        .method(raw.method.as_str())
        .uri(raw.target.as_str());
    for (name, value) in &raw.headers {
        let skip = ["host", "content-length", "connection", "authorization"];
        if !skip.iter().any(|s| name.eq_ignore_ascii_case(s)) {
            request = request.header(name.as_str(), value.as_str());
        }
    }
    let request = request.body(Body::from(raw.body)).ok()?;
    runtime.block_on(async {
        let response = client.send(request).await.ok()?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json")
            .to_string();
        let encoding = response
            .headers()
            .get(http::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = response.into_body().collect_bytes().await.ok()?;
        Some((status, content_type, encoding, body.to_vec()))
    })
}
