//! The cluster's own storage-version migration (`storagemigration.k8s.io`,
//! KEP-4192): finding whether it is served, creating a
//! `StorageVersionMigration` and reading where it is.
//!
//! Kubernetes serves it as `v1alpha1` (1.30-1.34) and `v1beta1` (1.35,
//! 1.36), both behind the `StorageVersionMigrator` gate and off by default,
//! and as `v1` from 1.37, on by default. The API server only stores the
//! object: kube-controller-manager's storage-version migrator does the
//! work and writes its status, and from 1.36 it also trims the CRD's
//! `status.storedVersions`.

use http::Request;
use serde_json::{Value, json};

use super::{ClusterError, Connection, FIELD_MANAGER};
use crate::crd::ResourceRef;

/// The group.
const GROUP: &str = "storagemigration.k8s.io";

/// A served version of the API, newest first in [`MigrationApi::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationApi {
    /// GA from 1.37.
    V1,
    /// 1.35 to 1.37, off by default.
    V1beta1,
    /// 1.30 to 1.34, off by default.
    V1alpha1,
}

impl MigrationApi {
    /// Newest first: the one to use when several are served.
    pub const ALL: [MigrationApi; 3] = [
        MigrationApi::V1,
        MigrationApi::V1beta1,
        MigrationApi::V1alpha1,
    ];

    /// `v1`, `v1beta1`, `v1alpha1`.
    pub fn version(self) -> &'static str {
        match self {
            MigrationApi::V1 => "v1",
            MigrationApi::V1beta1 => "v1beta1",
            MigrationApi::V1alpha1 => "v1alpha1",
        }
    }

    /// `storagemigration.k8s.io/v1`, as reports show it.
    pub fn api_version(self) -> String {
        format!("{GROUP}/{}", self.version())
    }

    fn collection(self) -> String {
        format!("/apis/{GROUP}/{}/storageversionmigrations", self.version())
    }

    /// The object asking to migrate `resource`. `v1alpha1` names the
    /// version to write through; later versions let the controller find it.
    fn object(self, name: &str, resource: &ResourceRef) -> Value {
        let target = match self {
            MigrationApi::V1alpha1 => json!({
                "group": resource.group,
                "version": resource.version,
                "resource": resource.plural,
            }),
            _ => json!({"group": resource.group, "resource": resource.plural}),
        };
        json!({
            "apiVersion": self.api_version(),
            "kind": "StorageVersionMigration",
            "metadata": {
                "name": name,
                "labels": {"app.kubernetes.io/managed-by": "crd-safety"},
            },
            "spec": {"resource": target},
        })
    }
}

/// Where a migration is, read from its status conditions (the same three
/// types in every version of the API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationState {
    /// No migrator has started it (no Running, Succeeded or Failed).
    Pending,
    /// Taken up; `left`/`total` objects when the migrator says (1.37).
    Running { progress: Option<(u64, u64)> },
    /// Every object written in the storage version.
    Succeeded,
    /// The migrator gave up; its message.
    Failed(String),
}

impl MigrationState {
    /// Reads a `StorageVersionMigration` as returned by the server.
    pub fn of(object: &Value) -> MigrationState {
        let conditions = object["status"]["conditions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let holds = |kind: &str| {
            conditions
                .iter()
                .find(|c| c["type"] == kind && c["status"] == "True")
        };
        if let Some(c) = holds("Failed") {
            let message = c["message"].as_str().unwrap_or("no reason given");
            return MigrationState::Failed(message.to_string());
        }
        if holds("Succeeded").is_some() {
            return MigrationState::Succeeded;
        }
        // Before 1.36 the migrator writes a resourceVersion checkpoint
        // first and Running only once it starts writing; on 1.30 it can
        // wait at the checkpoint indefinitely for its cache to see a write
        // of the resource. Only Running counts as taken up.
        match holds("Running") {
            Some(c) => MigrationState::Running {
                progress: progress_of(c["message"].as_str().unwrap_or("")),
            },
            None => MigrationState::Pending,
        }
    }
}

/// `left/total` from the 1.37 migrator's Running message, "The migration
/// is running, 3/10 objects not yet migrated".
fn progress_of(message: &str) -> Option<(u64, u64)> {
    let (before, _) = message.split_once(" not yet migrated")?;
    let fraction = before.trim_end_matches(" objects").rsplit(' ').next()?;
    let (left, total) = fraction.split_once('/')?;
    Some((left.parse().ok()?, total.parse().ok()?))
}

/// What became of creating a migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MigrationCreate {
    /// Created (or found created by an earlier try of the same request).
    Created,
    /// 403: this user may not create migrations.
    Forbidden(String),
}

impl Connection {
    /// The newest version of `storagemigration.k8s.io` the server serves,
    /// or `None` when it serves none (the group is absent, 404).
    pub async fn storage_migration_api(&self) -> Result<Option<MigrationApi>, ClusterError> {
        let request = Request::get(format!("/apis/{GROUP}"))
            .body(Vec::new())
            .map_err(|e| self.unbuilt(e))?;
        let group: Value = match self.call(&format!("GET /apis/{GROUP}"), request).await {
            Ok(g) => g,
            Err(f) if f.code() == Some(404) => return Ok(None),
            Err(f) => return Err(self.classify_failed(f)),
        };
        let served: Vec<&str> = group["versions"]
            .as_array()
            .map(|vs| vs.iter().filter_map(|v| v["version"].as_str()).collect())
            .unwrap_or_default();
        Ok(MigrationApi::ALL
            .into_iter()
            .find(|api| served.contains(&api.version())))
    }

