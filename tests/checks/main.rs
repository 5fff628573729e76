//! Every check of the catalog (`Check::ALL`): the unsafe direction is flagged
//! with the right id, severity, version, path and message; the safe direction
//! is not; and the configuration (levels, `ignore`, `failMode`, `mode`,
//! per-check options, exceptions) is honoured.
//!
//! One file per family, as in `src/compare/`; the fixtures and runners they
//! share are in `fixtures.rs`.

#[path = "../support/fixtures.rs"]
mod crds;
mod fixtures;

mod catalog;
mod config;
mod crd_level;
mod cross_version;
mod docs;
mod fields;
mod old_objects;
mod restructured;
mod unserved;
mod v1beta1;
