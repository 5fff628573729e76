//! Reading CRD manifests: files, directories and stdin, git revisions, Helm
//! charts and kustomizations; multi-document YAML, JSON, `List`s, and legacy
//! `apiextensions.k8s.io/v1beta1` CRDs.
//!
//! Every source yields labelled texts ([`Text`]) that go through the same
//! parsing, so a location reads the same way whatever the source
//! (`crds/a.yaml:3`, `git:v1.4.0:crds/a.yaml:3`, `kustomize:overlays/prod:40`).
//!
//! Every source is read within bounds ([`InputLimits`], `input.rs`): walks
//! enter each directory once, and files, streams, archives and git trees
//! stop at a cap, so whatever a pull request commits, a run ends.
//!
//! Every document keeps the file and line it started on, so that any error
//! later can point at it. Documents that are Kubernetes objects of another
//! kind are skipped and counted; anything that is not a Kubernetes object at
//! all is an error, because it usually means the wrong file was passed.

mod block_yaml;
mod chart;
mod external;
mod fast_yaml;
mod git;
mod input;
mod kustomize;
mod normalize;
mod outline;
mod positions;
mod shared_text;
mod split;
mod yaml11;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use thiserror::Error;

use crate::crd::{Crd, CrdError};

pub use chart::{ChartError, HelmOptions};
pub use git::{GitError, GitSpec};
pub use input::{InputError, InputLimits, LimitError, MAX_DEPTH, read_text};
pub use kustomize::KustomizeError;
pub use normalize::normalize_to_v1;
pub use outline::{DocRef, Head, Outline, load_documents, outline, plain_files};
pub use positions::{DocumentText, Position};
pub use shared_text::SharedText;
pub(crate) use split::yaml_error;
pub use yaml11::Reading;

/// Where a document came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, or `<stdin>`.
    pub file: String,
    /// The 1-based line the document (or the list item's list) starts on.
    pub line: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Line 0 marks a source without lines, such as the live cluster.
        if self.line == 0 {
            f.write_str(&self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

/// An input as the user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A file, a directory (read recursively) or a Helm chart (a directory
    /// with a `Chart.yaml`, or a `.tgz`).
    Path(PathBuf),
    /// `-`: standard input.
    Stdin,
    /// `git:REF:PATH`: a file or directory as it is at a revision.
    Git(GitSpec),
    /// `kustomize:DIR` (or `-k DIR`): a rendered kustomization.
    Kustomize(PathBuf),
}

impl Source {
    /// `-` means stdin, `git:REF:PATH` a revision, `kustomize:DIR` a
    /// kustomization, anything else a path (write `./git:x` for a file
    /// whose name starts with `git:`).
    pub fn parse(arg: &str) -> Result<Source, ManifestError> {
        if arg == "-" {
            return Ok(Source::Stdin);
        }
        if let Some(rest) = arg.strip_prefix("git:") {
            return GitSpec::parse(rest)
                .map(Source::Git)
                .ok_or_else(|| ManifestError::Syntax {
                    input: arg.to_string(),
                    expected: "git:REF:PATH (e.g. git:origin/main:config/crd)",
                });
        }
        if let Some(dir) = arg.strip_prefix("kustomize:") {
            if dir.is_empty() {
                return Err(ManifestError::Syntax {
                    input: arg.to_string(),
                    expected: "kustomize:DIR",
                });
            }
            return Ok(Source::Kustomize(PathBuf::from(dir)));
        }
        Ok(Source::Path(PathBuf::from(arg)))
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Path(p) => write!(f, "{}", p.display()),
            Source::Stdin => f.write_str("<stdin>"),
            Source::Git(g) => write!(f, "git:{}:{}", g.rev, g.path),
            Source::Kustomize(d) => write!(f, "kustomize:{}", d.display()),
        }
    }
}

/// How sources other than plain files are read.
#[derive(Debug, Clone, Default)]
pub struct SourceOptions {
    /// The repository `git:` sources read (`--repo`); default: the one
    /// containing the working directory.
    pub repo: Option<PathBuf>,
    /// How Helm charts' templates are rendered.
    pub helm: HelmOptions,
    /// What the parsed documents keep for placing findings on lines.
    pub positions: Positions,
    /// How much each source may hold (`--max-input-bytes`).
    pub limits: InputLimits,
}

