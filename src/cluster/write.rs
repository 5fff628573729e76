//! The cluster's writes that carry a precondition, so that a concurrent
//! change makes them fail (409) instead of being overwritten:
//!
//! - `migrate`'s: putting a custom resource back unchanged, and trimming a
//!   CRD's `status.storedVersions`, each with the `resourceVersion` read;
//! - `apply`'s: the server-side apply of a CRD with the `resourceVersion`
//!   its check read, a create that fails if the CRD appeared meanwhile, the
//!   take-over of kubectl's fields, and the restore of a CRD already written
//!   when the bundle cannot be applied whole (written back, or deleted),
//!   each guarded by the `resourceVersion` of the write before it.
//!
//! A retried write that gets 409 may be its own first try that landed with
//! the answer lost: each reads the CRD again and counts it as done when the
//! CRD shows the write, and only otherwise reports the conflict.

use std::time::Duration;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};

use super::conversion::Read;
use super::request::{Failed, TryError};
use super::{ApplyError, ClusterError, Connection, ResourceRef, apply_body, ownership};

/// What a transient failure of a write says: the server's status and
/// message when it answered, else what happened to the connection.
fn transient_message(error: kube::Error, cause: &str) -> String {
    match error {
        kube::Error::Api(status) => format!("{}: {}", status.code, status.message),
        _ => cause.to_string(),
    }
}

/// What became of writing one object back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// Written (stored again, in the storage version).
    Written,
    /// 409: someone wrote it after it was read, which stored it in the
    /// storage version too.
    WrittenByOthers,
    /// 404: deleted after it was read; nothing left to migrate.
    Deleted,
}

/// Why one object could not be written back.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RewriteError {
    /// 429, 502, 503, 504 (500 with `Retry-After`) or a lost connection:
    /// worth trying again, after `after` when the server said so.
    #[error("{message}")]
    Transient {
        /// What went wrong.
        message: String,
        /// The server's `Retry-After`.
        after: Option<Duration>,
    },
    /// 401 or 403: no later write will succeed either.
    #[error("{0}")]
    Denied(String),
    /// Anything else: this object was not written (e.g. 422 from a
    /// validating webhook).
    #[error("{0}")]
    Refused(String),
}

/// Whether the trimmed storedVersions were stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredVersionsUpdate {
    /// Stored.
    Set,
    /// 409: the CRD changed since it was read; nothing was written.
    CrdChanged(String),
}

impl Connection {
    /// PUTs `object` (as read, with its `resourceVersion`) back to the
    /// resource it was read from, once: the caller decides about retries.
    pub async fn rewrite_object(
        &self,
        resource: &ResourceRef,
        object: &Value,
    ) -> Result<Rewrite, RewriteError> {
        let meta = &object["metadata"];
        let name = meta["name"].as_str().unwrap_or_default();
        let path = resource.path(meta["namespace"].as_str().filter(|n| !n.is_empty()));
        let params = PostParams {
            field_manager: Some(self.field_manager().to_string()),
            ..PostParams::default()
        };
        let body = serde_json::to_vec(object).map_err(|e| RewriteError::Refused(e.to_string()))?;
        let request = kube::core::Request::new(path)
            .replace(name, &params, body)
            .map_err(|e| RewriteError::Refused(e.to_string()))?;
        match self.try_once(request).await {
            Ok(_) => Ok(Rewrite::Written),
            Err(TryError::Transient {
                error,
                cause,
                after,
            }) => Err(RewriteError::Transient {
                message: transient_message(error, &cause),
                after,
            }),
            Err(TryError::Fatal(kube::Error::Api(status))) => match status.code {
                404 => Ok(Rewrite::Deleted),
                409 => Ok(Rewrite::WrittenByOthers),
                401 | 403 => Err(RewriteError::Denied(
                    self.classify(kube::Error::Api(status)).to_string(),
                )),
                code => Err(RewriteError::Refused(format!("{code}: {}", status.message))),
            },
            Err(TryError::Fatal(error)) => {
                Err(RewriteError::Refused(self.classify(error).to_string()))
            }
        }
    }

