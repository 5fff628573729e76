//! The load pipeline: texts to documents (split, parsed in parallel past a
//! size), documents to CRDs (normalized to v1), CRDs into a set.

use std::sync::Arc;

use serde_json::Value;

use crate::crd::{Crd, CrdError};

use super::*;

/// Reads every source into one set, with default [`SourceOptions`].
pub fn load(sources: &[Source]) -> Result<ManifestSet, ManifestError> {
    load_with(sources, &SourceOptions::default())
}

/// Reads the two sides of a comparison at once, each on a thread of its
/// own: parsing is most of a `diff`'s work on large CRDs.
pub fn load_both(
    old: &[Source],
    new: &[Source],
    opts: &SourceOptions,
) -> (
    Result<ManifestSet, ManifestError>,
    Result<ManifestSet, ManifestError>,
) {
    let (old, new) = load_both_inspecting::<()>(old, new, opts, None);
    (old, new.map(|i| i.set))
}

/// Work done on each CRD of a side right where it was parsed: on the
/// parsing thread, while the CRD's tree is still in the cache, and
/// alongside the parsing of everything else. `diff` judges each new CRD
/// this way (`invalidCrd`), which spares it a second trip through memory
/// for the whole tree and lets the judging overlap the old side's parsing.
pub type Inspect<'a, T> = Option<&'a (dyn Fn(&Crd) -> T + Sync)>;

/// A side read with an [`Inspect`]: `results[i]` is what it returned for
/// `set.crds[i]`; `None` for a CRD it did not see (one inside a `List`,
/// read out after the parsing), which the caller inspects itself.
#[derive(Debug, Clone)]
pub struct Inspected<T> {
    pub set: ManifestSet,
    pub results: Vec<Option<T>>,
}

impl<T> Default for Inspected<T> {
    fn default() -> Self {
        Inspected {
            set: ManifestSet::default(),
            results: Vec::new(),
        }
    }
}

/// [`load_both`], with `inspect` run on each CRD of `new`.
pub fn load_both_inspecting<T: Send>(
    old: &[Source],
    new: &[Source],
    opts: &SourceOptions,
    inspect: Inspect<T>,
) -> (
    Result<ManifestSet, ManifestError>,
    Result<Inspected<T>, ManifestError>,
) {
    std::thread::scope(|scope| {
        let Ok(old_read) = crate::parallel::thread().spawn_scoped(scope, || load_with(old, opts))
        else {
            // No thread to be had: one after the other.
            return (load_with(old, opts), load_side(new, opts, inspect, true));
        };
        let new = load_side(new, opts, inspect, true);
        // A panic while reading is a bug: raised here as it would be on
        // this thread.
        let old = old_read
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (old, new)
    })
}

/// Reads every source into one set. An empty result is an error: a
/// comparison against nothing would pass silently.
pub fn load_with(sources: &[Source], opts: &SourceOptions) -> Result<ManifestSet, ManifestError> {
    load_with_inspecting::<()>(sources, opts, None).map(|i| i.set)
}

/// [`load_with`] of what a release upgrades to: sources that are all
/// charts read whole and render no CRD are an answer, the upgrade deleting
/// every CRD the release had, not an input error (see [`load_side`]).
pub fn load_upgrade(
    sources: &[Source],
    opts: &SourceOptions,
) -> Result<ManifestSet, ManifestError> {
    load_side::<()>(sources, opts, None, true).map(|i| i.set)
}

/// [`load_with`], with `inspect` run on each CRD.
pub fn load_with_inspecting<T: Send>(
    sources: &[Source],
    opts: &SourceOptions,
    inspect: Inspect<T>,
) -> Result<Inspected<T>, ManifestError> {
    load_side(sources, opts, inspect, false)
}

