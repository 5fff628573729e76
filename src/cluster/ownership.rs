//! Who owns a live CRD's fields, and taking over what a plain `kubectl
//! apply` or `kubectl create` left behind.
//!
//! A CRD installed with `kubectl apply -f` (client-side) has its fields owned
//! by the `Update` manager `kubectl-client-side-apply`; a server-side apply
//! by another manager that changes them conflicts. `kubectl apply
//! --server-side` does not stop there: it rewrites `managedFields` so the
//! client-side manager's entry becomes its own `Apply` entry (client-go's
//! `csaupgrade`), then applies without a conflict. We do the same for
//! `kubectl-client-side-apply` and `kubectl-create` (the records of someone
//! installing the CRD by hand), and for nothing else: fields a controller or
//! a GitOps tool owns (Helm, Argo CD, Flux, an operator) or that someone
//! edited by hand (`kubectl-edit`, `kubectl-patch`) stay a conflict that
//! only `--force-conflicts` overrides, and the report names the owner.
//!
//! One difference from csaupgrade: the `last-applied-configuration`
//! annotation is left out of what we take over, so our apply (which does
//! not carry it) does not delete it; it stays as `kubectl apply` left it.

use serde_json::{Map, Value};

/// Update managers whose fields `apply` takes over like `kubectl apply
/// --server-side` does: installs made by hand with kubectl.
pub const MIGRATED_MANAGERS: &[&str] = &["kubectl-client-side-apply", "kubectl-create"];

const LAST_APPLIED: &str = "f:kubectl.kubernetes.io/last-applied-configuration";

