//! The GitHub Action's entry point (`action/run.sh`), run as the runner
//! runs it: it installs a release (here a local one, through a `file://`
//! URL) after checking its sha256, and diffs the pull request's CRDs with
//! their base revision, as annotations or SARIF.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::runs::assert_has;

fn sh(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .args(["-euc", script])
        .current_dir(dir)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const OLD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              color: {type: string}
";

/// A release directory `releases/VERSION/` holding this build's binary as
/// the Linux archive, with `checksums.txt` (or a wrong one).
fn local_release(root: &Path, version: &str, honest: bool) -> String {
    let dir = root.join("releases").join(version);
    let stage = root.join("stage");
    std::fs::create_dir_all(&dir).expect("release dir");
    std::fs::create_dir_all(&stage).expect("stage");
    std::fs::copy(
        env!("CARGO_BIN_EXE_kubectl-crd_safety"),
        stage.join("kubectl-crd_safety"),
    )
    .expect("binary");
    let archive = format!("kubectl-crd_safety-{version}-x86_64-unknown-linux-musl.tar.gz");
    sh(
        root,
        &format!(
            "tar -C stage -czf releases/{version}/{archive} kubectl-crd_safety
             cd releases/{version} && sha256sum {archive} > checksums.txt"
        ),
    );
    if !honest {
        let sums = dir.join("checksums.txt");
        let text = std::fs::read_to_string(&sums).expect("sums");
        std::fs::write(&sums, format!("{}{}", "0".repeat(64), &text[64..])).expect("tampered");
    }
    format!("file://{}", root.join("releases").display())
}

/// A repository whose last commit removes `color` from the CRD.
fn pull_request(dir: &Path) {
    std::fs::create_dir_all(dir.join("crds")).expect("crds");
    std::fs::write(dir.join("crds/widgets.yaml"), OLD).expect("old");
    sh(
        dir,
        "git init -q . && git config user.email t@e && git config user.name t
         git add . && git commit -qm base",
    );
    std::fs::write(
        dir.join("crds/widgets.yaml"),
        OLD.replace("              color: {type: string}\n", ""),
    )
    .expect("new");
    sh(dir, "git commit -qam 'drop color'");
}

fn action(repo: &Path, releases: &str, output: &str) -> Output {
    Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("action/run.sh"))
        .current_dir(repo)
        .env("CRD_SAFETY_RELEASES", releases)
        .env("INPUT_VERSION", "v0.1.0")
        .env("INPUT_PATHS", "crds")
        .env("INPUT_BASE", "HEAD~1")
        .env("INPUT_OUTPUT", output)
        .env("INPUT_SARIF_FILE", "out.sarif")
        .env("RUNNER_TEMP", repo.join(".runner"))
        .env("GITHUB_OUTPUT", repo.join(".runner-output"))
        .output()
        .expect("the action runs")
}

fn linux_x86_64() -> bool {
    cfg!(all(target_os = "linux", target_arch = "x86_64"))
}

#[test]
fn the_action_annotates_a_breaking_change_against_the_base_revision() {
    if !linux_x86_64() {
        return;
    }
    let root = tempfile::tempdir().expect("tempdir");
    let releases = local_release(root.path(), "v0.1.0", true);
    let repo = root.path().join("repo");
    pull_request(&repo);
    let out = action(&repo, &releases, "github");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A removed field has no line in the new file: the annotation names
    // the CRD, version and path instead.
    assert!(
        stdout.lines().any(|l| l.starts_with("::error ")
            && l.contains("existingFieldRemoval%3A widgets.example.com v1 ^.spec.color")),
        "{stdout}"
    );
    let outputs = std::fs::read_to_string(repo.join(".runner-output")).expect("GITHUB_OUTPUT");
    assert_eq!(outputs.trim(), "exit-code=1");
    // SARIF instead: one log for code scanning, the finding in it.
    let out = action(&repo, &releases, "sarif");
    assert_eq!(out.status.code(), Some(1));
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("out.sarif")).expect("out.sarif"))
            .expect("SARIF JSON");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    assert!(
        results
            .iter()
            .any(|r| r["ruleId"] == "existingFieldRemoval"),
        "{sarif:#}"
    );
}

#[test]
fn an_archive_that_does_not_match_its_checksum_is_not_run() {
    if !linux_x86_64() {
        return;
    }
    let root = tempfile::tempdir().expect("tempdir");
    let releases = local_release(root.path(), "v0.1.0", false);
    let repo = root.path().join("repo");
    pull_request(&repo);
    let out = action(&repo, &releases, "github");
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_has(
        &stdout,
        "::error::crd-safety: kubectl-crd_safety-v0.1.0-x86_64-unknown-linux-musl.tar.gz does not match checksums.txt",
    );
}
