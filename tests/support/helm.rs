//! Go tools for the tests, built once from the Go module proxy by
//! `scripts/go-bin.sh` (cached under `target/go-bin/`): a real `helm` for the
//! chart tests (`scripts/helm-bin.sh`), krew for the release tests
//! (`scripts/krew-bin.sh`). When one cannot be built, the tests that need it
//! are skipped with a notice, except with `CI=true`, where they fail.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The directory holding `helm`, or `None` (after a notice) outside CI when
/// it cannot be built.
pub fn helm_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| tool_dir("helm-bin.sh")).as_ref()
}

/// The directory holding Helm 4's `helm` (`scripts/helm4-bin.sh`), as
/// [`helm_dir`].
pub fn helm4_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| tool_dir("helm4-bin.sh")).as_ref()
}

/// The directory holding `krew` and `validate-krew-manifest`, as
/// [`helm_dir`].
pub fn krew_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| tool_dir("krew-bin.sh")).as_ref()
}

/// The directory holding `yaml2json` (sigs.k8s.io/yaml, the reader of
/// kubectl, Helm and Argo CD), as [`helm_dir`].
pub fn yaml2json_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| tool_dir("yaml2json-bin.sh")).as_ref()
}

fn tool_dir(script: &str) -> Option<PathBuf> {
    match build(script) {
        Ok(dir) => Some(dir),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("scripts/{script} is required in CI, but {why}")
        }
        Err(why) => {
            eprintln!("notice: skipping tests that need scripts/{script}: {why}");
            None
        }
    }
}

fn build(script: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(script);
    let out = Command::new("bash")
        .arg(path)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run scripts/{script}: {e}"))?;
    match out.status.code() {
        Some(0) => {
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(PathBuf::from(text.lines().last().unwrap_or("").trim()))
        }
        Some(3) => Err("it cannot be built here (see the line above)".into()),
        other => panic!("scripts/{script} failed with {other:?}"),
    }
}

/// A `PATH` with helm's directory first.
pub fn path_with_helm(dir: &std::path::Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Runs the helm of `dir` against the test server in namespace `default`,
/// failing with its output unless it succeeds.
pub fn helm(dir: &std::path::Path, kubeconfig: &str, args: &[&str]) -> std::process::Output {
    let home = std::env::temp_dir().join("crd-safety-helm-delivery");
    let out = Command::new(dir.join("helm"))
        .args(args)
        .args(["--kubeconfig", kubeconfig, "--namespace", "default"])
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .output()
        .expect("helm runs");
    assert!(
        out.status.success(),
        "helm {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
