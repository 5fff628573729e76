//! CEL as Kubernetes runs it for `x-kubernetes-validations`, in one place.
//!
//! - [`parse`]: reading a rule (a fast parser for the forms CRDs use, the
//!   `cel` crate's parser behind the same entry for the rest), after
//!   [`depth`] has refused what the API server's parser refuses on size
//!   and nesting alone;
//! - [`env`]: the environment per Kubernetes version: declarations from a
//!   node's schema, library signatures and types, the type check and the
//!   API server's cost estimate, used by the offline CRD validation;
//! - [`program`] and [`rule`]: a node's rules compiled once, to the small
//!   program the in-place evaluator runs and, on demand, the `cel` crate's;
//! - [`value`] and [`direct`]: evaluation over objects: a JSON value seen
//!   as CEL sees it under its schema node (through [`value::Typed`]), and
//!   the evaluator that decides most rules in place without building CEL
//!   values;
//! - [`functions`] and [`regex`]: the library functions whose `cel` crate
//!   defaults differ from the API server's (Go's `regexp`, `size()` in code
//!   points), registered once per thread;
//! - [`budget`]: the worst-case runtime cost of all of a schema's rules
//!   over one object, against the server's per-object budget;
//! - [`partial`]: the abstract evaluation the comparison uses to decide
//!   whether a new rule can fail on an object the old schema allows.
//!
//! Who calls it: the CRD validation checks rules with [`env`]; the object
//! validator compiles rules into its schema nodes with [`rule`] and walks
//! an object to run them (`object_validation::rules`); the comparison asks
//! [`partial`].

pub mod budget;
pub mod depth;
pub(crate) mod direct;
pub(crate) mod env;
pub(crate) mod functions;
pub(crate) mod parse;
pub mod partial;
pub(crate) mod program;
pub(crate) mod regex;
pub mod rewrite;
pub(crate) mod rule;
pub(crate) mod value;