/// [`load_with_inspecting`]; `upgrade` says the sources are what a release
/// upgrades to (NEW of a `diff`), where charts read whole that render no
/// CRD are an answer, not an error: the upgrade deletes every CRD the
/// release rendered before (a value such as cert-manager's `crds.enabled`
/// switched them all off).
pub(super) fn load_side<T: Send>(
    sources: &[Source],
    opts: &SourceOptions,
    inspect: Inspect<T>,
    upgrade: bool,
) -> Result<Inspected<T>, ManifestError> {
    let mut out = Inspected {
        set: ManifestSet::default(),
        results: Vec::new(),
    };
    let documents = load_all(sources, opts, inspect, &mut out)?;
    let all_charts = !sources.is_empty() && out.set.charts.len() == sources.len();
    if out.set.crds.is_empty() && !(upgrade && all_charts) {
        let names: Vec<String> = sources.iter().map(ToString::to_string).collect();
        return Err(ManifestError::NoCrds {
            input: names.join(", "),
            documents,
            skipped: out.set.skipped.len(),
        });
    }
    Ok(out)
}

/// Reads every source into `out`: the documents read.
pub(super) fn load_all<T: Send>(
    sources: &[Source],
    opts: &SourceOptions,
    inspect: Inspect<T>,
    out: &mut Inspected<T>,
) -> Result<usize, ManifestError> {
    let mut documents = 0usize;
    for source in sources {
        let texts = read_texts(source, opts, &mut out.set.notices, &mut out.set.charts)?;
        documents += load_texts(texts, opts.positions, out, inspect)?;
    }
    Ok(documents)
}

/// Reads sources of objects (`diff --objects PATH`): what they hold may
/// be CRDs too, but at least one custom resource must be there.
pub fn load_resources(
    sources: &[Source],
    opts: &SourceOptions,
) -> Result<ManifestSet, ManifestError> {
    let mut out = Inspected::<()> {
        set: ManifestSet::default(),
        results: Vec::new(),
    };
    let documents = load_all(sources, opts, None, &mut out)?;
    if out.set.resources.is_empty() {
        let names: Vec<String> = sources.iter().map(ToString::to_string).collect();
        return Err(ManifestError::NoObjects {
            input: names.join(", "),
            documents,
        });
    }
    Ok(out.set)
}

/// A document of any kind, where it starts, and its text (to find the
/// line of a node inside it).
#[derive(Debug)]
pub struct Object {
    /// The parsed document.
    pub value: Value,
    /// Its file and first line.
    pub location: Location,
    /// Its text, for [`DocumentText::find`].
    pub text: DocumentText,
}

