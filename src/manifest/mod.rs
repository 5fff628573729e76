//! Reading CRD manifests: files, directories and stdin, multi-document YAML,
//! JSON, `List`s, and legacy `apiextensions.k8s.io/v1beta1` CRDs.
//!
//! Every document keeps the file and line it started on, so that any error
//! later can point at it. Documents that are Kubernetes objects of another
//! kind are skipped and counted; anything that is not a Kubernetes object at
//! all is an error, because it usually means the wrong file was passed.

mod normalize;
mod positions;
mod split;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use thiserror::Error;

use crate::crd::{Crd, CrdError};

pub use normalize::normalize_to_v1;
pub use positions::{DocumentText, Position};
pub(crate) use split::yaml_error;

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

/// An input as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file or a directory (read recursively).
    Path(PathBuf),
    /// `-`: standard input.
    Stdin,
}

impl Source {
    /// `-` means stdin, anything else a path.
    pub fn parse(arg: &str) -> Source {
        if arg == "-" {
            Source::Stdin
        } else {
            Source::Path(PathBuf::from(arg))
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Path(p) => write!(f, "{}", p.display()),
            Source::Stdin => f.write_str("<stdin>"),
        }
    }
}

/// Why manifests could not be read.
#[derive(Debug, Error)]
pub enum ManifestError {
    /// A file or directory could not be read.
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// YAML that does not parse.
    #[error("{location}: invalid YAML: {message}")]
    Yaml { location: Location, message: String },
    /// JSON that does not parse.
    #[error("{location}: invalid JSON: {message}")]
    Json { location: Location, message: String },
    /// A document that is not a Kubernetes object (a scalar or a list).
    #[error("{location}: not a Kubernetes object (the document is {found})")]
    NotAnObject {
        location: Location,
        found: &'static str,
    },
    /// A CRD document that is not a valid CRD.
    #[error("{location}: {source}")]
    Crd {
        location: Location,
        #[source]
        source: CrdError,
    },
    /// Two CRDs with one name on the same side.
    #[error("{second}: CRD {name} is defined twice (first at {first})")]
    Duplicate {
        name: String,
        first: Location,
        second: Location,
    },
    /// The input held no CRD at all.
    #[error(
        "{input}: no CustomResourceDefinition found ({documents} document(s) read, {skipped} of another kind)"
    )]
    NoCrds {
        input: String,
        documents: usize,
        skipped: usize,
    },
}

/// A CRD and where it was read.
#[derive(Debug, Clone)]
pub struct LoadedCrd {
    /// The CRD.
    pub crd: Crd,
    /// Its file and line.
    pub location: Location,
    /// The text it was read from, for positions of nodes inside it; `None`
    /// for CRDs read from the cluster.
    pub text: Option<Arc<DocumentText>>,
}

/// A document that was not a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `apiVersion/kind` of the document, or `(no kind)`.
    pub kind: String,
    /// Where it was.
    pub location: Location,
}

/// Everything read from one side of a comparison.
#[derive(Debug, Clone, Default)]
pub struct ManifestSet {
    /// CRDs in reading order (files sorted by path).
    pub crds: Vec<LoadedCrd>,
    /// Documents of another kind.
    pub skipped: Vec<Skipped>,
    /// Files read.
    pub files: usize,
}

impl ManifestSet {
    /// The CRD named `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedCrd> {
        self.crds.iter().find(|c| c.crd.name == name)
    }
}

/// Reads every source into one set. An empty result is an error: a
/// comparison against nothing would pass silently.
pub fn load(sources: &[Source]) -> Result<ManifestSet, ManifestError> {
    let mut set = ManifestSet::default();
    let mut documents = 0usize;
    for source in sources {
        match source {
            Source::Stdin => {
                let mut text = String::new();
                std::io::stdin()
                    .read_to_string(&mut text)
                    .map_err(|source| ManifestError::Read {
                        path: "<stdin>".into(),
                        source,
                    })?;
                documents += load_text(&text, "<stdin>", false, &mut set)?;
                set.files += 1;
            }
            Source::Path(path) => {
                for file in collect_files(path)? {
                    let text =
                        std::fs::read_to_string(&file).map_err(|source| ManifestError::Read {
                            path: file.display().to_string(),
                            source,
                        })?;
                    let is_json = file.extension().is_some_and(|e| e == "json");
                    documents += load_text(&text, &file.display().to_string(), is_json, &mut set)?;
                    set.files += 1;
                }
            }
        }
    }
    if set.crds.is_empty() {
        let names: Vec<String> = sources.iter().map(ToString::to_string).collect();
        return Err(ManifestError::NoCrds {
            input: names.join(", "),
            documents,
            skipped: set.skipped.len(),
        });
    }
    Ok(set)
}

