//! The comparison engine: two manifest sets in, one [`Report`] out. The
//! `diff` and `lint` commands run it offline; `apply-check`
//! ([`crate::live_check`]) and the webhook run it with the cluster's CRDs as
//! the old side.

use std::collections::BTreeMap;

use crate::compare::{self, Check, Finding, StoredVersions};
use crate::config::Config;
use crate::crd::Crd;
use crate::crd_validation::{self, KubeVersion};
use crate::delivery::{helm, size};
use crate::manifest::{
    self, Inspect, Inspected, ManifestError, ManifestSet, Source, SourceOptions,
};
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

/// `invalidCrd`'s findings on the CRDs of a new side, each judged as a
/// create while the side was read (see [`load`]): `each[i]` is for
/// `new.crds[i]`, `None` for a CRD that was not judged then.
///
/// A CRD is judged alone, on the thread that parsed it, while its tree is
/// still in the cache and while the old side is still being read. The old
/// CRD only matters when the new one is refused (`validate_crd` relaxes
/// rules only then, and the API-approval and `preserveUnknownFields` rules
/// only ever drop an error for what the stored CRD already had): a verdict
/// with no finding is final; one with findings is judged again with the old
/// CRD when there is one.
#[derive(Debug, Clone, Default)]
pub struct Verdicts {
    kube: Option<KubeVersion>,
    each: Vec<Option<Vec<Finding>>>,
}

impl Verdicts {
    /// What was read with [`judging`], as verdicts on its CRDs.
    pub(crate) fn of(
        inspected: Inspected<Vec<Finding>>,
        config: &Config,
    ) -> (ManifestSet, Verdicts) {
        let verdicts = Verdicts {
            kube: Some(config.kube_version),
            each: inspected.results,
        };
        (inspected.set, verdicts)
    }

    /// The findings on `new.crds[i]` that stand as they are, for the
    /// version `config` judges against; `None` when the CRD must be judged
    /// (again).
    fn standing(&self, i: usize, has_old: bool, config: &Config) -> Option<&[Finding]> {
        if self.kube != Some(config.kube_version) || config.skip_crd_validation {
            return None;
        }
        let found = self.each.get(i)?.as_deref()?;
        (found.is_empty() || !has_old).then_some(found)
    }
}

/// Runs `read` with what judges each new CRD as it is read (nothing when
/// `config` turns the check off).
pub(crate) fn judging<R>(config: &Config, read: impl FnOnce(Inspect<Vec<Finding>>) -> R) -> R {
    let kube = config.kube_version;
    let judge = move |crd: &Crd| crd_validation::findings(&crd.manifest, None, kube);
    read((!config.skip_crd_validation).then_some(&judge))
}

/// Reads both sides of a `diff` at once, the new side's CRDs judged as
/// they are read ([`Verdicts`]).
pub fn load(
    old: &[Source],
    new: &[Source],
    opts: &SourceOptions,
    config: &Config,
) -> (
    Result<ManifestSet, ManifestError>,
    Result<(ManifestSet, Verdicts), ManifestError>,
) {
    let (old, new) = judging(config, |judge| {
        manifest::load_both_inspecting(old, new, opts, judge)
    });
    (old, new.map(|n| Verdicts::of(n, config)))
}

/// Reads the sources of `lint` (a new side alone), judging its CRDs as
/// they are read.
pub fn load_new(
    sources: &[Source],
    opts: &SourceOptions,
    config: &Config,
) -> Result<(ManifestSet, Verdicts), ManifestError> {
    judging(config, |judge| {
        manifest::load_with_inspecting(sources, opts, judge)
    })
    .map(|n| Verdicts::of(n, config))
}

/// Compares every CRD of `new` with its namesake in `old`.
pub fn diff(
    old: &ManifestSet,
    new: &ManifestSet,
    stored: &StoredVersionsArg,
    config: &Config,
) -> Report {
    diff_judged(old, new, &Verdicts::default(), stored, config)
}

/// [`diff`], with the verdicts [`load`] made on the CRDs of `new`.
pub fn diff_judged(
    old: &ManifestSet,
    new: &ManifestSet,
    verdicts: &Verdicts,
    stored: &StoredVersionsArg,
    config: &Config,
) -> Report {
    let crds = entries_judged(old, new, verdicts, stored, config);
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
    report.kube_version_source = Some(config.kube_version_source);
    report.notices = notices;
    report
}

/// Below this many schema nodes in `new` (weighed as in [`entries`]),
/// everything runs on the calling thread: starting threads would cost more
/// than they save. A low threshold lets the check of a mid-sized CRD
/// overlap its comparison (figures: docs/BENCHMARKS.md, "What `invalidCrd`
/// costs").
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
    entries_judged(old, new, &Verdicts::default(), stored, config)
}

