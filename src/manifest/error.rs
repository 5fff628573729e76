//! What can go wrong reading manifests, with the file, line and source it
//! happened at.

use thiserror::Error;

use crate::crd::CrdError;

use super::*;

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
    /// A file, directory or stream could not be read within bounds.
    #[error(transparent)]
    Input(#[from] InputError),
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
    /// A source argument that does not follow its syntax.
    #[error("{input}: expected {expected}")]
    Syntax {
        input: String,
        expected: &'static str,
    },
    /// A `git:` source that could not be read.
    #[error("{input}: {source}")]
    Git {
        input: String,
        #[source]
        source: GitError,
    },
    /// A Helm chart that could not be read or rendered.
    #[error("{input}: {source}")]
    Chart {
        input: String,
        #[source]
        source: ChartError,
    },
    /// helm could not say what an upgrade applies.
    #[error("{input}: {source}")]
    HelmUpgrade {
        input: String,
        #[source]
        source: HelmUpgradeError,
    },
    /// A kustomization that could not be rendered.
    #[error("{input}: {source}")]
    Kustomize {
        input: String,
        #[source]
        source: KustomizeError,
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
    /// An input of objects (`--objects`) held no custom resource.
    #[error(
        "{input}: no custom resource found ({documents} document(s) read; objects name a group with a dot in apiVersion)"
    )]
    NoObjects { input: String, documents: usize },
}
