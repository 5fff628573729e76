//! Exec credential plugins against the real API server, beyond the
//! kubeconfig matrix: `interactiveMode` as kubectl reads it, and a
//! credential whose `expirationTimestamp` has passed, which is fetched
//! again before the next request. Each plugin is a small shell script that
//! logs its runs and prints an ExecCredential with the server's admin
//! token.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::envtest::{ADMIN_TOKEN, ControlPlane, control_plane, sh};
use support::live::{apply_check, crd, write_manifest};
use support::run::{Run, run};
use support::runs::assert_has;
use tempfile::TempDir;

/// A plugin that appends a line to `runs` each time it runs, writes the
/// token to its stderr (as a careless plugin might) and prints a token
/// credential expiring at `expires`.
fn plugin(dir: &Path, expires: &str) -> (PathBuf, PathBuf) {
    let script = dir.join("plugin.sh");
    let runs = dir.join("runs.log");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> '{runs}'\necho \"debug: using token {ADMIN_TOKEN}\" >&2\n\
             printf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\
             \"status\":{{\"token\":\"{ADMIN_TOKEN}\",\"expirationTimestamp\":\"{expires}\"}}}}'\n",
            runs = runs.display()
        ),
    )
    .expect("plugin written");
    sh(dir, &format!("chmod +x '{}'", script.display()));
    (script, runs)
}

/// A new directory with a [`plugin`] whose credential expires at `expires`
/// and a kubeconfig that runs it in `interactiveMode` `mode`: the
/// directory, the kubeconfig's path and the plugin's log of runs.
fn exec_user(plane: &ControlPlane, expires: &str, mode: &str) -> (TempDir, String, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (script, runs) = plugin(dir.path(), expires);
    let kubeconfig = kubeconfig(plane, dir.path(), &script, mode);
    (dir, kubeconfig, runs)
}

fn kubeconfig(plane: &ControlPlane, dir: &Path, script: &Path, mode: &str) -> String {
    let path = dir.join("exec.kubeconfig");
    let ca = plane.dir.path().join("certs/apiserver.crt");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: envtest
  cluster:
    server: {server}
    certificate-authority: {ca}
users:
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: {script}
      interactiveMode: {mode}
contexts:
- name: exec
  context: {{cluster: envtest, user: exec}}
current-context: exec
",
            server = plane.server,
            ca = ca.display(),
            script = script.display()
        ),
    )
    .expect("kubeconfig written");
    path.display().to_string()
}

/// A CRD of this file's own in `dir`, absent from the cluster: its
/// `apply-check` is a few requests and no changes.
fn manifest(dir: &Path) -> String {
    write_manifest(
        dir,
        "execs.json",
        &crd("execs", &[("v1", true, true)], json!({})),
    )
}

/// `apply-check -o json` of [`manifest`] (held to the server's dry run on
/// the way, as [`apply_check`] does).
fn check(dir: &Path, kubeconfig: &str) -> Run {
    apply_check(&manifest(dir), kubeconfig, &["-o", "json"])
}

fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// `kubectl get crd` with the same kubeconfig, stdin not a terminal.
fn kubectl(plane: &ControlPlane, kubeconfig: &str) -> std::process::Output {
    Command::new(plane.assets.join("kubectl"))
        .args(["get", "crd", "--kubeconfig", kubeconfig])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("kubectl runs")
}

#[test]
fn without_a_terminal_an_if_available_plugin_runs_and_its_stderr_is_not_shown() {
    let Some(plane) = control_plane() else { return };
    let (dir, kc, _) = exec_user(plane, "2099-01-01T00:00:00Z", "IfAvailable");
    assert!(kubectl(plane, &kc).status.success(), "kubectl accepts it");
    let r = check(dir.path(), &kc);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains(ADMIN_TOKEN), "{}", r.stderr);
    assert!(!r.stdout.contains(ADMIN_TOKEN));
}

#[test]
fn an_always_interactive_plugin_without_a_terminal_is_refused_like_kubectl() {
    let Some(plane) = control_plane() else { return };
    let (dir, kc, runs_log) = exec_user(plane, "2099-01-01T00:00:00Z", "Always");
    let by_kubectl = kubectl(plane, &kc);
    assert!(!by_kubectl.status.success(), "kubectl refuses it too");
    assert_has(
        &String::from_utf8_lossy(&by_kubectl.stderr),
        "not a terminal",
    );
    let r = check(dir.path(), &kc);
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        r.stderr.trim(),
        "error: kubeconfig: the exec credential plugin needs a terminal (interactiveMode: \
         Always), but standard input is not one"
    );
    assert_eq!(runs(&runs_log), 0, "the plugin is not run");
}

#[test]
fn an_expired_credential_is_fetched_again_before_the_next_request() {
    let Some(plane) = control_plane() else { return };
    let (dir, kc, fresh_runs) = exec_user(plane, "2099-01-01T00:00:00Z", "Never");
    let r = check(dir.path(), &kc);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // kube-rs runs the plugin once to build the configuration and once for
    // the client; after that a valid credential is reused.
    let fresh_count = runs(&fresh_runs);
    assert!(
        fresh_count <= 2,
        "a valid credential is reused: {fresh_count}"
    );

    let (expired_dir, kc, expired_runs) = exec_user(plane, "2000-01-01T00:00:00Z", "Never");
    let r = check(expired_dir.path(), &kc);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The CRD's GET, /version and the dry run each need a credential.
    let expired_count = runs(&expired_runs);
    assert!(
        expired_count >= fresh_count + 3,
        "re-run for each request: {expired_count} runs, {fresh_count} when valid"
    );
}

#[test]
fn verbose_output_shows_each_request_and_never_a_credential() {
    let Some(plane) = control_plane() else { return };
    let (dir, kc, _) = exec_user(plane, "2000-01-01T00:00:00Z", "IfAvailable");
    let ca = plane.dir.path().join("certs/apiserver.crt");
    let ca = ca.display().to_string();
    let manifest = manifest(dir.path());
    // The exec plugin's credential, and the same token given as a flag.
    for extra in [
        vec!["--kubeconfig", kc.as_str()],
        vec![
            "--server",
            plane.server.as_str(),
            "--certificate-authority",
            ca.as_str(),
            "--token",
            ADMIN_TOKEN,
        ],
    ] {
        for level in ["-v", "--v=9"] {
            let mut args = vec!["apply-check", "-f", &manifest, "-o", "json"];
            args.extend_from_slice(&extra);
            if level == "-v" {
                args.extend_from_slice(&["-v", "6"]);
            } else {
                args.push(level);
            }
            let r = run(&args, None);
            assert_eq!(r.code, 0, "{args:?}: {}{}", r.stdout, r.stderr);
            assert!(
                r.stderr.contains("request: GET /version 200 in "),
                "{args:?}: {}",
                r.stderr
            );
            assert!(
                r.stderr
                    .lines()
                    .any(|l| l.starts_with("request: PATCH /apis/apiextensions.k8s.io/v1/")),
                "{}",
                r.stderr
            );
            assert!(!r.stderr.contains(ADMIN_TOKEN), "{args:?}: {}", r.stderr);
            assert!(!r.stdout.contains(ADMIN_TOKEN));
        }
    }
}
