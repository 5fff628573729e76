//! Helpers shared by the integration tests.

pub mod envtest;
pub mod etcd;
pub mod live;
pub mod run;