/// The managers named in a server-side apply conflict message, in order,
/// once each. The API server writes `conflict with "helm" using ...` for a
/// single conflict and `conflicts with "helm" using ...:` followed by the
/// fields for several.
pub fn conflicting_managers(message: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let normalized = message.replace("conflicts with \"", "conflict with \"");
    for part in normalized.split("conflict with \"").skip(1) {
        if let Some(end) = part.find('"') {
            let name = &part[..end];
            if !out.iter().any(|m| m == name) {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// One manager's part of a server-side apply conflict: who, and the fields
/// of the change it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    /// The field manager.
    pub manager: String,
    /// It owns them through server-side apply (`kubectl apply
    /// --server-side`): applying as that manager (`--field-manager`) then
    /// owns them too, with no conflict. An `Update` manager's fields
    /// conflict with any apply.
    pub applies: bool,
    /// The fields, as the API server writes them (`.spec.versions`).
    pub fields: Vec<String>,
}

/// Each manager of a server-side apply conflict message with the fields it
/// owns, in the message's order. The API server (apimachinery's
/// `getConflictMessage`) writes one conflict as `conflict with "kubectl":
/// .spec.versions` and several as `conflicts with "kubectl":` followed by
/// `- .spec.versions` lines, per manager; an `Update` manager is followed
/// by ` using apiextensions.k8s.io/v1` (and ` at <time>`).
pub fn conflicts(message: &str) -> Vec<Owned> {
    let mut out: Vec<Owned> = Vec::new();
    let normalized = message.replace("conflicts with \"", "conflict with \"");
    for part in normalized.split("conflict with \"").skip(1) {
        let Some(end) = part.find('"') else { continue };
        let manager = &part[..end];
        let rest = &part[end + 1..];
        // What follows the manager up to the colon: its subresource and
        // operation; the fields come after it.
        let (about, fields) = match rest.find(": ").into_iter().chain(rest.find(":\n")).min() {
            Some(i) => (&rest[..i], &rest[i + 1..]),
            None => (rest.trim_end_matches(':'), ""),
        };
        let fields: Vec<String> = fields
            .lines()
            .map(|l| l.trim().trim_start_matches("- ").trim())
            .map(|l| l.trim_end_matches(';').trim())
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect();
        let applies = !about.contains(" using ") && !about.contains("subresource");
        match out.iter_mut().find(|o| o.manager == manager) {
            Some(o) => o.fields.extend(fields),
            None => out.push(Owned {
                manager: manager.to_string(),
                applies,
                fields,
            }),
        }
    }
    out
}

/// The one field manager that owns every conflicting field through
/// server-side apply, if there is one: `--field-manager` with its name
/// applies without a conflict.
pub fn sole_applier(owned: &[Owned]) -> Option<&str> {
    match owned {
        [one] if one.applies => Some(&one.manager),
        _ => None,
    }
}

/// The API server's limit on a field manager's name, in characters.
const FIELD_MANAGER_MAX: usize = 128;

/// A `--field-manager` name as the API server takes it: not empty, at most
/// 128 characters, all printable (its `ValidateFieldManager`), so a bad
/// name is a usage error before anything is sent.
pub fn parse_field_manager(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("a field manager needs a name (e.g. kubectl)".into());
    }
    let count = text.chars().count();
    if count > FIELD_MANAGER_MAX {
        return Err(format!(
            "a field manager's name has at most {FIELD_MANAGER_MAX} characters, this one {count}"
        ));
    }
    if text.chars().any(char::is_control) {
        return Err("a field manager's name cannot hold control characters".into());
    }
    Ok(text.to_string())
}

/// Whether every conflicting manager is one `apply` takes over.
pub fn all_migratable(managers: &[String]) -> bool {
    !managers.is_empty()
        && managers
            .iter()
            .all(|m| MIGRATED_MANAGERS.contains(&m.as_str()))
}

/// A readable description of who `manager` is, when it is a known
/// controller or tool ([`crate::delivery::owners`] knows them).
pub fn describe_owner(manager: &str) -> Option<&'static str> {
    crate::delivery::owners::describe_manager(manager)
}

/// `managedFields` with the `Update` entries of `from` (top level, not a
/// subresource) turned into one `Apply` entry of `to`, merged into `to`'s
/// existing `Apply` entry if it has one. `None` when there is nothing to
/// take over.
pub fn take_over(managed_fields: &[Value], from: &[&str], to: &str) -> Option<Vec<Value>> {
    let is_from = |e: &Value| {
        e["operation"] == "Update"
            && e["manager"].as_str().is_some_and(|m| from.contains(&m))
            && e.get("subresource")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
    };
    if !managed_fields.iter().any(is_from) {
        return None;
    }
    let is_ours = |e: &Value| {
        e["operation"] == "Apply"
            && e["manager"] == to
            && e.get("subresource")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
    };
    let mut entries: Vec<Value> = managed_fields.to_vec();
    let target = match entries.iter().position(is_ours) {
        Some(i) => i,
        None => {
            // The most recent entry to take over (managedFields lists the
            // newest first) becomes ours.
            let i = entries.iter().position(is_from)?;
            entries[i]["operation"] = Value::from("Apply");
            entries[i]["manager"] = Value::from(to);
            i
        }
    };
    let api_version = entries[target]["apiVersion"].clone();
    let mut fields = entries[target]
        .get("fieldsV1")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    for e in managed_fields.iter().filter(|e| is_from(e)) {
        if e["apiVersion"] == api_version
            && let Some(more) = e.get("fieldsV1")
        {
            union_into(&mut fields, more);
        }
    }
    if let Some(annotations) = fields
        .get_mut("f:metadata")
        .and_then(|m| m.get_mut("f:annotations"))
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED);
        if annotations.keys().all(|k| k == ".") {
            let meta = fields.get_mut("f:metadata").and_then(Value::as_object_mut);
            if let Some(meta) = meta {
                meta.remove("f:annotations");
                if meta.is_empty()
                    && let Some(all) = fields.as_object_mut()
                {
                    all.remove("f:metadata");
                }
            }
        }
    }
    entries[target]["fieldsV1"] = fields;
    entries[target]["fieldsType"] = Value::from("FieldsV1");
    let kept: Vec<Value> = entries
        .into_iter()
        .enumerate()
        .filter(|(i, e)| *i == target || !is_from(e))
        .map(|(_, e)| e)
        .collect();
    Some(kept)
}

