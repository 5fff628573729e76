//! Checks across the served versions of the new CRD when conversion is
//! `None`, the API server's default.
//!
//! With `None` the server converts an object between versions by rewriting
//! `apiVersion` and nothing else, then prunes it with the target version's
//! schema. Two consequences no other tool reports together:
//!
//! - schemas that disagree (a type, a bound, a new required field) make an
//!   object valid in one version invalid in another (the field checks, run
//!   on each pair older → newer);
//! - a field that one served version describes and the storage version does
//!   not is dropped when written through that version, and a field only the
//!   storage version describes is lost when an object is updated through the
//!   other one (`conversionDataLoss`).
//!
//! Problems the old CRD already had are not reported again.

use super::fields::{Context, walk};
use super::{Check, CheckOptions, Finding, Severity};
use crate::crd::{Crd, CrdVersion};
use crate::schema::path::{Step, Trail};
use crate::schema::version::compare_priority;
use crate::schema::{AdditionalProperties, FieldPath, Schema};

pub(super) fn check(old: Option<&Crd>, new: &Crd, options: &CheckOptions, out: &mut Vec<Finding>) {
    if new.conversion_strategy() != "None" {
        return;
    }
    let mut served: Vec<&CrdVersion> = new.served_versions().collect();
    served.sort_by(|a, b| compare_priority(a.name(), b.name()));
    let old_none = old.filter(|o| o.conversion_strategy() == "None");

    if old.is_some() {
        for (i, a) in served.iter().enumerate() {
            for b in &served[i + 1..] {
                let label = format!("{} -> {}", a.name(), b.name());
                let served_before = old
                    .and_then(|o| o.version(a.name()))
                    .is_some_and(|v| v.spec.served);
                let mut found = pair_findings(&label, &a.schema, &b.schema, options, served_before);
                // Grandfather what the old CRD already had for this pair.
                if let Some(old) = old_none
                    && let (Some(oa), Some(ob)) = (old.version(a.name()), old.version(b.name()))
                    && oa.spec.served
                    && ob.spec.served
                {
                    let before = pair_findings(&label, &oa.schema, &ob.schema, options, true);
                    found.retain(|f| {
                        !before.iter().any(|b| {
                            b.check == f.check && b.path == f.path && b.message == f.message
                        })
                    });
                }
                if let Some(old) = old_none {
                    for f in &mut found {
                        stored_objects_have_it(f, old, a.name(), b.name());
                    }
                }
                out.extend(found);
            }
        }
    }

    let storage = new.storage_version();
    for v in served.iter().filter(|v| v.name() != storage.name()) {
        let mut losses = data_loss(&v.schema, &storage.schema, v.name(), storage.name());
        if let Some(old) = old_none
            && old.storage_version().name() == storage.name()
            && let Some(ov) = old.version(v.name()).filter(|ov| ov.spec.served)
        {
            let before = data_loss(
                &ov.schema,
                &old.storage_version().schema,
                v.name(),
                storage.name(),
            );
            losses.retain(|l| {
                !before
                    .iter()
                    .any(|b| b.path == l.path && b.message == l.message)
            });
        }
        if old.is_none() {
            // A brand-new CRD has no data to lose yet; the design flaw is
            // still worth a warning.
            for l in &mut losses {
                l.severity = Severity::Warning;
            }
        }
        out.extend(losses);
    }
}

