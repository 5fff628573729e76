//! The AdmissionReview as `serve` reads it: the request's fields, and the
//! outline of its two objects (metadata, the spec as raw JSON, the stored
//! versions, where the object lies in the body), in one pass over the
//! body. A CRD can be 1.5 MB; the raw spec is what the verdict cache
//! ([`super::cache`]) keys on, so the objects are parsed whole only on a
//! miss, from their place in the body ([`Outline::raw_in`]), never by
//! reading the body again. Reading the objects raw first and their
//! outlines after (twice: the requirements' check read them again) went
//! over a large review's body three times, most of a cache hit's time. An object
//! whose metadata is not of the API's types (an annotation that is not a
//! string) makes the whole body unreadable, a 400: the API server never
//! sends one. The answer uses kube-rs's `AdmissionResponse`.
//!
//! Nothing here grows with the body beyond the body itself: the strings
//! are bounded (a name as long as a CRD's, a uid as long as a uid), the
//! annotations are measured as the API server measures them (at most
//! 256 KiB of keys and values) and only the break-glass ones are kept, and
//! the requester's groups are kept up to a count and a size. Before, a
//! body of groups or annotations took many times its size to read,
//! outside any budget (figures: docs/BENCHMARKS.md, "After the
//! hostile-input bounds (2026-12-02)").

use super::error::ReviewError;
use std::collections::BTreeMap;

use hyper::body::Bytes;
use kube::core::admission::AdmissionResponse;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::decision::{
    ACCEPT_ANNOTATION, ACCEPT_GENERATION_ANNOTATION, ACCEPT_REASON_ANNOTATION, Operation,
    SKIP_LABEL,
};
use crate::crd::{Crd, CrdError};
use crate::delivery::size::LAST_APPLIED;

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
    #[serde(default, deserialize_with = "bounded::<USERNAME_MAX, _>")]
    pub username: String,
    /// The groups the user is in (`webhook.breakGlassBy` may list some),
    /// the first [`GROUPS_MAX`] of them.
    #[serde(default)]
    pub groups: Groups,
}

/// The longest username read; the API server's authenticators give a few
/// hundred bytes at most (`system:serviceaccount:<ns>:<name>`).
const USERNAME_MAX: usize = 4096;
/// The longest uid read (the API server's are UUIDs, 36 bytes).
const UID_MAX: usize = 128;
/// The longest name read: a CRD's name is a DNS subdomain.
const NAME_MAX: usize = 253;
/// Groups kept of a requester, and the bytes they may take together.
/// Groups only widen what a requester may do here (`breakGlassBy`), so
/// dropping the rest never lets anything through that would be refused.
pub const GROUPS_MAX: usize = 1024;
const GROUPS_BYTES_MAX: usize = 64 * 1024;
/// What the API server allows of one object's annotations, keys and
/// values together (`metadata.annotations: Too long`).
pub const ANNOTATIONS_BYTES_MAX: usize = 256 * 1024;

/// A requester's groups as read: the first [`GROUPS_MAX`] (within
/// [`GROUPS_BYTES_MAX`]), and how many more the request listed.
#[derive(Debug, Default, Clone)]
pub struct Groups {
    /// The groups kept, in the request's order.
    pub kept: Vec<String>,
    /// Groups left out.
    pub dropped: usize,
}

impl std::ops::Deref for Groups {
    type Target = [String];
    fn deref(&self) -> &[String] {
        &self.kept
    }
}

impl<'de> Deserialize<'de> for Groups {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Groups, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Groups;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of group names")
            }
            fn visit_unit<E>(self) -> Result<Groups, E> {
                Ok(Groups::default())
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Groups, A::Error> {
                let mut groups = Groups::default();
                let mut bytes = 0;
                while let Some(group) = seq.next_element::<Measured<'de>>()? {
                    let fits =
                        groups.kept.len() < GROUPS_MAX && bytes + group.len() <= GROUPS_BYTES_MAX;
                    match group {
                        Measured::Text(g) if fits => {
                            bytes += g.len();
                            groups.kept.push(g.into_owned());
                        }
                        _ => groups.dropped += 1,
                    }
                }
                Ok(groups)
            }
        }
        d.deserialize_any(Visit)
    }
}

