//! Reading CRD manifests: files, directories and stdin, git revisions, Helm
//! charts and kustomizations; multi-document YAML, JSON, `List`s, and legacy
//! `apiextensions.k8s.io/v1beta1` CRDs.
//!
//! Every source yields labelled texts ([`Text`]) that go through the same
//! parsing, so a location reads the same way whatever the source
//! (`crds/a.yaml:3`, `git:v1.4.0:crds/a.yaml:3`, `kustomize:overlays/prod:40`).
//!
//! Every source is read within bounds ([`InputLimits`], `input.rs`): walks
//! enter each directory once, and files, streams, archives and git trees
//! stop at a cap, so whatever a pull request commits, a run ends.
//!
//! Every document keeps the file and line it started on, so that any error
//! later can point at it. Documents that are Kubernetes objects of another
//! kind are skipped and counted; anything that is not a Kubernetes object at
//! all is an error, because it usually means the wrong file was passed.

mod block_yaml;
mod chart;
mod error;
mod external;
mod fast_yaml;
mod git;
mod helm_upgrade;
mod input;
mod kustomize;
mod load;
mod normalize;
mod outline;
mod positions;
mod set;
mod shared_text;
mod source;
mod split;
mod yaml11;

use std::fmt;

pub use chart::{ChartError, HelmOptions};
pub use error::ManifestError;
pub use git::{GitError, GitSpec};
pub use helm_upgrade::{HelmUpgrade, HelmUpgradeError, current as helm_upgrade_current};
pub use input::{InputError, InputLimits, LimitError, MAX_DEPTH, read_text};
pub use kustomize::KustomizeError;
pub use load::{
    Inspect, Inspected, Object, load, load_both, load_both_inspecting, load_resources, load_text,
    load_upgrade, load_with, load_with_inspecting, read_objects, read_values,
};
pub use normalize::normalize_to_v1;
pub use outline::{DocRef, Head, Outline, load_documents, outline, plain_files};
pub use positions::{DocumentText, Position};
pub use set::{LoadedCrd, ManifestSet, Resource, Skipped};
pub use shared_text::SharedText;
pub use source::{Origin, Positions, Source, SourceOptions, Text, read_texts};
pub(crate) use split::yaml_error;
pub use yaml11::Reading;

use load::{Job, PARALLEL_PARSE_BYTES};
use source::{collect_files, is_manifest};