/// A field required by `b` and not by `a` fails objects written through
/// `a`: but not the ones already stored when the old CRD (conversion None)
/// required it at the same node in every version it served or stored, so
/// every stored object was written with it. What remains is a hazard for
/// objects created through `a` after the update: a warning that says so.
fn stored_objects_have_it(f: &mut Finding, old: &Crd, a: &str, b: &str) {
    let (Check::Required, Severity::Error, Some(serde_json::Value::String(name)), Some(path)) =
        (f.check, f.severity, f.new.as_ref(), f.path.as_ref())
    else {
        return;
    };
    let mut written = old
        .versions
        .iter()
        .filter(|v| v.spec.served || v.spec.storage)
        .peekable();
    if written.peek().is_none() {
        return;
    }
    let everywhere = written.all(|v| {
        node_at(&v.schema, path).is_some_and(|n| {
            n.required().contains(&name.as_str())
                && !n.properties.get(name).is_some_and(|p| p.flag("nullable"))
        })
    });
    if !everywhere {
        return;
    }
    f.severity = Severity::Warning;
    f.message = format!(
        "between served versions {a} -> {b} (conversion None, so objects are not converted): {b} requires \
{name} on {path} and {a} does not. Every stored object has it (the old CRD required it in every version it \
served), but an object created through {a} after the update may not, and then every update of it through {b} \
that changes {path} is rejected. Require {name} in {a} as well, or give it a default"
    );
}

/// The node of `schema` at a rendered path (`^.spec.nodeSets[*]`), found
/// one step at a time: a rendered step followed by the end or by the next
/// step's first character names one child (renderings are unambiguous).
fn node_at<'s>(schema: &'s Schema, path: &str) -> Option<&'s Schema> {
    let mut rest = path.strip_prefix('^')?;
    let mut node = schema;
    'down: while !rest.is_empty() {
        for (step, child) in node.children() {
            if let Some(after) = step.strip_from(rest)
                && (after.is_empty() || after.starts_with(['.', '[', '{']))
            {
                rest = after;
                node = child;
                continue 'down;
            }
        }
        return None;
    }
    Some(node)
}

fn pair_findings(
    label: &str,
    a: &Schema,
    b: &Schema,
    options: &CheckOptions,
    first_served_before: bool,
) -> Vec<Finding> {
    let ctx = Context {
        version: label.to_string(),
        options,
        cross_version: true,
        // A typeless node in one version is invalidCrd's to report.
        structural: false,
        webhook_conversion: false,
        first_served_before,
    };
    let mut found = Vec::new();
    walk(&ctx, a, b, &mut found);
    found
}

/// The top-most fields `from` describes and `to` prunes, parents before
/// children as [`Schema::children`] goes. The two schemas are walked side
/// by side, so a path is built only for a field `to` prunes (looking every
/// path of `from` up in `to` from the root cost ECK's comparison a third of
/// its time). Below a pruned field everything is pruned as well, and below
/// one `to` keeps unknown everything is kept: neither is entered.
/// `apiVersion`, `kind` and `metadata` at the root exist in every object
/// whatever the schema says.
///
/// Where `to` has no map values for a map of `from`, the API server's
/// pruning drops every entry (`^.spec.selector{*}`): a map of strings in
/// one version and a label selector in the other lose the strings. Where
/// `to` has no items for a list of `from`, the items stay (pruning keeps
/// a list's elements whatever the schema) but lose every field: those are
/// named. The same holds for map values under `additionalProperties:
/// true`.
fn only_in(from: &Schema, to: &Schema) -> Vec<FieldPath> {
    let mut out = Vec::new();
    pruned_below(from, to, &Trail::ROOT, &mut out);
    out
}

fn pruned_below(from: &Schema, to: &Schema, at: &Trail<'_>, out: &mut Vec<FieldPath>) {
    let root = at.is_root();
    for (name, child) in &from.properties {
        if root && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let here = at.down(Step::Property(name));
        match to.properties.get(name.as_str()) {
            Some(t) => pruned_below(child, t, &here, out),
            None if to.keeps_undescribed(true) => {}
            None => out.push(here.path()),
        }
    }
    let below = [
        (from.items.as_deref(), to.items.as_deref(), Step::Items),
        (from.map_values(), to.map_values(), Step::MapValues),
    ];
    for (child, counterpart, step) in below {
        let Some(child) = child else { continue };
        let here = at.down(step);
        let entries_kept = matches!(step, Step::Items)
            || matches!(
                to.additional_properties,
                Some(AdditionalProperties::Allowed(true))
            );
        match counterpart {
            Some(t) => pruned_below(child, t, &here, out),
            None if to.keeps_undescribed(false) => {}
            None if entries_kept => all_properties(child, &here, out),
            None => out.push(here.path()),
        }
    }
}

