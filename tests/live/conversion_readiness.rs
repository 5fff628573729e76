//! `conversionWebhookNotReady` against the real API server: a CRD whose
//! conversion webhook has no Service, no such port, no (ready) endpoint, a
//! caBundle that does not parse or did not sign the serving certificate,
//! and one where everything is in place. There is no controller-manager, so
//! the EndpointSlices (and, for the probe, the Endpoints and the pod's IP)
//! are made by hand, as a Service without selector has them.
//!
//! `--probe-conversion` sends a stored object through the API server's
//! service proxy to a conversion webhook this test runs. The proxy refuses
//! loopback endpoints and only proxies to pod IPs, so the webhook listens on
//! a non-loopback address of this machine, named by a hand-made Pod's
//! status. The probe sends only to the webhook the live CRD already converts
//! through (or a Service named by `--probe-conversion-service`), so the
//! probe tests install the live CRD with its webhook first; each webhook
//! counts the connections it gets, which shows what was not sent. Plurals
//! `conv*s` are this module's, and so is the namespace
//! `conversion-readiness`; the minimal `certificates.cert-manager.io` CRD
//! (for the Certificate that `inject-ca-from` names) goes to a dedicated
//! control plane, as the shared one gets cert-manager's real one from
//! `crd_validation`'s corpus test.

use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support;
use support::envtest::{control_plane, dedicated};
use support::fixtures;
use support::live::{admin, create_objects, ensure_namespace, install, write_manifest};
use support::run::{Run, run};
use support::webhook::TestCa;

const NS: &str = "conversion-readiness";

/// The CRD `<plural>.example.com`, serving v1 (stored) and v2, converting
/// through Service `NS/<service>` on `port` with `ca_bundle`.
fn webhook_crd(plural: &str, service: &str, port: i32, path: &str, ca_bundle: &str) -> Value {
    let root = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "integer"}, "mode": {"type": "string"},
                       "password": {"type": "string"}}}}});
    let mut crd = fixtures::crd(
        plural,
        vec![
            fixtures::version("v1", true, true, root.clone()),
            fixtures::version("v2", true, false, root),
        ],
    );
    let mut client_config =
        json!({"service": {"namespace": NS, "name": service, "port": port, "path": path}});
    if !ca_bundle.is_empty() {
        client_config["caBundle"] = json!(ca_bundle);
    }
    crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"], "clientConfig": client_config}});
    crd
}

fn api(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    if matches!(
        kind,
        "ClusterRole" | "ClusterRoleBinding" | "CustomResourceDefinition"
    ) {
        Api::all_with(client.clone(), &ar)
    } else {
        Api::namespaced_with(client.clone(), NS, &ar)
    }
}

/// Server-side-applies `object` (its apiVersion, kind and name say where).
async fn put(client: &Client, plural: &str, object: Value) {
    let (group, version) = match object["apiVersion"].as_str().expect("apiVersion") {
        v if v.contains('/') => v.split_once('/').expect("group/version"),
        v => ("", v),
    };
    let kind = object["kind"].as_str().expect("kind");
    let name = object["metadata"]["name"].as_str().expect("name");
    let objects = api(client, group, version, kind, plural);
    // A CRD just established may take a moment to serve its objects.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let pp = PatchParams::apply("crd-safety-test").force();
        match objects.patch(name, &pp, &Patch::Apply(&object)).await {
            Ok(_) => return,
            Err(kube::Error::Api(s)) if s.code == 404 && std::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{kind} {name}: {e}"),
        }
    }
}

/// A Service `name` on port 443 (named `https`), targeting `target`.
async fn service(client: &Client, name: &str, target: u16) {
    ensure_namespace(client, NS).await;
    put(
        client,
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": target}]}}),
    )
    .await;
}

/// An EndpointSlice of Service `name` with one endpoint at `ip`.
async fn endpoint_slice(
    client: &Client,
    name: &str,
    ip: &str,
    port: u16,
    ready: bool,
    pod: Option<&str>,
) {
    let mut endpoint = json!({"addresses": [ip], "conditions": {"ready": ready}});
    if let Some(pod) = pod {
        endpoint["targetRef"] = json!({"kind": "Pod", "namespace": NS, "name": pod});
    }
    put(
        client,
        "endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": format!("{name}-1"), "namespace": NS,
                            "labels": {"kubernetes.io/service-name": name}},
               "addressType": "IPv4",
               "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
               "endpoints": [endpoint]}),
    )
    .await;
}

