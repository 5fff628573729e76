//! Object metadata, as `ValidateObjectMeta` checks it for every object, and
//! the CRD's own name rule (`<plural>.<group>`), plus the API-approval
//! annotation the server requires for the protected `*.k8s.io` and
//! `*.kubernetes.io` groups.

use serde_json::Value;

use super::field::{FieldError, FieldPath};
use super::names;

/// The server caps all annotations of an object together.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// `metadata` of a cluster-scoped object whose name must be `plural.group`.
pub fn validate_metadata(manifest: &Value, plural: &str, group: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = FieldPath::new("metadata");
    let meta = manifest.get("metadata").and_then(Value::as_object);
    let get = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let (name, generate_name) = (get("name"), get("generateName"));
    if !generate_name.is_empty() {
        for msg in names::dns1123_subdomain(&mask_trailing_dash(generate_name)) {
            errs.push(FieldError::invalid(
                path.child("generateName"),
                Value::from(generate_name),
                msg,
            ));
        }
        // The CRD name rule applies to generateName too, so it never passes.
        errs.push(FieldError::invalid(
            path.child("generateName"),
            Value::from(generate_name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if name.is_empty() && generate_name.is_empty() {
        errs.push(FieldError::required(
            path.child("name"),
            "name or generateName is required",
        ));
    } else if !name.is_empty() {
        for msg in names::dns1123_subdomain(name) {
            errs.push(FieldError::invalid(
                path.child("name"),
                Value::from(name),
                msg,
            ));
        }
        if name != format!("{plural}.{group}") {
            errs.push(
                FieldError::invalid(
                    path.child("name"),
                    Value::from(name),
                    "must be spec.names.plural+\".\"+spec.group",
                )
                .with_fix("name the CRD <spec.names.plural>.<spec.group>"),
            );
        }
    }
    if !get("namespace").is_empty() {
        errs.push(FieldError::forbidden(
            path.child("namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(labels) = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        for (k, v) in labels {
            for msg in names::qualified_name(k) {
                errs.push(FieldError::invalid(
                    path.child("labels"),
                    Value::from(k.as_str()),
                    msg,
                ));
            }
            let value = v.as_str().unwrap_or("");
            for msg in names::label_value(value) {
                errs.push(
                    FieldError::invalid(path.child("labels"), Value::from(value), msg)
                        .with_fix("label values are at most 63 characters of [A-Za-z0-9-_.]; template text left unrendered (e.g. {{ .Chart.AppVersion }}) is not one"),
                );
            }
        }
    }
    if let Some(ann) = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
    {
        let mut total = 0usize;
        for (k, v) in ann {
            for msg in names::qualified_name(&k.to_lowercase()) {
                errs.push(FieldError::invalid(
                    path.child("annotations"),
                    Value::from(k.as_str()),
                    msg,
                ));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            errs.push(FieldError::too_long(
                path.child("annotations"),
                TOTAL_ANNOTATION_SIZE_LIMIT,
            ));
        }
    }
    errs
}

/// `generateName` is validated as a prefix: a trailing `-` is allowed.
fn mask_trailing_dash(s: &str) -> String {
    match s.strip_suffix('-') {
        Some(rest) if !rest.is_empty() => format!("{rest}a"),
        _ => s.to_string(),
    }
}

/// Groups under the Kubernetes project's review (`IsProtectedCommunityGroup`).
fn protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(PartialEq, Eq)]
enum Approval {
    Approved,
    Bypassed,
    Missing,
    Invalid,
}

fn approval_state(manifest: &Value) -> Approval {
    let Some(v) = manifest
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(APPROVAL_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Approval::Missing;
    };
    if v.starts_with("unapproved") {
        return Approval::Bypassed;
    }
    // Go's url.ParseRequestURI: an absolute URL or an absolute path.
    let looks_like_uri = v.starts_with('/')
        || v.split_once(':').is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        });
    if looks_like_uri && !v.contains(char::is_whitespace) {
        Approval::Approved
    } else {
        Approval::Invalid
    }
}

/// `validateAPIApproval`: protected groups need the approval annotation,
/// unless its state is unchanged from the stored CRD.
pub fn validate_api_approval(
    manifest: &Value,
    old: Option<&Value>,
    group: &str,
) -> Vec<FieldError> {
    if !protected_group(group) {
        return Vec::new();
    }
    let new = approval_state(manifest);
    if let Some(old) = old
        && approval_state(old) == new
    {
        return Vec::new();
    }
    let path = FieldPath::new("metadata")
        .child("annotations")
        .key(APPROVAL_ANNOTATION);
    let value = manifest
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(APPROVAL_ANNOTATION))
        .cloned()
        .unwrap_or(Value::Null);
    match new {
        Approval::Approved | Approval::Bypassed => Vec::new(),
        Approval::Missing => vec![FieldError::required(
            path,
            format!("protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )
        .with_fix("groups ending in k8s.io or kubernetes.io are reserved: use your own group, or add the annotation with the approving PR's URL")],
        Approval::Invalid => vec![FieldError::invalid(
            path,
            value,
            format!("protected groups must have approval annotation \"{APPROVAL_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
        )],
    }
}