/// A string read without keeping it unless it is short: the text when it
/// is at most [`Measured::KEEP`] bytes, else only its length.
enum Measured<'a> {
    Text(std::borrow::Cow<'a, str>),
    Long(usize),
}

impl Measured<'_> {
    /// Longer strings are measured, not copied.
    const KEEP: usize = 4096;

    fn len(&self) -> usize {
        match self {
            Measured::Text(t) => t.len(),
            Measured::Long(n) => *n,
        }
    }
}

impl<'de> Deserialize<'de> for Measured<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Measured<'de>, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Measured<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Measured<'de>, E> {
                Ok(if v.len() <= Measured::KEEP {
                    Measured::Text(v.into())
                } else {
                    Measured::Long(v.len())
                })
            }
            fn visit_str<E>(self, v: &str) -> Result<Measured<'de>, E> {
                Ok(if v.len() <= Measured::KEEP {
                    Measured::Text(v.to_owned().into())
                } else {
                    Measured::Long(v.len())
                })
            }
        }
        d.deserialize_str(Visit)
    }
}

/// A string of at most `N` bytes; a longer one makes the body unreadable
/// (the API server sends none), and is refused before it is copied.
fn bounded<'de, const N: usize, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Measured::deserialize(d)? {
        Measured::Text(t) if t.len() <= N => Ok(t.into_owned()),
        long => Err(serde::de::Error::custom(format_args!(
            "a string of {} bytes where at most {N} are read",
            long.len()
        ))),
    }
}

/// The annotations of a request's object as the webhook reads them: the
/// raw text (what the verdict cache keys on), the break-glass annotations
/// (what the decision reads), and whether the object was applied
/// client-side. The engine reads the whole object again for a judgment,
/// under the memory budget.
#[derive(Debug, Default, Clone)]
pub struct Annotations<'a> {
    /// The annotations' JSON as sent (empty when absent).
    pub raw: &'a str,
    /// The break-glass annotations ([`ACCEPT_ANNOTATION`] and the two
    /// beside it), when present.
    pub kept: BTreeMap<String, String>,
    /// Whether `kubectl.kubernetes.io/last-applied-configuration` is set.
    pub applied_client_side: bool,
}

impl<'de: 'a, 'a> Deserialize<'de> for Annotations<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Annotations<'a>, D::Error> {
        use serde::de::Error;
        let raw: Option<&'de RawValue> = Option::deserialize(d)?;
        let Some(raw) = raw else {
            return Ok(Annotations::default());
        };
        let mut read: Annotations<'a> = serde_json::from_str::<AnnotationEntries>(raw.get())
            .map_err(D::Error::custom)?
            .0;
        read.raw = raw.get();
        Ok(read)
    }
}