/// A Secret `name` holding `tls.crt`.
async fn tls_secret(client: &Client, name: &str, cert_pem: &str) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert_pem);
    put(
        client,
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
               "type": "Opaque", "data": {"tls.crt": b64}}),
    )
    .await;
}

/// `apply-check` of `crd` as JSON, and its `conversionWebhookNotReady`
/// findings as `severity: message`.
fn check(kubeconfig: &std::path::Path, crd: &Value, extra: &[&str]) -> (Run, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), "crd.json", crd);
    let kubeconfig = kubeconfig.display().to_string();
    let mut args = vec![
        "apply-check",
        "-f",
        &path,
        "--kubeconfig",
        &kubeconfig,
        "-o",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args, None);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    let found = report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "conversionWebhookNotReady")
        .map(|f| {
            format!(
                "{}: {}",
                f["severity"].as_str().unwrap_or(""),
                f["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    (out, found)
}

fn one_error(found: &[String], expected: &[&str]) {
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("error: conversion webhook "),
        "{}",
        found[0]
    );
    for part in expected {
        assert!(found[0].contains(part), "{part:?} not in {}", found[0]);
    }
}

/// What every error names as broken.
const BREAKS: &str = "objects stored as v1 cannot be read as v2";

#[tokio::test]
async fn a_webhook_whose_service_does_not_exist_is_an_error() {
    let Some(plane) = control_plane() else { return };
    let ca = TestCa::new();
    let crd = webhook_crd(
        "convmissings",
        "convmissing-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    let (out, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    one_error(
        &found,
        &[
            "conversion webhook svc conversion-readiness/convmissing-hook:443 does not exist",
            BREAKS,
            "Install the webhook",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
}

#[tokio::test]
async fn a_service_without_endpoints_is_an_error() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    service(&client, "convempty-hook", 9443).await;
    let ca = TestCa::new();
    let crd = webhook_crd(
        "convempties",
        "convempty-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    // Probed or not: one error, on the cause.
    for extra in [&[][..], &["--probe-conversion"]] {
        let (_, found) = check(&plane.admin_kubeconfig, &crd, extra);
        one_error(
            &found,
            &[
                "has no ready endpoint (the Service has no EndpointSlice",
                BREAKS,
            ],
        );
    }
}

#[tokio::test]
async fn an_endpoint_that_is_not_ready_is_an_error() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    service(&client, "convunready-hook", 9443).await;
    endpoint_slice(&client, "convunready-hook", "10.0.1.5", 9443, false, None).await;
    let ca = TestCa::new();
    let crd = webhook_crd(
        "convunreadies",
        "convunready-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    let (_, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    one_error(
        &found,
        &[
            "has no ready endpoint (1 endpoint on the port, none ready)",
            BREAKS,
        ],
    );
}

#[tokio::test]
async fn a_ready_endpoint_and_a_current_ca_bundle_report_nothing() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    service(&client, "convready-hook", 9443).await;
    endpoint_slice(&client, "convready-hook", "10.0.1.6", 9443, true, None).await;
    let ca = TestCa::new();
    let crd = webhook_crd(
        "convreadies",
        "convready-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    let (out, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    assert_eq!(found, Vec::<String>::new());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    // The same webhook named on a port its Service does not have.
    let crd = webhook_crd(
        "convports",
        "convready-hook",
        8443,
        "/convert",
        &ca.bundle(),
    );
    let (_, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    one_error(
        &found,
        &[
            "svc conversion-readiness/convready-hook:8443 names a port the Service does not have (its ports: 443)",
            BREAKS,
        ],
    );

    // ... and with a caBundle that is no certificate.
    let garbage = base64::engine::general_purpose::STANDARD.encode("garbage");
    let crd = webhook_crd("convgarbages", "convready-hook", 443, "/convert", &garbage);
    let (_, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    one_error(
        &found,
        &[
            "has an unusable caBundle (unable to load root certificates: unable to parse bytes as PEM block)",
            BREAKS,
        ],
    );
}

/// The Certificate CRD, as much of it as `inject-ca-from` needs.
async fn certificate_crd(client: &Client) {
    let root = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "scope": "Namespaced",
                 "names": {"kind": "Certificate", "plural": "certificates"},
                 "versions": [fixtures::version("v1", true, true, root)]}
    });
    install(client, &crd).await;
}

#[tokio::test]
async fn a_serving_certificate_the_ca_bundle_did_not_sign_is_an_error() {
    // A plane of its own: the shared one gets cert-manager's real
    // Certificate CRD from the corpus test of crd_validation.
    let Some(plane) = dedicated() else { return };
    let client = admin(&plane).await;
    service(&client, "convsigned-hook", 9443).await;
    endpoint_slice(&client, "convsigned-hook", "10.0.1.7", 9443, true, None).await;
    certificate_crd(&client).await;
    put(
        &client,
        "certificates",
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
               "metadata": {"name": "convsigned-cert", "namespace": NS},
               "spec": {"secretName": "convsigned-tls"}}),
    )
    .await;
    // The Secret holds a certificate of a CA the CRD's caBundle is not.
    let (ca, other) = (TestCa::new(), TestCa::new());
    let dns = "convsigned-hook.conversion-readiness.svc";
    tls_secret(&client, "convsigned-tls", &other.serving(&[dns], &[]).0).await;
    let mut crd = webhook_crd(
        "convsigneds",
        "convsigned-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    crd["metadata"]["annotations"] =
        json!({"cert-manager.io/inject-ca-from": format!("{NS}/convsigned-cert")});
    // The Secret is read only where the live CRD's own annotation leads.
    install(&client, &crd).await;
    let (_, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    one_error(
        &found,
        &[
            "conversion webhook svc conversion-readiness/convsigned-hook:443 serves a certificate its \
         caBundle refuses (tls.crt of Secret conversion-readiness/convsigned-tls: it is signed by \
         another key than the caBundle's CA of that name",
            BREAKS,
        ],
    );

    // Signed by the bundle's CA, but for another name.
    tls_secret(
        &client,
        "convsigned-tls",
        &ca.serving(&["elsewhere.svc"], &[]).0,
    )
    .await;
    let (_, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    one_error(&found, &[&format!("it does not name {dns}")]);

    // Signed by it, for the Service's name: nothing to say.
    tls_secret(&client, "convsigned-tls", &ca.serving(&[dns], &[]).0).await;
    let (out, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    assert_eq!(found, Vec::<String>::new());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[tokio::test]
async fn everything_in_place_with_cert_managers_secret_reports_nothing() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    service(&client, "convgood-hook", 9443).await;
    endpoint_slice(&client, "convgood-hook", "10.0.1.8", 9443, true, None).await;
    let ca = TestCa::new();
    let dns = "convgood-hook.conversion-readiness.svc";
    tls_secret(&client, "convgood-tls", &ca.serving(&[dns], &[]).0).await;
    let mut crd = webhook_crd("convgoods", "convgood-hook", 443, "/convert", &ca.bundle());
    crd["metadata"]["annotations"] =
        json!({"cert-manager.io/inject-ca-from-secret": format!("{NS}/convgood-tls")});
    install(&client, &crd).await;
    let (out, found) = check(&plane.admin_kubeconfig, &crd, &[]);
    assert_eq!(found, Vec::<String>::new());
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

#[tokio::test]
async fn a_user_who_may_not_read_services_gets_a_warning_not_a_failure() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let user = "conversion-checker";
    put(
        &client,
        "clusterroles",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": user},
               "rules": [{"apiGroups": ["apiextensions.k8s.io"],
                          "resources": ["customresourcedefinitions"],
                          "verbs": ["get", "list", "create", "patch"]}]}),
    )
    .await;
    put(
        &client,
        "clusterrolebindings",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
    )
    .await;
    let ca = TestCa::new();
    let crd = webhook_crd(
        "convforbiddens",
        "convforbidden-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    let (out, found) = check(&plane.user_kubeconfig(user), &crd, &[]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "warning: conversion webhook svc conversion-readiness/convforbidden-hook:443 could not \
             be checked: reading its Service is forbidden"
        ),
        "{}",
        found[0]
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
}

/// A non-loopback address of this machine, which the API server's proxy
/// accepts as a pod's: the source address of a route out (a UDP connect
/// sends nothing), else the first of `hostname -I`.
fn machine_address() -> Option<IpAddr> {
    let routed = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.connect("8.8.8.8:53").map(|()| s))
        .and_then(|s| s.local_addr())
        .map(|a| a.ip())
        .ok()
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified());
    routed.or_else(|| {
        let out = std::process::Command::new("hostname")
            .arg("-I")
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .filter_map(|w| w.parse::<IpAddr>().ok())
            .find(|ip| ip.is_ipv4() && !ip.is_loopback())
    })
}

