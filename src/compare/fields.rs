//! Field-level checks: one old and one new schema node at the same path,
//! compared keyword by keyword. Each check consumes the keywords it
//! understands; whatever keyword differs and nobody consumed is reported as
//! `unknownChange`, one finding per keyword.

use std::collections::BTreeMap;

use serde_json::Value;

use super::messages::{NOT_RATCHETED, PRUNED, TIGHTENED, TIGHTENED_FIX, list};
use super::one_of;
use super::{Check, CheckOptions, Finding, Severity};
use crate::json::{json_eq, short, show};
use crate::schema::{AdditionalProperties, FieldPath, Schema};

/// Keywords some check below understands; the rest go to `unknownChange`.
const CONSUMED: &[&str] = &[
    "type",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "pattern",
    "format",
    "nullable",
    "required",
    "description",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
];

/// Formats the API server validates on custom resources; other formats are
/// documentation only (kube-openapi ignores them for CRDs).
const VALIDATED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "date-time",
    "k8s-short-name",
    "k8s-long-name",
];

/// What the walk is comparing.
pub(super) struct Context<'a> {
    /// The version label for findings (`v1`, or `v1alpha1 -> v1`).
    pub version: String,
    /// Per-check options.
    pub options: &'a CheckOptions,
    /// True when comparing two served versions of one CRD rather than one
    /// version across an update: descriptions, removals (left to
    /// `conversionDataLoss`) and unknown keywords are not reported then.
    pub cross_version: bool,
    /// The new CRD must have structural schemas (it prunes: the legacy
    /// `spec.preserveUnknownFields: true` is off). Only then does a missing
    /// `type` make the server refuse it.
    pub structural: bool,
}

/// Compares two schemas from the root.
pub(super) fn walk(ctx: &Context<'_>, old: &Schema, new: &Schema, out: &mut Vec<Finding>) {
    walk_at(ctx, &FieldPath::root(), old, new, out);
}

fn walk_at(
    ctx: &Context<'_>,
    path: &FieldPath,
    old: &Schema,
    new: &Schema,
    out: &mut Vec<Finding>,
) {
    // Most of a large schema is unchanged between releases: skip equal
    // subtrees without looking at their keywords.
    if old == new {
        return;
    }
    let mut node = Node {
        ctx,
        path: path.to_string(),
        field_path: path,
        old,
        new,
        out,
    };
    node.run_checks();
    for (name, old_child) in &old.properties {
        if let Some(new_child) = new.properties.get(name) {
            walk_at(ctx, &path.property(name), old_child, new_child, out);
        }
    }
    if let (Some(o), Some(n)) = (&old.items, &new.items) {
        walk_at(ctx, &path.items(), o, n, out);
    }
    if let (Some(o), Some(n)) = (old.map_values(), new.map_values()) {
        walk_at(ctx, &path.map_values(), o, n, out);
    }
}

struct Node<'a, 'o> {
    ctx: &'a Context<'a>,
    path: String,
    field_path: &'a FieldPath,
    old: &'a Schema,
    new: &'a Schema,
    out: &'o mut Vec<Finding>,
}

impl Node<'_, '_> {
    fn emit(
        &mut self,
        check: Check,
        severity: Severity,
        message: String,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let path = self.path.clone();
        self.emit_at(path, check, severity, message, old, new);
    }

    /// [`Node::emit`] for a path below this node (a removed child).
    fn emit_at(
        &mut self,
        path: String,
        check: Check,
        severity: Severity,
        message: String,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        let message = if self.ctx.cross_version {
            format!(
                "between served versions {} (conversion None, so objects are not converted): {message}",
                self.ctx.version
            )
        } else {
            message
        };
        self.out.push(Finding {
            check,
            severity,
            version: Some(self.ctx.version.clone()),
            path: Some(path),
            message,
            old: old.cloned(),
            new: new.cloned(),
            location: None,
            objects: None,
        });
    }

    fn kw(&self, name: &str) -> (Option<&Value>, Option<&Value>) {
        (self.old.keyword(name), self.new.keyword(name))
    }

    fn changed(&self, name: &str) -> bool {
        match self.kw(name) {
            (None, None) => false,
            (Some(a), Some(b)) => !json_eq(a, b),
            _ => true,
        }
    }

