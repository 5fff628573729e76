//! Which fields exist and what they read as: removed fields, newly required
//! ones and defaults (applied when stored objects are read).

use serde_json::Value;

use super::{FieldCheck, Node, summarize_schema};
use crate::compare::Severity;
use crate::compare::messages::PRUNED;
use crate::json::{short, show};

impl Node<'_, '_> {
    pub(super) fn field_removal(&mut self, c: &FieldCheck) {
        let kept = self.new.preserves_unknown_fields();
        let removed: Vec<&String> = self
            .old
            .properties
            .keys()
            .filter(|k| !self.new.properties.contains_key(*k))
            .collect();
        for name in removed {
            let child = self.field_path.property(name);
            let path = child.to_string();
            let (severity, message) = if kept {
                (
                    Severity::Warning,
                    format!(
                        "field {path} removed from the schema; its data is kept because the parent has \
x-kubernetes-preserve-unknown-fields, but it is no longer validated or defaulted and clients generated \
from the schema lose it"
                    ),
                )
            } else if child.is_status() {
                (
                    Severity::Warning,
                    format!(
                        "status field {path} removed: {PRUNED}; the controller rewrites status, but clients \
reading {path} break"
                    ),
                )
            } else {
                (
                    Severity::Error,
                    format!(
                        "field {path} removed: {PRUNED}. Keep the field (deprecate it in its description) \
and drop it only in a new version"
                    ),
                )
            };
            let old_schema = self
                .old
                .properties
                .get(name)
                .map(|c| summarize_schema(&c.to_value()));
            self.emit_at(path, c.check, severity, message, old_schema.as_ref(), None);
        }
        if self.old.items.is_some() && self.new.items.is_none() {
            let path = self.field_path.items().to_string();
            let message = format!("the item schema of {} removed: {PRUNED}", self.path);
            self.emit_at(path, c.check, Severity::Error, message, None, None);
        }
    }

    /// A field in the new schema only. Where the old schema kept unknown
    /// fields, stored objects may hold any value under that name, which the
    /// new schema now validates (and prunes and defaults below): an error.
    /// Elsewhere no stored object has it (unless an earlier release had it
    /// and objects written then still hold it in etcd): info.
    pub(super) fn field_addition(&mut self, c: &FieldCheck) {
        let kept_unknown = self.old.preserves_unknown_fields();
        let new_required = self.new.required();
        let added: Vec<&String> = self
            .new
            .properties
            .keys()
            .filter(|k| !self.old.properties.contains_key(*k))
            .collect();
        let root = self.field_path.segments().is_empty();
        for name in added {
            let child = self.field_path.property(name);
            let path = child.to_string();
            let required = new_required.contains(&name.as_str());
            // Every object has these, whatever the schema says.
            let implicit = root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata");
            let (severity, message) = if kept_unknown && child.is_status() {
                (
                    Severity::Warning,
                    format!(
                        "status field {path} added where the old schema kept unknown fields: the controller \
may already have written a value there that the new field's schema rejects; it rewrites status, but \
until then status updates of such objects fail"
                    ),
                )
            } else if kept_unknown && !implicit {
                (
                    Severity::Error,
                    format!(
                        "field {path} added where the old schema kept unknown fields: stored objects may \
already hold any value under that name, which the API server now validates against the new field's schema \
(and prunes and defaults below it). Check the stored objects first (`kubectl crd-safety apply-check \
--objects`)"
                    ),
                )
            } else if implicit {
                (
                    Severity::Info,
                    format!(
                        "field {path} now described in the schema: every object has it (the API server fills \
it in), and a schema may only restrict metadata's name and generateName"
                    ),
                )
            } else {
                (
                    Severity::Info,
                    format!(
                        "field {path} added ({}): no stored object has it, unless an earlier release had the \
field and objects written then still hold it in etcd",
                        if required { "required" } else { "optional" }
                    ),
                )
            };
            let new_schema = self
                .new
                .properties
                .get(name)
                .map(|c| summarize_schema(&c.to_value()));
            self.emit_at(path, c.check, severity, message, None, new_schema.as_ref());
        }
    }

