//! The API server's validation of a CustomResourceDefinition, offline.
//!
//! A port of `apiextensions-apiserver`'s `ValidateCustomResourceDefinition`
//! (and the update rules of `ValidateCustomResourceDefinitionUpdate` that
//! relax it for what the stored CRD already had), read rule by rule from the
//! server's source, so that a CI job without a cluster learns what the server
//! would refuse: object metadata, names, versions, conversion, structural
//! schemas, defaults, list and map types, JSONPaths of printer columns,
//! selectable fields and scale, and the fields and syntax of CEL rules.
//! Errors carry the server's own paths and wording ([`field`]).
//!
//! CEL rules are type-checked as far as their cost estimate needs
//! (`cel::env::check`) and estimated with a port of the server's estimator
//! (`cel::env::cost`, sizes from `cel::env::decl`). Not yet covered offline: a call
//! with no matching overload (`apply-check` still asks the server's dry
//! run). The judged Kubernetes version is [`KubeVersion`].

pub mod ca_bundle;
mod cel_rules;
mod columns;
mod conversion;
mod defaults;
pub mod field;
mod meta;
pub mod names;
mod schema_rules;
mod spec;

use serde_json::Value;

use crate::cel::env::types as cel_types;
use crate::compare::{Check, Finding, Severity};
pub use crate::kube_version::{KubeVersion, KubeVersionSource};
use crate::openapi::keywords;
use crate::openapi::props::{self as json, Obj};
pub use field::{ErrorType, FieldError, FieldPath};

/// What the server requires of a schema; an update relaxes some of these
/// when the stored CRD already broke them ("don't tighten validation on
/// existing persisted data").
#[derive(Debug, Clone, Copy)]
pub(crate) struct SchemaOptions<'a> {
    pub require_structural: bool,
    pub require_pruned_defaults: bool,
    pub require_atomic_set_type: bool,
    pub require_map_list_keys_map_set: bool,
    pub require_valid_property_type: bool,
    pub kube: KubeVersion,
    /// The version's schema equals the stored CRD's: rule costs count
    /// toward the schema total only.
    pub suppress_per_expression_cost: bool,
    /// The rules and message expressions of the stored CRD, which compile
    /// with the server's own CEL libraries; `None` on a create.
    pub stored_expressions: Option<&'a foldhash::HashSet<&'a str>>,
}

/// What the stored CRD already breaks: the server does not start enforcing
/// these rules on an update ("don't tighten validation on existing
/// persisted data").
#[derive(Debug, Clone)]
pub struct OldCrdFacts<'a> {
    non_structural: bool,
    unpruned_defaults: bool,
    non_atomic_set: bool,
    invalid_map_list_keys: bool,
    invalid_types: bool,
    missing_schemas: bool,
    recognized_review_versions: bool,
    /// Each stored version's `schema`, by version name: a version whose
    /// schema is unchanged is not held to the per-rule cost limit again.
    schemas: Vec<(&'a str, &'a Value)>,
    /// Every `rule` and `messageExpression` the stored CRD has.
    expressions: foldhash::HashSet<&'a str>,
    /// The stored CRD's spec, for the relaxations that compare a field
    /// with its stored value (too many unchanged selectable fields).
    spec: Option<&'a Obj>,
}

impl Default for OldCrdFacts<'_> {
    /// A create: nothing is relaxed.
    fn default() -> Self {
        OldCrdFacts {
            non_structural: false,
            unpruned_defaults: false,
            non_atomic_set: false,
            invalid_map_list_keys: false,
            invalid_types: false,
            missing_schemas: false,
            recognized_review_versions: true,
            schemas: Vec::new(),
            expressions: foldhash::HashSet::default(),
            spec: None,
        }
    }
}