    /// Creates the migration `name` of `resource`. The name is chosen by
    /// the caller, once per run, so a create retried after a lost answer
    /// finds its own object (409) instead of starting a second migration.
    pub async fn create_storage_migration(
        &self,
        api: MigrationApi,
        name: &str,
        resource: &ResourceRef,
    ) -> Result<MigrationCreate, ClusterError> {
        let body =
            serde_json::to_vec(&api.object(name, resource)).map_err(|e| ClusterError::Other {
                server: self.server.clone(),
                detail: e.to_string(),
            })?;
        let request = Request::post(format!("{}?fieldManager={FIELD_MANAGER}", api.collection()))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .map_err(|e| self.unbuilt(e))?;
        match self
            .call::<Value>(&format!("CREATE storageversionmigration {name}"), request)
            .await
        {
            Ok(_) => Ok(MigrationCreate::Created),
            Err(f) if f.code() == Some(409) && f.tries > 1 => Ok(MigrationCreate::Created),
            Err(f) if f.code() == Some(403) => Ok(MigrationCreate::Forbidden(f.message())),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    /// The migration `name`, or `None` when it is gone.
    pub async fn get_storage_migration(
        &self,
        api: MigrationApi,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let request = Request::get(format!("{}/{name}", api.collection()))
            .body(Vec::new())
            .map_err(|e| self.unbuilt(e))?;
        match self
            .call::<Value>(&format!("GET storageversionmigration {name}"), request)
            .await
        {
            Ok(v) => Ok(Some(v)),
            Err(f) if f.code() == Some(404) => Ok(None),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    /// Deletes the migration `name` (gone already is fine).
    pub async fn delete_storage_migration(
        &self,
        api: MigrationApi,
        name: &str,
    ) -> Result<(), ClusterError> {
        let request = Request::delete(format!("{}/{name}", api.collection()))
            .body(Vec::new())
            .map_err(|e| self.unbuilt(e))?;
        match self
            .call::<Value>(&format!("DELETE storageversionmigration {name}"), request)
            .await
        {
            Ok(_) => Ok(()),
            Err(f) if f.code() == Some(404) => Ok(()),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    fn unbuilt(&self, e: http::Error) -> ClusterError {
        ClusterError::Other {
            server: self.server.clone(),
            detail: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_conditions(conditions: Value) -> Value {
        json!({"status": {"conditions": conditions}})
    }

    #[test]
    fn a_migration_without_status_is_pending() {
        assert_eq!(MigrationState::of(&json!({})), MigrationState::Pending);
        assert_eq!(
            MigrationState::of(&json!({"status": {}})),
            MigrationState::Pending
        );
    }

    #[test]
    fn a_resource_version_checkpoint_is_not_yet_taken_up() {
        // 1.30-1.35: the checkpoint is written before Running, and 1.30's
        // migrator can stay there.
        assert_eq!(
            MigrationState::of(&json!({"status": {"resourceVersion": "245"}})),
            MigrationState::Pending
        );
        let running = with_conditions(json!([{"type": "Running", "status": "True"}]));
        assert_eq!(
            MigrationState::of(&running),
            MigrationState::Running { progress: None }
        );
    }

    #[test]
    fn the_1_37_running_message_gives_the_progress() {
        let svm = with_conditions(json!([{
            "type": "Running", "status": "True", "reason": "MigrationRunning",
            "message": "The migration is running, 3/10 objects not yet migrated"
        }]));
        assert_eq!(
            MigrationState::of(&svm),
            MigrationState::Running {
                progress: Some((3, 10))
            }
        );
        assert_eq!(progress_of("The migration is running"), None);
        assert_eq!(
            progress_of("1/2 not yet migrated. migration encountered unhandled error: x"),
            Some((1, 2))
        );
    }

    #[test]
    fn succeeded_wins_over_a_running_left_true() {
        // 1.37 leaves Running=True beside Succeeded until the runner ends it.
        let svm = with_conditions(json!([
            {"type": "Running", "status": "True"},
            {"type": "Succeeded", "status": "True"}
        ]));
        assert_eq!(MigrationState::of(&svm), MigrationState::Succeeded);
    }

    #[test]
    fn a_failure_carries_the_migrators_message() {
        let svm = with_conditions(json!([
            {"type": "Running", "status": "False"},
            {"type": "Failed", "status": "True", "message": "migration encountered unhandled error: boom"}
        ]));
        assert_eq!(
            MigrationState::of(&svm),
            MigrationState::Failed("migration encountered unhandled error: boom".into())
        );
    }

    #[test]
    fn v1alpha1_names_the_version_to_write_through() {
        let r = ResourceRef {
            group: "example.com".into(),
            version: "v1".into(),
            plural: "widgets".into(),
            namespace: None,
        };
        assert_eq!(
            MigrationApi::V1alpha1.object("m", &r)["spec"]["resource"],
            json!({"group": "example.com", "version": "v1", "resource": "widgets"})
        );
        assert_eq!(
            MigrationApi::V1.object("m", &r)["spec"]["resource"],
            json!({"group": "example.com", "resource": "widgets"})
        );
    }
}
