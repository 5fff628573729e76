//! What a directory of manifests holds, before parsing it: each document's
//! size and, for a CRD, its name, read from the document's top-level lines.
//!
//! A `diff` of two large directories pairs CRDs by these names and then
//! parses a few pairs at a time ([`load_documents`]), so the parsed
//! documents of both directories are never all in memory at once. Parsing
//! is the memory: a parsed CRD takes several times its text.
//!
//! The outline is a shortcut, never a second opinion. Anything it does not
//! read plainly (flow style, anchors, tags, quoted keys, a `List`) makes it
//! give up, and every document it names is checked against its parse: a
//! caller that gets `None` reads the sources the ordinary way, which also
//! reports every error exactly as before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::SharedText;
use super::input::{self, Budget, InputLimits};
use super::split::{self, Piece};
use super::{Inspect, Inspected, Positions, collect_files, is_manifest};
use crate::manifest::{Job, chart};

/// The documents of one side, file by file in reading order.
#[derive(Debug, Default)]
pub struct Outline {
    files: Vec<OutlinedFile>,
}

#[derive(Debug)]
struct OutlinedFile {
    path: PathBuf,
    /// Its length when outlined: a file that changed since is not read.
    len: usize,
    docs: Vec<Head>,
}

/// One document: its size, and its name when it is a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// Bytes of YAML.
    pub bytes: usize,
    /// `metadata.name` of a CustomResourceDefinition; `None` for any
    /// other kind.
    pub crd: Option<String>,
}

/// A document of an [`Outline`]: its file, and its place in that file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct DocRef {
    file: usize,
    doc: usize,
}

impl Outline {
    /// The document `r` names.
    pub fn head(&self, r: DocRef) -> Option<&Head> {
        self.files.get(r.file)?.docs.get(r.doc)
    }

    /// Every document in reading order.
    pub fn documents(&self) -> impl Iterator<Item = (DocRef, &Head)> {
        self.files.iter().enumerate().flat_map(|(file, f)| {
            f.docs
                .iter()
                .enumerate()
                .map(move |(doc, head)| (DocRef { file, doc }, head))
        })
    }
}

/// The manifest files under `paths`, in reading order, or `None` when one
/// is not a plain file or directory of YAML files (a chart, a JSON file, a
/// pipe, which reads once) or a path passes one of `limits` (the ordinary
/// read then says which): listed once, for both the size check and the
/// outline.
pub fn plain_files(paths: &[&Path], limits: InputLimits) -> Option<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if chart::is_chart(path) {
            return None;
        }
        let mut budget = Budget::new(limits);
        for file in collect_files(path, &mut budget).ok()? {
            if !is_manifest(&file)
                || file.extension().is_some_and(|e| e == "json")
                || !input::is_regular(&file)
            {
                return None;
            }
            budget.bytes(std::fs::metadata(&file).ok()?.len()).ok()?;
            files.push(file);
        }
    }
    Some(files)
}

/// The text of `path` when it holds at most `cap` bytes of UTF-8.
fn read_text(path: &Path, cap: u64) -> Option<Arc<String>> {
    let file = std::fs::File::open(path).ok()?;
    let data = input::read_capped(file, cap, cap).ok()??;
    input::utf8(data).ok().map(Arc::new)
}

/// Outlines `files` (as [`plain_files`] lists them under `limits`), one
/// file in memory at a time. `None` when a file cannot be read (or grew
/// past the limit since) or a document cannot be outlined.
pub fn outline(files: Vec<PathBuf>, limits: InputLimits) -> Option<Outline> {
    let mut out = Outline::default();
    for file in files {
        let text = read_text(&file, limits.file_bytes())?;
        let docs = split::pieces(&text)
            .iter()
            .map(|p| head(&p.text))
            .collect::<Option<Vec<_>>>()?;
        out.files.push(OutlinedFile {
            path: file,
            len: text.len(),
            docs,
        });
    }
    Some(out)
}

