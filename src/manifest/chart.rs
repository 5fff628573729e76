//! Helm charts as sources: a chart directory (it has a `Chart.yaml`) or a
//! packaged chart (`.tgz`).
//!
//! CRDs under `crds/` (the chart's and its subcharts') are read as they are,
//! the way `helm install` applies them. CRDs made by templates (cert-manager's
//! `installCRDs`/`crds.enabled` switch) need `helm template`; when helm is not
//! on `PATH` the result says so, so that a report never looks complete when
//! it is not.

use std::cell::Cell;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use thiserror::Error;

use super::external::{self, RunError};
use super::input::{self, Budget, InputError, InputLimits, LimitError, MAX_DEPTH};
use super::{Origin, Text};

/// How templates are rendered (`--helm-values`, `--helm-set`, `--require-helm`).
#[derive(Debug, Clone, Default)]
pub struct HelmOptions {
    /// Values files, passed as `--values` in order.
    pub values: Vec<PathBuf>,
    /// `KEY=VALUE` overrides, passed as `--set` in order.
    pub set: Vec<String>,
    /// Refuse to go on without helm when templates hold CRDs.
    pub require: bool,
}

/// Why a chart could not be read. The caller prefixes the chart's path.
#[derive(Debug, Error)]
pub enum ChartError {
    /// The chart or a file in it could not be read.
    #[error("cannot read {what}: {source}")]
    Read {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The package holds no `Chart.yaml`.
    #[error("not a Helm chart: no Chart.yaml in the package")]
    NoChartYaml,
    /// A file or directory of a chart directory, within bounds.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The package, or all it decompresses to, passes a bound.
    #[error("{0}")]
    Archive(LimitError),
    /// An entry of the package passes a bound.
    #[error("entry {entry}: {source}")]
    Entry {
        entry: String,
        #[source]
        source: LimitError,
    },
    /// `helm template` printed more than a file may hold.
    #[error("the output of helm template: {0}")]
    HelmOutput(LimitError),
    /// `helm template` failed.
    #[error("helm template failed: {0}")]
    Helm(String),
    /// Templates make CRDs, helm is missing, and `--require-helm` was given.
    #[error(
        "templates make CRDs ({templates}) but helm is not on PATH (--require-helm); install helm"
    )]
    HelmMissing { templates: String },
}

/// The manifests of a chart, and what could not be read.
#[derive(Debug, Default)]
pub struct ChartManifests {
    /// `crds/` files, then the CRDs `helm template` rendered.
    pub texts: Vec<Text>,
    /// A notice when templated CRDs were not read.
    pub notice: Option<String>,
}

/// Whether `path` names a chart: a directory with a `Chart.yaml`, or a
/// `.tgz`/`.tar.gz` file (what `helm package` writes).
pub fn is_chart(path: &Path) -> bool {
    if path.is_dir() {
        return path.join("Chart.yaml").is_file();
    }
    let name = path.to_string_lossy();
    path.is_file() && (name.ends_with(".tgz") || name.ends_with(".tar.gz"))
}

/// A file of the chart: its path below the chart root and its bytes.
pub(super) struct ChartFile {
    pub path: String,
    pub data: Vec<u8>,
}

/// The manifests of a chart at a git revision (`shown`): its `crds/`, and
/// when templates make CRDs, what `helm template` renders from a copy of
/// the chart in a temporary directory. Packaged subcharts count in
/// `budget`, the git source's.
pub(super) fn at_revision(
    files: &[ChartFile],
    label_prefix: &str,
    shown: &str,
    opts: &HelmOptions,
    budget: &mut Budget,
) -> Result<ChartManifests, ChartError> {
    let mut out = ChartManifests::default();
    let mut templates = Vec::new();
    let mut sorting = Sorting {
        chart: shown,
        texts: &mut out.texts,
        templates: &mut templates,
        budget: &mut *budget,
    };
    sorting.collect(files, label_prefix, "", 0)?;
    if !templates.is_empty() {
        let copy = TempChart::write(files)?;
        render(&copy.0, shown, &templates, opts, budget.limits(), &mut out)?;
    }
    Ok(out)
}

