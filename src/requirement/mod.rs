//! Consumers' requirements on CRDs they do not own (`--requirements`,
//! `require`, `requirements`).
//!
//! A requirement pins a snapshot of a CRD as its consumer knows it, the
//! versions they use and, optionally, the fields they read or write. A new
//! CRD is judged against that snapshot with the same catalog as against
//! OLD ([`judge`]), and what does not reach the pinned versions and fields is
//! dropped, so a consumer of three fields is not blocked by changes to the
//! other 400. Two formats are read: our `CRDRequirement`
//! (`crd-safety.io/v1alpha1`) and OpenShift's `CompatibilityRequirement`
//! (`apiextensions.openshift.io/v1alpha1`) as it is ([`read`]).
//!
//! The module sits with the offline runs: it reads files (`manifest`),
//! compares (`compare`), applies levels (`config`) and adds to a
//! [`crate::report::Report`]; the commands call it.

pub mod in_cluster;
mod judge;
mod paths;
mod read;
mod state;
mod write;

use thiserror::Error;

use crate::compare::RequirementRef;
use crate::config::Config;
use crate::crd::Crd;
use crate::manifest::{Location, ManifestError};

pub use judge::{add_findings, judge};
pub use paths::FieldPattern;
pub use read::{load, parse_objects};
pub use state::{RequirementState, State, States, render_states};
pub use write::{Draft, VersionsArg, document, fields_from};

/// Why requirements could not be read.
#[derive(Debug, Error)]
pub enum RequirementError {
    /// A file, a directory or a YAML document.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A requirement that does not say what it must.
    #[error("{location}: {message}")]
    Invalid { location: Location, message: String },
    /// Two requirements with one name.
    #[error("{second}: requirement {name} is defined twice (first at {first})")]
    Duplicate {
        name: String,
        first: Location,
        second: Location,
    },
    /// The sources held no requirement.
    #[error(
        "{input}: no CRDRequirement or CompatibilityRequirement found ({documents} document(s) read)"
    )]
    NoRequirements { input: String, documents: usize },
}

/// Which format a requirement was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `crd-safety.io/v1alpha1` `CRDRequirement`.
    CrdSafety,
    /// `apiextensions.openshift.io/v1alpha1` `CompatibilityRequirement`.
    OpenShift,
}

/// What a broken requirement does: OpenShift's `action`, read the same way
/// by every command so that a requirement means one thing in CI and in the
/// cluster.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
pub enum Action {
    /// Its error findings are errors: they fail the run.
    #[default]
    Deny,
    /// Its findings are at most warnings: reported, never failing.
    Warn,
}

/// The versions a requirement holds, before they are resolved against its
/// pinned CRD.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionSelection {
    /// The pinned CRD's storage version.
    pub storage: bool,
    /// Every version the pinned CRD serves.
    pub served: bool,
    /// Named versions.
    pub named: Vec<String>,
}

/// A field a requirement includes or excludes, in some versions or all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRule {
    /// The field.
    pub path: FieldPattern,
    /// The versions it applies to; empty for all.
    pub versions: Vec<String>,
}

impl FieldRule {
    fn applies_in(&self, version: &str) -> bool {
        self.versions.is_empty() || self.versions.iter().any(|v| v == version)
    }
}

/// One consumer's requirement on one CRD.
#[derive(Debug, Clone)]
pub struct Requirement {
    /// `namespace/name`, or `name`.
    pub name: String,
    /// Who depends on it and how to reach them, as shown in findings.
    pub owner: Option<String>,
    /// Where it was read.
    pub source: Location,
    /// The CRD as the consumer knows it.
    pub crd: Crd,
    /// The versions held.
    pub versions: VersionSelection,
    /// Fields the consumer uses; empty for every field.
    pub fields: Vec<FieldRule>,
    /// Fields the consumer does not care about.
    pub excluded: Vec<FieldRule>,
    /// Per-check levels and options, as in the config file.
    pub config: Config,
    /// Deny or Warn.
    pub action: Action,
    /// The format it was written in.
    pub format: Format,
}

impl Requirement {
    /// The held versions, resolved against the pinned CRD, in its order.
    pub fn held_versions(&self) -> Vec<String> {
        let storage = self.crd.storage_version().name();
        self.crd
            .versions
            .iter()
            .map(|v| v.name())
            .filter(|&name| {
                (self.versions.storage && name == storage)
                    || (self.versions.served && self.crd.version(name).is_some_and(served))
                    || self.versions.named.iter().any(|n| n == name)
            })
            .map(str::to_string)
            .collect()
    }

    /// How its findings name it.
    pub fn reference(&self) -> RequirementRef {
        RequirementRef {
            name: self.name.clone(),
            owner: self.owner.clone(),
            source: self.source.to_string(),
        }
    }
}

fn served(v: &crate::crd::CrdVersion) -> bool {
    v.spec.served
}
