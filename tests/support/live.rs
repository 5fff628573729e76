//! Helpers shared by the live test binaries: CRD builders, installing as
//! the admin, and running the plugin against the test control plane.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::envtest::ControlPlane;
use super::fixtures::{self, kind_of};
use super::run::{Run, run};

/// A CRD `<plural>.example.com` with the given versions; `extra` adds
/// fields to v1's spec schema.
pub fn crd(plural: &str, versions: &[(&str, bool, bool)], extra: Value) -> Value {
    let mut spec_props = json!({"size": {"type": "integer"}});
    if let (Some(p), Some(e)) = (spec_props.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let root = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": spec_props}}
    });
    let versions = versions
        .iter()
        .map(|(name, served, storage)| fixtures::version(name, *served, *storage, root.clone()))
        .collect();
    fixtures::crd(plural, versions)
}

/// The objects of `<plural>.example.com` in `version` and namespace `ns`.
pub fn objects_api(client: &Client, plural: &str, version: &str, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", version, &kind_of(plural)),
        plural,
    );
    Api::namespaced_with(client.clone(), ns, &ar)
}

/// Creates namespace `ns` unless it exists.
pub async fn ensure_namespace(client: &Client, ns: &str) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let object = serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
    match namespaces.create(&PostParams::default(), &object).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("namespace {ns}: {e}"),
    }
}

/// Creates `(namespace, name, spec)` objects in `version`, eight at a time.
pub async fn create_objects(
    client: &Client,
    plural: &str,
    version: &str,
    objects: Vec<(String, String, Value)>,
) {
    let kind = kind_of(plural);
    let namespaces: std::collections::BTreeSet<&String> = objects.iter().map(|o| &o.0).collect();
    for ns in namespaces {
        ensure_namespace(client, ns).await;
    }
    let objects = Arc::new(objects);
    let mut set = tokio::task::JoinSet::new();
    for worker in 0..8 {
        let (client, objects) = (client.clone(), Arc::clone(&objects));
        let (plural, version, kind) = (plural.to_string(), version.to_string(), kind.clone());
        set.spawn(async move {
            for (ns, name, spec) in objects.iter().skip(worker).step_by(8) {
                let object: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": format!("example.com/{version}"), "kind": kind,
                    "metadata": {"name": name, "namespace": ns}, "spec": spec
                }))
                .expect("object");
                objects_api(&client, &plural, &version, ns)
                    .create(&PostParams::default(), &object)
                    .await
                    .unwrap_or_else(|e| panic!("{ns}/{name} is created: {e}"));
            }
        });
    }
    while let Some(done) = set.join_next().await {
        done.expect("creating objects");
    }
}

pub async fn admin(plane: &ControlPlane) -> Client {
    plane
        .client(&plane.admin_kubeconfig)
        .await
        .expect("admin client")
}

/// Applies a CRD as the admin, as field manager `crd-safety-test` (another
/// tool, as far as the plugin knows), and waits until it is Established.
pub async fn install(client: &Client, manifest: &Value) {
    install_as(client, manifest, "crd-safety-test").await;
}

/// [`install`] with the given field manager.
pub async fn install_as(client: &Client, manifest: &Value, manager: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = manifest["metadata"]["name"].as_str().expect("name");
    let crd: CustomResourceDefinition =
        serde_json::from_value(manifest.clone()).expect("typed CRD");
    crds.patch(
        name,
        &PatchParams::apply(manager).force(),
        &Patch::Apply(&crd),
    )
    .await
    .expect("the CRD is applied");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let live = crds.get(name).await.expect("CRD readable");
        let established = live
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        if established {
            return;
        }
        assert!(Instant::now() < deadline, "{name} not Established in 30s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn write_manifest(dir: &Path, name: &str, manifest: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(manifest).expect("json"))
        .expect("manifest written");
    path.display().to_string()
}

/// Runs `apply-check -f manifest --kubeconfig kubeconfig extra...`. With
/// `-o json`, also holds the offline `invalidCrd` check to the server's dry
/// run on every CRD ([`assert_offline_agrees_with_dry_run`]).
pub fn apply_check(manifest: &str, kubeconfig: &str, extra: &[&str]) -> Run {
    let mut args = vec!["apply-check", "-f", manifest, "--kubeconfig", kubeconfig];
    args.extend_from_slice(extra);
    let r = run(&args, None);
    if extra.windows(2).any(|w| w == ["-o", "json"])
        && let Ok(report) = serde_json::from_str::<Value>(&r.stdout)
    {
        assert_offline_agrees_with_dry_run(&report);
    }
    r
}

/// The offline check and the server's dry run must agree on every CRD:
/// `invalidCrd` never without `apiServerRejects`, and a refusal is explained
/// by `invalidCrd`, by a check of an update rule (stored versions, scope,
/// names), or by what the offline check does not cover yet (CEL types and
/// cost). A disagreement is a bug in the offline check.
pub fn assert_offline_agrees_with_dry_run(report: &Value) {
    for crd in report["crds"].as_array().into_iter().flatten() {
        let checks: Vec<&str> = crd["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["check"].as_str())
            .collect();
        let name = crd["name"].as_str().unwrap_or_default();
        let rejected = checks.contains(&"apiServerRejects");
        if checks.contains(&"invalidCrd") {
            assert!(
                rejected,
                "{name}: invalidCrd, but the server's dry run accepts it"
            );
        }
        if rejected && !checks.contains(&"invalidCrd") {
            let message = crd["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|f| f["check"] == "apiServerRejects")
                .and_then(|f| f["message"].as_str())
                .unwrap_or_default();
            let explained = checks
                .iter()
                .any(|c| matches!(*c, "storedVersionRemoval" | "scope" | "names"))
                || message.contains("compilation failed")
                || message.contains("cost");
            assert!(
                explained,
                "{name}: the server refuses it but invalidCrd does not: {message}"
            );
        }
    }
}

pub fn findings(report: &Value) -> Vec<(String, String, Option<String>)> {
    report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap_or_default().to_string(),
                f["severity"].as_str().unwrap_or_default().to_string(),
                f["version"].as_str().map(str::to_string),
            )
        })
        .collect()
}
