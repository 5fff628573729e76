//! The admission webhook under test: a CA made per run, `serve` started on
//! loopback with a certificate for 127.0.0.1, its log lines collected, and
//! a `ValidatingWebhookConfiguration` pointing the test API server at it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use serde_json::{Value, json};

/// A certificate authority for one test.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, PEM: the webhook configuration's `caBundle`.
    pub pem: String,
}

impl TestCa {
    pub fn new() -> TestCa {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "crd-safety test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// Writes a serving certificate for 127.0.0.1 and its key into `dir`
    /// as `tls.crt` and `tls.key` (replacing what is there, as a rotation
    /// does), and returns the certificate's PEM.
    pub fn issue(&self, dir: &Path) -> String {
        let key = KeyPair::generate().expect("serving key");
        let mut params =
            CertificateParams::new(vec!["localhost".to_string()]).expect("serving params");
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
        params
            .distinguished_name
            .push(DnType::CommonName, "crd-safety webhook");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        // Written aside and renamed, as the kubelet swaps a Secret's files.
        for (name, text) in [("tls.key", key.serialize_pem()), ("tls.crt", cert.pem())] {
            let tmp = dir.join(format!(".{name}.new"));
            std::fs::write(&tmp, text).expect("write");
            std::fs::rename(&tmp, dir.join(name)).expect("rename");
        }
        cert.pem()
    }

    /// A serving certificate for `dns_names` and `ips`, signed by this CA,
    /// as PEM `(certificate, key)`.
    pub fn serving(&self, dns_names: &[&str], ips: &[std::net::IpAddr]) -> (String, String) {
        let key = KeyPair::generate().expect("serving key");
        let names: Vec<String> = dns_names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("serving params");
        params
            .subject_alt_names
            .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        (cert.pem(), key.serialize_pem())
    }

    /// A client certificate signed by this CA, as PEM `(certificate, key)`:
    /// what the API server presents when its admission kubeconfig says so.
    pub fn client(&self, name: &str) -> (String, String) {
        let key = KeyPair::generate().expect("client key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        (cert.pem(), key.serialize_pem())
    }

    /// `caBundle`: the CA's PEM, base64.
    pub fn bundle(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(&self.pem)
    }
}

/// A running `serve`.
pub struct Served {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its stdout, one JSON line per event.
    lines: Arc<Mutex<Vec<String>>>,
    /// Holds tls.crt, tls.key and config.yaml.
    pub dir: PathBuf,
}

impl Served {
    /// Starts `serve` on a free loopback port with the certificate and
    /// configuration in `dir`, talking to the cluster of `kubeconfig`.
    /// `CRD_SAFETY_SERVE_BINARY` runs another build instead (the bench
    /// measures the image's static binary, or an earlier build, with it).
    pub fn start(dir: &Path, kubeconfig: &Path, extra: &[&str]) -> Served {
        Served::start_joining(dir, kubeconfig, extra, None)
    }

    /// [`Served::start`], the process joining the cgroup whose
    /// `cgroup.procs` is `procs` before it starts (so everything it takes
    /// is held to that cgroup's limit).
    pub fn start_joining(
        dir: &Path,
        kubeconfig: &Path,
        extra: &[&str],
        procs: Option<&Path>,
    ) -> Served {
        let binary: PathBuf = std::env::var_os("CRD_SAFETY_SERVE_BINARY").map_or_else(
            || env!("CARGO_BIN_EXE_kubectl-crd_safety").into(),
            PathBuf::from,
        );
        let mut command = match procs {
            None => Command::new(binary),
            Some(procs) => {
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg("echo $$ > \"$1\" && shift && exec \"$@\"")
                    .arg("sh")
                    .arg(procs)
                    .arg(binary);
                c
            }
        };
        let mut child = command
            .args(["serve", "--listen", "127.0.0.1:0", "--tls-cert-file"])
            .arg(dir.join("tls.crt"))
            .arg("--tls-private-key-file")
            .arg(dir.join("tls.key"))
            .arg("--config")
            .arg(dir.join("config.yaml"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--shutdown-delay", "0s"])
            // Tests see a reload within a fifth of a second, unless `extra`
            // sets its own interval (the bench: the default, as deployed).
            .args(if extra.contains(&"--reload-interval") {
                &[][..]
            } else {
                &["--reload-interval", "200ms"][..]
            })
            .args(extra)
            .env_remove("KUBECONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("serve starts");
        let stdout = child.stdout.take().expect("stdout piped");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if line.contains("\"event\":\"serving\"") {
                        let _ = tx.send(line.clone());
                    }
                    lines.lock().expect("lines").push(line);
                }
            });
        }
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("serve says where it listens");
        let v: Value = serde_json::from_str(&first).expect("JSON log line");
        let addr = v["address"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .expect("address");
        Served {
            child,
            addr,
            lines,
            dir: dir.to_path_buf(),
        }
    }

    /// The process id (for its memory figures).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `https://127.0.0.1:PORT/validate`.
    pub fn url(&self) -> String {
        format!("https://{}/validate", self.addr)
    }

    /// The log lines so far, parsed.
    pub fn log(&self) -> Vec<Value> {
        self.lines
            .lock()
            .expect("lines")
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// Waits for a log line of `event` past the first `after` lines.
    pub fn wait_for(&self, event: &str, after: usize) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(v) = self
                .log()
                .into_iter()
                .skip(after)
                .find(|v| v["event"] == event)
            {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "no {event:?} in the log: {:#?}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM and waits for the exit code.
    pub fn terminate(&mut self) -> i32 {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status.code().unwrap_or(-1);
            }
            assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Registers (or updates) the webhook `crd-safety` for CRDs at `url`.
pub async fn register(client: &Client, url: &str, ca: &TestCa, failure_policy: &str) {
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "crd-safety"},
        "webhooks": [{
            "name": "crds.crd-safety.io",
            "clientConfig": {"url": url, "caBundle": ca.bundle()},
            "rules": [{
                "apiGroups": ["apiextensions.k8s.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE", "DELETE"],
                "resources": ["customresourcedefinitions"],
                "scope": "Cluster"
            }],
            "failurePolicy": failure_policy,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10
        }]
    }))
    .expect("webhook configuration");
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(
            "crd-safety",
            &PatchParams::apply("crd-safety-test").force(),
            &Patch::Apply(&config),
        )
        .await
        .expect("the webhook configuration is applied");
}

/// Registers (or updates) the webhook `crd-safety-requirements`, which
/// sends `CRDRequirement` creates and updates to `serve`'s `/requirements`,
/// as the chart's second webhook does.
pub async fn register_requirements(client: &Client, served: &Served, ca: &TestCa) {
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "crd-safety-requirements"},
        "webhooks": [{
            "name": "requirements.crd-safety.io",
            "clientConfig": {
                "url": format!("https://{}/requirements", served.addr),
                "caBundle": ca.bundle()
            },
            "rules": [{
                "apiGroups": ["crd-safety.io"],
                "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["crdrequirements"],
                "scope": "Cluster"
            }],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10
        }]
    }))
    .expect("webhook configuration");
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .patch(
            "crd-safety-requirements",
            &PatchParams::apply("crd-safety-test").force(),
            &Patch::Apply(&config),
        )
        .await
        .expect("the webhook configuration is applied");
}