/// Parses the documents `refs` of `outline` (read again from their files)
/// into a set, in the order given. `None` when a file changed since it was
/// outlined, a document does not parse, or a parse disagrees with its
/// outline: the caller then reads the sources the ordinary way. The CRDs of
/// the second side (the new one) are inspected with `inspect_new`.
pub fn load_documents<T: Send>(
    sides: [(&Outline, &[DocRef]); 2],
    positions: Positions,
    inspect_new: Inspect<T>,
) -> Option<[Inspected<T>; 2]> {
    let mut labels = Vec::new();
    let mut jobs = Vec::new();
    let mut heads = Vec::new();
    for (side, (outline, refs)) in sides.iter().enumerate() {
        // Each file is read once, however many of its documents are asked for.
        let mut by_file: Vec<DocRef> = refs.to_vec();
        by_file.sort_unstable();
        let mut pieces = BTreeMap::new();
        let mut current: Option<(usize, Vec<Option<Piece>>)> = None;
        for r in by_file {
            if current.as_ref().is_none_or(|(f, _)| *f != r.file) {
                let file = outline.files.get(r.file)?;
                // No more than it held when outlined.
                let text = read_text(&file.path, file.len as u64)?;
                let split = split::pieces(&text);
                if text.len() != file.len || split.len() != file.docs.len() {
                    return None;
                }
                current = Some((r.file, split.into_iter().map(Some).collect()));
            }
            let (_, split) = current.as_mut()?;
            let whole_file = split.len() == 1;
            let mut piece = split.get_mut(r.doc)?.take()?;
            if !whole_file {
                // A range would keep the whole file's text alive with the
                // batch (istio's fifteen CRDs are one file): a copy of the
                // document lets the file go now.
                piece.text = SharedText::whole(piece.text.to_string());
            }
            pieces.insert(r, piece);
        }
        for r in refs.iter() {
            let file = &outline.files[r.file];
            labels.push(file.path.display().to_string());
            heads.push((side, file.docs[r.doc].crd.clone()));
            jobs.push(pieces.remove(r)?);
        }
    }
    let jobs: Vec<(Job, usize)> = jobs
        .into_iter()
        .zip(&labels)
        .zip(&heads)
        .map(|((piece, label), (side, _))| (Job::Yaml(piece, label, positions), *side))
        .collect();
    let parsed = crate::parallel::map(
        &jobs,
        |(job, _)| job.size(),
        super::PARALLEL_PARSE_BYTES,
        |(job, side)| job.parse(if *side == 1 { inspect_new } else { None }),
    );
    let mut sets = [Inspected::default(), Inspected::default()];
    for (result, (side, crd)) in parsed.into_iter().zip(heads) {
        let document = result.ok()??;
        let out = &mut sets[side];
        let before = out.set.crds.len();
        document.add(positions, out).ok()?;
        // The parse must agree with the outline: one CRD of that name, or
        // nothing but a skipped document.
        let agrees = match crd {
            Some(name) => out.set.crds.len() == before + 1 && out.set.crds.last()?.crd.name == name,
            None => out.set.crds.len() == before,
        };
        if !agrees {
            return None;
        }
    }
    Some(sets)
}

/// A document's outline from its top-level lines, or `None` when they are
/// not plain `key: value` lines this reading is sure of.
fn head(doc: &str) -> Option<Head> {
    let mut kind = None;
    let mut api_version = None;
    let mut name = None;
    let mut metadata_seen = false;
    let mut in_metadata = false;
    let mut child_indent = None;
    for line in doc.lines() {
        let content = line.trim_start_matches(' ');
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        let indent = line.len() - content.len();
        if indent == 0 {
            // The rest of a document is its spec, megabytes of it: the
            // outline stops at the first top-level key after what it
            // needs. A later repeat of these keys would win in the parse,
            // and the parse is checked against the outline.
            let metadata_done = metadata_seen && !in_metadata || name.is_some();
            if kind.is_some() && api_version.is_some() && metadata_done {
                break;
            }
            in_metadata = false;
            let (key, value) = key_value(line)?;
            match key {
                "kind" => set_once(&mut kind, scalar(value)?)?,
                "apiVersion" => set_once(&mut api_version, scalar(value)?)?,
                "metadata" => {
                    if metadata_seen {
                        return None;
                    }
                    metadata_seen = true;
                    // Flow style (`{name: x}`) leaves a CRD without a name
                    // here, which gives up below; other kinds need none.
                    in_metadata = value_is_empty(value);
                }
                _ => {}
            }
        } else if in_metadata {
            let child = *child_indent.get_or_insert(indent);
            if indent < child {
                return None;
            }
            if indent == child {
                let (key, value) = key_value(content)?;
                if key == "name" {
                    set_once(&mut name, scalar(value)?)?;
                }
            }
        }
    }
    let kind = kind.unwrap_or_default();
    if kind.ends_with("List") {
        // Its items are documents of their own: only a parse finds them.
        return None;
    }
    let is_crd = kind == "CustomResourceDefinition"
        && matches!(
            api_version,
            Some("apiextensions.k8s.io/v1" | "apiextensions.k8s.io/v1beta1")
        );
    Some(Head {
        bytes: doc.len(),
        crd: if is_crd {
            Some(name?.to_string())
        } else {
            None
        },
    })
}

