//! Throughput of `Validator::validate` on one core, on realistic objects for
//! two corpus schemas (`../shared/corpus`, or `$CRD_SAFETY_CORPUS`):
//! - `certificate`: cert-manager v1.21.1 Certificate v1, no CEL rules;
//! - `httproute`: Gateway API v1.6.1 HTTPRoute v1, 26 nodes with CEL rules.
//!
//! `httproute-without-cel` is the same schema with its rules removed.
//! Criterion reports objects/s as `thrpt` (one element = one object). Quick
//! settings: `cargo bench --bench validate` runs in well under a minute.

use std::hint::black_box;
use std::time::Duration;

use crd_safety::manifest::{self, Source};
use crd_safety::object_validation::Validator;
use crd_safety::schema::{AdditionalProperties, Schema};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

#[path = "support/mod.rs"]
mod support;
use support::corpus;

fn schema(file: &str, version: &str) -> Option<Schema> {
    let path = corpus().join(file);
    if !path.exists() {
        eprintln!("notice: {} not found; skipping", path.display());
        return None;
    }
    let set = manifest::load(&[Source::Path(path)]).ok()?;
    let crd = &set.crds.first()?.crd;
    Some(crd.version(version)?.schema.clone())
}

fn certificate() -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"},
                     "resourceVersion": "12345", "uid": "0b6a7c1e-1111-2222-3333-444455556666"},
        "spec": {
            "secretName": "web-tls",
            "commonName": "web.example.com",
            "dnsNames": ["web.example.com", "www.example.com", "api.example.com"],
            "duration": "2160h",
            "renewBefore": "360h",
            "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
            "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
            "usages": ["server auth", "digital signature", "key encipherment"],
            "secretTemplate": {"labels": {"team": "web"}, "annotations": {"a": "b"}},
            "revisionHistoryLimit": 3
        },
        "status": {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": 3,
            "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "Ready", "message": "Certificate is up to date"}],
            "notAfter": "2024-04-01T00:00:00Z", "notBefore": "2024-01-01T00:00:00Z",
            "renewalTime": "2024-03-15T00:00:00Z", "revision": 2}
    })
}

fn http_route() -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": support::http_route_spec(0),
        "status": {"parents": [{"parentRef": {"name": "gw", "sectionName": "https"},
            "controllerName": "example.com/gateway-controller",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                            "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}]}]}
    })
}

/// `schema` without its CEL rules, to separate the structural pass's cost.
fn without_cel(schema: &Schema) -> Schema {
    let mut s = schema.clone();
    fn strip(s: &mut Schema) {
        s.keywords.remove("x-kubernetes-validations");
        s.properties.values_mut().for_each(strip);
        if let Some(i) = s.items.as_deref_mut() {
            strip(i);
        }
        if let Some(AdditionalProperties::Schema(a)) = s.additional_properties.as_mut() {
            strip(a);
        }
    }
    strip(&mut s);
    s
}

fn bench(c: &mut Criterion) {
    let cases = [
        (
            "certificate",
            "cert-manager/v1.21.1/cert-manager.io_certificates.yaml",
            certificate(),
        ),
        (
            "httproute",
            "gateway-api-standard/v1.6.1/gateway.networking.k8s.io_httproutes.yaml",
            http_route(),
        ),
    ];
    let mut group = c.benchmark_group("validate");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    for (id, file, object) in cases {
        let Some(schema) = schema(file, "v1") else {
            continue;
        };
        let plain = without_cel(&schema);
        let with_cel = plain != schema;
        let variants = [
            (id.to_string(), schema),
            (format!("{id}-without-cel"), plain),
        ];
        for (name, schema) in variants.into_iter().take(if with_cel { 2 } else { 1 }) {
            let Ok(v) = Validator::new(&schema, 34) else {
                eprintln!("notice: {name}: schema does not compile; skipping");
                continue;
            };
            let outcome = v.validate(&object);
            assert!(outcome.violations.is_empty(), "{name}: {outcome:#?}");
            group.bench_function(name, |b| b.iter(|| v.validate(black_box(&object))));
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