/// Runs `kubectl args` against `kubeconfig`.
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs")
}

/// Retries `kubectl args` until its stderr contains `expected`: the API
/// server picks up a webhook configuration change within a second or two.
pub fn until_kubectl_says(
    kubeconfig: &Path,
    args: &[&str],
    expected: &str,
) -> std::process::Output {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = kubectl(kubeconfig, args);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if text.contains(expected) {
            return out;
        }
        assert!(
            Instant::now() < deadline,
            "kubectl {args:?} never said {expected:?}; last:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// A TLS client configuration trusting only the CA certificates in
/// `ca_pem`.
pub fn client_config(ca_pem: &[u8]) -> rustls::ClientConfig {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(cert.expect("CA PEM")).expect("CA added");
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth()
}

/// Sends raw HTTP/1.1 `request` bytes to `addr` over TLS, trusting only
/// `ca_pem` and checking the certificate against `server_name` (as the
/// API server checks it against the Service's name); the status code and
/// body of the answer.
pub async fn https_as(
    addr: SocketAddr,
    ca_pem: &[u8],
    server_name: &str,
    request: &[u8],
) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client_config(ca_pem)));
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from(server_name.to_string()).expect("name");
    let mut tls = connector
        .connect(name, tcp)
        .await
        .unwrap_or_else(|e| panic!("TLS handshake as {server_name}: {e}"));
    tls.write_all(request).await.expect("request sent");
    let mut answer = Vec::new();
    // The server may close before reading a body it refused.
    let _ = tls.read_to_end(&mut answer).await;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// Sends `request` to `addr` over TLS trusting `ca`, presenting the client
