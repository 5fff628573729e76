//! `helm crd-safety upgrade RELEASE CHART`: the live check of what `helm
//! upgrade` would apply (helm works it out, see
//! [`crate::manifest::HelmUpgrade`]), and of the CRDs the release renders
//! now that the upgrade would delete.

use super::{Failure, Manifests};
use crate::cluster::Connection;
use crate::compare::{Check, Finding, Severity};
use crate::delivery::helm;
use crate::live_check::{CheckOptions, apply_check};
use crate::manifest::{self, HelmUpgrade, ManifestSet, Source};
use crate::outcome::Action;
use crate::report::{CrdReport, CrdStatus};

use super::apply_check::Checked;

/// Reads what the upgrade applies: `request.new` is the one
/// [`Source::HelmUpgrade`]. A chart that renders no CRD is an answer here
/// (every CRD the release had is deleted), not an input error.
pub fn load(request: &Manifests) -> Result<ManifestSet, Failure> {
    Ok(manifest::load_upgrade(&request.new, &request.sources)?)
}

/// [`super::apply_check::run`] of `new`, plus a `helmDeletesCrd` entry for
/// each live CRD the release renders now that `new` does not have.
pub async fn run(
    conn: &Connection,
    request: &Manifests,
    spec: &HelmUpgrade,
    new: &ManifestSet,
    options: &CheckOptions<'_>,
) -> Result<Checked, Failure> {
    let requirements = super::requirements_of(&request.config)?;
    let mut check = apply_check(conn, new, &request.config, options).await?;
    not_upgraded(&mut check, new, &request.config);
    let current = current_crds(request, spec)?;
    let dropped: Vec<&str> = current
        .iter()
        .map(String::as_str)
        .filter(|name| new.get(name).is_none())
        .collect();
    let live = conn.get_crds(&dropped, options.concurrency.max(1)).await?;
    let policy = request.config.policy();
    for (name, live) in dropped.iter().zip(live) {
        // Gone from the cluster already: nothing left to delete.
        let Some(live) = live else { continue };
        let release = format!("release {}", spec.release);
        let raw: Vec<_> = helm::release_drops(&live, &release).into_iter().collect();
        let (findings, excepted) = policy.apply(name, raw);
        let mut entry = CrdReport::new(name.to_string(), CrdStatus::Absent, findings, excepted);
        entry.old_source = Some(format!("cluster (context {})", conn.context));
        check.report.crds.push(entry);
    }
    check.report.recount();
    super::apply_check::conclude(request, new, check, &requirements)
}

/// `helmCrdsNotUpgraded` on each CRD of the chart's `crds/` that the
/// cluster does not have as the chart does: the check says what applying
/// it would do, and this says that `helm upgrade` will not.
fn not_upgraded(
    check: &mut crate::live_check::LiveCheck,
    new: &ManifestSet,
    config: &crate::config::Config,
) {
    let policy = config.policy();
    for (n, planned) in new.crds.iter().zip(&check.plan) {
        if !matches!(n.origin, manifest::Origin::ChartCrds { .. })
            || planned.action == Action::Unchanged
        {
            continue;
        }
        let what = match planned.action {
            Action::Create => "the cluster does not have it, and helm upgrade does not create it",
            _ => "the cluster has another version of it, and helm upgrade leaves it so",
        };
        let message = format!(
            "in the chart's crds/ ({}), which helm upgrade never applies: {what}. Apply it \
             yourself before upgrading (`kubectl crd-safety apply`), or move it to templates/",
            n.location.file
        );
        let raw = vec![Finding::new(
            Check::HelmCrdsNotUpgraded,
            Severity::Warning,
            message,
        )];
        let (findings, excepted) = policy.apply(&n.crd.name, raw);
        if let Some(entry) = check.report.crds.iter_mut().find(|c| c.name == n.crd.name) {
            entry.add(findings, excepted);
        }
    }
}

/// The names of the CRDs the release's templates render now.
fn current_crds(request: &Manifests, spec: &HelmUpgrade) -> Result<Vec<String>, Failure> {
    let texts = match manifest::helm_upgrade_current(spec, request.sources.limits) {
        Ok(texts) => texts,
        // `--install` of a release not installed yet: it renders nothing now.
        Err(manifest::HelmUpgradeError::Helm(why)) if why.contains("not found") => Vec::new(),
        Err(source) => {
            return Err(manifest::ManifestError::HelmUpgrade {
                input: Source::HelmUpgrade(spec.clone()).to_string(),
                source,
            }
            .into());
        }
    };
    let mut set = ManifestSet::default();
    for text in texts {
        manifest::load_text(&text.text, &text.label, false, &mut set)?;
    }
    Ok(set.crds.into_iter().map(|c| c.crd.name.clone()).collect())
}