/// Every document of `sources` whatever its kind, in reading order: what
/// reads files that are not CRDs (requirements, sample objects) with the
/// same splitter, parser and locations as the CRDs. A `List` is one
/// document here.
pub fn read_objects(
    sources: &[Source],
    opts: &SourceOptions,
) -> Result<Vec<Object>, ManifestError> {
    let (mut notices, mut charts) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    for source in sources {
        for text in read_texts(source, opts, &mut notices, &mut charts)? {
            if text.is_json {
                let (value, location) = parse_json(&text.text, &text.label)?;
                let text = DocumentText::new(SharedText::whole(text.text), 1);
                out.push(Object {
                    value,
                    location,
                    text,
                });
                continue;
            }
            for piece in split::pieces(&Arc::new(text.text)) {
                if let Some((value, location, text, _)) = split::parse(&piece, &text.label, false)?
                {
                    out.push(Object {
                        value,
                        location,
                        text,
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Reads manifests from text already in memory (used by tests and
/// benchmarks). Returns the number of documents read.
pub fn load_text(
    text: &str,
    file: &str,
    is_json: bool,
    set: &mut ManifestSet,
) -> Result<usize, ManifestError> {
    let text = Text {
        label: file.to_string(),
        is_json,
        text: text.to_string(),
        origin: Origin::Files,
    };
    let mut out = Inspected::<()> {
        set: std::mem::take(set),
        results: Vec::new(),
    };
    let read = load_texts(vec![text], Positions::OnDemand, &mut out, None);
    *set = out.set;
    read
}

/// Every document of a YAML text as kubectl reads it (`null` for an empty
/// one is left out), with the places kubectl reads otherwise than YAML 1.2:
/// what the reader differential tests compare with sigs.k8s.io/yaml.
pub fn read_values(text: &str, label: &str) -> Result<Vec<(Value, Vec<Reading>)>, ManifestError> {
    let mut out = Vec::new();
    for piece in split::pieces(&Arc::new(text.to_string())) {
        if let Some((value, _, _, readings)) = split::parse(&piece, label, false)? {
            out.push((value, readings));
        }
    }
    Ok(out)
}

/// One document to parse, with the label of the text it came from.
pub(super) enum Job<'a> {
    Json(SharedText, &'a str),
    /// A YAML document, and whether to record its positions.
    Yaml(split::Piece, &'a str, Positions),
}

impl Job<'_> {
    pub(super) fn size(&self) -> usize {
        match self {
            Job::Json(text, _) => text.len(),
            Job::Yaml(piece, ..) => piece.text.len(),
        }
    }

    /// The document parsed and, when it is a CRD, read into the model: that
    /// is a fifth of the work on a document, and it too runs in parallel.
    /// A CRD read into the model is then inspected, if asked.
    pub(super) fn parse<T>(
        &self,
        inspect: Inspect<T>,
    ) -> Result<Option<Document<T>>, ManifestError> {
        let document = match self {
            Job::Json(text, file) => {
                let (value, location) = parse_json(text, file)?;
                let text = DocumentText::new(text.clone(), 1);
                Some((value, location, text, Vec::new()))
            }
            Job::Yaml(piece, file, positions) => {
                split::parse(piece, file, *positions == Positions::Recorded)?
            }
        };
        Ok(document.map(|(value, location, text, readings)| {
            let parsed = Parsed::of(value);
            let inspected = match (&parsed, inspect) {
                (Parsed::Crd(crd), Some(inspect)) => crd.as_ref().as_ref().ok().map(inspect),
                _ => None,
            };
            Document {
                parsed,
                location,
                text,
                readings,
                inspected,
            }
        }))
    }
}

/// One parsed document, and what an [`Inspect`] made of it.
pub(super) struct Document<T> {
    parsed: Parsed,
    location: Location,
    text: DocumentText,
    readings: Vec<Reading>,
    inspected: Option<T>,
}

impl<T> Document<T> {
    /// Adds the document to `out`: CRDs to the set with their inspection
    /// (none for those a `List` holds), anything else to the skipped.
    pub(super) fn add(
        self,
        positions: Positions,
        out: &mut Inspected<T>,
    ) -> Result<(), ManifestError> {
        let text = (positions != Positions::Never).then(|| Arc::new(self.text));
        let before = out.set.crds.len();
        match self.parsed {
            Parsed::Crd(crd) => add_crd(*crd, self.location, text, &mut out.set)?,
            Parsed::Other(value) => add_object(value, self.location, text, &mut out.set)?,
        }
        // A `List`'s readings go to its first CRD.
        if let Some(first) = out.set.crds.get_mut(before) {
            first.readings = self.readings;
        }
        let mut inspected = self.inspected;
        for _ in before..out.set.crds.len() {
            out.results.push(inspected.take());
        }
        Ok(())
    }
}

/// A parsed document: a CRD already read into the model (or why it could
/// not be), or any other value, for [`add_object`] to sort out.
pub(super) enum Parsed {
    Crd(Box<Result<Crd, CrdError>>),
    Other(Value),
}

impl Parsed {
    fn of(value: Value) -> Parsed {
        if is_crd(&value) {
            Parsed::Crd(Box::new(Crd::from_manifest(normalize_to_v1(value))))
        } else {
            Parsed::Other(value)
        }
    }
}

/// A CustomResourceDefinition of a version this tool reads (not a `List`).
pub(super) fn is_crd(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        && matches!(
            value.get("apiVersion").and_then(Value::as_str),
            Some("apiextensions.k8s.io/v1" | "apiextensions.k8s.io/v1beta1")
        )
}

/// Parses the documents of `texts` (in parallel when there is enough to
/// share) and adds them in reading order, so the first error reported is
/// the one a sequential read would stop at. Returns the documents read.
/// Each text is let go once cut into documents, so a file is never held
/// twice while the documents parse.
pub(super) fn load_texts<T: Send>(
    texts: Vec<Text>,
    positions: Positions,
    out: &mut Inspected<T>,
    inspect: Inspect<T>,
) -> Result<usize, ManifestError> {
    let labels: Vec<String> = texts.iter().map(|t| t.label.clone()).collect();
    let origins: Vec<Origin> = texts.iter().map(|t| t.origin.clone()).collect();
    let mut jobs = Vec::new();
    let mut per_text = Vec::with_capacity(texts.len());
    for (text, label) in texts.into_iter().zip(&labels) {
        let before = jobs.len();
        if text.is_json {
            jobs.push(Job::Json(SharedText::whole(text.text), label));
        } else {
            jobs.extend(
                split::pieces(&Arc::new(text.text))
                    .into_iter()
                    .map(|p| Job::Yaml(p, label, positions)),
            );
        }
        per_text.push(jobs.len() - before);
    }
    // YAML parsing is most of a `diff`'s time, and documents parse
    // independently.
    let mut results =
        crate::parallel::map(&jobs, Job::size, PARALLEL_PARSE_BYTES, |j| j.parse(inspect))
            .into_iter();
    let mut documents = 0;
    for (count, origin) in per_text.into_iter().zip(origins) {
        let before = out.set.crds.len();
        for result in results.by_ref().take(count) {
            if let Some(document) = result? {
                documents += 1;
                document.add(positions, out)?;
            }
        }
        for crd in &mut out.set.crds[before..] {
            crd.origin = origin.clone();
        }
        out.set.files += 1;
    }
    Ok(documents)
}

/// Below this much YAML, threads cost more than they save.
pub(super) const PARALLEL_PARSE_BYTES: usize = 128 * 1024;

pub(super) fn parse_json(text: &str, file: &str) -> Result<(Value, Location), ManifestError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ManifestError::Json {
        location: Location {
            file: file.to_string(),
            line: e.line(),
        },
        message: strip_position(&e.to_string()),
    })?;
    Ok((
        value,
        Location {
            file: file.to_string(),
            line: 1,
        },
    ))
}

/// serde_json appends "at line N column M"; the location already says it.
pub(super) fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// An empty document reads as `empty`, not `null`.
pub(super) fn kind_of(v: &Value) -> &'static str {
    if v.is_null() {
        "empty"
    } else {
        crate::text::value_kind(v)
    }
}

pub(super) fn add_object(
    value: Value,
    location: Location,
    text: Option<Arc<DocumentText>>,
    set: &mut ManifestSet,
) -> Result<(), ManifestError> {
    let Value::Object(map) = &value else {
        return Err(ManifestError::NotAnObject {
            location,
            found: kind_of(&value),
        });
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    // `kubectl get crd -o yaml` prints a `List`; a CustomResourceDefinitionList
    // is the typed form of the same thing.
    if kind.ends_with("List") && map.get("items").is_some_and(Value::is_array) {
        let mut value = value;
        let items = match value.get_mut("items").map(Value::take) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        for (i, item) in items.into_iter().enumerate() {
            let nested = text
                .as_ref()
                .map(|t| Arc::new(t.nested(&["items", &i.to_string()])));
            add_object(item, location.clone(), nested, set)?;
        }
        return Ok(());
    }
    if !is_crd(&value) {
        let kind = if kind.is_empty() {
            "(no kind)".to_string()
        } else {
            format!("{api_version} {kind}").trim().to_string()
        };
        let custom = Resource::may_be_custom(api_version);
        set.skipped.push(Skipped {
            kind,
            location: location.clone(),
        });
        if custom {
            set.resources.push(Resource { value, location });
        }
        return Ok(());
    }
    add_crd(
        Crd::from_manifest(normalize_to_v1(value)),
        location,
        text,
        set,
    )
}

/// Adds a CRD read into the model, unless its name was read before.
pub(super) fn add_crd(
    crd: Result<Crd, CrdError>,
    location: Location,
    text: Option<Arc<DocumentText>>,
    set: &mut ManifestSet,
) -> Result<(), ManifestError> {
    let crd = crd.map_err(|source| ManifestError::Crd {
        location: location.clone(),
        source,
    })?;
    if let Some(first) = set.get(&crd.name) {
        return Err(ManifestError::Duplicate {
            name: crd.name.clone(),
            first: first.location.clone(),
            second: location,
        });
    }
    set.crds.push(LoadedCrd {
        crd: crd.into(),
        location,
        text,
        readings: Vec::new(),
        origin: Origin::Files,
    });
    Ok(())
}