/// Whether and how loaded documents can answer where a node is (for the
/// reports that place findings on lines: `-o json`, `sarif`, ...).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Positions {
    /// Keep each document's text; the first lookup parses it a second time.
    #[default]
    OnDemand,
    /// Record them in the first parse, and let the text go (documents the
    /// fast YAML path does not read fall back to `OnDemand`).
    Recorded,
    /// Keep nothing: no lookup will be made (the text is as large as the
    /// manifest, one more copy at peak memory).
    Never,
}

/// A manifest text and the label its locations carry (a file path,
/// `git:REF:PATH`, `helm:CHART:TEMPLATE`, `kustomize:DIR`).
#[derive(Debug, Clone)]
pub struct Text {
    /// What locations in this text are called.
    pub label: String,
    /// Parse as JSON rather than YAML.
    pub is_json: bool,
    /// The manifests.
    pub text: String,
    /// How its CRDs are delivered.
    pub origin: Origin,
}

/// How a CRD reaches the cluster, as far as its source tells: Helm treats
/// the CRDs of a chart's `crds/` and of its templates in opposite ways
/// (`helm upgrade` never touches the first, and deletes the second once a
/// release no longer renders them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Origin {
    /// A file, stdin, a git revision, a kustomization, the cluster.
    #[default]
    Files,
    /// A chart's `crds/` (or a subchart's), applied as is by `helm install`
    /// only.
    ChartCrds {
        /// The chart as the user named it.
        chart: String,
    },
    /// Rendered by `helm template` from the chart's templates: part of the
    /// release, upgraded and deleted with it.
    ChartTemplate {
        /// The chart as the user named it.
        chart: String,
    },
}

/// Why manifests could not be read.
#[derive(Debug, Error)]
pub enum ManifestError {
    /// A file or directory could not be read.
    #[error("{path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A file, directory or stream could not be read within bounds.
    #[error(transparent)]
    Input(#[from] InputError),
    /// YAML that does not parse.
    #[error("{location}: invalid YAML: {message}")]
    Yaml { location: Location, message: String },
    /// JSON that does not parse.
    #[error("{location}: invalid JSON: {message}")]
    Json { location: Location, message: String },
    /// A document that is not a Kubernetes object (a scalar or a list).
    #[error("{location}: not a Kubernetes object (the document is {found})")]
    NotAnObject {
        location: Location,
        found: &'static str,
    },
    /// A CRD document that is not a valid CRD.
    #[error("{location}: {source}")]
    Crd {
        location: Location,
        #[source]
        source: CrdError,
    },
    /// Two CRDs with one name on the same side.
    #[error("{second}: CRD {name} is defined twice (first at {first})")]
    Duplicate {
        name: String,
        first: Location,
        second: Location,
    },
    /// A source argument that does not follow its syntax.
    #[error("{input}: expected {expected}")]
    Syntax {
        input: String,
        expected: &'static str,
    },
    /// A `git:` source that could not be read.
    #[error("{input}: {source}")]
    Git {
        input: String,
        #[source]
        source: GitError,
    },
    /// A Helm chart that could not be read or rendered.
    #[error("{input}: {source}")]
    Chart {
        input: String,
        #[source]
        source: ChartError,
    },
    /// A kustomization that could not be rendered.
    #[error("{input}: {source}")]
    Kustomize {
        input: String,
        #[source]
        source: KustomizeError,
    },
    /// The input held no CRD at all.
    #[error(
        "{input}: no CustomResourceDefinition found ({documents} document(s) read, {skipped} of another kind)"
    )]
    NoCrds {
        input: String,
        documents: usize,
        skipped: usize,
    },
    /// An input of objects (`--objects`) held no custom resource.
    #[error(
        "{input}: no custom resource found ({documents} document(s) read; objects name a group with a dot in apiVersion)"
    )]
    NoObjects { input: String, documents: usize },
}

/// A CRD and where it was read.
#[derive(Debug, Clone)]
pub struct LoadedCrd {
    /// The CRD.
    pub crd: Arc<Crd>,
    /// Its file and line.
    pub location: Location,
    /// The text it was read from, for positions of nodes inside it; `None`
    /// for CRDs read from the cluster.
    pub text: Option<Arc<DocumentText>>,
    /// The places of its document that kubectl reads otherwise than they
    /// are written (YAML 1.1: `y:` is the key `true`); the CRD itself is
    /// kubectl's reading.
    pub readings: Vec<Reading>,
    /// How it is delivered (a chart's `crds/` or templates, or files).
    pub origin: Origin,
}

