use super::*;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    date_time_ymd,
};

/// A CA and a serving certificate it signs for `names`, as PEM.
struct Pki {
    ca_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Pki {
    fn new(expired: bool) -> Pki {
        Pki::named("test CA", expired)
    }

    fn named(common_name: &str, expired: bool) -> Pki {
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        if expired {
            params.not_before = date_time_ymd(2020, 1, 1);
            params.not_after = date_time_ymd(2021, 1, 1);
        }
        let cert = params.self_signed(&key).expect("CA certificate");
        Pki {
            ca_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    fn serving(&self, name: &str) -> String {
        let key = KeyPair::generate().expect("serving key");
        let params = CertificateParams::new(vec![name.to_string()]).expect("serving params");
        params.signed_by(&key, &self.issuer).expect("signed").pem()
    }

    fn bundle(&self) -> String {
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }
}

fn der(pem: &str) -> Vec<Vec<u8>> {
    ca_bundle::certificate_blocks(pem.as_bytes())
}

fn at_now() -> UnixTime {
    UnixTime::since_unix_epoch(std::time::Duration::from_secs(now()))
}

#[test]
fn a_current_ca_bundle_gives_its_certificates() {
    let pki = Pki::new(false);
    assert_eq!(anchors(&pki.bundle(), now()), Ok(der(&pki.ca_pem)));
}

#[test]
fn a_ca_bundle_that_is_not_base64_or_not_pem_is_unusable() {
    let not_base64 = anchors("not base64!", now()).unwrap_err();
    assert!(not_base64.starts_with("not base64"), "{not_base64}");
    let garbage = base64::engine::general_purpose::STANDARD.encode("garbage");
    assert_eq!(
        anchors(&garbage, now()),
        Err("unable to load root certificates: unable to parse bytes as PEM block".to_string())
    );
}

#[test]
fn an_expired_ca_bundle_names_the_day_it_expired() {
    let pki = Pki::new(true);
    assert_eq!(
        anchors(&pki.bundle(), now()),
        Err("its certificate expired on 2021-01-01".to_string())
    );
}

#[test]
fn the_serving_certificate_must_be_signed_by_the_bundle_and_name_the_service() {
    let pki = Pki::new(false);
    let roots = der(&pki.ca_pem);
    let name = "hook.system.svc";
    let good = der(&pki.serving(name));
    assert_eq!(tls::verify_serving(&good, &roots, name, at_now()), Ok(()));

    // Another CA of the same name: a CA made again, the bundle not updated.
    let other = Pki::new(false);
    let foreign = der(&other.serving(name));
    let why = tls::verify_serving(&foreign, &roots, name, at_now()).unwrap_err();
    assert!(
        why.starts_with("it is signed by another key than the caBundle's CA"),
        "{why}"
    );

    let unrelated = der(&Pki::named("another CA", false).serving(name));
    assert_eq!(
        tls::verify_serving(&unrelated, &roots, name, at_now()),
        Err("it is not signed by a certificate of the caBundle".to_string())
    );

    let misnamed = der(&pki.serving("other.system.svc"));
    let why = tls::verify_serving(&misnamed, &roots, name, at_now()).unwrap_err();
    assert!(why.starts_with("it does not name hook.system.svc"), "{why}");
}

#[test]
fn a_self_signed_serving_certificate_in_the_bundle_is_trusted_as_go_trusts_it() {
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec!["hook.system.svc".to_string()])
        .expect("params")
        .self_signed(&key)
        .expect("self-signed");
    let chain = der(&cert.pem());
    assert_eq!(
        tls::verify_serving(&chain, &chain, "hook.system.svc", at_now()),
        Ok(())
    );
}

fn crd(conversion: Value, versions: usize, annotations: Value) -> Value {
    let versions: Vec<Value> = ["v1", "v2"][..versions]
        .iter()
        .map(|v| json!({"name": v, "served": true, "storage": *v == "v1"}))
        .collect();
    json!({
        "metadata": {"name": "hooks.example.com", "annotations": annotations},
        "spec": {"conversion": conversion, "versions": versions}
    })
}

#[test]
fn only_a_webhook_between_two_versions_is_checked() {
    let webhook = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "system", "name": "hook", "path": "/convert"}}
    }});
    assert_eq!(webhook_of(&crd(webhook.clone(), 1, json!({}))), None);
    assert_eq!(
        webhook_of(&crd(json!({"strategy": "None"}), 2, json!({}))),
        None
    );
    let found = webhook_of(&crd(
        webhook,
        2,
        json!({"cert-manager.io/inject-ca-from": "system/hook-cert"}),
    ))
    .expect("a webhook");
    let service = found.service.as_ref().expect("a service");
    assert_eq!(service.port, 443, "the API server's default");
    assert_eq!(service.label(), "svc system/hook:443");
    assert_eq!(service.dns_name(), "hook.system.svc");
    assert_eq!(
        found.injection,
        Some(Injection::Certificate("system".into(), "hook-cert".into()))
    );
    assert_eq!(
        bundle(&found, now()),
        Err(BundleProblem::Missing { injected: true })
    );
}