/// A running test webhook: its port, and the connections it has accepted.
struct Hook {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Hook {
    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The secret-looking value the leak test stores.
const SECRET: &str = "hunter2-probe";

/// A conversion webhook over HTTPS: `/convert` only rewrites the
/// apiVersion (lossless between the test's two identical versions);
/// `/lossy` drops `spec.size` on the way to v2; `/mangle` upper-cases
/// `spec.password` on the way to v2; `/fail` refuses, quoting
/// `spec.password` in a long message. It runs on a thread of its own, as
/// the test blocks its runtime while the plugin runs.
fn conversion_webhook(addr: IpAddr, cert_pem: String, key_pem: String) -> Hook {
    let (tx, rx) = std::sync::mpsc::channel();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(serve_conversions(addr, cert_pem, key_pem, tx, counted));
    });
    Hook {
        port: rx.recv().expect("the webhook listens"),
        connections,
    }
}

async fn serve_conversions(
    addr: IpAddr,
    cert_pem: String,
    key_pem: String,
    listening: std::sync::mpsc::Sender<u16>,
    connections: Arc<AtomicUsize>,
) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .expect("certificate");
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocols")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("server config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind((addr, 0))
        .await
        .expect("listen");
    let port = listener.local_addr().expect("address").port();
    let _ = listening.send(port);
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        connections.fetch_add(1, Ordering::SeqCst);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 8192];
            // Headers, then Content-Length bytes of body.
            let (head_end, length) = loop {
                let Ok(n) = tls.read(&mut chunk).await else {
                    return;
                };
                if n == 0 {
                    return;
                }
                buffer.extend_from_slice(&chunk[..n]);
                if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    break (end + 4, length);
                }
            };
            while buffer.len() < head_end + length {
                let Ok(n) = tls.read(&mut chunk).await else {
                    return;
                };
                if n == 0 {
                    return;
                }
                buffer.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buffer[..head_end]).to_string();
            let path = head.split(' ').nth(1).unwrap_or_default().to_string();
            let review: Value =
                serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or_default();
            let desired = review["request"]["desiredAPIVersion"].clone();
            let to_v2 = desired.as_str().is_some_and(|d| d.ends_with("/v2"));
            let objects: Vec<Value> = review["request"]["objects"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| {
                    let mut o = o.clone();
                    o["apiVersion"] = desired.clone();
                    if let (true, Some(spec)) = (to_v2, o["spec"].as_object_mut()) {
                        match path.as_str() {
                            "/lossy" => {
                                spec.remove("size");
                            }
                            "/mangle" => {
                                let upper = spec["password"].as_str().map(str::to_uppercase);
                                spec.insert("password".into(), json!(upper));
                            }
                            _ => {}
                        }
                    }
                    o
                })
                .collect();
            let result = if path == "/fail" {
                let object = &review["request"]["objects"][0];
                json!({"status": "Failure", "message": format!(
                    "cannot convert {}: spec.password {} is not allowed; {}",
                    object["metadata"]["name"].as_str().unwrap_or_default(),
                    object["spec"]["password"].as_str().unwrap_or_default(),
                    "more detail ".repeat(100)
                )})
            } else {
                json!({"status": "Success"})
            };
            let objects = if path == "/fail" { Vec::new() } else { objects };
            let body = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": review["request"]["uid"], "result": result,
                                 "convertedObjects": objects}})
            .to_string();
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tls.write_all(answer.as_bytes()).await;
            let _ = tls.shutdown().await;
        });
    }
}

