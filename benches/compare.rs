//! Benchmarks crd-safety on the largest CRD upgrade pairs of the shared
//! corpus (`../shared/corpus`, or `$CRD_SAFETY_CORPUS`; see its MANIFEST.md,
//! "Largest files").
//!
//! Per pair, two measurements:
//! - `full`: what `kubectl crd-safety diff OLD NEW` does before rendering,
//!   through the same entry (`command::diff::run`): read both files from
//!   disk, parse them, judge the new CRDs and compare;
//! - `compare`: `diff::diff` alone, on sets parsed once up front;
//! - `full-without-invalidCrd`: `full` with the offline API-server
//!   validation left out: `full` over it is what the check adds to a `diff`
//!   (where the CRDs of a bundle are checked on all cores);
//! - `invalidCrd`: that validation of the new side alone, one CRD after the
//!   other (part of `compare`), its cost on one core, caches cold.
//!
//! A missing corpus prints a notice and benchmarks nothing.
//!
//! Run with `cargo bench --bench compare` (a few minutes on 2 cores); pass a
//! filter to pick pairs, e.g. `cargo bench --bench compare -- argocds`.
//! The end-to-end comparison with crdify is `scripts/bench-crdify.sh`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use crd_safety::command;
use crd_safety::config::Config;
use crd_safety::crd_validation;
use crd_safety::engine::{StoredVersionsArg, diff};
use crd_safety::manifest::{self, ManifestSet, Positions, Source, SourceOptions};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

#[path = "support/mod.rs"]
mod support;
use support::{PAIRS, corpus_dir};

fn load(path: &Path) -> ManifestSet {
    manifest::load(&[Source::Path(path.to_path_buf())])
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn bench_pairs(c: &mut Criterion) {
    let Some(corpus) = corpus_dir() else {
        return;
    };
    let stored = StoredVersionsArg::default();
    let config = Config::default();

    for &(id, old_rel, new_rel) in PAIRS {
        let old_path = corpus.join(old_rel);
        let new_path = corpus.join(new_rel);
        let (Ok(old_meta), Ok(new_meta)) = (old_path.metadata(), new_path.metadata()) else {
            eprintln!("notice: {id}: {old_rel} or {new_rel} missing from the corpus; skipped");
            continue;
        };

        // Parsed once for the compare-only measurement; this also fails
        // loudly, before any timing, if a file no longer loads.
        let old = load(&old_path);
        let new = load(&new_path);
        let report = diff(&old, &new, &stored, &config);
        eprintln!(
            "{id}: {} + {} bytes, {} -> {} CRDs, {} CRD reports",
            old_meta.len(),
            new_meta.len(),
            old.crds.len(),
            new.crds.len(),
            report.crds.len()
        );

        let mut group = c.benchmark_group(id);
        // Each iteration takes milliseconds: flat sampling keeps the run
        // short, and a handful of samples is enough for a median.
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5))
            .throughput(Throughput::Bytes(old_meta.len() + new_meta.len()));

        let request = |config: &Config| command::diff::Request {
            old: vec![Source::Path(old_path.clone())],
            new: vec![Source::Path(new_path.clone())],
            sources: SourceOptions {
                positions: Positions::Never,
                ..SourceOptions::default()
            },
            config: config.clone(),
            ..command::diff::Request::default()
        };
        let full = request(&config);
        group.bench_function("full", |b| {
            b.iter(|| command::diff::run(black_box(&full)).map(|d| d.report))
        });
        group.bench_function("compare", |b| {
            b.iter(|| diff(black_box(&old), black_box(&new), &stored, &config))
        });
        let without = Config {
            skip_crd_validation: true,
            ..config.clone()
        };
        let full_without = request(&without);
        group.bench_function("full-without-invalidCrd", |b| {
            b.iter(|| command::diff::run(black_box(&full_without)).map(|d| d.report))
        });
        // Each iteration on a thread of its own, as `diff` checks CRDs on
        // fresh worker threads: the check's per-thread caches (parsed rules,
        // pattern verdicts) start empty every time.
        group.bench_function("invalidCrd", |b| {
            b.iter(|| {
                std::thread::scope(|s| {
                    s.spawn(|| {
                        for n in &new.crds {
                            let o = old.get(&n.crd.name).map(|o| &o.crd.manifest);
                            black_box(crd_validation::validate_crd(
                                black_box(&n.crd.manifest),
                                o,
                                config.kube_version,
                            ));
                        }
                    });
                })
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_pairs);
criterion_main!(benches);
