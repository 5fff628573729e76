//! `apply-check`: the comparison with the live cluster as the old side, its
//! real `status.storedVersions`, and the API server's own dry run of the
//! update.

use serde_json::Value;

use crate::cluster::{ClusterError, Connection};
use crate::compare::{Check, Finding, Severity};
use crate::config::Config;
use crate::crd::Crd;
use crate::diff::{StoredVersionsArg, entries};
use crate::manifest::{LoadedCrd, Location, ManifestSet, normalize_to_v1};
use crate::report::{ClusterInfo, Report, SkippedDocument};

/// Reads the live CRDs named in `new`, compares, and dry-runs each update.
pub async fn apply_check(
    conn: &Connection,
    new: &ManifestSet,
    config: &Config,
) -> Result<Report, ClusterError> {
    let mut live = ManifestSet::default();
    for n in &new.crds {
        let Some(value) = conn.get_crd(&n.crd.name).await? else {
            continue;
        };
        let crd = Crd::from_manifest(normalize_to_v1(value)).map_err(|e| ClusterError::Other {
            server: conn.server.clone(),
            detail: format!("the live CRD cannot be read: {e}"),
        })?;
        live.crds.push(LoadedCrd {
            crd,
            location: Location {
                file: format!("cluster (context {})", conn.context),
                line: 0,
            },
        });
    }
    // The live object carries status.storedVersions; no flag needed.
    let mut crds = entries(&live, new, &StoredVersionsArg::default(), config);
    let policy = config.policy();
    for (entry, n) in crds.iter_mut().zip(&new.crds) {
        if let Some(message) = conn.dry_run_apply(&n.crd.name, &n.crd.manifest).await? {
            let finding = Finding {
                check: Check::ApiServerRejects,
                severity: Severity::Error,
                version: None,
                path: None,
                message: format!(
                    "the API server refuses this update (server-side dry run): {message}"
                ),
                old: None,
                new: Some(Value::String(message)),
            };
            let (kept, excepted) = policy.apply(&n.crd.name, vec![finding]);
            entry.add(kept, excepted);
        }
    }
    let skipped: Vec<SkippedDocument> = new.skipped.iter().map(SkippedDocument::from).collect();
    let mut report = Report::new(crds, skipped, config.mode, config.fail_mode);
    report.cluster = Some(ClusterInfo {
        context: conn.context.clone(),
        server: conn.server.clone(),
    });
    Ok(report)
}
