//! crd-safety: will this CustomResourceDefinition update break the cluster?
//!
//! The library holds everything that does not need a terminal: loading manifests
//! ([`manifest`]), the CRD and structural-schema model ([`crd`], [`schema`]), the
//! check catalog ([`compare`]), configuration ([`config`]) and the report model
//! with its renderers ([`report`]), and the commands that change the cluster
//! ([`change`]: `apply`, `migrate`). Data flows one way: load → normalize →
//! compare → report. The binary (`kubectl-crd_safety`) parses flags, calls into
//! this crate and maps the outcome to an exit code.

pub mod baseline;
pub mod change;
pub mod cluster;
pub mod compare;
pub mod config;
pub mod crd;
pub mod crd_validation;
pub mod diff;
pub mod glob;
pub mod json;
pub mod live;
pub mod locate;
pub mod manifest;
pub mod report;
pub mod scan;
pub mod schema;
pub mod text;
pub mod validate;