impl<'a> OldCrdFacts<'a> {
    fn of(old: &'a Value) -> OldCrdFacts<'a> {
        let Some(spec) = old.get("spec").and_then(Value::as_object) else {
            return OldCrdFacts::default();
        };
        let schemas: Vec<&Obj> = version_schemas(spec);
        let root = FieldPath::new("x");
        let opts = SchemaOptions {
            require_structural: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set: true,
            require_valid_property_type: true,
            kube: KubeVersion::NEWEST,
            suppress_per_expression_cost: false,
            stored_expressions: None,
        };
        // Each schema converted and checked once, for both questions.
        let checked: Vec<Option<Result<Vec<FieldError>, Vec<FieldError>>>> = schemas
            .iter()
            .map(|s| {
                schema_rules::new_structural_error(s)
                    .is_none()
                    .then(|| schema_rules::structural_then_defaults(s, &root, &opts))
            })
            .collect();
        let non_structural = checked.iter().any(|c| !matches!(c, Some(Ok(_))));
        let unpruned_defaults = checked.iter().any(|c| {
            matches!(c, Some(Ok(defaults)) if defaults
                .iter()
                .any(|e| e.detail == "must not have unknown fields"))
        });
        // Three questions about single nodes, asked in one walk that stops
        // once all three are answered yes.
        let (non_atomic_set, invalid_map_list_keys, invalid_types) = (
            std::cell::Cell::new(false),
            std::cell::Cell::new(false),
            std::cell::Cell::new(false),
        );
        spec_has(spec, &|s| {
            if !non_atomic_set.get() && is_non_atomic_set(s) {
                non_atomic_set.set(true);
            }
            if !invalid_map_list_keys.get()
                && !schema_rules::map_list_keys_map_set(&keywords::Keywords::of(s), &root)
                    .is_empty()
            {
                invalid_map_list_keys.set(true);
            }
            if !invalid_types.get() {
                let t = json::str_of(s, "type");
                if !t.is_empty()
                    && !["array", "boolean", "integer", "number", "object", "string"].contains(&t)
                {
                    invalid_types.set(true);
                }
            }
            non_atomic_set.get() && invalid_map_list_keys.get() && invalid_types.get()
        });
        let (non_atomic_set, invalid_map_list_keys, invalid_types) = (
            non_atomic_set.get(),
            invalid_map_list_keys.get(),
            invalid_types.get(),
        );
        let missing_schemas = json::arr_of(spec, "versions").iter().any(|v| {
            v.get("schema")
                .and_then(|s| s.get("openAPIV3Schema"))
                .is_none_or(Value::is_null)
        });
        let recognized_review_versions = match old
            .pointer("/spec/conversion/webhook/conversionReviewVersions")
            .and_then(Value::as_array)
        {
            None => true,
            Some(a) if a.is_empty() => true,
            Some(a) => a
                .iter()
                .any(|v| matches!(v.as_str(), Some("v1" | "v1beta1"))),
        };
        let schemas = json::arr_of(spec, "versions")
            .iter()
            .filter_map(|v| {
                let name = v.get("name")?.as_str()?;
                let schema = v.get("schema").filter(|s| !s.is_null())?;
                Some((name, schema))
            })
            .collect();
        let mut expressions = foldhash::HashSet::default();
        collect_expressions(old, &mut expressions);
        OldCrdFacts {
            schemas,
            expressions,
            spec: Some(spec),
            non_structural,
            unpruned_defaults,
            non_atomic_set,
            invalid_map_list_keys,
            invalid_types,
            missing_schemas,
            recognized_review_versions,
        }
    }
}

impl OldCrdFacts<'_> {
    /// Whether the stored CRD broke none of the rules an update relaxes
    /// (judging against these facts is then judging strictly, per-rule
    /// costs aside).
    fn relaxes_nothing(&self) -> bool {
        !(self.non_structural
            || self.unpruned_defaults
            || self.non_atomic_set
            || self.invalid_map_list_keys
            || self.invalid_types
            || self.missing_schemas)
            && self.recognized_review_versions
    }

    /// Whether version `name` had exactly this `schema` in the stored CRD.
    fn schema_unchanged(&self, name: &str, schema: &Value) -> bool {
        self.schemas
            .iter()
            .any(|(n, s)| *n == name && crate::json::json_eq(s, schema))
    }
}

