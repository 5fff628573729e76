//! The report: one model for every output format, and its renderers.
//!
//! The JSON/YAML form is a contract for scripts (documented in docs/output.md):
//! `{"crds": [{"name", "status", "findings": [{"check", "severity",
//! "version", "path", "message", "old", "new"}], ...}], "summary": {...}}`,
//! with `version` and `path` null where they do not apply. Fields are only
//! ever added to it.

mod apply;
mod change;
mod ci;
mod markdown;
mod migration;
mod output;
mod table;

use serde::Serialize;

use crate::compare::{Finding, RequirementRef, Severity, StoredVersions};
use crate::config::{Excepted, FailMode, Mode};
use crate::delivery::owners::Owner;
use crate::manifest::Skipped;
use crate::outcome::{BaselineEntry, Grading, ScanSummary};

pub use apply::render_outcomes;
pub use change::{change_of, detail_of};
pub use ci::{render_github, render_sarif};
pub use markdown::render_markdown;
pub use migration::{render_migration_outcome, render_migration_plan};
pub use output::{
    OutputFormat, RenderOptions, StructuredError, render, render_structured, write_report,
};
pub use table::{TableOptions, render_table, retries_line};

/// The verdict on one CRD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CrdStatus {
    /// At least one error finding.
    Unsafe,
    /// Warnings, no errors.
    Warning,
    /// Nothing above info.
    Safe,
    /// Only in the new manifests (and no error).
    New,
    /// Only in the old manifests.
    Absent,
}

impl CrdStatus {
    /// Upper-case label for human output.
    pub fn label(self) -> &'static str {
        match self {
            CrdStatus::Unsafe => "UNSAFE",
            CrdStatus::Warning => "WARNING",
            CrdStatus::Safe => "SAFE",
            CrdStatus::New => "NEW",
            CrdStatus::Absent => "ABSENT",
        }
    }
}

/// Everything found about one CRD.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdReport {
    /// `metadata.name`.
    pub name: String,
    /// The verdict.
    pub status: CrdStatus,
    /// Where the old CRD came from (`file:line`, or the cluster).
    pub old_source: Option<String>,
    /// Where the new CRD came from.
    pub new_source: Option<String>,
    /// The stored versions the checks used, and where they came from.
    pub stored_versions: Option<StoredVersions>,
    /// Who else manages the live CRD (live commands), and what they do to a
    /// change made around them; present when any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<Owner>,
    /// Reported findings, most serious first.
    pub findings: Vec<Finding>,
    /// Findings accepted by configured exceptions.
    pub excepted: Vec<Excepted>,
    /// Findings accepted by the baseline (`--baseline`); present when any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub baselined: Vec<Finding>,
    /// What the object scan (`--objects`) read, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan: Option<ScanSummary>,
    /// What the stored objects decided of the findings, when a scan graded
    /// them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grading: Option<Grading>,
    /// The status when nothing is serious (`Safe`, `New` or `Absent`).
    #[serde(skip)]
    base: CrdStatus,
}

impl CrdReport {
    /// Builds a CRD's entry; `base` is the status when nothing is serious
    /// (`Safe`, `New` or `Absent`).
    pub fn new(
        name: String,
        base: CrdStatus,
        findings: Vec<Finding>,
        excepted: Vec<Excepted>,
    ) -> CrdReport {
        let mut report = CrdReport {
            name,
            status: base,
            old_source: None,
            new_source: None,
            stored_versions: None,
            owners: Vec::new(),
            findings: Vec::new(),
            excepted: Vec::new(),
            baselined: Vec::new(),
            scan: None,
            grading: None,
            base,
        };
        report.add(findings, excepted);
        report
    }

    /// Adds findings (e.g. the API server's verdict) and updates the status.
    pub fn add(&mut self, findings: Vec<Finding>, excepted: Vec<Excepted>) {
        self.findings.extend(findings);
        self.excepted.extend(excepted);
        // Most serious first; otherwise keep the checks' own order.
        self.findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
        let worst = self.findings.iter().map(|f| f.severity).max();
        self.status = match worst {
            Some(Severity::Error) => CrdStatus::Unsafe,
            Some(Severity::Warning) if self.base == CrdStatus::Safe => CrdStatus::Warning,
            _ => self.base,
        };
    }

    fn count(&self, s: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == s).count()
    }
}