/// Reads manifests from text already in memory (used by `load`, tests and
/// benchmarks). Returns the number of documents read.
pub fn load_text(
    text: &str,
    file: &str,
    is_json: bool,
    set: &mut ManifestSet,
) -> Result<usize, ManifestError> {
    let docs = if is_json {
        let (value, location) = parse_json(text, file)?;
        vec![(value, location, DocumentText::new(Arc::from(text), 1))]
    } else {
        split::documents(text, file)?
    };
    let count = docs.len();
    for (value, location, text) in docs {
        add_object(value, location, Some(Arc::new(text)), set)?;
    }
    Ok(count)
}

fn parse_json(text: &str, file: &str) -> Result<(Value, Location), ManifestError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ManifestError::Json {
        location: Location {
            file: file.to_string(),
            line: e.line(),
        },
        message: strip_position(&e.to_string()),
    })?;
    Ok((
        value,
        Location {
            file: file.to_string(),
            line: 1,
        },
    ))
}

/// serde_json appends "at line N column M"; the location already says it.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// An empty document reads as `empty`, not `null`.
fn kind_of(v: &Value) -> &'static str {
    if v.is_null() {
        "empty"
    } else {
        crate::text::value_kind(v)
    }
}

fn add_object(
    value: Value,
    location: Location,
    text: Option<Arc<DocumentText>>,
    set: &mut ManifestSet,
) -> Result<(), ManifestError> {
    let Value::Object(map) = &value else {
        return Err(ManifestError::NotAnObject {
            location,
            found: kind_of(&value),
        });
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    // `kubectl get crd -o yaml` prints a `List`; a CustomResourceDefinitionList
    // is the typed form of the same thing.
    if kind.ends_with("List")
        && let Some(items) = map.get("items").and_then(Value::as_array)
    {
        for (i, item) in items.clone().into_iter().enumerate() {
            let nested = text
                .as_ref()
                .map(|t| Arc::new(t.nested(&["items", &i.to_string()])));
            add_object(item, location.clone(), nested, set)?;
        }
        return Ok(());
    }
    let is_crd = kind == "CustomResourceDefinition"
        && matches!(
            api_version,
            "apiextensions.k8s.io/v1" | "apiextensions.k8s.io/v1beta1"
        );
    if !is_crd {
        let kind = if kind.is_empty() {
            "(no kind)".to_string()
        } else {
            format!("{api_version} {kind}").trim().to_string()
        };
        set.skipped.push(Skipped { kind, location });
        return Ok(());
    }
    let crd = Crd::from_manifest(normalize_to_v1(value)).map_err(|source| ManifestError::Crd {
        location: location.clone(),
        source,
    })?;
    if let Some(first) = set.get(&crd.name) {
        return Err(ManifestError::Duplicate {
            name: crd.name.clone(),
            first: first.location.clone(),
            second: location,
        });
    }
    set.crds.push(LoadedCrd {
        crd,
        location,
        text,
    });
    Ok(())
}

fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// The manifest files under `path`, sorted, so the order of output never
/// depends on the file system.
fn collect_files(path: &Path) -> Result<Vec<PathBuf>, ManifestError> {
    let meta = std::fs::metadata(path).map_err(|source| ManifestError::Read {
        path: path.display().to_string(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    walk(path, 0, &mut out)?;
    out.sort();
    Ok(out)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<(), ManifestError> {
    // Symlinked directories are followed; the depth bound stops loops.
    if depth > 32 {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|source| ManifestError::Read {
        path: dir.display().to_string(),
        source,
    })?;
    for entry in entries {
        let entry = entry.map_err(|source| ManifestError::Read {
            path: dir.display().to_string(),
            source,
        })?;
        let path = entry.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        let is_dir = std::fs::metadata(&path)
            .map(|m| m.is_dir())
            .unwrap_or(false);
        if is_dir {
            walk(&path, depth + 1, out)?;
        } else if is_manifest(&path) {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_scalar_document_is_an_error() {
        let err = load_str("just some text\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "crds.yaml:1: not a Kubernetes object (the document is a string)"
        );
    }
}
