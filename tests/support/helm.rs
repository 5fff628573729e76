//! A real `helm` for the chart tests, built once from the Go module proxy by
//! `scripts/helm-bin.sh` (cached under `target/helm/`). When it cannot be
//! built, the tests that need it are skipped with a notice, except with
//! `CI=true`, where they fail.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The directory holding `helm`, or `None` (after a notice) outside CI when
/// it cannot be built.
pub fn helm_dir() -> Option<&'static PathBuf> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| match build() {
        Ok(dir) => Some(dir),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("helm is required in CI, but {why}")
        }
        Err(why) => {
            eprintln!("notice: skipping tests that need helm: {why}");
            None
        }
    })
    .as_ref()
}

fn build() -> Result<PathBuf, String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/helm-bin.sh");
    let out = Command::new("bash")
        .arg(script)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run scripts/helm-bin.sh: {e}"))?;
    match out.status.code() {
        Some(0) => {
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(PathBuf::from(text.lines().last().unwrap_or("").trim()))
        }
        Some(3) => Err("helm cannot be built here (see the line above)".into()),
        other => panic!("scripts/helm-bin.sh failed with {other:?}"),
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
