//! The tests against a real kube-apiserver and etcd (see
//! `support/envtest.rs`), one test binary: every module shares the control
//! plane of `control_plane()` (and, for the version matrix, one per minor
//! from `control_plane_of`), started once for the whole binary. Tests that
//! restart a server, register a webhook for every CRD or need other flags
//! start a dedicated one.
//!
//! Tests of different modules run at the same time against the shared
//! server, so each test names its CRDs (`<plural>.example.com`) with a
//! plural no other test of this binary uses, binds RBAC only to a user of
//! its own (`ControlPlane::user_kubeconfig`), never to `restricted`, and
//! looks only at its own objects. docs/CONTRIBUTING.md has the rules.

// The schemas of the differential tests are large `json!` literals.
#![recursion_limit = "512"]

#[path = "../support/mod.rs"]
mod support;

mod apply;
mod chart;
mod ci_output;
mod cluster;
mod completion;
mod conversion_readiness;
mod cost_budget;
mod crd_size;
mod crd_validation;
mod exec;
mod faults;
mod fidelity;
mod gates;
mod graded;
mod helm_delivery;
mod kubeconfig;
mod migrate;
mod owners;
mod requirements;
mod scan;
mod soundness;
mod sources;
mod unserved_stored;
mod webhook;
mod write_outcomes;
mod yaml_reading;
