//! Where manifests come from ([`Source`]: files, directories, stdin, git
//! revisions, charts, kustomizations) and how each is read into labelled
//! texts ([`read_texts`]) before any parsing.

use std::fmt;
use std::path::{Path, PathBuf};

use super::*;

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
    /// What `helm upgrade` would apply to a release (the Helm plugin's
    /// `helm crd-safety upgrade`; no spelling as an argument).
    HelmUpgrade(HelmUpgrade),
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
            Source::HelmUpgrade(u) => write!(f, "helm upgrade {} {}", u.release, u.chart),
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
        Source::HelmUpgrade(spec) => {
            let input = || source.to_string();
            let fail = |source| ManifestError::HelmUpgrade {
                input: input(),
                source,
            };
            let texts = helm_upgrade::read(spec, opts.limits).map_err(fail)?;
            // Rendered whole by helm: no CRD is an answer (see load_upgrade).
            charts.push(input());
            Ok(texts)
        }
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
            let files = collect_files(path, &mut budget)?;
            // A file named on its own is read as it is, even a part.
            let files = if path.is_dir() {
                join_parts(files)?
            } else {
                files
                    .into_iter()
                    .map(|f| Whole {
                        parts: vec![f.clone()],
                        path: f,
                    })
                    .collect()
            };
            let mut texts = Vec::with_capacity(files.len());
            for file in files {
                let mut data = Vec::new();
                for part in &file.parts {
                    data.extend(budget.read_file(part)?);
                }
                let text = input::utf8(data).map_err(|source| ManifestError::Read {
                    path: file.path.display().to_string(),
                    source,
                })?;
                texts.push(Text {
                    label: file.path.display().to_string(),
                    is_json: file.path.extension().is_some_and(|e| e == "json"),
                    text,
                    origin: Origin::Files,
                });
            }
            Ok(texts)
        }
    }
}

/// What a file too large for one ConfigMap is cut into on its way to a
/// gate's Job: `NAME.part-000`, `NAME.part-001`, ... (deploy/gates/helm
/// cuts at line ends, so no character is split). A directory's parts are
/// read as the one file NAME, so findings name the file and line the user
/// wrote.
pub const PART_SUFFIX: &str = ".part-";

/// `NAME.part-NNN` -> (NAME, NNN).
fn part_of(path: &Path) -> Option<(PathBuf, usize)> {
    let name = path.file_name()?.to_str()?;
    let (whole, index) = name.rsplit_once(PART_SUFFIX)?;
    if whole.is_empty() || index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((path.with_file_name(whole), index.parse().ok()?))
}

/// One file to read: itself, or the parts it was cut into, in order.
struct Whole {
    path: PathBuf,
    parts: Vec<PathBuf>,
}

/// Gathers each file's parts (wherever the sort put them) under its whole
/// name; a set of parts with one missing is an error naming it, as a file
/// cut short would silently change what is checked.
fn join_parts(files: Vec<PathBuf>) -> Result<Vec<Whole>, ManifestError> {
    let mut out: Vec<Whole> = Vec::with_capacity(files.len());
    let mut parted: std::collections::BTreeMap<PathBuf, (usize, Vec<(usize, PathBuf)>)> =
        std::collections::BTreeMap::new();
    for file in files {
        match part_of(&file) {
            Some((whole, index)) => {
                let at = out.len();
                let entry = parted.entry(whole.clone()).or_insert_with(|| {
                    out.push(Whole {
                        path: whole,
                        parts: Vec::new(),
                    });
                    (at, Vec::new())
                });
                entry.1.push((index, file));
            }
            None => out.push(Whole {
                parts: vec![file.clone()],
                path: file,
            }),
        }
    }
    for (whole, (at, mut parts)) in parted {
        parts.sort();
        for (expected, (index, _)) in parts.iter().enumerate() {
            if *index != expected {
                return Err(ManifestError::Read {
                    path: whole.display().to_string(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!(
                            "its part {expected:03} is missing ({} parts found)",
                            parts.len()
                        ),
                    ),
                });
            }
        }
        out[at].parts = parts.into_iter().map(|(_, p)| p).collect();
    }
    Ok(out)
}

/// The file names a directory is searched for: `*.yaml`, `*.yml`, `*.json`.
pub(super) fn is_manifest(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"))
}

/// The manifest files under `path`, sorted, so the order of output never
/// depends on the file system; a path that is not a directory is itself
/// the one file (whatever it is: `-f /dev/stdin` reads a pipe). A walk
/// counts each file in `budget` (see [`input::walk`] for what it follows).
pub(super) fn collect_files(
    path: &Path,
    budget: &mut input::Budget,
) -> Result<Vec<PathBuf>, ManifestError> {
    let meta = std::fs::metadata(path).map_err(|source| ManifestError::Read {
        path: path.display().to_string(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    // A directory on disk may hold the parts of a file (a gate's
    // ConfigMaps); a git tree or a chart never does.
    let is_manifest_or_part =
        |p: &Path| is_manifest(p) || part_of(p).is_some_and(|(whole, _)| is_manifest(&whole));
    let mut out: Vec<PathBuf> = input::walk(path, &is_manifest_or_part, budget)?
        .into_iter()
        .map(|f| f.path)
        .collect();
    out.sort();
    Ok(out)
}