/// Service `name` backed by a pod at `ip:port` that the API server's proxy
/// accepts: a Pod whose status names the IP, and both the Endpoints (what
/// the proxy of 1.34 and older reads) and an EndpointSlice (1.35 and on).
async fn proxied_service(client: &Client, name: &str, ip: IpAddr, port: u16) {
    service(client, name, port).await;
    let pod = format!("{name}-pod");
    put(
        client,
        "pods",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": NS},
               "spec": {"containers": [{"name": "hook", "image": "example.invalid/hook"}]}}),
    )
    .await;
    let pods = api(client, "", "v1", "Pod", "pods");
    pods.patch_status(
        &pod,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"status": {"podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}]}}),
        ),
    )
    .await
    .expect("pod status");
    put(
        client,
        "endpoints",
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": name, "namespace": NS},
               "subsets": [{"addresses": [{"ip": ip.to_string(),
                                           "targetRef": {"kind": "Pod", "namespace": NS, "name": pod}}],
                            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
    )
    .await;
    endpoint_slice(client, name, &ip.to_string(), port, true, Some(&pod)).await;
}

/// The address the test webhooks listen on, or `None` (with a notice, and a
/// failure in CI) when this machine has no non-loopback IPv4 address.
fn probe_address() -> Option<IpAddr> {
    let found = machine_address().filter(IpAddr::is_ipv4);
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "no non-loopback IPv4 address for the webhook the proxy must reach"
        );
        eprintln!("notice: no non-loopback IPv4 address; the conversion probe is not tested");
    }
    found
}