/// The top-most properties of `s`, below `at`.
fn all_properties(s: &Schema, at: &Trail<'_>, out: &mut Vec<FieldPath>) {
    for (step, child) in s.children() {
        match step {
            Step::Property(_) => out.push(at.down(step).path()),
            _ => all_properties(child, &at.down(step), out),
        }
    }
}

fn data_loss(served: &Schema, storage: &Schema, v: &str, s: &str) -> Vec<Finding> {
    let finding = |p: FieldPath, message: String| {
        Finding::new(Check::ConversionDataLoss, Severity::Error, message)
            .in_version(v)
            .at(p.to_string())
    };
    let written = only_in(served, storage).into_iter().map(|p| {
        let message = format!(
            "{p} exists in served version {v} but not in storage version {s}: with conversion None an object \
written through {v} is only relabelled {s} and then pruned with {s}'s schema, so this field is silently dropped \
at storage time. Add it to {s}, or use a conversion webhook"
        );
        finding(p, message)
    });
    let updated = only_in(storage, served).into_iter().map(|p| {
        let message = format!(
            "{p} exists in storage version {s} but not in served version {v}: a read through {v} does not show \
it (the object is pruned with {v}'s schema on the way out, while a read through {s} still does), and an \
update made through {v} (kubectl apply or edit, a controller using {v}) writes the object back without it, \
for good. Add it to {v}, or use a conversion webhook"
        );
        finding(p, message)
    });
    written.chain(updated).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: serde_json::Value) -> Schema {
        Schema::from_value(&v).unwrap()
    }

    #[test]
    fn the_fields_one_version_prunes_are_the_top_most_ones_it_lacks() {
        let object = |props: serde_json::Value| json!({"type": "object", "properties": props});
        let from = schema(object(json!({
            "metadata": object(json!({"name": {"type": "string"}})),
            "spec": object(json!({
                "gone": object(json!({"deeper": {"type": "string"}})),
                "list": {"type": "array", "items": object(json!({
                    "n": {"type": "string"}, "m": {"type": "string"}}))},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free_map": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": object(json!({"x": {"type": "string"}})),
                "same": object(json!({"y": {"type": "string"}, "z": {"type": "string"}})),
            })),
        })));
        let to = schema(object(json!({
            "spec": object(json!({
                "list": {"type": "string"},
                "labels": object(json!({"matchLabels": {"type": "object",
                    "additionalProperties": {"type": "string"}}})),
                "free_map": {"type": "object", "additionalProperties": true},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "same": object(json!({"y": {"type": "string"}})),
            })),
        })));
        let paths: Vec<String> = only_in(&from, &to)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            paths,
            [
                "^.spec.gone",
                "^.spec.labels{*}",
                "^.spec.list[*].m",
                "^.spec.list[*].n",
                "^.spec.same.z"
            ]
        );
        let back: Vec<String> = only_in(&to, &from)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(back, ["^.spec.labels.matchLabels"]);
    }

    #[test]
    fn a_node_is_found_by_its_rendered_path() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "sp": {"type": "string"},
                "a.b": {"type": "array", "items": {"type": "object",
                    "additionalProperties": {"type": "integer"}}}}}}}),
        );
        let at = |p: &str| node_at(&s, p).and_then(Schema::type_name);
        assert_eq!(at("^"), Some("object"));
        assert_eq!(at("^.spec.sp"), Some("string"));
        assert_eq!(at("^.spec[\"a.b\"][*]{*}"), Some("integer"));
        assert_eq!(at("^.spec.spx"), None);
        assert_eq!(at("^.spec.s"), None);
    }
}
