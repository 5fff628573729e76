//! The offline comparison: two manifest sets in, one [`Report`] out. The
//! live commands reuse it with the cluster's CRDs as the old side.

use std::collections::BTreeMap;

use crate::compare::{self, StoredVersions};
use crate::config::Config;
use crate::crd_validation;
use crate::manifest::ManifestSet;
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
    let notices = old.notices.iter().chain(&new.notices).cloned().collect();
    report(crds, skipped, notices, config)
}

/// The report of an offline comparison, from its entries (in order), the
/// skipped documents (old side first) and the notices of reading.
pub fn report(
    crds: Vec<CrdReport>,
    skipped: Vec<SkippedDocument>,
    notices: Vec<String>,
    config: &Config,
) -> Report {
    let mut report = Report::new(crds, skipped, config.mode, config.fail_mode);
    report.kube_version = Some(config.kube_version.to_string());
    report.notices = notices;
    report
}

/// Below this many schema nodes in `new` (weighed as in [`entries`]),
/// everything runs on the calling thread: starting threads would cost more
/// than they save. Measured on the corpus pairs (`cargo bench --bench
/// check_cost`, alternating builds): 60 beats 300 (the check of a mid-sized
/// CRD then overlaps its comparison) and is no worse than 10.
const PARALLEL_CHECK_NODES: usize = 60;

/// The two independent halves of checking one new CRD.
#[derive(Clone, Copy)]
enum Task {
    /// `invalidCrd`: the API server's validation of the new CRD alone.
    Validate,
    /// The comparison with the old CRD (or the checks of a new one).
    Compare,
}

/// One report entry per CRD: those of `new` in order, then those only in
/// `old`.
pub fn entries(
    old: &ManifestSet,
    new: &ManifestSet,
    stored: &StoredVersionsArg,
    config: &Config,
) -> Vec<CrdReport> {
    let policy = config.policy();
    // Validating a CRD and comparing it do not depend on each other, nor do
    // different CRDs: all of them are spread over the cores, so a single
    // large CRD is validated on one core while it is compared on another.
    let weights: Vec<usize> = new.crds.iter().map(|n| n.crd.schema_nodes()).collect();
    let mut jobs = Vec::with_capacity(2 * new.crds.len());
    for i in 0..new.crds.len() {
        if !config.skip_crd_validation {
            jobs.push((i, Task::Validate));
        }
        jobs.push((i, Task::Compare));
    }
    // Validation takes about half as long as the comparison of a CRD.
    let cost = |&(i, task): &(usize, Task)| match task {
        Task::Validate => weights[i] / 2,
        Task::Compare => weights[i],
    };
    let done = crate::parallel::map(&jobs, cost, PARALLEL_CHECK_NODES, |&(i, task)| {
        let n = &new.crds[i];
        let old_crd = old.get(&n.crd.name);
        match task {
            Task::Validate => (
                crd_validation::findings(
                    &n.crd.manifest,
                    old_crd.map(|o| &o.crd.manifest),
                    config.kube_version,
                ),
                None,
            ),
            Task::Compare => match old_crd {
                Some(o) => {
                    let sv = StoredVersions::resolve(&o.crd, stored.for_crd(&n.crd.name));
                    let findings = compare::compare_crds(&o.crd, &n.crd, &sv, &config.options);
                    (findings, Some(sv))
                }
                None => (compare::check_new_crd(&n.crd, &config.options), None),
            },
        }
    });
    let mut crds = Vec::with_capacity(new.crds.len());
    let mut raw = Vec::new();
    for ((i, task), (findings, stored_versions)) in jobs.iter().zip(done) {
        // The server's own verdict on the new CRD comes first: a CRD it
        // refuses is never applied, whatever the comparison says.
        raw.extend(findings);
        if let Task::Validate = task {
            continue;
        }
        let n = &new.crds[*i];
        let name = &n.crd.name;
        let (findings, excepted) = policy.apply(name, std::mem::take(&mut raw));
        let mut entry = match old.get(name) {
            Some(o) => {
                let mut e = CrdReport::new(name.clone(), CrdStatus::Safe, findings, excepted);
                e.old_source = Some(o.location.to_string());
                e.stored_versions = stored_versions;
                e
            }
            None => CrdReport::new(name.clone(), CrdStatus::New, findings, excepted),
        };
        entry.new_source = Some(n.location.to_string());
        crds.push(entry);
    }
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
    use crate::compare::Check;

    /// A CRD of `fields` string properties under spec; `extra` is added to
    /// the schema of the first one.
    fn crd(name: &str, fields: usize, extra: &str) -> String {
        let mut props = String::new();
        for i in 0..fields {
            props.push_str(&format!(
                "                f{i}:\n                  type: string\n"
            ));
            if i == 0 {
                props.push_str(extra);
            }
        }
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {name}.example.com
spec:
  group: example.com
  names: {{plural: {name}, singular: {name}s, kind: K{name}, listKind: K{name}List}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
{props}"
        )
    }

    /// Large CRDs are validated and compared on different threads; the
    /// report is the same as for small ones: each CRD in the order of NEW,
    /// the server's refusal first, then what the comparison found.
    #[test]
    fn large_crds_checked_on_threads_report_in_order() {
        for fields in [3, 400] {
            let mut old = ManifestSet::default();
            let mut new = ManifestSet::default();
            let bad_default =
                "                  maxLength: 2\n                  default: toolong\n";
            let tighter = "                  maxLength: 3\n                  default: ok\n";
            for (name, o, n) in [("alphas", "", bad_default), ("betas", "", tighter)] {
                crate::manifest::load_text(&crd(name, fields, o), "old.yaml", false, &mut old)
                    .unwrap();
                crate::manifest::load_text(&crd(name, fields, n), "new.yaml", false, &mut new)
                    .unwrap();
            }
            if fields == 400 {
                assert!(new.crds[0].crd.schema_nodes() > PARALLEL_CHECK_NODES);
            }
            let crds = entries(
                &old,
                &new,
                &StoredVersionsArg::default(),
                &Config::default(),
            );
            let names: Vec<&str> = crds.iter().map(|c| c.name.as_str()).collect();
            assert_eq!(names, ["alphas.example.com", "betas.example.com"]);
            let checks =
                |i: usize| -> Vec<Check> { crds[i].findings.iter().map(|f| f.check).collect() };
            let alphas = checks(0);
            assert_eq!(
                alphas.first(),
                Some(&Check::InvalidCrd),
                "{fields}: {alphas:?}"
            );
            assert!(
                alphas.len() > 1,
                "{fields}: the comparison's findings follow: {alphas:?}"
            );
            assert!(!checks(1).contains(&Check::InvalidCrd), "{fields}");
            assert!(!checks(1).is_empty(), "{fields}: maxLength lowered");
        }
    }

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
