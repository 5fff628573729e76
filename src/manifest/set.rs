//! What loading yields: the CRDs found ([`ManifestSet`]), with where each
//! came from, and what was skipped.

use std::sync::Arc;

use serde_json::Value;

use crate::crd::Crd;

use super::*;

/// A CRD and where it was read.
#[derive(Debug, Clone)]
pub struct LoadedCrd {
    /// The CRD.
    pub crd: Arc<Crd>,
    /// Its file and line.
    pub location: Location,
    /// The text it was read from, for positions of nodes inside it; `None`
    /// for CRDs read from the cluster.
    pub text: Option<Arc<DocumentText>>,
    /// The places of its document that kubectl reads otherwise than they
    /// are written (YAML 1.1: `y:` is the key `true`); the CRD itself is
    /// kubectl's reading.
    pub readings: Vec<Reading>,
    /// How it is delivered (a chart's `crds/` or templates, or files).
    pub origin: Origin,
}

/// A document that was not a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `apiVersion/kind` of the document, or `(no kind)`.
    pub kind: String,
    /// Where it was.
    pub location: Location,
}

/// A document that may be a custom resource (its `apiVersion` names a
/// group with a dot, as every CRD's group has): kept so that the objects a
/// repository applies next to its CRDs can be checked against them.
#[derive(Debug, Clone)]
pub struct Resource {
    /// The document.
    pub value: Value,
    /// Where it was.
    pub location: Location,
}

impl Resource {
    /// Whether a document of this `apiVersion` may be a custom resource.
    pub(super) fn may_be_custom(api_version: &str) -> bool {
        api_version
            .split_once('/')
            .is_some_and(|(group, _)| group.contains('.') && group != "apiextensions.k8s.io")
    }
}

/// Everything read from one side of a comparison.
#[derive(Debug, Clone, Default)]
pub struct ManifestSet {
    /// CRDs in reading order (files sorted by path).
    pub crds: Vec<LoadedCrd>,
    /// Documents of another kind.
    pub skipped: Vec<Skipped>,
    /// Of those, the ones that may be custom resources.
    pub resources: Vec<Resource>,
    /// Files read.
    pub files: usize,
    /// What could not be read but did not stop the run (templated CRDs of a
    /// chart without helm); the report shows each.
    pub notices: Vec<String>,
    /// The charts read whole: every CRD they make was read (helm rendered
    /// their templates, or none can make one). A side of such charts that
    /// makes no CRD is a release that deletes the ones it rendered before.
    pub charts: Vec<String>,
}

impl ManifestSet {
    /// The CRD named `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedCrd> {
        self.crds.iter().find(|c| c.crd.name == name)
    }
}