/// A test webhook behind the proxied Service `name`.
async fn proxied_hook(client: &Client, name: &str, ca: &TestCa, ip: IpAddr) -> Hook {
    let (cert, key) = ca.serving(&[&format!("{name}.{NS}.svc")], &[ip]);
    let hook = conversion_webhook(ip, cert, key);
    proxied_service(client, name, ip, hook.port).await;
    hook
}

#[tokio::test]
async fn probe_conversion_sends_a_stored_object_there_and_back() {
    let Some(plane) = control_plane() else { return };
    let Some(ip) = probe_address() else { return };
    let client = admin(plane).await;
    let name = "convprobe-hook";
    let ca = TestCa::new();
    let hook = proxied_hook(&client, name, &ca, ip).await;
    // The cluster's CRD already converts through the webhook, and stores
    // one object.
    let good = webhook_crd("convprobes", name, 443, "/convert", &ca.bundle());
    install(&client, &good).await;
    create_objects(
        &client,
        "convprobes",
        "v1",
        vec![(
            NS.to_string(),
            "first".to_string(),
            json!({"size": 3, "mode": "fast"}),
        )],
    )
    .await;

    let (out, found) = check(&plane.admin_kubeconfig, &good, &["--probe-conversion"]);
    assert_eq!(found, Vec::<String>::new(), "{}", out.stderr);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    // v1 -> v2, then back.
    assert_eq!(hook.connections(), 2);

    let lossy = webhook_crd("convprobes", name, 443, "/lossy", &ca.bundle());
    install(&client, &lossy).await;
    let (out, found) = check(&plane.admin_kubeconfig, &lossy, &["--probe-conversion"]);
    one_error(
        &found,
        &[
            "conversion webhook svc conversion-readiness/convprobe-hook:443 does not round-trip \
         Convprobe conversion-readiness/first (v1 -> v2 -> v1): .spec.size is lost: a client",
        ],
    );
    assert_eq!(out.code, 1, "{}", out.stderr);

    // Without the flag, nothing is sent.
    let sent = hook.connections();
    let (_, found) = check(&plane.admin_kubeconfig, &lossy, &[]);
    assert_eq!(found, Vec::<String>::new());
    assert_eq!(hook.connections(), sent);
}

