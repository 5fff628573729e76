//! The server engine: the cluster's own storage-version migrator does the
//! rewrite. crd-safety creates one `StorageVersionMigration` per CRD,
//! follows its conditions, and makes sure `status.storedVersions` ends as
//! the storage version alone:
//!
//! - from Kubernetes 1.36 kube-controller-manager trims it itself, once
//!   the migration succeeded and only if the CRD's spec did not change
//!   meanwhile; crd-safety waits for that;
//! - before 1.36 nobody does, so crd-safety trims it as the client engine
//!   does, only if the CRD's `generation` is still the planned one (the
//!   migrator writes the CRD's status, so its `resourceVersion` moves).
//!
//! A migration no migrator takes up within the wait (the API is served
//! but kube-controller-manager does not run the migrator, or 1.30's alpha
//! migrator waits at its checkpoint for a write to the resource, which on
//! a quiet resource never comes) is deleted again, so it cannot start
//! later behind the user's back.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::cluster::{
    ClusterError, Connection, MigrationApi, MigrationCreate, MigrationState, StoredVersionsUpdate,
};
use crate::outcome::CrdPlan;

/// The first minor whose migrator trims `status.storedVersions` itself.
const TRIMS_SINCE: u32 = 36;

/// How the server engine waits.
#[derive(Debug, Clone, Copy)]
pub struct ServerWait {
    /// How long a migration may stay without status before it counts as
    /// not taken up, and how long to wait for the migrator's trim.
    pub pickup: Duration,
    /// Between two reads of the migration.
    pub poll: Duration,
}

/// How one CRD's server migration ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEnd {
    /// Migrated, and storedVersions is the storage version alone.
    Migrated {
        /// Whether the cluster's migrator trimmed storedVersions.
        trimmed_by_server: bool,
    },
    /// The cluster would not do it: no migrator took it up, or this user
    /// may not create migrations. The migration object is gone again.
    NotTakenUp(String),
    /// The migrator failed, or storedVersions could not be set.
    Failed(String),
    /// Ctrl-C: the migration goes on in the cluster.
    Interrupted(String),
}

/// Migrates `c` through the cluster's migrator; `tick` gets the objects
/// done whenever the migrator says (1.37 and later).
pub async fn migrate_on_server(
    conn: &Connection,
    api: MigrationApi,
    c: &CrdPlan,
    wait: ServerWait,
    stop: &AtomicBool,
    tick: &mut dyn FnMut(u64),
) -> (Option<String>, ServerEnd) {
    let name = migration_name(&c.name);
    let untouched = format!(
        "storedVersions untouched [{}]",
        c.stored_versions.join(", ")
    );
    match conn.create_storage_migration(api, &name, &c.resource).await {
        Ok(MigrationCreate::Created) => {}
        Ok(MigrationCreate::Forbidden(why)) => {
            return (
                None,
                ServerEnd::NotTakenUp(format!(
                    "not allowed to create storageversionmigrations ({why})"
                )),
            );
        }
        Err(e) => {
            return (
                None,
                ServerEnd::Failed(format!(
                    "the storageversionmigration could not be created: {e}; {untouched}"
                )),
            );
        }
    }
    let end = follow(conn, api, &name, c, wait, stop, tick, &untouched).await;
    let end = match end {
        Ok(end) => end,
        Err(e) => ServerEnd::Failed(format!(
            "following storageversionmigration {name} failed: {e}; {untouched}; the \
             migration may go on in the cluster: run migrate again to finish"
        )),
    };
    (Some(name), end)
}

