//! `diff` of large directories a few CRDs at a time.
//!
//! Parsed, a CRD takes several times the memory of its text, and two
//! releases of an operator's CRDs are tens of megabytes of text. Reading
//! both directories whole and then comparing them held everything at once.
//! Here the CRDs are first paired by the names an outline reads from their
//! top-level lines; then each batch of pairs is parsed, compared, checked
//! and placed on its lines, and let go before the next. Peak memory is that
//! of the largest batch (figures: docs/BENCHMARKS.md, "Batches of large
//! directories").
//!
//! It is only a way of scheduling the same work: the report is the one
//! [`crate::engine::diff`] makes from the whole sets. Whenever this path is
//! unsure (a source that is not a plain file or directory of YAML, a
//! document the outline cannot read, a name defined twice, a parse error,
//! a file changed meanwhile), it returns `None` and the caller reads the
//! sources whole, which also reports any error exactly as before.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::config::Config;
use crate::engine::{StoredVersionsArg, Verdicts, entries_judged, judging, report};
use crate::locate::locate_crds;
use crate::manifest::{self, DocRef, Outline, Positions, Source, SourceOptions};
use crate::report::{CrdReport, Report, SkippedDocument};

/// When batches are worth it, and how large they are.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Below this many bytes of YAML on both sides together, the sources
    /// are read whole: there is little memory to save, and a batch cannot
    /// share the cores as well as one pass over everything.
    pub min_total: u64,
    /// A batch closes once its documents reach this many bytes (a pair
    /// larger than that is a batch of its own).
    pub batch_bytes: usize,
}

/// Batches of 256 KB hold one large pair, or a few small ones, and a
/// `diff` peaks at about the memory of a `diff` of its largest pair.
/// Dropping a batch on another thread while the next one parses saved
/// time but put memory back on the peak. Reading whole is faster, but
/// memory is what batches are for, and what keeps `diff` of a directory
/// within a quarter of crdify's (figures: docs/BENCHMARKS.md, "Batches of
/// large directories").
pub const LIMITS: Limits = Limits {
    min_total: 1 << 20,
    batch_bytes: 256 << 10,
};

/// The report of `diff OLD NEW`, batch by batch; `None` when the sources
/// must be read whole (see the module's comment). Of `sources`, the
/// positions and the input limits apply (only plain paths are batched).
pub fn diff(
    old: &[Source],
    new: &[Source],
    sources: &SourceOptions,
    stored: &StoredVersionsArg,
    config: &Config,
    limits: Limits,
) -> Option<Report> {
    run(Some(old), new, sources, stored, config, limits)
}

/// The report of `lint NEW...` (the new side alone, as if nothing were
/// installed), batch by batch; `None` as for [`engine::diff`](crate::engine::diff).
pub fn lint(
    new: &[Source],
    sources: &SourceOptions,
    config: &Config,
    limits: Limits,
) -> Option<Report> {
    let stored = StoredVersionsArg::default();
    run(None, new, sources, &stored, config, limits)
}

