//! `serve`: a validating admission webhook for CustomResourceDefinitions,
//! so the CRD changes nobody checked by hand (Argo CD and Flux syncs,
//! `helm upgrade`, operators installing their own CRDs) meet the same
//! engine as `apply-check`.
//!
//! [`request`] reads an AdmissionReview's body once; `admission` holds
//! the one review value made of it (the request, its deadline and
//! configuration, its CRDs read once and shared); [`review`] turns it into
//! the webhook's findings (UPDATE: the old object, with its real
//! `status.storedVersions`, against the new one; CREATE: the new CRD
//! alone; DELETE: a count of the objects that would go with it), the
//! consumers' requirements (`requirements`) add theirs, [`decision`]
//! turns them all into one verdict under the configured mode and the
//! break-glass annotation, and [`server`] is the HTTPS endpoint with its
//! health, metrics and reloads. What judgments may hold in memory at once
//! is bounded by a budget (`budget`).

mod admission;
mod budget;
mod cache;
mod connections;
mod cpu;
pub mod decision;
mod error;
mod log;
mod metrics;
pub mod request;
mod requirement_set;
pub mod review;
pub mod server;
mod stored_models;
mod tls;

pub use budget::{Budget, parse_size};
pub use decision::{
    ACCEPT_ANNOTATION, ACCEPT_GENERATION_ANNOTATION, ACCEPT_REASON_ANNOTATION, DELETION_CHECK,
    Decision, Operation, Verdict,
};
pub use metrics::Metrics;
pub use server::{ServeError, ServeOptions, serve};
pub use tls::{CertError, ReloadingCert};
