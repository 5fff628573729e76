//! Live tests against a real kube-apiserver and etcd (see
//! `support/envtest.rs`). This file proves the harness: the admin identity
//! can manage CRDs and sees `status.storedVersions`; the restricted one is
//! denied by RBAC.

mod support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use support::envtest::control_plane;

fn widget_crd() -> CustomResourceDefinition {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/safe-upgrade/old.yaml"
    ))
    .expect("example CRD");
    serde_saphyr::from_str(&text).expect("example CRD parses")
}

#[tokio::test]
async fn the_test_control_plane_serves_crds_to_admin_and_denies_the_restricted_user() {
    let Some(plane) = control_plane() else { return };
    let admin = plane
        .client(&plane.admin_kubeconfig)
        .await
        .expect("admin client");
    let crds: Api<CustomResourceDefinition> = Api::all(admin);
    let crd = widget_crd();
    let name = "gadgets.example.com";
    crds.patch(
        name,
        &PatchParams::apply("crd-safety-test").force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("admin applies the CRD");
    let live = crds.get(name).await.expect("admin reads the CRD");
    let stored = live
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default();
    assert_eq!(
        stored,
        vec!["v1".to_string()],
        "the server records the storage version"
    );

    let restricted = plane
        .client(&plane.restricted_kubeconfig)
        .await
        .expect("restricted client");
    let denied: Api<CustomResourceDefinition> = Api::all(restricted);
    match denied.get(name).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}
