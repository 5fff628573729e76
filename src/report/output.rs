//! Which rendering a report gets, and where it goes: the decisions that
//! depend on the output format, kept beside the renderers so the binary
//! only hands over what the user chose and the terminal's facts.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::{Report, TableOptions, render_github, render_markdown, render_sarif, render_table};

/// `-o`: the output formats of the report commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// What changed per row; why and how once per check below the table.
    Table,
    /// The table with every finding's full message.
    Wide,
    Json,
    Yaml,
    Markdown,
    /// SARIF 2.1.0 (GitHub code scanning and other SARIF consumers).
    Sarif,
    /// GitHub Actions workflow commands: annotations on the lines.
    Github,
}

impl OutputFormat {
    /// The format shows where each finding is (file, line, column), so the
    /// manifests' positions must be recorded while reading them.
    pub fn places_findings(self) -> bool {
        matches!(
            self,
            OutputFormat::Json | OutputFormat::Yaml | OutputFormat::Sarif | OutputFormat::Github
        )
    }

    /// `apply` writes its plan and outcome as one JSON or YAML document
    /// instead of the table and the outcome lines.
    pub fn is_structured(self) -> bool {
        matches!(self, OutputFormat::Json | OutputFormat::Yaml)
    }

    /// A tool reads stdout (SARIF, workflow commands): lines meant for a
    /// person, such as `apply`'s outcomes, go to stderr instead.
    pub fn is_for_tools(self) -> bool {
        matches!(self, OutputFormat::Sarif | OutputFormat::Github)
    }
}

/// What the terminal and the flags say about a rendering.
#[derive(Debug, Clone, Copy)]
pub struct RenderOptions<'a> {
    pub format: OutputFormat,
    pub color: bool,
    pub width: u16,
    pub show_info: bool,
    /// Paths in findings are shown relative to it.
    pub cwd: &'a Path,
}

/// Writes the report in the chosen format. JSON is written as it is
/// serialized; the other formats are built as text first.
pub fn write_report(
    report: &Report,
    options: &RenderOptions<'_>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if options.format == OutputFormat::Json {
        return report.write_json(out);
    }
    out.write_all(render(report, options).as_bytes())
}

/// The report as text in the chosen format.
pub fn render(report: &Report, options: &RenderOptions<'_>) -> String {
    match options.format {
        OutputFormat::Table | OutputFormat::Wide => render_table(
            report,
            TableOptions {
                color: options.color,
                width: options.width,
                show_info: options.show_info,
                wide: options.format == OutputFormat::Wide,
                cwd: Some(options.cwd),
            },
        ),
        OutputFormat::Json => report.to_json() + "\n",
        OutputFormat::Yaml => report.to_yaml(),
        OutputFormat::Markdown => render_markdown(report),
        OutputFormat::Sarif => render_sarif(report, options.cwd),
        OutputFormat::Github => render_github(report, options.cwd),
    }
}

/// A value that does not serialize (a bug, not bad input).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StructuredError(String);

/// The structured output of `apply` and `migrate`, as pretty JSON or YAML.
pub fn render_structured(output: &impl Serialize, yaml: bool) -> Result<String, StructuredError> {
    let failed = |e: &dyn std::fmt::Display| StructuredError(e.to_string());
    let value = serde_json::to_value(output).map_err(|e| failed(&e))?;
    if yaml {
        serde_saphyr::to_string(&value).map_err(|e| failed(&e))
    } else {
        serde_json::to_string_pretty(&value)
            .map(|text| text + "\n")
            .map_err(|e| failed(&e))
    }
}