/// certificate `identity` (PEM certificate and key) if given: the status
/// and body of the answer, or why there was none (the handshake or the
/// connection failed).
pub async fn https_with(
    addr: SocketAddr,
    ca: &TestCa,
    identity: Option<&(String, String)>,
    request: &[u8],
) -> Result<(u16, String), String> {
    use rustls::pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca.pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA added");
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => builder
            .with_client_auth_cert(
                rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes())
                    .map(|c| c.expect("client PEM"))
                    .collect(),
                rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes())
                    .expect("client key"),
            )
            .expect("client auth"),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
    let mut tls = connector
        .connect(name, tcp)
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tls.write_all(request)
        .await
        .map_err(|e| format!("write: {e}"))?;
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer)
        .await
        .map_err(|e| format!("read: {e}"))?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no HTTP status in {text:?}"))?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// [`https_as`] to the webhook's loopback certificate.
pub async fn https(addr: SocketAddr, ca: &TestCa, request: &[u8]) -> (u16, String) {
    https_as(addr, ca.pem.as_bytes(), "127.0.0.1", request).await
}

/// A `POST /validate` with `body`, closing the connection after.
pub fn post(body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

/// A `POST /validate` of `body` in one chunk of chunked transfer
/// encoding: no length declared up front.
pub fn chunked(body: &[u8]) -> Vec<u8> {
    let mut r = b"POST /validate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    r.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
    r.extend_from_slice(body);
    r.extend_from_slice(b"\r\n0\r\n\r\n");
    r
}

/// A `GET path`, closing the connection after.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").into_bytes()
}

/// A `POST /validate` of an AdmissionReview for CRD `name`, as the API
/// server would send it, or as anyone who reaches the Service could.
pub fn review(operation: &str, name: &str, old: Option<&Value>, new: Option<&Value>) -> Vec<u8> {
    let body = json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": format!("review-{operation}-{name}"),
            "kind": {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"},
            "resource": {"group": "apiextensions.k8s.io", "version": "v1", "resource": "customresourcedefinitions"},
            "name": name,
            "operation": operation,
            "userInfo": {"username": "mallory"},
            "object": new,
            "oldObject": old,
        }
    });
    post(&serde_json::to_vec(&body).expect("JSON"))
}

/// The `response` of an AdmissionReview answer, after checking the status
/// is 200 (an error in a review is an answer, not an HTTP error).
pub fn answer(code: u16, body: &str) -> Value {
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(body).expect("an AdmissionReview answer");
    v["response"].clone()
}

/// What a test's own admission webhook ([`Admission`]) answers to one
/// review: `None` allows, `Some(message)` denies with it.
pub type Verdict = std::pin::Pin<Box<dyn std::future::Future<Output = Option<String>> + Send>>;