/// Reads the chart at `path` (see [`is_chart`]); all its files, and what
/// its packages decompress to, are one source of `limits`.
pub fn read(
    path: &Path,
    opts: &HelmOptions,
    limits: InputLimits,
) -> Result<ChartManifests, ChartError> {
    let shown = path.display().to_string();
    let mut budget = Budget::new(limits);
    // `entries`: what names a file of a package in messages (its path in
    // the archive, top directory included).
    let (files, label_prefix, entries) = if path.is_dir() {
        let mut files = Vec::new();
        for found in input::walk(path, &|_| true, &mut budget)? {
            let data = budget.read_file(&found.path)?;
            files.push(ChartFile {
                path: found.relative,
                data,
            });
        }
        (
            files,
            format!("{}/", shown.trim_end_matches('/')),
            String::new(),
        )
    } else {
        let io = |source| ChartError::Read {
            what: shown.clone(),
            source,
        };
        // The package itself is read whole, at most a file's worth; what
        // it decompresses to counts in the budget.
        let file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let bytes = input::read_capped(file, len, limits.file_bytes())
            .map_err(io)?
            .ok_or(ChartError::Archive(LimitError::File {
                limit: limits.file_bytes(),
            }))?;
        let (files, top) = unpack(&bytes, &shown, "", &mut budget)?;
        (files, format!("{shown}:{top}"), top)
    };
    let mut out = ChartManifests::default();
    let mut templates = Vec::new();
    let mut sorting = Sorting {
        chart: &shown,
        texts: &mut out.texts,
        templates: &mut templates,
        budget: &mut budget,
    };
    sorting.collect(&files, &label_prefix, &entries, 0)?;
    if !templates.is_empty() {
        render(path, &shown, &templates, opts, limits, &mut out)?;
    }
    Ok(out)
}

/// Adds the CRDs `helm template` renders from the chart at `path` (shown as
/// `shown`) to `out`, or, without helm, the notice (an error with
/// `--require-helm`). Its output is read as a file of `limits`.
fn render(
    path: &Path,
    shown: &str,
    templates: &[String],
    opts: &HelmOptions,
    limits: InputLimits,
    out: &mut ChartManifests,
) -> Result<(), ChartError> {
    let mut args: Vec<String> = vec!["template".into(), path.display().to_string()];
    for v in &opts.values {
        args.push("--values".into());
        args.push(v.display().to_string());
    }
    for s in &opts.set {
        args.push("--set".into());
        args.push(s.clone());
    }
    match external::run("helm", &args, limits.file_bytes()) {
        Ok(rendered) => out.texts.extend(rendered_crds(&rendered, shown)),
        Err(RunError::Failed(why)) => return Err(ChartError::Helm(why)),
        Err(RunError::TooLarge(limit)) => return Err(ChartError::HelmOutput(limit)),
        Err(RunError::NotFound) if opts.require => {
            return Err(ChartError::HelmMissing {
                templates: templates.join(", "),
            });
        }
        Err(RunError::NotFound) => {
            out.notice = Some(format!(
                "{shown}: templated CRDs were not read: helm is not on PATH and {} may make CRDs \
                 (install helm to render them; --require-helm makes this an error)",
                templates.join(", ")
            ));
        }
    }
    Ok(())
}

/// A chart written to a temporary directory for helm, removed on drop.
struct TempChart(PathBuf);

impl TempChart {
    fn write(files: &[ChartFile]) -> Result<TempChart, ChartError> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("crd-safety-chart-{}-{n}", std::process::id()));
        let chart = TempChart(dir);
        let io = |source| ChartError::Read {
            what: chart.0.display().to_string(),
            source,
        };
        std::fs::create_dir_all(&chart.0).map_err(io)?;
        for f in files {
            // Only plain relative names: nothing may land outside the copy.
            let plain = Path::new(&f.path)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(_)));
            if !plain {
                continue;
            }
            let path = chart.0.join(&f.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&path, &f.data).map_err(io)?;
        }
        Ok(chart)
    }
}

impl Drop for TempChart {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Sorts the chart's files into `crds/` manifests (as texts) and templates
/// that mention CustomResourceDefinition, the chart's and its subcharts'
/// (`charts/NAME/...`, packaged ones included, whose decompressed bytes
/// count in the budget).
struct Sorting<'a> {
    chart: &'a str,
    texts: &'a mut Vec<Text>,
    templates: &'a mut Vec<String>,
    budget: &'a mut Budget,
}

