//! A `diff` of large directories runs batch by batch (`crd_safety::batches`)
//! and must give exactly the report of reading both sides whole: same CRDs
//! in the same order, same findings, same lines, same skipped documents.
//! Where the batched path is unsure it must give up (`None`), so the whole
//! read reports errors as it always did.

use crate::support;

use std::path::Path;

use crd_safety::batches::{self, Limits};
use crd_safety::config::Config;
use crd_safety::engine::{StoredVersionsArg, diff};
use crd_safety::locate::locate;
use crd_safety::manifest::{self, Positions, Source, SourceOptions};
use serde_json::Value;
use support::corpus::corpus_dir;
use support::runs::assert_has;

/// The report of the whole read, as `-o json` shows it.
fn whole(old: &Path, new: &Path) -> Value {
    let opts = SourceOptions {
        positions: Positions::Recorded,
        ..SourceOptions::default()
    };
    let (o, n) = manifest::load_both(
        &[Source::Path(old.into())],
        &[Source::Path(new.into())],
        &opts,
    );
    let (o, n) = (o.expect("old side reads"), n.expect("new side reads"));
    let mut report = diff(&o, &n, &StoredVersionsArg::default(), &Config::default());
    locate(&mut report, &o, &n);
    serde_json::to_value(&report).expect("a report serializes")
}

/// `batches::diff` of one source a side, with the defaults of a plain
/// `diff`.
fn run(old: Source, new: Source, limits: Limits) -> Option<crd_safety::report::Report> {
    batches::diff(
        &[old],
        &[new],
        &SourceOptions {
            positions: Positions::Recorded,
            ..SourceOptions::default()
        },
        &StoredVersionsArg::default(),
        &Config::default(),
        limits,
    )
}

/// The batched report as `-o json` shows it, or `None` where the batched
/// path gave up (any size of input is batched).
fn batched(old: &Path, new: &Path, batch_bytes: usize) -> Option<Value> {
    let limits = Limits {
        min_total: 0,
        batch_bytes,
    };
    let report = run(Source::Path(old.into()), Source::Path(new.into()), limits)?;
    Some(serde_json::to_value(&report).expect("a report serializes"))
}

#[test]
fn every_corpus_pair_gets_the_report_of_the_whole_read() {
    let Some(corpus) = corpus_dir() else { return };
    let pairs: Value = serde_json::from_str(
        &std::fs::read_to_string(corpus.join("pairs.json")).expect("pairs.json reads"),
    )
    .expect("pairs.json parses");
    let mut batched_pairs = 0;
    let mut fell_back = Vec::new();
    for (i, pair) in pairs
        .as_array()
        .expect("a list of pairs")
        .iter()
        .enumerate()
    {
        let old = corpus.join(pair["old_dir"].as_str().expect("old_dir"));
        let new = corpus.join(pair["new_dir"].as_str().expect("new_dir"));
        // One document per batch on some pairs, a few per batch on the others:
        // both ways of cutting must give the same report.
        let batch_bytes = if i % 3 == 0 { 1 } else { 256 * 1024 };
        match batched(&old, &new, batch_bytes) {
            Some(report) => {
                batched_pairs += 1;
                assert!(
                    report == whole(&old, &new),
                    "{} -> {}: the batched report differs from the whole read's",
                    old.display(),
                    new.display()
                );
            }
            None => fell_back.push(format!("{}", new.display())),
        }
    }
    // Plain directories of block YAML are the corpus' usual shape: the
    // outline reads nearly all of them.
    assert!(
        batched_pairs >= 160,
        "only {batched_pairs} pairs batched; gave up on {fell_back:?}"
    );
}

#[test]
fn the_large_directories_of_the_benchmark_are_batched() {
    let Some(corpus) = corpus_dir() else { return };
    for (old, new) in [
        (
            "prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0",
            "prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0",
        ),
        ("eck-full-bases/v3.0.0", "eck-full-bases/v3.5.0"),
        // One file of fifteen CRDs on each side.
        ("istio/1.28.0", "istio/1.30.0"),
    ] {
        let (old, new) = (corpus.join(old), corpus.join(new));
        let report = run(
            Source::Path(old.clone()),
            Source::Path(new.clone()),
            batches::LIMITS,
        );
        let report = report.expect("these directories are above the limit and outline plainly");
        assert_eq!(
            serde_json::to_value(&report).expect("serializes"),
            whole(&old, &new),
            "{}",
            new.display()
        );
    }
}

/// `<name>s.example.com` whose `spec.size` is at most `max`.
fn crd(name: &str, max: u32) -> String {
    support::fixtures::crd_yaml(
        &format!("{name}s"),
        &[format!("size: {{type: integer, maximum: {max}}}")],
    )
}

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).expect("a fixture writes");
}

/// Two releases where CRDs move between files, one is dropped, one is new,
/// documents of other kinds sit between them, and one file has CRLF lines.
fn releases() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("a temp dir");
    let (old, new) = (root.path().join("old"), root.path().join("new"));
    std::fs::create_dir_all(old.join("sub")).expect("mkdir");
    std::fs::create_dir_all(&new).expect("mkdir");
    write(
        &old,
        "all.yaml",
        &format!(
            "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n---\n{}",
            crd("apple", 10),
            crd("pear", 10)
        ),
    );
    write(&old.join("sub"), "gone.yaml", &crd("gone", 1));
    write(
        &old,
        "note.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n",
    );
    write(&new, "a-pear.yaml", &crd("pear", 5));
    write(
        &new,
        "b-apple.yaml",
        &format!("# moved\n---\n{}", crd("apple", 20)).replace('\n', "\r\n"),
    );
    write(
        &new,
        "c-fresh.yaml",
        &format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n---\n{}",
            crd("fresh", 3)
        ),
    );
    root
}