/// A validating admission webhook of the test's own on loopback HTTPS (a
/// certificate for 127.0.0.1 from the test's CA), answering each review
/// with the test's `decide`: for tests that need the API server to refuse
/// or hold one real write among others, which `serve` never does. Every
/// review's `request` is kept, in order.
pub struct Admission {
    /// `https://127.0.0.1:PORT/`.
    pub url: String,
    /// The `request` of every review so far.
    pub reviews: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Admission {
    /// Starts the webhook on the current runtime (which must keep running
    /// while the API server calls it: a multi-threaded one when the test
    /// blocks on a child process).
    pub async fn start<F>(ca: &TestCa, decide: F) -> Admission
    where
        F: Fn(&Value) -> Verdict + Send + Sync + 'static,
    {
        use http_body_util::BodyExt;
        use rustls::pki_types::pem::PemObject;
        let (cert, key) = ca.serving(&["localhost"], &[std::net::IpAddr::from([127, 0, 0, 1])]);
        let certs = rustls::pki_types::CertificateDer::pem_slice_iter(cert.as_bytes())
            .map(|c| c.expect("certificate PEM"))
            .collect();
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).expect("key");
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("serving certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("https://{}/", listener.local_addr().expect("address"));
        let reviews = Arc::new(Mutex::new(Vec::new()));
        let decide = Arc::new(decide);
        let kept = Arc::clone(&reviews);
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, decide, kept) =
                    (acceptor.clone(), Arc::clone(&decide), Arc::clone(&kept));
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let (decide, kept) = (Arc::clone(&decide), Arc::clone(&kept));
                            async move {
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                let request = review["request"].clone();
                                kept.lock().expect("reviews").push(request.clone());
                                let denied = decide(&request).await;
                                let mut response = json!({
                                    "uid": request["uid"],
                                    "allowed": denied.is_none(),
                                });
                                if let Some(message) = denied {
                                    response["status"] = json!({"code": 403, "message": message});
                                }
                                let answer = json!({
                                    "apiVersion": "admission.k8s.io/v1",
                                    "kind": "AdmissionReview",
                                    "response": response,
                                });
                                let bytes = serde_json::to_vec(&answer).expect("JSON");
                                Ok::<_, hyper::Error>(
                                    http::Response::builder()
                                        .header("content-type", "application/json")
                                        .body(http_body_util::Full::new(hyper::body::Bytes::from(
                                            bytes,
                                        )))
                                        .expect("response"),
                                )
                            }
                        },
                    );
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        Admission { url, reviews, task }
    }

    /// Registers it as the `ValidatingWebhookConfiguration` `name` for every
    /// create and update of a CRD (failure policy `Fail`), then waits until
    /// the API server calls it: a server-side dry run of a create of
    /// `probe` (a CRD manifest file the test's `decide` denies) is denied.
    pub async fn register(
        &self,
        client: &Client,
        ca: &TestCa,
        name: &str,
        kubeconfig: &Path,
        probe: &str,
    ) {
        let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{
                "name": format!("{name}.example.com"),
                "clientConfig": {"url": self.url, "caBundle": ca.bundle()},
                "rules": [{
                    "apiGroups": ["apiextensions.k8s.io"],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE"],
                    "resources": ["customresourcedefinitions"],
                    "scope": "Cluster"
                }],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 10
            }]
        }))
        .expect("webhook configuration");
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .patch(
                name,
                &PatchParams::apply("crd-safety-test").force(),
                &Patch::Apply(&config),
            )
            .await
            .expect("the webhook configuration is applied");
        let kubeconfig = kubeconfig.to_path_buf();
        let probe = probe.to_string();
        tokio::task::spawn_blocking(move || {
            until_kubectl_says(
                &kubeconfig,
                &["create", "--dry-run=server", "-f", &probe],
                "denied the request",
            )
        })
        .await
        .expect("probe");
    }

    /// The reviews so far of CRD `name`: `(operation, dryRun)` each.
    pub fn of(&self, name: &str) -> Vec<(String, bool)> {
        self.reviews
            .lock()
            .expect("reviews")
            .iter()
            .filter(|r| r["name"] == name)
            .map(|r| {
                (
                    r["operation"].as_str().unwrap_or_default().to_string(),
                    r["dryRun"].as_bool().unwrap_or(false),
                )
            })
            .collect()
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.task.abort();
    }
}
