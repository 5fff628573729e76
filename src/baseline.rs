//! Baselines: findings a project accepts as they are today, so that turning
//! the check on in CI fails only on new problems.
//!
//! A finding is recorded by a fingerprint of what it is about (CRD, version,
//! path, check) and of its old and new values, never of its wording: a new
//! release of crd-safety that rephrases a message keeps the baseline, while
//! a field whose bound changes again is a new finding. Matching findings
//! move to the CRD's `baselined` list (reported apart, never failing);
//! entries for CRDs of the run that match nothing are reported as stale.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::compare::{Finding, Severity};
use crate::manifest::{DocumentText, InputError, InputLimits, read_text, yaml_error};
pub use crate::outcome::{BaselineEntry, fingerprint};
use crate::report::Report;

/// The format version written to and accepted in baseline files.
const FORMAT: u32 = 1;

/// What a baseline file starts with, for whoever reviews it in a diff.
const HEADER: &str =
    "# crd-safety baseline: findings accepted as they are (written by --write-baseline).
# A finding matches by its fingerprint (CRD, version, path, check, old and new
# values); the other fields are for reviewers. Re-run --write-baseline to refresh.
";

/// Why a baseline could not be read or written.
#[derive(Debug, Error)]
pub enum BaselineError {
    /// The file could not be read.
    #[error("{path}: cannot read the baseline: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The file holds more than a file may (`--max-input-bytes`), or is
    /// not a file at all; the error names the path.
    #[error(transparent)]
    Input(InputError),
    /// The file is not a baseline.
    #[error("{path}:{line}: invalid baseline: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
    /// The file could not be written (nothing was replaced).
    #[error("{path}: cannot write the baseline: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BaselineFile {
    crd_safety_baseline: u32,
    #[serde(default)]
    findings: Vec<BaselineEntry>,
}

/// A baseline read from a file.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// The entries, in file order.
    pub entries: Vec<BaselineEntry>,
}

impl Baseline {
    /// Reads a baseline file, through the cap of one file.
    pub fn load(path: &Path, limits: InputLimits) -> Result<Baseline, BaselineError> {
        let text = read_text(path, limits).map_err(|e| match e {
            InputError::Io { source, .. } => BaselineError::Read {
                path: path.display().to_string(),
                source,
            },
            other => BaselineError::Input(other),
        })?;
        Baseline::parse(&text, &path.display().to_string())
    }