/// [`entries`], with the verdicts made on the CRDs of `new` as they were
/// read: only the CRDs without a standing one are judged here.
pub fn entries_judged(
    old: &ManifestSet,
    new: &ManifestSet,
    verdicts: &Verdicts,
    stored: &StoredVersionsArg,
    config: &Config,
) -> Vec<CrdReport> {
    let policy = config.policy();
    let standing = |i: usize| {
        let has_old = old.get(&new.crds[i].crd.name).is_some();
        verdicts.standing(i, has_old, config)
    };
    // Validating a CRD and comparing it do not depend on each other, nor do
    // different CRDs: all of them are spread over the cores, so a single
    // large CRD is validated on one core while it is compared on another.
    let weights: Vec<usize> = new.crds.iter().map(|n| n.crd.schema_nodes()).collect();
    let mut jobs = Vec::with_capacity(2 * new.crds.len());
    for i in 0..new.crds.len() {
        if !config.skip_crd_validation && standing(i).is_none() {
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
    let (old_is_chart, new_is_chart) = (helm::side_is_chart(old), helm::side_is_chart(new));
    let mut uninstall = helm::uninstall(new);
    for ((i, task), (findings, stored_versions)) in jobs.iter().zip(done) {
        // The server's own verdict on the new CRD comes first: a CRD it
        // refuses is never applied, whatever the comparison says.
        if let Task::Compare = task
            && let Some(judged) = standing(*i)
        {
            raw.extend_from_slice(judged);
        }
        raw.extend(findings);
        if let Task::Validate = task {
            continue;
        }
        let n = &new.crds[*i];
        let name = &n.crd.name;
        raw.extend(crate::delivery::reading::findings(&n.readings));
        let added = raw
            .iter()
            .filter(|f| f.check == Check::FieldAddition)
            .count();
        raw.extend(helm::upgrade(old.get(name), old_is_chart, n, added));
        let client_side = old
            .get(name)
            .is_some_and(|o| size::applied_client_side(&o.crd));
        raw.extend(size::findings(&n.crd, client_side));
        if let Some(at) = uninstall.iter().position(|(crd, _)| crd == i) {
            raw.push(uninstall.swap_remove(at).1);
        }
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
            let mut raw = compare::absent_crd(&o.crd);
            raw.extend(helm::absent(o, new_is_chart));
            let (findings, excepted) = policy.apply(&o.crd.name, raw);
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
        with_properties(
            name,
            &format!(
                "            spec:\n              type: object\n              properties:\n{props}"
            ),
        )
    }

    /// The CRD `name`.example.com (one version, namespaced) whose root
    /// schema declares `properties` (YAML indented by 12 spaces).
    fn with_properties(name: &str, properties: &str) -> String {
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
{properties}"
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

    /// A CRD whose one rule is over the cost limit for a single rule.
    fn costly(name: &str) -> String {
        with_properties(
            name,
            "            l:
              type: array
              items: {type: string}
              x-kubernetes-validations:
                - rule: self.all(x, self.all(y, x == y))
",
        )
    }

    /// The new side's CRDs judged as they are read give the report of
    /// judging them during the comparison: a refused CRD with an old
    /// namesake is judged again with it (the cost of a single rule is not
    /// held against a schema the cluster already stores), one without
    /// keeps its verdict, and verdicts made for another Kubernetes version
    /// are not used.
    #[test]
    fn verdicts_made_while_reading_give_the_report_of_judging_later() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let old_file = dir.path().join("old.yaml");
        let new_file = dir.path().join("new.yaml");
        std::fs::write(&old_file, costly("alphas")).expect("old.yaml written");
        std::fs::write(
            &new_file,
            format!("{}---\n{}", costly("alphas"), costly("betas")),
        )
        .expect("new.yaml written");
        let config = Config::default();
        let (old, new) = load(
            &[Source::Path(old_file)],
            &[Source::Path(new_file)],
            &SourceOptions::default(),
            &config,
        );
        let (old, (new, verdicts)) = (old.expect("old reads"), new.expect("new reads"));
        let refused = |f: &Option<Vec<Finding>>| {
            f.as_ref()
                .is_some_and(|f| f.iter().any(|f| f.message.contains("estimated rule cost")))
        };
        assert_eq!(verdicts.each.len(), 2);
        assert!(verdicts.each.iter().all(refused), "{:?}", verdicts.each);
        let stored = StoredVersionsArg::default();
        let as_json = |r: &Report| serde_json::to_value(r).expect("a report serializes");
        let judged = diff_judged(&old, &new, &verdicts, &stored, &config);
        assert_eq!(
            as_json(&judged),
            as_json(&diff(&old, &new, &stored, &config))
        );
        // The stored CRD spares `alphas` the single rule's limit, not the
        // whole schema's.
        let rule_cost = |i: usize| {
            judged.crds[i].findings.iter().any(|f| {
                f.message
                    .contains("refuses this CRD: Forbidden: estimated rule cost")
            })
        };
        assert_eq!((rule_cost(0), rule_cost(1)), (false, true));
        let other = Config {
            kube_version: KubeVersion { minor: 30 },
            ..Config::default()
        };
        assert_eq!(
            as_json(&diff_judged(&old, &new, &verdicts, &stored, &other)),
            as_json(&diff(&old, &new, &stored, &other))
        );
        let off = Config {
            skip_crd_validation: true,
            ..Config::default()
        };
        let unchecked = diff_judged(&old, &new, &verdicts, &stored, &off);
        assert!(
            unchecked
                .crds
                .iter()
                .all(|c| c.findings.iter().all(|f| f.check != Check::InvalidCrd))
        );
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
