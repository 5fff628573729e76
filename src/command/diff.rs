//! `diff OLD NEW`: two manifest sets, no cluster.

use super::{Baselines, Failure, finish, requirements_of};
use crate::batches;
use crate::config::Config;
use crate::engine::{StoredVersionsArg, diff_judged, load};
use crate::manifest::{ManifestSet, Source, SourceOptions};
use crate::report::Report;

/// What `diff` compares, and how.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The installed side.
    pub old: Vec<Source>,
    /// The side about to be applied.
    pub new: Vec<Source>,
    /// How the sources are read.
    pub sources: SourceOptions,
    /// `--stored-versions`: the cluster's `status.storedVersions`, as known.
    pub stored: StoredVersionsArg,
    /// The checks' configuration.
    pub config: Config,
    /// `--baseline`, `--write-baseline`.
    pub baselines: Baselines,
    /// `--objects PATH...`: custom resources (samples, a GitOps
    /// repository's objects) judged against NEW besides NEW's own.
    pub objects: Vec<Source>,
}

/// The report, and the manifests it was made from.
#[derive(Debug)]
pub struct Diffed {
    /// What was found.
    pub report: Report,
    /// How many findings `--write-baseline` recorded.
    pub baseline_written: Option<usize>,
    /// Both parsed sides (empty when large directories were read a few
    /// CRDs at a time). Handed back so that a process about to exit can
    /// leak them: freeing every node of two large manifests one by one
    /// costs a `diff` of large pairs a good share of its wall time, and the
    /// OS takes the memory back anyway (figures: docs/BENCHMARKS.md, "What
    /// each speed trick buys").
    pub manifests: (ManifestSet, ManifestSet),
}

/// Compares `new` with `old`. Large directories are compared a few CRDs at
/// a time ([`batches`]), which holds a fraction of the memory; anything
/// else is read whole. Both ways give the same report.
pub fn run(request: &Request) -> Result<Diffed, Failure> {
    let Request {
        old,
        new,
        sources,
        stored,
        config,
        baselines,
        objects,
    } = request;
    if is_stdin(old) && is_stdin(new) {
        return Err(Failure::Usage(
            "only one of OLD and NEW can be - (stdin)".into(),
        ));
    }
    let requirements = requirements_of(config)?;
    // Requirements judge NEW's CRDs, which a batched run lets go batch by
    // batch: with requirements, NEW is read whole.
    // So do objects to judge against NEW.
    let batched = if requirements.is_empty() && objects.is_empty() {
        batches::diff(old, new, sources, stored, config, batches::LIMITS)
    } else {
        None
    };
    let (mut report, manifests) = match batched {
        Some(report) => (report, Default::default()),
        None => {
            let (old, new) = load(old, new, sources, config);
            let old = old?;
            let (mut new, verdicts) = new?;
            if !objects.is_empty() {
                let extra = crate::manifest::load_resources(objects, sources)?;
                new.resources.extend(extra.resources);
            }
            let mut report = diff_judged(&old, &new, &verdicts, stored, config);
            crate::scan::judge_resources(&old, &new, config, &mut report.crds);
            report.recount();
            (report, (old, new))
        }
    };
    let baseline_written = finish(
        &mut report,
        &manifests.0,
        &manifests.1,
        sources.positions,
        baselines,
        &requirements,
    )?;
    Ok(Diffed {
        report,
        baseline_written,
        manifests,
    })
}

fn is_stdin(sources: &[Source]) -> bool {
    sources.iter().any(|s| matches!(s, Source::Stdin))
}
