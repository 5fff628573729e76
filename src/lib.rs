//! crd-safety: will this CustomResourceDefinition update break the cluster?
//!
//! The library holds everything that does not need a terminal: loading manifests
//! ([`manifest`]), the CRD and structural-schema model ([`crd`], [`schema`]), the
//! check catalog ([`compare`]), configuration ([`config`]) and the report model
//! with its renderers ([`report`]), the commands that change the cluster
//! ([`cluster_write`]: `apply`, `migrate`), and one entry per command
//! ([`command`]). Data flows one way: load → normalize →
//! compare → report. The binary (`kubectl-crd_safety`) parses flags, calls
//! [`command`] and maps the outcome to an exit code ([`exit`]).
//!
//! # Layers
//!
//! A module imports from its own layer or the ones listed before it, never
//! from a later one, and no two modules import each other (`tests/offline/layers.rs`
//! reads this list and holds the sources to it):
//!
//! 1. foundations: [`text`], [`json`], [`glob`], [`parallel`], [`duration`], [`exit`], [`re2`], [`kube_version`]
//! 2. model: [`schema`], [`crd`], [`manifest`], [`openapi`]
//! 3. analysis, pure: [`cel`], [`object_validation`], [`compare`], [`crd_validation`], [`config`], [`delivery`]
//! 4. results the commands produce and the report renders: [`outcome`]
//! 5. rendering: [`report`]
//! 6. the comparison engine and runs over its report: [`engine`], [`locate`], [`batches`], [`baseline`], [`requirement`]
//! 7. the API server, the only network code: [`cluster`]
//! 8. work against the cluster: [`scan`], [`live_check`], [`cluster_write`], [`webhook`]
//! 9. commands, one entry each with typed failures: [`command`]
//!
//! The binary sits on top: it parses flags, calls [`command`] and talks to
//! the terminal. Keeping [`cluster`] above the analysis and the
//! report keeps those free of IO; keeping the result types in [`outcome`]
//! lets the report render a scan, an apply or a migration without importing
//! the code that runs them.

pub mod baseline;
pub mod batches;
pub mod cel;
pub mod cluster;
pub mod cluster_write;
pub mod command;
pub mod compare;
pub mod config;
pub mod crd;
pub mod crd_validation;
pub mod delivery;
pub mod duration;
pub mod engine;
pub mod exit;
pub mod glob;
pub mod json;
pub mod kube_version;
pub mod live_check;
pub mod locate;
pub mod manifest;
pub mod object_validation;
pub mod openapi;
pub mod outcome;
pub mod parallel;
pub mod re2;
pub mod report;
pub mod requirement;
pub mod scan;
pub mod schema;
pub mod text;
pub mod webhook;