/// The entries of `metadata.annotations`, measured and filtered.
struct AnnotationEntries(Annotations<'static>);

impl<'de> Deserialize<'de> for AnnotationEntries {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<AnnotationEntries, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = AnnotationEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_unit<E>(self) -> Result<AnnotationEntries, E> {
                Ok(AnnotationEntries(Annotations::default()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<AnnotationEntries, A::Error> {
                let mut read = Annotations::default();
                let mut bytes = 0usize;
                while let Some(key) = map.next_key::<Measured<'de>>()? {
                    let value = map.next_value::<Measured<'de>>()?;
                    bytes += key.len() + value.len();
                    if bytes > ANNOTATIONS_BYTES_MAX {
                        return Err(serde::de::Error::custom(format_args!(
                            "metadata.annotations: Too long: must have at most \
                             {ANNOTATIONS_BYTES_MAX} bytes (the API server stores no such object)"
                        )));
                    }
                    let Measured::Text(key) = key else { continue };
                    if key == LAST_APPLIED {
                        read.applied_client_side = true;
                    } else if [
                        ACCEPT_ANNOTATION,
                        ACCEPT_REASON_ANNOTATION,
                        ACCEPT_GENERATION_ANNOTATION,
                    ]
                    .contains(&key.as_ref())
                        && let Measured::Text(value) = value
                    {
                        read.kept.insert(key.into_owned(), value.into_owned());
                    }
                }
                Ok(AnnotationEntries(read))
            }
        }
        d.deserialize_any(Visit)
    }
}

/// One admission request for a CRD, its objects' outlines borrowed from
/// the body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request<'a> {
    /// Copied into the answer.
    #[serde(deserialize_with = "bounded::<UID_MAX, _>")]
    pub uid: String,
    /// The CRD's name.
    #[serde(default, deserialize_with = "bounded::<NAME_MAX, _>")]
    pub name: String,
    /// `CREATE`, `UPDATE`, `DELETE` (or `CONNECT`, never sent for CRDs).
    #[serde(deserialize_with = "bounded::<16, _>")]
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
    /// webhook registered for CRDs, and [`Request::inconsistency`] refuses
    /// it).
    pub fn operation(&self) -> Operation {
        match self.operation.as_str() {
            "CREATE" => Operation::Create,
            "DELETE" => Operation::Delete,
            _ => Operation::Update,
        }
    }

    /// Why this request cannot have come from the API server, if it
    /// cannot: its objects do not fit its operation, one of them is not
    /// the object the request names, or the two are not one object (other
    /// uids). The API server always sends the object named by the
    /// request, with the stored one on UPDATE and DELETE; a body that
    /// does not is forged, and judging it would judge something else
    /// than the change it claims to be (its verdict, cached under the
    /// request's name, then decided a genuine change of that CRD).
    pub fn inconsistency(&self) -> Option<String> {
        let (new, old) = (self.object.as_ref(), self.old_object.as_ref());
        let shape = match (self.operation.as_str(), new.is_some(), old.is_some()) {
            ("CREATE", true, false) | ("UPDATE", true, true) | ("DELETE", false, true) => None,
            ("CREATE", ..) => Some("a CREATE carries an object and no oldObject"),
            ("UPDATE", ..) => Some("an UPDATE carries both object and oldObject"),
            ("DELETE", ..) => Some("a DELETE carries an oldObject and no object"),
            _ => Some("only CREATE, UPDATE and DELETE are reviewed"),
        };
        if let Some(why) = shape {
            return Some(format!(
                "the request is not one the API server sends: {why} (operation {:?})",
                self.operation
            ));
        }
        for (field, o) in [("object", new), ("oldObject", old)] {
            if let Some(o) = o
                && o.name() != self.name
            {
                return Some(format!(
                    "the request names {:?}, but its {field} is {:?}",
                    self.name,
                    o.name()
                ));
            }
        }
        if let (Some(n), Some(o)) = (new, old)
            && !n.uid().is_empty()
            && !o.uid().is_empty()
            && n.uid() != o.uid()
        {
            return Some(format!(
                "object and oldObject are not the same object (uids {:?} and {:?})",
                n.uid(),
                o.uid()
            ));
        }
        None
    }
}

