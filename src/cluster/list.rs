//! Paginated LIST of custom resources at one version, page by page, so a
//! scan holds one page in memory however many objects there are.

use kube::api::ListParams;
use serde::Deserialize;
use serde_json::Value;

use super::{ClusterError, Connection, ResourceRef};

/// One page of a LIST.
#[derive(Debug, Default, Deserialize)]
pub struct Page {
    /// The objects, as JSON.
    #[serde(default)]
    pub items: Vec<Value>,
    /// List metadata.
    #[serde(default)]
    pub metadata: PageMeta,
}

/// The part of `ListMeta` paging needs.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageMeta {
    /// Token for the next page; absent or empty on the last one.
    #[serde(rename = "continue", default)]
    pub continue_token: Option<String>,
    /// The server's estimate of objects after this page.
    #[serde(default)]
    pub remaining_item_count: Option<i64>,
}

impl Page {
    /// The token for the next page, if there is one.
    pub fn next(&self) -> Option<&str> {
        self.metadata
            .continue_token
            .as_deref()
            .filter(|t| !t.is_empty())
    }
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// 410 Gone: the continue token expired (etcd compacted past it) and the
    /// listing has to start over.
    #[error("the list continuation expired (410 Gone)")]
    Expired,
    /// Anything else.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

impl Connection {
    /// Reads one page of `resource`: at most `limit` objects after `token`.
    pub async fn list_page(
        &self,
        resource: &ResourceRef,
        limit: u32,
        token: Option<&str>,
    ) -> Result<Page, ListError> {
        let path = resource.path(resource.namespace.as_deref());
        let mut params = ListParams::default().limit(limit);
        if let Some(t) = token {
            params = params.continue_token(t);
        }
        let request = kube::core::Request::new(path)
            .list(&params)
            .map_err(|e| self.unbuildable(e))?;
        let what = format!(
            "LIST {}/{} {}",
            resource.group, resource.version, resource.plural
        );
        match self.call::<Page>(&what, request).await {
            Ok(page) => Ok(page),
            Err(f) if f.code() == Some(410) => Err(ListError::Expired),
            Err(f) => Err(ListError::Cluster(self.classify_failed(f))),
        }
    }

    /// Every object of `resource`, page by page; `None` when the API
    /// server does not serve it (404: its CRD is not installed), which
    /// callers treat as "none" rather than as a failure. A continuation that
    /// expires mid-way starts the listing over once.
    pub async fn list_all(
        &self,
        resource: &ResourceRef,
    ) -> Result<Option<Vec<Value>>, ClusterError> {
        let mut items = Vec::new();
        let mut token: Option<String> = None;
        let mut restarted = false;
        loop {
            match self.list_page(resource, 500, token.as_deref()).await {
                Ok(page) => {
                    token = page.next().map(str::to_string);
                    items.extend(page.items);
                    if token.is_none() {
                        return Ok(Some(items));
                    }
                }
                Err(ListError::Expired) if !restarted => {
                    restarted = true;
                    items.clear();
                    token = None;
                }
                Err(ListError::Expired) => {
                    return Err(ClusterError::Other {
                        server: self.server.clone(),
                        detail: "the list continuation expired twice (410 Gone)".into(),
                    });
                }
                Err(ListError::Cluster(ClusterError::Api { code: 404, .. })) => return Ok(None),
                Err(ListError::Cluster(e)) => return Err(e),
            }
        }
    }

    /// The server's minor version (`33` for 1.33), which decides whether
    /// validation ratcheting applies. `+` suffixes of vendors are ignored.
    pub async fn server_minor(&self) -> Result<u32, ClusterError> {
        Ok(self.server_version().await?.minor)
    }

    /// The server's `/version`: its minor version and the exact version
    /// string (`v1.34.4`), which reports show.
    pub async fn server_version(&self) -> Result<ServerVersion, ClusterError> {
        let request = http::Request::get("/version")
            .body(Vec::new())
            .map_err(|e| ClusterError::Other {
                server: self.server.clone(),
                detail: e.to_string(),
            })?;
        let info: k8s_openapi::apimachinery::pkg::version::Info = self
            .call("GET /version", request)
            .await
            .map_err(|f| self.classify_failed(f))?;
        let digits: String = info
            .minor
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let minor = digits.parse().map_err(|_| ClusterError::Other {
            server: self.server.clone(),
            detail: format!("unexpected server minor version {:?}", info.minor),
        })?;
        Ok(ServerVersion {
            minor,
            git_version: info.git_version,
        })
    }
}

/// What the API server says of its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVersion {
    /// 1.x.
    pub minor: u32,
    /// `v1.34.4`, as `kubectl version` shows it.
    pub git_version: String,
}

impl Connection {
    /// One object of `resource` (in `resource.namespace`) by name, or
    /// `None` when there is none (404: no such object, or its CRD is not
    /// installed).
    pub async fn get_object(
        &self,
        resource: &ResourceRef,
        name: &str,
    ) -> Result<Option<Value>, ClusterError> {
        let path = format!("{}/{name}", resource.path(resource.namespace.as_deref()));
        let request =
            http::Request::get(path)
                .body(Vec::new())
                .map_err(|e| ClusterError::Other {
                    server: self.server.clone(),
                    detail: e.to_string(),
                })?;
        let what = format!(
            "GET {}/{} {} {name}",
            resource.group, resource.version, resource.plural
        );
        match self.call::<Value>(&what, request).await {
            Ok(object) => Ok(Some(object)),
            Err(f) if f.code() == Some(404) => Ok(None),
            Err(f) => Err(self.classify_failed(f)),
        }
    }
}