/// `old` is `None` for `lint`, which has no old side (and needs none).
fn run(
    old: Option<&[Source]>,
    new: &[Source],
    sources: &SourceOptions,
    stored: &StoredVersionsArg,
    config: &Config,
    limits: Limits,
) -> Option<Report> {
    let positions = sources.positions;
    let old_paths = plain_paths(old.unwrap_or_default())?;
    let new_paths = plain_paths(new)?;
    // Two files are one pair at most: nothing to schedule (the single
    // large CRDs of `scripts/bench-crdify.sh` stay on the fastest path).
    let any_dir = old_paths.iter().chain(&new_paths).any(|p| p.is_dir());
    if !any_dir {
        return None;
    }
    let old_files = manifest::plain_files(&old_paths, sources.limits)?;
    let new_files = manifest::plain_files(&new_paths, sources.limits)?;
    let mut total = 0;
    for file in old_files.iter().chain(&new_files) {
        total += std::fs::metadata(file).ok()?.len();
    }
    if total < limits.min_total {
        return None;
    }
    let (old_outline, new_outline) = std::thread::scope(|scope| {
        let old = scope.spawn(|| manifest::outline(old_files, sources.limits));
        let new = manifest::outline(new_files, sources.limits);
        let old = old.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        (old, new)
    });
    let (old_outline, new_outline) = (old_outline?, new_outline?);
    let outlines = [&old_outline, &new_outline];
    let mut crds = Vec::new();
    let mut skipped: Vec<(usize, DocRef, SkippedDocument)> = Vec::new();
    for batch in plan(
        &old_outline,
        &new_outline,
        limits.batch_bytes,
        old.is_some(),
    )? {
        let [old_side, new_side] = judging(config, |judge| {
            manifest::load_documents(
                [(outlines[0], &batch[0]), (outlines[1], &batch[1])],
                positions,
                judge,
            )
        })?;
        let old_set = old_side.set;
        let (new_set, verdicts) = Verdicts::of(new_side, config);
        let mut done: Vec<CrdReport> =
            entries_judged(&old_set, &new_set, &verdicts, stored, config);
        if positions != Positions::Never {
            locate_crds(&mut done, &old_set, &new_set);
        }
        crds.extend(done);
        for (side, set) in [&old_set, &new_set].into_iter().enumerate() {
            let others = batch[side]
                .iter()
                .filter(|r| outlines[side].head(**r).is_some_and(|h| h.crd.is_none()));
            // Each document of another kind is one skipped entry.
            if others.clone().count() != set.skipped.len() {
                return None;
            }
            skipped.extend(
                others
                    .zip(&set.skipped)
                    .map(|(r, s)| (side, *r, SkippedDocument::from(s))),
            );
        }
        // Let go of this batch before the next one parses: that is the
        // point. (Freeing it on two threads saved time but put memory back
        // on the peak, as the freed memory spread over more of the
        // allocator's arenas; figures: docs/BENCHMARKS.md, "Batches of
        // large directories".)
        drop((old_set, new_set));
    }
    // Old side first, each in reading order, as a whole read lists them.
    skipped.sort_by_key(|(side, r, _)| (*side, *r));
    let skipped = skipped.into_iter().map(|(.., s)| s).collect();
    Some(report(crds, skipped, Vec::new(), config))
}

/// The paths of sources that are all paths.
fn plain_paths(sources: &[Source]) -> Option<Vec<&Path>> {
    sources
        .iter()
        .map(|s| match s {
            Source::Path(p) => Some(p.as_path()),
            _ => None,
        })
        .collect()
}

/// The batches, each `[old documents, new documents]`: every document of
/// NEW in reading order with the CRD of OLD it is compared with, then
/// what is left of OLD (CRDs NEW no longer has, other kinds). The report
/// lists CRDs in that order too. `None` when a side names a CRD twice or
/// has no CRD at all (errors a whole read reports; `lint` has no old side).
fn plan(
    old: &Outline,
    new: &Outline,
    batch_bytes: usize,
    needs_old: bool,
) -> Option<Vec<[Vec<DocRef>; 2]>> {
    let mut old_crds: HashMap<&str, (DocRef, usize)> = HashMap::new();
    for (r, head) in old.documents() {
        if let Some(name) = &head.crd
            && old_crds.insert(name, (r, head.bytes)).is_some()
        {
            return None;
        }
    }
    let mut new_names = HashSet::new();
    let mut batches = Vec::new();
    let mut current: [Vec<DocRef>; 2] = Default::default();
    let mut bytes = 0;
    let mut close = |current: &mut [Vec<DocRef>; 2], bytes: &mut usize, at_least: usize| {
        if *bytes >= at_least && !(current[0].is_empty() && current[1].is_empty()) {
            batches.push(std::mem::take(current));
            *bytes = 0;
        }
    };
    let mut paired = Vec::new();
    for (r, head) in new.documents() {
        if let Some(name) = &head.crd {
            if !new_names.insert(name.as_str()) {
                return None;
            }
            if let Some(&(o, o_bytes)) = old_crds.get(name.as_str()) {
                current[0].push(o);
                paired.push(o);
                bytes += o_bytes;
            }
        }
        current[1].push(r);
        bytes += head.bytes;
        close(&mut current, &mut bytes, batch_bytes);
    }
    if new_names.is_empty() || (needs_old && old_crds.is_empty()) {
        return None;
    }
    close(&mut current, &mut bytes, 0);
    paired.sort_unstable();
    for (r, head) in old.documents() {
        if paired.binary_search(&r).is_err() {
            current[0].push(r);
            bytes += head.bytes;
            close(&mut current, &mut bytes, batch_bytes);
        }
    }
    close(&mut current, &mut bytes, 0);
    Some(batches)
}
