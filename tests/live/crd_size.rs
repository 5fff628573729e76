//! `crdSize` against the cluster: a CRD the cluster got by client-side
//! apply (it carries `kubectl.kubernetes.io/last-applied-configuration`)
//! whose next release no longer fits that annotation. Plural `sizeds` is
//! this module's.

use serde_json::json;

use crate::support;
use support::envtest::control_plane;
use support::live::{admin, apply_check, crd, install, write_manifest};

#[tokio::test]
async fn apply_check_warns_that_the_next_client_side_apply_of_a_grown_crd_fails() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let mut installed = crd("sizeds", &[("v1", true, true)], json!({}));
    installed["metadata"]["annotations"] = json!({
        "kubectl.kubernetes.io/last-applied-configuration": installed.to_string()
    });
    install(&client, &installed).await;

    // The next release documents a field at length: 270,000 bytes.
    let grown = crd(
        "sizeds",
        &[("v1", true, true)],
        json!({"notes": {"type": "string", "description": "n".repeat(270_000)}}),
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = write_manifest(dir.path(), "sizeds.json", &grown);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let out = apply_check(&path, &kubeconfig, &["-o", "json"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let sizes: Vec<String> = report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "crdSize")
        .map(|f| format!("{} {}", f["severity"], f["message"]))
        .collect();
    assert_eq!(sizes.len(), 1, "{sizes:?}");
    assert!(
        sizes[0].starts_with("\"warning\" \"client-side apply of this CRD fails: ")
            && sizes[0].contains("The CRD in the cluster carries that annotation"),
        "{}",
        sizes[0]
    );
}
