//! `git:REF:PATH` sources: manifests as they were at a commit, read from the
//! object database of the local repository with gix (no `git` binary, no
//! network, the working tree untouched).
//!
//! A release branch, a tag or `HEAD~1` is where an operator author's "old"
//! CRDs live; reading them straight from git spares the checkout of a second
//! worktree in CI.

use std::path::{Component, Path, PathBuf};

use thiserror::Error;

use super::Origin;
use super::Text;
use super::chart::{self, ChartError, ChartFile, HelmOptions};
use super::input::{Budget, InputLimits, LimitError, MAX_DEPTH};

/// `git:REF:PATH` as the user typed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSpec {
    /// Anything `git rev-parse` understands that gix does too: a branch,
    /// `origin/main`, a tag, a full or short commit id, `HEAD~1`.
    pub rev: String,
    /// A file or directory, relative to the repository root (`./` and `../`
    /// are relative to the working directory, as in `git show REF:./x`).
    pub path: String,
}

impl GitSpec {
    /// Parses the part after `git:`; `None` when there is no `:PATH`.
    pub fn parse(rest: &str) -> Option<GitSpec> {
        let (rev, path) = rest.split_once(':')?;
        if rev.is_empty() {
            return None;
        }
        Some(GitSpec {
            rev: rev.to_string(),
            path: path.to_string(),
        })
    }
}

/// Why a `git:` source could not be read. The caller prefixes the source.
#[derive(Debug, Error)]
pub enum GitError {
    /// No repository at or above the directory.
    #[error(
        "not inside a git repository ({dir}); run from within the repository or pass --repo DIR"
    )]
    NotARepository { dir: String },
    /// The revision does not resolve.
    #[error("unknown revision {rev} in {repo}{}", shallow_hint(*.shallow))]
    UnknownRev {
        rev: String,
        repo: String,
        shallow: bool,
    },
    /// The path is not in the commit's tree.
    #[error("{path} does not exist at {rev} (commit {commit})")]
    MissingPath {
        path: String,
        rev: String,
        commit: String,
    },
    /// `./` or `../` used outside the repository's working tree.
    #[error("{path} is outside the repository {repo}")]
    OutsideRepository { path: String, repo: String },
    /// An object could not be read (a damaged or partial repository).
    #[error("cannot read {what} at {rev}: {message}{}", shallow_hint(*.shallow))]
    Object {
        what: String,
        rev: String,
        message: String,
        shallow: bool,
    },
    /// A chart at the revision that could not be read.
    #[error("{0}")]
    Chart(#[from] ChartError),
    /// A manifest that is not UTF-8 text.
    #[error("{path} at {rev} is not UTF-8 text")]
    NotText { path: String, rev: String },
    /// A blob or tree passes a bound: it alone, or the source with it.
    #[error("{path} at {rev}: {source}")]
    Limit {
        path: String,
        rev: String,
        #[source]
        source: LimitError,
    },
}

fn shallow_hint(shallow: bool) -> &'static str {
    if shallow {
        " (this is a shallow clone that may lack it: fetch the history with `git fetch --unshallow`, \
         or `fetch-depth: 0` in actions/checkout)"
    } else {
        ""
    }
}

