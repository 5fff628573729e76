//! Running the plugin in the ways only some live tests need (as a child
//! the test acts on while it runs, in a pseudo-terminal), the one-line
//! checks of what a run printed, and the RBAC a run as another user needs.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};
use serde_json::{Value, json};

use super::run::Run;

/// Asserts that `text` (a run's output) contains `needle`, showing the
/// whole text when it does not.
#[track_caller]
pub fn assert_has(text: &str, needle: &str) {
    assert!(text.contains(needle), "{text}");
}

/// Starts `kubectl-crd_safety args --kubeconfig kubeconfig` with no stdin,
/// for a test that acts (interrupts it, restarts the server) while it runs;
/// [`finished`] collects what it printed.
pub fn start(args: &[&str], kubeconfig: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"))
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Waits for a child of [`start`] off the async runtime: its exit code (-1
/// when killed by a signal) and output.
pub async fn finished(child: Child) -> Run {
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("waited")
        .expect("output");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `kubectl-crd_safety args --kubeconfig kubeconfig` in a
/// pseudo-terminal `columns` wide, waits for `question`, answers with one
/// key and returns the exit code and everything the terminal showed.
#[cfg(unix)]
pub fn answer_in_terminal(
    args: &[&str],
    kubeconfig: &Path,
    columns: u16,
    question: &str,
    key: &str,
) -> (i32, String) {
    answer_in_terminal_after(args, kubeconfig, columns, question, key, || {})
}

/// [`answer_in_terminal`], calling `meanwhile` once the question is on the
/// screen and before the key is typed: what a test does to the cluster
/// between the check the question follows and the write the answer starts.
#[cfg(unix)]
pub fn answer_in_terminal_after(
    args: &[&str],
    kubeconfig: &Path,
    columns: u16,
    question: &str,
    key: &str,
    meanwhile: impl FnOnce(),
) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"));
    cmd.args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("COLUMNS", columns.to_string())
        .env_remove("KUBECONFIG");
    let mut session = rexpect::session::spawn_command(cmd, Some(30_000)).expect("a pty session");
    let before = session.exp_string(question).expect("the question is asked");
    meanwhile();
    session.send(key).expect("the key is typed");
    session.flush().expect("flushed");
    let after = session.exp_eof().expect("the command finishes");
    let code = match session.process().wait().expect("exit status") {
        rexpect::process::WaitStatus::Exited(_, code) => code,
        other => panic!("unexpected end: {other:?}"),
    };
    (code, format!("{before}[answered {key}]{after}"))
}

/// Runs `kubectl-crd_safety args --kubeconfig kubeconfig` in a
/// pseudo-terminal `columns` wide and answers each `(question, key)` in
/// turn (a `n` that ends the run ends the list): the exit code and
/// everything the terminal showed.
#[cfg(unix)]
pub fn answers_in_terminal(
    args: &[&str],
    kubeconfig: &Path,
    columns: u16,
    answers: &[(&str, &str)],
) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-crd_safety"));
    cmd.args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .env("NO_COLOR", "1")
        .env("TERM", "xterm")
        .env("COLUMNS", columns.to_string())
        .env_remove("KUBECONFIG");
    let mut session = rexpect::session::spawn_command(cmd, Some(30_000)).expect("a pty session");
    let mut screen = String::new();
    for (question, key) in answers {
        let before = session
            .exp_string(question)
            .unwrap_or_else(|e| panic!("{question:?} is not asked: {e}\n{screen}"));
        screen.push_str(&format!("{before}{question}[answered {key}]"));
        session.send(key).expect("the key is typed");
        session.flush().expect("flushed");
    }
    screen.push_str(&session.exp_eof().expect("the command finishes"));
    let code = match session.process().wait().expect("exit status") {
        rexpect::process::WaitStatus::Exited(_, code) => code,
        other => panic!("unexpected end: {other:?}"),
    };
    (code, screen)
}

/// The finding of check `check` on the first CRD of a report, which must
/// have one.
#[track_caller]
pub fn finding<'a>(report: &'a Value, check: &str) -> &'a Value {
    report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == check)
        .unwrap_or_else(|| panic!("no {check} finding in {report}"))
}

/// Gives `user` the cluster-wide `rules` through a ClusterRole and a
/// ClusterRoleBinding both named `name`, applied as the admin: a test's
/// own user and names, as the shared control plane requires.
pub async fn grant(client: &Client, name: &str, user: &str, rules: Value) {
    let apply = PatchParams::apply("crd-safety-test").force();
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    });
    Api::<ClusterRole>::all(client.clone())
        .patch(name, &apply, &Patch::Apply(&role))
        .await
        .expect("role");
    Api::<ClusterRoleBinding>::all(client.clone())
        .patch(name, &apply, &Patch::Apply(&binding))
        .await
        .expect("binding");
}