/// Adds every path of the FieldsV1 trie `more` to `into`.
fn union_into(into: &mut Value, more: &Value) {
    let (Some(into), Some(more)) = (into.as_object_mut(), more.as_object()) else {
        return;
    };
    for (key, value) in more {
        match into.get_mut(key) {
            Some(existing) => union_into(existing, value),
            None => {
                into.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn csa_installed() -> Vec<Value> {
        vec![
            json!({"manager": "kubectl-client-side-apply", "operation": "Update",
                   "apiVersion": "apiextensions.k8s.io/v1", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:metadata": {"f:annotations": {".": {},
                       "f:kubectl.kubernetes.io/last-applied-configuration": {}}},
                       "f:spec": {"f:group": {}, "f:versions": {}}}}),
            json!({"manager": "kube-apiserver", "operation": "Update", "subresource": "status",
                   "apiVersion": "apiextensions.k8s.io/v1", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:status": {}}}),
        ]
    }

    #[test]
    fn the_client_side_apply_entry_becomes_our_apply_entry() {
        let out = take_over(&csa_installed(), MIGRATED_MANAGERS, "kubectl-crd-safety")
            .expect("something to take over");
        assert_eq!(out.len(), 2);
        assert_eq!(out[0]["manager"], "kubectl-crd-safety");
        assert_eq!(out[0]["operation"], "Apply");
        assert_eq!(
            out[0]["fieldsV1"],
            json!({"f:spec": {"f:group": {}, "f:versions": {}}}),
            "the last-applied annotation is not taken"
        );
        assert_eq!(
            out[1]["manager"], "kube-apiserver",
            "the status entry stays"
        );
    }

    #[test]
    fn an_existing_apply_entry_of_ours_gets_the_union() {
        let mut fields = csa_installed();
        fields.insert(
            0,
            json!({"manager": "kubectl-crd-safety", "operation": "Apply",
                   "apiVersion": "apiextensions.k8s.io/v1", "fieldsType": "FieldsV1",
                   "fieldsV1": {"f:spec": {"f:scope": {}}}}),
        );
        let out = take_over(&fields, MIGRATED_MANAGERS, "kubectl-crd-safety").expect("merged");
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0]["fieldsV1"]["f:spec"],
            json!({"f:scope": {}, "f:group": {}, "f:versions": {}})
        );
    }

    #[test]
    fn helm_owned_fields_are_not_taken() {
        let fields = vec![json!({"manager": "helm", "operation": "Update",
            "apiVersion": "apiextensions.k8s.io/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {}}})];
        assert!(take_over(&fields, MIGRATED_MANAGERS, "kubectl-crd-safety").is_none());
        assert_eq!(
            describe_owner("helm"),
            Some("Helm (a CRD of a release's templates/ is overwritten at the next helm upgrade)")
        );
    }

    #[test]
    fn managers_are_read_from_a_message_with_several_conflicts() {
        // The wording the API server uses for more than one conflict.
        let message = "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using \
apiextensions.k8s.io/v1:\n- .metadata.annotations.team\n- .spec.versions";
        let managers = conflicting_managers(message);
        assert_eq!(managers, vec!["kubectl-client-side-apply"]);
        assert!(all_migratable(&managers));
    }

    #[test]
    fn one_conflict_with_an_apply_manager_names_it_and_its_field() {
        // kube-apiserver 1.34's words for a CRD `kubectl apply --server-side` installed.
        let message = r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.versions"#;
        let owned = conflicts(message);
        assert_eq!(
            owned,
            [Owned {
                manager: "kubectl".into(),
                applies: true,
                fields: vec![".spec.versions".into()],
            }]
        );
        assert_eq!(sole_applier(&owned), Some("kubectl"));
    }

    #[test]
    fn several_conflicts_list_each_managers_fields() {
        let message = "Apply failed with 3 conflicts: conflicts with \"helm\" using \
apiextensions.k8s.io/v1 at 2026-12-02T15:04:05Z:\n- .spec.names\n- .spec.versions\nconflicts with \"kubectl\":\n\
- .metadata.labels.app";
        let owned = conflicts(message);
        assert_eq!(
            owned,
            [
                Owned {
                    manager: "helm".into(),
                    applies: false,
                    fields: vec![".spec.names".into(), ".spec.versions".into()],
                },
                Owned {
                    manager: "kubectl".into(),
                    applies: true,
                    fields: vec![".metadata.labels.app".into()],
                },
            ]
        );
        assert_eq!(sole_applier(&owned), None, "two managers");
        assert_eq!(
            sole_applier(&owned[..1]),
            None,
            "an Update manager's fields conflict with any apply"
        );
    }

    #[test]
    fn a_field_manager_name_is_checked_as_the_api_server_checks_it() {
        assert_eq!(parse_field_manager("kubectl"), Ok("kubectl".into()));
        assert!(parse_field_manager(&"m".repeat(128)).is_ok());
        for wrong in [String::new(), "m".repeat(129), "a\tb".into()] {
            assert!(parse_field_manager(&wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn managers_are_read_from_the_conflict_message() {
        let message = r#"Apply failed with 2 conflicts: conflict with "kubectl-client-side-apply" using apiextensions.k8s.io/v1: .spec.versions; conflict with "helm" using apiextensions.k8s.io/v1: .spec.names"#;
        let managers = conflicting_managers(message);
        assert_eq!(managers, vec!["kubectl-client-side-apply", "helm"]);
        assert!(!all_migratable(&managers));
        assert!(all_migratable(&managers[..1]));
    }
}