/// Reads the manifest files `spec` names from the repository containing
/// `repo_dir` (the working directory when `None`), in path order. A
/// directory with a `Chart.yaml` is read as a Helm chart (its `crds/`, and
/// templates that make CRDs through helm); what it cannot read is added to
/// `notices`, and a chart read whole (every CRD it makes was read) to
/// `charts`. The blobs read are one source of `limits`, each sized from
/// its header before it is inflated.
pub fn read(
    spec: &GitSpec,
    repo_dir: Option<&Path>,
    helm: &HelmOptions,
    limits: InputLimits,
    notices: &mut Vec<String>,
    charts: &mut Vec<String>,
) -> Result<Vec<Text>, GitError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let start = repo_dir.map_or_else(|| cwd.clone(), Path::to_path_buf);
    let mut repo = gix::discover(&start).map_err(|_| GitError::NotARepository {
        dir: start.display().to_string(),
    })?;
    // Release directories are near-copies of each other, so packs hold long
    // delta chains; without a cache of decoded bases every file decodes its
    // chain again (figures: docs/BENCHMARKS.md, "Reading from git").
    repo.objects
        .set_pack_cache(|| Box::new(gix::odb::pack::cache::lru::StaticLinkedList::<64>::default()));
    let shallow = repo.is_shallow().unwrap_or(false);
    let repo_name = repo
        .workdir()
        .unwrap_or_else(|| repo.git_dir())
        .display()
        .to_string();
    let object_error = |what: &str, e: &dyn std::fmt::Display| GitError::Object {
        what: what.to_string(),
        rev: spec.rev.clone(),
        message: e.to_string(),
        shallow,
    };
    let id = repo
        .rev_parse_single(spec.rev.as_str())
        .map_err(|_| GitError::UnknownRev {
            rev: spec.rev.clone(),
            repo: repo_name.clone(),
            shallow,
        })?;
    let object = id.object().map_err(|e| object_error(&spec.rev, &e))?;
    let commit = object
        .clone()
        .peel_to_commit()
        .map(|c| c.id.to_hex_with_len(12).to_string())
        .unwrap_or_else(|_| object.id.to_hex_with_len(12).to_string());
    let tree = object
        .peel_to_tree()
        .map_err(|e| object_error(&spec.rev, &e))?;
    let rel =
        tree_path(&spec.path, repo.workdir(), &cwd).ok_or_else(|| GitError::OutsideRepository {
            path: spec.path.clone(),
            repo: repo_name.clone(),
        })?;
    let label = |path: &str| format!("git:{}:{path}", spec.rev);
    let mut walk = TreeWalk {
        budget: Budget::new(limits),
        rev: &spec.rev,
        object_error: &object_error,
    };
    let mut out = Vec::new();
    let dir = if rel.is_empty() {
        tree
    } else {
        let entry = tree
            .lookup_entry_by_path(&rel)
            .map_err(|e| object_error(&rel, &e))?
            .ok_or_else(|| GitError::MissingPath {
                path: rel.clone(),
                rev: spec.rev.clone(),
                commit: commit.clone(),
            })?;
        if !entry.mode().is_tree() {
            walk.count(&entry.id(), &rel)?;
        }
        let mut obj = entry.object().map_err(|e| object_error(&rel, &e))?;
        if !entry.mode().is_tree() {
            // A file named explicitly is read whatever its extension, as on disk.
            return Ok(vec![text(
                &rel,
                std::mem::take(&mut obj.data),
                spec,
                &label,
            )?]);
        }
        obj.into_tree()
    };
    if dir.find_entry("Chart.yaml").is_some() {
        let mut all = Vec::new();
        walk.files(&dir, "", &|_| true, &mut all, 0)?;
        let prefix = if rel.is_empty() {
            label("")
        } else {
            format!("{}/", label(&rel))
        };
        let shown = format!("git:{}:{}", spec.rev, spec.path);
        let chart = chart::at_revision(&all, &prefix, &shown, helm, &mut walk.budget)?;
        match chart.notice {
            Some(notice) => notices.push(notice),
            None => charts.push(shown),
        }
        return Ok(chart.texts);
    }
    // The filter a directory on disk gets: `*.yaml`, `*.yml`, `*.json`.
    let mut manifests = Vec::new();
    let is_manifest = |name: &str| super::is_manifest(Path::new(name));
    walk.files(&dir, &rel, &is_manifest, &mut manifests, 0)?;
    for f in manifests {
        out.push(text(&f.path, f.data, spec, &label)?);
    }
    out.sort_by(|a, b| a.label.cmp(&b.label));
    Ok(out)
}

fn text(
    path: &str,
    data: Vec<u8>,
    spec: &GitSpec,
    label: &dyn Fn(&str) -> String,
) -> Result<Text, GitError> {
    let text = String::from_utf8(data).map_err(|_| GitError::NotText {
        path: path.to_string(),
        rev: spec.rev.clone(),
    })?;
    Ok(Text {
        label: label(path),
        is_json: path.ends_with(".json"),
        text,
        origin: Origin::Files,
    })
}

/// The blobs of a revision read so far, and how to name what goes wrong.
struct TreeWalk<'a> {
    budget: Budget,
    rev: &'a str,
    object_error: &'a dyn Fn(&str, &dyn std::fmt::Display) -> GitError,
}

