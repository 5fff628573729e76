//! What the `invalidCrd` check adds to a `diff`, on every upgrade pair of
//! the shared corpus (`../shared/corpus/pairs.json`, or `$CRD_SAFETY_CORPUS`).
//!
//! Issue 14's goal is a `diff` at most 10% slower with the check on. A
//! criterion group per variant measures them minutes apart on a noisy
//! machine, so here the two variants alternate, pair by pair, round by
//! round: each round reads and compares every pair once with the check and
//! once without (which goes first alternates), as `kubectl crd-safety diff
//! OLD_DIR NEW_DIR` does before rendering, through the same entry
//! (`command::diff::run`). Printed: per round the total wall and CPU time of each
//! variant, then the median ratios; and the same for the largest pairs
//! alone, where the check is the largest share.
//!
//! Last, on one thread over CRDs parsed once: the check alone against the
//! comparison alone.
//!
//! `cargo bench --bench check_cost` (about a minute on 2 cores);
//! `ROUNDS=N` changes the number of rounds (default 5); `CHECK_ONLY=SECS`
//! runs nothing but the check for that long (to profile it), then lists
//! the costliest CRDs; `CHECK_FILTER=TEXT` keeps the CRDs whose file path
//! contains TEXT; with `CHECK_ONLY`, `CHECK_DUMP=FILE` first writes every
//! error the check finds on the corpus to FILE, so that two builds of a
//! change to the check can be shown to agree (`cmp` the files).

use std::path::Path;
use std::time::{Duration, Instant};

use crd_safety::command;
use crd_safety::config::Config;
use crd_safety::manifest::{self, LoadedCrd, Positions, Source, SourceOptions};
use nix::sys::resource::{UsageWho, getrusage};

#[path = "support/mod.rs"]
mod support;
use support::{PAIRS, corpus_dir};

/// CPU time of the whole process (all threads) so far.
fn cpu() -> Duration {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            // `num_microseconds` is i64 everywhere (`tv_usec` is i32 on macOS).
            let t = |tv: nix::sys::time::TimeVal| {
                use nix::sys::time::TimeValLike;
                Duration::from_micros(tv.num_microseconds().unsigned_abs())
            };
            t(u.user_time()) + t(u.system_time())
        }
        Err(_) => Duration::ZERO,
    }
}

/// Runs `f` on a thread of its own. The check caches compiled rules per
/// thread, and patterns for the whole process; a `kubectl crd-safety`
/// process starts with none, so each measured run starts on a fresh thread
/// with the pattern caches emptied, rather than reusing what earlier rounds
/// compiled.
fn fresh<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    crd_safety::re2::forget_patterns();
    std::thread::scope(|s| match s.spawn(f).join() {
        Ok(r) => r,
        Err(p) => std::panic::resume_unwind(p),
    })
}

/// Wall and CPU time of one `diff` of `old` and `new` (read from disk), on a
/// fresh thread.
fn one(old: &Path, new: &Path, config: &Config) -> (Duration, Duration) {
    fresh(|| one_here(old, new, config))
}

fn one_here(old: &Path, new: &Path, config: &Config) -> (Duration, Duration) {
    let request = command::diff::Request {
        old: vec![Source::Path(old.to_path_buf())],
        new: vec![Source::Path(new.to_path_buf())],
        sources: SourceOptions {
            positions: Positions::Never,
            ..SourceOptions::default()
        },
        config: config.clone(),
        ..command::diff::Request::default()
    };
    let (wall, cpu_start) = (Instant::now(), cpu());
    let _ = std::hint::black_box(command::diff::run(&request));
    (wall.elapsed(), cpu() - cpu_start)
}

#[derive(Default, Clone, Copy)]
struct Totals {
    wall: [Duration; 2],
    cpu: [Duration; 2],
}

