//! The reads behind a conversion webhook's readiness: its Service, the
//! Service's EndpointSlices, the Secret that holds its serving certificate
//! (found through cert-manager's Certificate), the first stored object of a
//! CRD, and one `ConversionReview` sent to the webhook through the API
//! server's service proxy.
//!
//! A user who may apply CRDs may still not read Services or Secrets, so a
//! 403 here is an answer ([`Read::Forbidden`]), not a failure of the run:
//! the caller says what it could not check.

use std::time::Duration;

use kube::api::ListParams;
use serde::Deserialize;
use serde_json::Value;

use super::{ClusterError, Connection, ResourceRef, RetryPolicy, request};

/// What a read found.
#[derive(Debug, Clone, PartialEq)]
pub enum Read<T> {
    /// The object (or objects).
    Found(T),
    /// 404: there is none.
    Missing,
    /// 403: the user may not read it (the server's message).
    Forbidden(String),
}

/// A Secret's `tls.crt`, and nothing else of it: the private key in the
/// same Secret is skipped while the answer is read, never kept.
#[derive(Deserialize)]
struct TlsSecret {
    #[serde(default)]
    data: TlsData,
}

#[derive(Default, Deserialize)]
struct TlsData {
    #[serde(rename = "tls.crt", default)]
    tls_crt: Option<String>,
}

/// A cert-manager Certificate's `spec.secretName`.
#[derive(Deserialize)]
struct Certificate {
    #[serde(default)]
    spec: CertificateSpec,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CertificateSpec {
    #[serde(default)]
    secret_name: Option<String>,
}

/// A LIST's items.
#[derive(Deserialize)]
struct Items {
    #[serde(default)]
    items: Vec<Value>,
}

impl Connection {
    /// GETs (or LISTs) `path` as `T`; 404 and 403 are answers.
    async fn read<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        path: &str,
        query: Option<&ListParams>,
    ) -> Result<Read<T>, ClusterError> {
        let request = match query {
            Some(params) => kube::core::Request::new(path)
                .list(params)
                .map_err(|e| self.unbuildable(e))?,
            None => http::Request::get(path)
                .body(Vec::new())
                .map_err(|e| self.other(e))?,
        };
        match self.call::<T>(what, request).await {
            Ok(found) => Ok(Read::Found(found)),
            Err(f) if f.code() == Some(404) => Ok(Read::Missing),
            Err(f) if f.code() == Some(403) => Ok(Read::Forbidden(f.message())),
            Err(f) => Err(self.classify_failed(f)),
        }
    }

    /// The Service `namespace/name`, as JSON.
    pub async fn service(&self, namespace: &str, name: &str) -> Result<Read<Value>, ClusterError> {
        let path = format!("/api/v1/namespaces/{namespace}/services/{name}");
        self.read(&format!("GET service {namespace}/{name}"), &path, None)
            .await
    }

    /// The EndpointSlices of Service `namespace/name`: those labelled
    /// `kubernetes.io/service-name` with its name, made by the controller or
    /// by hand.
    pub async fn endpoint_slices(
        &self,
        namespace: &str,
        service: &str,
    ) -> Result<Read<Vec<Value>>, ClusterError> {
        let path = format!("/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices");
        let params = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
        let read: Read<Items> = self
            .read(
                &format!("LIST endpointslices of {namespace}/{service}"),
                &path,
                Some(&params),
            )
            .await?;
        Ok(match read {
            Read::Found(list) => Read::Found(list.items),
            Read::Missing => Read::Found(Vec::new()),
            Read::Forbidden(m) => Read::Forbidden(m),
        })
    }

