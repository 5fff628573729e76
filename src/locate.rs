//! Where each finding is in the manifests: file, line and column of its
//! schema node in NEW, or in OLD for what NEW no longer has (a removed field
//! or version). CRD-wide findings point at the spec node they are about
//! (`spec.scope`, the version entry), or at the document's start.
//!
//! Runs once over a finished report, so the checks never deal with
//! positions, and only documents with findings are indexed.

use std::sync::Arc;

use serde_json::Value;

use crate::compare::{Family, Finding, reported_crd_key, reported_keyword};
use crate::manifest::{LoadedCrd, ManifestSet, Position};
use crate::report::{CrdReport, Report};

/// Fills in `location` on every finding (reported and excepted) of `report`
/// that has none yet.
pub fn locate(report: &mut Report, old: &ManifestSet, new: &ManifestSet) {
    locate_crds(&mut report.crds, old, new);
}

/// [`locate`] for some of a report's entries, with the sets they were
/// read from (a `diff` of large directories places each batch of CRDs
/// while its documents are still parsed).
pub fn locate_crds(crds: &mut [CrdReport], old: &ManifestSet, new: &ManifestSet) {
    prepare(crds, old, new);
    // Findings are placed independently of each other, and a large CRD can
    // have hundreds (a description change on every field): they are
    // placed on all cores, then written back in the same order.
    let mut unplaced = Vec::new();
    for crd in crds.iter() {
        let sides = (old.get(&crd.name), new.get(&crd.name));
        for f in crd_findings(crd) {
            if f.location.is_none() {
                unplaced.push((f, sides));
            }
        }
    }
    let positions = crate::parallel::map(
        &unplaced,
        |_| 1,
        PARALLEL_FINDINGS,
        |(f, (o, n))| position(f, *o, *n),
    );
    drop(unplaced);
    let mut positions = positions.into_iter();
    for crd in crds {
        // One shared file name per side: a CRD can have thousands of
        // findings, and a path per finding was a tenth of a large report.
        let files = [old, new].map(|set| {
            set.get(&crd.name)
                .map(|c| Arc::<str>::from(c.location.file.as_str()))
        });
        let findings = crd
            .findings
            .iter_mut()
            .chain(crd.excepted.iter_mut().map(|e| &mut e.finding));
        for f in findings.filter(|f| f.location.is_none()) {
            f.location = positions.next().flatten().and_then(|spot| {
                Some(Position {
                    file: files[usize::from(spot.in_new)].clone()?,
                    line: spot.line,
                    column: spot.column,
                })
            });
        }
    }
}

/// Below this many findings to place, one thread places them all.
const PARALLEL_FINDINGS: usize = 64;

/// A CRD's reported and excepted findings, in report order.
fn crd_findings(crd: &CrdReport) -> impl Iterator<Item = &Finding> {
    crd.findings
        .iter()
        .chain(crd.excepted.iter().map(|e| &e.finding))
}

/// Indexes, in parallel, the documents that findings will be looked up in:
/// an index is one pass of the YAML parser over a whole document, as long
/// as the `diff` itself on a large CRD with findings on both sides.
fn prepare(crds: &[CrdReport], old: &ManifestSet, new: &ManifestSet) {
    let mut texts = Vec::new();
    for crd in crds {
        let unplaced = crd_findings(crd).any(|f| f.location.is_none());
        if unplaced {
            for side in [new.get(&crd.name), old.get(&crd.name)]
                .into_iter()
                .flatten()
            {
                texts.extend(side.text.as_deref());
            }
        }
    }
    crate::parallel::map(&texts, |t| t.size(), 0, |t| t.prepare());
}

/// A place in one side's document of a CRD.
struct Spot {
    in_new: bool,
    line: usize,
    column: usize,
}

/// The finding's node: the exact node in NEW, else in OLD, else the
/// deepest ancestor NEW has, else the document's start.
fn position(f: &Finding, old: Option<&LoadedCrd>, new: Option<&LoadedCrd>) -> Option<Spot> {
    let sides = || {
        [(true, new), (false, old)]
            .into_iter()
            .filter_map(|(in_new, side)| Some((in_new, side?)))
    };
    let spot = |in_new, (line, column)| Spot {
        in_new,
        line,
        column,
    };
    for (in_new, side) in sides() {
        let path = node_path(f, side);
        if !path.has_version {
            continue;
        }
        for candidate in [&path.with_keyword, &path.node] {
            if let Some(p) = find(side, candidate) {
                return Some(spot(in_new, p));
            }
        }
    }
    for (in_new, side) in sides() {
        let path = node_path(f, side).node;
        for len in (0..path.len()).rev() {
            if let Some(p) = find(side, &path[..len]) {
                return Some(spot(in_new, p));
            }
        }
        if side.location.line > 0 {
            return Some(spot(in_new, (side.location.line, 1)));
        }
    }
    None
}

fn find(side: &LoadedCrd, path: &[String]) -> Option<(usize, usize)> {
    let text = side.text.as_ref()?;
    let segments: Vec<&str> = path.iter().map(String::as_str).collect();
    text.find(&segments)
}