#[allow(clippy::too_many_arguments)]
async fn follow(
    conn: &Connection,
    api: MigrationApi,
    name: &str,
    c: &CrdPlan,
    wait: ServerWait,
    stop: &AtomicBool,
    tick: &mut dyn FnMut(u64),
    untouched: &str,
) -> Result<ServerEnd, ClusterError> {
    let created = Instant::now();
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(ServerEnd::Interrupted(format!(
                "stopped following storageversionmigration {name}, which the cluster's \
                 migrator goes on with; {untouched}; run migrate again once it succeeded \
                 (kubectl get storageversionmigration {name})"
            )));
        }
        let Some(svm) = conn.get_storage_migration(api, name).await? else {
            return Ok(ServerEnd::Failed(format!(
                "storageversionmigration {name} was deleted before it finished; {untouched}"
            )));
        };
        match MigrationState::of(&svm) {
            MigrationState::Pending if created.elapsed() >= wait.pickup => {
                conn.delete_storage_migration(api, name).await?;
                return Ok(ServerEnd::NotTakenUp(format!(
                    "the cluster serves {} but no storage-version migrator took up \
                     storageversionmigration {name} within {}s (kube-controller-manager does \
                     not run its storage-version-migrator-controller, or, on 1.30, it waits \
                     for a write to the resource); deleted it again",
                    api.api_version(),
                    wait.pickup.as_secs()
                )));
            }
            MigrationState::Pending => {}
            MigrationState::Running { progress } => {
                if let Some((left, total)) = progress {
                    tick(total.saturating_sub(left));
                }
            }
            MigrationState::Failed(why) => {
                return Ok(ServerEnd::Failed(format!(
                    "the cluster's migrator failed storageversionmigration {name}: {why}; \
                     {untouched}"
                )));
            }
            MigrationState::Succeeded => {
                tick(c.objects.unwrap_or(0));
                return trim(conn, name, c, wait, untouched).await;
            }
        }
        tokio::time::sleep(wait.poll).await;
    }
}

/// Makes storedVersions the storage version alone once every object is
/// migrated: waits for the migrator's own trim where it does one, else
/// trims with the planned generation as the precondition.
async fn trim(
    conn: &Connection,
    name: &str,
    c: &CrdPlan,
    wait: ServerWait,
    untouched: &str,
) -> Result<ServerEnd, ClusterError> {
    let target = vec![c.storage_version.clone()];
    let trims = conn.server_minor().await? >= TRIMS_SINCE;
    let since = Instant::now();
    loop {
        let Some(live) = conn.get_crd(&c.name).await? else {
            return Ok(ServerEnd::Failed(format!(
                "every object was migrated by storageversionmigration {name}, but the CRD \
                 was deleted"
            )));
        };
        let stored: Vec<String> = live["status"]["storedVersions"]
            .as_array()
            .map(|vs| {
                vs.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        if stored == target {
            return Ok(ServerEnd::Migrated {
                trimmed_by_server: true,
            });
        }
        let generation = live["metadata"]["generation"].as_i64().unwrap_or_default();
        if generation != c.generation {
            return Ok(ServerEnd::Failed(format!(
                "every object was migrated by storageversionmigration {name}, but the CRD \
                 changed during the migration (generation {} -> {generation}); {untouched}; \
                 run migrate again",
                c.generation
            )));
        }
        if !trims || since.elapsed() >= wait.pickup {
            let resource_version = live["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            return Ok(
                match conn
                    .set_stored_versions(&c.name, resource_version, &target)
                    .await?
                {
                    StoredVersionsUpdate::Set => ServerEnd::Migrated {
                        trimmed_by_server: false,
                    },
                    StoredVersionsUpdate::CrdChanged(m) => ServerEnd::Failed(format!(
                        "every object was migrated by storageversionmigration {name}, but the \
                         CRD changed meanwhile ({m}); {untouched}; run migrate again"
                    )),
                },
            );
        }
        tokio::time::sleep(wait.poll).await;
    }
}

/// `<crd name>-<8 hex digits>`: chosen once per run, so a retried create
/// finds its own object, and unique across runs. Within the 253 bytes of a
/// name, ending in an alphanumeric.
fn migration_name(crd: &str) -> String {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    let suffix = format!("{:08x}", hasher.finish() as u32);
    let room = 253 - suffix.len() - 1;
    let mut prefix: &str = crd.get(..crd.len().min(room)).unwrap_or(crd);
    prefix = prefix.trim_end_matches(['.', '-']);
    format!("{prefix}-{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_migration_name_is_a_dns_subdomain_of_its_crd() {
        let n = migration_name("widgets.example.com");
        let (prefix, suffix) = n.rsplit_once('-').unwrap_or_default();
        assert_eq!(prefix, "widgets.example.com");
        assert_eq!(suffix.len(), 8);
        assert!(suffix.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(n, migration_name("widgets.example.com"));
        let long = format!("{}.example.com", "a".repeat(240));
        let n = migration_name(&long);
        assert_eq!(n.len(), 253);
        assert!(!n.contains(".-"));
    }
}
