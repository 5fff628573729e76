//! Phrases shared by the checks' messages, so that the same consequence is
//! always explained the same way.

/// Why tightening a value rule matters, and what ratcheting does about it.
pub const TIGHTENED: &str = "existing objects that break the new rule cannot be created again as they are \
(GitOps re-sync, backup restore), and updates that touch the field are rejected; on Kubernetes 1.30+ \
(validation ratcheting) updates that leave the field unchanged still succeed, before 1.30 every update fails";

/// The safe route for a tightened rule.
pub const TIGHTENED_FIX: &str =
    "check the stored objects first (apply-check --objects) or introduce the rule in a new version";

/// Why a constraint under allOf/anyOf/oneOf/not is worse than a plain one.
pub const NOT_RATCHETED: &str = "errors under allOf/anyOf/oneOf/not are never ratcheted, so every update of an \
object that fails it is rejected, even one that leaves the field alone";

/// Why pruning is silent data loss.
pub const PRUNED: &str = "the API server prunes fields its schema does not describe: the data disappears from \
reads at once and from storage on the object's next write (any controller status update is enough)";

/// Renders a list of JSON values compactly.
pub fn list(values: &[&serde_json::Value]) -> String {
    let parts: Vec<String> = values.iter().map(|v| crate::json::short(v, 40)).collect();
    format!("[{}]", parts.join(", "))
}
