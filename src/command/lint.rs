//! `lint NEW...`: the new side alone, as if nothing were installed yet.

use super::{Failure, Manifests, finish, requirements_of};
use crate::batches;
use crate::engine::{StoredVersionsArg, diff_judged, load_new};
use crate::manifest::ManifestSet;
use crate::report::Report;

/// What `lint` found.
#[derive(Debug)]
pub struct Linted {
    /// The findings.
    pub report: Report,
    /// How many findings `--write-baseline` recorded.
    pub baseline_written: Option<usize>,
}

/// Checks `new` as `diff` would against an empty cluster; large
/// directories a few CRDs at a time, as for `diff`.
pub fn run(request: &Manifests) -> Result<Linted, Failure> {
    request.stdin_once("- (stdin)")?;
    let Manifests {
        new,
        sources,
        config,
        baselines,
    } = request;
    let none = ManifestSet::default();
    let requirements = requirements_of(config)?;
    // As for `diff`: requirements need NEW whole.
    let batched = if requirements.is_empty() {
        batches::lint(new, sources, config, batches::LIMITS)
    } else {
        None
    };
    let (mut report, new) = match batched {
        Some(report) => (report, ManifestSet::default()),
        None => {
            let (new, verdicts) = load_new(new, sources, config)?;
            let stored = StoredVersionsArg::default();
            let mut report = diff_judged(&none, &new, &verdicts, &stored, config);
            // The custom resources that come with the CRDs (samples), as
            // applying them to an empty cluster would judge them.
            crate::scan::judge_resources(&none, &new, config, &mut report.crds);
            report.recount();
            (report, new)
        }
    };
    let baseline_written = finish(
        &mut report,
        &none,
        &new,
        sources.positions,
        baselines,
        &requirements,
    )?;
    Ok(Linted {
        report,
        baseline_written,
    })
}
