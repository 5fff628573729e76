//! The release as it ships, one test binary of its own: the krew manifest,
//! the archive `scripts/release.sh` builds (its first run builds the static
//! release binary, minutes on two cores), and the crates.io package. Kept
//! apart so that `cargo test --test offline` stays quick.

#[path = "../support/mod.rs"]
mod support;

mod krew;
mod release;