    fn run_checks(&mut self) {
        if !self.ctx.cross_version {
            self.field_removal();
            self.description();
        }
        self.required();
        self.type_();
        self.enum_();
        self.default();
        for (check, kw, lower) in [
            (Check::Minimum, "minimum", true),
            (Check::MinLength, "minLength", true),
            (Check::MinItems, "minItems", true),
            (Check::MinProperties, "minProperties", true),
            (Check::Maximum, "maximum", false),
            (Check::MaxLength, "maxLength", false),
            (Check::MaxItems, "maxItems", false),
            (Check::MaxProperties, "maxProperties", false),
        ] {
            self.bound(check, kw, lower);
        }
        self.exclusive(Check::ExclusiveMinimum, "exclusiveMinimum", "minimum");
        self.exclusive(Check::ExclusiveMaximum, "exclusiveMaximum", "maximum");
        self.multiple_of();
        self.unique_items();
        self.pattern();
        self.format();
        self.nullable();
        self.x_validations();
        self.list_type();
        self.map_type();
        self.preserve_unknown_fields();
        self.additional_properties();
        self.int_or_string();
        self.embedded_resource();
        self.combinator(Check::AllOf, "allOf");
        self.combinator(Check::AnyOf, "anyOf");
        self.combinator(Check::OneOf, "oneOf");
        self.not();
        if !self.ctx.cross_version {
            self.unknown();
        }
    }

