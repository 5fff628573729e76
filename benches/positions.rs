//! What placing findings on lines costs: `kubectl crd-safety diff` before
//! rendering (`full`: read, parse, compare) against the same plus
//! [`locate`] (`located`: the second, event-only pass over each document
//! with findings, and a lookup per finding). Their ratio is the price of
//! positions; it is paid by every run, whatever the output format.
//!
//! Pairs are the largest of the shared corpus (`../shared/corpus`, or
//! `$CRD_SAFETY_CORPUS`); a missing corpus benchmarks nothing.
//! Run with `cargo bench --bench positions`.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crd_safety::config::Config;
use crd_safety::diff::{StoredVersionsArg, diff};
use crd_safety::locate::locate;
use crd_safety::manifest::{self, ManifestSet, Source};
use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};

/// (benchmark id, old, new), relative to the corpus.
const PAIRS: &[(&str, &str, &str)] = &[
    (
        "argocd-operator_argocds_0.13.0-0.18.0",
        "argocd-operator/0.13.0/argoproj.io_argocds.yaml",
        "argocd-operator/0.18.0/argoproj.io_argocds.yaml",
    ),
    (
        "prometheus-operator_prometheuses_v0.16.0-v0.18.0",
        "prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0/0prometheusCustomResourceDefinition.yaml",
        "prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0/0prometheusCustomResourceDefinition.yaml",
    ),
    (
        "external-secrets_bundle_v2.0.0-v2.9.0",
        "external-secrets/v2.0.0/bundle.yaml",
        "external-secrets/v2.9.0/bundle.yaml",
    ),
];

fn corpus_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("CRD_SAFETY_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"),
    };
    if dir.join("MANIFEST.md").exists() {
        return Some(dir);
    }
    eprintln!(
        "notice: corpus not found at {}; benchmarking nothing",
        dir.display()
    );
    None
}

fn load(path: &Path) -> ManifestSet {
    manifest::load(&[Source::Path(path.to_path_buf())])
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn bench_positions(c: &mut Criterion) {
    let Some(corpus) = corpus_dir() else { return };
    let stored = StoredVersionsArg::default();
    let config = Config::default();
    for &(id, old_rel, new_rel) in PAIRS {
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
        group.finish();
    }
}

criterion_group!(benches, bench_positions);
criterion_main!(benches);
