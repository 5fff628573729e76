//! The process's exit codes, each in one place so that the report, the
//! decisions of `apply` and `migrate`, and the failures
//! ([`crate::command::Failure`]) cannot drift apart. README documents them.

/// Nothing unsafe found; the change was made or there was nothing to do.
pub const SAFE: u8 = 0;
/// Error findings, or a change refused because of them.
pub const FINDINGS: u8 = 1;
/// Usage, configuration or input error (a manifest, a flag, a baseline).
pub const INPUT: u8 = 2;
/// The cluster could not answer, or a change it was asked for failed.
pub const CLUSTER: u8 = 3;
/// The user declined at the question.
pub const DECLINED: u8 = 4;
/// `apply` left part of the bundle applied: a CRD written could not be
/// restored (or restoring it was not safe). Unlike [`CLUSTER`], where every
/// CRD is as it was checked, someone has to look.
pub const PARTIAL: u8 = 5;
/// Stopped by Ctrl-C: 128 + SIGINT, what shells report for a program the
/// signal killed, so scripts see the usual value.
pub const INTERRUPTED: u8 = 130;