impl TreeWalk<'_> {
    fn limit(&self, path: &str, source: LimitError) -> GitError {
        GitError::Limit {
            path: path.to_string(),
            rev: self.rev.to_string(),
            source,
        }
    }

    /// Counts the blob (or tree) `id` at `path`: one file, its size from
    /// the object's header, before anything inflates it.
    fn count(&mut self, id: &gix::Id<'_>, path: &str) -> Result<(), GitError> {
        let header = id.header().map_err(|e| (self.object_error)(path, &e))?;
        self.budget
            .file()
            .and_then(|()| self.budget.bytes(header.size()))
            .map_err(|e| self.limit(path, e))
    }

    /// Every file below `tree` whose name `keep` accepts, as `ChartFile`s
    /// whose paths start with `prefix` (`""` for the tree's own root),
    /// `depth` trees below the source's. Hidden entries are skipped and
    /// symlinks and submodules not followed, as on disk; trees entered are
    /// counted and sized like blobs.
    fn files(
        &mut self,
        tree: &gix::Tree<'_>,
        prefix: &str,
        keep: &dyn Fn(&str) -> bool,
        out: &mut Vec<ChartFile>,
        depth: usize,
    ) -> Result<(), GitError> {
        for entry in tree.iter() {
            let entry = entry.map_err(|e| (self.object_error)(prefix, &e))?;
            let name = entry.filename().to_string();
            let mode = entry.mode();
            if name.starts_with('.') || !(mode.is_tree() || (mode.is_blob() && keep(&name))) {
                continue;
            }
            let path = if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            };
            if mode.is_tree() && depth >= MAX_DEPTH {
                return Err(self.limit(&path, LimitError::Depth));
            }
            // A tree counts as a file too: trees are shared by id, so one
            // listing the same subtree many times, nested, would make the
            // walk branch like links in a loop on disk.
            self.count(&entry.id(), &path)?;
            let mut obj = entry.object().map_err(|e| (self.object_error)(&path, &e))?;
            if mode.is_tree() {
                self.files(&obj.into_tree(), &path, keep, out, depth + 1)?;
            } else {
                let data = std::mem::take(&mut obj.data);
                out.push(ChartFile { path, data });
            }
        }
        Ok(())
    }
}

/// The path inside the repository's tree, `/`-separated, without a leading
/// or trailing slash (`""` is the root). `./x` and `../x` are relative to
/// `cwd`; `None` when they leave the working tree.
fn tree_path(path: &str, workdir: Option<&Path>, cwd: &Path) -> Option<String> {
    let relative_to_cwd = path == "." || path.starts_with("./") || path.starts_with("../");
    let joined = if relative_to_cwd {
        let workdir = workdir?;
        let workdir = workdir.canonicalize().unwrap_or_else(|_| workdir.into());
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.into());
        let inside = cwd.strip_prefix(&workdir).ok()?.to_path_buf();
        inside.join(path)
    } else {
        PathBuf::from(path)
    };
    let mut parts: Vec<String> = Vec::new();
    for c in joined.components() {
        match c {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_splits_at_the_first_colon() {
        let s = GitSpec::parse("origin/main:config/crd").unwrap();
        assert_eq!(s.rev, "origin/main");
        assert_eq!(s.path, "config/crd");
        assert!(GitSpec::parse("HEAD").is_none());
        assert!(GitSpec::parse(":crds").is_none());
    }

    #[test]
    fn paths_are_relative_to_the_root_unless_dotted() {
        let root = Path::new("/repo");
        let cwd = Path::new("/repo/deploy");
        assert_eq!(
            tree_path("config/crd/", Some(root), cwd).as_deref(),
            Some("config/crd")
        );
        assert_eq!(tree_path("/", Some(root), cwd).as_deref(), Some(""));
        assert_eq!(
            tree_path("./crds", Some(root), cwd).as_deref(),
            Some("deploy/crds")
        );
        assert_eq!(
            tree_path("../x.yaml", Some(root), cwd).as_deref(),
            Some("x.yaml")
        );
        assert_eq!(tree_path("../../x", Some(root), cwd), None);
        assert_eq!(tree_path("./x", Some(root), Path::new("/elsewhere")), None);
    }
}