/// One round over `pairs`: index 0 with the check, 1 without.
fn round(pairs: &[(std::path::PathBuf, std::path::PathBuf)], r: usize) -> Totals {
    let with = Config::default();
    let without = Config {
        skip_crd_validation: true,
        ..Config::default()
    };
    let mut t = Totals::default();
    for (i, (old, new)) in pairs.iter().enumerate() {
        let order = if (i + r).is_multiple_of(2) {
            [0, 1]
        } else {
            [1, 0]
        };
        for v in order {
            let config = if v == 0 { &with } else { &without };
            let (w, c) = one(old, new, config);
            t.wall[v] += w;
            t.cpu[v] += c;
        }
    }
    t
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn report(label: &str, pairs: &[(std::path::PathBuf, std::path::PathBuf)], rounds: usize) {
    println!("{label}: {} pairs, {rounds} rounds", pairs.len());
    println!("  round   wall with / without      cpu with / without");
    let (mut wall, mut cpu) = (Vec::new(), Vec::new());
    // One round first to warm the page cache and the allocator.
    round(pairs, 1);
    for r in 0..rounds {
        let t = round(pairs, r);
        println!(
            "  {r:>5}   {:>9.1} / {:>9.1} ms   {:>9.1} / {:>9.1} ms",
            ms(t.wall[0]),
            ms(t.wall[1]),
            ms(t.cpu[0]),
            ms(t.cpu[1])
        );
        wall.push(ms(t.wall[0]) / ms(t.wall[1]));
        cpu.push(ms(t.cpu[0]) / ms(t.cpu[1]));
    }
    println!(
        "  with the check / without: wall {:.3}x, cpu {:.3}x (medians of the rounds)\n",
        median(wall),
        median(cpu)
    );
}

fn main() {
    // `cargo bench` passes `--bench`; a filter is not supported.
    let Some(dir) = corpus_dir() else { return };
    let rounds = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .filter(|&r| r > 0)
        .unwrap_or(5);
    let text = match std::fs::read_to_string(dir.join("pairs.json")) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("notice: {}: {e}; benchmarking nothing", dir.display());
            return;
        }
    };
    let pairs: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("notice: pairs.json: {e}; benchmarking nothing");
            return;
        }
    };
    let all: Vec<_> = pairs
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["old_dir"].as_str()?, p["new_dir"].as_str()?)))
        .map(|(o, n)| (dir.join(o), dir.join(n)))
        // Pairs that do not load (a duplicate document, ...) measure
        // nothing; the corpus test says which.
        .filter(|(o, n)| {
            let (o, n) = manifest::load_both(
                &[Source::Path(o.clone())],
                &[Source::Path(n.clone())],
                &SourceOptions::default(),
            );
            o.is_ok() && n.is_ok()
        })
        .collect();
    let largest: Vec<_> = PAIRS
        .iter()
        .map(|(_, o, n)| (dir.join(o), dir.join(n)))
        .collect();
    if let Some(secs) = std::env::var("CHECK_ONLY")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        check_only(&all, secs);
        return;
    }
    report("the largest pairs", &largest, rounds * 3);
    report("every corpus pair", &all, rounds);
    one_core(&all);
}

/// `invalidCrd` on every new-side CRD of `sets`, one after the other;
/// `each` gets each CRD with the time its check took.
/// Each pair runs on a fresh thread, as a `diff` of it alone would.
fn check_each(sets: &[Sets], each: &mut (impl FnMut(&LoadedCrd, Duration) + Send)) {
    let kube = Config::default().kube_version;
    for (old, new) in sets {
        fresh(|| {
            for n in &new.crds {
                let o = old.get(&n.crd.name).map(|o| &o.crd.manifest);
                let t = Instant::now();
                std::hint::black_box(crd_safety::crd_validation::validate_crd(
                    &n.crd.manifest,
                    o,
                    kube,
                ));
                each(n, t.elapsed());
            }
        });
    }
}

/// One pair's sides, parsed.
type Sets = (manifest::ManifestSet, manifest::ManifestSet);

/// Each new side's CRDs, and the old side, parsed once.
fn parsed(pairs: &[(std::path::PathBuf, std::path::PathBuf)]) -> Vec<Sets> {
    pairs
        .iter()
        .filter_map(|(o, n)| {
            let (o, n) = manifest::load_both(
                &[Source::Path(o.clone())],
                &[Source::Path(n.clone())],
                &SourceOptions::default(),
            );
            Some((o.ok()?, n.ok()?))
        })
        .collect()
}

