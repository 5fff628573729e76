//! `lint NEW...`: the new side alone, as if nothing were installed yet.

use super::{Baselines, Failure, finish};
use crate::batches;
use crate::config::Config;
use crate::diff::{StoredVersionsArg, diff_judged, load_new};
use crate::manifest::{ManifestSet, Source, SourceOptions};
use crate::report::Report;

/// What `lint` reads, and how.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The manifests.
    pub new: Vec<Source>,
    /// How the sources are read.
    pub sources: SourceOptions,
    /// The checks' configuration.
    pub config: Config,
    /// `--baseline`, `--write-baseline`.
    pub baselines: Baselines,
}

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
pub fn run(request: &Request) -> Result<Linted, Failure> {
    let Request {
        new,
        sources,
        config,
        baselines,
    } = request;
    if new.iter().filter(|s| matches!(s, Source::Stdin)).count() > 1 {
        return Err(Failure::Usage("- (stdin) can be given once".into()));
    }
    let none = ManifestSet::default();
    let (mut report, new) = match batches::lint(new, sources.positions, config, batches::LIMITS) {
        Some(report) => (report, ManifestSet::default()),
        None => {
            let (new, verdicts) = load_new(new, sources, config)?;
            let stored = StoredVersionsArg::default();
            let report = diff_judged(&none, &new, &verdicts, &stored, config);
            (report, new)
        }
    };
    let baseline_written = finish(&mut report, &none, &new, sources.positions, baselines)?;
    Ok(Linted {
        report,
        baseline_written,
    })
}
