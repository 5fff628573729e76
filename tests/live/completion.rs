//! Shell completion through kubectl, as a user gets it: `kubectl crd-safety
//! <TAB>` makes kubectl (1.26+) run `kubectl_complete-crd_safety` from
//! PATH, which asks the plugin. `kubectl __complete` is what the shell
//! scripts of kubectl call, so it stands in for the shell here.

// Signals, pseudo-terminals and the test control plane: Unix only.
#![cfg(unix)]

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use support::envtest::control_plane;
use support::live::{admin, crd, install};

/// A PATH holding the plugin and its completion helper, as krew installs
/// them, before the rest of PATH (for kubectl).
fn plugin_path(dir: &Path) -> String {
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_kubectl-crd_safety"),
        dir.join("kubectl-crd_safety"),
    )
    .expect("plugin on PATH");
    let helper =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("completion/kubectl_complete-crd_safety");
    std::fs::copy(&helper, dir.join("kubectl_complete-crd_safety")).expect("helper on PATH");
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `kubectl __complete crd-safety WORDS...`: the candidates and directive.
fn kubectl_complete(path: &str, env: &[(&str, &Path)], words: &[&str]) -> (Vec<String>, String) {
    let mut cmd = Command::new("kubectl");
    cmd.args(["__complete", "crd-safety"])
        .args(words)
        .env("PATH", path)
        .env_remove("KUBECONFIG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("kubectl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let directive = lines.pop().unwrap_or_default();
    (lines, directive)
}

#[test]
fn subcommands_flags_and_contexts_complete_through_kubectl() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = plugin_path(dir.path());
    let (names, directive) = kubectl_complete(&path, &[], &["ap"]);
    assert_eq!(names, ["apply-check", "apply"]);
    assert_eq!(directive, ":4", "no file names after a subcommand prefix");
    let (flags, _) = kubectl_complete(&path, &[], &["apply-check", "--obj"]);
    assert_eq!(flags, ["--objects"]);
    // The kubeconfig's contexts, from --kubeconfig or KUBECONFIG.
    let kubeconfig = dir.path().join("config");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: https://127.0.0.1:1}\n\
         users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: prod\n  context: {cluster: c, user: u}\n\
         - name: staging\n  context: {cluster: c, user: u}\ncurrent-context: prod\n",
    )
    .expect("kubeconfig");
    let (contexts, _) = kubectl_complete(
        &path,
        &[("KUBECONFIG", kubeconfig.as_path())],
        &["apply-check", "--context", ""],
    );
    assert_eq!(contexts, ["prod", "staging"]);
    let k = kubeconfig.display().to_string();
    let (contexts, _) =
        kubectl_complete(&path, &[], &["migrate", "--kubeconfig", &k, "--context=st"]);
    assert_eq!(contexts, ["--context=staging"]);
    // A path: the shell's own file completion (directive 0).
    let (none, directive) = kubectl_complete(&path, &[], &["apply-check", "-f", ""]);
    assert!(none.is_empty());
    assert_eq!(directive, ":0");
}

#[tokio::test]
async fn migrate_completes_the_crds_that_still_have_several_stored_versions() {
    let Some(plane) = control_plane() else {
        return;
    };
    let client = admin(plane).await;
    let two = crd(
        "completeds",
        &[("v1alpha1", true, false), ("v1", true, true)],
        json!({}),
    );
    install(&client, &two).await;
    install(&client, &crd("finisheds", &[("v1", true, true)], json!({}))).await;
    Api::<CustomResourceDefinition>::all(client.clone())
        .patch_status(
            "completeds.example.com",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"storedVersions": ["v1alpha1", "v1"]}})),
        )
        .await
        .expect("storedVersions set");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = plugin_path(dir.path());
    let k = plane.admin_kubeconfig.display().to_string();
    let (names, directive) = kubectl_complete(&path, &[], &["migrate", "--kubeconfig", &k, ""]);
    assert!(
        names.contains(&"completeds.example.com".to_string()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"finisheds.example.com".to_string()),
        "{names:?}"
    );
    assert_eq!(directive, ":4");
    let (names, _) = kubectl_complete(&path, &[], &["migrate", "--kubeconfig", &k, "fin"]);
    assert!(names.is_empty(), "{names:?}");
}
