//! `crdSize`: whether the CRD fits the delivery path that will carry it.
//!
//! Client-side apply (`kubectl apply` without `--server-side`, and Argo CD's
//! default sync) stores the whole object as JSON in the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation, and the
//! API server refuses annotations above 262,144 bytes in total
//! (`TotalAnnotationSizeLimitB` in apimachinery's validation): the apply
//! fails with `metadata.annotations: Too long`. Whatever the apply, the API
//! server refuses a request body above 3 MiB (`MaxRequestBodyBytes` in its
//! server config), and etcd refuses to store a request above its
//! `--max-request-bytes`, 1.5 MiB by default; the CRD is stored as
//! protobuf, smaller than its JSON, with its managed fields on top, so
//! between 1.5 and 3 MiB of JSON only the cluster can tell.

use serde_json::Value;

use crate::compare::{Check, Finding, Severity};
use crate::crd::Crd;

/// apimachinery's `TotalAnnotationSizeLimitB`: keys and values together.
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;
/// etcd's default `--max-request-bytes`.
pub const ETCD_LIMIT: usize = 1536 * 1024;
/// kube-apiserver's `MaxRequestBodyBytes`.
pub const REQUEST_LIMIT: usize = 3 * 1024 * 1024;

/// The annotation client-side apply keeps the applied object in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The annotations a client-side apply of `manifest` leaves: every one it
/// has, plus the last-applied one holding the object's JSON (without that
/// annotation, and with the newline Go's encoder ends it with).
fn annotations_after_client_side_apply(manifest: &Value, json_len: usize) -> usize {
    let mut others = 0;
    let mut own = 0;
    if let Some(map) = manifest["metadata"]["annotations"].as_object() {
        for (k, v) in map {
            let len = k.len() + v.as_str().map_or(0, str::len);
            if k == LAST_APPLIED {
                // Escaped inside the object's JSON, it counts once more.
                own = serde_json::to_string(v).map_or(0, |s| s.len()) + k.len() + 3;
            } else {
                others += len;
            }
        }
    }
    others + LAST_APPLIED.len() + json_len.saturating_sub(own) + 1
}

/// Whether a live CRD was last applied client-side.
pub fn applied_client_side(live: &Crd) -> bool {
    live.manifest["metadata"]["annotations"][LAST_APPLIED].is_string()
}

/// The findings of a CRD's size; `live_client_side` when the cluster's CRD
/// carries the last-applied annotation (so its pipeline applies
/// client-side).
pub fn findings(crd: &Crd, live_client_side: bool) -> Vec<Finding> {
    let json = crd.json_len();
    let mut out = Vec::new();
    if json > REQUEST_LIMIT {
        out.push(Finding::new(
            Check::CrdSize,
            Severity::Error,
            format!(
                "the CRD is {json} bytes of JSON: the API server refuses a request body above \
                 {REQUEST_LIMIT} bytes (3 MiB), so no apply can send it. Make it smaller: drop \
                 descriptions (controller-gen `crd:maxDescLen=0`) or split large embedded schemas"
            ),
        ));
        return out;
    }
    if json > ETCD_LIMIT {
        out.push(Finding::new(
            Check::CrdSize,
            Severity::Warning,
            format!(
                "the CRD is {json} bytes of JSON: above etcd's default request limit \
                 ({ETCD_LIMIT} bytes, 1.5 MiB) once stored with its managed fields, a cluster \
                 with the default may refuse it (`etcdserver: request is too large`). Try it on \
                 a cluster like the target one (`kubectl crd-safety apply-check`), or make it \
                 smaller"
            ),
        ));
    }
    let annotations = annotations_after_client_side_apply(&crd.manifest, json);
    if annotations > ANNOTATIONS_LIMIT {
        let live = if live_client_side {
            " The CRD in the cluster carries that annotation: its pipeline applies client-side, \
             and its next apply fails."
        } else {
            ""
        };
        out.push(Finding::new(
            Check::CrdSize,
            Severity::Warning,
            format!(
                "client-side apply of this CRD fails: `kubectl apply` without `--server-side` and \
                 Argo CD without `ServerSideApply=true` store the whole object in the \
                 `{LAST_APPLIED}` annotation, {annotations} bytes of annotations where the API \
                 server allows {ANNOTATIONS_LIMIT} (`metadata.annotations: Too long`).{live} \
                 Apply it server-side (`kubectl apply --server-side`, Argo CD \
                 `ServerSideApply=true`, `kubectl crd-safety apply`)"
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(description_bytes: usize, annotations: Value) -> Crd {
        let manifest = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com", "annotations": annotations},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                    "openAPIV3Schema": {"type": "object", "description": "d".repeat(description_bytes)}
                }}]
            }
        });
        Crd::from_manifest(manifest).expect("a CRD")
    }

    fn severities(c: &Crd, live: bool) -> Vec<Severity> {
        findings(c, live).iter().map(|f| f.severity).collect()
    }

    #[test]
    fn each_limit_is_crossed_where_the_server_draws_it() {
        // The JSON around the description is a few hundred bytes.
        assert_eq!(severities(&crd(200_000, json!({})), false), []);
        assert_eq!(
            severities(&crd(262_144, json!({})), false),
            [Severity::Warning]
        );
        assert_eq!(
            severities(&crd(2_000_000, json!({})), false),
            [Severity::Warning, Severity::Warning]
        );
        assert_eq!(
            severities(&crd(3_200_000, json!({})), false),
            [Severity::Error]
        );
    }

    #[test]
    fn the_annotations_count_with_the_object_they_are_added_to() {
        let just_under = 262_144 - 1_000;
        assert_eq!(severities(&crd(just_under, json!({})), false), []);
        let more = json!({"example.com/notes": "n".repeat(2_000)});
        let found = findings(&crd(just_under, more), true);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].message.contains("carries that annotation"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn the_counted_length_is_the_length_of_the_json_the_api_server_receives() {
        let c = crd(100, json!({"a": "quote \" tab \t é ✓"}));
        let written = serde_json::to_vec(&c.manifest).map(|b| b.len());
        assert_eq!(
            Ok(crate::json::written_len(&c.manifest)),
            written.map_err(|e| e.to_string())
        );
    }
}
