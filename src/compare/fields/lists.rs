//! How lists and maps are merged and kept unique: uniqueItems, list types
//! and map types (server-side apply ownership).

use serde_json::Value;

use super::{FieldCheck, Node};
use crate::compare::Severity;
use crate::compare::messages::LIST_TYPE_WRITES;
use crate::json::show;

impl Node<'_, '_> {
    pub(super) fn unique_items(&mut self, c: &FieldCheck) {
        if self.old.flag("uniqueItems") || !self.new.flag("uniqueItems") {
            return;
        }
        self.emit(
            c.check,
            Severity::Error,
            "uniqueItems turned on: the API server rejects uniqueItems: true in CRD schemas (use \
x-kubernetes-list-type: set or map instead), and lists with duplicates would fail validation"
                .to_string(),
            Some(&Value::Bool(false)),
            Some(&Value::Bool(true)),
        );
    }

    pub(super) fn list_type(&mut self, c: &FieldCheck) {
        let norm = |v: Option<&Value>| -> String {
            match v.and_then(Value::as_str) {
                None | Some("atomic") => "atomic".to_string(),
                Some(s) => s.to_string(),
            }
        };
        let (o, n) = self.kw("x-kubernetes-list-type");
        let (ot, nt) = (norm(o), norm(n));
        // A field that becomes a list (`type: object` -> `array`) had no
        // stored lists to hold duplicates: the type finding says what
        // happens to its stored values.
        let became_list = self.old.type_name().is_some_and(|t| t != "array")
            && self.new.type_name() == Some("array");
        if ot != nt && became_list {
            let (o, n) = (o.cloned(), n.cloned());
            self.emit(
                c.check,
                Severity::Info,
                format!(
                    "x-kubernetes-list-type {} -> {} comes with the change of type to array: no stored \
value of this field is a list (the type finding says what happens to them)",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                o.as_ref(),
                n.as_ref(),
            );
        } else if ot != nt {
            let (o, n) = (o.cloned(), n.cloned());
            let (severity, why) = match nt.as_str() {
                "set" => (
                    Severity::Error,
                    format!("objects whose list has duplicate entries {LIST_TYPE_WRITES}; server-side apply now merges entries"),
                ),
                "map" => (
                    Severity::Error,
                    format!("objects whose list repeats a key {LIST_TYPE_WRITES}; server-side apply now merges entries by key"),
                ),
                _ => (
                    Severity::Warning,
                    "server-side apply now replaces the whole list, so entries owned by other field managers are dropped on their next apply"
                        .to_string(),
                ),
            };
            self.emit(
                c.check,
                severity,
                format!(
                    "x-kubernetes-list-type {} -> {}: {why}",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                o.as_ref(),
                n.as_ref(),
            );
        }
        if self.changed("x-kubernetes-list-map-keys") && nt == "map" && ot == "map" {
            let (o, n) = self.kw("x-kubernetes-list-map-keys");
            let (o, n) = (o.cloned(), n.cloned());
            self.emit(
                c.check,
                Severity::Error,
                format!(
                    "x-kubernetes-list-map-keys {} -> {}: entries are now identified by other keys; objects \
whose list repeats the new key {LIST_TYPE_WRITES}; server-side apply ownership of entries changes",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                o.as_ref(),
                n.as_ref(),
            );
        }
    }

    pub(super) fn map_type(&mut self, c: &FieldCheck) {
        let norm = |v: Option<&Value>| -> String {
            match v.and_then(Value::as_str) {
                None | Some("granular") => "granular".to_string(),
                Some(s) => s.to_string(),
            }
        };
        let (o, n) = self.kw("x-kubernetes-map-type");
        if norm(o) == norm(n) {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.emit(
            c.check,
            Severity::Warning,
            format!(
                "x-kubernetes-map-type {} -> {}: server-side apply now {}, which changes which \
field manager owns its keys",
                show(o.as_ref()),
                show(n.as_ref()),
                if norm(n.as_ref()) == "atomic" {
                    "replaces this object as a whole"
                } else {
                    "merges this object key by key"
                }
            ),
            o.as_ref(),
            n.as_ref(),
        );
    }
}
