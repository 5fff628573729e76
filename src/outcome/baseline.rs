//! What a baseline records of a finding: its entry and its fingerprint.
//! The report shows stale entries and puts fingerprints into SARIF;
//! [`crate::baseline`] reads, writes and matches them.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::compare::Finding;

/// One accepted finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BaselineEntry {
    /// 16 hex digits; see [`fingerprint`].
    pub fingerprint: String,
    /// `metadata.name` of the CRD.
    pub crd: String,
    /// The check id.
    pub check: String,
    /// The finding's version, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The finding's path, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The message when it was recorded (for reviewers; not matched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The fingerprint of a finding of CRD `crd`: FNV-1a (64 bit) over the
/// canonical JSON (keys sorted) of `[crd, version, path, check, old, new]`
/// (and the requirement's name, for a requirement's finding), as 16 hex
/// digits. Stable across runs, platforms and key order.
pub fn fingerprint(crd: &str, f: &Finding) -> String {
    let mut value = serde_json::json!([
        crd,
        f.version,
        f.path,
        f.check.id(),
        f.old.clone().unwrap_or(Value::Null),
        f.new.clone().unwrap_or(Value::Null),
    ]);
    // A requirement's finding is its own entry, apart from the same change
    // judged against OLD; findings of no requirement keep their old prints.
    if let (Some(r), Value::Array(items)) = (&f.requirement, &mut value) {
        items.push(Value::String(r.name.clone()));
    }
    let mut text = String::new();
    canonical(&value, &mut text);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// JSON with object keys sorted, so that key order in a manifest does not
/// change a fingerprint.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}