impl Sorting<'_> {
    /// The files of one (sub)chart; `entries` names the package they come
    /// from (`""` for the chart itself, `charts/sub.tgz:` below it), and
    /// `depth` counts the packages around them.
    fn collect(
        &mut self,
        files: &[ChartFile],
        label_prefix: &str,
        entries: &str,
        depth: usize,
    ) -> Result<(), ChartError> {
        for f in files {
            let packaged_subchart = f.path.strip_prefix("charts/").is_some_and(|name| {
                !name.contains('/') && (name.ends_with(".tgz") || name.ends_with(".tar.gz"))
            });
            if packaged_subchart {
                let what = format!("{label_prefix}{}", f.path);
                let entry = format!("{entries}{}", f.path);
                if depth >= MAX_DEPTH {
                    return Err(ChartError::Entry {
                        entry,
                        source: LimitError::Depth,
                    });
                }
                let (sub, top) = unpack(&f.data, &what, &format!("{entry}:"), self.budget)?;
                self.collect(
                    &sub,
                    &format!("{what}:{top}"),
                    &format!("{entry}:{top}"),
                    depth + 1,
                )?;
                continue;
            }
            let Some(rest) = chart_relative(&f.path) else {
                continue;
            };
            if rest.starts_with("crds/") && super::is_manifest(Path::new(rest)) {
                let text = String::from_utf8(f.data.clone()).map_err(|_| ChartError::Read {
                    what: format!("{label_prefix}{}", f.path),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
                })?;
                self.texts.push(Text {
                    label: format!("{label_prefix}{}", f.path),
                    is_json: rest.ends_with(".json"),
                    text,
                    origin: Origin::ChartCrds {
                        chart: self.chart.to_string(),
                    },
                });
            } else if rest.starts_with("templates/")
                && f.data
                    .windows(b"CustomResourceDefinition".len())
                    .any(|w| w == b"CustomResourceDefinition")
            {
                self.templates.push(f.path.clone());
            }
        }
        Ok(())
    }
}

/// The part of a chart path below its (sub)chart root: `crds/a.yaml` for
/// `crds/a.yaml` and `charts/sub/crds/a.yaml`; `None` for files of packaged
/// subcharts' directories that are not chart roots.
fn chart_relative(path: &str) -> Option<&str> {
    let mut rest = path;
    loop {
        match rest.strip_prefix("charts/") {
            Some(sub) => {
                let (_, inner) = sub.split_once('/')?;
                rest = inner;
            }
            None => return Some(rest),
        }
    }
}

/// The documents `helm template` printed that can be CRDs, one text per
/// template (`# Source:` comment), labelled `helm:CHART:TEMPLATE`.
pub(super) fn rendered_crds(rendered: &str, chart: &str) -> Vec<Text> {
    let mut texts: Vec<Text> = Vec::new();
    let mut source = String::new();
    let mut section = String::new();
    let flush = |source: &str, section: &mut String, texts: &mut Vec<Text>| {
        if section.contains("CustomResourceDefinition") {
            let label = format!("helm:{chart}:{source}");
            match texts.iter_mut().find(|t| t.label == label) {
                Some(t) => {
                    t.text.push_str("---\n");
                    t.text.push_str(section);
                }
                None => texts.push(Text {
                    label,
                    is_json: false,
                    text: std::mem::take(section),
                    origin: Origin::ChartTemplate {
                        chart: chart.to_string(),
                    },
                }),
            }
        }
        section.clear();
    };
    for line in rendered.lines() {
        if line == "---" {
            continue;
        }
        if let Some(s) = line.strip_prefix("# Source: ") {
            flush(&source, &mut section, &mut texts);
            source = s.trim().to_string();
            continue;
        }
        section.push_str(line);
        section.push('\n');
    }
    flush(&source, &mut section, &mut texts);
    texts
}