/// Where a document came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, or `<stdin>`.
    pub file: String,
    /// The 1-based line the document (or the list item's list) starts on.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0 marks a source without lines, such as the live cluster.
        if self.line == 0 {
            f.write_str(&self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// The shared corpus of real CRDs for unit tests: the integration tests'
/// own finder (`None` when it is missing, a failure with `CI=true`).
#[cfg(test)]
#[path = "../../tests/support/corpus.rs"]
mod shared_corpus;
#[cfg(test)]
pub(crate) use shared_corpus::corpus_dir as test_corpus;

#[cfg(test)]
mod tests {
    use super::load::*;
    use super::source::*;
    use super::*;
    use crate::crd::Crd;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
";

    fn load_str(text: &str) -> Result<ManifestSet, ManifestError> {
        let mut set = ManifestSet::default();
        load_text(text, "crds.yaml", false, &mut set)?;
        Ok(set)
    }

    #[test]
    fn other_kinds_are_skipped_and_counted() {
        let text = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: x}}\n---\n{CRD}");
        let set = load_str(&text).unwrap();
        assert_eq!(set.crds.len(), 1);
        assert_eq!(set.crds[0].location.line, 5);
        assert_eq!(set.skipped.len(), 1);
        assert_eq!(set.skipped[0].kind, "v1 Namespace");
    }

    /// What an inspection returns lines up with the set's CRDs: one per CRD
    /// parsed as a document, none for a CRD read out of a `List` afterwards
    /// or for a document of another kind.
    #[test]
    fn inspections_line_up_with_the_crds_read() {
        let dir = tempfile::tempdir().unwrap();
        let indented: String = CRD.lines().map(|l| format!("  {l}\n")).collect();
        let listed = format!("apiVersion: v1\nkind: List\nitems:\n-\n{indented}")
            .replace("widgets", "gadgets");
        let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";
        std::fs::write(
            dir.path().join("a.yaml"),
            format!("{CRD}---\n{other}---\n{listed}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("b.yaml"), CRD.replace("widgets", "things")).unwrap();
        let names = |crd: &Crd| crd.name.clone();
        let read = load_with_inspecting(
            &[Source::Path(dir.path().to_path_buf())],
            &SourceOptions::default(),
            Some(&names),
        )
        .unwrap();
        let crds: Vec<&str> = read.set.crds.iter().map(|c| c.crd.name.as_str()).collect();
        assert_eq!(
            crds,
            [
                "widgets.example.com",
                "gadgets.example.com",
                "things.example.com"
            ]
        );
        assert_eq!(
            read.results,
            [
                Some("widgets.example.com".to_string()),
                None,
                Some("things.example.com".to_string())
            ]
        );
        assert_eq!(read.set.skipped.len(), 1);
    }

    /// A ConfigMap volume as the kubelet writes it: the files in a dated
    /// hidden directory, `..data` linked to it, each name a link through
    /// `..data`. A CRD cut into parts there reads as its whole file, and a
    /// finding's line is the whole file's.
    #[cfg(unix)]
    #[test]
    fn the_parts_of_a_file_in_a_configmap_volume_are_read_as_the_file() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let dated = dir.path().join("..2026_12_03_11_00_00.123");
        std::fs::create_dir(&dated).unwrap();
        let whole = format!("{CRD}---\n{}", CRD.replace("widgets", "gadgets"));
        let cut = whole.find("---\n").unwrap() + 4;
        let names = [
            ("big.yaml.part-000", &whole[..cut]),
            ("big.yaml.part-001", &whole[cut..]),
            ("small.yaml", &CRD.replace("widgets", "things")[..]),
        ];
        for (name, text) in names {
            std::fs::write(dated.join(name), text).unwrap();
        }
        symlink(dated.file_name().unwrap(), dir.path().join("..data")).unwrap();
        for (name, _) in names {
            symlink(format!("..data/{name}"), dir.path().join(name)).unwrap();
        }
        let set = load(&[Source::Path(dir.path().to_path_buf())]).unwrap();
        let read: Vec<(String, String, usize)> = set
            .crds
            .iter()
            .map(|c| {
                let file = std::path::Path::new(&c.location.file);
                let file = file.file_name().unwrap().to_string_lossy().into_owned();
                (c.crd.name.clone(), file, c.location.line)
            })
            .collect();
        assert_eq!(
            read,
            [
                ("widgets.example.com".to_string(), "big.yaml".to_string(), 1),
                (
                    "gadgets.example.com".to_string(),
                    "big.yaml".to_string(),
                    16
                ),
                (
                    "things.example.com".to_string(),
                    "small.yaml".to_string(),
                    1
                ),
            ]
        );

        // A part gone: the file is not checked cut short.
        std::fs::remove_file(dir.path().join("big.yaml.part-000")).unwrap();
        let err = load(&[Source::Path(dir.path().to_path_buf())]).unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.ends_with("big.yaml: its part 000 is missing (1 parts found)"),
            "{msg}"
        );
        // Named on its own, a part is read as the file it is.
        let one = dir.path().join("big.yaml.part-001");
        let set = load(&[Source::Path(one)]).unwrap();
        assert_eq!(set.crds[0].crd.name, "gadgets.example.com");
    }

    #[test]
    fn a_list_is_unpacked() {
        let indented: String = CRD.lines().map(|l| format!("  {l}\n")).collect();
        let text = format!("apiVersion: v1\nkind: List\nitems:\n-\n{indented}");
        let set = load_str(&text).unwrap();
        assert_eq!(set.crds[0].crd.name, "widgets.example.com");
    }

    #[test]
    fn a_duplicate_name_names_both_places() {
        let text = format!("{CRD}---\n{CRD}");
        let err = load_str(&text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "crds.yaml:16: CRD widgets.example.com is defined twice (first at crds.yaml:1)"
        );
    }

    #[test]
    fn malformed_yaml_names_file_and_line() {
        let text = format!("{CRD}---\nkind: [oops\nspec: 1\n");
        let err = load_str(&text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("crds.yaml:17: invalid YAML"), "{msg}");
    }

    #[test]
    fn a_repeated_key_keeps_the_last_value_as_kubectl_does() {
        let set = load_str(&CRD.replace(
            "  scope: Namespaced\n",
            "  scope: Cluster\n  scope: Namespaced\n",
        ))
        .unwrap();
        assert_eq!(set.crds[0].crd.spec.scope, "Namespaced");
    }

    /// Enough CRDs (each padded with a long description) that the parse
    /// jobs, which also read each CRD into the model, run on all cores.
    fn many_crds(count: usize) -> Vec<String> {
        let pad = "x".repeat(4096);
        (0..count)
            .map(|i| {
                CRD.replace("widgets", &format!("widgets{i}")).replace(
                    "{type: object}",
                    &format!("{{type: object, description: {pad}}}"),
                )
            })
            .collect()
    }

    #[test]
    fn crds_read_in_parallel_keep_their_order_and_lines() {
        let docs = many_crds(64);
        let text = docs.join("---\n");
        assert!(text.len() > PARALLEL_PARSE_BYTES);
        let set = load_str(&text).unwrap();
        let names: Vec<&str> = set.crds.iter().map(|c| c.crd.name.as_str()).collect();
        let want: Vec<String> = (0..64).map(|i| format!("widgets{i}.example.com")).collect();
        assert_eq!(names, want);
        let lines = CRD.lines().count() + 1;
        for (i, c) in set.crds.iter().enumerate() {
            assert_eq!(c.location.line, 1 + i * lines, "{}", c.crd.name);
        }
    }

    #[test]
    fn the_first_bad_document_in_reading_order_is_the_error_reported() {
        // Document 10 is a CRD the model refuses, document 40 is not YAML
        // and the largest, so its job runs first: both fail in parallel
        // jobs, and the error is the one a sequential read would stop at.
        let mut docs = many_crds(64);
        docs[10] = docs[10].replace("  name: widgets10.example.com\n", "  labels: {}\n");
        docs[40] = format!("# {}\nkind: [oops\n", "y".repeat(16384));
        let err = load_str(&docs.join("---\n")).unwrap_err();
        let line = 1 + 10 * (CRD.lines().count() + 1);
        assert_eq!(
            err.to_string(),
            format!("crds.yaml:{line}: CRD has no metadata.name")
        );
    }

    #[test]
    fn a_scalar_document_is_an_error() {
        let err = load_str("just some text\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "crds.yaml:1: not a Kubernetes object (the document is a string)"
        );
    }
}
