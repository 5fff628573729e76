//! Live tests of `apply` against a real kube-apiserver and etcd: what gets
//! written, what is refused, and what the user is told. Each test uses its
//! own CRD names so the tests can run in parallel on the shared control
//! plane.

// Signals, pseudo-terminals and the test control plane: Unix only.
#![cfg(unix)]

use crate::support;

use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use serde_json::{Value, json};
use support::envtest::{ControlPlane, control_plane, dedicated};
use support::live::{admin, apply_check, crd, findings, install, install_as, write_manifest};
use support::run::{Run, run};
use support::runs::{
    answer_in_terminal, answer_in_terminal_after, answers_in_terminal, assert_has, grant,
};
use tempfile::TempDir;

/// The field manager of an earlier run of the plugin: upgrades of what it
/// applied do not conflict.
const OURS: &str = "kubectl-crd-safety";

/// Runs `apply -f path... --kubeconfig <admin> extra...` without a terminal.
fn apply(plane: &ControlPlane, paths: &[&str], extra: &[&str]) -> Run {
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let mut args = vec!["apply"];
    for p in paths {
        args.extend(["-f", p]);
    }
    args.extend(["--kubeconfig", &kubeconfig]);
    args.extend_from_slice(extra);
    run(&args, None)
}

/// The live CRD as JSON, or `None` when it does not exist.
async fn live(client: &Client, name: &str) -> Option<Value> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.get_opt(name)
        .await
        .expect("the admin reads CRDs")
        .map(|c| serde_json::to_value(c).expect("json"))
}

/// The properties of `spec` in a live CRD's first version.
async fn spec_fields(client: &Client, name: &str) -> Value {
    let crd = live(client, name).await.expect("the CRD exists");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .clone()
}

/// `(name, action, result)` for every CRD in `apply.results`.
fn results(report: &Value) -> Vec<(String, String, String)> {
    report["apply"]["results"]
        .as_array()
        .expect("apply.results")
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_string(),
                r["action"].as_str().unwrap_or_default().to_string(),
                r["result"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn triple(name: &str, action: &str, result: &str) -> (String, String, String) {
    (name.into(), action.into(), result.into())
}

/// `<plural>.example.com` serving and storing v1 alone, with `fields`
/// added to its spec.
fn v1_crd(plural: &str, fields: Value) -> Value {
    crd(plural, &[("v1", true, true)], fields)
}

/// What most tests here start from: `<plural>` installed by `manager` with
/// the spec fields `installed`, and its next release, with `next`, written
/// to `<plural>.json` in a new directory. The directory and the manifest's
/// path.
async fn installed_and_next(
    client: &Client,
    plural: &str,
    manager: &str,
    installed: Value,
    next: Value,
) -> (TempDir, String) {
    install_as(client, &v1_crd(plural, installed), manager).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), &format!("{plural}.json"), &v1_crd(plural, next));
    (dir, path)
}

/// Field `field` of `spec` in a live CRD's first version, if it has it.
async fn spec_field(client: &Client, name: &str, field: &str) -> Option<Value> {
    spec_fields(client, name).await.get(field).cloned()
}

