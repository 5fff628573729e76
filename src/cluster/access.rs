//! Whether a user may do something, as the API server's authorizer
//! answers it (a `SubjectAccessReview`): `serve` reads the cluster with
//! its own rights, and tells a requester what it read (which stored
//! objects exist, which fail a schema) only when the requester could
//! have read as much.

use kube::api::PostParams;
use serde_json::{Value, json};

use super::{ClusterError, Connection};

/// Who asks, as an admission review names them.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// `userInfo.username`.
    pub user: &'a str,
    /// `userInfo.groups`.
    pub groups: &'a [String],
}

impl Connection {
    /// Whether `subject` may list `resource` of `group` in every namespace.
    /// Creating the review stores nothing, so retrying it is safe.
    pub async fn may_list(
        &self,
        subject: Subject<'_>,
        group: &str,
        resource: &str,
    ) -> Result<bool, ClusterError> {
        let body = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": subject.user,
                "groups": subject.groups,
                "resourceAttributes": {"verb": "list", "group": group, "resource": resource},
            }
        });
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let request =
            kube::core::Request::new("/apis/authorization.k8s.io/v1/subjectaccessreviews")
                .create(&PostParams::default(), bytes)
                .map_err(|e| self.unbuildable(e))?;
        let answer: Value = self
            .call(
                &format!("SubjectAccessReview list {resource}.{group}"),
                request,
            )
            .await
            .map_err(|f| self.classify_failed(f))?;
        Ok(answer["status"]["allowed"].as_bool() == Some(true))
    }
}