/// What the stored objects decided, in the words of the summary line:
/// `by the 3 stored objects scanned: 249 findings reach none of them, 13 do
/// not depend on objects`.
pub fn graded_words(g: &Grading) -> String {
    let findings = |n: usize| {
        if n == 1 {
            "1 finding".to_string()
        } else {
            format!("{n} findings")
        }
    };
    let objects = match g.objects_scanned {
        1 => "the 1 stored object scanned".to_string(),
        n => format!("the {n} stored objects scanned"),
    };
    let mut parts = vec![format!(
        "{} reach{} none of them",
        findings(g.reach_no_object),
        if g.reach_no_object == 1 { "es" } else { "" }
    )];
    if g.reach_objects > 0 {
        parts.push(format!(
            "{} reach{} some",
            findings(g.reach_objects),
            if g.reach_objects == 1 { "es" } else { "" }
        ));
    }
    if g.undecided > 0 {
        parts.push(format!("{} undecided (see each)", findings(g.undecided)));
    }
    if g.not_object_dependent > 0 {
        parts.push(format!(
            "{} do{} not depend on objects",
            findings(g.not_object_dependent),
            if g.not_object_dependent == 1 {
                "es"
            } else {
                ""
            }
        ));
    }
    format!("by {objects}: {}", parts.join(", "))
}

/// A document that was not a CRD, for the report.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedDocument {
    /// `apiVersion kind`.
    pub kind: String,
    /// `file:line`.
    pub location: String,
}

impl From<&Skipped> for SkippedDocument {
    fn from(s: &Skipped) -> Self {
        SkippedDocument {
            kind: s.kind.clone(),
            location: s.location.to_string(),
        }
    }
}

/// Totals over the whole report.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// CRDs reported.
    pub crds: usize,
    /// CRDs with at least one error.
    pub unsafe_crds: usize,
    /// CRDs with warnings and no errors.
    pub warning_crds: usize,
    /// CRDs with nothing above info.
    pub safe_crds: usize,
    /// CRDs only in the new manifests.
    pub new_crds: usize,
    /// CRDs only in the old manifests.
    pub absent_crds: usize,
    /// Error findings.
    pub errors: usize,
    /// Warning findings.
    pub warnings: usize,
    /// Info findings.
    pub infos: usize,
    /// Findings accepted by exceptions.
    pub excepted: usize,
    /// Findings accepted by the baseline.
    pub baselined: usize,
    /// Baseline entries of the CRDs checked that matched no finding.
    pub stale_baseline: usize,
    /// Documents of other kinds that were skipped.
    pub skipped_documents: usize,
    /// Whether the run fails (errors found and mode is `error`).
    pub failed: bool,
    /// What the stored objects decided, over every CRD a scan graded;
    /// present when any was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grading: Option<Grading>,
}

/// Where a live comparison read its old side (filled by the live commands).
#[derive(Debug, Clone, Serialize)]
pub struct ClusterInfo {
    /// kubeconfig context name.
    pub context: String,
    /// API server URL.
    pub server: String,
    /// Requests retried after a transient failure (429, 5xx, a lost
    /// connection) while the report was made.
    pub retries: u64,
}

/// A consumer's requirement a run judged NEW against (`--requirements`),
/// listed whether or not it found anything, so a report says what was held.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementCheck {
    /// Which requirement.
    #[serde(flatten)]
    pub requirement: RequirementRef,
    /// The CRD it pins.
    pub crd: String,
    /// Nothing breaks it: no finding that is an error before a `Warn`
    /// action makes it a warning.
    pub met: bool,
    /// Its error findings (in the CRD's entry).
    pub errors: usize,
    /// Its warning findings.
    pub warnings: usize,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// One entry per CRD, in the order of the new manifests, then absent ones.
    pub crds: Vec<CrdReport>,
    /// Totals.
    pub summary: Summary,
    /// `error` or `warn`.
    pub mode: Mode,
    /// `closed` or `open`.
    pub fail_mode: FailMode,
    /// The cluster the old side came from, for live commands.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterInfo>,
    /// The Kubernetes version whose CRD rules `invalidCrd` applied (`1.34`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_version: Option<String>,
    /// Where that version came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kube_version_source: Option<crate::crd_validation::KubeVersionSource>,
    /// For live commands: the server's own version string (`v1.34.4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_version: Option<String>,
    /// Documents that were not CRDs.
    pub skipped_documents: Vec<SkippedDocument>,
    /// Baseline entries of the CRDs checked that matched no finding (the
    /// problem was fixed or changed): present when any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stale_baseline: Vec<BaselineEntry>,
    /// What the sources could not read (templated CRDs of a Helm chart
    /// without helm): the report is incomplete where these say.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// The consumers' requirements NEW was judged against; present when
    /// any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<RequirementCheck>,
}