#[test]
fn a_url_webhook_without_ca_bundle_trusts_the_system_roots() {
    let conversion = json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://convert.example.com:8443/convert"}
    }});
    let found = webhook_of(&crd(conversion, 2, json!({}))).expect("a webhook");
    assert_eq!(bundle(&found, now()), Ok(None));
    assert_eq!(
        host_of("https://convert.example.com:8443/convert").as_deref(),
        Some("convert.example.com")
    );
    assert_eq!(
        host_of("https://[fd00::1]:8443/").as_deref(),
        Some("fd00::1")
    );
}

#[test]
fn only_ready_endpoints_on_the_services_port_count() {
    let slice = |port: &str, ready: Value| {
        json!({"ports": [{"name": port, "port": 9443}],
               "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": ready}}]})
    };
    assert_eq!(endpoints(&[slice("https", json!(false))], "https"), (1, 0));
    assert_eq!(endpoints(&[slice("https", json!(true))], "https"), (1, 1));
    // Unset is ready, as the EndpointSlice API says.
    assert_eq!(endpoints(&[slice("https", Value::Null)], "https"), (1, 1));
    assert_eq!(endpoints(&[slice("metrics", json!(true))], "https"), (0, 0));
    assert_eq!(endpoints(&[], ""), (0, 0));
}

fn object(version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Hook",
           "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
           "spec": spec})
}

fn answer(uid: &str, status: &str, objects: Vec<Value>) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
           "response": {"uid": uid, "result": {"status": status, "message": "boom"},
                        "convertedObjects": objects}})
}

#[test]
fn a_review_answer_is_checked_as_the_api_server_checks_it() {
    let original = object("v1", json!({"size": 1}));
    let good = object("v2", json!({"size": 1}));
    let hidden = Hidden::of(&[&original]);
    assert_eq!(
        converted(
            &answer("x", "Success", vec![good.clone()]),
            "x",
            "example.com/v2",
            &original,
            &hidden
        ),
        Ok(good.clone())
    );
    let wrong = |a: Value| converted(&a, "x", "example.com/v2", &original, &hidden).unwrap_err();
    assert_eq!(
        wrong(answer("y", "Success", vec![good.clone()])),
        "response.uid is not the request's uid (\"x\")"
    );
    assert_eq!(
        wrong(answer("x", "Failure", vec![])),
        "response.result.status is \"Failure\", not \"Success\": boom"
    );
    assert_eq!(
        wrong(answer("x", "Success", vec![])),
        "it returned 0 converted objects for 1"
    );
    assert_eq!(
        wrong(answer("x", "Success", vec![original.clone()])),
        "the converted object's apiVersion is not \"example.com/v2\""
    );
    let mut renamed = good.clone();
    renamed["metadata"]["name"] = json!("hunter2-renamed");
    assert_eq!(
        wrong(answer("x", "Success", vec![renamed])),
        "the converted object's metadata.name is not the original's"
    );
}

#[test]
fn a_round_trip_is_compared_without_the_metadata_the_server_restores() {
    let original = object("v1", json!({"size": 1, "mode": "fast"}));
    let mut back = object("v1", json!({"size": 1, "mode": "fast"}));
    back["metadata"]["resourceVersion"] = json!("8");
    assert_eq!(difference(&content(&original), &content(&back), ""), None);
    back["spec"] = json!({"size": 1});
    assert_eq!(
        difference(&content(&original), &content(&back), ""),
        Some(".spec.mode is lost".to_string())
    );
}

#[test]
fn a_difference_names_the_path_never_the_values() {
    let was = json!({"spec": {"password": "hunter2", "tags": ["a", "b"], "n": 1}});
    let came = |spec: Value| difference(&was, &json!({ "spec": spec }), "");
    assert_eq!(
        came(json!({"password": "HUNTER2", "tags": ["a", "b"], "n": 1})).as_deref(),
        Some(".spec.password comes back changed")
    );
    assert_eq!(
        came(json!({"password": "hunter2", "tags": ["a"], "n": 1})).as_deref(),
        Some(".spec.tags has 2 items and comes back with 1")
    );
    assert_eq!(
        came(json!({"password": "hunter2", "tags": ["a", "c"], "n": 1})).as_deref(),
        Some(".spec.tags[1] comes back changed")
    );
    assert_eq!(
        came(json!({"password": "hunter2", "tags": ["a", "b"], "n": 1, "token": "s3cr3t"}))
            .as_deref(),
        Some(".spec.token appears")
    );
}

