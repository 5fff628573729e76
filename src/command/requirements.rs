//! `requirements`: each requirement and whether the installed CRD (or the
//! one files hold) meets it.

use std::collections::BTreeMap;

use super::Failure;
use crate::cluster::Connection;
use crate::crd::Crd;
use crate::manifest::{ManifestSet, normalize_to_v1};
use crate::requirement::in_cluster;
use crate::requirement::{Requirement, States};

/// The states against CRDs read from files.
pub fn against_files(requirements: &[Requirement], new: &ManifestSet, label: String) -> States {
    States::of(requirements, |name| new.get(name).map(|l| &*l.crd), label)
}

/// The states against the cluster's CRDs, each read once.
pub async fn against_cluster(
    conn: &Connection,
    requirements: &[Requirement],
) -> Result<States, Failure> {
    let mut installed: BTreeMap<String, Option<Crd>> = BTreeMap::new();
    for r in requirements {
        let name = &r.crd.name;
        if installed.contains_key(name) {
            continue;
        }
        let crd = match conn.get_crd(name).await? {
            Some(value) => Some(Crd::from_manifest(normalize_to_v1(value)).map_err(|e| {
                Failure::Usage(format!("the cluster's CRD {name} cannot be read: {e}"))
            })?),
            None => None,
        };
        installed.insert(name.clone(), crd);
    }
    let label = format!("the cluster (context {}, {})", conn.context, conn.server);
    Ok(States::of(
        requirements,
        |name| installed.get(name).and_then(Option::as_ref),
        label,
    ))
}

/// The cluster's own requirements: its `CRDRequirement` objects, the ones
/// `serve` enforces. One that cannot be read fails the run naming it, as a
/// malformed file does; a cluster without the custom resource is told how
/// to get it.
pub async fn from_cluster(conn: &Connection) -> Result<Vec<Requirement>, Failure> {
    let Some(items) = conn.list_all(&in_cluster::resource()).await? else {
        return Err(Failure::Usage(format!(
            "no requirements: the cluster (context {}) has no {}.{} resource (the crd-safety chart \
             installs it); give --requirements PATH, or `requirements` in the config file",
            conn.context,
            in_cluster::PLURAL,
            in_cluster::GROUP
        )));
    };
    let (read, mut unreadable) = in_cluster::from_list(items);
    match unreadable.pop() {
        Some(u) => Err(u.error.into()),
        None => Ok(read),
    }
}