#[test]
fn crds_moved_between_files_dropped_or_new_are_reported_as_by_the_whole_read() {
    let root = releases();
    let (old, new) = (root.path().join("old"), root.path().join("new"));
    let whole = whole(&old, &new);
    for batch_bytes in [1, 700, 1 << 20] {
        let report = batched(&old, &new, batch_bytes).expect("plain YAML is batched");
        assert_eq!(report, whole, "batches of {batch_bytes} bytes");
    }
    // What the user sees: the tightened maximum, the dropped CRD, the new
    // one, the three documents of other kinds.
    let names: Vec<&str> = whole["crds"]
        .as_array()
        .expect("crds")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "pears.example.com",
            "apples.example.com",
            "freshs.example.com",
            "gones.example.com"
        ]
    );
    assert_eq!(whole["skippedDocuments"].as_array().map(Vec::len), Some(3));
}

#[test]
fn what_the_outline_is_not_sure_of_is_left_to_the_whole_read() {
    let cases: [(&str, String); 5] = [
        (
            "malformed YAML",
            format!("{}---\nkind: [oops\n", crd("pear", 1)),
        ),
        (
            "a CRD named twice",
            format!("{}---\n{}", crd("pear", 1), crd("pear", 2)),
        ),
        (
            "flow-style metadata",
            crd("pear", 1).replace(
                "metadata:\n  name: pears.example.com",
                "metadata: {name: pears.example.com}",
            ),
        ),
        (
            "a List",
            "apiVersion: v1\nkind: List\nitems: []\n".to_string(),
        ),
        (
            "a name the parse reads otherwise",
            // The second `name` key wins in the parse (as kubectl reads it);
            // the outline gives up on a repeated key.
            crd("pear", 1).replace(
                "  name: pears.example.com",
                "  name: pears.example.com\n  name: other.example.com",
            ),
        ),
    ];
    for (what, text) in cases {
        let root = releases();
        let (old, new) = (root.path().join("old"), root.path().join("new"));
        write(&new, "z.yaml", &text);
        assert_eq!(batched(&old, &new, 1), None, "{what}");
    }
}

#[test]
fn two_files_are_one_pair_and_read_whole() {
    let Some(corpus) = corpus_dir() else { return };
    let file = "0prometheusCustomResourceDefinition.yaml";
    let old = corpus
        .join("prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0")
        .join(file);
    let new = corpus
        .join("prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0")
        .join(file);
    // 1.6 MB together, above the limit, but a single pair has nothing to
    // schedule.
    let report = run(Source::Path(old), Source::Path(new), batches::LIMITS);
    assert!(report.is_none());
}

#[test]
fn small_inputs_and_other_sources_are_read_whole() {
    let root = releases();
    let (old, new) = (root.path().join("old"), root.path().join("new"));
    assert!(
        run(
            Source::Path(old),
            Source::Path(new.clone()),
            batches::LIMITS
        )
        .is_none()
    );
    let everything = Limits {
        min_total: 0,
        batch_bytes: 1,
    };
    assert!(run(Source::Stdin, Source::Path(new), everything).is_none());
}

/// From the outside: a large directory with a document that does not
/// parse gets the whole read's one-line error and exit 2, and a healthy
/// one the same report as the library's whole read.
#[test]
fn the_binary_batches_large_directories_and_keeps_its_errors() {
    let Some(corpus) = corpus_dir() else { return };
    let old = corpus.join("prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0");
    let new = corpus.join("prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0");
    let r = support::run::run(
        &[
            "diff",
            &old.display().to_string(),
            &new.display().to_string(),
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    let shown = r.json();
    let expected = whole(&old, &new);
    assert_eq!(shown["crds"], expected["crds"]);
    assert_eq!(shown["skippedDocuments"], expected["skippedDocuments"]);

    let copy = tempfile::tempdir().expect("a temp dir");
    for entry in std::fs::read_dir(&new).expect("the corpus directory lists") {
        let path = entry.expect("an entry").path();
        let name = path.file_name().expect("a file name");
        std::fs::copy(&path, copy.path().join(name)).expect("a copy");
    }
    write(
        copy.path(),
        "zz.yaml",
        &format!("{}---\nkind: [oops\n", crd("pear", 1)),
    );
    let r = support::run::run(
        &[
            "diff",
            &old.display().to_string(),
            &copy.path().display().to_string(),
        ],
        None,
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty());
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert_has(&r.stderr, "zz.yaml:22: invalid YAML");
}

/// `lint` of a large directory (no old side) is batched too, with the
/// report of the whole read.
#[test]
fn lint_of_large_directories_gets_the_report_of_the_whole_read() {
    let Some(corpus) = corpus_dir() else { return };
    for dir in [
        "prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0",
        "eck-full-bases/v3.5.0",
    ] {
        let dir = corpus.join(dir);
        let opts = SourceOptions {
            positions: Positions::Recorded,
            ..SourceOptions::default()
        };
        let batched = batches::lint(
            &[Source::Path(dir.clone())],
            &opts,
            &Config::default(),
            batches::LIMITS,
        )
        .expect("a large directory of plain YAML is batched");
        let new = manifest::load_with(&[Source::Path(dir.clone())], &opts).expect("reads");
        let none = manifest::ManifestSet::default();
        let mut whole = diff(
            &none,
            &new,
            &StoredVersionsArg::default(),
            &Config::default(),
        );
        locate(&mut whole, &none, &new);
        assert_eq!(
            serde_json::to_value(&batched).expect("serializes"),
            serde_json::to_value(&whole).expect("serializes"),
            "{}",
            dir.display()
        );
    }
}