    fn field_removal(&mut self) {
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
            self.emit_at(
                path,
                Check::ExistingFieldRemoval,
                severity,
                message,
                old_schema.as_ref(),
                None,
            );
        }
        if self.old.items.is_some() && self.new.items.is_none() {
            let path = self.field_path.items().to_string();
            let message = format!("the item schema of {} removed: {PRUNED}", self.path);
            self.emit_at(
                path,
                Check::ExistingFieldRemoval,
                Severity::Error,
                message,
                None,
                None,
            );
        }
    }

    fn description(&mut self) {
        if self.changed("description") {
            let (o, n) = self.kw("description");
            let (o, n) = (o.cloned(), n.cloned());
            let what = match (&o, &n) {
                (None, Some(_)) => "description added",
                (Some(_), None) => "description removed",
                _ => "description changed",
            };
            self.emit(
                Check::Description,
                Severity::Info,
                format!("{what} (documentation only; never fails)"),
                o.as_ref(),
                n.as_ref(),
            );
        }
    }

    fn required(&mut self) {
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
                    Check::Required,
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
                    Check::Required,
                    Severity::Error,
                    format!(
                        "new required field {name} on {}: creating or updating an object without it is rejected \
(a new required field is never ratcheted, so even status updates of existing objects fail). Make it \
optional with a default, or require it only in a new version",
                        self.path
                    ),
                    None,
                    Some(&value),
                ),
            }
        }
    }

    fn type_(&mut self) {
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
                Check::Type,
                Severity::Error,
                "type removed (object -> none) from a node with properties: the schema is no longer \
structural, so the API server refuses the CRD (see invalidCrd). Keep `type: object`"
                    .to_string(),
                o.cloned().as_ref(),
                None,
            );
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.emit(
            Check::Type,
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

    fn enum_(&mut self) {
        if !self.changed("enum") {
            return;
        }
        let (o, n) = self.kw("enum");
        let (o, n) = (o.cloned(), n.cloned());
        let empty = Vec::new();
        let old_vals = o.as_ref().and_then(Value::as_array).unwrap_or(&empty);
        let new_vals = n.as_ref().and_then(Value::as_array).unwrap_or(&empty);
        match (&o, &n) {
            (None, Some(_)) => self.emit(
                Check::Enum,
                Severity::Error,
                format!(
                    "enum restriction added {}: objects with any other value {TIGHTENED}; {TIGHTENED_FIX}",
                    list(&new_vals.iter().collect::<Vec<_>>())
                ),
                None,
                n.as_ref(),
            ),
            (Some(_), None) => {} // restriction lifted: safe
            _ => {
                let removed: Vec<&Value> = old_vals
                    .iter()
                    .filter(|v| !new_vals.iter().any(|w| json_eq(v, w)))
                    .collect();
                let added: Vec<&Value> = new_vals
                    .iter()
                    .filter(|v| !old_vals.iter().any(|w| json_eq(v, w)))
                    .collect();
                if !removed.is_empty() {
                    self.emit(
                        Check::Enum,
                        Severity::Error,
                        format!(
                            "enum values removed {}: objects holding them {TIGHTENED}; {TIGHTENED_FIX}",
                            list(&removed)
                        ),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
                if !added.is_empty() {
                    let severity = if self.ctx.options.enum_allow_additions {
                        Severity::Info
                    } else {
                        Severity::Error
                    };
                    self.emit(
                        Check::Enum,
                        severity,
                        format!(
                            "enum values added {}: safe for the API server, but clients and controllers reading \
this field may meet values they do not know",
                            list(&added)
                        ),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
            }
        }
    }

    fn default(&mut self) {
        if !self.changed("default") {
            return;
        }
        let (o, n) = self.kw("default");
        let (o, n) = (o.cloned(), n.cloned());
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
        self.emit(Check::Default, severity, message, o.as_ref(), n.as_ref());
    }

    fn bound(&mut self, check: Check, kw: &str, lower: bool) {
        if !self.changed(kw) {
            return;
        }
        let (o, n) = self.kw(kw);
        let (of, nf) = (o.and_then(Value::as_f64), n.and_then(Value::as_f64));
        let tightened = match (of, nf) {
            // A zero lower bound on a length or count allows everything.
            (None, Some(b)) => !(lower && kw != "minimum" && b <= 0.0),
            (Some(a), Some(b)) => {
                if lower {
                    b > a
                } else {
                    b < a
                }
            }
            _ => false,
        };
        if !tightened {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        let what = match (&o, lower) {
            (None, _) => format!("{kw} {} added", show(n.as_ref())),
            (Some(_), true) => format!("{kw} raised {} -> {}", show(o.as_ref()), show(n.as_ref())),
            (Some(_), false) => {
                format!("{kw} lowered {} -> {}", show(o.as_ref()), show(n.as_ref()))
            }
        };
        self.emit(
            check,
            Severity::Error,
            format!("{what}: objects outside the new bound {TIGHTENED}; {TIGHTENED_FIX}"),
            o.as_ref(),
            n.as_ref(),
        );
    }

    fn exclusive(&mut self, check: Check, kw: &str, bound: &str) {
        if self.old.flag(kw) || !self.new.flag(kw) {
            return;
        }
        let limit = self.new.keyword(bound).cloned();
        let limit_text = show(limit.as_ref());
        self.emit(
            check,
            Severity::Error,
            format!(
                "{kw} turned on: the value {limit_text} itself is no longer allowed, so objects holding it \
{TIGHTENED}"
            ),
            Some(&Value::Bool(false)),
            Some(&Value::Bool(true)),
        );
    }

    fn multiple_of(&mut self) {
        if !self.changed("multipleOf") {
            return;
        }
        let (o, n) = self.kw("multipleOf");
        let safe = match (o.and_then(Value::as_f64), n.and_then(Value::as_f64)) {
            (_, None) => true,
            (Some(a), Some(b)) if b != 0.0 => {
                let q = a / b;
                (q - q.round()).abs() < 1e-9
            }
            _ => false,
        };
        if safe {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.emit(
            Check::MultipleOf,
            Severity::Error,
            format!(
                "multipleOf {} -> {}: objects whose value is not a multiple of the new one {TIGHTENED}",
                show(o.as_ref()),
                show(n.as_ref())
            ),
            o.as_ref(),
            n.as_ref(),
        );
    }

    fn unique_items(&mut self) {
        if self.old.flag("uniqueItems") || !self.new.flag("uniqueItems") {
            return;
        }
        self.emit(
            Check::UniqueItems,
            Severity::Error,
            "uniqueItems turned on: the API server rejects uniqueItems: true in CRD schemas (use \
x-kubernetes-list-type: set or map instead), and lists with duplicates would fail validation"
                .to_string(),
            Some(&Value::Bool(false)),
            Some(&Value::Bool(true)),
        );
    }

    fn pattern(&mut self) {
        if !self.changed("pattern") {
            return;
        }
        let (o, n) = self.kw("pattern");
        let (o, n) = (o.cloned(), n.cloned());
        let message = match (&o, &n) {
            (None, Some(p)) => format!(
                "pattern {} added: objects whose value does not match {TIGHTENED}; {TIGHTENED_FIX}",
                short(p, 60)
            ),
            (Some(_), None) => {
                if self.ctx.options.pattern_allow_removal {
                    return;
                }
                format!(
                    "pattern {} removed (pattern.allowRemoval is false)",
                    show(o.as_ref())
                )
            }
            _ => format!(
                "pattern changed {} -> {}: objects whose value matches only the old pattern {TIGHTENED}; {TIGHTENED_FIX}",
                show(o.as_ref()),
                show(n.as_ref())
            ),
        };
        self.emit(
            Check::Pattern,
            Severity::Error,
            message,
            o.as_ref(),
            n.as_ref(),
        );
    }

    fn format(&mut self) {
        if !self.changed("format") {
            return;
        }
        let (o, n) = self.kw("format");
        // The API server reads `date-time` as `datetime`.
        let norm = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .map(|f| f.replace("date-time", "datetime"))
        };
        if norm(o) == norm(n) {
            return;
        }
        let Some(new_format) = n.and_then(Value::as_str) else {
            return; // format removed: looser
        };
        let (o, n) = (o.cloned(), n.cloned());
        let validated = VALIDATED_FORMATS.contains(&new_format);
        let (severity, message) = if validated {
            (
                Severity::Error,
                format!(
                    "format {} -> {}: the API server validates {new_format}, so objects whose value does not conform \
{TIGHTENED}",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
            )
        } else {
            (
                Severity::Info,
                format!(
                    "format {} -> {}: the API server does not validate {new_format} on custom resources, \
so this only changes what clients and generated code expect",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
            )
        };
        self.emit(Check::Format, severity, message, o.as_ref(), n.as_ref());
    }

    fn nullable(&mut self) {
        let (was, is) = (self.old.flag("nullable"), self.new.flag("nullable"));
        if was == is {
            return;
        }
        if was {
            self.emit(
                Check::Nullable,
                Severity::Error,
                "nullable removed: stored null values are dropped when objects are read (and lost on their \
next write), and writes that send null are rejected"
                    .to_string(),
                Some(&Value::Bool(true)),
                Some(&Value::Bool(false)),
            );
        } else {
            let severity = if self.ctx.options.nullable_allow_addition {
                Severity::Info
            } else {
                Severity::Error
            };
            self.emit(
                Check::Nullable,
                severity,
                "nullable added: clients may now read null where they always found a value"
                    .to_string(),
                Some(&Value::Bool(false)),
                Some(&Value::Bool(true)),
            );
        }
    }

    fn x_validations(&mut self) {
        if !self.changed("x-kubernetes-validations") {
            return;
        }
        let old_rules = rules(self.old.keyword("x-kubernetes-validations"));
        let new_rules = rules(self.new.keyword("x-kubernetes-validations"));
        let removed: Vec<&Rule> = old_rules
            .iter()
            .filter(|r| !new_rules.iter().any(|n| n.rule == r.rule))
            .collect();
        let added: Vec<&Rule> = new_rules
            .iter()
            .filter(|r| !old_rules.iter().any(|o| o.rule == r.rule))
            .collect();
        // One rule out and one in at the same node reads best as a change.
        let pair = removed.len() == 1 && added.len() == 1;
        for rule in &added {
            let transition = rule.uses_old_self();
            let kind = if transition {
                "transition rule (uses oldSelf): it is never ratcheted, so every update of an object that \
fails it is rejected"
                    .to_string()
            } else {
                format!("objects that fail it {TIGHTENED}")
            };
            let what = if pair {
                format!(
                    "CEL rule changed `{}` -> `{}`",
                    short_rule(&removed[0].rule),
                    short_rule(&rule.rule)
                )
            } else {
                format!("CEL rule added `{}`", short_rule(&rule.rule))
            };
            let old = if pair {
                Some(removed[0].raw.clone())
            } else {
                None
            };
            self.emit(
                Check::XValidations,
                Severity::Error,
                format!("{what}: {kind}; {TIGHTENED_FIX}"),
                old.as_ref(),
                Some(&rule.raw),
            );
        }
        if !pair && !self.ctx.options.x_validations_allow_removal {
            for rule in &removed {
                self.emit(
                    Check::XValidations,
                    Severity::Error,
                    format!(
                        "CEL rule removed `{}` (xValidations.allowRemoval is false)",
                        short_rule(&rule.rule)
                    ),
                    Some(&rule.raw),
                    None,
                );
            }
        }
        for new_rule in &new_rules {
            let Some(old_rule) = old_rules.iter().find(|o| o.rule == new_rule.rule) else {
                continue;
            };
            if old_rule.optional_old_self != new_rule.optional_old_self {
                self.emit(
                    Check::XValidations,
                    Severity::Error,
                    format!(
                        "optionalOldSelf changed on CEL rule `{}`: the rule now runs on {} too, which changes \
which writes it rejects",
                        short_rule(&new_rule.rule),
                        if new_rule.optional_old_self { "creates" } else { "updates only" }
                    ),
                    Some(&old_rule.raw),
                    Some(&new_rule.raw),
                );
            } else if !json_eq(&old_rule.raw, &new_rule.raw) {
                self.emit(
                    Check::XValidations,
                    Severity::Info,
                    format!(
                        "message, reason or fieldPath of CEL rule `{}` changed (what it accepts is unchanged)",
                        short_rule(&new_rule.rule)
                    ),
                    Some(&old_rule.raw),
                    Some(&new_rule.raw),
                );
            }
        }
    }

    fn list_type(&mut self) {
        let norm = |v: Option<&Value>| -> String {
            match v.and_then(Value::as_str) {
                None | Some("atomic") => "atomic".to_string(),
                Some(s) => s.to_string(),
            }
        };
        let (o, n) = self.kw("x-kubernetes-list-type");
        let (ot, nt) = (norm(o), norm(n));
        if ot != nt {
            let (o, n) = (o.cloned(), n.cloned());
            let (severity, why) = match nt.as_str() {
                "set" => (
                    Severity::Error,
                    "stored lists with duplicate entries now fail validation on every write (list-type changes are never ratcheted), and server-side apply now merges entries",
                ),
                "map" => (
                    Severity::Error,
                    "stored lists with duplicate keys now fail validation on every write (never ratcheted), and server-side apply now merges entries by key",
                ),
                _ => (
                    Severity::Warning,
                    "server-side apply now replaces the whole list, so entries owned by other field managers are dropped on their next apply",
                ),
            };
            self.emit(
                Check::ListType,
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
                Check::ListType,
                Severity::Error,
                format!(
                    "x-kubernetes-list-map-keys {} -> {}: entries are now identified by other keys, lists \
that repeat the new key fail validation (never ratcheted), and server-side apply ownership of entries changes",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                o.as_ref(),
                n.as_ref(),
            );
        }
    }

    fn map_type(&mut self) {
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
            Check::MapType,
            Severity::Warning,
            format!(
                "x-kubernetes-map-type {} -> {}: server-side apply now {} this object, which changes which \
field manager owns its keys",
                show(o.as_ref()),
                show(n.as_ref()),
                if norm(n.as_ref()) == "atomic" { "replaces as a whole" } else { "merges key by key" }
            ),
            o.as_ref(),
            n.as_ref(),
        );
    }

    fn preserve_unknown_fields(&mut self) {
        let (was, is) = (
            self.old.preserves_unknown_fields(),
            self.new.preserves_unknown_fields(),
        );
        if was == is {
            return;
        }
        if was {
            let typed_map = self.new.map_values().is_some();
            let (severity, message) = if typed_map {
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
            self.emit(
                Check::PreserveUnknownFields,
                severity,
                message,
                Some(&Value::Bool(true)),
                None,
            );
        } else {
            self.emit(
                Check::PreserveUnknownFields,
                Severity::Info,
                "x-kubernetes-preserve-unknown-fields added: unknown fields under this node are kept from now on"
                    .to_string(),
                None,
                Some(&Value::Bool(true)),
            );
        }
    }

    fn additional_properties(&mut self) {
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
            Check::AdditionalProperties,
            Severity::Error,
            format!(
                "additionalProperties narrowed {} -> {}: map entries the new schema does not allow are pruned \
or rejected ({PRUNED})",
                short(&ov, 40),
                short(&nv, 40)
            ),
            Some(&ov),
            Some(&nv),
        );
    }

    fn int_or_string(&mut self) {
        let (was, is) = (
            self.old.flag("x-kubernetes-int-or-string"),
            self.new.flag("x-kubernetes-int-or-string"),
        );
        if was == is {
            return;
        }
        if was {
            let t = self.new.type_name().unwrap_or("one type").to_string();
            self.emit(
                Check::IntOrString,
                Severity::Error,
                format!(
                    "x-kubernetes-int-or-string removed: the field now accepts only {t}, so objects holding the \
other type {TIGHTENED}"
                ),
                Some(&Value::Bool(true)),
                None,
            );
        } else {
            self.emit(
                Check::IntOrString,
                Severity::Info,
                "x-kubernetes-int-or-string added: clients may now read either an integer or a string".to_string(),
                None,
                Some(&Value::Bool(true)),
            );
        }
    }

    fn embedded_resource(&mut self) {
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
            Check::EmbeddedResource,
            Severity::Error,
            message.to_string(),
            Some(&Value::Bool(was)),
            Some(&Value::Bool(is)),
        );
    }

    fn combinator(&mut self, check: Check, kw: &str) {
        if !self.changed(kw) {
            return;
        }
        let (o, n) = self.kw(kw);
        let (o, n) = (o.cloned(), n.cloned());
        let old_set = branches(o.as_ref());
        let new_set = branches(n.as_ref());
        let removed = old_set.keys().filter(|k| !new_set.contains_key(*k)).count();
        let added = new_set.keys().filter(|k| !old_set.contains_key(*k)).count();
        if removed == 0 && added == 0 {
            return; // only documentation inside the branches changed
        }
        let mut emit = |sev: Severity, what: String| {
            self.emit(check, sev, what, o.as_ref(), n.as_ref());
        };
        if o.is_none() {
            emit(
                Severity::Error,
                format!(
                    "{kw} constraint added ({added} branch(es)): values that fit none of it are rejected; {NOT_RATCHETED}"
                ),
            );
            return;
        }
        if n.is_none() {
            if check == Check::AllOf {
                return; // every constraint lifted: looser
            }
            return; // anyOf/oneOf removed entirely: looser
        }
        match check {
            Check::AllOf => {
                if added > 0 {
                    emit(
                        Severity::Error,
                        format!(
                            "{added} allOf branch(es) added: each is a new constraint every value must meet; {NOT_RATCHETED}"
                        ),
                    );
                }
            }
            Check::AnyOf => {
                if removed > 0 {
                    emit(
                        Severity::Error,
                        format!(
                            "{removed} anyOf branch(es) removed: values that only fit them are rejected; {NOT_RATCHETED}"
                        ),
                    );
                }
                if added > 0 {
                    let sev = if self.ctx.options.any_of_allow_additions {
                        Severity::Info
                    } else {
                        Severity::Error
                    };
                    self.emit(
                        check,
                        sev,
                        format!("{added} anyOf branch(es) added: more values are accepted"),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
            }
            _ => {
                if removed > 0 {
                    emit(
                        Severity::Error,
                        format!(
                            "{removed} oneOf branch(es) removed: values that only fit them are rejected; {NOT_RATCHETED}"
                        ),
                    );
                }
                if added > 0 {
                    let empty = Vec::new();
                    let old_branches = o.as_ref().and_then(Value::as_array).unwrap_or(&empty);
                    let new_branches = n.as_ref().and_then(Value::as_array).unwrap_or(&empty);
                    let is_added: Vec<bool> = new_branches
                        .iter()
                        .map(|b| !old_set.contains_key(&canonical(b)))
                        .collect();
                    let max_properties = self
                        .new
                        .keywords
                        .get("maxProperties")
                        .and_then(Value::as_u64);
                    let (sev, what) = match one_of::added_branches(
                        old_branches,
                        new_branches,
                        &is_added,
                        max_properties,
                    ) {
                        one_of::Overlap::Proven(w) => (
                            Severity::Error,
                            format!(
                                "{added} oneOf branch(es) added that overlap an existing one: a value such as {w} matched one branch and now matches two, so it is rejected (oneOf means exactly one); {NOT_RATCHETED}"
                            ),
                        ),
                        one_of::Overlap::Disjoint => (
                            Severity::Info,
                            format!(
                                "{added} oneOf branch(es) added that share no value with the existing ones: more values are accepted"
                            ),
                        ),
                        one_of::Overlap::Undecided => (
                            Severity::Warning,
                            format!(
                                "{added} oneOf branch(es) added; whether a value can now match two branches could not be decided from the schema: such values are rejected (oneOf means exactly one); {NOT_RATCHETED}"
                            ),
                        ),
                    };
                    self.emit(check, sev, what, o.as_ref(), n.as_ref());
                }
            }
        }
    }

    fn not(&mut self) {
        if !self.changed("not") {
            return;
        }
        let (o, n) = self.kw("not");
        let (o, n) = (o.cloned(), n.cloned());
        let Some(nv) = &n else { return };
        if let Some(ov) = &o
            && canonical(ov) == canonical(nv)
        {
            return;
        }
        let what = if o.is_none() { "added" } else { "changed" };
        self.emit(
            Check::Not,
            Severity::Error,
            format!("not constraint {what}: values matching it are rejected; {NOT_RATCHETED}"),
            o.as_ref(),
            n.as_ref(),
        );
    }

    fn unknown(&mut self) {
        let keys: std::collections::BTreeSet<&String> = self
            .old
            .keywords
            .keys()
            .chain(self.new.keywords.keys())
            .collect();
        for key in keys {
            if CONSUMED.contains(&key.as_str()) || !self.changed(key) {
                continue;
            }
            let (o, n) = self.kw(key);
            let (o, n) = (o.cloned(), n.cloned());
            self.emit(
                Check::UnknownChange,
                Severity::Error,
                format!(
                    "{}: {key} {} -> {} (no check understands this keyword; accept it with an exception or \
failMode: open)",
                    self.path,
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                o.as_ref(),
                n.as_ref(),
            );
        }
    }
}

/// One `x-kubernetes-validations` entry.
struct Rule {
    rule: String,
    optional_old_self: bool,
    raw: Value,
}

impl Rule {
    fn uses_old_self(&self) -> bool {
        let bytes = self.rule.as_bytes();
        self.rule.match_indices("oldSelf").any(|(i, _)| {
            let before = i.checked_sub(1).map(|j| bytes[j]);
            let after = bytes.get(i + "oldSelf".len()).copied();
            let ident = |c: Option<u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_');
            !ident(before) && !ident(after)
        })
    }
}

fn rules(v: Option<&Value>) -> Vec<Rule> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|r| Rule {
                    rule: r
                        .get("rule")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    optional_old_self: r
                        .get("optionalOldSelf")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                    raw: r.clone(),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn short_rule(rule: &str) -> String {
    let one_line: String = rule.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 80 {
        format!("{}…", one_line.chars().take(79).collect::<String>())
    } else {
        one_line
    }
}

/// A subschema's identity for set comparisons: documentation stripped, keys
/// sorted, numbers normalized.
fn canonical(v: &Value) -> String {
    fn strip(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let sorted: BTreeMap<&String, Value> = m
                    .iter()
                    .filter(|(k, _)| {
                        !matches!(
                            k.as_str(),
                            "description" | "title" | "example" | "externalDocs"
                        )
                    })
                    .map(|(k, v)| (k, strip(v)))
                    .collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
            Value::Number(n) => match n.as_f64() {
                Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
                _ => v.clone(),
            },
            _ => v.clone(),
        }
    }
    strip(v).to_string()
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

fn branches(v: Option<&Value>) -> BTreeMap<String, ()> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().map(|b| (canonical(b), ())).collect())
        .unwrap_or_default()
}

/// A removed field's schema can be huge (a whole PodSpec); findings carry
/// only its top keywords.
fn summarize_schema(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = serde_json::Map::new();
            for key in ["type", "format", "default", "enum"] {
                if let Some(x) = m.get(key) {
                    out.insert(key.to_string(), x.clone());
                }
            }
            if let Some(Value::Object(p)) = m.get("properties") {
                out.insert(
                    "properties".into(),
                    Value::Array(p.keys().map(|k| Value::String(k.clone())).collect()),
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}
