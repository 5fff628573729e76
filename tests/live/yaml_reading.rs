//! What the API server stores from a manifest whose keys YAML 1.1 reads as
//! booleans: kubectl's reading (sigs.k8s.io/yaml, through `yaml2json`)
//! created as it is, and the same file applied by `crd-safety apply`, store
//! the same schema, with the property `y` stored as `true`. Plurals
//! `norwaykubectls` and `norwayapplies` are this module's.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use serde_json::Value;

use crate::support;
use support::envtest::control_plane;
use support::kubectl_yaml::{NORWAY_CRD, kubectl_reading};
use support::live::{admin, install};
use support::run::run;

/// The property names of `spec` in a live CRD, sorted.
async fn stored_properties(client: &kube::Client, name: &str) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = serde_json::to_value(crds.get(name).await.expect("the CRD exists")).expect("json");
    let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    let mut names: Vec<String> = props
        .as_object()
        .expect("properties")
        .keys()
        .cloned()
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_api_server_stores_kubectls_reading_and_apply_stores_the_same() {
    let Some(plane) = control_plane() else { return };
    let kubectl_crd = NORWAY_CRD
        .replace("PLURAL", "norwaykubectls")
        .replace("KIND", "Norwaykubectl");
    let Some(reading) = kubectl_reading(&[&kubectl_crd]) else {
        return;
    };
    let client = admin(plane).await;
    let as_kubectl_reads_it = reading[0].clone().expect("kubectl reads the CRD");
    install(&client, &as_kubectl_reads_it).await;
    let want = ["false", "true", "x"];
    assert_eq!(
        stored_properties(&client, "norwaykubectls.example.com").await,
        want
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("crd.yaml");
    let ours = NORWAY_CRD
        .replace("PLURAL", "norwayapplies")
        .replace("KIND", "Norwayapply");
    std::fs::write(&file, ours).expect("written");
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let file = file.display().to_string();
    let out = run(
        &[
            "apply",
            "-f",
            &file,
            "--kubeconfig",
            &kubeconfig,
            "--yes",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report: Value = out.json();
    let warned = report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "yamlReading")
        .count();
    assert_eq!(warned, 4, "{}", out.stdout);
    assert_eq!(
        stored_properties(&client, "norwayapplies.example.com").await,
        want
    );
}
