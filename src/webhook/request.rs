//! The AdmissionReview as `serve` reads it: the request's fields, and the
//! outline of its two objects (metadata, the spec as raw JSON, the stored
//! versions), in one pass over the body. A CRD can be 1.5 MB; the raw spec
//! is what the verdict cache ([`super::cache`]) keys on, so the full parse
//! only happens on a miss, and then the objects are read again whole
//! ([`raw_objects`]). Reading the objects raw first and their outlines
//! after (twice: the requirements' check read them again) went over a
//! large review's body three times, most of a cache hit's time. An object
//! whose metadata is not of the API's types (an annotation that is not a
//! string) makes the whole body unreadable, a 400: the API server never
//! sends one. The answer uses kube-rs's `AdmissionResponse`.

use std::collections::BTreeMap;

use kube::core::admission::AdmissionResponse;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::decision::Operation;
use crate::crd::{Crd, CrdError};

/// The API group and version of every review `serve` answers.
pub const REVIEW_API_VERSION: &str = "admission.k8s.io/v1";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(borrow)]
    request: Option<Request<'a>>,
}

/// Who made the request.
#[derive(Debug, Default, Deserialize)]
pub struct UserInfo {
    /// The user's name.
    #[serde(default)]
    pub username: String,
    /// The groups the user is in (`webhook.breakGlassBy` may list some).
    #[serde(default)]
    pub groups: Vec<String>,
}

/// One admission request for a CRD, its objects' outlines borrowed from
/// the body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request<'a> {
    /// Copied into the answer.
    pub uid: String,
    /// The CRD's name.
    #[serde(default)]
    pub name: String,
    /// `CREATE`, `UPDATE`, `DELETE` (or `CONNECT`, never sent for CRDs).
    pub operation: String,
    /// The requester.
    #[serde(default)]
    pub user_info: UserInfo,
    /// Whether nothing will be stored (`--dry-run=server`).
    #[serde(default)]
    pub dry_run: bool,
    /// The new object (CREATE, UPDATE).
    #[serde(borrow, default)]
    pub object: Option<Outline<'a>>,
    /// The stored object (UPDATE, DELETE).
    #[serde(borrow, default)]
    pub old_object: Option<Outline<'a>>,
}

impl Request<'_> {
    /// The operation; CONNECT is treated as an update (it never reaches a
    /// webhook registered for CRDs).
    pub fn operation(&self) -> Operation {
        match self.operation.as_str() {
            "CREATE" => Operation::Create,
            "DELETE" => Operation::Delete,
            _ => Operation::Update,
        }
    }
}

/// The parts of a CRD read before deciding whether to judge it: what the
/// verdict depends on, as raw text, and the annotations.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outline<'a> {
    /// `CustomResourceDefinition`, or what was sent instead.
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    metadata: OutlineMeta,
    /// The spec, unparsed.
    #[serde(borrow, default)]
    pub spec: Option<&'a RawValue>,
    #[serde(borrow, default)]
    status: Option<OutlineStatus<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct OutlineMeta {
    #[serde(default)]
    name: String,
    #[serde(default)]
    uid: String,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// What a request's CRD says it is: compared with the CRD the API server
/// stores under the request's name before anything is read on its behalf.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct Claimed {
    /// `spec.group`.
    #[serde(default)]
    pub group: String,
    /// `spec.names.plural`.
    #[serde(default)]
    pub names: ClaimedNames,
}

/// `spec.names`, the part that says which resources a CRD serves.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub struct ClaimedNames {
    /// `spec.names.plural`.
    #[serde(default)]
    pub plural: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutlineStatus<'a> {
    #[serde(borrow, default)]
    stored_versions: Option<&'a RawValue>,
}

impl<'a> Outline<'a> {
    /// The annotations (values that are not strings are left out).
    pub fn annotations(&self) -> &BTreeMap<String, String> {
        &self.metadata.annotations
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.metadata.uid
    }

    /// `metadata.generation`, when present.
    pub fn generation(&self) -> Option<i64> {
        self.metadata.generation
    }

    /// The group and plural the spec claims; read only when the cluster is
    /// about to be read for this CRD (it walks the whole spec again).
    pub fn claimed(&self) -> Result<Claimed, String> {
        match self.spec {
            Some(spec) => {
                serde_json::from_str(spec.get()).map_err(|e| format!("unreadable spec: {e}"))
            }
            None => Ok(Claimed::default()),
        }
    }

    /// `status.storedVersions`, as raw text (empty when absent).
    pub fn stored_versions(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.stored_versions)
            .map_or("", |r| r.get())
    }
}

