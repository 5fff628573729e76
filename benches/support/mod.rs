//! What the corpus benchmarks share: where the corpus is, the pairs they
//! time, and a realistic HTTPRoute. Included by each bench with `#[path]`; not a bench itself.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// (benchmark id, old file, new file), relative to the corpus. The largest
/// single-CRD pairs, plus the largest multi-CRD bundle pair.
pub const PAIRS: &[(&str, &str, &str)] = &[
    (
        "argocd-operator_argocds_0.13.0-0.18.0",
        "argocd-operator/0.13.0/argoproj.io_argocds.yaml",
        "argocd-operator/0.18.0/argoproj.io_argocds.yaml",
    ),
    (
        "eck-full-bases_agents_v3.0.0-v3.5.0",
        "eck-full-bases/v3.0.0/agent.k8s.elastic.co_agents.yaml",
        "eck-full-bases/v3.5.0/agent.k8s.elastic.co_agents.yaml",
    ),
    (
        "eck-full-bases_elasticsearches_v3.0.0-v3.5.0",
        "eck-full-bases/v3.0.0/elasticsearch.k8s.elastic.co_elasticsearches.yaml",
        "eck-full-bases/v3.5.0/elasticsearch.k8s.elastic.co_elasticsearches.yaml",
    ),
    (
        "argo-cd_applicationsets_0.18.0-0.19.0",
        "argo-cd/argocd-operator-0.18.0/argoproj.io_applicationsets.yaml",
        "argo-cd/argocd-operator-0.19.0/argoproj.io_applicationsets.yaml",
    ),
    (
        "prometheus-operator_prometheuses_v0.16.0-v0.18.0",
        "prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0/0prometheusCustomResourceDefinition.yaml",
        "prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0/0prometheusCustomResourceDefinition.yaml",
    ),
    (
        "external-secrets_bundle_v2.0.0-v2.9.0",
        "external-secrets/v2.0.0/bundle.yaml",
        "external-secrets/v2.9.0/bundle.yaml",
    ),
];

pub fn corpus_dir() -> Option<PathBuf> {
    let dir = corpus();
    if dir.join("MANIFEST.md").exists() {
        Some(dir)
    } else {
        eprintln!(
            "notice: corpus not found at {} (set CRD_SAFETY_CORPUS); benchmarking nothing",
            dir.display()
        );
        None
    }
}

/// The corpus directory, whether or not it exists (`$CRD_SAFETY_CORPUS`,
/// else `../shared/corpus`).
pub fn corpus() -> PathBuf {
    match std::env::var_os("CRD_SAFETY_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    }
}

/// The `spec` of a realistic Gateway API HTTPRoute (two rules, matches,
/// filters, weighted backends), varied by `i` so that many objects differ.
pub fn http_route_spec(i: usize) -> serde_json::Value {
    serde_json::json!({
        "parentRefs": [{"name": "gw", "sectionName": "https"}],
        "hostnames": [format!("web-{i}.example.com"), "*.example.org"],
        "rules": [
            {
                "matches": [{"path": {"type": "PathPrefix", "value": format!("/api/{}", i % 50)},
                             "headers": [{"name": "x-version", "value": "2"}]}],
                "filters": [{"type": "RequestHeaderModifier",
                             "requestHeaderModifier": {"add": [{"name": "x-env", "value": "prod"}],
                                                       "remove": ["x-debug"]}}],
                "backendRefs": [{"name": "api-v2", "port": 8080, "weight": 90},
                                {"name": "api-v1", "port": 8080, "weight": 10}]
            },
            {
                "matches": [{"path": {"type": "Exact", "value": "/"}, "method": "GET"}],
                "backendRefs": [{"name": "web", "port": 80}]
            }
        ]
    })
}

/// The kubectl the benches run beside the plugin.
pub fn kubectl() -> String {
    ["/usr/bin/kubectl", "kubectl"]
        .into_iter()
        .find(|k| {
            std::process::Command::new(k)
                .arg("version")
                .arg("--client")
                .output()
                .is_ok()
        })
        .expect("kubectl on the PATH")
        .to_string()
}
