//! The tests that need no API server, one test binary: the binary run as a
//! user runs it (commands, output formats, sources of CRDs, CI output), the
//! library's properties, the corpus of real CRDs, and the fault paths that
//! only a loopback fake can produce. Some need git, helm or kubectl on PATH.

#[path = "../support/mod.rs"]
mod support;

mod action;
mod batches;
mod ci_output;
mod cli;
mod corpus;
mod helm_delivery;
mod input_limits;
mod layers;
mod migrate_faults;
mod objects;
mod properties;
mod requirements;
mod scan_paging;
mod sources;
mod validate;
mod yaml_reading;
