//! `conversionWebhookNotReady`: whether the conversion webhook a CRD names
//! will answer the API server once the CRD is applied.
//!
//! With `conversion: Webhook`, every read or write of an object through a
//! version other than the one it is stored in goes through the webhook; when
//! the API server cannot reach it (no Service, no port, no ready endpoint)
//! or cannot trust it (a `caBundle` that does not parse, has expired or did
//! not sign the serving certificate), those requests fail, and so do the
//! controllers, Argo CD and Flux that make them. The CRD is judged as the
//! dry run says it would be stored, so a `caBundle` cert-manager's cainjector
//! keeps in the live CRD counts. `--probe-conversion` also sends one stored
//! object to the webhook, through the API server's service proxy, to every
//! served version and back.
//!
//! The manifest is untrusted input (a pull request, a chart), so it chooses
//! neither where a stored object goes nor which Secret is read: the probe
//! sends only to the webhook the live CRD already converts through (the API
//! server sends it these objects already) or to a Service the user named
//! (`--probe-conversion-service`), and the serving certificate is read only
//! from the Secret the live CRD's own cert-manager annotation leads to.
//! Messages name the object and the field paths, never a stored value.

use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine as _;
use rustls::pki_types::UnixTime;
use serde_json::{Value, json};

use super::ProbeService;
use crate::cluster::conversion::{Read, Review};
use crate::cluster::{ClusterError, Connection, tls};
use crate::compare::{Check, Finding, Severity};
use crate::crd::Crd;
use crate::crd_validation::ca_bundle;

/// cert-manager's cainjector copies the CA of this Certificate (`ns/name`)
/// into the CRD's `caBundle`.
const INJECT_FROM: &str = "cert-manager.io/inject-ca-from";
/// ... or that of this Secret (`ns/name`).
const INJECT_FROM_SECRET: &str = "cert-manager.io/inject-ca-from-secret";

/// The webhook a CRD names, as the API server will call it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Webhook {
    /// `clientConfig.service`, or `None` with a `url`.
    service: Option<Service>,
    /// `clientConfig.url`.
    url: Option<String>,
    /// `clientConfig.caBundle`, base64 as written.
    ca_bundle: Option<String>,
    /// Where cert-manager injects the caBundle from.
    injection: Option<Injection>,
    /// `conversionReviewVersions`, in order of preference.
    review_versions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
struct Service {
    namespace: String,
    name: String,
    /// 443 when not given, as the API server defaults it.
    port: i32,
    path: String,
}

impl Service {
    /// The name the API server calls it by, which its certificate must hold.
    fn dns_name(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }

    fn label(&self) -> String {
        format!("svc {}/{}:{}", self.namespace, self.name, self.port)
    }

    /// The label with the path, where two webhooks may differ in it alone.
    fn label_at(&self) -> String {
        match self.path.as_str() {
            "" => self.label(),
            path => format!("{} at {path}", self.label()),
        }
    }

