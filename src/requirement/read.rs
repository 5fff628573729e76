//! Reading requirement files: our `CRDRequirement` and OpenShift's
//! `CompatibilityRequirement` as it is, each mistake named with its file and
//! line.

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{
    Action, FieldPattern, FieldRule, Format, Requirement, RequirementError, VersionSelection,
};
use crate::config::{Config, parse_checks};
use crate::crd::Crd;
use crate::manifest::{self, InputLimits, Location, ManifestSet, Object, Source, SourceOptions};
use crate::schema::Schema;

/// Our format.
const API_VERSION: &str = "crd-safety.io/v1alpha1";
const KIND: &str = "CRDRequirement";
/// OpenShift's, read as it is.
const OPENSHIFT_API_VERSION: &str = "apiextensions.openshift.io/v1alpha1";
const OPENSHIFT_KIND: &str = "CompatibilityRequirement";

/// Keys of our `spec`.
const SPEC_KEYS: &[&str] = &[
    "owner",
    "crd",
    "versions",
    "fields",
    "excludedFields",
    "checks",
    "action",
];

/// Every requirement in `paths` (files or directories, read recursively);
/// other kinds of documents are skipped, but sources with no requirement at
/// all are an error: a mistyped path must not pass silently.
pub fn load(paths: &[PathBuf], limits: InputLimits) -> Result<Vec<Requirement>, RequirementError> {
    let sources: Vec<Source> = paths.iter().cloned().map(Source::Path).collect();
    let reading = SourceOptions {
        limits,
        ..SourceOptions::default()
    };
    let objects = manifest::read_objects(&sources, &reading)?;
    let documents = objects.len();
    let requirements = parse_objects(objects)?;
    if requirements.is_empty() {
        let input = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(RequirementError::NoRequirements { input, documents });
    }
    Ok(requirements)
}

/// The requirements among `objects` (a `List` of them too), in order.
pub fn parse_objects(objects: Vec<Object>) -> Result<Vec<Requirement>, RequirementError> {
    let mut out: Vec<Requirement> = Vec::new();
    for object in &objects {
        read_object(object, &[], &mut out)?;
    }
    for (i, r) in out.iter().enumerate() {
        if let Some(first) = out[..i].iter().find(|f| f.name == r.name) {
            return Err(RequirementError::Duplicate {
                name: r.name.clone(),
                first: first.source.clone(),
                second: r.source.clone(),
            });
        }
    }
    Ok(out)
}

/// One document (or list item, at `prefix` inside it).
fn read_object(
    object: &Object,
    prefix: &[String],
    out: &mut Vec<Requirement>,
) -> Result<(), RequirementError> {
    let mut value = &object.value;
    for step in prefix {
        value = match step.parse::<usize>() {
            Ok(i) => &value[i],
            Err(_) => &value[step.as_str()],
        };
    }
    let doc = Doc {
        object,
        prefix,
        value,
    };
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        "List" | "CRDRequirementList" | "CompatibilityRequirementList" if prefix.is_empty() => {
            let count = value
                .get("items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            for i in 0..count {
                read_object(object, &["items".into(), i.to_string()], out)?;
            }
            Ok(())
        }
        KIND if api_version == API_VERSION => {
            out.push(doc.ours()?);
            Ok(())
        }
        OPENSHIFT_KIND if api_version == OPENSHIFT_API_VERSION => {
            out.push(doc.openshift()?);
            Ok(())
        }
        KIND | OPENSHIFT_KIND => Err(doc.bad(
            &["apiVersion"],
            format!(
                "{kind} of apiVersion {api_version:?} is not read; expected {}",
                if kind == KIND {
                    API_VERSION
                } else {
                    OPENSHIFT_API_VERSION
                }
            ),
        )),
        _ => Ok(()),
    }
}

/// A requirement document being read: its value, and how to name the line
/// of any node in it.
struct Doc<'a> {
    object: &'a Object,
    prefix: &'a [String],
    value: &'a Value,
}

