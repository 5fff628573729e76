//! How the CRDs will reach the cluster, and what that delivery does to them:
//! the manifests as kubectl reads them ([`reading`]), what `helm upgrade`
//! and `helm uninstall` do with a chart's CRDs ([`helm`]), whether the
//! CRD fits client-side apply, the API server and etcd ([`size`]), and who
//! else manages a live CRD ([`owners`]). Pure: it reads what the loader
//! recorded (or the live object) and returns findings.

pub mod engines;
pub mod helm;
pub mod owners;
pub mod reading;
pub mod size;