    pub(super) fn required(&mut self, c: &FieldCheck) {
        let old_req = self.old.required();
        let added: Vec<String> = self
            .new
            .required()
            .into_iter()
            .filter(|r| !old_req.contains(r))
            .map(str::to_string)
            .collect();
        for name in added {
            let default = self
                .new
                .properties
                .get(&name)
                .and_then(|p| p.keyword("default"))
                .cloned();
            let value = Value::String(name.clone());
            match default {
                Some(d) => self.emit(
                    c.check,
                    Severity::Warning,
                    format!(
                        "field {name} becomes required on {}, but it has a default ({}), which the API server \
applies before validating, so objects without it are accepted and read the default",
                        self.path,
                        short(&d, 40)
                    ),
                    None,
                    Some(&value),
                ),
                None => self.emit(
                    c.check,
                    Severity::Error,
                    format!(
                        "new required field {name} on {}: creating an object without it is rejected, and so is \
every update that changes {} of a stored object without it (validation ratcheting, on by default from \
Kubernetes 1.30, lets through only updates that leave {} as it was, such as status updates){}. Make it \
optional with a default, or require it only in a new version",
                        self.path,
                        self.path,
                        self.path,
                        self.ratcheting()
                    ),
                    None,
                    Some(&value),
                ),
            }
        }
    }

    pub(super) fn default(&mut self, c: &FieldCheck) {
        if !self.changed("default") {
            return;
        }
        let (o, n) = self.kw("default");
        let (o, n) = (o.cloned(), n.cloned());
        if self.required_in_old && !self.ctx.webhook_conversion {
            // Defaults fill in only missing fields, and no stored object
            // misses a field the old schema required (unless a conversion
            // webhook returns objects without it).
            let message = format!(
                "default {} -> {} on a field the old schema required: every stored object has the field, so \
no stored object reads the default; only new objects that omit it get it",
                show(o.as_ref()),
                show(n.as_ref())
            );
            self.emit(c.check, Severity::Info, message, o.as_ref(), n.as_ref());
            return;
        }
        if let (Some(Value::String(a)), Some(Value::String(b))) = (&o, &n)
            && crate::openapi::formats::parse_go_duration(a).is_some()
            && crate::openapi::formats::parse_go_duration(a)
                == crate::openapi::formats::parse_go_duration(b)
        {
            let message = format!(
                "default {} -> {}: the same duration spelled differently; clients that read it as a duration (Go's \
time.ParseDuration, metav1.Duration) see the same value, only its text differs",
                show(o.as_ref()),
                show(n.as_ref())
            );
            self.emit(c.check, Severity::Info, message, o.as_ref(), n.as_ref());
            return;
        }
        let (severity, message) = match (&o, &n) {
            // The type's zero value: typed clients (Go's omitempty fields)
            // read absent and zero alike, so only untyped readers notice.
            (None, Some(d)) if is_scalar_zero(d) => (
                Severity::Warning,
                format!(
                    "default {} added to an existing field: the API server applies it when reading stored \
objects that lack the field; it is the type's zero value, so typed clients read it as before, but \
untyped readers (CEL rules, kubectl -o jsonpath, scripts) now see {} where the field was absent",
                    short(d, 60),
                    short(d, 60)
                ),
            ),
            (None, Some(d)) => (
                Severity::Error,
                format!(
                    "default {} added to an existing field: the API server applies it when reading stored \
objects that lack the field, so every client suddenly reads {} there without anyone writing it, and the \
next write stores it. Give new behaviour a new field (or version) instead, or accept it with an exception",
                    short(d, 60),
                    short(d, 60)
                ),
            ),
            (Some(d), None) => (
                Severity::Error,
                format!(
                    "default {} removed: objects created without the field no longer get it, and stored \
objects that relied on read-time defaulting read it as absent",
                    short(d, 60)
                ),
            ),
            _ if self.required_in_old => (
                Severity::Error,
                format!(
                    "default changed {} -> {} on a field the old schema required: objects stored in another \
version reach this one through the conversion webhook, which may leave the field out, and those now read \
the new value. Keep the old default in this version, or make sure the webhook always sets the field",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
            ),
            _ => (
                Severity::Error,
                format!(
                    "default changed {} -> {}: every stored object that lacks the field now reads the new \
value, silently changing its meaning. Keep the old default in this version",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
            ),
        };
        self.emit(c.check, severity, message, o.as_ref(), n.as_ref());
    }
}

/// `""`, `0` or `false`.
fn is_scalar_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        _ => false,
    }
}