impl Doc<'_> {
    /// Where the node at `path` is (the document's first line when the
    /// node is absent).
    fn at(&self, path: &[&str]) -> Location {
        let mut full: Vec<&str> = self.prefix.iter().map(String::as_str).collect();
        full.extend_from_slice(path);
        match self.object.text.find(&full) {
            Some((line, _)) => Location {
                file: self.object.location.file.clone(),
                line,
            },
            None => self.object.location.clone(),
        }
    }

    fn bad(&self, path: &[&str], message: impl Into<String>) -> RequirementError {
        let message = message.into();
        let named = path.join(".");
        RequirementError::Invalid {
            location: self.at(path),
            message: if named.is_empty() {
                message
            } else {
                format!("{named}: {message}")
            },
        }
    }

    fn get(&self, path: &[&str]) -> Option<&Value> {
        let mut v = self.value;
        for step in path {
            v = match step.parse::<usize>() {
                Ok(i) => v.get(i)?,
                Err(_) => v.get(*step)?,
            };
        }
        Some(v)
    }

    fn string(&self, path: &[&str]) -> Result<Option<String>, RequirementError> {
        match self.get(path) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
            Some(other) => {
                Err(self.bad(path, format!("expected a non-empty string, found {other}")))
            }
        }
    }

    fn map(&self, path: &[&str]) -> Result<&Map<String, Value>, RequirementError> {
        match self.get(path) {
            Some(Value::Object(m)) => Ok(m),
            None | Some(Value::Null) => Err(self.bad(path, "is required")),
            Some(other) => Err(self.bad(path, format!("expected a map, found {other}"))),
        }
    }

    fn list(&self, path: &[&str]) -> Result<&[Value], RequirementError> {
        match self.get(path) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.bad(path, format!("expected a list, found {other}"))),
        }
    }

    /// `metadata.name`, with the namespace in front when there is one.
    fn name(&self) -> Result<String, RequirementError> {
        let name = self
            .string(&["metadata", "name"])?
            .ok_or_else(|| self.bad(&["metadata", "name"], "is required"))?;
        Ok(match self.string(&["metadata", "namespace"])? {
            Some(ns) => format!("{ns}/{name}"),
            None => name,
        })
    }

    fn location(&self) -> Location {
        self.at(&[])
    }

    /// `crd-safety.io/v1alpha1` `CRDRequirement`.
    fn ours(&self) -> Result<Requirement, RequirementError> {
        let name = self.name()?;
        let spec = self.map(&["spec"])?;
        if let Some(k) = spec.keys().find(|k| !SPEC_KEYS.contains(&k.as_str())) {
            return Err(self.bad(
                &["spec", k],
                format!("unknown key; valid keys: {}", SPEC_KEYS.join(", ")),
            ));
        }
        let crd_value = self.map(&["spec", "crd"])?;
        let crd = self.pinned(Value::Object(crd_value.clone()), &["spec", "crd"])?;
        let owner = self.owner()?;
        let versions = self.versions()?;
        let fields = self.rules(&["spec", "fields"])?;
        let excluded = self.rules(&["spec", "excludedFields"])?;
        let mut config = Config::default();
        if let Some(checks) = self.get(&["spec", "checks"]) {
            parse_checks(checks, &mut config).map_err(|m| self.bad(&["spec", "checks"], m))?;
        }
        let action = self.action(&["spec", "action"])?;
        self.finish(Requirement {
            name,
            owner,
            source: self.location(),
            crd,
            versions,
            fields,
            excluded,
            config,
            action,
            format: Format::CrdSafety,
        })
    }

    /// `apiextensions.openshift.io/v1alpha1` `CompatibilityRequirement`:
    /// the pinned CRD is a YAML string, the versions a default selection
    /// plus named ones, and OpenShift has no include list or owner.
    fn openshift(&self) -> Result<Requirement, RequirementError> {
        let name = self.name()?;
        let schema = ["spec", "compatibilitySchema"];
        let data_at = [schema[0], schema[1], "customResourceDefinition", "data"];
        let type_at = [schema[0], schema[1], "customResourceDefinition", "type"];
        match self.string(&type_at)?.as_deref() {
            Some("YAML") => {}
            other => {
                return Err(self.bad(
                    &type_at,
                    format!("expected YAML (the only type OpenShift defines), found {other:?}"),
                ));
            }
        }
        let data = self
            .string(&data_at)?
            .ok_or_else(|| self.bad(&data_at, "is required"))?;
        let mut set = ManifestSet::default();
        manifest::load_text(&data, "the CRD", false, &mut set)
            .map_err(|e| self.bad(&data_at, e.to_string()))?;
        let crd = match set.crds.len() {
            1 => std::sync::Arc::unwrap_or_clone(set.crds.remove(0).crd),
            n => {
                return Err(self.bad(
                    &data_at,
                    format!("expected one CustomResourceDefinition, found {n}"),
                ));
            }
        };
        let versions_at = [schema[0], schema[1], "requiredVersions"];
        let selection_at = [
            versions_at[0],
            versions_at[1],
            versions_at[2],
            "defaultSelection",
        ];
        let mut versions = match self.string(&selection_at)?.as_deref() {
            Some("StorageOnly") => VersionSelection {
                storage: true,
                ..VersionSelection::default()
            },
            Some("AllServed") => VersionSelection {
                served: true,
                ..VersionSelection::default()
            },
            other => {
                return Err(self.bad(
                    &selection_at,
                    format!("expected StorageOnly or AllServed, found {other:?}"),
                ));
            }
        };
        let additional_at = [
            versions_at[0],
            versions_at[1],
            versions_at[2],
            "additionalVersions",
        ];
        versions.named = self.strings(&additional_at)?;
        let excluded = self.rules(&[schema[0], schema[1], "excludedFields"])?;
        let action =
            self.action(&["spec", "customResourceDefinitionSchemaValidation", "action"])?;
        self.finish(Requirement {
            name,
            owner: None,
            source: self.location(),
            crd,
            versions,
            fields: Vec::new(),
            excluded,
            config: Config::default(),
            action,
            format: Format::OpenShift,
        })
    }

    /// The CRD a requirement pins, read into the model.
    fn pinned(&self, value: Value, at: &[&str]) -> Result<Crd, RequirementError> {
        if value.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            return Err(self.bad(at, "expected a CustomResourceDefinition"));
        }
        Crd::from_manifest(manifest::normalize_to_v1(value))
            .map_err(|e| self.bad(at, e.to_string()))
    }

    /// `owner: text` or `owner: {name, contact}`.
    fn owner(&self) -> Result<Option<String>, RequirementError> {
        let at = ["spec", "owner"];
        match self.get(&at) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(_)) => self.string(&at),
            Some(Value::Object(m)) => {
                if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "name" | "contact")) {
                    return Err(self.bad(
                        &["spec", "owner", k],
                        "unknown key; valid keys: name, contact",
                    ));
                }
                let name = self.string(&["spec", "owner", "name"])?;
                let contact = self.string(&["spec", "owner", "contact"])?;
                Ok(match (name, contact) {
                    (Some(n), Some(c)) => Some(format!("{n}, {c}")),
                    (n, c) => n.or(c),
                })
            }
            Some(other) => Err(self.bad(
                &at,
                format!("expected a text or {{name, contact}}, found {other}"),
            )),
        }
    }

    /// `versions: storage | served | [names...]` (default: served).
    fn versions(&self) -> Result<VersionSelection, RequirementError> {
        let at = ["spec", "versions"];
        let words: Vec<String> = match self.get(&at) {
            None | Some(Value::Null) => vec!["served".into()],
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(_)) => self.strings(&at)?,
            Some(other) => {
                return Err(self.bad(
                    &at,
                    format!("expected storage, served or a list of versions, found {other}"),
                ));
            }
        };
        if words.is_empty() {
            return Err(self.bad(&at, "holds no version"));
        }
        let mut selection = VersionSelection::default();
        for word in words {
            match word.as_str() {
                "storage" => selection.storage = true,
                "served" => selection.served = true,
                _ => selection.named.push(word),
            }
        }
        Ok(selection)
    }

    fn strings(&self, at: &[&str]) -> Result<Vec<String>, RequirementError> {
        let mut out = Vec::new();
        for (i, item) in self.list(at)?.iter().enumerate() {
            match item {
                Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                other => {
                    let index = i.to_string();
                    let mut path = at.to_vec();
                    path.push(&index);
                    return Err(self.bad(&path, format!("expected a version name, found {other}")));
                }
            }
        }
        Ok(out)
    }

    /// A list of field paths, each a string or `{path, versions}`.
    fn rules(&self, at: &[&str]) -> Result<Vec<FieldRule>, RequirementError> {
        let mut out = Vec::new();
        for (i, item) in self.list(at)?.iter().enumerate() {
            let index = i.to_string();
            let mut here = at.to_vec();
            here.push(&index);
            let (text, versions) = match item {
                Value::String(s) => (s.as_str(), Vec::new()),
                Value::Object(m) => {
                    if let Some(k) = m
                        .keys()
                        .find(|k| !matches!(k.as_str(), "path" | "versions"))
                    {
                        let mut path = here.clone();
                        path.push(k);
                        return Err(self.bad(&path, "unknown key; valid keys: path, versions"));
                    }
                    let mut path_at = here.clone();
                    path_at.push("path");
                    let Some(Value::String(s)) = m.get("path") else {
                        return Err(self.bad(&path_at, "is required, a field path"));
                    };
                    let mut versions_at = here.clone();
                    versions_at.push("versions");
                    (s.as_str(), self.strings(&versions_at)?)
                }
                other => {
                    return Err(self.bad(&here, format!("expected a field path, found {other}")));
                }
            };
            let path = FieldPattern::parse(text).map_err(|m| self.bad(&here, m))?;
            out.push(FieldRule { path, versions });
        }
        Ok(out)
    }

    fn action(&self, at: &[&str]) -> Result<Action, RequirementError> {
        match self.string(at)?.as_deref() {
            None | Some("Deny") => Ok(Action::Deny),
            Some("Warn") => Ok(Action::Warn),
            Some(other) => Err(self.bad(at, format!("expected Deny or Warn, found {other:?}"))),
        }
    }

    /// What can only be checked against the pinned CRD: named versions it
    /// has, at least one version held, and included fields its held
    /// versions describe (a typo there would silently hold nothing).
    fn finish(&self, r: Requirement) -> Result<Requirement, RequirementError> {
        let (versions_at, fields_at): (&[&str], &[&str]) = match r.format {
            Format::CrdSafety => (&["spec", "versions"], &["spec", "fields"]),
            Format::OpenShift => (
                &[
                    "spec",
                    "compatibilitySchema",
                    "requiredVersions",
                    "additionalVersions",
                ],
                &["spec", "compatibilitySchema", "excludedFields"],
            ),
        };
        if let Some(v) = r.versions.named.iter().find(|v| r.crd.version(v).is_none()) {
            let have: Vec<&str> = r.crd.versions.iter().map(|v| v.name()).collect();
            return Err(self.bad(
                versions_at,
                format!(
                    "the pinned CRD has no version {v} (it has {})",
                    have.join(", ")
                ),
            ));
        }
        let held = r.held_versions();
        if held.is_empty() {
            return Err(self.bad(versions_at, "selects no version of the pinned CRD"));
        }
        for (i, rule) in r.fields.iter().enumerate() {
            let described = held.iter().any(|v| {
                rule.applies_in(v)
                    && r.crd
                        .version(v)
                        .is_some_and(|cv| describes(&cv.schema, rule.path.names()))
            });
            if !described {
                let index = i.to_string();
                let mut at = fields_at.to_vec();
                at.push(&index);
                return Err(self.bad(
                    &at,
                    format!(
                        "{} is not a field of the pinned CRD in {}",
                        rule.path,
                        held.join(", ")
                    ),
                ));
            }
        }
        Ok(r)
    }
}

/// Whether `schema` describes the field `names` (list items and map values
/// passed through, anything under preserved unknown fields accepted).
pub(super) fn describes(schema: &Schema, names: &[String]) -> bool {
    let mut node = schema;
    for name in names {
        loop {
            if let Some(child) = node.properties.get(name.as_str()) {
                node = child;
                break;
            }
            if let Some(items) = node.items.as_deref() {
                node = items;
            } else if let Some(values) = node.map_values() {
                node = values;
            } else {
                return node.preserves_unknown_fields();
            }
        }
    }
    true
}
