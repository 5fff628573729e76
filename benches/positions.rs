//! What placing findings on lines costs: `kubectl crd-safety diff` before
//! rendering (`full`: read, parse, compare) against the same plus
//! [`locate`], two ways:
//! - `located`: a second, event-only pass over each document with findings,
//!   and a lookup per finding (what a library caller that loads without
//!   `Positions::Recorded` gets);
//! - `recorded`: positions recorded by the first parse (what the CLI does
//!   for `-o json`, `yaml`, `sarif` and `github`), and a lookup per finding.
//!
//! Their ratios to `full` are the price of positions, paid only by the
//! formats that show them.
//!
//! Pairs are the largest of the shared corpus (`../shared/corpus`, or
//! `$CRD_SAFETY_CORPUS`); a missing corpus benchmarks nothing.
//! Run with `cargo bench --bench positions`.

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use crd_safety::config::Config;
use crd_safety::engine::{StoredVersionsArg, diff};
use crd_safety::locate::locate;
use crd_safety::manifest::{self, ManifestSet, Positions, Source, SourceOptions};
use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};

#[path = "support/mod.rs"]
mod support;
use support::{PAIRS, corpus_dir};

/// The pairs timed here: the largest single document, a mid-sized one, and
/// the largest bundle.
const TIMED: &[&str] = &["argocds", "prometheuses", "external-secrets"];

fn load(path: &Path) -> ManifestSet {
    manifest::load(&[Source::Path(path.to_path_buf())])
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn load_recording(path: &Path) -> ManifestSet {
    let opts = SourceOptions {
        positions: Positions::Recorded,
        ..SourceOptions::default()
    };
    manifest::load_with(&[Source::Path(path.to_path_buf())], &opts)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn bench_positions(c: &mut Criterion) {
    let Some(corpus) = corpus_dir() else { return };
    let stored = StoredVersionsArg::default();
    let config = Config::default();
    for &(id, old_rel, new_rel) in PAIRS {
        if !TIMED.iter().any(|t| id.contains(t)) {
            continue;
        }
        let (old_path, new_path) = (corpus.join(old_rel), corpus.join(new_rel));
        if !old_path.exists() || !new_path.exists() {
            eprintln!("notice: {id}: missing from the corpus; skipped");
            continue;
        }
        let mut report = diff(&load(&old_path), &load(&new_path), &stored, &config);
        let findings: usize = report.crds.iter().map(|c| c.findings.len()).sum();
        locate(&mut report, &load(&old_path), &load(&new_path));
        let placed = report
            .crds
            .iter()
            .flat_map(|c| &c.findings)
            .filter(|f| f.location.as_ref().is_some_and(|l| l.column > 1))
            .count();
        eprintln!("{id}: {findings} findings, {placed} placed on their node");
        let mut group = c.benchmark_group(id);
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(5));
        group.bench_function("full", |b| {
            b.iter(|| {
                let (old, new) = (load(black_box(&old_path)), load(black_box(&new_path)));
                diff(&old, &new, &stored, &config)
            })
        });
        group.bench_function("located", |b| {
            b.iter(|| {
                let (old, new) = (load(black_box(&old_path)), load(black_box(&new_path)));
                let mut report = diff(&old, &new, &stored, &config);
                locate(&mut report, &old, &new);
                report
            })
        });
        group.bench_function("recorded", |b| {
            b.iter(|| {
                let old = load_recording(black_box(&old_path));
                let new = load_recording(black_box(&new_path));
                let mut report = diff(&old, &new, &stored, &config);
                locate(&mut report, &old, &new);
                report
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_positions);
criterion_main!(benches);
