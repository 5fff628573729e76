//! Helpers shared by the integration tests.

pub mod charts;
pub mod contract;
pub mod corpus;
pub mod envtest;
pub mod etcd;
pub mod faults;
pub mod fixtures;
pub mod helm;
pub mod kubectl_yaml;
pub mod live;
pub mod memory;
pub mod run;
pub mod runs;
pub mod soundness_gen;
pub mod sources;
// Signals the server with nix: Unix only, like the control plane.
#[cfg(unix)]
pub mod webhook;
