//! Live tests of `migrate` against a real kube-apiserver and etcd: objects
//! are created while `v1alpha1` is the storage version, the storage version
//! moves to `v1`, and etcd itself is read to see what the migration really
//! stored. Each test uses its own CRD so they can run in parallel on the
//! shared control plane.

// Signals, pseudo-terminals and the test control plane: Unix only.
#![cfg(unix)]

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};
use support::envtest::{
    ControlPlane, control_plane, matrix, minor_of, serving_storage_migration,
    storage_migration_flags,
};
use support::etcd::{stored_objects, stored_version_counts};
use support::live::{
    admin, apply_check, crd, create_objects, install_as, objects_api, write_manifest,
};
use support::run::{Run, run};
use support::runs::{answer_in_terminal, assert_has, finding, finished, grant, start};

/// The plugin's own field manager: re-installing the CRD from the tests
/// never conflicts with what `apply` writes.
const OURS: &str = "kubectl-crd-safety";

/// `<plural>.example.com` serving v1alpha1 and v1, storing in `storage`.
fn two_versions(plural: &str, storage: &str) -> Value {
    crd(
        plural,
        &[
            ("v1alpha1", true, storage == "v1alpha1"),
            ("v1", true, storage == "v1"),
        ],
        json!({}),
    )
}

/// The properties of `spec` in version `i` of a test CRD.
fn spec_props(manifest: &mut Value, i: usize) -> &mut Value {
    &mut manifest["spec"]["versions"][i]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
}

/// `n` objects `<prefix>-<i>` in namespace `ns` with `spec.size = i`.
fn numbered(ns: &str, prefix: &str, n: usize) -> Vec<(String, String, Value)> {
    (0..n)
        .map(|i| {
            (
                ns.to_string(),
                format!("{prefix}-{i:05}"),
                json!({"size": i}),
            )
        })
        .collect()
}

/// The live CRD's `status.storedVersions`.
async fn stored_versions(client: &Client, name: &str) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.get(name)
        .await
        .expect("the CRD is readable")
        .status
        .and_then(|s| s.stored_versions)
        .unwrap_or_default()
}

/// Installs `plural` storing in v1alpha1, creates `objects`, then moves the
/// storage version to v1 (storedVersions becomes [v1alpha1, v1]).
async fn stored_in_alpha(
    client: &Client,
    old: &Value,
    new: &Value,
    objects: Vec<(String, String, Value)>,
) {
    let plural = old["spec"]["names"]["plural"].as_str().expect("plural");
    install_as(client, old, OURS).await;
    create_objects(client, plural, "v1alpha1", objects).await;
    install_as(client, new, OURS).await;
    let name = format!("{plural}.example.com");
    assert_eq!(stored_versions(client, &name).await, ["v1alpha1", "v1"]);
}

/// [`stored_in_alpha`] of [`two_versions`] of `plural`.
async fn alpha_then_v1(client: &Client, plural: &str, objects: Vec<(String, String, Value)>) {
    let (old, new) = (two_versions(plural, "v1alpha1"), two_versions(plural, "v1"));
    stored_in_alpha(client, &old, &new, objects).await;
}

/// Runs `migrate args... --kubeconfig <kubeconfig>` without a terminal.
fn migrate(kubeconfig: &std::path::Path, args: &[&str]) -> Run {
    let kubeconfig = kubeconfig.display().to_string();
    let mut all = vec!["migrate"];
    all.extend_from_slice(args);
    all.extend(["--kubeconfig", &kubeconfig]);
    run(&all, None)
}

/// What etcd holds of `<plural>`'s objects: how many in each `apiVersion`.
fn in_etcd(plane: &ControlPlane, plural: &str) -> BTreeMap<String, usize> {
    stored_version_counts(&plane.etcd, "example.com", plural)
}

/// `n` objects, all in `version`, as [`in_etcd`] counts them.
fn all_in(version: &str, n: usize) -> BTreeMap<String, usize> {
    BTreeMap::from([(format!("example.com/{version}"), n)])
}