    /// Sets `status.storedVersions` of CRD `name` to `versions` through the
    /// status subresource, only if the CRD still has `resource_version`.
    pub async fn set_stored_versions(
        &self,
        name: &str,
        resource_version: &str,
        versions: &[String],
    ) -> Result<StoredVersionsUpdate, ClusterError> {
        // A merge patch that names metadata.resourceVersion is a
        // precondition: the server answers 409 if the CRD moved on.
        let patch = json!({
            "metadata": {"resourceVersion": resource_version},
            "status": {"storedVersions": versions},
        });
        let request =
            kube::core::Request::new("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
                .patch_subresource(
                    "status",
                    name,
                    &kube::api::PatchParams {
                        field_manager: Some(self.field_manager().to_string()),
                        ..kube::api::PatchParams::default()
                    },
                    &kube::api::Patch::Merge(&patch),
                )
                .map_err(|e| ClusterError::Other {
                    server: self.server.clone(),
                    detail: e.to_string(),
                })?;
        match self
            .call::<Value>(&format!("PATCH crd {name}/status"), request)
            .await
        {
            Ok(_) => Ok(StoredVersionsUpdate::Set),
            Err(f) if f.code() == Some(409) => {
                // A retried patch may have landed before its answer was
                // lost: then the CRD already says what we wrote.
                if f.tries > 1
                    && let Some(live) = self.get_crd(name).await?
                    && live["status"]["storedVersions"] == serde_json::json!(versions)
                {
                    return Ok(StoredVersionsUpdate::Set);
                }
                Ok(StoredVersionsUpdate::CrdChanged(f.message()))
            }
            Err(f) => Err(self.classify_failed(f)),
        }
    }
}

/// Whether two CRDs have the same content where users set it: the spec
/// (with the server's defaults on both sides), labels and annotations.
/// Field ownership, `resourceVersion` and status are not content.
pub fn same_content(a: &Value, b: &Value) -> bool {
    a.get("spec") == b.get("spec")
        && ["labels", "annotations"]
            .iter()
            .all(|k| a["metadata"].get(k) == b["metadata"].get(k))
}

/// Whether every top-level field manager of `crd` is `ours`: what a CRD
/// this tool created shows until someone else writes it (the API server's
/// own status writes are a subresource's, and do not count).
pub fn created_by(crd: &Value, ours: &str) -> bool {
    let entries = crd["metadata"]["managedFields"].as_array();
    let top: Vec<&Value> = entries
        .into_iter()
        .flatten()
        .filter(|e| {
            e.get("subresource")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        })
        .collect();
    !top.is_empty() && top.iter().all(|e| e["manager"] == ours)
}

/// Whether `live` differs from `base` (a CRD as checked, or as our own
/// last write left it) only in what the API server's own controllers write
/// on their own: status conditions and accepted names (a CRD just created
/// or renamed is being established), not the `storedVersions` the check
/// judged by. A write conditional on `base` that met such a change is tried
/// again on `live`; anything else someone changed is a conflict.
pub fn only_status_moved(base: &Value, live: &Value) -> bool {
    let (b, l) = (&base["metadata"], &live["metadata"]);
    let top = |crd: &Value| -> Vec<Value> {
        crd["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| {
                e.get("subresource")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
            })
            .cloned()
            .collect()
    };
    b["uid"] == l["uid"]
        && b["generation"] == l["generation"]
        && l.get("deletionTimestamp").is_none()
        && ["finalizers", "ownerReferences"]
            .iter()
            .all(|k| b.get(k) == l.get(k))
        && same_content(base, live)
        && same_managers(&Value::Array(top(live)), &top(base))
        && base["status"]["storedVersions"] == live["status"]["storedVersions"]
}

/// `metadata.resourceVersion` of an object, or `""`.
pub fn resource_version(object: &Value) -> &str {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
}

