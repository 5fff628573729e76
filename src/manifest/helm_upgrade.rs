//! What `helm upgrade RELEASE CHART` would apply, as helm itself works it
//! out: `helm upgrade --dry-run=server -o json` with the user's flags reads
//! the release, merges the values as the real upgrade would
//! (`--reuse-values`, `--reset-values`, `--reset-then-reuse-values` and
//! helm's default between them are helm's own), renders the chart, and
//! prints the release it would record: the rendered templates and the
//! chart's files, `crds/` included. Emulating helm's value merging would
//! differ from it at the edges; asking helm cannot. `helm get manifest`
//! gives what the release renders now, for the CRDs the upgrade deletes.

use base64::Engine;
use serde_json::Value;
use thiserror::Error;

use super::chart::rendered_crds;
use super::external::{self, RunError};
use super::input::{InputLimits, LimitError};
use super::source::{Origin, Text, is_manifest};

/// `helm upgrade RELEASE CHART FLAGS...` as the user typed it, without
/// the dry run this module adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmUpgrade {
    /// The release.
    pub release: String,
    /// The chart: a path, `repo/name`, an `oci://` reference, a URL.
    pub chart: String,
    /// The flags for `helm upgrade` (`--values`, `--set`, `--version`,
    /// `--reuse-values`, `--namespace`, ...), in order.
    pub flags: Vec<String>,
    /// The flags that pick the release, for `helm get manifest`
    /// (`--namespace`, `--kube-context`, `--kubeconfig`).
    pub release_flags: Vec<String>,
}

/// Why helm could not say what the upgrade applies.
#[derive(Debug, Error)]
pub enum HelmUpgradeError {
    /// helm is not installed (the plugin runs under helm, which names
    /// itself in `HELM_BIN`).
    #[error("helm is not on PATH (and HELM_BIN is not set)")]
    Missing,
    /// helm ran and refused: its own line (an unknown release, a chart it
    /// cannot fetch, a template error).
    #[error("helm: {0}")]
    Helm(String),
    /// helm printed more than a source may hold.
    #[error("the output of helm upgrade --dry-run: {0}")]
    TooLarge(LimitError),
    /// The release helm printed is not what helm prints.
    #[error("helm's release cannot be read: {0}")]
    Release(String),
}

/// The helm to run: the one running the plugin, else `helm` on `PATH`.
fn helm() -> String {
    std::env::var("HELM_BIN")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| "helm".to_string())
}

fn run(args: &[String], limits: InputLimits) -> Result<String, HelmUpgradeError> {
    external::run(&helm(), args, limits.total_bytes()).map_err(|e| match e {
        RunError::NotFound => HelmUpgradeError::Missing,
        RunError::Failed(why) => HelmUpgradeError::Helm(why),
        RunError::TooLarge(limit) => HelmUpgradeError::TooLarge(limit),
    })
}

/// What the upgrade would apply: the CRDs its templates render (labelled
/// `helm:CHART:TEMPLATE`, which the upgrade creates, updates and deletes)
/// and the chart's `crds/` files (which it never touches).
pub fn read(spec: &HelmUpgrade, limits: InputLimits) -> Result<Vec<Text>, HelmUpgradeError> {
    let mut args = vec![
        "upgrade".to_string(),
        spec.release.clone(),
        spec.chart.clone(),
    ];
    args.extend(spec.flags.iter().cloned());
    // Server: templates' `lookup` sees the cluster, as in the real upgrade.
    args.extend(["--dry-run=server".to_string(), "-o".into(), "json".into()]);
    let printed = run(&args, limits)?;
    let release: Value = serde_json::from_str(&printed)
        .map_err(|e| HelmUpgradeError::Release(format!("not JSON: {e}")))?;
    let manifest = release["manifest"].as_str().unwrap_or_default();
    let mut texts = rendered_crds(manifest, &spec.chart);
    let files = release["chart"]["files"].as_array().map_or(&[][..], |f| f);
    for file in files {
        let Some(name) = file["name"].as_str() else {
            continue;
        };
        if !(name.starts_with("crds/") && is_manifest(std::path::Path::new(name))) {
            continue;
        }
        let data = file["data"].as_str().unwrap_or_default();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| HelmUpgradeError::Release(format!("{name}: {e}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| HelmUpgradeError::Release(format!("{name} is not UTF-8")))?;
        texts.push(Text {
            label: format!("{}:{name}", spec.chart),
            is_json: name.ends_with(".json"),
            text,
            origin: Origin::ChartCrds {
                chart: spec.chart.clone(),
            },
        });
    }
    Ok(texts)
}

/// The CRDs the release renders from its templates now (`helm get
/// manifest`), as texts of its current revision.
pub fn current(spec: &HelmUpgrade, limits: InputLimits) -> Result<Vec<Text>, HelmUpgradeError> {
    let mut args = vec![
        "get".to_string(),
        "manifest".to_string(),
        spec.release.clone(),
    ];
    args.extend(spec.release_flags.iter().cloned());
    let manifest = run(&args, limits)?;
    let label = format!("release {}", spec.release);
    Ok(rendered_crds(&manifest, &label))
}