/// The files of a packaged chart, relative to its top directory (which is
/// returned with a trailing `/`, e.g. `mychart/`). `entries` is put before
/// an entry's path in messages (the package around this one, if any).
///
/// Decompression is streamed and bounded: every entry counts as one file
/// of the budget and the whole decompressed stream (headers included) in
/// its total, an entry larger than a file may be is refused from its
/// header, before its bytes are inflated, and the stream stops at what the
/// total has left. So a package of a few MB that inflates to gigabytes
/// costs at most the total, and usually nothing.
fn unpack(
    bytes: &[u8],
    what: &str,
    entries: &str,
    budget: &mut Budget,
) -> Result<(Vec<ChartFile>, String), ChartError> {
    let limits = budget.limits();
    let inflated = Rc::new(Cell::new(0u64));
    let left = budget.left();
    let stream = Inflated {
        inner: flate2::read::GzDecoder::new(bytes),
        left,
        read: Rc::clone(&inflated),
    };
    // Past the total, the stream fails, whatever error tar makes of that.
    let total = LimitError::Total { limits };
    let io = |source| {
        if inflated.get() > left {
            ChartError::Archive(total)
        } else {
            ChartError::Read {
                what: what.to_string(),
                source,
            }
        }
    };
    let mut archive = tar::Archive::new(stream);
    let mut files = Vec::new();
    let mut top: Option<String> = None;
    for entry in archive.entries().map_err(io)? {
        let mut entry = entry.map_err(io)?;
        budget.file().map_err(ChartError::Archive)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(io)?.to_string_lossy().into_owned();
        let size = entry.size();
        if size > limits.file_bytes() {
            return Err(ChartError::Entry {
                entry: format!("{entries}{path}"),
                source: LimitError::File {
                    limit: limits.file_bytes(),
                },
            });
        }
        if inflated.get().saturating_add(size) > left {
            return Err(ChartError::Archive(total));
        }
        let Some((first, rest)) = path.split_once('/') else {
            continue;
        };
        if top.is_none() && rest == "Chart.yaml" {
            top = Some(format!("{first}/"));
        }
        // The entry reads exactly `size` bytes, which fit.
        let data = input::read_capped(&mut entry, size, size)
            .map_err(io)?
            .ok_or(ChartError::Archive(total))?;
        files.push(ChartFile {
            path: path.clone(),
            data,
        });
    }
    budget.total(inflated.get()).map_err(ChartError::Archive)?;
    let top = top.ok_or(ChartError::NoChartYaml)?;
    let files = files
        .into_iter()
        .filter_map(|f| {
            f.path.strip_prefix(&top).map(|p| ChartFile {
                path: p.to_string(),
                data: f.data,
            })
        })
        .collect();
    Ok((files, top))
}

/// A decompressed stream that fails once it has given `left` bytes,
/// counting what it gave in `read`.
struct Inflated<R> {
    inner: R,
    left: u64,
    read: Rc<Cell<u64>>,
}

impl<R: Read> Read for Inflated<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let room = self.left.saturating_sub(self.read.get());
        if room == 0 && !buf.is_empty() {
            // At the limit: the end of the stream is fine, one byte more
            // is not.
            let mut one = [0u8; 1];
            if self.inner.read(&mut one)? == 0 {
                return Ok(0);
            }
            self.read.set(self.read.get() + 1);
            return Err(std::io::Error::other(
                "decompressed past the limit of the source",
            ));
        }
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(buf.len());
        let got = self.inner.read(&mut buf[..n])?;
        self.read.set(self.read.get() + got as u64);
        Ok(got)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subchart_paths_are_read_relative_to_their_chart() {
        assert_eq!(chart_relative("crds/a.yaml"), Some("crds/a.yaml"));
        assert_eq!(
            chart_relative("charts/sub/crds/a.yaml"),
            Some("crds/a.yaml")
        );
        assert_eq!(
            chart_relative("charts/a/charts/b/templates/x.yaml"),
            Some("templates/x.yaml")
        );
        assert_eq!(chart_relative("charts/sub.tgz"), None);
    }

    #[test]
    fn rendered_output_is_split_by_template_and_keeps_only_crd_candidates() {
        let rendered = "---\n# Source: c/templates/deploy.yaml\nkind: Deployment\n\
                        ---\n# Source: c/templates/crds.yaml\nkind: CustomResourceDefinition\nx: 1\n\
                        ---\n# Source: c/templates/crds.yaml\nkind: CustomResourceDefinition\ny: 2\n";
        let texts = rendered_crds(rendered, "c");
        assert_eq!(texts.len(), 1);
        assert_eq!(texts[0].label, "helm:c:c/templates/crds.yaml");
        assert_eq!(
            texts[0].text,
            "kind: CustomResourceDefinition\nx: 1\n---\nkind: CustomResourceDefinition\ny: 2\n"
        );
    }
}