/// The check alone against the comparison alone, one CRD after the other
/// on one thread, over every pair: the check's share of the CPU a `diff`
/// spends after parsing.
fn one_core(pairs: &[(std::path::PathBuf, std::path::PathBuf)]) {
    let sets = parsed(pairs);
    let config = Config::default();
    let (mut check, mut compare) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        check_each(&sets, &mut |_, _| {});
        check.push(ms(t.elapsed()));
        let t = Instant::now();
        for (old, new) in &sets {
            fresh(|| {
                for n in &new.crds {
                    if let Some(o) = old.get(&n.crd.name) {
                        let sv = crd_safety::compare::StoredVersions::resolve(&o.crd, None);
                        std::hint::black_box(crd_safety::compare::compare_crds(
                            &o.crd,
                            &n.crd,
                            &sv,
                            &config.options,
                        ));
                    }
                }
            });
        }
        compare.push(ms(t.elapsed()));
    }
    let crds: usize = sets.iter().map(|(_, n)| n.crds.len()).sum();
    println!(
        "one core, {crds} CRDs parsed once: invalidCrd {:.1} ms, comparison {:.1} ms (medians of 5)",
        median(check),
        median(compare)
    );
}

/// Runs the check alone over every pair for `secs` seconds (to profile it).
/// `CHECK_DUMP=FILE`: every error of every new-side CRD, judged as an
/// update of the old side's and as a create, one per line: what a change
/// to the check's code must leave as it was (compare two builds' files).
fn dump(sets: &[Sets], file: &str) {
    let kube = Config::default().kube_version;
    let mut out = String::new();
    for (old, new) in sets {
        for n in &new.crds {
            let o = old.get(&n.crd.name).map(|o| &o.crd.manifest);
            for (how, old) in [("update", o), ("create", None)] {
                for e in crd_safety::crd_validation::validate_crd(&n.crd.manifest, old, kube) {
                    out.push_str(&format!("{} {how}: {}: {}\n", n.location, e.path, e.body()));
                }
            }
        }
    }
    if let Err(e) = std::fs::write(file, out) {
        eprintln!("CHECK_DUMP: cannot write {file}: {e}");
    }
}

fn check_only(pairs: &[(std::path::PathBuf, std::path::PathBuf)], secs: u64) {
    let mut sets = parsed(pairs);
    // `CHECK_FILTER=TEXT`: only the CRDs whose file path contains TEXT.
    if let Ok(filter) = std::env::var("CHECK_FILTER") {
        for (_, new) in &mut sets {
            new.crds
                .retain(|c| c.location.to_string().contains(filter.as_str()));
        }
    }
    if let Ok(file) = std::env::var("CHECK_DUMP") {
        dump(&sets, &file);
    }
    let start = Instant::now();
    let mut rounds = Vec::new();
    while start.elapsed() < Duration::from_secs(secs) {
        let round = Instant::now();
        check_each(&sets, &mut |_, _| {});
        rounds.push(ms(round.elapsed()));
    }
    // The costliest CRDs, from one more round.
    let mut each: Vec<(f64, String)> = Vec::new();
    check_each(&sets, &mut |n, t| {
        each.push((ms(t), n.location.to_string()))
    });
    each.sort_by(|a, b| b.0.total_cmp(&a.0));
    let total: f64 = each.iter().map(|e| e.0).sum();
    for (t, at) in each.iter().take(15) {
        println!("  {t:7.2} ms  {at}");
    }
    let top: f64 = each.iter().take(100).map(|e| e.0).sum();
    println!(
        "  the costliest 100 of {} CRDs: {:.0}% of {total:.0} ms",
        each.len(),
        100.0 * top / total
    );
    let (n, best) = (
        rounds.len(),
        rounds.iter().copied().fold(f64::MAX, f64::min),
    );
    println!(
        "{n} rounds in {secs} s: median {:.1} ms, best {best:.1} ms",
        median(rounds)
    );
}