impl Report {
    /// Assembles a report and its totals.
    pub fn new(
        crds: Vec<CrdReport>,
        skipped: Vec<SkippedDocument>,
        mode: Mode,
        fail_mode: FailMode,
    ) -> Report {
        let mut report = Report {
            crds,
            summary: Summary::default(),
            mode,
            fail_mode,
            cluster: None,
            kube_version: None,
            kube_version_source: None,
            server_version: None,
            skipped_documents: skipped,
            stale_baseline: Vec::new(),
            notices: Vec::new(),
            requirements: Vec::new(),
        };
        report.recount();
        report
    }

    /// Recomputes the totals (after a baseline moved findings).
    pub fn recount(&mut self) {
        let mut s = Summary {
            crds: self.crds.len(),
            skipped_documents: self.skipped_documents.len(),
            stale_baseline: self.stale_baseline.len(),
            ..Summary::default()
        };
        for c in &self.crds {
            match c.status {
                CrdStatus::Unsafe => s.unsafe_crds += 1,
                CrdStatus::Warning => s.warning_crds += 1,
                CrdStatus::Safe => s.safe_crds += 1,
                CrdStatus::New => s.new_crds += 1,
                CrdStatus::Absent => s.absent_crds += 1,
            }
            s.errors += c.count(Severity::Error);
            s.warnings += c.count(Severity::Warning);
            s.infos += c.count(Severity::Info);
            s.excepted += c.excepted.len();
            s.baselined += c.baselined.len();
            if let Some(g) = &c.grading {
                s.grading.get_or_insert_with(Grading::default).add(g);
            }
        }
        s.failed = s.errors > 0 && self.mode == Mode::Error;
        self.summary = s;
    }

    /// The one-line summary: `3 CRDs: 1 unsafe (2 errors), 1 with warnings, 1 safe`.
    pub fn summary_line(&self) -> String {
        let s = &self.summary;
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = vec![format!(
            "{} unsafe ({})",
            s.unsafe_crds,
            plural(s.errors, "error", "errors")
        )];
        parts.push(format!("{} with warnings", s.warning_crds));
        parts.push(format!("{} safe", s.safe_crds));
        if s.new_crds > 0 {
            parts.push(format!("{} new", s.new_crds));
        }
        if s.absent_crds > 0 {
            parts.push(format!("{} absent from the new manifests", s.absent_crds));
        }
        let mut line = format!("{}: {}", plural(s.crds, "CRD", "CRDs"), parts.join(", "));
        if s.excepted > 0 {
            line.push_str(&format!(
                "; {} accepted by exceptions",
                plural(s.excepted, "finding", "findings")
            ));
        }
        if s.baselined > 0 {
            line.push_str(&format!(
                "; {} accepted by the baseline",
                plural(s.baselined, "finding", "findings")
            ));
        }
        if s.stale_baseline > 0 {
            line.push_str(&format!(
                "; {} stale",
                plural(s.stale_baseline, "baseline entry", "baseline entries")
            ));
        }
        if !self.requirements.is_empty() {
            let broken = self.requirements.iter().filter(|r| !r.met).count();
            line.push_str(&format!(
                "; {} checked, {broken} broken",
                plural(self.requirements.len(), "requirement", "requirements")
            ));
        }
        if s.skipped_documents > 0 {
            line.push_str(&format!(
                "; {} of other kinds skipped",
                plural(s.skipped_documents, "document", "documents")
            ));
        }
        if let Some(g) = &s.grading {
            line.push_str(&format!("; {}", graded_words(g)));
        }
        if self.mode == Mode::Warn && s.errors > 0 {
            line.push_str(" (mode: warn, not failing)");
        }
        line
    }

    /// The process exit code this report calls for: 1 when it fails, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.summary.failed {
            crate::exit::FINDINGS
        } else {
            crate::exit::SAFE
        }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
    }

    /// Pretty JSON and a final newline, straight into `out`: a report of
    /// thousands of findings is half a megabyte, and building it as one
    /// string first is the largest allocation of a `diff -o json`.
    pub fn write_json(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        out.write_all(b"\n")
    }

    /// YAML with the same structure as the JSON.
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).unwrap_or_else(|e| format!("error: {e:?}\n"))
    }
}