/// A document that was not a CRD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// `apiVersion/kind` of the document, or `(no kind)`.
    pub kind: String,
    /// Where it was.
    pub location: Location,
}

/// A document that may be a custom resource (its `apiVersion` names a
/// group with a dot, as every CRD's group has): kept so that the objects a
/// repository applies next to its CRDs can be checked against them.
#[derive(Debug, Clone)]
pub struct Resource {
    /// The document.
    pub value: Value,
    /// Where it was.
    pub location: Location,
}

impl Resource {
    /// Whether a document of this `apiVersion` may be a custom resource.
    fn may_be_custom(api_version: &str) -> bool {
        api_version
            .split_once('/')
            .is_some_and(|(group, _)| group.contains('.') && group != "apiextensions.k8s.io")
    }
}

/// Everything read from one side of a comparison.
#[derive(Debug, Clone, Default)]
pub struct ManifestSet {
    /// CRDs in reading order (files sorted by path).
    pub crds: Vec<LoadedCrd>,
    /// Documents of another kind.
    pub skipped: Vec<Skipped>,
    /// Of those, the ones that may be custom resources.
    pub resources: Vec<Resource>,
    /// Files read.
    pub files: usize,
    /// What could not be read but did not stop the run (templated CRDs of a
    /// chart without helm); the report shows each.
    pub notices: Vec<String>,
    /// The charts read whole: every CRD they make was read (helm rendered
    /// their templates, or none can make one). A side of such charts that
    /// makes no CRD is a release that deletes the ones it rendered before.
    pub charts: Vec<String>,
}