/// Reads a body: an `admission.k8s.io/v1` AdmissionReview with a request,
/// or why not.
pub fn parse(body: &[u8]) -> Result<Request<'_>, String> {
    let review: Review = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not an AdmissionReview: {e}"))?;
    if review.kind != "AdmissionReview" || review.api_version != REVIEW_API_VERSION {
        let or = |s: &str, none: &'static str| {
            if s.is_empty() {
                none.to_string()
            } else {
                s.to_string()
            }
        };
        return Err(format!(
            "expected an {REVIEW_API_VERSION} AdmissionReview, found {} {}",
            or(&review.api_version, "(no apiVersion)"),
            or(&review.kind, "(no kind)"),
        ));
    }
    review
        .request
        .ok_or_else(|| "the AdmissionReview carries no request".to_string())
}

#[derive(Deserialize)]
struct RawReview<'a> {
    #[serde(borrow)]
    request: Option<RawObjects<'a>>,
}

/// A request's two objects as raw JSON.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawObjects<'a> {
    /// The new object (CREATE, UPDATE).
    #[serde(borrow, default)]
    pub object: Option<&'a RawValue>,
    /// The stored object (UPDATE, DELETE).
    #[serde(borrow, default)]
    pub old_object: Option<&'a RawValue>,
}

/// The objects of a body [`parse`] read, whole and raw: for a review that
/// judges a pair, scans or reads a requirement, not for a cache hit.
pub fn raw_objects(body: &[u8]) -> Result<RawObjects<'_>, String> {
    let review: RawReview = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not an AdmissionReview: {e}"))?;
    Ok(review.request.unwrap_or_default())
}

/// An allowing answer to the request `uid`, for the caller to complete.
pub fn response(uid: &str) -> AdmissionResponse {
    // kube-rs builds answers from its typed request; without one, start
    // from `invalid` and make it an allowing answer to this uid.
    let mut r = AdmissionResponse::invalid("");
    r.uid = uid.to_string();
    r.allowed = true;
    r.result = Default::default();
    r
}

/// A request's CRD as the webhook keeps it: the models, and the document
/// without the schemas' JSON, which is never built (the schemas are read
/// straight into the models; see [`Crd::from_json`]).
pub fn read_crd(raw: Option<&[u8]>) -> Result<Crd, String> {
    let raw = raw.ok_or("the request carries no object")?;
    Crd::from_json(raw).map_err(|e| match e {
        CrdError::Unreadable(e) => format!("unreadable object: {e}"),
        e => format!("the CRD cannot be read: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_review_is_read_with_the_outlines_of_its_objects() {
        let body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
            "request":{"uid":"u","name":"w.example.com","operation":"DELETE",
            "userInfo":{"username":"alice","groups":["g"]},"dryRun":true,
            "object":null,"oldObject":{"kind":"CustomResourceDefinition","spec":{"a":1},
            "metadata":{"annotations":{"x":"y"}},"status":{"storedVersions":["v1"]}}}}"#;
        let r = parse(body).unwrap();
        assert_eq!(r.operation(), Operation::Delete);
        assert_eq!(r.user_info.username, "alice");
        assert_eq!(r.user_info.groups, ["g"]);
        assert!(r.dry_run && r.object.is_none());
        let outline = r.old_object.as_ref().unwrap();
        assert_eq!(outline.spec.map(|s| s.get()), Some(r#"{"a":1}"#));
        assert_eq!(outline.stored_versions(), r#"["v1"]"#);
        assert_eq!(outline.annotations()["x"], "y");
        // Read again whole, for a judgment.
        let raw = raw_objects(body).unwrap();
        assert!(raw.object.is_none());
        assert!(
            raw.old_object
                .unwrap()
                .get()
                .starts_with(r#"{"kind":"CustomResourceDefinition""#)
        );
    }

    #[test]
    fn an_object_that_is_not_one_makes_the_body_unreadable() {
        for object in [r#"5"#, r#"{"metadata":{"annotations":{"a":1}}}"#] {
            let body = format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
                "request":{{"uid":"u","operation":"CREATE","object":{object}}}}}"#
            );
            let why = parse(body.as_bytes()).map(|_| ()).unwrap_err();
            assert!(
                why.starts_with("the body is not an AdmissionReview"),
                "{why}"
            );
        }
    }

    #[test]
    fn the_answer_carries_the_uid_and_the_review_kind() {
        let v = serde_json::to_value(response("u1").into_review()).unwrap();
        assert_eq!(v["apiVersion"], REVIEW_API_VERSION);
        assert_eq!(v["kind"], "AdmissionReview");
        assert_eq!(v["response"]["uid"], "u1");
        assert_eq!(v["response"]["allowed"], true);
    }
}
