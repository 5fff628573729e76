//! What reading CRDs from a git revision costs next to reading the same
//! files from disk, on the largest project of the shared corpus
//! (`../shared/corpus`, or `$CRD_SAFETY_CORPUS`).
//!
//! The project's files are committed to a temporary repository (with the
//! `git` binary: setting up the fixture is not what is measured), then each
//! release directory is read as `DIR` and as `git:HEAD:DIR`, first with
//! loose objects (a fresh commit), then packed (after `git gc`, as a clone
//! is). Two figures per source: `read` (the texts only) and `load` (read and
//! parse into CRDs, what `diff` does before comparing). Medians of 7 rounds,
//! with git as a ratio over disk measured in the same run.
//!
//! Run with `cargo bench --bench sources`. A missing corpus or git prints a
//! notice and measures nothing.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crd_safety::manifest::{self, GitSpec, Source, SourceOptions};

const ROUNDS: usize = 7;

#[path = "support/mod.rs"]
mod support;
use support::corpus;

fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            total += size_of(&path);
        } else if let Ok(m) = entry.metadata() {
            total += m.len();
        }
    }
    total
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(to)?;
    let mut files = 0;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            files += copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
            files += 1;
        }
    }
    Ok(files)
}

fn git(dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "bench")
        .env("GIT_AUTHOR_EMAIL", "bench@example.com")
        .env("GIT_COMMITTER_NAME", "bench")
        .env("GIT_COMMITTER_EMAIL", "bench@example.com")
        .status()
        .is_ok_and(|s| s.success())
}

/// Medians over [`ROUNDS`] rounds of `a` and `b`, run in turn within each
/// round so that both see the same machine load.
fn medians(mut a: impl FnMut(), mut b: impl FnMut()) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed()
    };
    let (mut ta, mut tb): (Vec<Duration>, Vec<Duration>) =
        (0..ROUNDS).map(|_| (time(&mut a), time(&mut b))).unzip();
    ta.sort();
    tb.sort();
    (ta[ROUNDS / 2], tb[ROUNDS / 2])
}

/// Reads (and with `parse`, loads) every release of the project from `make`.
fn read_all(releases: &[String], opts: &SourceOptions, parse: bool, make: &dyn Fn(&str) -> Source) {
    for release in releases {
        let source = make(release);
        if parse {
            let set = manifest::load_with(&[source], opts);
            assert!(set.is_ok(), "{release}: {:?}", set.err());
        } else {
            let (mut notices, mut charts) = (Vec::new(), Vec::new());
            let texts = manifest::read_texts(&source, opts, &mut notices, &mut charts);
            assert!(texts.is_ok_and(|t| !t.is_empty()), "{release}");
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let corpus = corpus();
    let Some((project, bytes)) = std::fs::read_dir(&corpus)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| (e.path(), size_of(&e.path())))
        .max_by_key(|(_, size)| *size)
    else {
        eprintln!(
            "notice: no corpus at {}; nothing measured",
            corpus.display()
        );
        return;
    };
    let name = project
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = tempfile::tempdir().expect("temp dir");
    let repo = tmp.path();
    let files = copy_dir(&project, repo).expect("the project is copied");
    if !(git(repo, &["init", "-q"])
        && git(repo, &["add", "-A"])
        && git(repo, &["commit", "-q", "-m", "corpus"]))
    {
        eprintln!("notice: git is not available to build the fixture; nothing measured");
        return;
    }
    let mut releases: Vec<String> = std::fs::read_dir(repo)
        .expect("repo")
        .flatten()
        .filter(|e| e.path().is_dir() && e.file_name() != ".git")
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    releases.sort();
    let opts = SourceOptions {
        repo: Some(repo.to_path_buf()),
        ..SourceOptions::default()
    };
    let disk = |r: &str| Source::Path(repo.join(r));
    let at_head = |r: &str| {
        Source::Git(GitSpec {
            rev: "HEAD".into(),
            path: r.into(),
        })
    };
    println!(
        "{name}: {} releases, {files} files, {:.1} MB; medians of {ROUNDS} rounds",
        releases.len(),
        bytes as f64 / 1e6
    );
    let kinds = [("read (texts only)", false), ("load (read + parse)", true)];
    let mut lines: Vec<String> = kinds
        .iter()
        .map(|&(label, parse)| {
            let (d, g) = medians(
                || read_all(&releases, &opts, parse, &disk),
                || read_all(&releases, &opts, parse, &at_head),
            );
            format!(
                "{label:<20} loose objects: disk {:>9}, git {:>9} ({:.2}x)",
                ms(d),
                ms(g),
                ratio(g, d)
            )
        })
        .collect();
    if git(repo, &["gc", "-q"]) {
        for (line, &(_, parse)) in lines.iter_mut().zip(&kinds) {
            let (d, g) = medians(
                || read_all(&releases, &opts, parse, &disk),
                || read_all(&releases, &opts, parse, &at_head),
            );
            line.push_str(&format!(
                "   packed: disk {:>9}, git {:>9} ({:.2}x)",
                ms(d),
                ms(g),
                ratio(g, d)
            ));
        }
    }
    for line in lines {
        println!("{line}");
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}