    /// Whether a review sent to `other` goes where one sent to `self` goes:
    /// the proxy path drops the leading `/` (`conversion_review`).
    fn same_destination(&self, other: &Service) -> bool {
        self.namespace == other.namespace
            && self.name == other.name
            && self.port == other.port
            && self.path.trim_start_matches('/') == other.path.trim_start_matches('/')
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Injection {
    /// `inject-ca-from`: a Certificate, whose `spec.secretName` holds the
    /// serving certificate.
    Certificate(String, String),
    /// `inject-ca-from-secret`: the Secret itself.
    Secret(String, String),
}

impl Injection {
    fn describe(&self) -> String {
        match self {
            Injection::Certificate(ns, name) => format!("Certificate {ns}/{name}"),
            Injection::Secret(ns, name) => format!("Secret {ns}/{name}"),
        }
    }

    fn annotation(&self) -> &'static str {
        match self {
            Injection::Certificate(..) => INJECT_FROM,
            Injection::Secret(..) => INJECT_FROM_SECRET,
        }
    }
}

impl Webhook {
    /// How messages name it: `svc ns/name:port`, or its URL.
    fn target(&self) -> String {
        self.service
            .as_ref()
            .map(Service::label)
            .or_else(|| self.url.clone())
            .unwrap_or_default()
    }
}

/// `ns/name` as the annotations write it.
fn namespaced(text: &str) -> Option<(String, String)> {
    let (ns, name) = text.trim().split_once('/')?;
    (!ns.is_empty() && !name.is_empty()).then(|| (ns.to_string(), name.to_string()))
}

/// The conversion webhook of `crd` (a CRD as JSON), when it matters: the
/// strategy is `Webhook` and there are at least two versions to convert
/// between.
pub(crate) fn webhook_of(crd: &Value) -> Option<Webhook> {
    if crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .is_none_or(|v| v.len() < 2)
    {
        return None;
    }
    configured(crd)
}

/// The conversion webhook `crd` names, whatever its versions: the live
/// CRD's is where the API server sends its objects, even while it has only
/// one version to convert.
fn configured(crd: &Value) -> Option<Webhook> {
    let conversion = crd.pointer("/spec/conversion")?;
    if conversion["strategy"] != "Webhook" {
        return None;
    }
    let config = &conversion["webhook"]["clientConfig"];
    let text = |v: &Value| {
        v.as_str()
            .filter(|s| !s.trim().is_empty())
            .map(String::from)
    };
    let service = config["service"].as_object().map(|s| Service {
        namespace: s.get("namespace").and_then(text).unwrap_or_default(),
        name: s.get("name").and_then(text).unwrap_or_default(),
        port: s
            .get("port")
            .and_then(Value::as_i64)
            .and_then(|p| i32::try_from(p).ok())
            .unwrap_or(443),
        path: s.get("path").and_then(text).unwrap_or_default(),
    });
    Some(Webhook {
        service,
        url: text(&config["url"]),
        ca_bundle: text(&config["caBundle"]),
        injection: injection_of(crd),
        review_versions: conversion["webhook"]["conversionReviewVersions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
    })
}

/// Where cert-manager's annotations on `crd` say its caBundle comes from.
fn injection_of(crd: &Value) -> Option<Injection> {
    let annotations = &crd["metadata"]["annotations"];
    annotations[INJECT_FROM]
        .as_str()
        .and_then(namespaced)
        .map(|(ns, n)| Injection::Certificate(ns, n))
        .or_else(|| {
            annotations[INJECT_FROM_SECRET]
                .as_str()
                .and_then(namespaced)
                .map(|(ns, n)| Injection::Secret(ns, n))
        })
}

/// What a webhook that does not answer breaks, for `crd`: "objects stored
/// as v1 cannot be read as v2, v1beta1".
fn what_breaks(crd: &Crd, live: Option<&Crd>) -> String {
    let mut stored: Vec<String> = live
        .and_then(|l| l.stored_versions.clone())
        .unwrap_or_default();
    let storage = crd.storage_version().name().to_string();
    if !stored.contains(&storage) {
        stored.push(storage);
    }
    let others: Vec<&str> = crd
        .served_versions()
        .map(|v| v.name())
        .filter(|v| !stored.iter().any(|s| s == v))
        .collect();
    let others = if others.is_empty() {
        "another version".to_string()
    } else {
        others.join(", ")
    };
    format!(
        "every read or write of a {} through a version other than the stored one fails (objects \
         stored as {} cannot be read as {others})",
        crd.spec.names.kind,
        stored.join(", ")
    )
}

/// The findings on the conversion webhook of `crd`, judged as `stored` (the
/// CRD the dry run would store); nothing when it has none that matters.
/// `probe` is `--probe-conversion`, with the Services the user allowed
/// besides the live CRD's own webhook.
pub(crate) async fn findings(
    conn: &Connection,
    crd: &Crd,
    stored: &Value,
    live: Option<&Crd>,
    probe: Option<&[ProbeService]>,
) -> Result<Vec<Finding>, ClusterError> {
    let Some(webhook) = webhook_of(stored) else {
        return Ok(Vec::new());
    };
    let breaks = what_breaks(crd, live);
    let mut out = Vec::new();
    // A webhook already known unreachable is not probed: the probe would
    // only fail again on the same cause.
    let mut reachable = true;
    if let Some(service) = &webhook.service
        && let Some(f) = reachability(conn, service, &breaks).await?
    {
        reachable = f.severity < Severity::Error;
        out.push(f);
    }
    let now = now();
    let server_name = match (&webhook.service, &webhook.url) {
        (Some(s), _) => Some(s.dns_name()),
        (None, Some(url)) => host_of(url),
        (None, None) => None,
    };
    match bundle(&webhook, now) {
        Err(problem) => out.push(problem.finding(&webhook, &breaks)),
        Ok(None) => {}
        Ok(Some(anchors)) => {
            let target = webhook.target();
            if let (Some(injection), Some(name)) = (&webhook.injection, &server_name) {
                // The manifest's annotation would choose which Secret is
                // read; the live CRD's is the cluster's own configuration.
                let live_injection = live.and_then(|l| injection_of(&l.manifest));
                if live_injection.as_ref() == Some(injection) {
                    if let Some(f) =
                        serving(conn, &target, injection, &anchors, name, now, &breaks).await?
                    {
                        out.push(f);
                    }
                } else {
                    out.push(not_read(&target, injection, live, live_injection.as_ref()));
                }
            }
        }
    }
    if let Some(allowed) = probe
        && reachable
    {
        match &webhook.service {
            Some(service) => {
                out.extend(probe_webhook(conn, service, &webhook, crd, live, allowed).await?);
            }
            None => out.push(Finding::new(
                Check::ConversionWebhookNotReady,
                Severity::Info,
                format!(
                    "conversion webhook {} was not probed: --probe-conversion reaches webhooks \
                     through the API server's service proxy, which a URL is not behind",
                    webhook.url.as_deref().unwrap_or_default()
                ),
            )),
        }
    }
    Ok(out)
}

/// A reachability problem, or `None` when the Service has a ready endpoint
/// on the webhook's port.
async fn reachability(
    conn: &Connection,
    service: &Service,
    breaks: &str,
) -> Result<Option<Finding>, ClusterError> {
    let label = service.label();
    let error = |what: String, fix: &str| {
        Some(Finding::new(
            Check::ConversionWebhookNotReady,
            Severity::Error,
            format!(
                "conversion webhook {label} {what}: the API server cannot reach it, so {breaks}. {fix}"
            ),
        ))
    };
    let found = match conn.service(&service.namespace, &service.name).await? {
        Read::Found(s) => s,
        Read::Missing => {
            return Ok(error(
                format!(
                    "does not exist (no Service {} in namespace {})",
                    service.name, service.namespace
                ),
                "Install the webhook (its Deployment and Service) before applying this CRD",
            ));
        }
        Read::Forbidden(message) => return Ok(Some(not_checked(service, "Service", &message))),
    };
    if found["spec"]["type"] == "ExternalName" {
        return Ok(None);
    }
    let ports: Vec<&Value> = found["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    let Some(port) = ports
        .iter()
        .find(|p| p["port"].as_i64() == Some(i64::from(service.port)))
    else {
        let has: Vec<String> = ports.iter().map(|p| p["port"].to_string()).collect();
        let has = if has.is_empty() {
            "none".to_string()
        } else {
            has.join(", ")
        };
        return Ok(error(
            format!("names a port the Service does not have (its ports: {has})"),
            "Set clientConfig.service.port to the Service's port",
        ));
    };
    let port_name = port["name"].as_str().unwrap_or_default();
    let slices = match conn
        .endpoint_slices(&service.namespace, &service.name)
        .await?
    {
        Read::Found(slices) => slices,
        Read::Missing => Vec::new(),
        Read::Forbidden(message) => {
            return Ok(Some(not_checked(service, "EndpointSlices", &message)));
        }
    };
    let (total, ready) = endpoints(&slices, port_name);
    if ready > 0 {
        return Ok(None);
    }
    let what = if slices.is_empty() {
        "has no ready endpoint (the Service has no EndpointSlice: no pod matches its selector)"
            .to_string()
    } else if total == 0 {
        format!("has no ready endpoint (no endpoint serves the Service's port {port_name:?})")
    } else {
        format!(
            "has no ready endpoint ({} on the port, none ready)",
            crate::text::plural(total, "endpoint", "endpoints")
        )
    };
    Ok(error(
        what,
        "Wait until the webhook's pods are ready (or fix its Deployment) before applying this CRD",
    ))
}

/// Endpoints on the port named `port_name` in `slices`, and those ready
/// (`conditions.ready` unset counts as ready, as the API says).
fn endpoints(slices: &[Value], port_name: &str) -> (usize, usize) {
    let (mut total, mut ready) = (0, 0);
    for slice in slices {
        let has_port = slice["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|p| p["name"].as_str().unwrap_or_default() == port_name);
        if !has_port {
            continue;
        }
        for endpoint in slice["endpoints"].as_array().into_iter().flatten() {
            total += 1;
            if endpoint["conditions"]["ready"] != false {
                ready += 1;
            }
        }
    }
    (total, ready)
}

/// A read the user may not make: what was not checked, as a warning.
fn not_checked(service: &Service, what: &str, message: &str) -> Finding {
    Finding::new(
        Check::ConversionWebhookNotReady,
        Severity::Warning,
        format!(
            "conversion webhook {} could not be checked: reading its {what} is forbidden \
             ({message}). Its readiness is unknown: run the check as a user who may get services \
             and list endpointslices in {}, or look at them by hand",
            service.label(),
            service.namespace
        ),
    )
}

/// What is wrong with a caBundle.
#[derive(Debug, Clone, PartialEq)]
enum BundleProblem {
    /// None given where the API server needs one; `injected` when
    /// cert-manager is to inject it.
    Missing { injected: bool },
    /// It does not decode, parse or hold a current certificate.
    Unusable(String),
}

impl BundleProblem {
    fn finding(&self, webhook: &Webhook, breaks: &str) -> Finding {
        let target = webhook.target();
        match self {
            BundleProblem::Missing { injected: true } => Finding::new(
                Check::ConversionWebhookNotReady,
                Severity::Warning,
                format!(
                    "conversion webhook {target} has no caBundle yet: cert-manager's cainjector is \
                     to inject it from {}, and until it does {breaks}. Make sure cert-manager runs \
                     and the {} is issued",
                    webhook
                        .injection
                        .as_ref()
                        .map(Injection::describe)
                        .unwrap_or_default(),
                    webhook
                        .injection
                        .as_ref()
                        .map_or("certificate", |i| match i {
                            Injection::Certificate(..) => "Certificate",
                            Injection::Secret(..) => "Secret",
                        })
                ),
            ),
            BundleProblem::Missing { injected: false } => Finding::new(
                Check::ConversionWebhookNotReady,
                Severity::Error,
                format!(
                    "conversion webhook {target} has no caBundle: the API server cannot trust the \
                     webhook's certificate, so {breaks}. Set clientConfig.caBundle to the base64 \
                     of the CA's PEM, or let cert-manager inject it (annotation {INJECT_FROM})"
                ),
            ),
            BundleProblem::Unusable(why) => Finding::new(
                Check::ConversionWebhookNotReady,
                Severity::Error,
                format!(
                    "conversion webhook {target} has an unusable caBundle ({why}): the API server \
                     cannot trust the webhook's certificate, so {breaks}. Set \
                     clientConfig.caBundle to the base64 of the PEM of the CA that signed the \
                     serving certificate"
                ),
            ),
        }
    }
}

/// The caBundle's certificates (DER) that can verify a server now, `None`
/// when there is no caBundle and none is needed (a URL trusted by the
/// system's roots).
fn bundle(webhook: &Webhook, now: u64) -> Result<Option<Vec<Vec<u8>>>, BundleProblem> {
    let Some(text) = &webhook.ca_bundle else {
        if webhook.service.is_none() {
            return Ok(None);
        }
        return Err(BundleProblem::Missing {
            injected: webhook.injection.is_some(),
        });
    };
    anchors(text, now)
        .map(Some)
        .map_err(BundleProblem::Unusable)
}

/// The certificates of a caBundle (base64 of PEM) that parse and are
/// valid at `now`, or why there are none.
fn anchors(text: &str, now: u64) -> Result<Vec<Vec<u8>>, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    if let Some(why) = ca_bundle::ca_bundle_error(&pem) {
        return Err(why);
    }
    let mut expired = None;
    let mut current = Vec::new();
    for der in ca_bundle::certificate_blocks(&pem) {
        let Some((not_before, not_after)) = tls::validity(&der) else {
            continue;
        };
        if not_before <= now && now <= not_after {
            current.push(der);
        } else if not_after < now {
            expired = expired.max(Some(not_after));
        }
    }
    if current.is_empty() {
        return Err(match expired {
            Some(at) => format!("its certificate expired on {}", date(at)),
            None => "no certificate in it is valid now".to_string(),
        });
    }
    Ok(current)
}

/// `2026-11-28`, for a time in seconds since the epoch.
fn date(secs: u64) -> String {
    chrono::DateTime::from_timestamp(i64::try_from(secs).unwrap_or(i64::MAX), 0)
        .map_or_else(|| secs.to_string(), |t| t.format("%Y-%m-%d").to_string())
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The host of a webhook URL, which its certificate must name.
fn host_of(url: &str) -> Option<String> {
    let rest = url.strip_prefix("https://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next()?,
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then(|| host.to_string())
}

/// The serving certificate was not read, as the manifest names another
/// source than the live CRD: a manifest does not choose which Secret
/// crd-safety reads.
fn not_read(
    target: &str,
    injection: &Injection,
    live: Option<&Crd>,
    live_injection: Option<&Injection>,
) -> Finding {
    let live_has = match (live, live_injection) {
        (None, _) => "the cluster has no such CRD yet".to_string(),
        (Some(_), None) => "the live CRD has no cert-manager annotation".to_string(),
        (Some(_), Some(other)) => format!(
            "the live CRD takes it from {} ({})",
            other.describe(),
            other.annotation()
        ),
    };
    Finding::new(
        Check::ConversionWebhookNotReady,
        Severity::Info,
        format!(
            "the serving certificate of conversion webhook {target} was not checked against the \
             caBundle: the manifest takes it from {} ({}) and {live_has}, and crd-safety reads \
             only the Secret the live CRD's own annotation leads to. Run apply-check again once \
             the CRD is applied",
            injection.describe(),
            injection.annotation()
        ),
    )
}

/// The serving certificate cert-manager keeps for the webhook, checked
/// against `anchors` and `server_name`; a warning when it cannot be read.
async fn serving(
    conn: &Connection,
    target: &str,
    injection: &Injection,
    anchors: &[Vec<u8>],
    server_name: &str,
    now: u64,
    breaks: &str,
) -> Result<Option<Finding>, ClusterError> {
    let unread = |why: String| {
        Some(Finding::new(
            Check::ConversionWebhookNotReady,
            Severity::Warning,
            format!(
                "the serving certificate of conversion webhook {target} could not be checked \
                 against the caBundle: {why}"
            ),
        ))
    };
    let (ns, secret) = match injection {
        Injection::Secret(ns, name) => (ns.clone(), name.clone()),
        Injection::Certificate(ns, name) => match conn.certificate_secret_name(ns, name).await? {
            Read::Found(Some(secret)) => (ns.clone(), secret),
            Read::Found(None) => {
                return Ok(unread(format!(
                    "Certificate {ns}/{name} ({INJECT_FROM}) has no spec.secretName"
                )));
            }
            Read::Missing => {
                return Ok(unread(format!(
                    "Certificate {ns}/{name} ({INJECT_FROM}) does not exist (or cert-manager \
                         is not installed)"
                )));
            }
            Read::Forbidden(message) => {
                return Ok(unread(format!(
                    "reading Certificate {ns}/{name} is forbidden ({message})"
                )));
            }
        },
    };
    let encoded = match conn.secret_certificate(&ns, &secret).await? {
        Read::Found(Some(crt)) => crt,
        Read::Found(None) => return Ok(unread(format!("Secret {ns}/{secret} has no tls.crt"))),
        Read::Missing => {
            return Ok(unread(format!(
                "Secret {ns}/{secret} does not exist (the certificate is not issued yet)"
            )));
        }
        Read::Forbidden(message) => {
            return Ok(unread(format!(
                "reading Secret {ns}/{secret} is forbidden ({message})"
            )));
        }
    };
    let chain = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .map(|pem| ca_bundle::certificate_blocks(&pem))
        .unwrap_or_default();
    if chain.is_empty() {
        return Ok(unread(format!(
            "tls.crt of Secret {ns}/{secret} holds no PEM certificate"
        )));
    }
    let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(now));
    Ok(tls::verify_serving(&chain, anchors, server_name, at)
        .err()
        .map(|why| {
            Finding::new(
                Check::ConversionWebhookNotReady,
                Severity::Error,
                format!(
                    "conversion webhook {target} serves a certificate its caBundle refuses \
                     (tls.crt of Secret {ns}/{secret}: {why}): the API server cannot trust the \
                     webhook, so {breaks}. Set the caBundle to the CA that issued the \
                     certificate (cert-manager's cainjector does it from {}), and issue it for \
                     {server_name}",
                    injection.describe()
                ),
            )
        }))
}

/// A request id for a review, unique within this process and unlikely to
/// repeat across processes.
fn review_uid() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let hex = format!(
        "{:016x}{:016x}",
        nanos as u64,
        (u64::from(std::process::id()) << 32) | n
    );
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// A `ConversionReview` request of `object` to `desired` (`group/version`).
fn review(review_version: &str, uid: &str, desired: &str, object: &Value) -> Value {
    json!({
        "apiVersion": format!("apiextensions.k8s.io/{review_version}"),
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": [object]},
    })
}

/// At most this many characters of a webhook's (or the proxy's) own words
/// are quoted: enough to say what failed, while a webhook that echoes what
/// it was sent cannot pour the object into a CI log.
const QUOTED_CHARS: usize = 200;

/// A message is read this far at most before the stored values are taken
/// out of it, which bounds the work on a webhook that answers megabytes.
const READ_BYTES: usize = 64 << 10;

/// What stands in for a stored value in a quoted message.
const REDACTED: &str = "<redacted>";

/// The strings a webhook's words must not carry into the report: those of
/// the objects the probe sent and got back, 4 characters or more (shorter
/// ones would blank out ordinary words), apart from the apiVersion, kind,
/// name and namespace the messages name anyway; longest first, so that no
/// part of one is left behind by a shorter one.
struct Hidden(Vec<String>);

impl Hidden {
    fn of(objects: &[&Value]) -> Hidden {
        fn walk(value: &Value, out: &mut std::collections::BTreeSet<String>) {
            match value {
                Value::String(s) if s.chars().count() >= 4 => {
                    out.insert(s.clone());
                }
                Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
                Value::Object(map) => map.values().for_each(|v| walk(v, out)),
                _ => {}
            }
        }
        let mut found = std::collections::BTreeSet::new();
        for object in objects {
            walk(object, &mut found);
        }
        for object in objects {
            for named in [
                &object["apiVersion"],
                &object["kind"],
                &object["metadata"]["name"],
                &object["metadata"]["namespace"],
            ] {
                if let Some(s) = named.as_str() {
                    found.remove(s);
                }
            }
        }
        let mut strings: Vec<String> = found.into_iter().collect();
        strings.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Hidden(strings)
    }

    /// `message` fit to quote: every hidden string replaced (ASCII case
    /// ignored, as a webhook may change it), on one line, cut short.
    fn quote(&self, message: &str) -> String {
        let mut end = message.len().min(READ_BYTES);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        let mut text = message[..end].to_string();
        for value in &self.0 {
            text = redact(&text, value);
        }
        let flat: Vec<char> = text
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let mut out: String = flat.iter().take(QUOTED_CHARS).collect();
        if flat.len() > QUOTED_CHARS || end < message.len() {
            out.push_str("...");
        }
        out
    }
}

/// `text` with every occurrence of `value` (ASCII case ignored) replaced.
/// ASCII lowercasing keeps every byte where it was, so the offsets found in
/// the lowered text hold in `text`.
fn redact(text: &str, value: &str) -> String {
    let (lower, needle) = (text.to_ascii_lowercase(), value.to_ascii_lowercase());
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(i) = lower[at..].find(&needle) {
        out.push_str(&text[at..at + i]);
        out.push_str(REDACTED);
        at += i + needle.len();
    }
    out.push_str(&text[at..]);
    out
}

/// The one converted object of a webhook's `answer`, checked as the API
/// server checks it, or what is wrong with the answer: the field that is
/// wrong, never its value (the converted object is the stored one).
fn converted(
    answer: &Value,
    uid: &str,
    desired: &str,
    original: &Value,
    hidden: &Hidden,
) -> Result<Value, String> {
    let response = answer
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("the answer has no response")?;
    if response["uid"] != uid {
        return Err(format!("response.uid is not the request's uid ({uid:?})"));
    }
    let result = &response["result"];
    if result["status"] != "Success" {
        let message = result["message"].as_str().unwrap_or_default();
        return Err(format!(
            "response.result.status is {}, not \"Success\"{}",
            hidden.quote(&result["status"].to_string()),
            if message.is_empty() {
                String::new()
            } else {
                format!(": {}", hidden.quote(message))
            }
        ));
    }
    let objects = response["convertedObjects"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let [object] = objects else {
        return Err(format!(
            "it returned {} converted objects for 1",
            objects.len()
        ));
    };
    if object["apiVersion"] != desired {
        return Err(format!(
            "the converted object's apiVersion is not {desired:?}"
        ));
    }
    if object["kind"] != original["kind"] {
        return Err(format!(
            "the converted object's kind is not {}",
            original["kind"]
        ));
    }
    for field in ["name", "namespace", "uid"] {
        if object["metadata"][field] != original["metadata"][field] {
            return Err(format!(
                "the converted object's metadata.{field} is not the original's"
            ));
        }
    }
    Ok(object.clone())
}

/// The object without the metadata the API server keeps itself: it
/// restores everything but labels and annotations after a conversion.
fn content(object: &Value) -> Value {
    let mut out = object.clone();
    if let Some(map) = out.as_object_mut() {
        let meta = &object["metadata"];
        let mut kept = serde_json::Map::new();
        for key in ["labels", "annotations"] {
            if let Some(v) = meta.get(key).filter(|v| !v.is_null()) {
                kept.insert(key.to_string(), v.clone());
            }
        }
        map.insert("metadata".into(), Value::Object(kept));
    }
    out
}

/// The first place where `a` and `b` differ, as a JSON path and how, but
/// not the values: they are the stored object's.
fn difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                let here = format!("{path}.{k}");
                match y.get(k) {
                    Some(w) => {
                        if let Some(d) = difference(v, w, &here) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{here} is lost")),
                }
            }
            y.keys()
                .find(|k| !x.contains_key(*k))
                .map(|k| format!("{path}.{k} appears"))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| difference(v, w, &format!("{path}[{i}]"))),
        (Value::Array(x), Value::Array(y)) => Some(format!(
            "{path} has {} items and comes back with {}",
            x.len(),
            y.len()
        )),
        _ if a == b => None,
        _ => Some(format!("{path} comes back changed")),
    }
}

/// Why one review brought no converted object.
enum ProbeFailure {
    /// The proxy or the webhook failed, or answered wrong (in words).
    Refused(String),
    /// The user may not use the service proxy.
    Forbidden(String),
}

/// The finding that the probe was skipped, when `service` (the manifest's)
/// is neither the webhook the live CRD converts through (where the API
/// server sends these objects already) nor a Service the user named: a
/// manifest must not choose where a stored object goes. `None` when the
/// probe may send.
fn refused(service: &Service, live: &Crd, allowed: &[ProbeService]) -> Option<Finding> {
    let uses = match configured(&live.manifest) {
        Some(Webhook {
            service: Some(own), ..
        }) => {
            if own.same_destination(service) {
                return None;
            }
            format!("converts through {}", own.label_at())
        }
        Some(Webhook { url: Some(url), .. }) => format!("converts through {url}"),
        _ => "converts without a webhook".to_string(),
    };
    if allowed
        .iter()
        .any(|a| a.namespace == service.namespace && a.name == service.name)
    {
        return None;
    }
    Some(Finding::new(
        Check::ConversionWebhookNotReady,
        Severity::Warning,
        format!(
            "conversion webhook {} was not probed: the live CRD {uses}, and --probe-conversion \
             sends a stored object only to the webhook the live CRD already uses, so that a \
             manifest cannot send the cluster's objects to a Service of its choosing. Apply the \
             CRD and probe again, probe on a cluster whose CRD already converts through {}, or \
             allow the Service by name: --probe-conversion-service {}/{}",
            service.label_at(),
            service.label_at(),
            service.namespace,
            service.name
        ),
    ))
}

/// One review of `object` to `desired` (`group/version`) through the
/// service proxy, and the converted object or why there is none.
async fn exchange(
    conn: &Connection,
    service: &Service,
    review_version: &str,
    object: &Value,
    desired: &str,
    hidden: &Hidden,
) -> Result<Result<Value, ProbeFailure>, ClusterError> {
    let uid = review_uid();
    let request = review(review_version, &uid, desired, object);
    let answer = conn
        .conversion_review(
            &service.namespace,
            &service.name,
            service.port,
            &service.path,
            &request,
        )
        .await?;
    Ok(match answer {
        Review::Answer(answer) => {
            converted(&answer, &uid, desired, object, hidden).map_err(ProbeFailure::Refused)
        }
        Review::Failed(message) => Err(ProbeFailure::Refused(format!(
            "the request failed ({})",
            hidden.quote(&message)
        ))),
        Review::Forbidden(message) => Err(ProbeFailure::Forbidden(message)),
    })
}

/// `--probe-conversion`: the first stored object, sent to every other
/// served version of `crd` and back, through the service proxy, when
/// [`refused`] lets it.
async fn probe_webhook(
    conn: &Connection,
    service: &Service,
    webhook: &Webhook,
    crd: &Crd,
    live: Option<&Crd>,
    allowed: &[ProbeService],
) -> Result<Vec<Finding>, ClusterError> {
    let label = service.label();
    let kind = &crd.spec.names.kind;
    let info = |message: String| {
        vec![Finding::new(
            Check::ConversionWebhookNotReady,
            Severity::Info,
            message,
        )]
    };
    let Some(live) = live else {
        return Ok(info(format!(
            "conversion webhook {label} was not probed: the cluster has no {kind} stored yet"
        )));
    };
    if let Some(skipped) = refused(service, live, allowed) {
        return Ok(vec![skipped]);
    }
    let storage = live.storage_version();
    let read_as = if storage.spec.served {
        storage.name()
    } else {
        match live.served_versions().next() {
            Some(v) => v.name(),
            None => {
                return Ok(info(format!(
                    "conversion webhook {label} was not probed: the cluster serves no version of \
                     {kind} to read one from"
                )));
            }
        }
    };
    let mut object = match conn.first_object(&live.resource(read_as)).await? {
        Read::Found(Some(o)) => o,
        Read::Found(None) | Read::Missing => {
            return Ok(info(format!(
                "conversion webhook {label} was not probed: the cluster has no {kind} stored yet"
            )));
        }
        Read::Forbidden(message) => {
            return Ok(vec![Finding::new(
                Check::ConversionWebhookNotReady,
                Severity::Warning,
                format!(
                    "conversion webhook {label} was not probed: listing {kind} is forbidden \
                     ({message})"
                ),
            )]);
        }
    };
    let from = format!("{}/{read_as}", crd.spec.group);
    // A list's items carry these, but a probe must not depend on it.
    object["apiVersion"] = Value::from(from.clone());
    object["kind"] = Value::from(kind.clone());
    let Some(review_version) = webhook
        .review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
    else {
        return Ok(vec![Finding::new(
            Check::ConversionWebhookNotReady,
            Severity::Error,
            format!(
                "conversion webhook {label} accepts no ConversionReview version the API server \
                 sends (conversionReviewVersions: {:?}): every conversion fails. List v1",
                webhook.review_versions
            ),
        )]);
    };
    let who = format!(
        "{kind} {}",
        match object["metadata"]["namespace"].as_str() {
            Some(ns) => format!("{ns}/{}", object["metadata"]["name"].as_str().unwrap_or("")),
            None => object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        }
    );
    let hidden = Hidden::of(&[&object]);
    let mut out = Vec::new();
    let forbidden = |message: String| {
        Finding::new(
            Check::ConversionWebhookNotReady,
            Severity::Warning,
            format!(
                "conversion webhook {label} was not probed: sending it a review through the \
                 service proxy is forbidden ({message}). --probe-conversion needs create on \
                 services/proxy in {}",
                service.namespace
            ),
        )
    };
    let failed = |to: &str, why: String| {
        Finding::new(
            Check::ConversionWebhookNotReady,
            Severity::Error,
            format!(
                "conversion webhook {label} fails to convert {who} from {read_as} to {to}: {why}. \
                 Every read or write of such objects through {to} fails: fix the webhook before \
                 applying"
            ),
        )
        .in_version(to.to_string())
    };
    for version in crd.served_versions().map(|v| v.name()) {
        if version == read_as {
            continue;
        }
        let desired = format!("{}/{version}", crd.spec.group);
        let there =
            match exchange(conn, service, review_version, &object, &desired, &hidden).await? {
                Ok(o) => o,
                Err(ProbeFailure::Refused(why)) => {
                    out.push(failed(version, why));
                    continue;
                }
                Err(ProbeFailure::Forbidden(message)) => return Ok(vec![forbidden(message)]),
            };
        // The way back may echo what the webhook made of the values too.
        let hidden_back = Hidden::of(&[&object, &there]);
        let back =
            match exchange(conn, service, review_version, &there, &from, &hidden_back).await? {
                Ok(o) => o,
                Err(ProbeFailure::Refused(why)) => {
                    out.push(failed(&format!("{version} and back"), why));
                    continue;
                }
                Err(ProbeFailure::Forbidden(message)) => return Ok(vec![forbidden(message)]),
            };
        if let Some(lost) = difference(&content(&object), &content(&back), "") {
            out.push(
                Finding::new(
                    Check::ConversionWebhookNotReady,
                    Severity::Error,
                    format!(
                        "conversion webhook {label} does not round-trip {who} ({read_as} -> \
                         {version} -> {read_as}): {lost}: a client that reads and writes it \
                         through {version} changes it. Make the conversion lossless (keep what \
                         {version} cannot hold in an annotation)"
                    ),
                )
                .in_version(version.to_string()),
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
