//! `spec.conversion`: the strategy, and for `Webhook` a client config and
//! the ConversionReview versions the webhook understands. Paths use the
//! server's internal names (`webhookClientConfig`, `conversionReviewVersions`
//! directly under `conversion`), because that is what its errors print.

use serde_json::Value;

use super::field::{FieldError, FieldPath};
use super::names;

/// The ConversionReview versions the server can send.
const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// `validateCustomResourceConversion` (plus the preserveUnknownFields rule
/// the spec check applies to webhooks).
pub fn validate_conversion(
    conversion: Option<&Value>,
    preserve_unknown_fields: bool,
    require_recognized_review_version: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = FieldPath::new("spec").child("conversion");
    let Some(c) = conversion.and_then(Value::as_object) else {
        return errs;
    };
    let strategy = c.get("strategy").and_then(Value::as_str).unwrap_or("");
    if strategy != "None" && preserve_unknown_fields {
        errs.push(FieldError::invalid(
            path.child("strategy"),
            Value::from(strategy),
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    match strategy {
        "" => errs.push(FieldError::required(path.child("strategy"), "")),
        "None" | "Webhook" => {}
        other => errs.push(FieldError::not_supported(
            path.child("strategy"),
            Value::from(other),
            &["None", "Webhook"],
        )),
    }
    let webhook = c.get("webhook").and_then(Value::as_object);
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .filter(|v| !v.is_null());
    let review_versions: Vec<&str> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if strategy == "Webhook" {
        let cc_path = path.child("webhookClientConfig");
        match client_config.and_then(Value::as_object) {
            None => errs.push(
                FieldError::required(cc_path, "required when strategy is set to Webhook")
                    .with_fix("add spec.conversion.webhook.clientConfig with a service or a url"),
            ),
            Some(cc) => {
                let url = cc.get("url").and_then(Value::as_str);
                let service = cc.get("service").and_then(Value::as_object);
                match (url, service) {
                    (Some(_), Some(_)) | (None, None) => errs.push(FieldError::required(
                        cc_path,
                        "exactly one of url or service is required",
                    )),
                    (Some(u), None) => errs.extend(webhook_url(u, &cc_path.child("url"))),
                    (None, Some(s)) => errs.extend(webhook_service(s, &cc_path.child("service"))),
                }
            }
        }
        errs.extend(review_version_errors(
            &review_versions,
            require_recognized_review_version,
            &path.child("conversionReviewVersions"),
        ));
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                path.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn review_version_errors(
    versions: &[&str],
    require_recognized: bool,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if versions.is_empty() {
        errs.push(
            FieldError::required(path.clone(), "")
                .with_fix("list the ConversionReview versions the webhook understands, e.g. [v1]"),
        );
        return errs;
    }
    let mut seen = std::collections::HashSet::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        if !seen.insert(*v) {
            errs.push(FieldError::invalid(
                path.index(i),
                Value::from(*v),
                "duplicate version",
            ));
            continue;
        }
        for msg in names::dns1035_label(v) {
            errs.push(FieldError::invalid(path.index(i), Value::from(*v), msg));
        }
        accepted |= ACCEPTED_REVIEW_VERSIONS.contains(v);
    }
    if require_recognized && !accepted {
        errs.push(FieldError::invalid(
            path.clone(),
            Value::from(versions.to_vec()),
            format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// `webhook.ValidateWebhookURL` with https required.
fn webhook_url(url: &str, path: &FieldPath) -> Vec<FieldError> {
    const FORM: &str = "; desired format: https://host[/path]";
    let mut errs = Vec::new();
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path.clone(),
            Value::from(scheme),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = before_query.split('/').next().unwrap_or("");
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path.clone(),
            Value::from(host),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        errs.push(FieldError::invalid(
            path.clone(),
            Value::from(u),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path.clone(),
            Value::from(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path.clone(),
            Value::from(query),
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// `webhook.ValidateWebhookService` (the port defaults to 443).
fn webhook_service(s: &serde_json::Map<String, Value>, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let get = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("");
    if get("name").is_empty() {
        errs.push(FieldError::required(
            path.child("name"),
            "service name is required",
        ));
    }
    if get("namespace").is_empty() {
        errs.push(FieldError::required(
            path.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = s.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            path.child("port"),
            Value::from(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(url_path) = s.get("path").and_then(Value::as_str) else {
        return errs;
    };
    if url_path.is_empty() || url_path == "/" {
        return errs;
    }
    let p = path.child("path");
    if url_path == "//" {
        errs.push(FieldError::invalid(
            p.clone(),
            Value::from(url_path),
            "segment[0] may not be empty",
        ));
    }
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(
            p.clone(),
            Value::from(url_path),
            "must start with a '/'",
        ));
    }
    let trimmed = url_path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                p.clone(),
                Value::from(url_path),
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for msg in names::dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                p.clone(),
                Value::from(url_path),
                format!("segment[{i}]: {msg}"),
            ));
        }
    }
    errs
}
