//! Grading schema findings by the cluster's stored objects: once the scan
//! has read every stored object of a version, a finding whose only harm is
//! to stored values (a tightened bound, a new pattern, a removed field, a
//! new default, ...) is decided by what those objects do. None is hurt: a
//! warning that says so and what stays true for new objects. Some are: one
//! error that carries their count and examples, and the scan's own
//! `invalidObjects`/`prunedFields`/`defaultedFields` finding for the same
//! node is folded into it rather than reported twice.
//!
//! Which checks the objects decide, and by which of the scan's rules, is
//! declared in each check's catalog row ([`DecidedBy`]). A finding the scan
//! cannot decide (the scan was narrowed with `-n`, its version was not read,
//! a rule was not evaluated) keeps its grade and says why.

use crate::compare::catalog::{DATA_LOSS, DecidedBy, VALUE_RULES};
use crate::compare::{Check, Finding, Grade, GradeOutcome, Severity};
use crate::outcome::{Grading, ScanSummary};
use crate::schema::path::Step;

/// One CRD's findings after grading.
#[derive(Debug, Clone)]
pub struct Graded {
    /// The schema findings, graded.
    pub findings: Vec<Finding>,
    /// The scan's findings that no schema finding took in.
    pub scan_findings: Vec<Finding>,
    /// What grading did.
    pub grading: Grading,
}

/// Grades `findings` (the comparison's, after the policy) by the scan of
/// the same CRD. `scan_findings` are the scan's own, at default severity.
pub fn grade_by_objects(
    findings: Vec<Finding>,
    summary: &ScanSummary,
    scan_findings: Vec<Finding>,
) -> Graded {
    let mut taken = vec![false; scan_findings.len()];
    let mut grading = Grading {
        objects_scanned: summary.scanned,
        ..Grading::default()
    };
    let mut graded = Vec::with_capacity(findings.len());
    for mut f in findings {
        if f.severity == Severity::Info {
            graded.push(f);
            continue;
        }
        let Some(question) = Question::of(&f) else {
            grading.not_object_dependent += 1;
            graded.push(f);
            continue;
        };
        if let Some(why) = question.undecidable(summary, &scan_findings) {
            grading.undecided += 1;
            f.message = format!("{why}. {}", f.message);
            f.grade = Some(Grade {
                outcome: GradeOutcome::Undecided,
                schema_severity: f.severity,
                reason: why,
                objects_scanned: None,
                objects_affected: None,
            });
            graded.push(f);
            continue;
        }
        let hits: Vec<usize> = scan_findings
            .iter()
            .enumerate()
            .filter(|(_, s)| question.answered_by(s))
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            grading.reach_no_object += 1;
            let reason = question.none_reached(summary.scanned);
            // The grade first: an admission warning is cut to its start.
            f.message = format!("{reason}. {}", f.message);
            f.grade = Some(Grade {
                outcome: GradeOutcome::NoStoredObjectAffected,
                schema_severity: f.severity,
                reason,
                objects_scanned: Some(summary.scanned),
                objects_affected: Some(0),
            });
            f.severity = Severity::Warning;
        } else {
            grading.reach_objects += 1;
            let first = &scan_findings[hits[0]];
            // The count is the largest group's (an object can fail several
            // rules below the node); the examples are the first group's.
            let mut detail = first.objects.clone();
            for &i in &hits[1..] {
                if let (Some(d), Some(o)) = (detail.as_mut(), &scan_findings[i].objects) {
                    d.count = d.count.max(o.count);
                    d.ratcheted = match (d.ratcheted, o.ratcheted) {
                        (Some(a), Some(b)) => Some(a && b),
                        _ => None,
                    };
                }
            }
            let more = match hits.len() - 1 {
                0 => String::new(),
                1 => " (and one more rule below it)".to_string(),
                n => format!(" (and {n} more rules below it)"),
            };
            let reason = format!("On this cluster {}{more}", first.message);
            f.message = format!("{reason}. {}", f.message);
            f.grade = Some(Grade {
                outcome: GradeOutcome::StoredObjectsAffected,
                schema_severity: f.severity,
                reason,
                objects_scanned: detail.as_ref().map(|d| d.scanned),
                objects_affected: detail.as_ref().map(|d| d.count),
            });
            f.objects = detail;
            for i in hits {
                taken[i] = true;
            }
        }
        graded.push(f);
    }
    let scan_findings = scan_findings
        .into_iter()
        .zip(taken)
        .filter_map(|(s, t)| (!t).then_some(s))
        .collect();
    Graded {
        findings: graded,
        scan_findings,
        grading,
    }
}

/// What one finding asks of the stored objects.
struct Question<'f> {
    /// The version the finding is in.
    version: &'f str,
    /// The node the objects' failures must be at or below.
    target: String,
    /// The scan rules that answer it.
    rules: Vec<&'static str>,
    /// How the finding's harm reaches objects.
    by: DecidedBy,
    /// A CEL rule: its objects may be left unevaluated.
    cel: bool,
}