#[tokio::test]
async fn a_manifest_naming_another_webhook_is_not_probed() {
    let Some(plane) = control_plane() else { return };
    let Some(ip) = probe_address() else { return };
    let client = admin(plane).await;
    let ca = TestCa::new();
    let own = proxied_hook(&client, "convredirect-hook", &ca, ip).await;
    let other = proxied_hook(&client, "convredirect-other", &ca, ip).await;
    let live = webhook_crd(
        "convredirects",
        "convredirect-hook",
        443,
        "/convert",
        &ca.bundle(),
    );
    install(&client, &live).await;
    create_objects(
        &client,
        "convredirects",
        "v1",
        vec![(
            NS.to_string(),
            "first".to_string(),
            json!({"size": 3, "password": SECRET}),
        )],
    )
    .await;
    let skipped = |found: &[String], target: &str, service: &str| {
        assert_eq!(found.len(), 1, "{found:#?}");
        for part in [
            &format!(
                "warning: conversion webhook {target} was not probed: the live CRD converts \
                 through svc conversion-readiness/convredirect-hook:443 at /convert, and \
                 --probe-conversion sends a stored object only to the webhook the live CRD \
                 already uses"
            ),
            &format!("--probe-conversion-service {service}"),
        ] {
            assert!(
                found[0].contains(part.as_str()),
                "{part:?} not in {}",
                found[0]
            );
        }
    };

    // Another Service: nothing is sent to it (nor to the live one).
    let elsewhere = webhook_crd(
        "convredirects",
        "convredirect-other",
        443,
        "/convert",
        &ca.bundle(),
    );
    let (out, found) = check(&plane.admin_kubeconfig, &elsewhere, &["--probe-conversion"]);
    assert_eq!((own.connections(), other.connections()), (0, 0));
    skipped(
        &found,
        "svc conversion-readiness/convredirect-other:443 at /convert",
        "conversion-readiness/convredirect-other",
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    // The live CRD's Service at another path is another webhook too.
    let other_path = webhook_crd(
        "convredirects",
        "convredirect-hook",
        443,
        "/lossy",
        &ca.bundle(),
    );
    let (_, found) = check(
        &plane.admin_kubeconfig,
        &other_path,
        &["--probe-conversion"],
    );
    skipped(
        &found,
        "svc conversion-readiness/convredirect-hook:443 at /lossy",
        "conversion-readiness/convredirect-hook",
    );
    assert_eq!(own.connections(), 0);

    // Allowing another Service by name does not allow this one.
    let (_, found) = check(
        &plane.admin_kubeconfig,
        &elsewhere,
        &[
            "--probe-conversion",
            "--probe-conversion-service",
            "conversion-readiness/convredirect-hook",
        ],
    );
    skipped(
        &found,
        "svc conversion-readiness/convredirect-other:443 at /convert",
        "conversion-readiness/convredirect-other",
    );
    assert_eq!(other.connections(), 0);

    // Named by the user, it is probed.
    let (out, found) = check(
        &plane.admin_kubeconfig,
        &elsewhere,
        &[
            "--probe-conversion",
            "--probe-conversion-service",
            "conversion-readiness/convredirect-other",
        ],
    );
    assert_eq!(found, Vec::<String>::new(), "{}", out.stderr);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!((own.connections(), other.connections()), (0, 2));

    // The flag means nothing without --probe-conversion.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), "crd.json", &elsewhere);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let out = run(
        &[
            "apply-check",
            "-f",
            &path,
            "--kubeconfig",
            &kubeconfig,
            "--probe-conversion-service",
            "conversion-readiness/convredirect-other",
        ],
        None,
    );
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("--probe-conversion"), "{}", out.stderr);
    assert_eq!(other.connections(), 2);
}

/// Whether `text` holds the stored secret, in any case.
fn leaks(text: &str) -> bool {
    text.to_ascii_lowercase().contains(SECRET)
}

