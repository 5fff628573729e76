//! The environment rules are checked in, per Kubernetes version: the
//! variables a node's schema declares ([`decl`]), the library's function
//! signatures ([`sigs`]), the types ([`ty`], [`types`]), the type check
//! ([`check`]) and the API server's cost estimate ([`cost`]).

pub(crate) mod check;
pub(crate) mod cost;
pub(crate) mod decl;
pub(crate) mod sigs;
pub(crate) mod ty;
pub(crate) mod types;
