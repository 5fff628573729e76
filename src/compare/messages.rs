//! Phrases shared by the checks' messages, so that the same consequence is
//! always explained the same way.

/// What happens to stored objects a tightened rule rejects; reads after a
/// subject such as "objects outside the new bound".
pub const TIGHTENED: &str = "cannot be created again as they are (GitOps re-sync, restore) and are rejected \
by updates that touch the field; updates that leave it unchanged still succeed on Kubernetes 1.30+ (validation \
ratcheting), not before";

/// The safe route for a tightened rule.
pub const TIGHTENED_FIX: &str = "check the stored objects first (apply-check --objects)";

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
