//! What kind of value a node takes and what it keeps: type, nullable,
//! int-or-string, embedded resources, unknown fields and map values.

use serde_json::Value;

use super::{FieldCheck, Node, summarize_schema};
use crate::cel::partial::refuses_int_elements;
use crate::compare::Severity;
use crate::compare::messages::{PRUNED, TIGHTENED};
use crate::json::{short, show};
use crate::schema::{AdditionalProperties, Schema};

impl Node<'_, '_> {
    pub(super) fn type_(&mut self, c: &FieldCheck) {
        if !self.changed("type") {
            return;
        }
        let (o, n) = self.kw("type");
        // `type: object` spelled out where the node already had properties
        // describes the same values.
        let implied_object =
            |s: &Schema| !s.properties.is_empty() || s.additional_properties.is_some();
        if o.is_none() && n.and_then(Value::as_str) == Some("object") && implied_object(self.old) {
            return;
        }
        if n.is_none() && o.and_then(Value::as_str) == Some("object") && implied_object(self.new) {
            // A typeless node that keeps unknown fields is allowed (and
            // accepts more); without that it is not structural.
            let preserves = self
                .new
                .keywords
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                == Some(true);
            if preserves || !self.ctx.structural {
                return;
            }
            self.emit(
                c.check,
                Severity::Error,
                "type removed (object -> none) from a node with properties: the schema is no longer \
structural, so the API server refuses the CRD (see invalidCrd). Keep `type: object`"
                    .to_string(),
                o.cloned().as_ref(),
                None,
            );
            return;
        }
        // An int-or-string that becomes one of its two types is the
        // int-or-string check's finding (which knows when no stored value
        // has the other type).
        if o.is_none()
            && self.old.flag("x-kubernetes-int-or-string")
            && !self.new.flag("x-kubernetes-int-or-string")
            && matches!(n.and_then(Value::as_str), Some("integer" | "string"))
        {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.emit(
            c.check,
            Severity::Error,
            format!(
                "type changed {} -> {}: stored values of the old type fail validation on every write that \
touches them, and clients decoding the field break. Add a new field (or version) instead",
                show(o.as_ref()),
                show(n.as_ref())
            ),
            o.as_ref(),
            n.as_ref(),
        );
    }

    pub(super) fn nullable(&mut self, c: &FieldCheck) {
        let (was, is) = (self.old.flag("nullable"), self.new.flag("nullable"));
        if was == is {
            return;
        }
        if was {
            self.emit(
                c.check,
                Severity::Error,
                "nullable removed: stored null values are dropped when objects are read (and lost on their \
next write), and writes that send null are rejected"
                    .to_string(),
                Some(&Value::Bool(true)),
                Some(&Value::Bool(false)),
            );
        } else {
            let severity = Severity::info_if(self.ctx.options.nullable_allow_addition);
            self.emit(
                c.check,
                severity,
                "nullable added: clients may now read null where they always found a value"
                    .to_string(),
                Some(&Value::Bool(false)),
                Some(&Value::Bool(true)),
            );
        }
    }

    pub(super) fn preserve_unknown_fields(&mut self, c: &FieldCheck) {
        let (was, is) = (
            self.old.preserves_unknown_fields(),
            self.new.preserves_unknown_fields(),
        );
        if was == is {
            return;
        }
        if was {
            let typed_map = self.new.map_values().is_some();
            // The old schema checked every stored value here; a scalar
            // it checked has no keys for pruning to drop.
            let whole = crate::schema::pruning::drops_nothing(self.new, &[Some(self.old)]);
            let (severity, message) = if whole {
                (
                    Severity::Info,
                    format!(
                        "x-kubernetes-preserve-unknown-fields removed, but pruning drops nothing under {}: \
{}",
                        self.path,
                        match self.old.type_name() {
                            Some(t @ ("string" | "integer" | "number" | "boolean")) => format!(
                                "the values stored there are {t}s (the old schema checked it), which have no \
fields to prune"
                            ),
                            _ => "every key a stored value can hold is one the new schema keeps (the old \
schema checked the scalars below it)"
                                .to_string(),
                        }
                    ),
                )
            } else if typed_map {
                (
                    Severity::Warning,
                    "x-kubernetes-preserve-unknown-fields replaced by a typed map (additionalProperties): keys \
are kept, but values that do not fit the map's schema are pruned or rejected"
                        .to_string(),
                )
            } else {
                (
                    Severity::Error,
                    format!(
                        "x-kubernetes-preserve-unknown-fields removed: every field under {} that the schema \
does not describe is now pruned: {PRUNED}",
                        self.path
                    ),
                )
            };
            self.emit(c.check, severity, message, Some(&Value::Bool(true)), None);
        } else {
            self.emit(
                c.check,
                Severity::Info,
                "x-kubernetes-preserve-unknown-fields added: unknown fields under this node are kept from now on"
                    .to_string(),
                None,
                Some(&Value::Bool(true)),
            );
        }
    }

    pub(super) fn additional_properties(&mut self, c: &FieldCheck) {
        use AdditionalProperties as AP;
        let describe = |a: &Option<AP>| -> Value {
            match a {
                None => Value::Null,
                Some(AP::Allowed(b)) => Value::Bool(*b),
                Some(AP::Schema(s)) => summarize_schema(&s.to_value()),
            }
        };
        let (o, n) = (
            &self.old.additional_properties,
            &self.new.additional_properties,
        );
        let narrowed = matches!(
            (o, n),
            (
                Some(AP::Schema(_)) | Some(AP::Allowed(true)),
                None | Some(AP::Allowed(false))
            ) | (Some(AP::Allowed(true)), Some(AP::Schema(_)))
        );
        if !narrowed {
            return;
        }
        let (ov, nv) = (describe(o), describe(n));
        self.emit(
            c.check,
            Severity::Error,
            format!(
                "additionalProperties {}: map entries the new schema does not allow are pruned or \
rejected; {PRUNED}",
                if n.is_none() {
                    format!("{} removed", short(&ov, 40))
                } else {
                    format!("narrowed {} -> {}", short(&ov, 40), short(&nv, 40))
                }
            ),
            Some(&ov),
            Some(&nv),
        );
    }

    pub(super) fn int_or_string(&mut self, c: &FieldCheck) {
        let (was, is) = (
            self.old.flag("x-kubernetes-int-or-string"),
            self.new.flag("x-kubernetes-int-or-string"),
        );
        if was == is {
            return;
        }
        if was && let Some(rule) = self.ints_refused_by_old_rule() {
            let holder = if self.old_is_map_value() {
                "map"
            } else {
                "list"
            };
            self.emit(
                c.check,
                Severity::Info,
                format!(
                    "x-kubernetes-int-or-string removed, and no stored value is an integer: the old rule `{rule}` \
on the {holder} cannot pass with an integer in it (on an integer it is an error or false), so the API server only \
ever stored strings here"
                ),
                Some(&Value::Bool(true)),
                None,
            );
        } else if was {
            let t = self.new.type_name().unwrap_or("one type").to_string();
            self.emit(
                c.check,
                Severity::Error,
                format!(
                    "x-kubernetes-int-or-string removed: the field now accepts only {t}, so objects holding the \
other type {TIGHTENED}{}",
                    self.ratcheting()
                ),
                Some(&Value::Bool(true)),
                None,
            );
        } else {
            self.emit(
                c.check,
                Severity::Info,
                "x-kubernetes-int-or-string added: clients may now read either an integer or a string".to_string(),
                None,
                Some(&Value::Bool(true)),
            );
        }
    }

    /// The old rule of the list or map this node is an element of that
    /// refuses every integer element, when the node now takes strings only.
    fn ints_refused_by_old_rule(&self) -> Option<String> {
        if self.ctx.cross_version || self.new.type_name() != Some("string") {
            return None;
        }
        let holder = self.element_of_old?;
        holder
            .keyword("x-kubernetes-validations")?
            .as_array()?
            .iter()
            .filter_map(|r| r.get("rule")?.as_str())
            .find(|r| !r.contains("oldSelf") && refuses_int_elements(r, holder))
            .map(str::to_string)
    }

    fn old_is_map_value(&self) -> bool {
        self.element_of_old.is_some_and(|h| h.items.is_none())
    }

    pub(super) fn embedded_resource(&mut self, c: &FieldCheck) {
        let (was, is) = (
            self.old.flag("x-kubernetes-embedded-resource"),
            self.new.flag("x-kubernetes-embedded-resource"),
        );
        if was == is {
            return;
        }
        let message = if is {
            "x-kubernetes-embedded-resource turned on: the object must now carry apiVersion, kind and valid \
metadata, so stored objects without them fail validation"
        } else {
            "x-kubernetes-embedded-resource turned off: apiVersion, kind and metadata of the embedded object \
are no longer implied and are pruned unless the schema describes them"
        };
        self.emit(
            c.check,
            Severity::Error,
            message.to_string(),
            Some(&Value::Bool(was)),
            Some(&Value::Bool(is)),
        );
    }
}
