//! The real helm on the real API server does what the Helm delivery checks
//! say: a CRD moved from `templates/` to `crds/` is deleted by `helm
//! upgrade` with its objects, and a change under `crds/` is never applied.
//! Plurals `helmmoves` and `helmkeeps`, releases of the same names, are this
//! module's.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use serde_json::{Value, json};

use crate::support;
use support::charts::{Layout, chart};
use support::envtest::control_plane;
use support::helm::{helm, helm_dir, path_with_helm};
use support::live::{admin, create_objects};
use support::sources::Plugin;

/// The checks of `diff old new` (both charts under `dir`).
fn checks(dir: &Path, helm_bin: &Path) -> Vec<String> {
    let p = Plugin {
        dir,
        path: Some(path_with_helm(helm_bin)),
    };
    let report: Value = p.json(&["diff", "old", "new"]);
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["findings"].as_array().into_iter().flatten())
        .filter_map(|f| f["check"].as_str().map(str::to_string))
        .filter(|c| c.starts_with("helm"))
        .collect()
}

/// The live CRD's `spec` property names, or `None` once it is gone (waits
/// for a deletion in progress to finish, as helm does not).
async fn live_fields(client: &kube::Client, name: &str) -> Option<Vec<String>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let crd = crds.get_opt(name).await.expect("CRDs readable")?;
        if crd.metadata.deletion_timestamp.is_none() {
            let crd = serde_json::to_value(crd).expect("json");
            let props = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"];
            let mut names: Vec<String> = props
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k.clone())
                .collect();
            names.sort();
            return Some(names);
        }
        assert!(
            Instant::now() < deadline,
            "{name} still terminating after 60s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the API server serves the CRD's objects.
async fn established(client: &kube::Client, name: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let crd = crds.get(name).await.expect("the CRD exists");
        let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
        if conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
        {
            return;
        }
        assert!(Instant::now() < deadline, "{name} not Established in 30s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn helm_upgrade_deletes_a_crd_moved_to_crds_and_never_applies_crds_changes() {
    let Some(plane) = control_plane() else { return };
    let Some(helm_bin) = helm_dir() else { return };
    let client = admin(plane).await;
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();

    // Moved from templates/ to crds/, with a new field: we say it is deleted.
    chart(
        &d.join("moves/old"),
        "helmmoves",
        "1.0.0",
        &[("helmmoves", &["a"], Layout::Templates)],
    );
    chart(
        &d.join("moves/new"),
        "helmmoves",
        "1.1.0",
        &[("helmmoves", &["a", "b"], Layout::Crds)],
    );
    assert_eq!(checks(&d.join("moves"), helm_bin), ["helmDeletesCrd"]);
    let old = d.join("moves/old").display().to_string();
    let new = d.join("moves/new").display().to_string();
    helm(
        helm_bin,
        &kubeconfig,
        &["install", "helmmoves", &old, "--wait"],
    );
    let name = "helmmoves.example.com";
    assert_eq!(live_fields(&client, name).await, Some(vec!["a".into()]));
    established(&client, name).await;
    create_objects(
        &client,
        "helmmoves",
        "v1",
        vec![("default".into(), "one".into(), json!({"a": "x"}))],
    )
    .await;
    helm(helm_bin, &kubeconfig, &["upgrade", "helmmoves", &new]);
    assert_eq!(
        live_fields(&client, name).await,
        None,
        "helm upgrade deletes the CRD"
    );

    // A change under crds/: we say it does not land, and it does not.
    chart(
        &d.join("keeps/old"),
        "helmkeeps",
        "1.0.0",
        &[("helmkeeps", &["a"], Layout::Crds)],
    );
    chart(
        &d.join("keeps/new"),
        "helmkeeps",
        "1.1.0",
        &[("helmkeeps", &["a", "b"], Layout::Crds)],
    );
    assert_eq!(checks(&d.join("keeps"), helm_bin), ["helmCrdsNotUpgraded"]);
    let old = d.join("keeps/old").display().to_string();
    let new = d.join("keeps/new").display().to_string();
    helm(helm_bin, &kubeconfig, &["install", "helmkeeps", &old]);
    helm(helm_bin, &kubeconfig, &["upgrade", "helmkeeps", &new]);
    assert_eq!(
        live_fields(&client, "helmkeeps.example.com").await,
        Some(vec!["a".into()]),
        "helm upgrade leaves crds/ as installed"
    );
}