/// The parts of a CRD read before deciding whether to judge it: what the
/// verdict depends on, as raw text, and the annotations. Read in one pass
/// over the object, every top-level value borrowed from the body, so the
/// object's length (what `crdSize` measures) comes without a second pass.
#[derive(Debug, Default)]
pub struct Outline<'a> {
    /// `apiextensions.k8s.io/v1`, or what was sent instead.
    pub api_version: Option<&'a str>,
    /// `CustomResourceDefinition`, or what was sent instead.
    pub kind: Option<&'a str>,
    metadata: OutlineMeta<'a>,
    /// The spec, unparsed.
    pub spec: Option<&'a RawValue>,
    status: Option<OutlineStatus<'a>>,
    /// The object's JSON length with its values as sent and nothing
    /// between them: the API server sends compact JSON, so its length.
    len: usize,
    /// The first key and the last value, as borrowed from the body: the
    /// object lies between them, so its text is found in the body without
    /// a second pass ([`Outline::raw_in`]).
    span: Option<(&'a str, &'a str)>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Outline<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Outline<'a>, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Outline<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Outline<'de>, A::Error> {
                use serde::de::Error;
                let mut outline = Outline::default();
                let mut seen: Vec<&'de str> = Vec::new();
                // `{` and `}`, and a comma between entries.
                outline.len = 2;
                while let Some(key) = map.next_key::<&'de str>()? {
                    if seen.contains(&key) {
                        return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                    }
                    seen.push(key);
                    let raw: &'de RawValue = map.next_value()?;
                    let text = raw.get();
                    let first = outline.span.map_or(key, |(first, _)| first);
                    outline.span = Some((first, text));
                    // `"key":value`, and its comma.
                    outline.len += key.len() + 3 + text.len() + usize::from(seen.len() > 1);
                    let read = |what| A::Error::custom(format_args!("{what}: {text:.80}"));
                    match key {
                        "apiVersion" => {
                            outline.api_version =
                                serde_json::from_str(text).map_err(|_| read("apiVersion"))?;
                        }
                        "kind" => {
                            outline.kind = serde_json::from_str(text).map_err(|_| read("kind"))?;
                        }
                        "metadata" => {
                            outline.metadata =
                                serde_json::from_str(text).map_err(A::Error::custom)?;
                        }
                        "spec" => outline.spec = Some(raw),
                        "status" => {
                            outline.status =
                                serde_json::from_str(text).map_err(A::Error::custom)?;
                        }
                        _ => {}
                    }
                }
                Ok(outline)
            }
        }
        d.deserialize_map(Visit)
    }
}

#[derive(Debug, Default, Deserialize)]
struct OutlineMeta<'a> {
    #[serde(default, deserialize_with = "bounded::<NAME_MAX, _>")]
    name: String,
    #[serde(default, deserialize_with = "bounded::<UID_MAX, _>")]
    uid: String,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(borrow, default)]
    annotations: Annotations<'a>,
    #[serde(default)]
    labels: Labels,
}

/// Of an object's labels, whether it carries [`SKIP_LABEL`]; nothing is
/// kept of the others.
#[derive(Debug, Default)]
struct Labels {
    skip: bool,
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Labels, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Labels;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_unit<E>(self) -> Result<Labels, E> {
                Ok(Labels::default())
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Labels, A::Error> {
                let mut labels = Labels::default();
                while let Some(key) = map.next_key::<Measured<'de>>()? {
                    map.next_value::<Measured<'de>>()?;
                    labels.skip |= matches!(&key, Measured::Text(k) if k == SKIP_LABEL);
                }
                Ok(labels)
            }
        }
        d.deserialize_any(Visit)
    }
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
    /// The break-glass annotations: all the decision reads.
    pub fn annotations(&self) -> &BTreeMap<String, String> {
        &self.metadata.annotations.kept
    }

    /// The annotations' JSON as sent, for the verdict cache's key.
    pub fn annotations_raw(&self) -> &'a str {
        self.metadata.annotations.raw
    }

    /// Whether the object carries the label [`SKIP_LABEL`].
    pub fn skip_label(&self) -> bool {
        self.metadata.labels.skip
    }

    /// Whether the object carries `last-applied-configuration`.
    pub fn applied_client_side(&self) -> bool {
        self.metadata.annotations.applied_client_side
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
    pub fn claimed(&self) -> Result<Claimed, ReviewError> {
        match self.spec {
            Some(spec) => serde_json::from_str(spec.get())
                .map_err(|e| ReviewError::unreadable(format!("unreadable spec: {e}"))),
            None => Ok(Claimed::default()),
        }
    }

    /// The object's compact JSON length, as sent.
    pub fn json_len(&self) -> usize {
        self.len
    }

    /// `status.storedVersions`, as raw text (empty when absent).
    pub fn stored_versions(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.stored_versions)
            .map_or("", |r| r.get())
    }

    /// The whole object's text as it lies in `body`, the body [`parse`]
    /// read this outline from: from the `{` before its first key to the
    /// `}` after its last value, shared, not copied. `None` when this
    /// outline was not read from `body`.
    pub fn raw_in(&self, body: &Bytes) -> Option<Bytes> {
        let Some((first, last)) = self.span else {
            // No key at all: the object is `{}`, whitespace aside.
            return Some(Bytes::from_static(b"{}"));
        };
        let base = body.as_ptr() as usize;
        let start = (first.as_ptr() as usize).checked_sub(base)?;
        let end = (last.as_ptr() as usize)
            .checked_sub(base)?
            .checked_add(last.len())?;
        if start > end || end > body.len() {
            return None;
        }
        let json_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
        // Back over the first key's quote and the space before it.
        let quote = start.checked_sub(1)?;
        if body[quote] != b'"' {
            return None;
        }
        let open = body[..quote].iter().rposition(|b| !json_space(b))?;
        let close = end + body[end..].iter().position(|b| !json_space(b))?;
        (body[open] == b'{' && body[close] == b'}').then(|| body.slice(open..=close))
    }
}

