//! Judging a new CRD against a requirement: the catalog, run against the
//! pinned CRD as OLD, then only what reaches the held versions and fields.

use super::{Action, FieldPattern, Requirement};
use crate::compare::{self, Check, Finding, Severity, StoredVersions};
use crate::crd::Crd;
use crate::manifest::ManifestSet;
use crate::report::{CrdReport, CrdStatus, Report, RequirementCheck};

/// The findings `new` (`None`: the CRD is not there at all) gives against
/// `requirement`, at the requirement's levels, each naming it.
pub fn judge(requirement: &Requirement, new: Option<&Crd>) -> Vec<Finding> {
    judged(requirement, new)
        .into_iter()
        .map(|j| j.finding)
        .collect()
}

/// A requirement's finding, and whether it breaks the requirement (an
/// error before `Warn` caps it).
struct Judged {
    finding: Finding,
    breaks: bool,
}

/// Checks whose warning is, for a consumer that holds the version, the loss
/// of something it uses: a version it reads (served, or its stored data) or a
/// field selector it lists with. On a CRD at large they only may break
/// someone; a requirement says someone is there, so under `Deny` they fail.
fn removes_what_is_held(check: Check) -> bool {
    matches!(
        check,
        Check::ServedVersionRemoval | Check::StoredVersionRemoval | Check::SelectableFields
    )
}

fn judged(requirement: &Requirement, new: Option<&Crd>) -> Vec<Judged> {
    let pinned = &requirement.crd;
    let raw = match new {
        None => vec![Finding::new(
            Check::AbsentCrd,
            Severity::Error,
            format!(
                "{} is not in the new manifests: the consumer's {} objects and the controllers that read them \
stop working once it is deleted. Keep the CRD, or agree its removal with the consumer and drop the requirement",
                pinned.name, pinned.spec.names.kind
            ),
        )],
        Some(new) => {
            let stored = StoredVersions::resolve(pinned, None);
            compare::compare_crds(pinned, new, &stored, &requirement.config.options)
                .into_iter()
                .filter(|f| concerns(requirement, f))
                .collect()
        }
    };
    let (kept, _) = requirement.config.policy().apply(&pinned.name, raw);
    let reference = requirement.reference();
    let lead = reference.prefix();
    kept.into_iter()
        .map(|mut f| {
            if f.severity == Severity::Warning && removes_what_is_held(f.check) {
                f.severity = Severity::Error;
            }
            let breaks = f.severity == Severity::Error;
            if requirement.action == Action::Warn {
                f.severity = f.severity.min(Severity::Warning);
            }
            f.message = format!("{lead}: {}", f.message);
            f.requirement = Some(reference.clone());
            Judged { finding: f, breaks }
        })
        .collect()
}

/// Whether a finding of the comparison with the pinned CRD reaches what
/// the requirement holds: a version it holds (CRD-wide findings reach
/// every version), and a field it includes (or one above or below it) that
/// it does not exclude.
fn concerns(requirement: &Requirement, f: &Finding) -> bool {
    let held = requirement.held_versions();
    // A finding on a pair of served versions (`v1alpha1 -> v1`) reaches
    // both.
    let versions: Vec<&str> = match &f.version {
        Some(v) => v.split(" -> ").map(str::trim).collect(),
        None => Vec::new(),
    };
    if !versions.is_empty() && !versions.iter().any(|v| held.iter().any(|h| h == v)) {
        return false;
    }
    let Some(path) = f.path.as_deref() else {
        return true;
    };
    // A path that does not read as a field (none of the catalog's) is kept:
    // dropping what cannot be placed could hide a break.
    let Ok(field) = FieldPattern::parse(path) else {
        return true;
    };
    let in_versions =
        |only: &[String]| only.is_empty() || only.iter().any(|o| versions.contains(&o.as_str()));
    if requirement
        .excluded
        .iter()
        .any(|rule| in_versions(&rule.versions) && rule.path.covers(&field))
    {
        return false;
    }
    requirement.fields.is_empty()
        || requirement
            .fields
            .iter()
            .any(|rule| in_versions(&rule.versions) && rule.path.related(&field))
}

/// Judges `new` against every requirement and adds the findings to the
/// entries of `report` (a CRD NEW lacks gets an entry of its own), with the
/// list of requirements checked; then recounts.
pub fn add_findings(report: &mut Report, requirements: &[Requirement], new: &ManifestSet) {
    for requirement in requirements {
        let name = &requirement.crd.name;
        let judged = judged(requirement, new.get(name).map(|l| &*l.crd));
        // Broken whatever the action: `Warn` changes what a break does to
        // the run, not whether it is one.
        let met = !judged.iter().any(|j| j.breaks);
        let findings: Vec<Finding> = judged.into_iter().map(|j| j.finding).collect();
        let count = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
        report.requirements.push(RequirementCheck {
            requirement: requirement.reference(),
            crd: name.clone(),
            met,
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
        });
        if findings.is_empty() {
            continue;
        }
        match report.crds.iter_mut().find(|c| &c.name == name) {
            Some(entry) => entry.add(findings, Vec::new()),
            None => {
                let mut entry =
                    CrdReport::new(name.clone(), CrdStatus::Absent, findings, Vec::new());
                entry.old_source = Some(requirement.source.to_string());
                report.crds.push(entry);
            }
        }
    }
    report.recount();
}
