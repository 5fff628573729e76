//! What the API server does with objects still stored in a version that is
//! served no longer, when that version's schema changes. The findings on
//! such a version are graded by what this test establishes:
//!
//! - the API server decodes every object with the schema of the version it
//!   is stored in, whatever version the client asked for: a field removed
//!   from that schema (or unknown fields no longer preserved) is pruned on
//!   every read, and lost for good on the object's next write; a default
//!   added to it appears on every read;
//! - validation, the status subresource and everything else tied to requests
//!   is never applied to an unserved version: requests through it get 404,
//!   and writes through a served version are validated against that one.
//!
//! The plugin's own grading of the same update is checked at the end.

use crate::support;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, ListParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::envtest::control_plane;
use support::live::{admin, apply_check, create_objects, install, objects_api, write_manifest};

const PLURAL: &str = "hoards";
const NS: &str = "hoards";

/// The schema both versions start with: every field the update below
/// tightens or removes, holding a value the tightened schema rejects.
fn root() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "note": {"type": "string"},
                    "flavor": {"type": "string"},
                    "mode": {"type": "string"},
                    "level": {"type": "integer"},
                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                }
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
    })
}

/// `hoards.example.com` with v1alpha1 and v1 (conversion None), both with
/// the status subresource.
fn manifest(alpha: (bool, bool, Value), v1_storage: bool) -> Value {
    let version = |name: &str, served: bool, storage: bool, schema: Value| {
        json!({"name": name, "served": served, "storage": storage,
               "schema": {"openAPIV3Schema": schema},
               "subresources": {"status": {}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Hoard", "plural": PLURAL},
            "versions": [
                version("v1alpha1", alpha.0, alpha.1, alpha.2),
                version("v1", true, v1_storage, root()),
            ]
        }
    })
}

/// v1alpha1 changed in every way the grading distinguishes: `note`
/// removed, a default on `flavor`, `mode` and `level` tightened, a required
/// field and a CEL rule added, `extra` no longer preserving unknown fields,
/// and (in [`tightened`]) no status subresource.
fn tightened_schema() -> Value {
    let mut s = root();
    let spec = &mut s["properties"]["spec"];
    if let Some(props) = spec["properties"].as_object_mut() {
        props.remove("note");
    }
    spec["properties"]["flavor"]["default"] = json!("vanilla");
    spec["properties"]["mode"]["enum"] = json!(["a"]);
    spec["properties"]["level"]["minimum"] = json!(5);
    spec["properties"]["extra"] =
        json!({"type": "object", "properties": {"kept": {"type": "string"}}});
    spec["properties"]["owner"] = json!({"type": "string"});
    spec["required"] = json!(["owner"]);
    spec["x-kubernetes-validations"] = json!([{"rule": "self.size > 100"}]);
    s
}

fn tightened() -> Value {
    let mut m = manifest((false, false, tightened_schema()), true);
    if let Some(alpha) = m["spec"]["versions"][0].as_object_mut() {
        alpha.remove("subresources");
    }
    m
}

/// The object's `spec` read through v1 with GET, and through LIST.
async fn read_spec(client: &Client, name: &str) -> (Value, Value) {
    read_once(client, name, |_| true).await
}

/// [`read_spec`] once the API server's handler has picked up the CRD just
/// applied (it does so asynchronously), seen by `settled` holding on the
/// GET; after 30 s, what it reads then, for the assertion to judge.
async fn read_once(
    client: &Client,
    name: &str,
    settled: impl Fn(&Value) -> bool,
) -> (Value, Value) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let read = read_now(client, name).await;
        if settled(&read.0) || Instant::now() > deadline {
            return read;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn read_now(client: &Client, name: &str) -> (Value, Value) {
    let api = objects_api(client, PLURAL, "v1", NS);
    let got = api.get(name).await.expect("GET through v1");
    let listed = api
        .list(&ListParams::default())
        .await
        .expect("LIST through v1")
        .items
        .into_iter()
        .find(|o| o.metadata.name.as_deref() == Some(name))
        .expect("listed");
    (got.data["spec"].clone(), listed.data["spec"].clone())
}

async fn stored_versions(client: &Client) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.get(&format!("{PLURAL}.example.com"))
        .await
        .expect("the CRD is readable")
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default()
}

/// The finding of `check` on v1alpha1 in an `apply-check -o json` report.
fn finding<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == check && f["version"] == "v1alpha1")
        .unwrap_or_else(|| panic!("no {check} finding on v1alpha1 in {report:#}"))
}