/// `key: value` with a plain key; the value is the rest of the line.
fn key_value(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once(':')?;
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/'));
    if !plain || !(value.is_empty() || value.starts_with([' ', '\t'])) {
        return None;
    }
    Some((key, value))
}

/// Nothing but a comment after the colon: a block mapping follows.
fn value_is_empty(value: &str) -> bool {
    let v = value.trim();
    v.is_empty() || v.starts_with('#')
}

/// A one-line scalar: plain, or quoted without escapes.
fn scalar(value: &str) -> Option<&str> {
    let v = value.trim();
    let v = match v.find(" #").or_else(|| v.find("\t#")) {
        Some(i) if !v.starts_with(['"', '\'']) => v[..i].trim_end(),
        _ => v,
    };
    let unquoted = if let Some(inner) = v.strip_prefix('"') {
        inner
            .strip_suffix('"')
            .filter(|s| !s.contains(['"', '\\']))?
    } else if let Some(inner) = v.strip_prefix('\'') {
        inner.strip_suffix('\'').filter(|s| !s.contains('\''))?
    } else {
        v
    };
    let plain = unquoted
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/'));
    (plain && !unquoted.is_empty()).then_some(unquoted)
}

fn set_once<'a>(slot: &mut Option<&'a str>, value: &'a str) -> Option<()> {
    if slot.replace(value).is_some() {
        return None;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd_name(doc: &str) -> Option<Option<String>> {
        head(doc).map(|h| h.crd)
    }

    #[test]
    fn a_crd_is_named_from_its_metadata() {
        let doc = "# a comment\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition # here\nmetadata:\n  annotations:\n    name: not-this\n  name: \"widgets.example.com\"\nspec:\n  names:\n    kind: Widget\n";
        assert_eq!(crd_name(doc), Some(Some("widgets.example.com".into())));
        let legacy = "kind: CustomResourceDefinition\napiVersion: apiextensions.k8s.io/v1beta1\nmetadata:\n    labels: {a: b}\n    name: 'a.b.c'\n";
        assert_eq!(crd_name(legacy), Some(Some("a.b.c".into())));
    }

    #[test]
    fn other_kinds_are_outlined_without_a_name() {
        let doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  a: b\n";
        assert_eq!(crd_name(doc), Some(None));
        // A CRD kind of another API group is not ours to read.
        let doc =
            "apiVersion: example.com/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: x\n";
        assert_eq!(crd_name(doc), Some(None));
    }

    #[test]
    fn what_the_outline_cannot_be_sure_of_gives_up() {
        for doc in [
            // Flow-style metadata, a repeated key, a list, an anchor, a
            // document that is not a mapping, a quoted key, a tag.
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\n",
            "kind: CustomResourceDefinition\nkind: CustomResourceDefinition\n",
            "apiVersion: v1\nkind: List\nitems: []\n",
            "apiVersion: apiextensions.k8s.io/v1\nkind: &k CustomResourceDefinition\nmetadata:\n  name: a.b\n",
            "- a\n- b\n",
            "\"kind\": CustomResourceDefinition\n",
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: !!str a.b\n",
            // A CRD without a name.
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  labels:\n    a: b\n",
        ] {
            assert_eq!(head(doc), None, "{doc}");
        }
    }
}
