//! Phrases shared by the checks' messages, so that the same consequence is
//! always explained the same way.

/// What happens to stored objects a tightened rule rejects; reads after a
/// subject such as "objects outside the new bound".
pub const TIGHTENED: &str = "cannot be created again as they are (GitOps re-sync, restore) and are rejected \
by updates that touch the field; updates that leave it unchanged still succeed on Kubernetes 1.30+ (validation \
ratcheting), not before";

/// The safe route for a tightened rule.
pub const TIGHTENED_FIX: &str = "check the stored objects first (apply-check --objects)";

/// What happens to stored objects that break a uniqueness rule of a list
/// type (duplicates in a set, repeated keys in a map); reads after a subject
/// such as "lists with duplicate entries". The API server checks list types
/// on an update only when the stored object passed them, so an object that
/// already breaks one can be updated in any way, more duplicates included;
/// the same on every version (its `ValidateUpdate` and status update).
pub const LIST_TYPE_WRITES: &str = "cannot be created again (GitOps re-sync, restore); updates of a stored object \
that already holds them still succeed, even those that change the list (the server checks list types on update \
only if the stored object passed them)";

/// What a CEL rule that errors on a stored value does; the error is not a
/// `false` the server can ratchet, so no update of the object gets through
/// (apiextensions-apiserver appends evaluation errors unconditionally).
pub const EVALUATION_ERRORS: &str = "if it cannot evaluate a stored value (an unparsable duration(), a missing \
key), every write fails, unchanged updates included (evaluation errors are never ratcheted)";

/// Why pruning is silent data loss.
pub const PRUNED: &str = "the API server prunes fields its schema does not describe: the data disappears from \
reads at once and from storage on the object's next write (any controller status update is enough)";

/// Renders a list of JSON values compactly.
pub fn list(values: &[&serde_json::Value]) -> String {
    let parts: Vec<String> = values.iter().map(|v| crate::json::short(v, 40)).collect();
    format!("[{}]", parts.join(", "))
}
