//! `apply-check -f FILES`: the manifests against the live cluster.

use super::{Failure, Manifests, finish, requirements_of};
use crate::cluster::Connection;
use crate::live_check::{CheckOptions, LiveCheck, apply_check};
use crate::manifest::{self, ManifestSet};
use crate::requirement::Requirement;

/// The live check, ready to show.
#[derive(Debug)]
pub struct Checked {
    /// The report and the plan of each CRD.
    pub check: LiveCheck,
    /// How many findings `--write-baseline` recorded.
    pub baseline_written: Option<usize>,
}

/// Reads the manifests. Called before connecting, so that a bad file fails
/// without a request to the cluster.
pub fn load(request: &Manifests) -> Result<ManifestSet, Failure> {
    request.stdin_once("-f -")?;
    Ok(manifest::load_with(&request.new, &request.sources)?)
}

/// Compares `new` (from [`load`]) with the live CRDs, dry-runs each update
/// on the API server and, with `options.scan`, checks the stored objects.
pub async fn run(
    conn: &Connection,
    request: &Manifests,
    new: &ManifestSet,
    options: &CheckOptions<'_>,
) -> Result<Checked, Failure> {
    let requirements = requirements_of(&request.config)?;
    let check = apply_check(conn, new, &request.config, options).await?;
    conclude(request, new, check, &requirements)
}

/// The requirements (read before the cluster is asked), the findings'
/// places and the baselines, on a live check whose findings are all in.
pub(super) fn conclude(
    request: &Manifests,
    new: &ManifestSet,
    mut check: LiveCheck,
    requirements: &[Requirement],
) -> Result<Checked, Failure> {
    // The old side is the cluster's: positions come from the manifests.
    let baseline_written = finish(
        &mut check.report,
        &ManifestSet::default(),
        new,
        request.sources.positions,
        &request.baselines,
        requirements,
    )?;
    Ok(Checked {
        check,
        baseline_written,
    })
}
