//! Writes of a storage-version migration: putting a custom resource back
//! unchanged, and trimming a CRD's `status.storedVersions`. Both carry a
//! `resourceVersion`, so a concurrent change makes them fail (409) instead
//! of overwriting it.

use std::time::Duration;

use kube::api::PostParams;
use serde_json::{Value, json};

use super::request::TryError;
use super::{ClusterError, Connection, FIELD_MANAGER, ResourceRef};

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
            field_manager: Some(FIELD_MANAGER.to_string()),
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
                        field_manager: Some(FIELD_MANAGER.to_string()),
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