#[tokio::test]
async fn a_probe_that_fails_or_differs_prints_no_stored_value() {
    let Some(plane) = control_plane() else { return };
    let Some(ip) = probe_address() else { return };
    let client = admin(plane).await;
    let name = "convleak-hook";
    let ca = TestCa::new();
    let hook = proxied_hook(&client, name, &ca, ip).await;
    let cases = [
        (
            "/mangle",
            "does not round-trip Convleak conversion-readiness/first (v1 -> v2 -> v1): \
             .spec.password comes back changed: a client",
        ),
        (
            "/fail",
            "fails to convert Convleak conversion-readiness/first from v1 to v2: \
             response.result.status is \"Failure\", not \"Success\": cannot convert first: \
             spec.password <redacted> is not allowed; more detail",
        ),
    ];
    for (i, (path, expected)) in cases.into_iter().enumerate() {
        let crd = webhook_crd("convleaks", name, 443, path, &ca.bundle());
        install(&client, &crd).await;
        if i == 0 {
            create_objects(
                &client,
                "convleaks",
                "v1",
                vec![(
                    NS.to_string(),
                    "first".to_string(),
                    json!({"size": 3, "password": SECRET}),
                )],
            )
            .await;
        }
        let sent = hook.connections();
        let (out, found) = check(&plane.admin_kubeconfig, &crd, &["--probe-conversion"]);
        assert!(hook.connections() > sent, "{path}: nothing was sent");
        assert!(!leaks(&out.stdout), "{path}: {}", out.stdout);
        assert!(!leaks(&out.stderr), "{path}: {}", out.stderr);
        one_error(&found, &[expected]);
        // The webhook's words are cut short.
        assert!(found[0].len() < 700, "{path}: {}", found[0]);
        assert_eq!(out.code, 1, "{}", out.stderr);

        // The terminal's table too.
        let dir = tempfile::tempdir().expect("tempdir");
        let manifest = write_manifest(dir.path(), "crd.json", &crd);
        let kubeconfig = plane.admin_kubeconfig.display().to_string();
        let out = run(
            &[
                "apply-check",
                "-f",
                &manifest,
                "--kubeconfig",
                &kubeconfig,
                "--probe-conversion",
            ],
            None,
        );
        assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
        assert!(
            out.stdout.contains("conversionWebhookNotReady"),
            "{}",
            out.stdout
        );
        assert!(!leaks(&out.stdout), "{path}: {}", out.stdout);
        assert!(!leaks(&out.stderr), "{path}: {}", out.stderr);
    }
}

#[tokio::test]
async fn a_secret_the_live_crd_does_not_name_is_not_read() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let name = "convinject-hook";
    service(&client, name, 9443).await;
    endpoint_slice(&client, name, "10.0.1.9", 9443, true, None).await;
    let (ca, stranger) = (TestCa::new(), TestCa::new());
    let dns = format!("{name}.{NS}.svc");
    tls_secret(&client, "convinject-tls", &ca.serving(&[&dns], &[]).0).await;
    // A certificate the caBundle refuses: reading it would be an error.
    tls_secret(
        &client,
        "convinject-other",
        &stranger.serving(&[&dns], &[]).0,
    )
    .await;
    let annotated = |secret: &str| {
        let mut crd = webhook_crd("convinjects", name, 443, "/convert", &ca.bundle());
        crd["metadata"]["annotations"] =
            json!({"cert-manager.io/inject-ca-from-secret": format!("{NS}/{secret}")});
        crd
    };
    let live = annotated("convinject-tls");

    // Before the CRD exists, no Secret is read.
    let (out, found) = check(&plane.admin_kubeconfig, &live, &["-v", "6"]);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "info: the serving certificate of conversion webhook \
             svc conversion-readiness/convinject-hook:443 was not checked against the caBundle: \
             the manifest takes it from Secret conversion-readiness/convinject-tls \
             (cert-manager.io/inject-ca-from-secret) and the cluster has no such CRD yet"
        ),
        "{}",
        found[0]
    );
    assert!(!out.stderr.contains("/secrets/"), "{}", out.stderr);

    install(&client, &live).await;
    let (out, found) = check(
        &plane.admin_kubeconfig,
        &annotated("convinject-other"),
        &["-v", "6"],
    );
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with(
            "info: the serving certificate of conversion webhook \
             svc conversion-readiness/convinject-hook:443 was not checked against the caBundle: \
             the manifest takes it from Secret conversion-readiness/convinject-other \
             (cert-manager.io/inject-ca-from-secret) and the live CRD takes it from Secret \
             conversion-readiness/convinject-tls (cert-manager.io/inject-ca-from-secret)"
        ),
        "{}",
        found[0]
    );
    assert!(!out.stderr.contains("/secrets/"), "{}", out.stderr);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    // The live CRD's own Secret is read, and checked.
    let (out, found) = check(&plane.admin_kubeconfig, &live, &["-v", "6"]);
    assert_eq!(found, Vec::<String>::new());
    assert!(
        out.stderr
            .contains("/api/v1/namespaces/conversion-readiness/secrets/convinject-tls"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("secrets/convinject-other"),
        "{}",
        out.stderr
    );
    tls_secret(&client, "convinject-tls", &stranger.serving(&[&dns], &[]).0).await;
    let (_, found) = check(&plane.admin_kubeconfig, &live, &[]);
    one_error(
        &found,
        &[
            "serves a certificate its caBundle refuses (tls.crt of Secret \
             conversion-readiness/convinject-tls",
            BREAKS,
        ],
    );
}
