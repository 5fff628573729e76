//! How fast YAML can be read, on the corpus files `diff` spends its time on.
//!
//! `diff` is mostly YAML parsing (issue 11): this prints, for the new side of
//! the compare benchmark's pairs, the MB/s of
//!
//! - reading the bytes (the floor),
//! - granit-parser's events alone (serde-saphyr's own parser, no values),
//! - serde-saphyr into `serde_json::Value` (what we use),
//! - serde_yaml 0.9 (libyaml, translated to Rust) into `serde_json::Value`,
//! - yaml-rust2 into its own tree,
//! - serde_json on the same documents written as JSON (a bound for building
//!   the values),
//! - our manifest loader (documents parsed in parallel on all cores, and the
//!   CRD model built).
//!
//! Medians of `RUNS` (default 15) runs each, interleaved, in one process:
//! compare the rows of one run, not figures across runs (the machine is
//! shared). Run with `cargo bench --bench yaml`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crd_safety::manifest::{ManifestSet, load_text};
use granit_parser::{Event, Parser};
use serde_json::Value;

#[path = "support/mod.rs"]
mod support;
use support::{PAIRS, corpus_dir};

/// The documents of a stream, split the way the loader splits them.
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") {
            docs.push(String::new());
            continue;
        }
        if let Some(d) = docs.last_mut() {
            d.push_str(line);
            d.push('\n');
        }
    }
    docs.retain(|d| {
        d.lines()
            .any(|l| !l.trim().is_empty() && !l.starts_with('#'))
    });
    docs
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

type Reader<'a> = (&'static str, Box<dyn Fn() -> usize + 'a>);

fn main() {
    // `cargo bench` passes --bench; a filter argument picks files.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    let Some(corpus) = corpus_dir() else {
        eprintln!("notice: corpus not found; set CRD_SAFETY_CORPUS");
        return;
    };
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);

    println!(
        "{:<52} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "file (MB/s)", "MiB", "read", "events", "saphyr", "libyaml", "yamlrs2", "json", "loader"
    );
    for &(_, _, rel) in PAIRS {
        if filter.as_deref().is_some_and(|f| !rel.contains(f)) {
            continue;
        }
        let path = corpus.join(rel);
        let Ok(text) = std::fs::read_to_string(&path) else {
            eprintln!("notice: {rel} missing; skipped");
            continue;
        };
        let docs = documents(&text);
        let json_docs: Vec<String> = docs
            .iter()
            .filter_map(|d| serde_saphyr::from_str::<Value>(d).ok())
            .map(|v| v.to_string())
            .collect();

        let readers: Vec<Reader<'_>> = vec![
            (
                "read",
                Box::new(|| std::fs::read(&path).map_or(0, |b| black_box(b).len())),
            ),
            (
                "events",
                Box::new(|| {
                    let mut n = 0;
                    for d in &docs {
                        for ev in Parser::new_from_str(d) {
                            if let Ok((Event::Scalar(..), _)) = ev {
                                n += 1;
                            }
                        }
                    }
                    n
                }),
            ),
            (
                "saphyr",
                Box::new(|| {
                    docs.iter()
                        .filter_map(|d| serde_saphyr::from_str::<Value>(d).ok())
                        .map(|v| black_box(v).is_object() as usize)
                        .sum()
                }),
            ),
            (
                "libyaml",
                Box::new(|| {
                    docs.iter()
                        .filter_map(|d| serde_yaml::from_str::<Value>(d).ok())
                        .map(|v| black_box(v).is_object() as usize)
                        .sum()
                }),
            ),
            (
                "yamlrs2",
                Box::new(|| {
                    docs.iter()
                        .filter_map(|d| yaml_rust2::YamlLoader::load_from_str(d).ok())
                        .map(|v| black_box(v).len())
                        .sum()
                }),
            ),
            (
                "json",
                Box::new(|| {
                    json_docs
                        .iter()
                        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
                        .map(|v| black_box(v).is_object() as usize)
                        .sum()
                }),
            ),
            (
                "loader",
                Box::new(|| {
                    let mut set = ManifestSet::default();
                    load_text(&text, rel, false, &mut set).unwrap_or(0)
                }),
            ),
        ];

        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); readers.len()];
        for _ in 0..runs {
            for (i, (_, read)) in readers.iter().enumerate() {
                let start = Instant::now();
                black_box(read());
                times[i].push(start.elapsed());
            }
        }
        let mib = text.len() as f64 / (1024.0 * 1024.0);
        let rates: Vec<String> = times
            .into_iter()
            .map(|t| format!("{:>8.1}", mib / median(t).as_secs_f64()))
            .collect();
        let name = rel.rsplit('/').next().unwrap_or(rel);
        println!("{name:<52} {mib:>8.2} {}", rates.join(" "));
    }
}