#[test]
fn a_webhooks_words_are_quoted_without_the_objects_strings_and_cut_short() {
    let stored = object(
        "v1",
        json!({"password": "hunter2-probe", "mode": "fast", "nested": [{"token": "Tok3n-xyz"}]}),
    );
    let hidden = Hidden::of(&[&stored]);
    assert_eq!(
        hidden.quote("cannot convert a/ns: password HUNTER2-probe,\ntoken tok3n-XYZ in mode fast"),
        "cannot convert a/ns: password <redacted>, token <redacted> in mode <redacted>"
    );
    // The name and namespace the message names anyway stay.
    assert_eq!(hidden.quote("object ns/a"), "object ns/a");
    let long = format!("{} hunter2-probe", "x".repeat(300));
    let quoted = hidden.quote(&long);
    assert_eq!(quoted.chars().count(), QUOTED_CHARS + 3);
    assert!(quoted.ends_with("..."), "{quoted}");
    // A value the cut would split is taken out before the cut.
    let straddling = format!("{}hunter2-probe", "y".repeat(QUOTED_CHARS - 5));
    assert!(!hidden.quote(&straddling).contains("hunte"));
    // Multi-byte text keeps its characters.
    assert_eq!(hidden.quote("ÄÖÜ hunter2-probe"), "ÄÖÜ <redacted>");
}

fn service(namespace: &str, name: &str, port: i32, path: &str) -> Service {
    Service {
        namespace: namespace.into(),
        name: name.into(),
        port,
        path: path.into(),
    }
}

fn live_crd(conversion: Value) -> Crd {
    let mut manifest = crd(conversion, 2, json!({}));
    manifest["apiVersion"] = json!("apiextensions.k8s.io/v1");
    manifest["kind"] = json!("CustomResourceDefinition");
    manifest["spec"]["group"] = json!("example.com");
    manifest["spec"]["scope"] = json!("Namespaced");
    manifest["spec"]["names"] = json!({"kind": "Hook", "plural": "hooks"});
    for version in manifest["spec"]["versions"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        version["schema"] = json!({"openAPIV3Schema": {"type": "object"}});
    }
    Crd::from_manifest(manifest).expect("a CRD")
}

#[test]
fn the_probe_sends_only_to_the_live_crds_webhook_or_a_service_the_user_named() {
    let live = live_crd(json!({"strategy": "Webhook", "webhook": {
        "conversionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "system", "name": "hook", "path": "/convert"}}
    }}));
    // The live CRD's own webhook: the port defaults as the API server's does.
    assert_eq!(
        refused(&service("system", "hook", 443, "convert"), &live, &[]),
        None
    );
    for other in [
        service("system", "evil", 443, "/convert"),
        service("attacker", "hook", 443, "/convert"),
        service("system", "hook", 8443, "/convert"),
        service("system", "hook", 443, "/other"),
    ] {
        let skipped = refused(&other, &live, &[]).expect("skipped");
        assert_eq!(skipped.severity, Severity::Warning);
        assert!(
            skipped.message.starts_with(&format!(
                "conversion webhook {} was not probed: the live CRD converts through svc \
                 system/hook:443 at /convert",
                other.label_at()
            )),
            "{}",
            skipped.message
        );
        assert!(
            skipped.message.ends_with(&format!(
                "--probe-conversion-service {}/{}",
                other.namespace, other.name
            )),
            "{}",
            skipped.message
        );
    }
    let named = |namespace: &str, name: &str| ProbeService {
        namespace: namespace.into(),
        name: name.into(),
    };
    let evil = service("system", "evil", 443, "/convert");
    assert_eq!(refused(&evil, &live, &[named("system", "evil")]), None);
    assert!(refused(&evil, &live, &[named("system", "hook")]).is_some());
    assert!(refused(&evil, &live, &[named("other", "evil")]).is_some());

    let unconverted = live_crd(json!({"strategy": "None"}));
    let skipped = refused(
        &service("system", "hook", 443, "/convert"),
        &unconverted,
        &[],
    )
    .expect("skipped");
    assert!(
        skipped
            .message
            .contains("the live CRD converts without a webhook"),
        "{}",
        skipped.message
    );
}

#[test]
fn the_serving_certificate_is_read_only_from_the_live_crds_own_source() {
    let secret = Injection::Secret("system".into(), "hook-tls".into());
    let other = Injection::Certificate("system".into(), "hook-cert".into());
    let live = live_crd(json!({"strategy": "None"}));
    let found = not_read("svc system/hook:443", &secret, Some(&live), Some(&other));
    assert_eq!(found.severity, Severity::Info);
    assert!(
        found.message.contains(
            "the manifest takes it from Secret system/hook-tls \
             (cert-manager.io/inject-ca-from-secret) and the live CRD takes it from Certificate \
             system/hook-cert (cert-manager.io/inject-ca-from)"
        ),
        "{}",
        found.message
    );
    let mut annotated = crd(
        json!({"strategy": "None"}),
        2,
        json!({"cert-manager.io/inject-ca-from-secret": "system/hook-tls"}),
    );
    assert_eq!(injection_of(&annotated), Some(secret));
    annotated["metadata"]["annotations"] = json!({});
    assert_eq!(injection_of(&annotated), None);
}

#[test]
fn review_uids_do_not_repeat() {
    let (a, b) = (review_uid(), review_uid());
    assert_ne!(a, b);
    assert_eq!(a.len(), 36);
}