#[tokio::test]
async fn objects_stored_in_an_unserved_version_are_pruned_and_defaulted_by_its_schema_but_never_validated()
 {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;

    // Objects written while v1alpha1 is the storage version, then the
    // storage version moves to v1 and v1alpha1 is no longer served.
    install(&client, &manifest((true, true, root()), false)).await;
    let spec = json!({"size": 1, "mode": "b", "level": 1,
                      "extra": {"free": "x"}});
    create_objects(
        &client,
        PLURAL,
        "v1alpha1",
        vec![
            (NS.into(), "untouched".into(), spec.clone()),
            (NS.into(), "rewritten".into(), spec.clone()),
        ],
    )
    .await;
    install(&client, &manifest((false, false, root()), true)).await;
    assert_eq!(stored_versions(&client).await, ["v1alpha1", "v1"]);
    let (got, _) = read_spec(&client, "untouched").await;
    assert_eq!(got, spec, "before the change, v1 reads what was written");

    // The plugin's grading of the change, against this cluster.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), "tightened.json", &tightened());
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&path, &kubeconfig, &["-o", "json"]);
    let report = r.json();
    for (check, severity, why) in [
        ("existingFieldRemoval", "error", "pruned"),
        ("default", "error", "default"),
        ("preserveUnknownFields", "error", "pruned"),
        ("enum", "info", "not served"),
        ("minimum", "info", "not served"),
        ("required", "info", "not served"),
        ("xValidations", "info", "not served"),
        ("subresources", "info", "not served"),
    ] {
        let f = finding(&report, check);
        assert_eq!(f["severity"], severity, "{check}: {f:#}");
        let message = f["message"].as_str().unwrap_or_default();
        assert!(message.contains(why), "{check}: {message}");
    }
    assert_eq!(r.code, 1, "the data-losing changes fail the run");

    // The change itself: the API server accepts it.
    install(&client, &tightened()).await;
    assert_eq!(stored_versions(&client).await, ["v1alpha1", "v1"]);

    // Read through v1 (GET and LIST alike): decoded with v1alpha1's schema,
    // the version the object is stored in, although v1 still describes
    // `note` and keeps unknown fields under `extra`.
    let expected = json!({"size": 1, "mode": "b", "level": 1, "extra": {},
                          "flavor": "vanilla"});
    // The tightened schema is in effect once the default shows.
    let (got, listed) = read_once(&client, "untouched", |s| s.get("flavor").is_some()).await;
    assert_eq!(got, expected, "pruned and defaulted on GET");
    assert_eq!(listed, expected, "pruned and defaulted on LIST");

    // Writes through v1 are validated against v1 only: the object breaks
    // v1alpha1's enum, minimum, required field and CEL rule, yet the update
    // succeeds, and it stores what was read: the pruned data is gone.
    let api = objects_api(&client, PLURAL, "v1", NS);
    let mut object: DynamicObject = api.get("rewritten").await.expect("GET");
    object.data["spec"]["size"] = json!(2);
    api.replace("rewritten", &PostParams::default(), &object)
        .await
        .expect("an update through v1 ignores v1alpha1's validation");
    let mut status = api.get_status("rewritten").await.expect("status GET");
    status.data["status"] = json!({"phase": "Ready"});
    api.replace_status("rewritten", &PostParams::default(), &status)
        .await
        .expect("the status subresource of v1 still works");

    // Requests through v1alpha1 itself are not served at all.
    let alpha = objects_api(&client, PLURAL, "v1alpha1", NS);
    match alpha.get("untouched").await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 404, "{e:?}"),
        other => panic!("v1alpha1 is not served, yet GET answered {other:?}"),
    }

    // Restoring v1alpha1's schema brings the data back for the object that
    // was only read; the one written in between lost it for good.
    install(&client, &manifest((false, false, root()), true)).await;
    let (untouched, _) =
        read_once(&client, "untouched", |s| s["extra"].get("free").is_some()).await;
    assert_eq!(untouched, spec, "only hidden while it was pruned on read");
    let (rewritten, _) = read_spec(&client, "rewritten").await;
    assert_eq!(
        rewritten,
        json!({"size": 2, "mode": "b", "level": 1, "extra": {}, "flavor": "vanilla"}),
        "written after a pruning read: the data is lost"
    );
}