/// Why a restore write did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// 409: the CRD changed after the write it was guarded by; nothing was
    /// written, so that change stays.
    #[error("changed by another client meanwhile: {0}")]
    Changed(String),
    /// 404: the CRD is gone.
    #[error("deleted by another client meanwhile")]
    Gone,
    /// The server refuses the write (400/422, an admission denial).
    #[error("the API server refused it: {0}")]
    Rejected(String),
    /// The request failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// What a guarded delete came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    /// The API server took the delete (the CRD is going).
    Yes,
    /// It was gone already.
    AlreadyGone,
}

impl Connection {
    /// The request that failed, as [`ApplyError`]: a definite answer of the
    /// server means nothing was written; anything else after a try that
    /// may have reached it (a lost answer, a timeout, retries that ran out)
    /// is [`ApplyError::Unsure`].
    fn apply_failure(&self, f: Failed) -> ApplyError {
        if f.refused() {
            return ApplyError::Rejected(f.message());
        }
        let definite = f.code().is_some() && !f.exhausted && f.tries == 1;
        let error = self.classify_failed(f);
        if definite {
            ApplyError::Cluster(error)
        } else {
            ApplyError::Unsure(error)
        }
    }

    /// A request kube-core could not build, as a failure of the write.
    fn unbuilt_write(&self, e: kube::core::request::Error) -> ApplyError {
        ApplyError::Cluster(self.unbuildable(e))
    }

    /// Server-side-applies `manifest` to CRD `name` as our field manager,
    /// only if the CRD still has `resource_version` (the one its check
    /// read, or our own take-over's): the API server takes
    /// `metadata.resourceVersion` in the applied configuration as a
    /// precondition. Without `force_conflicts`, fields owned by another
    /// manager make this fail with [`ApplyError::Conflict`], like kubectl.
    pub async fn apply_at(
        &self,
        name: &str,
        manifest: &Value,
        force_conflicts: bool,
        resource_version: &str,
    ) -> Result<Value, ApplyError> {
        let mut params = PatchParams::apply(self.field_manager());
        if force_conflicts {
            params = params.force();
        }
        let failed = match self
            .patch_crd("apply", name, &params, manifest, Some(resource_version))
            .await
        {
            Ok(obj) => return Ok(obj),
            Err(f) => f,
        };
        if failed.code() != Some(409) {
            return Err(self.apply_failure(failed));
        }
        let message = failed.message();
        // Field ownership: the API server words it "Apply failed with N
        // conflict(s): conflict with ...".
        if message.starts_with("Apply failed with") {
            return Err(ApplyError::Conflict(message));
        }
        // The precondition. A retried apply whose first try landed meets its
        // own write: then applying again, unconditionally, would change
        // nothing.
        if failed.tries > 1
            && let Some(live) = self.get_crd(name).await.map_err(ApplyError::Unsure)?
            && live["metadata"]["resourceVersion"].as_str() != Some(resource_version)
        {
            let again = PatchParams::apply(self.field_manager()).dry_run();
            let again = if force_conflicts {
                again.force()
            } else {
                again
            };
            if let Ok(would) = self
                .patch_crd("dry-run", name, &again, manifest, None)
                .await
                && same_content(&would, &live)
            {
                return Ok(live);
            }
        }
        Err(ApplyError::Changed(message))
    }

    /// Creates CRD `name` from `manifest` (a POST, as our field manager),
    /// which fails if the CRD appeared since the check found none. A server-
    /// side apply would create it too, but would just as well update one
    /// another client created meanwhile; [`Connection::adopt_created`] then
    /// makes our fields an `Apply` entry, as an apply would have.
    pub async fn create_crd(&self, name: &str, manifest: &Value) -> Result<Value, ApplyError> {
        let params = PostParams {
            field_manager: Some(self.field_manager().to_string()),
            ..PostParams::default()
        };
        let body = serde_json::to_vec(&apply_body(manifest))
            .map_err(|e| ApplyError::Cluster(self.other_error(e)))?;
        let request = self
            .crds()
            .create(&params, body)
            .map_err(|e| self.unbuilt_write(e))?;
        match self
            .call::<Value>(&format!("create crd {name}"), request)
            .await
        {
            Ok(obj) => Ok(obj),
            Err(f) if f.code() == Some(409) => {
                // A retried create whose first try landed finds its own CRD.
                if f.tries > 1
                    && let Some(live) = self.get_crd(name).await.map_err(ApplyError::Unsure)?
                    && created_by(&live, self.field_manager())
                {
                    return Ok(live);
                }
                Err(ApplyError::Changed(f.message()))
            }
            Err(f) => Err(self.apply_failure(f)),
        }
    }