    /// Parses baseline text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<Baseline, BaselineError> {
        let invalid = |line: usize, message: String| BaselineError::Invalid {
            path: path.to_string(),
            line,
            message,
        };
        let file: BaselineFile = serde_saphyr::from_str(text).map_err(|e| {
            let (line, message) = yaml_error(&e);
            invalid(line.unwrap_or(1), message)
        })?;
        let positions = DocumentText::new(text.into(), 1);
        let line_of = |path: &[&str]| positions.find(path).map_or(1, |(line, _)| line);
        if file.crd_safety_baseline != FORMAT {
            return Err(invalid(
                line_of(&["crdSafetyBaseline"]),
                format!(
                    "crdSafetyBaseline: {} is not a format this version reads (expected {FORMAT})",
                    file.crd_safety_baseline
                ),
            ));
        }
        for (i, e) in file.findings.iter().enumerate() {
            let ok = e.fingerprint.len() == 16
                && e.fingerprint
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !ok {
                return Err(invalid(
                    line_of(&["findings", &i.to_string(), "fingerprint"]),
                    format!(
                        "fingerprint {:?} is not 16 lower-case hex digits",
                        e.fingerprint
                    ),
                ));
            }
        }
        Ok(Baseline {
            entries: file.findings,
        })
    }

    /// A baseline of every warning and error `report` lists, including
    /// those an earlier baseline already accepted (info findings never fail
    /// a run, so they are not recorded).
    pub fn of_report(report: &Report) -> Baseline {
        let mut entries = Vec::new();
        for crd in &report.crds {
            for f in crd.findings.iter().chain(&crd.baselined) {
                if f.severity > Severity::Info {
                    entries.push(BaselineEntry {
                        fingerprint: fingerprint(&crd.name, f),
                        crd: crd.name.clone(),
                        check: f.check.id().to_string(),
                        version: f.version.clone(),
                        path: f.path.clone(),
                        message: Some(crate::report::change_of(f).to_string()),
                    });
                }
            }
        }
        Baseline { entries }
    }

    /// The baseline as file text.
    pub fn to_text(&self) -> String {
        let file = BaselineFile {
            crd_safety_baseline: FORMAT,
            findings: self.entries.clone(),
        };
        let body = serde_saphyr::to_string(&file).unwrap_or_default();
        format!("{HEADER}{body}")
    }

    /// Writes the baseline to `path` whole or not at all: a temporary file
    /// beside it, renamed over it.
    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        let err = |source| BaselineError::Write {
            path: path.display().to_string(),
            source,
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "baseline".into());
        let temp: PathBuf = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let written =
            std::fs::write(&temp, self.to_text()).and_then(|()| std::fs::rename(&temp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(err(e));
        }
        Ok(())
    }

    /// Moves the findings this baseline accepts to each CRD's `baselined`
    /// list, records the stale entries of the CRDs in the report, and
    /// updates statuses and totals.
    pub fn apply(&self, report: &mut Report) {
        let known: HashSet<&str> = self
            .entries
            .iter()
            .map(|e| e.fingerprint.as_str())
            .collect();
        let mut matched: HashSet<String> = HashSet::new();
        for crd in &mut report.crds {
            let (accepted, kept): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut crd.findings)
                .into_iter()
                .partition(|f| {
                    let fp = fingerprint(&crd.name, f);
                    let hit = known.contains(fp.as_str());
                    if hit {
                        matched.insert(fp);
                    }
                    hit
                });
            crd.baselined.extend(accepted);
            crd.add(kept, Vec::new());
        }
        let in_run: HashSet<&str> = report.crds.iter().map(|c| c.name.as_str()).collect();
        let stale: Vec<BaselineEntry> = self
            .entries
            .iter()
            .filter(|e| in_run.contains(e.crd.as_str()) && !matched.contains(&e.fingerprint))
            .cloned()
            .collect();
        report.stale_baseline.extend(stale);
        report.recount();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::compare::Check;
    use serde_json::json;

    fn finding(old: Value, new: Value) -> Finding {
        Finding::new(
            Check::Maximum,
            Severity::Error,
            "maximum lowered 100 -> 50: ...",
        )
        .in_version("v1")
        .at("^.spec.size")
        .values(Some(old), Some(new))
    }

    #[test]
    fn a_fingerprint_follows_the_values_not_the_wording_or_key_order() {
        let a = finding(json!({"a": 1, "b": 2}), json!(50));
        let mut reworded = a.clone();
        reworded.message = "something else".into();
        let reordered = finding(json!({"b": 2, "a": 1}), json!(50));
        let changed_again = finding(json!({"a": 1, "b": 2}), json!(40));
        let fp = fingerprint("w.example.com", &a);
        assert_eq!(fp.len(), 16);
        assert_eq!(fp, fingerprint("w.example.com", &reworded));
        assert_eq!(fp, fingerprint("w.example.com", &reordered));
        assert_ne!(fp, fingerprint("w.example.com", &changed_again));
        assert_ne!(fp, fingerprint("other.example.com", &a));
    }

    #[test]
    fn a_bad_fingerprint_names_its_line() {
        let text = "crdSafetyBaseline: 1\nfindings:\n- fingerprint: 0123456789abcdef\n  crd: a\n  check: enum\n- fingerprint: nope\n  crd: b\n  check: enum\n";
        let err = Baseline::parse(text, "b.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "b.yaml:6: invalid baseline: fingerprint \"nope\" is not 16 lower-case hex digits"
        );
    }

    #[test]
    fn an_unknown_field_or_format_is_refused_with_its_line() {
        let err = Baseline::parse("crdSafetyBaseline: 1\nfindings:\n- fingerprint: 0123456789abcdef\n  crd: a\n  check: enum\n  severity: error\n", "b.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("b.yaml:6: invalid baseline: "), "{err}");
        let err = Baseline::parse("crdSafetyBaseline: 2\n", "b.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "b.yaml:1: invalid baseline: crdSafetyBaseline: 2 is not a format this version reads (expected 1)"
        );
    }

    #[test]
    fn written_text_reads_back() {
        let b = Baseline {
            entries: vec![BaselineEntry {
                fingerprint: "0123456789abcdef".into(),
                crd: "w.example.com".into(),
                check: "maximum".into(),
                version: Some("v1".into()),
                path: Some("^.spec.size".into()),
                message: Some("maximum lowered 100 -> 50".into()),
            }],
        };
        let back = Baseline::parse(&b.to_text(), "b.yaml").unwrap();
        assert_eq!(back.entries, b.entries);
    }
}