/// Reads a body: an `admission.k8s.io/v1` AdmissionReview with a request,
/// or why not.
pub fn parse(body: &[u8]) -> Result<Request<'_>, ReviewError> {
    let review: Review = serde_json::from_slice(body)
        .map_err(|e| ReviewError::unreadable(format!("the body is not an AdmissionReview: {e}")))?;
    if review.kind != "AdmissionReview" || review.api_version != REVIEW_API_VERSION {
        let or = |s: &str, none: &'static str| {
            if s.is_empty() {
                none.to_string()
            } else {
                s.to_string()
            }
        };
        return Err(ReviewError::unreadable(format!(
            "expected an {REVIEW_API_VERSION} AdmissionReview, found {} {}",
            or(&review.api_version, "(no apiVersion)"),
            or(&review.kind, "(no kind)"),
        )));
    }
    review
        .request
        .ok_or_else(|| ReviewError::unreadable("the AdmissionReview carries no request"))
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

/// A request's CRD as the webhook keeps it: the models, and the
/// document without the schemas' JSON, which is never built (the schemas
/// are read straight into the models; see [`Crd::from_json`]). Of its
/// metadata only the name and annotations stay, of its status the stored
/// versions, and its JSON length is `json_len` (the outline's, as sent):
/// the verdict cache ([`super::cache::Key`]) keys on those, so a judgment
/// cannot depend on anything it does not key on.
pub fn read_crd(raw: &[u8], json_len: usize) -> Result<Crd, ReviewError> {
    Crd::from_json(raw)
        .map(|crd| {
            crd.keeping_metadata(&["name", "annotations"])
                .with_json_len(json_len)
        })
        .map_err(|e| {
            ReviewError::unreadable(match e {
                CrdError::Unreadable(e) => format!("unreadable object: {e}"),
                e => format!("the CRD cannot be read: {e}"),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::super::error::Kind;
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
        assert_eq!(r.user_info.groups.kept, ["g"]);
        assert!(r.dry_run && r.object.is_none());
        let outline = r.old_object.as_ref().unwrap();
        assert_eq!(outline.spec.map(|s| s.get()), Some(r#"{"a":1}"#));
        assert_eq!(outline.stored_versions(), r#"["v1"]"#);
        assert_eq!(outline.annotations_raw(), r#"{"x":"y"}"#);
        assert!(
            outline.annotations().is_empty(),
            "only break-glass ones are kept"
        );
    }

    /// A judgment reads an object whole from where its outline says it
    /// lies in the body: the same bytes, shared, whatever the space
    /// around and inside it, and no second pass over the body.
    #[test]
    fn an_object_is_found_whole_in_the_body_it_was_read_from() {
        for object in [
            r#"{"kind":"CustomResourceDefinition","metadata":{"name":"w.example.com"},"spec":{"a":[1,2]}}"#,
            "{ \"kind\" : \"CustomResourceDefinition\" ,\n\t\"spec\":{ \"a\": 1 }\r\n}",
            r#"{"spec":"}"}"#,
        ] {
            let body = Bytes::from(review_with(&format!(
                r#"{{"uid":"u","name":"w.example.com","operation":"DELETE","oldObject":  {object}  }}"#
            )));
            let r = parse(&body).unwrap();
            let raw = r.old_object.as_ref().unwrap().raw_in(&body).unwrap();
            assert_eq!(std::str::from_utf8(&raw).unwrap(), object);
            assert!(
                body.as_ptr_range().contains(&raw.as_ptr()),
                "shared, not copied"
            );
            // Not the body it was read from: not found in it.
            let other = Bytes::from(body.to_vec());
            assert_eq!(r.old_object.as_ref().unwrap().raw_in(&other), None);
        }
        let body = Bytes::from(review_with(
            r#"{"uid":"u","operation":"CREATE","object":{ }}"#,
        ));
        let r = parse(&body).unwrap();
        assert_eq!(
            r.object.as_ref().unwrap().raw_in(&body).as_deref(),
            Some(&b"{}"[..])
        );
    }

    fn review_with(request: &str) -> String {
        format!(
            r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{request}}}"#
        )
    }

    /// A body's size does not decide what reading it takes: a requester's
    /// groups are kept up to a count and a size, annotations are measured
    /// as the API server limits them and only the break-glass ones kept.
    /// Before, groups or annotations took many times their size to read
    /// (figures: docs/BENCHMARKS.md, "After the hostile-input bounds
    /// (2026-12-02)").
    #[test]
    fn groups_and_annotations_are_read_within_bounds() {
        let groups: Vec<String> = (0..50_000).map(|i| format!("\"g{i}\"")).collect();
        let body = review_with(&format!(
            r#"{{"uid":"u","name":"w.example.com","operation":"DELETE",
                "userInfo":{{"username":"mallory","groups":[{}]}},
                "oldObject":{{"kind":"CustomResourceDefinition","metadata":{{"name":"w.example.com"}}}}}}"#,
            groups.join(",")
        ));
        let r = parse(body.as_bytes()).unwrap();
        assert_eq!(r.user_info.groups.kept.len(), GROUPS_MAX);
        assert_eq!(r.user_info.groups.dropped, 50_000 - GROUPS_MAX);
        assert_eq!(r.user_info.groups.kept[0], "g0");

        let annotations = |entries: usize, value: usize| {
            let mut a: Vec<String> = (0..entries)
                .map(|i| format!(r#""k{i}":"{}""#, "v".repeat(value)))
                .collect();
            a.push(format!(r#""{ACCEPT_ANNOTATION}":"enum""#));
            a.push(format!(r#""{LAST_APPLIED}":"{{}}""#));
            review_with(&format!(
                r#"{{"uid":"u","name":"w.example.com","operation":"DELETE",
                    "oldObject":{{"kind":"CustomResourceDefinition",
                    "metadata":{{"name":"w.example.com","annotations":{{{}}}}}}}}}"#,
                a.join(",")
            ))
        };
        // Within the API server's 256 KiB: the break-glass one is kept.
        let body = annotations(1_000, 100);
        let r = parse(body.as_bytes()).unwrap();
        let old = r.old_object.as_ref().unwrap();
        assert_eq!(old.annotations().len(), 1);
        assert_eq!(old.annotations()[ACCEPT_ANNOTATION], "enum");
        assert!(old.applied_client_side());
        assert!(old.annotations_raw().starts_with(r#"{"k0":"#));
        // Past it: no object the API server stores, so no review it sends.
        let why = parse(annotations(100_000, 60).as_bytes())
            .map(|_| ())
            .unwrap_err();
        assert_eq!(why.kind, Kind::Unreadable);
        let why = why.to_string();
        assert!(why.contains("metadata.annotations: Too long"), "{why}");
        // A uid or a name longer than any real one is refused unread.
        let long = review_with(&format!(
            r#"{{"uid":"{}","operation":"CREATE"}}"#,
            "u".repeat(1 << 20)
        ));
        let why = parse(long.as_bytes()).map(|_| ()).unwrap_err();
        assert_eq!(why.kind, Kind::Unreadable);
        let why = why.to_string();
        assert!(why.contains("where at most 128 are read"), "{why}");
    }

    #[test]
    fn a_request_whose_objects_are_not_the_object_it_names_is_inconsistent() {
        let request = |op: &str, old: Option<(&str, &str)>, new: Option<(&str, &str)>| {
            let object = |o: Option<(&str, &str)>| match o {
                Some((name, uid)) => format!(
                    r#"{{"kind":"CustomResourceDefinition","metadata":{{"name":"{name}","uid":"{uid}"}}}}"#
                ),
                None => "null".to_string(),
            };
            review_with(&format!(
                r#"{{"uid":"u","name":"w.example.com","operation":"{op}","object":{},"oldObject":{}}}"#,
                object(new),
                object(old)
            ))
        };
        let w = Some(("w.example.com", "1"));
        let cases = [
            (request("UPDATE", w, w), None),
            (request("CREATE", None, w), None),
            (request("DELETE", w, None), None),
            (
                request("UPDATE", Some(("decoy.example.com", "1")), w),
                Some("its oldObject is \"decoy.example.com\""),
            ),
            (
                request("UPDATE", w, Some(("decoy.example.com", "1"))),
                Some("its object is \"decoy.example.com\""),
            ),
            (
                request("UPDATE", w, Some(("w.example.com", "2"))),
                Some("not the same object"),
            ),
            (request("UPDATE", None, w), Some("an UPDATE carries both")),
            (
                request("CREATE", w, w),
                Some("a CREATE carries an object and no oldObject"),
            ),
            (
                request("DELETE", w, w),
                Some("a DELETE carries an oldObject"),
            ),
            (
                request("CONNECT", None, w),
                Some("only CREATE, UPDATE and DELETE"),
            ),
        ];
        for (body, want) in cases {
            let r = parse(body.as_bytes()).unwrap();
            let got = r.inconsistency();
            match want {
                None => assert_eq!(got, None, "{body}"),
                Some(want) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(want)),
                    "{body}: {got:?}"
                ),
            }
        }
    }

    /// `crdSize` measures the object the API server sent: its outline
    /// says how long it is, in the same pass, so a cache hit needs no
    /// second pass over the body to key on it.
    #[test]
    fn the_outline_measures_its_object_as_sent() {
        for object in [
            r#"{"kind":"CustomResourceDefinition","metadata":{"name":"w.example.com"},"spec":{"a":[1,2]},"status":{"storedVersions":["v1"]}}"#,
            r#"{"spec":{}}"#,
            r#"{}"#,
        ] {
            let body = review_with(&format!(
                r#"{{"uid":"u","name":"w.example.com","operation":"CREATE","object":{object}}}"#
            ));
            let r = parse(body.as_bytes()).unwrap();
            assert_eq!(
                r.object.as_ref().unwrap().json_len(),
                object.len(),
                "{object}"
            );
        }
        let twice =
            review_with(r#"{"uid":"u","operation":"CREATE","object":{"spec":{},"spec":{"a":1}}}"#);
        let why = parse(twice.as_bytes()).map(|_| ()).unwrap_err();
        assert_eq!(why.kind, Kind::Unreadable);
        let why = why.to_string();
        assert!(why.contains("duplicate field `spec`"), "{why}");
    }

    #[test]
    fn an_object_that_is_not_one_makes_the_body_unreadable() {
        for object in [r#"5"#, r#"{"metadata":{"annotations":{"a":1}}}"#] {
            let body = format!(
                r#"{{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview",
                "request":{{"uid":"u","operation":"CREATE","object":{object}}}}}"#
            );
            let why = parse(body.as_bytes()).map(|_| ()).unwrap_err();
            assert_eq!(why.kind, Kind::Unreadable);
            let why = why.to_string();
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