    /// Turns the `Update` entry our create left in `managedFields` into our
    /// `Apply` entry, as `kubectl apply --server-side` does with a
    /// `kubectl create` (see [`ownership`]): otherwise the next `apply` of
    /// a changed field would conflict with our own create. It changes
    /// ownership only, so it is conditional on the `resourceVersion` read
    /// just before, and read again when the API server's controllers wrote
    /// the new CRD's status in between.
    pub async fn adopt_created(&self, name: &str) -> Result<(), ApplyError> {
        for _ in 0..3 {
            let Some(live) = self.get_crd(name).await? else {
                return Err(ApplyError::Changed(
                    "deleted right after it was created".into(),
                ));
            };
            let managed = live["metadata"]["managedFields"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ours = self.field_manager();
            let Some(fields) = ownership::take_over(&managed, &[ours], ours) else {
                return Ok(());
            };
            let patch = json!({"metadata": {
                "resourceVersion": resource_version(&live),
                "managedFields": fields,
            }});
            let request = self
                .crds()
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .map_err(|e| self.unbuilt_write(e))?;
            match self
                .call::<Value>(&format!("adopt fields of crd {name}"), request)
                .await
            {
                Ok(_) => return Ok(()),
                Err(f) if f.code() == Some(409) => {}
                Err(f) => return Err(self.apply_failure(f)),
            }
        }
        Err(ApplyError::Changed(format!(
            "crd {name} kept changing while its fields were moved to the Apply entry"
        )))
    }

    /// Moves the fields that the `Update` managers `from` own on the CRD
    /// as `checked` shows it to our `Apply` manager, as `kubectl apply
    /// --server-side` does with what a client-side `kubectl apply` left
    /// (see [`ownership`]), only if the CRD still has the checked
    /// `resourceVersion`. The CRD as written, whose `resourceVersion` the
    /// apply that follows is conditional on; `None` when there was nothing
    /// to move.
    ///
    /// If the write was retried and then refused for a changed
    /// resourceVersion, the first try may have landed: the CRD is read
    /// again, and finding nothing left to move and the checked content
    /// means it did.
    pub async fn take_over_fields(
        &self,
        checked: &Value,
        from: &[&str],
    ) -> Result<Option<Value>, ApplyError> {
        let name = checked["metadata"]["name"].as_str().unwrap_or_default();
        let checked_rv = resource_version(checked);
        let managed = checked["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let Some(fields) = ownership::take_over(&managed, from, self.field_manager()) else {
            return Ok(None);
        };
        let patch = json!({"metadata": {
            "resourceVersion": checked_rv,
            "managedFields": fields,
        }});
        let request = self
            .crds()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .map_err(|e| self.unbuilt_write(e))?;
        match self
            .call::<Value>(&format!("take over fields of crd {name}"), request)
            .await
        {
            Ok(obj) => Ok(Some(obj)),
            Err(f) if f.code() == Some(409) => {
                if f.tries > 1
                    && let Some(live) = self.get_crd(name).await.map_err(ApplyError::Unsure)?
                {
                    let left = live["metadata"]["managedFields"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    if ownership::take_over(&left, from, self.field_manager()).is_none()
                        && same_content(&live, checked)
                    {
                        return Ok(Some(live));
                    }
                }
                Err(ApplyError::Changed(f.message()))
            }
            Err(f) => Err(self.apply_failure(f)),
        }
    }

    /// PUTs `body` (a CRD as it was checked, with the `resourceVersion` of
    /// the write it undoes) back: the restore of an update. 409 when
    /// someone else wrote the CRD since; a retry that meets its own landed
    /// write counts as written.
    pub async fn write_back(&self, body: &Value) -> Result<Value, RestoreError> {
        let name = body["metadata"]["name"].as_str().unwrap_or_default();
        let params = PostParams {
            field_manager: Some(self.field_manager().to_string()),
            ..PostParams::default()
        };
        let bytes = serde_json::to_vec(body).map_err(|e| self.other_error(e))?;
        let request = self
            .crds()
            .replace(name, &params, bytes)
            .map_err(|e| self.unbuildable(e))?;
        match self
            .call::<Value>(&format!("restore crd {name}"), request)
            .await
        {
            Ok(obj) => Ok(obj),
            Err(f) => {
                self.restore_failure(name, f, |live| same_content(live, body))
                    .await
            }
        }
    }

    /// Sets `metadata.managedFields` of CRD `name` to `fields`, only if it
    /// still has `resource_version`: after a restore, the field ownership
    /// as it was checked (the restore's PUT made our `Update` entry the
    /// owner of every field it put back).
    pub async fn set_managed_fields(
        &self,
        name: &str,
        resource_version: &str,
        fields: &[Value],
    ) -> Result<Value, RestoreError> {
        let patch = json!({"metadata": {
            "resourceVersion": resource_version,
            "managedFields": fields,
        }});
        let request = self
            .crds()
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .map_err(|e| self.unbuildable(e))?;
        match self
            .call::<Value>(&format!("restore field owners of crd {name}"), request)
            .await
        {
            Ok(obj) => Ok(obj),
            Err(f) => {
                let same = |live: &Value| same_managers(&live["metadata"]["managedFields"], fields);
                self.restore_failure(name, f, same).await
            }
        }
    }

    /// Deletes CRD `name` only if it still has `uid` and `resource_version`
    /// (a CRD this run created, unchanged by anyone since).
    pub async fn delete_crd_at(
        &self,
        name: &str,
        uid: &str,
        resource_version: &str,
    ) -> Result<Deleted, RestoreError> {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: Some(resource_version.to_string()),
            }),
            ..DeleteParams::default()
        };
        let request = self
            .crds()
            .delete(name, &params)
            .map_err(|e| self.unbuildable(e))?;
        match self
            .call::<Value>(&format!("delete crd {name}"), request)
            .await
        {
            Ok(_) => Ok(Deleted::Yes),
            Err(f) if f.code() == Some(404) => Ok(Deleted::AlreadyGone),
            Err(f) => {
                let going = |live: &Value| live["metadata"].get("deletionTimestamp").is_some();
                match self.restore_failure(name, f, going).await {
                    Ok(_) => Ok(Deleted::Yes),
                    Err(RestoreError::Gone) => Ok(Deleted::AlreadyGone),
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// A failed restore write as [`RestoreError`], or the CRD read again
    /// when a retried write met its own first try, which landed with the
    /// answer lost (`landed` tells that from the CRD).
    async fn restore_failure(
        &self,
        name: &str,
        f: Failed,
        landed: impl Fn(&Value) -> bool,
    ) -> Result<Value, RestoreError> {
        match f.code() {
            Some(404) => Err(RestoreError::Gone),
            Some(409) => {
                if f.tries > 1
                    && let Ok(Some(live)) = self.get_crd(name).await
                    && landed(&live)
                {
                    return Ok(live);
                }
                Err(RestoreError::Changed(f.message()))
            }
            _ if f.refused() => Err(RestoreError::Rejected(f.message())),
            _ => Err(RestoreError::Cluster(self.classify_failed(f))),
        }
    }

    /// Whether CRD `crd` (as read) has any object, read through its first
    /// served version with a LIST of one: deleting a CRD deletes its
    /// objects, so a CRD is only deleted when this says none. A version not
    /// served yet (the CRD not established) has none.
    pub async fn has_objects(&self, crd: &Value) -> Result<bool, ClusterError> {
        let spec = &crd["spec"];
        let served = spec["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["served"] == true)
            .and_then(|v| v["name"].as_str());
        let (Some(group), Some(plural), Some(version)) = (
            spec["group"].as_str(),
            spec["names"]["plural"].as_str(),
            served,
        ) else {
            return Ok(false);
        };
        let resource = ResourceRef {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            namespace: None,
        };
        match self.first_object(&resource).await? {
            Read::Found(first) => Ok(first.is_some()),
            Read::Missing => Ok(false),
            Read::Forbidden(message) => Err(ClusterError::Forbidden { message }),
        }
    }

    /// Waits until CRD `name` is gone (a deleted CRD stays while the API
    /// server removes its objects), at most until `deadline`; whether it
    /// went.
    pub async fn wait_deleted(
        &self,
        name: &str,
        deadline: tokio::time::Instant,
    ) -> Result<bool, ClusterError> {
        loop {
            if self.get_crd(name).await?.is_none() {
                return Ok(true);
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An error of our own making on the way to the server.
    fn other_error(&self, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::Other {
            server: self.server.clone(),
            detail: e.to_string(),
        }
    }
}

/// Whether two `managedFields` lists name the same owners of the same
/// fields; the times of the entries do not count (the server stamps the
/// entry a write changed).
pub fn same_managers(a: &Value, b: &[Value]) -> bool {
    let strip = |entries: &[Value]| -> Vec<Value> {
        entries
            .iter()
            .map(|e| {
                let mut e = e.clone();
                if let Some(o) = e.as_object_mut() {
                    o.remove("time");
                }
                e
            })
            .collect()
    };
    let a: &[Value] = a.as_array().map(Vec::as_slice).unwrap_or_default();
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::FIELD_MANAGER;

    fn crd() -> Value {
        json!({
            "metadata": {
                "name": "widgets.example.com", "uid": "u1", "resourceVersion": "10",
                "generation": 2, "annotations": {"a": "1"},
                "managedFields": [
                    {"manager": FIELD_MANAGER, "operation": "Apply", "time": "t1",
                     "fieldsV1": {"f:spec": {}}},
                    {"manager": "kube-apiserver", "operation": "Update", "subresource": "status",
                     "time": "t1", "fieldsV1": {"f:status": {}}},
                ],
            },
            "spec": {"group": "example.com"},
            "status": {"storedVersions": ["v1"], "conditions": []},
        })
    }

    #[test]
    fn the_api_servers_own_status_writes_are_no_change_but_anything_else_is() {
        let base = crd();
        let mut establishing = base.clone();
        establishing["metadata"]["resourceVersion"] = json!("11");
        establishing["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
        establishing["metadata"]["managedFields"][1]["time"] = json!("t2");
        assert!(only_status_moved(&base, &establishing));

        let mut trimmed = establishing.clone();
        trimmed["status"]["storedVersions"] = json!(["v2"]);
        assert!(
            !only_status_moved(&base, &trimmed),
            "the check judged storedVersions"
        );
        let mut annotated = establishing.clone();
        annotated["metadata"]["annotations"]["b"] = json!("2");
        assert!(!only_status_moved(&base, &annotated));
        let mut respecced = establishing.clone();
        respecced["metadata"]["generation"] = json!(3);
        assert!(!only_status_moved(&base, &respecced));
        let mut reowned = establishing.clone();
        reowned["metadata"]["managedFields"][0]["manager"] = json!("helm");
        assert!(
            !only_status_moved(&base, &reowned),
            "another manager wrote it"
        );
        let mut deleting = establishing;
        deleting["metadata"]["deletionTimestamp"] = json!("now");
        assert!(!only_status_moved(&base, &deleting));
    }

    #[test]
    fn a_crd_is_ours_when_every_top_level_manager_is() {
        assert!(created_by(&crd(), FIELD_MANAGER));
        let mut theirs = crd();
        theirs["metadata"]["managedFields"][0]["manager"] = json!("helm");
        assert!(!created_by(&theirs, FIELD_MANAGER));
        assert!(!created_by(&json!({"metadata": {}}), FIELD_MANAGER));
    }
}