/// `apply-check -o json` of `path` as the admin passes with one finding,
/// `fieldManagerConflict` of `severity`: its message.
fn conflict_message(plane: &ControlPlane, path: &str, severity: &str) -> String {
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(path, &kubeconfig, &["-o", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    // The manifest also adds fields, each listed as info.
    let found: Vec<_> = findings(&report)
        .into_iter()
        .filter(|(check, _, _)| check != "fieldAddition")
        .collect();
    assert_eq!(
        found,
        [("fieldManagerConflict".into(), severity.into(), None)]
    );
    report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == "fieldManagerConflict")
        .and_then(|f| f["message"].as_str())
        .expect("message")
        .to_string()
}

#[tokio::test]
async fn a_safe_upgrade_is_applied_with_yes_and_is_visible_in_the_cluster() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    install_as(&client, &v1_crd("upgrades", json!({})), OURS).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let next = v1_crd("upgrades", json!({"color": {"type": "string"}}));
    write_manifest(dir.path(), "10-upgrades.json", &next);
    let newcomer = v1_crd("newcomers", json!({}));
    write_manifest(dir.path(), "20-newcomers.json", &newcomer);
    let path = dir.path().display().to_string();

    let r = apply(plane, &[&path], &["--yes", "-o", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    assert_eq!(report["apply"]["decision"], "applied");
    assert_eq!(
        results(&report),
        [
            triple("upgrades.example.com", "update", "configured"),
            triple("newcomers.example.com", "create", "created"),
        ]
    );
    // The cluster has the new schema, written by our field manager, and the
    // new CRD serves.
    assert_eq!(
        spec_field(&client, "upgrades.example.com", "color").await,
        Some(json!({"type": "string"}))
    );
    let managers = managers(&client, "upgrades.example.com").await;
    assert!(
        managers.contains(&(OURS.into(), "Apply".into())),
        "{managers:?}"
    );
    // The CRD created is ours as an apply's would be: one Apply entry, so
    // the next release applies without a conflict with our own create.
    assert_eq!(
        self::managers(&client, "newcomers.example.com").await,
        [(OURS.to_string(), "Apply".to_string())]
    );
    let newcomer = live(&client, "newcomers.example.com").await.expect("crd");
    let established = newcomer["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "{newcomer}");

    // Running it again changes nothing and says so.
    let again = apply(plane, &[&path], &["--yes"]);
    assert_eq!(again.code, 0, "{}{}", again.stdout, again.stderr);
    assert_has(&again.stderr, "Nothing to apply");
}

#[tokio::test]
async fn error_findings_refuse_the_apply_unless_forced() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let (_dir, path) = installed_and_next(
        &client,
        "refusals",
        OURS,
        json!({"mode": {"type": "string"}}),
        json!({"mode": {"type": "integer"}}),
    )
    .await;

    let r = apply(plane, &[&path], &["--yes"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_has(&r.stdout, "┆ type ");
    assert_has(&r.stderr, "not applying: 1 error finding (use --force");
    assert_eq!(
        spec_fields(&client, "refusals.example.com").await["mode"]["type"],
        "string",
        "a refused apply leaves the cluster alone"
    );

    let r = apply(plane, &[&path], &["--yes", "--force"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_has(&r.stdout, "refusals.example.com  configured");
    assert_eq!(
        spec_fields(&client, "refusals.example.com").await["mode"]["type"],
        "integer"
    );
}

#[tokio::test]
async fn without_a_terminal_and_without_yes_nothing_is_applied() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let extra = json!({"extra": {"type": "string"}});
    let (_dir, path) = installed_and_next(&client, "quiets", OURS, json!({}), extra).await;
    let r = apply(plane, &[&path], &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_has(&r.stderr, "no terminal to ask on (pass --yes");
    assert!(
        r.stdout.contains("quiets.example.com  SAFE"),
        "the report is still shown: {}",
        r.stdout
    );
    assert_eq!(
        spec_field(&client, "quiets.example.com", "extra").await,
        None,
        "nothing was written"
    );
}

/// Runs `apply` in a pseudo-terminal, waits for the question, answers with
/// one key and returns the exit code and everything the terminal showed.
fn apply_in_terminal(plane: &ControlPlane, path: &str, key: &str) -> (i32, String) {
    let question = "to context envtest-admin? [y/N]";
    let args = ["apply", "-f", path];
    answer_in_terminal(&args, &plane.admin_kubeconfig, 120, question, key)
}

#[tokio::test]
async fn the_question_is_answered_in_a_terminal() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let answer = json!({"answer": {"type": "string"}});
    let (_dir, path) = installed_and_next(&client, "prompts", OURS, json!({}), answer).await;
    let path_ref = path.clone();
    let (code, screen) =
        tokio::task::spawn_blocking(move || apply_in_terminal(plane, &path_ref, "n"))
            .await
            .expect("pty thread");
    assert_eq!(code, 4, "{screen}");
    assert_has(&screen, "About to apply to context envtest-admin");
    assert_has(&screen, "prompts.example.com  update");
    assert_has(&screen, "Nothing applied.");
    assert_eq!(
        spec_field(&client, "prompts.example.com", "answer").await,
        None
    );

    let (code, screen) = tokio::task::spawn_blocking(move || apply_in_terminal(plane, &path, "y"))
        .await
        .expect("pty thread");
    assert_eq!(code, 0, "{screen}");
    assert_has(&screen, "prompts.example.com  configured");
    assert_eq!(
        spec_field(&client, "prompts.example.com", "answer").await,
        Some(json!({"type": "string"}))
    );
}

#[tokio::test]
async fn a_field_manager_conflict_is_reported_and_refused_until_forced() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // Another manager (the test's "crd-safety-test") installed it.
    let extra = json!({"extra": {"type": "string"}});
    let (_dir, path) =
        installed_and_next(&client, "owneds", "crd-safety-test", json!({}), extra).await;

    // apply-check warns before anyone tries.
    let message = conflict_message(plane, &path, "warning");
    assert!(
        message.contains("conflict with \"crd-safety-test\"")
            && message.contains("--force-conflicts"),
        "{message}"
    );

    // apply refuses before asking, and writes nothing.
    let r = apply(plane, &[&path], &["--yes"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stderr,
        "another field manager owns fields the manifests change (owneds.example.com); use --force-conflicts",
    );
    assert_eq!(
        spec_field(&client, "owneds.example.com", "extra").await,
        None
    );

    // Taking the fields over is explicit.
    let r = apply(
        plane,
        &[&path],
        &["--yes", "--force-conflicts", "-o", "json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        results(&r.json()),
        [triple("owneds.example.com", "update", "configured")]
    );
    assert_eq!(
        spec_field(&client, "owneds.example.com", "extra").await,
        Some(json!({"type": "string"}))
    );
}

#[tokio::test]
async fn a_crd_never_established_stops_the_run_and_what_was_created_is_deleted_again() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // `clashes` asks for a short name another CRD of the group already has:
    // the server accepts the write but never establishes it.
    let mut taken = v1_crd("takens", json!({}));
    taken["spec"]["names"]["shortNames"] = json!(["tk"]);
    install(&client, &taken).await;

    // JSON for scripts; one apply at a time, so nothing after the failure
    // has started.
    let r = apply_failing_run(
        plane,
        ["firsts", "clashes", "lasts"],
        &["--yes", "-o", "json", "--concurrency", "1"],
    );
    let report = r.json();
    assert_eq!(report["apply"]["decision"], "failed");
    assert_eq!(
        results(&report),
        [
            triple("firsts.example.com", "create", "restored"),
            triple("clashes.example.com", "create", "restored"),
            triple("lasts.example.com", "create", "notApplied"),
        ]
    );
    assert_eq!(
        report["apply"]["results"][0]["message"],
        "created, then deleted again (it had no objects)"
    );
    let message = report["apply"]["results"][1]["message"]
        .as_str()
        .expect("the failure says why");
    assert!(
        message.starts_with("created, but the API server refused its names: ")
            && message.contains("\"tk\"")
            && message.ends_with(", then deleted again (it had no objects)"),
        "{message}"
    );
    for plural in ["firsts", "clashes", "lasts"] {
        let name = format!("{plural}.example.com");
        assert!(live(&client, &name).await.is_none(), "{name} is left");
    }

    // The table says the same to a person.
    let r = apply_failing_run(
        plane,
        ["seconds", "clashers", "finals"],
        &["--yes", "--concurrency", "1"],
    );
    let outcome = r
        .stdout
        .split("Apply to context")
        .nth(1)
        .unwrap_or_default();
    assert_eq!(
        outcome
            .lines()
            .filter(|l| !l.contains("refused its names"))
            .collect::<Vec<_>>(),
        [
            " envtest-admin:",
            "  seconds.example.com   restored: created, then deleted again (it had no objects)",
            "  finals.example.com    not attempted",
            "Nothing of the bundle is left applied (clashers.example.com failed): the 2 CRDs \
already written were restored.",
            "Next: fix the cause above, then run the same apply again.",
        ],
        "{}",
        r.stdout
    );
    assert_has(
        outcome,
        "  clashers.example.com  restored: created, but the API server refused its names:",
    );

    // Applies in flight together (the default, 16) each finish their
    // request; the failure stops the others' waits, and every CRD written
    // is deleted again.
    let r = apply_failing_run(
        plane,
        ["thirds", "clashings", "afters"],
        &["--yes", "-o", "json"],
    );
    let report = r.json();
    assert_eq!(
        results(&report)
            .into_iter()
            .map(|(_, _, result)| result)
            .collect::<Vec<_>>(),
        ["restored", "restored", "restored"],
        "{report}"
    );
    for plural in ["thirds", "clashings", "afters"] {
        let name = format!("{plural}.example.com");
        assert!(live(&client, &name).await.is_none(), "{name} is left");
    }
}

/// Runs `apply extra...` of manifests for three new CRDs, the second of
/// which asks for the short name `tk` that `takens` already has: the run
/// fails with every CRD as it was (exit 3).
fn apply_failing_run(plane: &ControlPlane, plurals: [&str; 3], extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, plural) in plurals.iter().enumerate() {
        let mut m = v1_crd(plural, json!({}));
        if i == 1 {
            m["spec"]["names"]["shortNames"] = json!(["tk"]);
        }
        write_manifest(dir.path(), &format!("{i}-{plural}.json"), &m);
    }
    let r = apply(plane, &[&dir.path().display().to_string()], extra);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    r
}

#[test]
fn apply_help_documents_its_exit_codes() {
    let r = run(&["apply", "--help"], None);
    assert_eq!(r.code, 0);
    for line in [
        "4  not applied: the answer to the confirmation was no",
        "5  left half applied: a CRD written could not be restored",
        "130  interrupted (Ctrl-C, SIGTERM) during the writes",
        "--force-conflicts",
        "--field-manager <NAME>",
        "--wait-timeout",
    ] {
        assert!(r.stdout.contains(line), "{line}: {}", r.stdout);
    }
}

/// `(manager, operation)` of every top-level managedFields entry of a CRD.
async fn managers(client: &Client, name: &str) -> Vec<(String, String)> {
    let crd = live(client, name).await.expect("the CRD exists");
    crd["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter(|e| e.get("subresource").is_none())
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or_default().to_string(),
                e["operation"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_crd_installed_with_plain_kubectl_apply_is_taken_over_like_kubectl_server_side() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write_manifest(dir.path(), "old.json", &v1_crd("handapplieds", json!({})));
    kubectl_installs(plane, "apply", &old, dir.path());
    let name = "handapplieds.example.com";
    assert!(
        managers(&client, name)
            .await
            .contains(&("kubectl-client-side-apply".into(), "Update".into()))
    );
    let next = v1_crd("handapplieds", json!({"extra": {"type": "string"}}));
    let new = write_manifest(dir.path(), "new.json", &next);

    // No conflict is reported; the takeover is named.
    let message = conflict_message(plane, &new, "info");
    assert!(
        message.contains("kubectl-client-side-apply")
            && message.contains("kubectl apply --server-side"),
        "{message}"
    );

    let r = apply(plane, &[&new], &["--yes", "-o", "json"]);
    assert_eq!(
        r.code, 0,
        "no --force-conflicts needed\n{}{}",
        r.stdout, r.stderr
    );
    assert_eq!(results(&r.json()), [triple(name, "update", "configured")]);
    assert_eq!(
        spec_field(&client, name, "extra").await,
        Some(json!({"type": "string"}))
    );
    let after = managers(&client, name).await;
    assert!(after.contains(&(OURS.into(), "Apply".into())), "{after:?}");
    assert!(
        !after.iter().any(|(m, _)| m == "kubectl-client-side-apply"),
        "{after:?}"
    );
    let crd = live(&client, name).await.expect("the CRD exists");
    assert!(
        crd["metadata"]["annotations"]
            .get("kubectl.kubernetes.io/last-applied-configuration")
            .is_some(),
        "the last-applied annotation is left in place"
    );
}

#[tokio::test]
async fn fields_owned_by_helm_are_not_taken_and_helm_is_named() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let extra = json!({"extra": {"type": "string"}});
    let (_dir, path) = installed_and_next(&client, "helmeds", "helm", json!({}), extra).await;
    let message = conflict_message(plane, &path, "warning");
    assert_has(
        &message,
        "helm is Helm (a CRD of a release's templates/ is overwritten at the next helm upgrade)",
    );
    let r = apply(plane, &[&path], &["--yes"]);
    assert_eq!(r.code, 1, "refused\n{}{}", r.stdout, r.stderr);
    assert_eq!(
        spec_field(&client, "helmeds.example.com", "extra").await,
        None
    );
}

#[tokio::test]
async fn a_crd_installed_with_kubectl_server_side_applies_as_its_owner_with_field_manager_kubectl()
{
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // What `kubectl apply --server-side -f crds/` leaves: every field owned
    // by the Apply manager `kubectl`. The next release adds one optional
    // field, a safe change.
    let extra = json!({"extra": {"type": "string"}});
    let (_dir, path) =
        installed_and_next(&client, "ssainstalleds", "kubectl", json!({}), extra).await;
    let name = "ssainstalleds.example.com";
    let kubeconfig = plane.admin_kubeconfig.display().to_string();

    // As crd-safety's own manager, the fields are kubectl's: refused, and
    // the refusal names the manager to apply as.
    let message = conflict_message(plane, &path, "warning");
    assert_has(&message, "conflict with \"kubectl\"");
    assert_has(
        &message,
        "or apply as their owner with --field-manager kubectl",
    );
    let r = apply(plane, &[&path], &["--yes"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_has(
        &r.stderr,
        "another field manager owns fields the manifests change (ssainstalleds.example.com); \
         use --force-conflicts to take them over, or --field-manager kubectl to apply as their owner",
    );
    assert_eq!(spec_field(&client, name, "extra").await, None);

    // The check as kubectl: nothing conflicts, the dry run is the write's.
    let r = apply_check(
        &path,
        &kubeconfig,
        &["--field-manager", "kubectl", "-o", "json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let found = findings(&r.json());
    assert!(
        !found
            .iter()
            .any(|(check, _, _)| check == "fieldManagerConflict"),
        "{found:?}"
    );

    let r = apply(
        plane,
        &[&path],
        &["--yes", "--field-manager", "kubectl", "-o", "json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(results(&r.json()), [triple(name, "update", "configured")]);
    assert_eq!(
        spec_field(&client, name, "extra").await,
        Some(json!({"type": "string"}))
    );
    assert_eq!(
        managers(&client, name).await,
        [("kubectl".to_string(), "Apply".to_string())],
        "still one owner, kubectl's Apply entry"
    );
}

#[tokio::test]
async fn on_a_terminal_fields_kubectl_owns_are_taken_over_only_after_a_yes_naming_them() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let extra = json!({"extra": {"type": "string"}});
    let (_dir, path) = installed_and_next(&client, "ssaaskeds", "kubectl", json!({}), extra).await;
    let name = "ssaaskeds.example.com";
    let plan = "Apply 1 CRD to context envtest-admin? [y/N]";
    let take = "Take these fields over in 1 CRD (as --force-conflicts does)? [y/N]";
    let kubeconfig = plane.admin_kubeconfig.clone();
    let ask = |keys: [&'static str; 2]| {
        let (path, kubeconfig) = (path.clone(), kubeconfig.clone());
        tokio::task::spawn_blocking(move || {
            answers_in_terminal(
                &["apply", "-f", &path],
                &kubeconfig,
                200,
                &[(plan, keys[0]), (take, keys[1])],
            )
        })
    };

    let (code, screen) = ask(["y", "n"]).await.expect("pty thread");
    assert_eq!(code, 4, "a no takes nothing over\n{screen}");
    assert_has(
        &screen,
        "Other field managers own fields the manifests change (to apply as their owner instead, \
         answer no and run again with --field-manager kubectl):",
    );
    assert_has(
        &screen,
        "ssaaskeds.example.com  kubectl owns .spec.versions",
    );
    assert_has(&screen, "Nothing applied.");
    assert_eq!(spec_field(&client, name, "extra").await, None);
    assert_eq!(
        managers(&client, name).await,
        [("kubectl".to_string(), "Apply".to_string())]
    );

    let (code, screen) = ask(["y", "y"]).await.expect("pty thread");
    assert_eq!(code, 0, "{screen}");
    assert_has(&screen, "ssaaskeds.example.com  configured");
    assert_eq!(
        spec_field(&client, name, "extra").await,
        Some(json!({"type": "string"}))
    );
    let after = managers(&client, name).await;
    assert!(
        after.contains(&(OURS.to_string(), "Apply".to_string())),
        "the fields taken over are ours: {after:?}"
    );
}

/// Installs `manifest` with a plain `kubectl VERB -f` (client-side), as
/// most CRDs in the wild were installed.
fn kubectl_installs(plane: &ControlPlane, verb: &str, manifest: &str, home: &std::path::Path) {
    let kubectl = Command::new("kubectl")
        .args([verb, "-f", manifest, "--kubeconfig"])
        .arg(&plane.admin_kubeconfig)
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .output()
        .expect("kubectl runs");
    assert!(
        kubectl.status.success(),
        "{}",
        String::from_utf8_lossy(&kubectl.stderr)
    );
}

#[tokio::test]
async fn a_release_changing_annotations_and_schema_takes_over_kubectl_apply_and_create() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for (verb, plural) in [("apply", "annotateds"), ("create", "createds")] {
        let name = format!("{plural}.example.com");
        let mut old = v1_crd(plural, json!({}));
        old["metadata"]["annotations"] = json!({"example.com/release": "1.0"});
        let old = write_manifest(dir.path(), &format!("{plural}-old.json"), &old);
        kubectl_installs(plane, verb, &old, dir.path());
        // What nearly every release does: a new annotation value and a new
        // field, two conflicts with the client-side manager.
        let mut new = v1_crd(plural, json!({"extra": {"type": "string"}}));
        new["metadata"]["annotations"] = json!({"example.com/release": "1.1"});
        let new = write_manifest(dir.path(), &format!("{plural}-new.json"), &new);

        let r = apply(plane, &[&new], &["--yes", "-o", "json"]);
        assert_eq!(
            r.code, 0,
            "kubectl {verb}: taken over as kubectl apply --server-side does\n{}{}",
            r.stdout, r.stderr
        );
        assert_eq!(results(&r.json()), [triple(&name, "update", "configured")]);
        let live = live(&client, &name).await.expect("the CRD exists");
        assert_eq!(
            live["metadata"]["annotations"]["example.com/release"], "1.1",
            "kubectl {verb}"
        );
        assert_eq!(
            spec_field(&client, &name, "extra").await,
            Some(json!({"type": "string"}))
        );
        let after = managers(&client, &name).await;
        assert!(after.contains(&(OURS.into(), "Apply".into())), "{after:?}");
    }
}

#[tokio::test]
async fn a_bundle_the_server_refuses_in_part_is_not_applied_at_all_even_with_force() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // storedVersions [v1alpha1, v1]: a manifest without v1alpha1 is refused
    // by the API server until the objects are migrated.
    install(
        &client,
        &crd("halfways", &[("v1alpha1", true, true)], json!({})),
    )
    .await;
    install(
        &client,
        &crd(
            "halfways",
            &[("v1alpha1", true, false), ("v1", true, true)],
            json!({}),
        ),
    )
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    // The first CRD of the bundle is fine on its own.
    write_manifest(dir.path(), "0-fines.json", &v1_crd("fines", json!({})));
    write_manifest(
        dir.path(),
        "1-halfways.json",
        &v1_crd("halfways", json!({})),
    );
    let bundle = dir.path().display().to_string();

    let r = apply(plane, &[&bundle], &["--force", "--yes"]);
    assert_eq!(r.code, 1, "refused\n{}{}", r.stdout, r.stderr);
    assert!(
        live(&client, "fines.example.com").await.is_none(),
        "no CRD of the bundle is applied"
    );
    let refusal = r
        .stderr
        .lines()
        .find(|l| l.starts_with("error: not applying"))
        .unwrap_or_default();
    assert!(
        refusal.contains("not applying any of the 2 CRDs")
            && refusal.contains("halfways.example.com: ")
            && refusal.contains("storedVersions")
            && refusal.contains("kubectl crd-safety migrate halfways.example.com"),
        "{}",
        r.stderr
    );
    assert!(
        !refusal.contains("--force"),
        "no flag makes the server accept it: {refusal}"
    );
    let stored = live(&client, "halfways.example.com").await.expect("kept");
    assert_eq!(stored["spec"]["versions"].as_array().map(Vec::len), Some(2));
}

/// `bundleNNN.example.com`, as installed (`added` false) or as the next
/// release has it (one more optional field).
fn bundle_crd(i: usize, added: bool) -> Value {
    let extra = if added {
        json!({"added": {"type": "string"}})
    } else {
        json!({})
    };
    v1_crd(&format!("bundle{i:03}s"), extra)
}

/// The report without what names the way to the server (context, URL),
/// one line per CRD so that a difference reads as one.
fn verdicts_of(report: &Value) -> Vec<String> {
    let mut r = report.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("cluster");
    }
    let mut lines: Vec<String> = r["crds"]
        .as_array_mut()
        .expect("crds")
        .iter_mut()
        .map(|c| {
            if let Some(o) = c.as_object_mut() {
                o.remove("oldSource");
            }
            c.to_string()
        })
        .collect();
    if let Some(o) = r.as_object_mut() {
        o.remove("crds");
    }
    lines.push(r.to_string());
    lines
}

/// A bundle of 100 CRDs, a few of which fail in the ways a real upgrade
/// does (refused by the server, a field owned by Helm, deleted meanwhile),
/// checked and applied both straight and through a proxy 20 ms away with
/// requests in flight together: the same report and the same outcomes, in
/// manifest order.
#[tokio::test]
async fn a_big_bundle_over_a_slow_network_gets_the_same_verdicts_in_order() {
    use futures::StreamExt;
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    const N: usize = 100;
    let (refused, helm, deleted) = (10, 20, 30);
    futures::stream::iter((0..N).map(|i| {
        let client = client.clone();
        async move {
            let manager = if i == helm { "helm" } else { OURS };
            install_as(&client, &bundle_crd(i, false), manager).await;
        }
    }))
    .buffer_unordered(8)
    .collect::<Vec<()>>()
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete(
        &format!("bundle{deleted:03}s.example.com"),
        &Default::default(),
    )
    .await
    .expect("deleted meanwhile");
    let gone = format!("bundle{deleted:03}s.example.com");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while live(&client, &gone).await.is_some() {
        assert!(std::time::Instant::now() < deadline, "{gone} still there");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..N {
        let mut m = bundle_crd(i, true);
        if i == refused {
            // The scope of a CRD is immutable.
            m["spec"]["scope"] = json!("Cluster");
        }
        write_manifest(dir.path(), &format!("{i:03}.json"), &m);
    }
    let path = dir.path().display().to_string();
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let proxy = support::faults::FaultProxy::delaying(plane, std::time::Duration::from_millis(20));
    let slow_kubeconfig = proxy.kubeconfig(dir.path());

    let straight = apply_check(&path, &kubeconfig, &["-o", "json"]);
    let slow = apply_check(
        &path,
        &slow_kubeconfig,
        &["-o", "json", "--concurrency", "16"],
    );
    assert_eq!(straight.code, 1, "{}", straight.stderr);
    assert_eq!(slow.code, 1, "{}", slow.stderr);
    let report = straight.json();
    let (a, b) = (verdicts_of(&report), verdicts_of(&slow.json()));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "straight vs through the slow proxy");
    }
    let names: Vec<&str> = report["crds"]
        .as_array()
        .expect("crds")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let expected: Vec<String> = (0..N)
        .map(|i| format!("bundle{i:03}s.example.com"))
        .collect();
    assert_eq!(names, expected, "manifest order");
    let checks_of = |i: usize| -> Vec<String> {
        report["crds"][i]["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter_map(|f| f["check"].as_str().map(str::to_string))
            .collect()
    };
    assert!(checks_of(refused).contains(&"apiServerRejects".to_string()));
    assert!(checks_of(helm).contains(&"fieldManagerConflict".to_string()));

    // `apply --yes` through the slow proxy.
    let slow_apply = |extra: &[&str]| {
        let mut args = vec![
            "apply",
            "-f",
            &path,
            "--kubeconfig",
            &slow_kubeconfig,
            "--yes",
        ];
        args.extend_from_slice(extra);
        run(&args, None)
    };
    // The server refuses one: nothing is applied, either way.
    let r = slow_apply(&[]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        spec_field(&client, "bundle050s.example.com", "added").await,
        None
    );

    // Without it, and taking Helm's field over: every CRD applied through
    // the slow proxy, reported in manifest order.
    std::fs::remove_file(dir.path().join(format!("{refused:03}.json"))).expect("removed");
    let before = proxy.seen().len();
    let r = slow_apply(&["--force-conflicts", "-o", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let expected: Vec<(String, String, String)> = (0..N)
        .filter(|i| *i != refused)
        .map(|i| {
            let name = format!("bundle{i:03}s.example.com");
            if i == deleted {
                triple(&name, "create", "created")
            } else {
                triple(&name, "update", "configured")
            }
        })
        .collect();
    assert_eq!(results(&r.json()), expected);
    // The check reads the live CRDs with a paginated LIST (100 a page, the
    // server's other CRDs included), not one GET each; an update of an
    // established CRD is not polled for `Established` (the apply's answer
    // says so), only the one created. The other tests of the binary add
    // CRDs of their own meanwhile (none removes one), so the pages are at
    // most what the server's CRDs fill now.
    let seen = &proxy.seen()[before..];
    let lists = seen
        .iter()
        .filter(|s| {
            s.method == "GET"
                && s.target
                    .starts_with("/apis/apiextensions.k8s.io/v1/customresourcedefinitions?")
        })
        .count();
    let in_cluster = crds
        .list_metadata(&Default::default())
        .await
        .expect("the admin lists CRDs")
        .items
        .len();
    let pages = in_cluster.div_ceil(100);
    assert!(
        (1..=pages).contains(&lists),
        "{lists} LISTs of CRDs, {in_cluster} CRDs in the cluster"
    );
    let reads = seen
        .iter()
        .filter(|s| s.method == "GET" && s.target.contains("/customresourcedefinitions/bundle"))
        .count();
    assert!(
        reads < 10,
        "{reads} reads of single CRDs for {} CRDs",
        N - 1
    );
    for i in [0, helm, deleted, N - 1] {
        let name = format!("bundle{i:03}s.example.com");
        assert!(
            spec_field(&client, &name, "added").await.is_some(),
            "{name}"
        );
    }
}

/// A big bundle's live CRDs are read with a LIST, which needs the `list`
/// verb; a user who may only `get` CRDs (and dry-run them) gets the same
/// report through one GET each, as RBAC decides on the real server.
#[tokio::test]
async fn a_user_who_may_only_get_crds_still_checks_a_big_bundle() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let rules = json!([{
        "apiGroups": ["apiextensions.k8s.io"],
        "resources": ["customresourcedefinitions"],
        "verbs": ["get", "patch", "create"],
    }]);
    grant(&client, "crd-getter", "crd-getter", rules).await;
    // 40 CRDs (more than a LIST is used for), two of them installed.
    let dir = tempfile::tempdir().expect("tempdir");
    let n = crd_safety::cluster::LIST_FROM + 8;
    for i in 0..n {
        let m = v1_crd(&format!("getonly{i:03}s"), json!({}));
        if i < 2 {
            install(&client, &m).await;
        }
        write_manifest(dir.path(), &format!("{i:03}.json"), &m);
    }
    let bundle = dir.path().display().to_string();
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let getter = apply_check(&bundle, &kubeconfig, &["--as", "crd-getter", "-o", "json"]);
    assert_eq!(getter.code, 0, "{}{}", getter.stdout, getter.stderr);
    let statuses: Vec<String> = getter.json()["crds"]
        .as_array()
        .expect("crds")
        .iter()
        .map(|c| c["status"].as_str().unwrap_or_default().to_string())
        .collect();
    let expected: Vec<&str> = (0..n).map(|i| if i < 2 { "safe" } else { "new" }).collect();
    assert_eq!(statuses, expected);
    // The admin, whose LIST is allowed, gets the same report.
    let admin_report = apply_check(&bundle, &kubeconfig, &["-o", "json"]);
    assert_eq!(
        verdicts_of(&admin_report.json()),
        verdicts_of(&getter.json())
    );
}

/// What the restore tests compare: a live CRD's spec, labels, annotations
/// and field owners (manager and operation of each top-level entry, with
/// the fields it owns), which a restore must put back as they were.
async fn restorable(client: &Client, name: &str) -> Value {
    let crd = live(client, name).await.expect("the CRD exists");
    let owners: Vec<Value> = crd["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter(|e| e.get("subresource").is_none())
        .map(|e| json!([e["manager"], e["operation"], e["fieldsV1"]]))
        .collect();
    json!({
        "spec": crd["spec"],
        "labels": crd["metadata"]["labels"],
        "annotations": crd["metadata"]["annotations"],
        "owners": owners,
    })
}

/// Registers an admission webhook of the test's own on `plane` (a
/// dedicated one: the webhook sees every CRD write), answering with
/// `decide`, and waits until the API server calls it: `decide` must deny
/// the create of `probes.example.com`. The webhook, and a directory for
/// the test's files.
async fn with_webhook<F>(
    plane: &ControlPlane,
    client: &Client,
    decide: F,
) -> (support::webhook::Admission, TempDir)
where
    F: Fn(&Value) -> support::webhook::Verdict + Send + Sync + 'static,
{
    let ca = support::webhook::TestCa::new();
    let webhook = support::webhook::Admission::start(&ca, decide).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = write_manifest(dir.path(), "probe.json", &v1_crd("probes", json!({})));
    webhook
        .register(client, &ca, "apply-test", &plane.admin_kubeconfig, &probe)
        .await;
    (webhook, dir)
}

/// `decide` of a webhook that denies the probe, and the real (not dry-run)
/// creates and updates of `denied`, in the words of a policy.
fn deny_real_writes_of(denied: &'static str) -> impl Fn(&Value) -> support::webhook::Verdict {
    move |request: &Value| {
        let name = request["name"].as_str().unwrap_or_default().to_string();
        let dry = request["dryRun"].as_bool().unwrap_or(false);
        Box::pin(async move {
            (name == "probes.example.com" || (name == denied && !dry))
                .then(|| format!("{name} is frozen by the test's policy"))
        })
    }
}

/// Bundle of three from the same release: `vetoeds`, which the webhook
/// denies at the real write (its dry run passes), between an update and a
/// create: the API server's verdict at write time, which the dry-run gate
/// could not foresee. Every CRD ends as it was checked, and both the JSON
/// and the table say so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_the_api_server_refuses_restores_the_crds_already_written() {
    let Some(plane) = dedicated() else { return };
    let client = admin(&plane).await;
    // `rollbacks` was installed by kubectl by hand: our write takes its
    // fields over first, so the restore has field owners to put back too.
    let home = tempfile::tempdir().expect("tempdir");
    let old_rollbacks = write_manifest(
        home.path(),
        "old-rollbacks.json",
        &v1_crd("rollbacks", json!({})),
    );
    kubectl_installs(&plane, "apply", &old_rollbacks, home.path());
    install_as(&client, &v1_crd("vetoeds", json!({})), OURS).await;
    let (webhook, dir) =
        with_webhook(&plane, &client, deny_real_writes_of("vetoeds.example.com")).await;
    let before = (
        restorable(&client, "rollbacks.example.com").await,
        restorable(&client, "vetoeds.example.com").await,
    );
    let bundle = dir.path().join("bundle");
    std::fs::create_dir(&bundle).expect("bundle dir");
    let color = json!({"color": {"type": "string"}});
    write_manifest(
        &bundle,
        "0-rollbacks.json",
        &v1_crd("rollbacks", color.clone()),
    );
    write_manifest(&bundle, "1-vetoeds.json", &v1_crd("vetoeds", color.clone()));
    write_manifest(&bundle, "2-freshes.json", &v1_crd("freshes", color));
    let bundle = bundle.display().to_string();

    for extra in [&["-o", "json"][..], &[][..]] {
        let (plane_ref, bundle_ref) = (&plane, bundle.as_str());
        let mut args = vec!["--yes"];
        args.extend_from_slice(extra);
        let r = tokio::task::block_in_place(|| apply(plane_ref, &[bundle_ref], &args));
        assert_eq!(
            r.code, 3,
            "every CRD as checked: exit 3\n{}{}",
            r.stdout, r.stderr
        );
        if extra.is_empty() {
            let outcome = r
                .stdout
                .split("Apply to context")
                .nth(1)
                .unwrap_or_default();
            assert_has(
                outcome,
                "  vetoeds.example.com    FAILED: the API server refused it: admission webhook \
                 \"apply-test.example.com\" denied the request: vetoeds.example.com is frozen",
            );
            assert_has(
                outcome,
                "Nothing of the bundle is left applied (vetoeds.example.com failed): ",
            );
            assert_has(
                outcome,
                "Next: fix the cause above, then run the same apply again.",
            );
            // All three were in flight at once (the default concurrency).
            assert_has(
                outcome,
                "  rollbacks.example.com  restored: configured, then written back as it was checked",
            );
            assert_has(
                outcome,
                "  freshes.example.com    restored: created, then deleted again (it had no objects)",
            );
        } else {
            let report = r.json();
            assert_eq!(report["apply"]["decision"], "failed");
            let got = results(&report);
            assert_eq!(got[1], triple("vetoeds.example.com", "update", "failed"));
            for (name, _, result) in [&got[0], &got[2]] {
                assert!(
                    result == "restored" || result == "notApplied",
                    "{name}: {result}\n{report}"
                );
            }
        }
        // Each CRD as it was checked: specs, labels, annotations, and the
        // field owners (kubectl's client-side entry back in place).
        assert_eq!(
            restorable(&client, "rollbacks.example.com").await,
            before.0,
            "rollbacks restored"
        );
        assert_eq!(restorable(&client, "vetoeds.example.com").await, before.1);
        assert!(live(&client, "freshes.example.com").await.is_none());
    }
    // The restore went through admission like any write: a real update.
    assert!(
        webhook
            .of("rollbacks.example.com")
            .iter()
            .filter(|(op, dry)| op == "UPDATE" && !dry)
            .count()
            >= 2,
        "{:?}",
        webhook.of("rollbacks.example.com")
    );
    // The next apply, once the policy is lifted, sees no conflict with the
    // restore's own write: the owners are as they were.
    drop(webhook);
    let r = tokio::task::block_in_place(|| {
        apply_check(
            &dir.path()
                .join("bundle/0-rollbacks.json")
                .display()
                .to_string(),
            &plane.admin_kubeconfig.display().to_string(),
            &["-o", "json"],
        )
    });
    let report = r.json();
    let conflicts: Vec<_> = findings(&report)
        .into_iter()
        .filter(|(check, severity, _)| check == "fieldManagerConflict" && severity != "info")
        .collect();
    assert!(conflicts.is_empty(), "{report}");
}

/// Another client changes one CRD of two after the check, while the
/// question is on the screen: the write, conditional on the checked
/// resourceVersion, is refused with 409 and reported as a conflict; their
/// change stays; the other CRD is restored (or never written); exit 3.
#[tokio::test]
async fn a_change_made_between_the_check_and_the_write_is_a_conflict_and_is_kept() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    install_as(&client, &v1_crd("editeds", json!({})), OURS).await;
    install_as(&client, &v1_crd("bystanders", json!({})), OURS).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let extra = json!({"extra": {"type": "string"}});
    write_manifest(
        dir.path(),
        "0-editeds.json",
        &v1_crd("editeds", extra.clone()),
    );
    write_manifest(
        dir.path(),
        "1-bystanders.json",
        &v1_crd("bystanders", extra),
    );
    let path = dir.path().display().to_string();
    let kubeconfig = plane.admin_kubeconfig.clone();
    let (code, screen) = tokio::task::spawn_blocking(move || {
        answer_in_terminal_after(
            &["apply", "-f", &path],
            &kubeconfig,
            200,
            "to context envtest-admin? [y/N]",
            "y",
            || {
                let out = support::webhook::kubectl(
                    &kubeconfig,
                    &[
                        "annotate",
                        "crd",
                        "editeds.example.com",
                        "example.com/edited-by=someone-else",
                    ],
                );
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            },
        )
    })
    .await
    .expect("pty thread");
    assert_eq!(code, 3, "{screen}");
    let outcome = screen.split("Apply to context").nth(1).unwrap_or_default();
    assert_has(
        outcome,
        "  editeds.example.com     CONFLICT: changed by another client since it was checked, so \
         it was not written (their change stays): ",
    );
    assert_has(outcome, "the object has been modified");
    assert_has(
        outcome,
        "Next: run the same apply again: it checks the CRDs as they are now, another client's \
         change included, before it writes.",
    );
    let edited = live(&client, "editeds.example.com").await.expect("kept");
    assert_eq!(
        edited["metadata"]["annotations"]["example.com/edited-by"],
        "someone-else"
    );
    assert_eq!(
        spec_field(&client, "editeds.example.com", "extra").await,
        None
    );
    assert_eq!(
        spec_field(&client, "bystanders.example.com", "extra").await,
        None,
        "the other CRD is as it was: {outcome}"
    );
}

/// `decide` of a webhook that denies the probe and holds every real write
/// of `slow` that adds the field `extra` (our apply's, not the restore's)
/// for `hold`, telling `held` when one arrives.
fn hold_real_writes_of(
    slow: &'static str,
    hold: std::time::Duration,
    held: tokio::sync::mpsc::UnboundedSender<()>,
) -> impl Fn(&Value) -> support::webhook::Verdict {
    move |request: &Value| {
        let name = request["name"].as_str().unwrap_or_default().to_string();
        let dry = request["dryRun"].as_bool().unwrap_or(false);
        let adds = request
            .pointer(
                "/object/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/extra",
            )
            .is_some();
        let held = held.clone();
        Box::pin(async move {
            if name == "probes.example.com" {
                return Some("probe".to_string());
            }
            if name == slow && !dry && adds {
                let _ = held.send(());
                tokio::time::sleep(hold).await;
            }
            None
        })
    }
}

/// Ctrl-C (and SIGTERM) while a write is in flight: no more writes start,
/// the one in flight finishes, and every CRD written is restored; the
/// table says so and the exit code is 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_during_the_writes_restores_what_was_written() {
    let (held_tx, mut held) = tokio::sync::mpsc::unbounded_channel();
    let hold = std::time::Duration::from_secs(3);
    let Some(plane) = dedicated() else { return };
    let client = admin(&plane).await;
    install_as(&client, &v1_crd("quicks", json!({})), OURS).await;
    install_as(&client, &v1_crd("slows", json!({})), OURS).await;
    let (_webhook, dir) = with_webhook(
        &plane,
        &client,
        hold_real_writes_of("slows.example.com", hold, held_tx),
    )
    .await;
    let before = (
        restorable(&client, "quicks.example.com").await,
        restorable(&client, "slows.example.com").await,
    );
    let bundle = dir.path().join("bundle");
    std::fs::create_dir(&bundle).expect("bundle dir");
    let extra = json!({"extra": {"type": "string"}});
    write_manifest(&bundle, "0-quicks.json", &v1_crd("quicks", extra.clone()));
    write_manifest(&bundle, "1-slows.json", &v1_crd("slows", extra.clone()));
    write_manifest(&bundle, "2-laters.json", &v1_crd("laters", extra));
    let bundle = bundle.display().to_string();
    for signal in [
        nix::sys::signal::Signal::SIGINT,
        nix::sys::signal::Signal::SIGTERM,
    ] {
        // One at a time: `quicks` is written, `slows` is held in admission,
        // `laters` waits its turn when the signal comes.
        let child = support::runs::start(
            &["apply", "-f", &bundle, "--yes", "--concurrency", "1"],
            &plane.admin_kubeconfig,
        );
        tokio::time::timeout(std::time::Duration::from_secs(60), held.recv())
            .await
            .expect("the write of slows reaches the webhook")
            .expect("webhook running");
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, signal).expect("signal sent");
        let r = support::runs::finished(child).await;
        assert_eq!(r.code, 130, "{signal}: {}{}", r.stdout, r.stderr);
        assert_has(&r.stderr, "interrupted: no more writes start");
        let outcome = r
            .stdout
            .split("Apply to context")
            .nth(1)
            .unwrap_or_default();
        assert_eq!(
            outcome.lines().collect::<Vec<_>>(),
            [
                " envtest-admin:",
                "  quicks.example.com  restored: configured, then written back as it was checked",
                "  slows.example.com   restored: configured, then written back as it was checked",
                "  laters.example.com  not attempted",
                "Nothing of the bundle is left applied (interrupted): the 2 CRDs already written \
                 were restored.",
                "Next: run the same apply again to apply the bundle.",
            ],
            "{signal}: {}",
            r.stdout
        );
        assert_eq!(restorable(&client, "quicks.example.com").await, before.0);
        assert_eq!(restorable(&client, "slows.example.com").await, before.1);
        assert!(live(&client, "laters.example.com").await.is_none());
    }
}

/// The plain dry-run apply the server answers for `manifest`, as this
/// tool's field manager: its 409 message.
async fn servers_conflict(client: &Client, manifest: &Value) -> String {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = manifest["metadata"]["name"].as_str().expect("name");
    let crd: CustomResourceDefinition =
        serde_json::from_value(manifest.clone()).expect("typed CRD");
    let plain = kube::api::PatchParams::apply(crd_safety::cluster::FIELD_MANAGER).dry_run();
    match crds
        .patch(name, &plain, &kube::api::Patch::Apply(&crd))
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 409 => s.message,
        other => panic!("expected a conflict from the server: {other:?}"),
    }
}

#[tokio::test]
async fn apply_check_reports_each_conflict_in_the_servers_own_words_from_one_dry_run() {
    // The server's wording, on every version of the matrix.
    for version in support::envtest::matrix() {
        let Some(plane) = support::envtest::control_plane_of(&version) else {
            return;
        };
        conflicts_in_the_servers_words(plane).await;
    }
}

async fn conflicts_in_the_servers_words(plane: &ControlPlane) {
    let client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    // One field of one applier.
    let one = v1_crd("wordones", json!({}));
    install_as(&client, &one, "kubectl").await;
    let mut next_one = v1_crd("wordones", json!({"extra": {"type": "string"}}));
    // Several fields of an applier and of an updater (`kubectl edit`).
    let mut many = v1_crd("wordmanys", json!({}));
    many["metadata"]["labels"] = json!({"team": "a"});
    many["spec"]["names"]["categories"] = json!(["all"]);
    install_as(&client, &many, "helm").await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.patch(
        "wordmanys.example.com",
        &kube::api::PatchParams {
            field_manager: Some("kubectl-edit".to_string()),
            ..Default::default()
        },
        &kube::api::Patch::Merge(json!({"metadata": {"labels": {"edited": "yes"},
            "annotations": {"note": "by hand"}}})),
    )
    .await
    .expect("an edit");
    let mut next_many = v1_crd("wordmanys", json!({"extra": {"type": "string"}}));
    next_many["metadata"]["labels"] = json!({"team": "b", "edited": "no"});
    next_many["metadata"]["annotations"] = json!({"note": "by the release"});
    next_many["spec"]["names"]["categories"] = json!(["all", "more"]);
    for (next, expect_many) in [(&mut next_one, false), (&mut next_many, true)] {
        let name = next["metadata"]["name"].as_str().expect("name").to_string();
        let path = write_manifest(dir.path(), &format!("{name}.json"), next);
        let server = servers_conflict(&client, next).await;
        assert_eq!(server.contains("conflicts:"), expect_many, "{server}");
        // Through a proxy that counts the requests.
        let proxy =
            support::faults::FaultProxy::start(plane, |_: &support::faults::Incoming<'_>| {
                support::faults::Fault::Forward
            });
        let kubeconfig = proxy.kubeconfig(dir.path());
        let r = apply_check(&path, &kubeconfig, &["-o", "json"]);
        let report = r.json();
        let patches = proxy
            .seen()
            .iter()
            .filter(|s| s.method == "PATCH" && s.target.contains(&name))
            .count();
        assert_eq!(
            patches, 1,
            "{name}: one dry run tells the conflicts: {}",
            r.stderr
        );
        let message = report["crds"][0]["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["check"] == "fieldManagerConflict")
            .and_then(|f| f["message"].as_str())
            .unwrap_or_else(|| panic!("{name}: no conflict reported: {report}"))
            .to_string();
        // The report goes on after the server's words (who the owners are,
        // what to do).
        let rest = message.strip_prefix(&server);
        assert!(
            rest.is_some_and(|r| r.starts_with(": ") || r.starts_with(" (")),
            "{name}: the server says\n{server}\nthe report says\n{message}"
        );
    }
}