/// A finding's node as manifest path segments, and the same followed by
/// the schema keyword its check is about (`maximum`).
struct NodePath {
    node: Vec<String>,
    with_keyword: Vec<String>,
    /// False when the finding names a version this side does not have.
    has_version: bool,
}

fn node_path(f: &Finding, side: &LoadedCrd) -> NodePath {
    let mut node: Vec<String> = Vec::new();
    let version = f
        .version
        .as_deref()
        // `v1alpha1 -> v1` (two served versions): the second one.
        .map(|v| v.rsplit(" -> ").next().unwrap_or(v));
    let version_entry = version.and_then(|v| version_index(&side.crd.manifest, v));
    let mut keyword: Option<&str> = None;
    match f.path.as_deref() {
        Some(p) if p.starts_with('^') => {
            if let Some(i) = version_entry {
                node.extend(["spec", "versions", &i.to_string(), "schema"].map(String::from));
            } else {
                node.extend(["spec", "validation"].map(String::from));
            }
            node.push("openAPIV3Schema".into());
            node.extend(schema_segments(p));
            keyword = reported_keyword(f.check);
        }
        // The API server's own field paths (invalidCrd). It names a schema
        // shared by every version `spec.validation`, as v1beta1 wrote it.
        Some(p) => {
            node.extend(field_segments(p));
            let legacy_text = find(side, &["spec".into(), "validation".into()]).is_some();
            if node.starts_with(&["spec".into(), "validation".into()]) && !legacy_text {
                let i = version_entry.unwrap_or(0).to_string();
                node.splice(0..2, ["spec", "versions", &i, "schema"].map(String::from));
            }
        }
        None if f.check.family() == Family::Presence => {}
        None => {
            if let Some(i) = version_entry {
                node.extend(["spec", "versions", &i.to_string()].map(String::from));
            } else {
                node.push("spec".into());
            }
            keyword = reported_crd_key(f.check, version_entry.is_some());
        }
    }
    let mut with_keyword = node.clone();
    with_keyword.extend(keyword.map(String::from));
    NodePath {
        node,
        with_keyword,
        has_version: version.is_none() || version_entry.is_some(),
    }
}

fn version_index(manifest: &Value, name: &str) -> Option<usize> {
    manifest
        .pointer("/spec/versions")?
        .as_array()?
        .iter()
        .position(|v| v.get("name").and_then(Value::as_str) == Some(name))
}

/// `^.spec.ports[*].name` -> `properties spec properties ports items
/// properties name`. A quoted name (`["a.b"]`) is read back as Rust's
/// `{:?}` wrote it.
fn schema_segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path.strip_prefix('^').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("[*]") {
            out.push("items".into());
            rest = r;
        } else if let Some(r) = rest.strip_prefix("{*}") {
            out.push("additionalProperties".into());
            rest = r;
        } else if let Some(r) = rest.strip_prefix("[\"") {
            let (name, after) = quoted(r);
            out.extend(["properties".to_string(), name]);
            rest = after.strip_prefix("\"]").unwrap_or(after);
        } else if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[', '{']).unwrap_or(r.len());
            out.extend(["properties".to_string(), r[..end].to_string()]);
            rest = &r[end..];
        } else {
            break;
        }
    }
    out
}

/// The body of a `{:?}` string up to its closing quote, and what follows.
fn quoted(s: &str) -> (String, &str) {
    let mut name = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (name, &s[i..]),
            '\\' => {
                if let Some((_, e)) = chars.next() {
                    name.push(match e {
                        'n' => '\n',
                        't' => '\t',
                        'r' => '\r',
                        other => other,
                    });
                }
            }
            c => name.push(c),
        }
    }
    (name, "")
}

/// `spec.versions[0].schema.openAPIV3Schema.properties[spec].type` ->
/// its steps.
fn field_segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
            }
            '[' => {
                if !current.is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                let key: String = chars.by_ref().take_while(|&c| c != ']').collect();
                out.push(key);
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_paths_become_manifest_steps() {
        assert_eq!(
            schema_segments("^.spec.ports[*].name"),
            [
                "properties",
                "spec",
                "properties",
                "ports",
                "items",
                "properties",
                "name"
            ]
        );
        assert_eq!(
            schema_segments(r#"^.spec.labels{*}["a.b\"c"].x"#),
            [
                "properties",
                "spec",
                "properties",
                "labels",
                "additionalProperties",
                "properties",
                "a.b\"c",
                "properties",
                "x"
            ]
        );
        assert!(schema_segments("^").is_empty());
    }

    #[test]
    fn api_server_field_paths_become_manifest_steps() {
        assert_eq!(
            field_segments("spec.versions[0].schema.openAPIV3Schema.properties[spec].type"),
            [
                "spec",
                "versions",
                "0",
                "schema",
                "openAPIV3Schema",
                "properties",
                "spec",
                "type"
            ]
        );
    }
}
