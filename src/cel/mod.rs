//! CEL as Kubernetes runs it for `x-kubernetes-validations`, in one place.
//!
//! - [`parse`]: reading a rule (a fast parser for the forms CRDs use, the
//!   `cel` crate's parser behind the same entry for the rest);
//! - [`env`]: the environment per Kubernetes version: declarations from a
//!   node's schema, library signatures and types, the type check and the
//!   API server's cost estimate, used by the offline CRD validation;
//! - [`program`] and [`rule`]: a node's rules compiled once, to the small
//!   program the in-place evaluator runs and, on demand, the `cel` crate's;
//! - [`functions`] and [`regex`]: the library functions whose `cel` crate
//!   defaults differ from the API server's (Go's `regexp`, `size()` in code
//!   points), registered once per thread;
//! - [`partial`]: the abstract evaluation the comparison uses to decide
//!   whether a new rule can fail on an object the old schema allows.
//!
//! The object validator binds objects to rules: it walks an object with its
//! compiled schema, converts each node's value as the API server's CEL does,
//! and runs the programs here (`validate::cel`, `validate::cel_direct`).
//! That binding reads the validator's compiled nodes, which hold the rules
//! compiled here, so it stays with them and the dependency runs one way.

pub(crate) mod env;
pub(crate) mod functions;
pub(crate) mod parse;
pub mod partial;
pub(crate) mod program;
pub(crate) mod regex;
pub(crate) mod rule;
