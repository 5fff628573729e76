//! `apiextensions.k8s.io/v1beta1` → `v1`, the way the API server converts it.
//!
//! v1beta1 kept `validation`, `subresources` and `additionalPrinterColumns`
//! at the top of the spec (shared by every version), allowed a single
//! `version` instead of `versions`, spelled a printer column's path
//! `JSONPath`, put webhook settings directly under `conversion`, and defaulted
//! `preserveUnknownFields` to true. Comparing a v1beta1 manifest with a v1 one
//! only makes sense once both say the same thing the same way.

use serde_json::{Map, Value, json};

/// Returns the document in `apiextensions.k8s.io/v1` form; v1 documents are
/// returned unchanged.
pub fn normalize_to_v1(mut doc: Value) -> Value {
    if doc.get("apiVersion").and_then(Value::as_str) != Some("apiextensions.k8s.io/v1beta1") {
        return doc;
    }
    doc["apiVersion"] = json!("apiextensions.k8s.io/v1");
    let Some(spec) = doc.get_mut("spec").and_then(Value::as_object_mut) else {
        return doc;
    };
    let shared_schema = spec
        .remove("validation")
        .and_then(|v| v.get("openAPIV3Schema").cloned());
    let shared_subresources = spec.remove("subresources");
    let shared_columns = spec.remove("additionalPrinterColumns");
    let single_version = spec.remove("version");

    let mut versions = match spec.remove("versions") {
        Some(Value::Array(v)) if !v.is_empty() => v,
        _ => match &single_version {
            Some(Value::String(name)) => {
                vec![json!({"name": name, "served": true, "storage": true})]
            }
            _ => Vec::new(),
        },
    };
    for v in &mut versions {
        let Some(v) = v.as_object_mut() else { continue };
        if !v.contains_key("schema") {
            // A v1beta1 CRD without validation accepted anything; v1 says
            // that explicitly.
            let schema = shared_schema.clone().unwrap_or_else(
                || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            );
            v.insert("schema".into(), json!({ "openAPIV3Schema": schema }));
        }
        if !v.contains_key("subresources")
            && let Some(s) = &shared_subresources
        {
            v.insert("subresources".into(), s.clone());
        }
        if !v.contains_key("additionalPrinterColumns")
            && let Some(c) = &shared_columns
        {
            v.insert("additionalPrinterColumns".into(), c.clone());
        }
        if let Some(Value::Array(cols)) = v.get_mut("additionalPrinterColumns") {
            for col in cols.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(path) = col.remove("JSONPath") {
                    col.insert("jsonPath".into(), path);
                }
            }
        }
    }
    spec.insert("versions".into(), Value::Array(versions));

    if !spec.contains_key("preserveUnknownFields") {
        spec.insert("preserveUnknownFields".into(), json!(true));
    }
    if let Some(Value::Object(conv)) = spec.get_mut("conversion") {
        let client = conv.remove("webhookClientConfig");
        let review = conv.remove("conversionReviewVersions");
        if conv.get("strategy").and_then(Value::as_str) == Some("Webhook") {
            let mut webhook = Map::new();
            if let Some(c) = client {
                webhook.insert("clientConfig".into(), c);
            }
            webhook.insert(
                "conversionReviewVersions".into(),
                review.unwrap_or_else(|| json!(["v1beta1"])),
            );
            conv.insert("webhook".into(), Value::Object(webhook));
        }
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1beta1_crd_reads_as_v1() {
        let old = json!({
            "apiVersion": "apiextensions.k8s.io/v1beta1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "version": "v1alpha1", "scope": "Namespaced",
                "names": {"kind": "Widget", "plural": "widgets"},
                "validation": {"openAPIV3Schema": {"type": "object"}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Age", "type": "date", "JSONPath": ".metadata.creationTimestamp"}],
                "conversion": {"strategy": "Webhook", "webhookClientConfig": {"url": "https://x"}}
            }
        });
        let new = normalize_to_v1(old);
        assert_eq!(new["apiVersion"], "apiextensions.k8s.io/v1");
        let v = &new["spec"]["versions"][0];
        assert_eq!(v["name"], "v1alpha1");
        assert_eq!(v["storage"], true);
        assert_eq!(v["schema"]["openAPIV3Schema"], json!({"type": "object"}));
        assert_eq!(v["subresources"], json!({"status": {}}));
        assert_eq!(
            v["additionalPrinterColumns"][0]["jsonPath"],
            ".metadata.creationTimestamp"
        );
        assert_eq!(new["spec"]["preserveUnknownFields"], true);
        assert_eq!(
            new["spec"]["conversion"]["webhook"]["clientConfig"]["url"],
            "https://x"
        );
        assert!(new["spec"].get("validation").is_none());
    }
}
