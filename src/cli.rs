//! Command-line definitions: what the user typed. `main` resolves these into
//! the library's configuration; nothing here does work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXIT_CODES: &str = "Exit codes:
  0  no error findings (warnings and info may be present)
  1  at least one error finding (never with --mode warn)
  2  usage, configuration or input error (bad YAML, not a CRD, unreadable path)
  3  cluster error (unreachable, TLS, 401/403, timeout), live commands only";

/// Will this CRD update break the cluster?
#[derive(Debug, Parser)]
#[command(
    name = "kubectl crd-safety",
    bin_name = "kubectl crd-safety",
    version,
    about = "Will this CustomResourceDefinition update break the cluster?",
    long_about = "Compares CustomResourceDefinitions before they are applied and reports every change \
that would be rejected by the API server, block updates of existing objects, silently drop stored data, \
or break clients.",
    after_help = EXIT_CODES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compare old and new CRD manifests offline (files, directories or -), no cluster needed.
    #[command(after_help = EXIT_CODES)]
    Diff(DiffArgs),
    /// List every check with its id, default severity and what it catches.
    Checks,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Table,
    Json,
    Yaml,
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Error,
    Warn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailModeArg {
    Closed,
    Open,
}

/// Flags shared by every command that produces a report.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: OutputFormat,
    /// When to color the table (NO_COLOR is honored in auto).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorChoice,
    /// List info findings in the table too (JSON and YAML always have them).
    #[arg(long)]
    pub show_info: bool,
    /// Config file [default: .crd-safety.yaml in the working directory, if present].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// error: error findings fail the run; warn: report everything, never fail.
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// closed: unknown changes are errors; open: they are warnings.
    #[arg(long, value_enum)]
    pub fail_mode: Option<FailModeArg>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The CRDs as they are now: a file, a directory (read recursively) or - for stdin.
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The CRDs about to be applied: a file, a directory or -.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Versions objects may still be stored in, when OLD has no status: `v1alpha1,v1` for
    /// every CRD, or `NAME=v1alpha1,v1` for one (repeatable).
    #[arg(long, value_name = "[CRD=]VERSIONS")]
    pub stored_versions: Vec<String>,
    #[command(flatten)]
    pub report: ReportArgs,
}
