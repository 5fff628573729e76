//! The offline comparison: two manifest sets in, one [`Report`] out. The
//! live commands reuse it with the cluster's CRDs as the old side.

use std::collections::BTreeMap;

use crate::compare::{self, StoredVersions};
use crate::config::Config;
use crate::crd_validation;
use crate::manifest::{LoadedCrd, ManifestSet};
use crate::report::{CrdReport, CrdStatus, Report, SkippedDocument};

/// What `--stored-versions` said: a list for every CRD, and lists for
/// named CRDs (`NAME=v1alpha1,v1`), which win.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredVersionsArg {
    /// Applies to every CRD without its own entry.
    pub all: Option<Vec<String>>,
    /// Per CRD name.
    pub by_crd: BTreeMap<String, Vec<String>>,
}

impl StoredVersionsArg {
    /// Parses one `--stored-versions` value: `v1alpha1,v1` or
    /// `widgets.example.com=v1alpha1,v1`.
    pub fn add(&mut self, value: &str) -> Result<(), String> {
        let (crd, list) = match value.split_once('=') {
            Some((crd, list)) => (Some(crd.trim()), list),
            None => (None, value),
        };
        let versions: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if versions.is_empty() {
            return Err(format!("--stored-versions {value:?}: no version given"));
        }
        match crd {
            Some("") => return Err(format!("--stored-versions {value:?}: empty CRD name")),
            Some(name) => {
                self.by_crd.insert(name.to_string(), versions);
            }
            None => self.all = Some(versions),
        }
        Ok(())
    }

    /// The list for one CRD, if any was given.
    pub fn for_crd(&self, name: &str) -> Option<&[String]> {
        self.by_crd
            .get(name)
            .or(self.all.as_ref())
            .map(Vec::as_slice)
    }
}

/// Compares every CRD of `new` with its namesake in `old`.
pub fn diff(
    old: &ManifestSet,
    new: &ManifestSet,
    stored: &StoredVersionsArg,
    config: &Config,
) -> Report {
    let crds = entries(old, new, stored, config);
    let skipped: Vec<SkippedDocument> = old
        .skipped
        .iter()
        .chain(&new.skipped)
        .map(SkippedDocument::from)
        .collect();
    let mut report = Report::new(crds, skipped, config.mode, config.fail_mode);
    report.kube_version = Some(config.kube_version.to_string());
    report.notices = old.notices.iter().chain(&new.notices).cloned().collect();
    report
}

/// Below this much YAML in `new`, CRDs are checked on the calling thread.
const PARALLEL_CHECK_BYTES: usize = 256 * 1024;

/// One report entry per CRD: those of `new` in order, then those only in
/// `old`.
pub fn entries(
    old: &ManifestSet,
    new: &ManifestSet,
    stored: &StoredVersionsArg,
    config: &Config,
) -> Vec<CrdReport> {
    let policy = config.policy();
    // CRDs are checked independently: a bundle or directory is spread over
    // the cores (below a few hundred KiB, threads would cost more).
    let size = |n: &LoadedCrd| n.text.as_ref().map_or(1, |t| t.size());
    let mut crds = crate::parallel::map(&new.crds, size, PARALLEL_CHECK_BYTES, |n| {
        let name = &n.crd.name;
        let old_crd = old.get(name);
        // The server's own verdict on the new CRD comes first: a CRD it
        // refuses is never applied, whatever the comparison says.
        let invalid = if config.skip_crd_validation {
            Vec::new()
        } else {
            crd_validation::findings(
                &n.crd.manifest,
                old_crd.map(|o| &o.crd.manifest),
                config.kube_version,
            )
        };
        let mut entry = match old_crd {
            Some(o) => {
                let sv = StoredVersions::resolve(&o.crd, stored.for_crd(name));
                let mut raw = invalid;
                raw.extend(compare::compare_crds(&o.crd, &n.crd, &sv, &config.options));
                let (findings, excepted) = policy.apply(name, raw);
                let mut e = CrdReport::new(name.clone(), CrdStatus::Safe, findings, excepted);
                e.old_source = Some(o.location.to_string());
                e.stored_versions = Some(sv);
                e
            }
            None => {
                let mut raw = invalid;
                raw.extend(compare::check_new_crd(&n.crd, &config.options));
                let (findings, excepted) = policy.apply(name, raw);
                CrdReport::new(name.clone(), CrdStatus::New, findings, excepted)
            }
        };
        entry.new_source = Some(n.location.to_string());
        entry
    });
    for o in &old.crds {
        if new.get(&o.crd.name).is_none() {
            let (findings, excepted) = policy.apply(&o.crd.name, compare::absent_crd(&o.crd));
            let mut e = CrdReport::new(o.crd.name.clone(), CrdStatus::Absent, findings, excepted);
            e.old_source = Some(o.location.to_string());
            crds.push(e);
        }
    }
    crds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_versions_values_parse_globally_and_per_crd() {
        let mut a = StoredVersionsArg::default();
        a.add("v1alpha1, v1").unwrap();
        a.add("widgets.example.com=v1").unwrap();
        assert_eq!(
            a.for_crd("other.example.com"),
            Some(&["v1alpha1".to_string(), "v1".to_string()][..])
        );
        assert_eq!(
            a.for_crd("widgets.example.com"),
            Some(&["v1".to_string()][..])
        );
        assert!(a.add("x=").is_err());
        assert!(a.add("=v1").is_err());
    }
}