impl<'f> Question<'f> {
    /// The question a finding asks, or none when the objects do not decide
    /// it (its check is not decided by them, it is CRD-wide, across served
    /// versions, or a transition rule that only updates can show).
    fn of(f: &'f Finding) -> Option<Question<'f>> {
        let by = f.check.decided_by();
        let rules: Vec<&'static str> = match by {
            DecidedBy::Schema => return None,
            DecidedBy::Failing(rules) => rules.to_vec(),
            DecidedBy::FailingOrLosing => VALUE_RULES.iter().chain(DATA_LOSS).copied().collect(),
            DecidedBy::Lacking => vec!["required"],
            DecidedBy::Holding => DATA_LOSS.to_vec(),
            DecidedBy::Defaulting => vec!["defaulted"],
        };
        let version = f.version.as_deref()?;
        if version.contains(" -> ") || f.requirement.is_some() {
            return None;
        }
        let path = f.path.as_deref()?;
        if f.check == Check::XValidations && transition_rule(f) {
            return None;
        }
        let target = match by {
            DecidedBy::Lacking => {
                let name = f.new.as_ref()?.as_str()?;
                format!("{path}{}", Step::Property(name))
            }
            _ => path.to_string(),
        };
        let cel = rules.contains(&"x-kubernetes-validations");
        Some(Question {
            version,
            target,
            rules,
            by,
            cel,
        })
    }

    /// Why the scan cannot decide it, if it cannot.
    fn undecidable(&self, summary: &ScanSummary, scan: &[Finding]) -> Option<String> {
        if let Some(ns) = &summary.namespace {
            return Some(format!(
                "Not decided by the stored objects: the scan read only namespace {ns} (-n), \
                 so objects elsewhere were not seen"
            ));
        }
        let v = self.version;
        if !summary.versions.iter().any(|s| s == v) {
            return Some(format!(
                "Not decided by the stored objects: they were not read through {v} (the \
                 cluster does not serve it before and after the update)"
            ));
        }
        let unevaluated = scan.iter().find(|s| {
            s.check == Check::NotEvaluated
                && s.version.as_deref() == Some(v)
                && match s.path.as_deref() {
                    None => true,
                    Some(p) => self.cel && under(p, &self.target),
                }
        });
        unevaluated.map(|s| {
            format!(
                "Not decided by the stored objects: {}",
                s.message.trim_end_matches('.')
            )
        })
    }

    /// Whether a scan finding is stored objects hurt the way this finding says.
    fn answered_by(&self, s: &Finding) -> bool {
        matches!(
            s.check,
            Check::InvalidObjects | Check::PrunedFields | Check::DefaultedFields
        ) && s.version.as_deref() == Some(self.version)
            && s.path.as_deref().is_some_and(|p| under(p, &self.target))
            && s.objects
                .as_ref()
                .is_some_and(|o| self.rules.contains(&o.rule.as_str()))
    }

    /// The sentence a finding that reaches no stored object ends with.
    fn none_reached(&self, scanned: u64) -> String {
        let v = self.version;
        let of = format!("0 of {scanned} in {v} scanned");
        match self.by {
            DecidedBy::Lacking => format!(
                "On this cluster no stored object lacks it ({of}); creating an object without \
                 it is refused from now on"
            ),
            DecidedBy::Holding => format!(
                "On this cluster no stored object holds data there ({of}), so nothing stored is \
                 lost; a client that still sends it has it pruned, with the API server's \
                 unknown-field warning"
            ),
            DecidedBy::Defaulting => format!(
                "On this cluster no stored object lacks it where it now has a default ({of}), \
                 so no stored object reads a new value; new objects get the default"
            ),
            DecidedBy::Failing(_) | DecidedBy::FailingOrLosing | DecidedBy::Schema => format!(
                "On this cluster no stored object fails it ({of}); new objects that fail it are \
                 refused from now on"
            ),
        }
    }
}

/// Whether `path` is `node` or below it (`^.spec.a` is below `^.spec`,
/// `^.spec.ab` is not).
fn under(path: &str, node: &str) -> bool {
    match path.strip_prefix(node) {
        Some(rest) => rest.is_empty() || rest.starts_with(['.', '[', '{']),
        None => false,
    }
}

/// A CEL rule that reads `oldSelf` judges updates against the object
/// before them, which the stored objects alone cannot show.
fn transition_rule(f: &Finding) -> bool {
    let reads_old = |v: &Option<serde_json::Value>| {
        v.as_ref()
            .is_some_and(|v| v.to_string().contains("oldSelf"))
    };
    reads_old(&f.new) || (f.new.is_none() && reads_old(&f.old))
}

#[cfg(test)]
mod tests;