/// Every `rule` and `messageExpression` under `v`.
fn collect_expressions<'a>(v: &'a Value, out: &mut foldhash::HashSet<&'a str>) {
    match v {
        Value::Object(m) => {
            for rule in json::arr_of(m, "x-kubernetes-validations") {
                for key in ["rule", "messageExpression"] {
                    if let Some(text) = rule.get(key).and_then(Value::as_str) {
                        out.insert(text);
                    }
                }
            }
            for child in m.values() {
                collect_expressions(child, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_expressions(x, out)),
        _ => {}
    }
}

/// A `set` list whose items are neither scalars nor atomic.
fn is_non_atomic_set(s: &Obj) -> bool {
    if s.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("set") {
        return false;
    }
    let Some(is) = json::items(s) else {
        return false;
    };
    match json::str_of(is, "type") {
        "array" => is
            .get("x-kubernetes-list-type")
            .and_then(Value::as_str)
            .is_some_and(|t| t != "atomic"),
        "object" => is.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic"),
        _ => false,
    }
}

fn version_schemas(spec: &Obj) -> Vec<&Obj> {
    json::arr_of(spec, "versions")
        .iter()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .filter_map(Value::as_object)
        .collect()
}

/// Whether any node of any version's schema matches `pred`.
fn spec_has(spec: &Obj, pred: &dyn Fn(&Obj) -> bool) -> bool {
    version_schemas(spec)
        .into_iter()
        .any(|s| schema_rules::schema_has(s, pred))
}

/// Why Go's `regexp.Compile` would refuse `pattern`, if it would: the
/// same Go-RE2 reading the object validator uses (and its cache).
fn go_regex_error(pattern: &str) -> Option<String> {
    crate::re2::check_go_cached(pattern)
        .err()
        .map(|e| e.to_string())
}

/// Everything the API server would refuse in `manifest` (a CRD normalized to
/// `apiextensions.k8s.io/v1`), judged as a create, or as an update of `old`
/// when the CRD exists.
pub fn validate_crd(manifest: &Value, old: Option<&Value>, kube: KubeVersion) -> Vec<FieldError> {
    let empty = Obj::new();
    let spec = manifest
        .get("spec")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let plural = manifest
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = json::str_of(spec, "group");
    let mut errs = meta::validate_metadata(manifest, plural, group);
    // What the stored CRD already breaks only matters when the new one
    // breaks something: judge strictly first, and relax only then.
    let mut spec_errs = spec::validate_spec(spec, None, kube);
    if !spec_errs.is_empty()
        && let Some(old) = old
    {
        let facts = OldCrdFacts::of(old);
        // A stored CRD that breaks none of the relaxed rules leaves the
        // strict verdict as it is, but for the cost limit of single rules,
        // which a version with an unchanged schema is not held to again.
        let rule_cost = spec_errs.iter().any(|e| {
            e.detail.starts_with("estimated rule cost exceeds")
                || e.detail
                    .starts_with("estimated messageExpression cost exceeds")
        });
        // Nor are the rules it already has held to the libraries of new
        // rules.
        let new_library = spec_errs
            .iter()
            .any(|e| e.detail.contains(cel_types::NEW_LIBRARY));
        // Nor is a list of selectable fields the stored CRD already had
        // too many of (from 1.35).
        let too_many_selectable = spec_errs.iter().any(|e| {
            e.kind == field::ErrorType::TooMany && e.path.to_string().ends_with("selectableFields")
        });
        if rule_cost || new_library || too_many_selectable || !facts.relaxes_nothing() {
            spec_errs = spec::validate_spec(spec, Some(&facts), kube);
        }
    }
    errs.extend(spec_errs);
    if let Some(old) = old
        && kube.minor >= CA_BUNDLE_CHECKED_SINCE
        && !allows_invalid_ca_bundle(old)
    {
        errs.extend(ca_bundle_errors(manifest));
    }
    let old_preserved = old
        .and_then(|o| o.pointer("/spec/preserveUnknownFields"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !old_preserved && json::bool_of(spec, "preserveUnknownFields") {
        errs.push(
            FieldError::invalid(
                FieldPath::new("spec").child("preserveUnknownFields"),
                Value::Bool(true),
                "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
            )
            .with_fix("drop spec.preserveUnknownFields and mark the schema nodes that keep unknown fields"),
        );
    }
    errs.extend(meta::validate_api_approval(manifest, old, group));
    errs
}

/// The first minor whose updates check the conversion webhook's caBundle.
const CA_BUNDLE_CHECKED_SINCE: u32 = 31;

/// `allowInvalidCABundle`: an update may keep a caBundle client-go cannot
/// use when the stored CRD is not established (a 1.31+ server never
/// establishes one with a bad caBundle) or its own caBundle was bad too.
fn allows_invalid_ca_bundle(old: &Value) -> bool {
    let established = old
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        });
    if !established {
        return true;
    }
    match ca_bundle_of(old) {
        None => false,
        Some(bytes) => ca_bundle::ca_bundle_error(&bytes).is_some(),
    }
}

/// The decoded, non-empty `caBundle` of a CRD's conversion webhook.
fn ca_bundle_of(crd: &Value) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text = crd
        .pointer("/spec/conversion/webhook/clientConfig/caBundle")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())?;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()
        .filter(|b| !b.is_empty())
}

/// `ValidateCABundle` of the new CRD's conversion webhook, at the path
/// the server's internal form names.
fn ca_bundle_errors(manifest: &Value) -> Option<FieldError> {
    if manifest.pointer("/spec/conversion/strategy") != Some(&Value::from("Webhook")) {
        return None;
    }
    let bytes = ca_bundle_of(manifest)?;
    let why = ca_bundle::ca_bundle_error(&bytes)?;
    let text = manifest
        .pointer("/spec/conversion/webhook/clientConfig/caBundle")
        .cloned()
        .unwrap_or(Value::Null);
    Some(
        FieldError::invalid(
            FieldPath::new("spec")
                .child("conversion")
                .child("webhookClientConfig")
                .child("caBundle"),
            text,
            why,
        )
        .with_fix("give the PEM-encoded CA certificate that signed the webhook's serving certificate, base64-encoded"),
    )
}

/// The `invalidCrd` findings for one CRD.
pub fn findings(manifest: &Value, old: Option<&Value>, kube: KubeVersion) -> Vec<Finding> {
    let versions: Vec<String> = manifest
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| {
                    v.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default();
    validate_crd(manifest, old, kube)
        .into_iter()
        .map(|e| {
            let version = version_of(e.path.as_str(), &versions);
            let mut message = format!(
                "the API server (Kubernetes {kube}) refuses this CRD: {}",
                e.body()
            );
            if let Some(fix) = &e.fix {
                message.push_str("; fix: ");
                message.push_str(fix);
            }
            let mut finding = Finding::new(Check::InvalidCrd, Severity::Error, message)
                .at(e.path.to_string())
                .values(None, e.value);
            finding.version = version;
            finding
        })
        .collect()
}

/// `spec.versions[2]...` -> the name of version 2.
fn version_of(path: &str, versions: &[String]) -> Option<String> {
    let rest = path.strip_prefix("spec.versions[")?;
    let idx: usize = rest.split(']').next()?.parse().ok()?;
    versions.get(idx).cloned()
}

#[cfg(test)]
mod tests;
