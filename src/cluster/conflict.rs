//! The field-manager conflicts a plain server-side apply would meet, read
//! from what a forced apply moved.
//!
//! A forced dry-run apply takes every conflicting field from its other
//! owners: in the answer's `managedFields`, each other manager has lost
//! exactly the fields that conflicted (structured-merge-diff removes the
//! conflict set from their sets and drops a manager left with nothing).
//! So one forced dry run tells both what the server would store and what
//! an unforced apply would have refused with, and the refusal's message
//! is composed here as the API server composes it
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/conflict.go`:
//! one conflict, `Apply failed with 1 conflict: conflict with "m": .p`;
//! more, grouped by manager in the order of their identifiers).
//!
//! Where the answer cannot be read that surely (the live CRD has no
//! `managedFields`, which the server fills in on the first apply; it
//! moved on since it was read; a path holds list keys or set values,
//! whose order and printing this does not reproduce), [`conflicts`] says
//! so and the caller asks the server with a plain dry run.

use serde_json::Value;

/// What a plain apply would have met, when the forced one's answer says
/// it for certain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflicts {
    /// No other manager loses a field: the plain apply succeeds.
    None,
    /// It is refused with this message (the API server's words).
    Refused(String),
}

/// Reads the conflicts from the live CRD and the forced dry run's answer,
/// for the applying field manager `applier`. `None` when only the server
/// can say.
pub fn conflicts(live: &Value, forced: &Value, applier: &str) -> Option<Conflicts> {
    let version = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string)
    };
    if version(live)? != version(forced)? {
        return None;
    }
    let before = live["metadata"]["managedFields"].as_array()?;
    if before.is_empty() {
        return None;
    }
    let after = forced["metadata"]["managedFields"].as_array()?;
    let mut lost: Vec<(String, String, Vec<Path>)> = Vec::new();
    for entry in before {
        let id = Identity::of(entry)?;
        if id.manager == applier && id.operation == "Apply" && id.subresource.is_empty() {
            continue;
        }
        let fields = |e: &Value| e.get("fieldsV1").cloned().unwrap_or(Value::Null);
        let now = after.iter().find(|e| Identity::of(e).as_ref() == Some(&id));
        // A set the apply left alone (the status's, with its list keys)
        // lost nothing, whatever it holds.
        if now.is_some_and(|e| fields(e) == fields(entry)) {
            continue;
        }
        let had = paths(&fields(entry))?;
        let kept = match now {
            Some(e) => paths(&fields(e))?,
            None => Vec::new(),
        };
        let mut gone: Vec<Path> = had.into_iter().filter(|p| !kept.contains(p)).collect();
        if !gone.is_empty() {
            gone.sort_by(iteration_order);
            lost.push((id.encoded(), id.printed(), gone));
        }
    }
    if lost.is_empty() {
        return Some(Conflicts::None);
    }
    let count: usize = lost.iter().map(|(_, _, p)| p.len()).sum();
    if count == 1 {
        let (_, manager, paths) = &lost[0];
        return Some(Conflicts::Refused(format!(
            "Apply failed with 1 conflict: conflict with {manager}: {}",
            shown(&paths[0])
        )));
    }
    lost.sort_by(|a, b| a.0.cmp(&b.0));
    let mut lines = Vec::new();
    for (_, manager, paths) in &lost {
        lines.push(format!("conflicts with {manager}:"));
        lines.extend(paths.iter().map(|p| format!("- {}", shown(p))));
    }
    Some(Conflicts::Refused(format!(
        "Apply failed with {count} conflicts: {}",
        lines.join("\n")
    )))
}

/// A manager as the field manager keys it: name, operation, subresource,
/// and the API version for an `Update` (an applier keeps one identity
/// across versions).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    manager: String,
    operation: String,
    api_version: String,
    subresource: String,
}

impl Identity {
    fn of(entry: &Value) -> Option<Identity> {
        let s = |k: &str| {
            entry
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let operation = s("operation");
        if operation != "Apply" && operation != "Update" {
            return None;
        }
        Some(Identity {
            manager: s("manager"),
            api_version: if operation == "Update" {
                s("apiVersion")
            } else {
                String::new()
            },
            operation,
            subresource: s("subresource"),
        })
    }

    /// The identifier the server sorts managers by: the entry as JSON in
    /// the Go struct's field order, empty fields left out.
    fn encoded(&self) -> String {
        let mut out = serde_json::Map::new();
        for (k, v) in [
            ("manager", &self.manager),
            ("operation", &self.operation),
            ("apiVersion", &self.api_version),
            ("subresource", &self.subresource),
        ] {
            if !v.is_empty() {
                out.insert(k.to_string(), Value::String(v.clone()));
            }
        }
        Value::Object(out).to_string()
    }

    /// `"name"`, `with subresource "status"`, and `using v` for an update.
    fn printed(&self) -> String {
        let mut out = go_quoted(&self.manager);
        if !self.subresource.is_empty() {
            out.push_str(&format!(
                " with subresource {}",
                go_quoted(&self.subresource)
            ));
        }
        if self.operation == "Update" {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// One step of a managed-fields path: a field name or a list index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(u64),
}

type Path = Vec<Step>;

/// The members of a `fieldsV1` set, each as its path; `None` for list keys
/// and set values.
fn paths(fields: &Value) -> Option<Vec<Path>> {
    let mut out = Vec::new();
    if !fields.is_null() {
        walk(fields, &mut Vec::new(), &mut out)?;
    }
    Some(out)
}

fn walk(node: &Value, at: &mut Path, out: &mut Vec<Path>) -> Option<()> {
    let map = node.as_object()?;
    for (key, child) in map {
        if key == "." {
            if !at.is_empty() {
                out.push(at.clone());
            }
            continue;
        }
        let step = if let Some(name) = key.strip_prefix("f:") {
            Step::Field(name.to_string())
        } else if let Some(i) = key.strip_prefix("i:") {
            Step::Index(i.parse().ok()?)
        } else {
            return None;
        };
        at.push(step);
        match child.as_object() {
            Some(c) if c.is_empty() => out.push(at.clone()),
            Some(_) => walk(child, at, out)?,
            None => return None,
        }
        at.pop();
    }
    Some(())
}

/// structured-merge-diff's order of a set's paths: a set lists its own
/// members (sorted) before its children's, field names before indices.
fn iteration_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let k = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a_ends, b_ends) = (a.len() <= k + 1, b.len() <= k + 1);
    match (a.get(k), b.get(k)) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => match (a_ends, b_ends) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            _ => step_order(x, y),
        },
    }
}

fn step_order(a: &Step, b: &Step) -> std::cmp::Ordering {
    match (a, b) {
        (Step::Field(x), Step::Field(y)) => x.cmp(y),
        (Step::Index(x), Step::Index(y)) => x.cmp(y),
        (Step::Field(_), Step::Index(_)) => std::cmp::Ordering::Less,
        (Step::Index(_), Step::Field(_)) => std::cmp::Ordering::Greater,
    }
}

/// `.spec.versions`, `.spec.x[0]`, as `fieldpath.Path.String` prints it.
fn shown(path: &Path) -> String {
    path.iter()
        .map(|s| match s {
            Step::Field(n) => format!(".{n}"),
            Step::Index(i) => format!("[{i}]"),
        })
        .collect()
}

/// Go's `%q` of a string: JSON's quoting, which agrees with it on the
/// printable ASCII a manager name holds; anything else is escaped by
/// JSON where Go would keep it, so such names fall back to the server.
fn go_quoted(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(rv: &str, managed: Value) -> Value {
        json!({"metadata": {"resourceVersion": rv, "managedFields": managed}})
    }

    fn entry(manager: &str, operation: &str, fields: Value) -> Value {
        json!({"manager": manager, "operation": operation, "apiVersion": "apiextensions.k8s.io/v1",
            "fieldsType": "FieldsV1", "fieldsV1": fields})
    }

    #[test]
    fn one_field_taken_from_one_manager_is_the_servers_one_conflict() {
        let live = crd(
            "7",
            json!([
                entry(
                    "kubectl",
                    "Apply",
                    json!({"f:spec": {"f:versions": {}, "f:group": {}}})
                ),
                entry("crd-safety", "Apply", json!({"f:spec": {"f:group": {}}}))
            ]),
        );
        let forced = crd(
            "7",
            json!([
                entry("kubectl", "Apply", json!({"f:spec": {"f:group": {}}})),
                entry(
                    "crd-safety",
                    "Apply",
                    json!({"f:spec": {"f:group": {}, "f:versions": {}}})
                )
            ]),
        );
        assert_eq!(
            conflicts(&live, &forced, "crd-safety"),
            Some(Conflicts::Refused(
                "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.versions"
                    .to_string()
            ))
        );
    }

    #[test]
    fn several_conflicts_are_grouped_by_manager_in_the_servers_order() {
        let live = crd(
            "7",
            json!([
                entry(
                    "kubectl-edit",
                    "Update",
                    json!({"f:metadata": {"f:labels": {"f:a": {}}},
                "f:spec": {"f:names": {"f:categories": {}}}})
                ),
                entry(
                    "helm",
                    "Apply",
                    json!({"f:spec": {"f:versions": {}, "f:conversion": {".": {}, "f:strategy": {}}}})
                )
            ]),
        );
        let forced = crd(
            "7",
            json!([entry("crd-safety", "Apply", json!({"f:spec": {}}))]),
        );
        let Some(Conflicts::Refused(message)) = conflicts(&live, &forced, "crd-safety") else {
            panic!("conflicts expected");
        };
        assert_eq!(
            message,
            "Apply failed with 5 conflicts: conflicts with \"helm\":\n- .spec.conversion\n- .spec.versions\n\
- .spec.conversion.strategy\nconflicts with \"kubectl-edit\" using apiextensions.k8s.io/v1:\n\
- .metadata.labels.a\n- .spec.names.categories"
        );
    }

    #[test]
    fn a_set_the_apply_left_alone_is_not_read() {
        let status = json!({"manager": "kube-apiserver", "operation": "Update", "subresource": "status",
            "apiVersion": "apiextensions.k8s.io/v1",
            "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Established\"}": {".": {}}}}}});
        let live = crd(
            "7",
            json!([
                entry("kubectl", "Apply", json!({"f:spec": {"f:versions": {}}})),
                status.clone()
            ]),
        );
        let forced = crd("7", json!([status]));
        assert_eq!(
            conflicts(&live, &forced, "crd-safety"),
            Some(Conflicts::Refused(
                "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.versions"
                    .to_string()
            ))
        );
    }

    #[test]
    fn what_the_answer_cannot_say_for_certain_goes_to_the_server() {
        let managed = json!([entry(
            "kubectl",
            "Apply",
            json!({"f:spec": {"f:versions": {}}})
        )]);
        // The CRD moved on since it was read.
        assert_eq!(
            conflicts(&crd("7", managed.clone()), &crd("8", managed.clone()), "me"),
            None
        );
        // No managedFields yet: the server fills them in on the first apply.
        assert_eq!(
            conflicts(&crd("7", json!([])), &crd("7", managed.clone()), "me"),
            None
        );
        // A list key in a lost path.
        let keyed = json!([entry(
            "kubectl",
            "Apply",
            json!({"f:spec": {"f:versions": {"k:{\"name\":\"v1\"}": {}}}})
        )]);
        assert_eq!(
            conflicts(&crd("7", keyed), &crd("7", json!([])), "me"),
            None
        );
        // Nothing lost: no conflict.
        assert_eq!(
            conflicts(&crd("7", managed.clone()), &crd("7", managed), "me"),
            Some(Conflicts::None)
        );
    }
}
