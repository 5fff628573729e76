//! The custom resources of the inputs: the objects a repository applies
//! next to its CRDs (`-f` files, `-k` overlays, a chart's rendered
//! templates, `diff --objects PATH`), checked against the new CRD the way
//! the scan checks stored objects. An object OLD accepts and NEW refuses
//! is an apply that will fail; one whose fields NEW does not describe loses
//! them when applied. Samples are not all the objects a cluster holds, so
//! they grade no schema finding; their own failures are errors.

use std::collections::BTreeMap;

use crate::compare::{Check, Finding, ObjectsDetail};
use crate::config::Config;
use crate::crd::Crd;
use crate::manifest::{ManifestSet, Resource};
use crate::object_validation::{PrunedKind, Validator};
use crate::report::CrdReport;

use super::object_name;
use super::tally::{Kind, Tally};

/// Whether `resource` is an object of `crd` (its group and kind), and in
/// which version.
fn version_of<'r>(crd: &Crd, resource: &'r Resource) -> Option<&'r str> {
    let api_version = resource.value.get("apiVersion")?.as_str()?;
    let (group, version) = api_version.split_once('/')?;
    let kind = resource.value.get("kind")?.as_str()?;
    (group == crd.spec.group && kind == crd.spec.names.kind).then_some(version)
}

/// The findings of the objects of `new` among `resources`: each object is
/// validated against the schema of its version in NEW, and what NEW
/// refuses or drops is reported where OLD (when there is one) accepted it
/// as written. `server_minor` picks the server's rules (formats, CEL).
pub fn judge_documents(
    old: Option<&Crd>,
    new: &Crd,
    resources: &[Resource],
    server_minor: u32,
    max_examples: usize,
) -> Vec<Finding> {
    let mut by_version: BTreeMap<&str, Vec<&Resource>> = BTreeMap::new();
    for r in resources {
        if let Some(v) = version_of(new, r) {
            by_version.entry(v).or_default().push(r);
        }
    }
    let mut findings = Vec::new();
    // Offline the server ratchets nothing a new object brings: apply
    // creates most of them.
    let mut tally = Tally::new(max_examples, false);
    let mut counted = BTreeMap::new();
    // Where each reported object is, so a finding points at its first one.
    let mut places: BTreeMap<String, crate::manifest::Location> = BTreeMap::new();
    for (version, objects) in by_version {
        let Some(new_version) = new.version(version).filter(|v| v.spec.served) else {
            let first = objects[0];
            findings.push(
                Finding::new(
                    Check::ManifestObjects,
                    Check::ManifestObjects.default_severity(),
                    format!(
                        "{} of the inputs {} {version}, which the new CRD does not serve (e.g. {}): \
                         applying {} fails with 404",
                        crate::text::plural(objects.len(), "object", "objects"),
                        if objects.len() == 1 { "is in" } else { "are in" },
                        shown(first),
                        if objects.len() == 1 { "it" } else { "them" },
                    ),
                )
                .in_version(version),
            );
            continue;
        };
        let validator = match Validator::new(&new_version.schema, server_minor) {
            Ok(v) => v,
            // The new schema itself is judged by invalidCrd.
            Err(_) => continue,
        };
        let old_validator = old
            .and_then(|o| o.version(version))
            .and_then(|v| Validator::new(&v.schema, server_minor).ok());
        for r in &objects {
            let mut outcome = validator.validate(&r.value);
            // Only what OLD accepted as written: the rest was refused already.
            if let Some(o) = &old_validator {
                let before = o.validate(&r.value);
                if !before.violations.is_empty() {
                    continue;
                }
                outcome.pruned.retain(|p| {
                    !before
                        .pruned
                        .iter()
                        .any(|b| b.path == p.path && b.kind == p.kind)
                });
            }
            // A default the object lacks is what applying it means.
            outcome.pruned.retain(|p| p.kind != PrunedKind::Defaulted);
            outcome.not_evaluated.clear();
            let name = shown(r);
            if !outcome.is_clean() {
                places
                    .entry(name.clone())
                    .or_insert_with(|| r.location.clone());
            }
            tally.add(version, &name, outcome, |_| false);
        }
        counted.insert(version.to_string(), objects.len() as u64);
    }
    for (key, group) in &tally.groups {
        let of = counted.get(&key.version).copied().unwrap_or(0);
        let path = key.path.to_string();
        let of = format!("{} of {of} objects in the inputs", group.count);
        let message = match key.kind {
            Kind::Invalid => format!(
                "{of} fail {} at {path} under the new schema (e.g. {}): applying them fails",
                key.rule, group.sample
            ),
            Kind::Pruned => format!(
                "{of} carry {path}, which the new schema does not describe: the API server drops \
                 it when they are applied (data loss)"
            ),
            Kind::NullDropped => format!(
                "{of} set null at {path}, which the new schema no longer allows: the null is dropped \
                 when they are applied"
            ),
            Kind::Defaulted | Kind::NotEvaluated => continue,
        };
        let mut finding = Finding::new(
            Check::ManifestObjects,
            Check::ManifestObjects.default_severity(),
            message,
        )
        .in_version(key.version.clone())
        .at(path)
        .with_objects(ObjectsDetail {
            rule: key.rule.clone(),
            count: group.count,
            scanned: counted.get(&key.version).copied().unwrap_or(0),
            ratcheted: None,
            examples: group.examples.clone(),
        });
        // SARIF and GitHub annotations point at the object, not the schema.
        finding.location =
            group
                .examples
                .first()
                .and_then(|e| places.get(e))
                .map(|l| crate::manifest::Position {
                    file: l.file.as_str().into(),
                    line: l.line,
                    column: 1,
                });
        findings.push(finding);
    }
    findings
}

/// Adds to each CRD's entry what NEW's schema does to the custom resources
/// that came with NEW (`new.resources`: the inputs' own objects, and those
/// of `diff --objects PATH`), each judged where OLD accepted it.
pub fn judge_resources(
    old: &ManifestSet,
    new: &ManifestSet,
    config: &Config,
    crds: &mut [CrdReport],
) {
    if new.resources.is_empty() {
        return;
    }
    let policy = config.policy();
    for n in &new.crds {
        let old_crd = old.get(&n.crd.name).map(|o| &*o.crd);
        let found = judge_documents(
            old_crd,
            &n.crd,
            &new.resources,
            config.kube_version.minor,
            super::ScanOptions::default().max_examples,
        );
        if found.is_empty() {
            continue;
        }
        if let Some(entry) = crds.iter_mut().find(|c| c.name == n.crd.name) {
            let (kept, excepted) = policy.apply(&n.crd.name, found);
            entry.add(kept, excepted);
        }
    }
}

/// `file:line namespace/name`: where a reviewer finds the object.
fn shown(r: &Resource) -> String {
    format!("{} {}", r.location, object_name(&r.value))
}

#[cfg(test)]
mod tests;