impl ManifestSet {
    /// The CRD named `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedCrd> {
        self.crds.iter().find(|c| c.crd.name == name)
    }
}

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
fn load_side<T: Send>(
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
fn load_all<T: Send>(
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

/// The labelled texts one source holds, in reading order, before any
/// parsing (what [`load_with`] parses; public for the sources benchmark).
/// What could not be read without stopping the run is added to `notices`.
pub fn read_texts(
    source: &Source,
    opts: &SourceOptions,
    notices: &mut Vec<String>,
    charts: &mut Vec<String>,
) -> Result<Vec<Text>, ManifestError> {
    match source {
        Source::Stdin => {
            let label = "<stdin>";
            let read = |source| ManifestError::Read {
                path: label.into(),
                source,
            };
            let data = input::Budget::new(opts.limits)
                .read(std::io::stdin().lock(), 0)
                .map_err(read)?
                .map_err(|source| InputError::Limit {
                    path: label.into(),
                    source,
                })?;
            let text = input::utf8(data).map_err(read)?;
            Ok(vec![Text {
                label: "<stdin>".into(),
                is_json: false,
                text,
                origin: Origin::Files,
            }])
        }
        Source::Git(spec) => git::read(
            spec,
            opts.repo.as_deref(),
            &opts.helm,
            opts.limits,
            notices,
            charts,
        )
        .map_err(|e| ManifestError::Git {
            input: source.to_string(),
            source: e,
        }),
        Source::Kustomize(dir) => kustomize::render(dir, opts.limits)
            .map(|t| vec![t])
            .map_err(|e| ManifestError::Kustomize {
                input: source.to_string(),
                source: e,
            }),
        Source::Path(path) if chart::is_chart(path) => {
            let chart =
                chart::read(path, &opts.helm, opts.limits).map_err(|e| ManifestError::Chart {
                    input: path.display().to_string(),
                    source: e,
                })?;
            match chart.notice {
                Some(notice) => notices.push(notice),
                None => charts.push(path.display().to_string()),
            }
            Ok(chart.texts)
        }
        Source::Path(path) => {
            let mut budget = input::Budget::new(opts.limits);
            collect_files(path, &mut budget)?
                .into_iter()
                .map(|file| {
                    let data = budget.read_file(&file)?;
                    let text = input::utf8(data).map_err(|source| ManifestError::Read {
                        path: file.display().to_string(),
                        source,
                    })?;
                    Ok(Text {
                        label: file.display().to_string(),
                        is_json: file.extension().is_some_and(|e| e == "json"),
                        text,
                        origin: Origin::Files,
                    })
                })
                .collect()
        }
    }
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
enum Job<'a> {
    Json(SharedText, &'a str),
    /// A YAML document, and whether to record its positions.
    Yaml(split::Piece, &'a str, Positions),
}

impl Job<'_> {
    fn size(&self) -> usize {
        match self {
            Job::Json(text, _) => text.len(),
            Job::Yaml(piece, ..) => piece.text.len(),
        }
    }

    /// The document parsed and, when it is a CRD, read into the model: that
    /// is a fifth of the work on a document, and it too runs in parallel.
    /// A CRD read into the model is then inspected, if asked.
    fn parse<T>(&self, inspect: Inspect<T>) -> Result<Option<Document<T>>, ManifestError> {
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
struct Document<T> {
    parsed: Parsed,
    location: Location,
    text: DocumentText,
    readings: Vec<Reading>,
    inspected: Option<T>,
}

impl<T> Document<T> {
    /// Adds the document to `out`: CRDs to the set with their inspection
    /// (none for those a `List` holds), anything else to the skipped.
    fn add(self, positions: Positions, out: &mut Inspected<T>) -> Result<(), ManifestError> {
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
enum Parsed {
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
fn is_crd(value: &Value) -> bool {
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
fn load_texts<T: Send>(
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
const PARALLEL_PARSE_BYTES: usize = 128 * 1024;

fn parse_json(text: &str, file: &str) -> Result<(Value, Location), ManifestError> {
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
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// An empty document reads as `empty`, not `null`.
fn kind_of(v: &Value) -> &'static str {
    if v.is_null() {
        "empty"
    } else {
        crate::text::value_kind(v)
    }
}

fn add_object(
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
fn add_crd(
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

/// The file names a directory is searched for: `*.yaml`, `*.yml`, `*.json`.
fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// The manifest files under `path`, sorted, so the order of output never
/// depends on the file system; a path that is not a directory is itself
/// the one file (whatever it is: `-f /dev/stdin` reads a pipe). A walk
/// counts each file in `budget` (see [`input::walk`] for what it follows).
fn collect_files(path: &Path, budget: &mut input::Budget) -> Result<Vec<PathBuf>, ManifestError> {
    let meta = std::fs::metadata(path).map_err(|source| ManifestError::Read {
        path: path.display().to_string(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out: Vec<PathBuf> = input::walk(path, &is_manifest, budget)?
        .into_iter()
        .map(|f| f.path)
        .collect();
    out.sort();
    Ok(out)
}

/// The shared corpus of real CRDs for unit tests: the integration tests'
/// own finder (`None` when it is missing, a failure with `CI=true`).
#[cfg(test)]
#[path = "../../tests/support/corpus.rs"]
mod shared_corpus;
#[cfg(test)]
pub(crate) use shared_corpus::corpus_dir as test_corpus;

#[cfg(test)]
mod tests {
    use super::*;

    const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
";

    fn load_str(text: &str) -> Result<ManifestSet, ManifestError> {
        let mut set = ManifestSet::default();
        load_text(text, "crds.yaml", false, &mut set)?;
        Ok(set)
    }

    #[test]
    fn other_kinds_are_skipped_and_counted() {
        let text = format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: x}}\n---\n{CRD}");
        let set = load_str(&text).unwrap();
        assert_eq!(set.crds.len(), 1);
        assert_eq!(set.crds[0].location.line, 5);
        assert_eq!(set.skipped.len(), 1);
        assert_eq!(set.skipped[0].kind, "v1 Namespace");
    }

    /// What an inspection returns lines up with the set's CRDs: one per CRD
    /// parsed as a document, none for a CRD read out of a `List` afterwards
    /// or for a document of another kind.
    #[test]
    fn inspections_line_up_with_the_crds_read() {
        let dir = tempfile::tempdir().unwrap();
        let indented: String = CRD.lines().map(|l| format!("  {l}\n")).collect();
        let listed = format!("apiVersion: v1\nkind: List\nitems:\n-\n{indented}")
            .replace("widgets", "gadgets");
        let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n";
        std::fs::write(
            dir.path().join("a.yaml"),
            format!("{CRD}---\n{other}---\n{listed}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("b.yaml"), CRD.replace("widgets", "things")).unwrap();
        let names = |crd: &Crd| crd.name.clone();
        let read = load_with_inspecting(
            &[Source::Path(dir.path().to_path_buf())],
            &SourceOptions::default(),
            Some(&names),
        )
        .unwrap();
        let crds: Vec<&str> = read.set.crds.iter().map(|c| c.crd.name.as_str()).collect();
        assert_eq!(
            crds,
            [
                "widgets.example.com",
                "gadgets.example.com",
                "things.example.com"
            ]
        );
        assert_eq!(
            read.results,
            [
                Some("widgets.example.com".to_string()),
                None,
                Some("things.example.com".to_string())
            ]
        );
        assert_eq!(read.set.skipped.len(), 1);
    }

    #[test]
    fn a_list_is_unpacked() {
        let indented: String = CRD.lines().map(|l| format!("  {l}\n")).collect();
        let text = format!("apiVersion: v1\nkind: List\nitems:\n-\n{indented}");
        let set = load_str(&text).unwrap();
        assert_eq!(set.crds[0].crd.name, "widgets.example.com");
    }

    #[test]
    fn a_duplicate_name_names_both_places() {
        let text = format!("{CRD}---\n{CRD}");
        let err = load_str(&text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "crds.yaml:16: CRD widgets.example.com is defined twice (first at crds.yaml:1)"
        );
    }

    #[test]
    fn malformed_yaml_names_file_and_line() {
        let text = format!("{CRD}---\nkind: [oops\nspec: 1\n");
        let err = load_str(&text).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("crds.yaml:17: invalid YAML"), "{msg}");
    }

    #[test]
    fn a_repeated_key_keeps_the_last_value_as_kubectl_does() {
        let set = load_str(&CRD.replace(
            "  scope: Namespaced\n",
            "  scope: Cluster\n  scope: Namespaced\n",
        ))
        .unwrap();
        assert_eq!(set.crds[0].crd.spec.scope, "Namespaced");
    }

    /// Enough CRDs (each padded with a long description) that the parse
    /// jobs, which also read each CRD into the model, run on all cores.
    fn many_crds(count: usize) -> Vec<String> {
        let pad = "x".repeat(4096);
        (0..count)
            .map(|i| {
                CRD.replace("widgets", &format!("widgets{i}")).replace(
                    "{type: object}",
                    &format!("{{type: object, description: {pad}}}"),
                )
            })
            .collect()
    }

    #[test]
    fn crds_read_in_parallel_keep_their_order_and_lines() {
        let docs = many_crds(64);
        let text = docs.join("---\n");
        assert!(text.len() > PARALLEL_PARSE_BYTES);
        let set = load_str(&text).unwrap();
        let names: Vec<&str> = set.crds.iter().map(|c| c.crd.name.as_str()).collect();
        let want: Vec<String> = (0..64).map(|i| format!("widgets{i}.example.com")).collect();
        assert_eq!(names, want);
        let lines = CRD.lines().count() + 1;
        for (i, c) in set.crds.iter().enumerate() {
            assert_eq!(c.location.line, 1 + i * lines, "{}", c.crd.name);
        }
    }

    #[test]
    fn the_first_bad_document_in_reading_order_is_the_error_reported() {
        // Document 10 is a CRD the model refuses, document 40 is not YAML
        // and the largest, so its job runs first: both fail in parallel
        // jobs, and the error is the one a sequential read would stop at.
        let mut docs = many_crds(64);
        docs[10] = docs[10].replace("  name: widgets10.example.com\n", "  labels: {}\n");
        docs[40] = format!("# {}\nkind: [oops\n", "y".repeat(16384));
        let err = load_str(&docs.join("---\n")).unwrap_err();
        let line = 1 + 10 * (CRD.lines().count() + 1);
        assert_eq!(
            err.to_string(),
            format!("crds.yaml:{line}: CRD has no metadata.name")
        );
    }

    #[test]
    fn a_scalar_document_is_an_error() {
        let err = load_str("just some text\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "crds.yaml:1: not a Kubernetes object (the document is a string)"
        );
    }
}
