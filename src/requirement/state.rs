//! `requirements`: each requirement and whether the installed (or given)
//! CRD meets it, in the words of OpenShift's `Compatible` condition.

use serde::Serialize;

use super::{Action, Requirement, judge};
use crate::compare::{Finding, RequirementRef, Severity};
use crate::crd::Crd;

/// Where a requirement stands, named as the reasons of OpenShift's
/// `Compatible` condition so that users of both read one vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum State {
    /// Nothing above info.
    Compatible,
    /// Warnings only (a `Warn` requirement's breaks among them).
    CompatibleWithWarnings,
    /// At least one error finding.
    RequirementsNotMet,
    /// The CRD it pins is not there.
    #[serde(rename = "CRDNotFound")]
    CrdNotFound,
}

impl State {
    fn label(self) -> &'static str {
        match self {
            State::Compatible => "Compatible",
            State::CompatibleWithWarnings => "CompatibleWithWarnings",
            State::RequirementsNotMet => "RequirementsNotMet",
            State::CrdNotFound => "CRDNotFound",
        }
    }
}

/// One requirement's state.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequirementState {
    /// Which requirement.
    #[serde(flatten)]
    pub requirement: RequirementRef,
    /// The CRD it pins.
    pub crd: String,
    /// The versions it holds.
    pub versions: Vec<String>,
    /// Deny or Warn.
    pub action: Action,
    /// Met or not.
    pub state: State,
    /// What breaks it, most serious first (info included).
    pub findings: Vec<Finding>,
}

/// Every requirement's state, and against what.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct States {
    /// What the CRDs were read from: the cluster (`context (server)`) or
    /// the files given.
    pub against: String,
    /// In the order read.
    pub requirements: Vec<RequirementState>,
    /// Whether a requirement is not met (the run exits 1).
    pub failed: bool,
}

impl States {
    /// Judges each requirement against the CRD `installed` gives for its
    /// name (`None`: not there).
    pub fn of<'c>(
        requirements: &[Requirement],
        installed: impl Fn(&str) -> Option<&'c Crd>,
        against: String,
    ) -> States {
        let requirements: Vec<RequirementState> = requirements
            .iter()
            .map(|r| {
                let crd = installed(&r.crd.name);
                let mut findings = judge(r, crd);
                findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
                let worst = findings.iter().map(|f| f.severity).max();
                let state = match (crd, worst) {
                    (None, _) => State::CrdNotFound,
                    (_, Some(Severity::Error)) => State::RequirementsNotMet,
                    (_, Some(Severity::Warning)) => State::CompatibleWithWarnings,
                    _ => State::Compatible,
                };
                RequirementState {
                    requirement: r.reference(),
                    crd: r.crd.name.clone(),
                    versions: r.held_versions(),
                    action: r.action,
                    state,
                    findings,
                }
            })
            .collect();
        let failed = requirements
            .iter()
            .any(|r| r.findings.iter().any(|f| f.severity == Severity::Error));
        States {
            against,
            requirements,
            failed,
        }
    }

    /// 1 when a requirement is not met, else 0.
    pub fn exit_code(&self) -> u8 {
        if self.failed {
            crate::exit::FINDINGS
        } else {
            crate::exit::SAFE
        }
    }
}

/// The table: one row per requirement, then the findings of each one not
/// met (warnings included; info only with `show_info`).
pub fn render_states(states: &States, show_info: bool) -> String {
    let mut table = comfy_table::Table::new();
    table.load_style(comfy_table::presets::NOTHING).set_header([
        "REQUIREMENT",
        "OWNER",
        "CRD",
        "VERSIONS",
        "ACTION",
        "STATE",
    ]);
    for r in &states.requirements {
        table.add_row([
            r.requirement.name.as_str(),
            r.requirement.owner.as_deref().unwrap_or("-"),
            r.crd.as_str(),
            &r.versions.join(","),
            match r.action {
                Action::Deny => "Deny",
                Action::Warn => "Warn",
            },
            r.state.label(),
        ]);
    }
    let mut out = format!("requirements against {}\n", states.against);
    for line in table.to_string().lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for r in &states.requirements {
        let shown: Vec<&Finding> = r
            .findings
            .iter()
            .filter(|f| show_info || f.severity > Severity::Info)
            .collect();
        if shown.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n{} ({}):\n",
            r.requirement.name, r.requirement.source
        ));
        let lead = format!("{}: ", r.requirement.prefix());
        for f in shown {
            // What changed, as the report's table shows it; the why is the
            // same for every finding of a check and is in `-o json`.
            let change = crate::report::change_of(f);
            let message = change.strip_prefix(&lead).unwrap_or(change);
            out.push_str(&format!(
                "  {:<8} {} {}{}: {}\n",
                f.severity.to_string(),
                f.check.id(),
                f.version
                    .as_deref()
                    .map(|v| format!("{v} "))
                    .unwrap_or_default(),
                f.path.as_deref().unwrap_or("-"),
                message
            ));
        }
    }
    let met = states
        .requirements
        .iter()
        .filter(|r| matches!(r.state, State::Compatible | State::CompatibleWithWarnings))
        .count();
    out.push_str(&format!(
        "\n{} of {} met\n",
        met,
        crate::text::plural(states.requirements.len(), "requirement", "requirements")
    ));
    out
}