#[tokio::test]
async fn migrate_rewrites_every_object_in_the_storage_version_and_trims_stored_versions() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let mut objects = numbered("default", "w", 15);
    objects.extend(numbered("team-a", "t", 10));
    alpha_then_v1(&client, "migrations", objects).await;
    let name = "migrations.example.com";
    assert_eq!(
        in_etcd(plane, "migrations"),
        all_in("v1alpha1", 25),
        "etcd holds every object as written, in v1alpha1"
    );

    // A release that drops v1alpha1 is refused, and the finding names the fix.
    let dir = tempfile::tempdir().expect("tempdir");
    let dropped = write_manifest(
        dir.path(),
        "v1-only.json",
        &crd("migrations", &[("v1", true, true)], json!({})),
    );
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&dropped, &kubeconfig, &["-o", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    let removal = finding(&report, "storedVersionRemoval");
    let message = removal["message"].as_str().unwrap_or_default();
    assert_has(
        message,
        "`kubectl crd-safety migrate migrations.example.com`",
    );

    // --dry-run plans and checks, per namespace, and changes nothing.
    let r = migrate(
        &plane.admin_kubeconfig,
        &[name, "--dry-run", "--by-namespace", "-o", "json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let plan = r.json();
    assert_eq!(plan["migrate"]["decision"], "dryRun");
    let c = &plan["crds"][0];
    assert_eq!(
        (&c["storageVersion"], &c["storedVersions"], &c["objects"]),
        (&json!("v1"), &json!(["v1alpha1", "v1"]), &json!(25))
    );
    assert_eq!(c["namespaces"], json!({"default": 15, "team-a": 10}));
    assert_eq!(c["findings"], json!([]));
    assert_eq!(
        in_etcd(plane, "migrations"),
        all_in("v1alpha1", 25),
        "a dry run writes nothing"
    );
    assert_eq!(stored_versions(&client, name).await, ["v1alpha1", "v1"]);

    // The table says the same to a person.
    let r = migrate(&plane.admin_kubeconfig, &[name, "--dry-run"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stdout,
        "migrations.example.com  storage version v1, storedVersions [v1alpha1, v1]: 25 objects to rewrite in v1",
    );
    assert_has(&r.stderr, "Dry run: nothing migrated");

    // Without a terminal and without --yes nothing happens.
    let r = migrate(&plane.admin_kubeconfig, &[name]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_has(&r.stderr, "refusing to migrate without confirmation");

    let r = migrate(&plane.admin_kubeconfig, &[name, "--yes", "-o", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let done = r.json();
    assert_eq!(done["migrate"]["decision"], "migrated");
    let result = &done["migrate"]["results"][0];
    assert_eq!(
        (
            &result["result"],
            &result["rewritten"],
            &result["storedVersions"]
        ),
        (&json!("migrated"), &json!(25), &json!(["v1"]))
    );
    assert_eq!(
        in_etcd(plane, "migrations"),
        all_in("v1", 25),
        "etcd now holds every object in v1"
    );
    assert_eq!(stored_versions(&client, name).await, ["v1"]);

    // Now the release that drops v1alpha1 passes, and the server takes it.
    let r = apply_check(&dropped, &kubeconfig, &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = run(
        &[
            "apply",
            "-f",
            &dropped,
            "--kubeconfig",
            &kubeconfig,
            "--yes",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let versions: Vec<String> = crds
        .get(name)
        .await
        .expect("crd")
        .spec
        .versions
        .iter()
        .map(|v| v.name.clone())
        .collect();
    assert_eq!(versions, ["v1"]);

    // Running it again has nothing to do.
    let r = migrate(&plane.admin_kubeconfig, &[name, "--yes"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_has(&r.stderr, "Nothing to migrate");
}

#[tokio::test]
async fn an_unknown_crd_is_an_input_error() {
    let Some(plane) = control_plane() else { return };
    let r = migrate(&plane.admin_kubeconfig, &["nopes.example.com", "--dry-run"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stderr,
        "customresourcedefinition nopes.example.com not found in context envtest-admin",
    );
}

#[tokio::test]
async fn concurrent_writes_and_deletes_are_neither_lost_nor_fatal() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let n = 600;
    alpha_then_v1(&client, "busies", numbered("default", "b", n)).await;
    // A writer bumps spec.size of the first 100 objects, round after round,
    // and the objects from 500 on are deleted, while the migration runs.
    let running = Arc::new(AtomicBool::new(true));
    let writer = {
        let (client, running) = (client.clone(), Arc::clone(&running));
        tokio::spawn(async move {
            let api = objects_api(&client, "busies", "v1", "default");
            let mut last = BTreeMap::new();
            let mut round = 0u64;
            while running.load(Ordering::SeqCst) {
                round += 1;
                for i in 0..100 {
                    let name = format!("b-{i:05}");
                    let size = 1_000_000 + round * 1000 + i;
                    let patch = json!({"spec": {"size": size}});
                    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .unwrap_or_else(|e| panic!("{name} is updated: {e}"));
                    last.insert(name, size);
                }
            }
            last
        })
    };
    let deleter = {
        let client = client.clone();
        tokio::spawn(async move {
            let api = objects_api(&client, "busies", "v1", "default");
            for i in 500..n {
                let _ = api
                    .delete(&format!("b-{i:05}"), &DeleteParams::default())
                    .await;
            }
        })
    };
    let kubeconfig = plane.admin_kubeconfig.clone();
    let r = tokio::task::spawn_blocking(move || {
        migrate(
            &kubeconfig,
            &[
                "busies.example.com",
                "--yes",
                "--chunk-size",
                "25",
                "--concurrency",
                "2",
                "-o",
                "json",
            ],
        )
    })
    .await
    .expect("migrate ran");
    running.store(false, Ordering::SeqCst);
    let last = writer.await.expect("the writer finished");
    deleter.await.expect("the deleter finished");

    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let result = &r.json()["migrate"]["results"][0];
    assert_eq!(result["result"], "migrated", "{result}");
    let handled = ["rewritten", "writtenByOthers", "deleted"]
        .iter()
        .map(|k| result[k].as_u64().expect("a count"))
        .sum::<u64>();
    assert!((500..=n as u64).contains(&handled), "{result}");
    let stored = stored_objects(&plane.etcd, "example.com", "busies");
    assert_eq!(stored.len(), 500, "the deleted objects are gone");
    assert!(
        stored.values().all(|o| o["apiVersion"] == "example.com/v1"),
        "every remaining object is stored in v1"
    );
    // No concurrent update was overwritten with an older copy.
    for (name, size) in &last {
        assert_eq!(
            stored[&format!("default/{name}")]["spec"]["size"],
            json!(size),
            "{name} keeps the writer's last update"
        );
    }
    assert_eq!(stored_versions(&client, "busies.example.com").await, ["v1"]);
}

#[tokio::test]
async fn a_user_who_may_not_update_changes_nothing() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    alpha_then_v1(&client, "readonlies", numbered("default", "r", 30)).await;
    // A user of this test's own may read CRDs and these objects, nothing
    // more (the shared `restricted` user must keep no bindings).
    let user = "readonly-migrator";
    let kubeconfig = plane.user_kubeconfig(user);
    grant(
        &client,
        "readonly-migrate",
        user,
        json!([
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list"]},
            {"apiGroups": ["example.com"], "resources": ["readonlies"], "verbs": ["get", "list"]}
        ]),
    )
    .await;
    // RBAC is read from a cache: wait until the plan can be made.
    let deadline = Instant::now() + Duration::from_secs(20);
    let r = loop {
        let r = migrate(
            &kubeconfig,
            &["readonlies.example.com", "--yes", "-o", "json"],
        );
        if r.code != 3 || r.stdout.contains("\"migrate\"") || Instant::now() > deadline {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let result = &r.json()["migrate"]["results"][0];
    assert_eq!(result["result"], "failed", "{result}");
    let message = result["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("forbidden (403)")
            && message.contains("update")
            && message.contains("storedVersions untouched [v1alpha1, v1]"),
        "{message}"
    );
    assert_eq!(result["rewritten"], 0);
    assert_eq!(
        in_etcd(plane, "readonlies"),
        all_in("v1alpha1", 30),
        "nothing was written"
    );
    assert_eq!(
        stored_versions(&client, "readonlies.example.com").await,
        ["v1alpha1", "v1"]
    );
}

#[tokio::test]
async fn fields_the_storage_schema_drops_refuse_the_migration_until_accepted() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // v1alpha1 knows spec.legacy; v1 does not.
    let mut old = two_versions("legacies", "v1alpha1");
    spec_props(&mut old, 0)["legacy"] = json!({"type": "string"});
    let mut new = two_versions("legacies", "v1");
    spec_props(&mut new, 0)["legacy"] = json!({"type": "string"});
    let mut objects = numbered("default", "plain", 4);
    for i in 0..3 {
        objects.push((
            "default".into(),
            format!("old-{i}"),
            json!({"size": i, "legacy": "keep me"}),
        ));
    }
    stored_in_alpha(&client, &old, &new, objects).await;

    let r = migrate(&plane.admin_kubeconfig, &["legacies.example.com", "--yes"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stderr,
        "not migrating: 3 objects would lose fields the storage version's schema does not \
             describe (use --allow-pruning to accept the loss)",
    );
    assert!(
        r.stdout.contains("prunedFields") && r.stdout.contains("^.spec.legacy"),
        "the table names the field: {}",
        r.stdout
    );
    assert_eq!(
        in_etcd(plane, "legacies"),
        all_in("v1alpha1", 7),
        "a refused migration writes nothing"
    );

    let r = migrate(
        &plane.admin_kubeconfig,
        &["legacies.example.com", "--yes", "--allow-pruning"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let stored = stored_objects(&plane.etcd, "example.com", "legacies");
    assert!(
        stored
            .values()
            .all(|o| o["apiVersion"] == "example.com/v1" && o["spec"].get("legacy").is_none()),
        "{stored:?}"
    );
    assert_eq!(
        stored_versions(&client, "legacies.example.com").await,
        ["v1"]
    );
}

#[tokio::test]
async fn objects_a_rewrite_would_reject_refuse_the_migration() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // v1's rule reads spec.size, which two objects lack: the missing key is
    // an evaluation error, which is never ratcheted, so writing them back
    // fails.
    let old = two_versions("requireds", "v1alpha1");
    let mut new = two_versions("requireds", "v1");
    new["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.size >= 0"}]);
    let mut objects = numbered("default", "ok", 3);
    objects.push(("default".into(), "empty-1".into(), json!({})));
    objects.push(("default".into(), "empty-2".into(), json!({})));
    stored_in_alpha(&client, &old, &new, objects).await;

    let r = migrate(
        &plane.admin_kubeconfig,
        &["requireds.example.com", "--yes", "-o", "json"],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    assert_eq!(report["migrate"]["decision"], "refused");
    let finding = &report["crds"][0]["findings"][0];
    assert_eq!(
        (
            &finding["check"],
            &finding["severity"],
            &finding["objects"]["examples"]
        ),
        (
            &json!("invalidObjects"),
            &json!("error"),
            &json!(["default/empty-1", "default/empty-2"])
        )
    );
    assert_has(
        &r.stderr,
        "not migrating: 2 objects the API server would reject when written back",
    );
    assert_eq!(
        stored_versions(&client, "requireds.example.com").await,
        ["v1alpha1", "v1"]
    );
}

/// A new required field is ratcheted at the object that lacks it: the
/// migration's write leaves that object as it was, so the server takes it.
#[tokio::test]
async fn objects_lacking_a_new_required_field_are_migrated_as_the_server_ratchets_them() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let old = two_versions("requiredmigs", "v1alpha1");
    let mut new = two_versions("requiredmigs", "v1");
    new["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] =
        json!(["size"]);
    let mut objects = numbered("default", "ok", 2);
    objects.push(("default".into(), "empty-1".into(), json!({})));
    stored_in_alpha(&client, &old, &new, objects).await;
    let r = migrate(
        &plane.admin_kubeconfig,
        &["requiredmigs.example.com", "--yes", "-o", "json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    assert_eq!(report["migrate"]["decision"], "migrated", "{report}");
    assert_eq!(report["migrate"]["results"][0]["rewritten"], 3, "{report}");
    assert_eq!(
        stored_versions(&client, "requiredmigs.example.com").await,
        ["v1"]
    );
}

#[tokio::test]
async fn ctrl_c_stops_cleanly_and_a_second_run_finishes() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let n = 3000;
    alpha_then_v1(&client, "interrupts", numbered("default", "i", n)).await;
    let args = [
        "migrate",
        "interrupts.example.com",
        "--yes",
        "--chunk-size",
        "50",
        "--concurrency",
        "1",
        "-o",
        "json",
    ];
    let mut child = start(&args, &plane.admin_kubeconfig);
    // Interrupt once etcd shows the rewrite under way.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let counts = in_etcd(plane, "interrupts");
        if counts.get("example.com/v1").copied().unwrap_or(0) >= 100 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rewrite never started: {counts:?}"
        );
        assert!(
            child.try_wait().expect("child status").is_none(),
            "migrate ended before it was interrupted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT sent");
    let r = finished(child).await;
    assert_eq!(r.code, 130, "{}{}", r.stdout, r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("a JSON report");
    assert_eq!(report["migrate"]["decision"], "interrupted");
    let result = &report["migrate"]["results"][0];
    assert_eq!(result["result"], "interrupted", "{result}");
    assert!(
        result["message"]
            .as_str()
            .is_some_and(|m| m.contains("storedVersions untouched [v1alpha1, v1]")),
        "{result}"
    );
    let stored = in_etcd(plane, "interrupts");
    let migrated = stored.get("example.com/v1").copied().unwrap_or(0);
    assert!((100..n).contains(&migrated), "stopped part-way: {stored:?}");
    assert_eq!(
        result["rewritten"],
        json!(migrated),
        "the report counts what etcd shows"
    );
    assert_eq!(
        stored_versions(&client, "interrupts.example.com").await,
        ["v1alpha1", "v1"]
    );

    let r = migrate(
        &plane.admin_kubeconfig,
        &["interrupts.example.com", "--yes", "--concurrency", "8"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(in_etcd(plane, "interrupts"), all_in("v1", n));
    assert_eq!(
        stored_versions(&client, "interrupts.example.com").await,
        ["v1"]
    );
}

#[tokio::test]
async fn the_question_names_the_cluster_and_the_counts_and_no_changes_nothing() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    alpha_then_v1(&client, "prompteds", numbered("default", "p", 5)).await;
    let kubeconfig = plane.admin_kubeconfig.clone();
    let server = plane.server.clone();
    let (code, screen) = tokio::task::spawn_blocking(move || {
        let question = "Migrate 1 CRD (5 objects) in context envtest-admin? [y/N]";
        let args = ["migrate", "prompteds.example.com"];
        answer_in_terminal(&args, &kubeconfig, 160, question, "n")
    })
    .await
    .expect("pty thread");
    assert_eq!(code, 4, "{screen}");
    assert_has(
        &screen,
        &format!("About to migrate in context envtest-admin ({server}):"),
    );
    assert_has(
        &screen,
        "prompteds.example.com  rewrite 5 objects in v1, then storedVersions [v1alpha1, v1] -> [v1]",
    );
    assert_has(&screen, "Nothing migrated.");
    assert_eq!(in_etcd(plane, "prompteds"), all_in("v1alpha1", 5));
    assert_eq!(
        stored_versions(&client, "prompteds.example.com").await,
        ["v1alpha1", "v1"]
    );
}

#[tokio::test]
async fn stored_versions_are_only_trimmed_on_the_crd_as_it_was_planned() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    alpha_then_v1(&client, "preconditions", Vec::new()).await;
    let name = "preconditions.example.com";
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let planned = crds
        .get(name)
        .await
        .expect("crd")
        .metadata
        .resource_version
        .expect("resourceVersion");
    // Someone changes the CRD after the plan was made.
    crds.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .expect("the CRD is changed");
    let conn = crd_safety::cluster::Connection::from_client(client.clone(), "test", "envtest");
    let v1 = ["v1".to_string()];
    let update = conn
        .set_stored_versions(name, &planned, &v1)
        .await
        .expect("the server answers");
    assert!(
        matches!(
            update,
            crd_safety::cluster::StoredVersionsUpdate::CrdChanged(_)
        ),
        "{update:?}"
    );
    assert_eq!(stored_versions(&client, name).await, ["v1alpha1", "v1"]);

    let current = crds
        .get(name)
        .await
        .expect("crd")
        .metadata
        .resource_version
        .expect("resourceVersion");
    let update = conn
        .set_stored_versions(name, &current, &v1)
        .await
        .expect("the server answers");
    assert_eq!(update, crd_safety::cluster::StoredVersionsUpdate::Set);
    assert_eq!(stored_versions(&client, name).await, ["v1"]);
}

/// The `storagemigration.k8s.io` version Kubernetes `minor` serves once
/// [`storage_migration_flags`] enabled it.
fn storage_migration_api(minor: u32) -> &'static str {
    match minor {
        37.. => "storagemigration.k8s.io/v1",
        35 | 36 => "storagemigration.k8s.io/v1beta1",
        _ => "storagemigration.k8s.io/v1alpha1",
    }
}

/// The `StorageVersionMigration`s in the cluster, by name.
async fn storage_migrations(client: &Client, api: &str) -> Vec<String> {
    let request = http::Request::get(format!("/apis/{api}/storageversionmigrations"))
        .body(Vec::new())
        .expect("request");
    let list: Value = client.request(request).await.expect("the list is readable");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// The server engine on every Kubernetes of the matrix: the plan names it,
/// the cluster's own migrator (kube-controller-manager) rewrites every
/// object, and storedVersions ends as the storage version alone, trimmed
/// by the migrator from 1.36 and by crd-safety before.
///
/// 1.30's alpha migrator waits at its checkpoint until its cache sees a
/// write to the resource, which a quiet one never gets (seen with 1.30.14's
/// kube-controller-manager, 2026-11): there `auto` gives up on it and
/// rewrites the objects itself, the same as with no migrator at all. So
/// 1.30 runs without kube-controller-manager, whose build lengthened a
/// cold CI run for an outcome the test cannot tell from its absence
/// (figures: docs/BENCHMARKS.md, "kube-controller-manager in a cold CI
/// run").
#[tokio::test]
async fn the_server_engine_hands_the_rewrite_to_the_clusters_migrator() {
    for version in matrix() {
        let minor = minor_of(&version);
        let runs_migrator = minor != 30;
        let Some(mut plane) = serving_storage_migration(&version, runs_migrator) else {
            return;
        };
        let client = admin(&plane).await;
        alpha_then_v1(&client, "servermigrations", numbered("default", "s", 30)).await;
        let name = "servermigrations.example.com";
        let api = storage_migration_api(minor);
        // Started once the CRD exists, so the migrator's garbage-collector
        // graph knows the resource from its first discovery.
        if runs_migrator {
            let (_, gates) = storage_migration_flags(minor);
            plane.start_controller_manager(
                &[
                    "garbage-collector-controller",
                    "storage-version-migrator-controller",
                ],
                &gates,
            );
        }

        let r = migrate(&plane.admin_kubeconfig, &[name, "--dry-run", "-o", "json"]);
        assert_eq!(r.code, 0, "[{minor}] {}{}", r.stdout, r.stderr);
        assert_eq!(
            r.json()["engine"],
            json!({"name": "server", "api": api, "reason": format!("the cluster serves {api}"), "fallback": true}),
            "[{minor}]"
        );
        let r = migrate(&plane.admin_kubeconfig, &[name, "--dry-run"]);
        assert!(
            r.stdout.contains(&format!(
                "engine: server (the cluster's storage-version migrator, {api})"
            )),
            "[{minor}] {}",
            r.stdout
        );

        if !runs_migrator {
            // No migrator takes the migration up: auto gives up on it and
            // rewrites the objects itself.
            let r = migrate(
                &plane.admin_kubeconfig,
                &[name, "--server-wait", "10s", "--yes", "-o", "json"],
            );
            assert_eq!(r.code, 0, "[{minor}] {}{}", r.stdout, r.stderr);
            let result = &r.json()["migrate"]["results"][0];
            assert_eq!(
                (&result["result"], &result["engine"], &result["trimmedBy"]),
                (&json!("migrated"), &json!("client"), &json!("client")),
                "[{minor}] {result}"
            );
            assert!(
                result["fallback"]
                    .as_str()
                    .is_some_and(|f| f.contains("no storage-version migrator took up")),
                "[{minor}] {result}"
            );
            assert_eq!(in_etcd(&plane, "servermigrations"), all_in("v1", 30));
            assert_eq!(storage_migrations(&client, api).await, Vec::<String>::new());
            continue;
        }
        let r = migrate(
            &plane.admin_kubeconfig,
            &[name, "--engine", "server", "--yes", "-o", "json"],
        );
        assert_eq!(r.code, 0, "[{minor}] {}{}", r.stdout, r.stderr);
        let result = &r.json()["migrate"]["results"][0];
        assert_eq!(
            (
                &result["result"],
                &result["engine"],
                &result["storedVersions"]
            ),
            (&json!("migrated"), &json!("server"), &json!(["v1"])),
            "[{minor}] {result}"
        );
        // From 1.36 the migrator trims storedVersions itself.
        let trimmed_by = if minor >= 36 { "server" } else { "client" };
        assert_eq!(result["trimmedBy"], trimmed_by, "[{minor}] {result}");
        let migration = result["migration"].as_str().expect("the migration's name");
        assert!(
            migration.starts_with("servermigrations.example.com-"),
            "{migration}"
        );
        assert_eq!(
            in_etcd(&plane, "servermigrations"),
            all_in("v1", 30),
            "[{minor}] the cluster's migrator stored every object in v1"
        );
        assert_eq!(stored_versions(&client, name).await, ["v1"], "[{minor}]");
        assert_eq!(storage_migrations(&client, api).await, [migration]);
    }
}

/// Where the API is served but no migrator runs, `--engine auto` deletes
/// the migration it made and rewrites the objects itself, and says so;
/// `--engine server` fails and changes nothing.
#[tokio::test]
async fn with_no_migrator_auto_falls_back_to_the_client_and_server_fails() {
    let Some(plane) = serving_storage_migration("", false) else {
        return;
    };
    let client = admin(&plane).await;
    for plural in ["unmigrateds", "fallbacks"] {
        alpha_then_v1(&client, plural, numbered("default", "f", 10)).await;
    }

    let r = migrate(
        &plane.admin_kubeconfig,
        &[
            "unmigrateds.example.com",
            "--engine",
            "server",
            "--server-wait",
            "2s",
            "--yes",
        ],
    );
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("no storage-version migrator took up storageversionmigration")
            && r.stdout
                .contains("storedVersions untouched [v1alpha1, v1]; use --engine client"),
        "{}",
        r.stdout
    );
    assert_eq!(
        stored_versions(&client, "unmigrateds.example.com").await,
        ["v1alpha1", "v1"]
    );

    let r = migrate(
        &plane.admin_kubeconfig,
        &[
            "fallbacks.example.com",
            "--server-wait",
            "2s",
            "--yes",
            "-o",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let result = &r.json()["migrate"]["results"][0];
    assert_eq!(
        (&result["result"], &result["engine"], &result["rewritten"]),
        (&json!("migrated"), &json!("client"), &json!(10)),
        "{result}"
    );
    assert!(
        result["fallback"]
            .as_str()
            .is_some_and(|f| f.contains("no storage-version migrator took up")),
        "{result}"
    );
    assert_eq!(in_etcd(&plane, "fallbacks"), all_in("v1", 10));
    assert_eq!(
        stored_versions(&client, "fallbacks.example.com").await,
        ["v1"]
    );
    let api = storage_migration_api(minor_of(""));
    assert_eq!(
        storage_migrations(&client, api).await,
        Vec::<String>::new(),
        "no migration is left to start behind the user's back"
    );
}

/// Where the cluster does not serve the API, auto is the client and
/// `--engine server` is refused before anything is asked.
#[tokio::test]
async fn without_the_api_auto_is_the_client_and_server_is_refused() {
    let Some(plane) = control_plane() else { return };
    if plane.kube_minor >= 37 {
        return; // 1.37 serves storagemigration.k8s.io/v1 by default
    }
    let client = admin(plane).await;
    alpha_then_v1(&client, "clientonlys", numbered("default", "c", 3)).await;
    let name = "clientonlys.example.com";
    let r = migrate(&plane.admin_kubeconfig, &[name, "--dry-run", "-o", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.json()["engine"],
        json!({"name": "client", "reason": "the cluster does not serve storagemigration.k8s.io", "fallback": false})
    );
    let r = migrate(
        &plane.admin_kubeconfig,
        &[name, "--engine", "server", "--yes"],
    );
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stderr,
        "--engine server: context envtest-admin does not serve storagemigration.k8s.io",
    );
    assert_eq!(stored_versions(&client, name).await, ["v1alpha1", "v1"]);
}

#[test]
fn migrate_help_documents_its_exit_codes() {
    let r = run(&["migrate", "--help"], None);
    assert_eq!(r.code, 0);
    for line in [
        "130  interrupted (Ctrl-C)",
        "--allow-pruning",
        "--dry-run",
        "--by-namespace",
        "--concurrency",
        "--engine <ENGINE>",
        "--server-wait",
    ] {
        assert!(r.stdout.contains(line), "{line}: {}", r.stdout);
    }
}