    /// The `tls.crt` of Secret `namespace/name`, base64 as stored (`None`
    /// when the Secret has none).
    pub async fn secret_certificate(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Read<Option<String>>, ClusterError> {
        let path = format!("/api/v1/namespaces/{namespace}/secrets/{name}");
        let read: Read<TlsSecret> = self
            .read(&format!("GET secret {namespace}/{name}"), &path, None)
            .await?;
        Ok(map(read, |s| s.data.tls_crt))
    }

    /// The `spec.secretName` of cert-manager Certificate `namespace/name`;
    /// [`Read::Missing`] too when cert-manager is not installed.
    pub async fn certificate_secret_name(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Read<Option<String>>, ClusterError> {
        let path = format!("/apis/cert-manager.io/v1/namespaces/{namespace}/certificates/{name}");
        let read: Read<Certificate> = self
            .read(&format!("GET certificate {namespace}/{name}"), &path, None)
            .await?;
        Ok(map(read, |c| c.spec.secret_name))
    }

    /// The first object of `resource` (a LIST with a limit of 1), `None`
    /// when there is none.
    pub async fn first_object(
        &self,
        resource: &ResourceRef,
    ) -> Result<Read<Option<Value>>, ClusterError> {
        let path = resource.path(None);
        let params = ListParams::default().limit(1);
        let what = format!(
            "LIST {}/{} {} (limit 1)",
            resource.group, resource.version, resource.plural
        );
        let read: Read<Items> = self.read(&what, &path, Some(&params)).await?;
        Ok(map(read, |list| list.items.into_iter().next()))
    }

    /// Sends `review` to the webhook behind Service `namespace/name` on
    /// `port` (HTTPS) at `path`, through the API server's service proxy, and
    /// returns its answer. Tried once: a webhook that fails is what the
    /// user asked to learn, and a retry would only hide it.
    pub async fn conversion_review(
        &self,
        namespace: &str,
        name: &str,
        port: i32,
        path: &str,
        review: &Value,
    ) -> Result<Review, ClusterError> {
        let target = format!(
            "/api/v1/namespaces/{namespace}/services/https:{name}:{port}/proxy/{}",
            path.trim_start_matches('/')
        );
        let body = serde_json::to_vec(review).map_err(|e| self.other(e))?;
        let request = http::Request::post(target)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(body)
            .map_err(|e| self.other(e))?;
        let once = self.clone().with_retry_policy(RetryPolicy {
            attempts: 1,
            backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            max_wait: Duration::ZERO,
        });
        let what = format!("POST ConversionReview to service {namespace}/{name}:{port}");
        match once.call::<Value>(&what, request).await {
            Ok(answer) => Ok(Review::Answer(answer)),
            Err(f) if f.code() == Some(403) && !answered_by_webhook(&f) => {
                Ok(Review::Forbidden(f.message()))
            }
            Err(f) => match f.code() {
                Some(code) => Ok(Review::Failed(format!("{code}: {}", f.message()))),
                None if matches!(f.error, kube::Error::SerdeError(_)) => Ok(Review::Failed(
                    format!("the answer is not JSON: {}", f.message()),
                )),
                None => Err(self.classify_failed(f)),
            },
        }
    }

    /// An error building a request (a bug, not a cluster problem).
    fn other(&self, e: impl std::fmt::Display) -> ClusterError {
        ClusterError::Other {
            server: self.server.clone(),
            detail: e.to_string(),
        }
    }
}

/// What became of a `ConversionReview` sent through the service proxy.
#[derive(Debug, Clone, PartialEq)]
pub enum Review {
    /// The webhook's answer, as JSON (not yet checked).
    Answer(Value),
    /// The proxy or the webhook answered with an error status (the code
    /// and message).
    Failed(String),
    /// The user may not use the service proxy (403 of RBAC).
    Forbidden(String),
}

/// Whether a 403 came from the webhook behind the proxy rather than from
/// the API server's RBAC, whose message names the user and the verb.
fn answered_by_webhook(f: &request::Failed) -> bool {
    !f.message()
        .contains("cannot create resource \"services/proxy\"")
}

fn map<T, U>(read: Read<T>, f: impl FnOnce(T) -> U) -> Read<U> {
    match read {
        Read::Found(t) => Read::Found(f(t)),
        Read::Missing => Read::Missing,
        Read::Forbidden(m) => Read::Forbidden(m),
    }
}
