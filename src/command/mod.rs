//! One entry per command, shared by the binary, the tests and the benches:
//! [`diff::run`], [`lint::run`], [`apply_check::run`], [`apply::run`],
//! [`migrate::plan`] and [`migrate::run`] (`serve` is
//! [`crate::webhook::serve`]). Each takes what the flags said, already
//! parsed, and returns what the command found; the binary only parses the
//! command line, talks to the terminal and maps the result to an exit code
//! ([`Failure::exit_code`] and [`crate::exit`]).

pub mod apply;
pub mod apply_check;
pub mod diff;
pub mod helm_upgrade;
pub mod lint;
pub mod migrate;
pub mod require;
pub mod requirements;

use std::path::PathBuf;

use thiserror::Error;

use crate::baseline::{Baseline, BaselineError};
use crate::cluster::ClusterError;
use crate::cluster_write::ConfirmError;
use crate::cluster_write::migrate::MigrateError;
use crate::config::Config;
use crate::config::ConfigError;
use crate::exit;
use crate::live_check::LiveError;
use crate::locate::locate;
use crate::manifest::{InputLimits, ManifestError, ManifestSet, Positions, Source, SourceOptions};
use crate::report::Report;
use crate::requirement::{self, Requirement, RequirementError};
use crate::webhook::ServeError;

/// Why a command stopped before its verdict. Every kind keeps its own
/// error, so the message is the one its module wrote and the exit code is
/// decided here, once.
#[derive(Debug, Error)]
pub enum Failure {
    /// Flags that do not go together.
    #[error("{0}")]
    Usage(String),
    /// The configuration file.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A manifest, a source or a path.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// `--baseline` or `--write-baseline`.
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    /// Nobody could be asked.
    #[error(transparent)]
    Confirm(#[from] ConfirmError),
    /// The cluster could not be reached or did not answer.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A live check could not finish.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// `migrate` has no plan.
    #[error(transparent)]
    Migrate(#[from] MigrateError),
    /// A consumer's requirement (`--requirements`); boxed, as its
    /// locations would make every `Failure` larger.
    #[error(transparent)]
    Requirement(Box<RequirementError>),
    /// `serve` could not start or stopped.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The report could not be written out.
    #[error("writing output: {0}")]
    Output(#[source] std::io::Error),
    /// The report could not be serialized.
    #[error("cannot serialize the report: {0}")]
    Serialize(#[from] crate::report::StructuredError),
    /// The async runtime could not start.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl From<RequirementError> for Failure {
    fn from(e: RequirementError) -> Failure {
        Failure::Requirement(Box::new(e))
    }
}

impl Failure {
    /// [`exit::INPUT`] for what the user can fix in the command line or
    /// the files, [`exit::CLUSTER`] for what the cluster did.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Cluster(_) | Failure::Live(_) => exit::CLUSTER,
            Failure::Migrate(e) => match e {
                MigrateError::NotFound { .. } | MigrateError::NoServerEngine { .. } => exit::INPUT,
                _ => exit::CLUSTER,
            },
            Failure::Usage(_)
            | Failure::Config(_)
            | Failure::Manifest(_)
            | Failure::Baseline(_)
            | Failure::Requirement(_)
            | Failure::Confirm(_)
            | Failure::Serve(_)
            | Failure::Output(_)
            | Failure::Serialize(_)
            | Failure::Runtime(_) => exit::INPUT,
        }
    }
}

/// The manifests of a command that reads one side (`lint`, `apply-check`,
/// `apply`), and how.
#[derive(Debug, Clone, Default)]
pub struct Manifests {
    /// The sources, in order.
    pub new: Vec<Source>,
    /// How the sources are read.
    pub sources: SourceOptions,
    /// The checks' configuration.
    pub config: Config,
    /// `--baseline`, `--write-baseline`.
    pub baselines: Baselines,
}

impl Manifests {
    /// Standard input can be read once; `dash` is how the flag spells it.
    fn stdin_once(&self, dash: &str) -> Result<(), Failure> {
        let stdin = self.new.iter().filter(|s| matches!(s, Source::Stdin));
        if stdin.count() > 1 {
            return Err(Failure::Usage(format!("{dash} can be given once")));
        }
        Ok(())
    }
}

/// The baseline flags every report takes.
#[derive(Debug, Clone, Default)]
pub struct Baselines {
    /// `--baseline`: findings it lists are accepted.
    pub accept: Option<PathBuf>,
    /// `--write-baseline`: record every finding, then accept them.
    pub write: Option<PathBuf>,
    /// How much the baseline read may hold (`--max-input-bytes`).
    pub limits: InputLimits,
}

/// What every report gets before it is shown: where its findings are (for
/// the formats that show it), then the baselines. Returns how many findings
/// a `--write-baseline` recorded.
pub(crate) fn finish(
    report: &mut Report,
    old: &ManifestSet,
    new: &ManifestSet,
    positions: Positions,
    baselines: &Baselines,
    requirements: &[Requirement],
) -> Result<Option<usize>, Failure> {
    // Before placing and baselining: a requirement's findings are placed
    // and baselined like any other.
    if !requirements.is_empty() {
        requirement::add_findings(report, requirements, new);
    }
    if positions != Positions::Never {
        locate(report, old, new);
    }
    if let Some(path) = &baselines.accept {
        Baseline::load(path, baselines.limits)?.apply(report);
    }
    let mut written = None;
    if let Some(path) = &baselines.write {
        let baseline = Baseline::of_report(report);
        baseline.write(path)?;
        baseline.apply(report);
        written = Some(baseline.entries.len());
    }
    Ok(written)
}

/// The requirements the configuration names (`requirements`,
/// `--requirements`), read before any manifest so a bad one fails first.
pub(crate) fn requirements_of(config: &Config) -> Result<Vec<Requirement>, Failure> {
    if config.requirements.is_empty() {
        return Ok(Vec::new());
    }
    Ok(requirement::load(
        &config.requirements,
        config.input_limits,
    )?)
}
