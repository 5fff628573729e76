//! Comparing an old and a new CRD: the check catalog, run in one pass.
//!
//! [`compare_crds`] runs the CRD-level checks ([`crd_level`]), walks the
//! schema of every version present on both sides ([`fields`]), compares the
//! served versions of the new CRD with each other when conversion is `None`
//! ([`cross_version`]), adds up what the rules of a version can cost in one
//! object ([`cost_budget`]), and reports what no check consumed as
//! `unknownChange`. It returns raw findings at their default severities;
//! [`crate::config::Policy`] then applies the user's configuration.

pub mod catalog;
mod cost_budget;
mod crd_level;
mod cross_version;
mod fields;
mod messages;
mod one_of;
mod witness;

use serde::Serialize;
use serde_json::Value;

use crate::crd::Crd;

pub use catalog::{Check, Family, Fold, Reach, Severity};

/// One thing a check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The check's stable id.
    pub check: Check,
    /// How serious it is.
    pub severity: Severity,
    /// The version (`v1`), the pair of served versions (`v1alpha1 -> v1`), or
    /// none for CRD-wide findings.
    pub version: Option<String>,
    /// The schema path (`^.spec.size`), or none for CRD-wide findings.
    pub path: Option<String>,
    /// What changed, why it matters, and how to do it safely.
    pub message: String,
    /// The old value, when there is one.
    pub old: Option<Value>,
    /// The new value, when there is one.
    pub new: Option<Value>,
    /// For findings of the object scan: which objects, how many, and
    /// whether ratcheting lets them keep working.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<ObjectsDetail>,
    /// Where the finding's node is in the manifests (NEW, or OLD for what
    /// was removed), filled in after the checks ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<crate::manifest::Position>,
    /// For a finding against a consumer's requirement (`--requirements`):
    /// whose requirement the change breaks, so the report can name them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirement: Option<RequirementRef>,
    /// A value the old schema accepts at the finding's node and the new
    /// constraint refuses, when the check found one: the message shows it
    /// cut short, this is all of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub witness: Option<Value>,
    /// How the cluster's stored objects graded it (`--objects`), when they
    /// decide it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grade: Option<Grade>,
}

/// The consumer a finding concerns: a requirement pinned a CRD, and NEW
/// breaks it. Carried on the finding rather than in a section of its own so
/// that every output format, the baseline and the exit code treat it like
/// any other finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequirementRef {
    /// `namespace/name`, or `name` for a cluster-wide requirement.
    pub name: String,
    /// Who to talk to before breaking it, as the requirement says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Where the requirement was read (`file:line`, or the cluster).
    pub source: String,
}

impl RequirementRef {
    /// The words that lead each of its findings' messages:
    /// ``breaks `ns/name` (owner: #team)``.
    pub fn prefix(&self) -> String {
        match &self.owner {
            Some(owner) => format!("breaks `{}` (owner: {owner})", self.name),
            None => format!("breaks `{}`", self.name),
        }
    }
}

impl Finding {
    /// A CRD-wide finding with no values; the methods below add what a site
    /// knows beyond that, so each site states only what differs.
    pub fn new(check: Check, severity: Severity, message: impl Into<String>) -> Finding {
        Finding {
            check,
            severity,
            version: None,
            path: None,
            message: message.into(),
            old: None,
            new: None,
            objects: None,
            location: None,
            requirement: None,
            witness: None,
            grade: None,
        }
    }

    /// In this version (or pair of served versions).
    pub fn in_version(mut self, version: impl Into<String>) -> Finding {
        self.version = Some(version.into());
        self
    }

    /// At this schema path.
    pub fn at(mut self, path: impl Into<String>) -> Finding {
        self.path = Some(path.into());
        self
    }

    /// With the old and the new value.
    pub fn values(mut self, old: Option<Value>, new: Option<Value>) -> Finding {
        self.old = old;
        self.new = new;
        self
    }

    /// With what the object scan found.
    pub fn with_objects(mut self, objects: ObjectsDetail) -> Finding {
        self.objects = Some(objects);
        self
    }

    /// Whether the stored objects cleared it: they decide it, and none is
    /// hurt.
    pub fn cleared_by_objects(&self) -> bool {
        self.grade
            .as_ref()
            .is_some_and(|g| g.outcome == GradeOutcome::NoStoredObjectAffected)
    }
}

/// The object-scan part of a finding (`--objects`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectsDetail {
    /// The rule (`maxLength`, `x-kubernetes-validations`, `pruned`, ...).
    pub rule: String,
    /// Objects affected.
    pub count: u64,
    /// Objects scanned in that version.
    pub scanned: u64,
    /// For invalid objects: whether updates that leave the field unchanged
    /// still succeed on this cluster (validation ratcheting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratcheted: Option<bool>,
    /// Up to `--max-examples` objects, `namespace/name`.
    pub examples: Vec<String>,
}

/// What the stored objects did to one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum GradeOutcome {
    /// Every stored object meets it: lowered to a warning.
    NoStoredObjectAffected,
    /// Stored objects fail it (or lose or change data by it): kept.
    StoredObjectsAffected,
    /// The objects would decide it, but the scan could not: kept.
    Undecided,
}

/// How the stored objects graded a finding, carried on the finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grade {
    /// What the objects did.
    pub outcome: GradeOutcome,
    /// The severity the schema alone gave it.
    pub schema_severity: Severity,
    /// Why the grade is what it is, in one sentence.
    pub reason: String,
    /// Stored objects read in the finding's version (none when undecided).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects_scanned: Option<u64>,
    /// Of those, the objects it hurts (none when undecided).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects_affected: Option<u64>,
}

/// Where the list of versions objects may be stored in came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StoredVersionsSource {
    /// The old CRD's `status.storedVersions` (a live object or its YAML).
    Status,
    /// Given with `--stored-versions`.
    Flag,
    /// Unknown: assumed to be just the old storage version.
    Assumed,
}

/// Where the list came from, in the one wording the table, the Markdown
/// summary and the `storedVersionRemoval` message share.
impl std::fmt::Display for StoredVersionsSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StoredVersionsSource::Status => "status.storedVersions",
            StoredVersionsSource::Flag => "--stored-versions",
            StoredVersionsSource::Assumed => {
                "status.storedVersions not available, assumed to be the storage version"
            }
        })
    }
}

/// The versions objects may still be stored in, and how we know.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredVersions {
    /// Version names.
    pub versions: Vec<String>,
    /// Where they came from.
    pub source: StoredVersionsSource,
}

impl StoredVersions {
    /// Picks the best available answer: the old CRD's status, then the flag,
    /// then the old storage version (an assumption the report spells out).
    pub fn resolve(old: &Crd, flag: Option<&[String]>) -> StoredVersions {
        if let Some(v) = &old.stored_versions
            && !v.is_empty()
        {
            return StoredVersions {
                versions: v.clone(),
                source: StoredVersionsSource::Status,
            };
        }
        if let Some(v) = flag {
            return StoredVersions {
                versions: v.to_vec(),
                source: StoredVersionsSource::Flag,
            };
        }
        StoredVersions {
            versions: vec![old.storage_version().name().to_string()],
            source: StoredVersionsSource::Assumed,
        }
    }
}

/// Per-check options where the safe direction is a matter of policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// `enum.allowAdditions`: added enum values are info, not errors.
    pub enum_allow_additions: bool,
    /// `pattern.allowRemoval`: a removed pattern is not reported.
    pub pattern_allow_removal: bool,
    /// `nullable.allowAddition`: `nullable: true` added is info, not an error.
    pub nullable_allow_addition: bool,
    /// `xValidations.allowRemoval`: a removed CEL rule is not reported.
    pub x_validations_allow_removal: bool,
    /// `anyOf.allowAdditions`: an added anyOf branch is info, not an error.
    pub any_of_allow_additions: bool,
}

/// An option a check accepts besides `level`, declared with the check
/// (see `fields::FIELD_CHECKS`): the parser and the error listing valid
/// options both read it, so an option cannot be accepted without setting
/// the right thing.
#[derive(Debug)]
pub struct CheckOption {
    /// Its key under `checks.<id>` in the config file.
    pub key: &'static str,
    /// Sets it.
    pub set: fn(&mut CheckOptions, bool),
}

/// The options `check` accepts besides `level`.
pub fn options_of(check: Check) -> &'static [CheckOption] {
    fields::options_of(check)
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            enum_allow_additions: true,
            pattern_allow_removal: true,
            nullable_allow_addition: true,
            x_validations_allow_removal: true,
            any_of_allow_additions: true,
        }
    }
}

/// Runs the whole catalog on one CRD present on both sides.
pub fn compare_crds(
    old: &Crd,
    new: &Crd,
    stored: &StoredVersions,
    options: &CheckOptions,
) -> Vec<Finding> {
    let mut out = Vec::new();
    crd_level::check(old, new, stored, &mut out);
    for new_version in &new.versions {
        if let Some(old_version) = old.version(new_version.name()) {
            let ctx = fields::Context {
                version: new_version.name().to_string(),
                options,
                cross_version: false,
                structural: !new.preserve_unknown_fields(),
                webhook_conversion: new.conversion_strategy() == "Webhook"
                    && new.versions.len() > 1,
                first_served_before: true,
            };
            fields::walk(&ctx, &old_version.schema, &new_version.schema, &mut out);
        }
    }
    cost_budget::check(old, new, &mut out);
    cross_version::check(Some(old), new, options, &mut out);
    grade_unserved_versions(old, new, stored, &mut out);
    grade_unpruned(new, &mut out);
    out
}

/// A CRD whose `spec.preserveUnknownFields` is true (a v1beta1 manifest
/// that leaves it unset defaults to true) prunes nothing: a field removed
/// from its schema, or written through a version whose storage schema
/// lacks it, keeps its stored value. Losing the field's schema (its
/// validation, defaults and documentation) still deserves a warning.
fn grade_unpruned(new: &Crd, out: &mut [Finding]) {
    if !new.preserve_unknown_fields() {
        return;
    }
    for f in out.iter_mut().filter(|f| {
        matches!(
            f.check,
            Check::ExistingFieldRemoval | Check::ConversionDataLoss
        ) && f.severity == Severity::Error
    }) {
        f.severity = Severity::Warning;
        f.message = format!(
            "{}: but the new CRD has spec.preserveUnknownFields true (the default of a v1beta1 manifest that \
leaves it unset), so the API server prunes nothing and stored values are kept; only the field's schema \
(validation, defaults, documentation) is gone",
            f.message.trim_end_matches('.')
        );
    }
}

/// The schema keyword a finding of `check` at a schema path points at,
/// from the check's own declaration (its claimed keywords).
pub fn reported_keyword(check: Check) -> Option<&'static str> {
    match check {
        Check::CelCostBudget => Some(cost_budget::REPORTED_KEYWORD),
        _ => fields::reported_keyword(check),
    }
}

/// The key of `spec` (with `in_version`, of the version entry) a CRD-level
/// finding of `check` points at, from the check's declaration.
pub fn reported_crd_key(check: Check, in_version: bool) -> Option<&'static str> {
    crd_level::reported_key(check, in_version)
}

/// What a finding's change can reach: as its check's row declares, else
/// stored objects, so a check without a declaration (a test holds field and
/// version-entry checks to one) is graded on the safe side.
fn reach_of(check: Check) -> Reach {
    check.declared_reach().unwrap_or(Reach::StoredObjects)
}

/// Grades findings on a version the new CRD does not serve. Nobody sends
/// requests through it, so what only matters to requests is info. What
/// reaches stored objects depends on whether any are stored in it: if
/// so, it keeps its severity and says why (those objects are pruned and
/// defaulted by this version's schema on every read); if not, info, or a
/// warning when the stored versions are only assumed (it may still hold
/// objects the manifest cannot show).
fn grade_unserved_versions(old: &Crd, new: &Crd, stored: &StoredVersions, out: &mut [Finding]) {
    // Not served by the new CRD: no request goes through it after the
    // update, whether the old one served it (servedVersionRemoval reports
    // that) or not.
    let served = |c: &Crd, name: &str| c.version(name).is_some_and(|v| v.spec.served);
    let unserved = |name: &str| {
        old.version(name).is_some() && new.version(name).is_some() && !served(new, name)
    };
    for f in out.iter_mut() {
        let Some(v) = f.version.as_deref() else {
            continue;
        };
        if !unserved(v) {
            continue;
        }
        // A version the old CRD served: only its schema's findings are
        // graded here; taking it out of service (and what that does to
        // its clients and stored versions) is reported as it is.
        let field_level = f.check.family() == Family::Field;
        if served(old, v) && !field_level {
            continue;
        }
        let is_stored = stored.versions.iter().any(|s| s == v);
        let not_served = if served(old, v) {
            format!("version {v} is no longer served")
        } else {
            format!("version {v} is not served in either release")
        };
        let (severity, why) = match (reach_of(f.check), is_stored, stored.source) {
            (Reach::Requests, _, _) => (
                Severity::Info,
                format!(
                    "{not_served}: no request is validated or answered through it, so this cannot break anything"
                ),
            ),
            (Reach::StoredObjects, true, _) => {
                let effect = match f.check {
                    Check::Default => {
                        "defaulted by this version's schema whenever they are read, through any version"
                    }
                    Check::ExistingFieldRemoval
                    | Check::PreserveUnknownFields
                    | Check::AdditionalProperties
                    | Check::Nullable
                    | Check::EmbeddedResource => {
                        "pruned by this version's schema whenever they are read, through any version, and lost on their next write"
                    }
                    _ => {
                        "decoded (pruned and defaulted) with this version's schema whenever they are read, through any version"
                    }
                };
                (
                    f.severity,
                    format!(
                        "{not_served} but is still in {}: the objects stored in it are {effect}; `kubectl crd-safety migrate` moves them to the storage version first",
                        if stored.source == StoredVersionsSource::Assumed {
                            "the assumed stored versions".to_string()
                        } else {
                            stored.source.to_string()
                        }
                    ),
                )
            }
            (Reach::StoredObjects, false, StoredVersionsSource::Assumed) => (
                Severity::Warning,
                format!(
                    "{not_served}; no object is stored in it if status.storedVersions does not list it (ASSUMED here), in which case this cannot break anything"
                ),
            ),
            (Reach::StoredObjects, false, _) => (
                Severity::Info,
                format!(
                    "{not_served} and is not in {}: no object is stored in it and no client reads or writes through it, so this cannot break anything",
                    stored.source
                ),
            ),
        };
        // Info findings stay as they are: there is nothing to explain away.
        if f.severity > Severity::Info {
            f.severity = f.severity.min(severity);
            f.message = format!("{} ({why})", f.message);
        }
    }
}

/// Checks a CRD that exists only in the new manifests: it cannot break
/// existing objects, but its own versions can still lose data.
pub fn check_new_crd(new: &Crd, options: &CheckOptions) -> Vec<Finding> {
    let mut out = vec![Finding::new(
        Check::NewCrd,
        Severity::Info,
        format!(
            "new CRD (kind {}, versions {}): nothing in the cluster depends on it yet",
            new.spec.names.kind,
            new.versions
                .iter()
                .map(|v| v.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )];
    cross_version::check(None, new, options, &mut out);
    out
}

/// The finding for a CRD that exists only in the old manifests.
pub fn absent_crd(old: &Crd) -> Vec<Finding> {
    vec![Finding::new(
        Check::AbsentCrd,
        Severity::Info,
        format!(
            "not in the new manifests: applying them leaves {} in place; deleting it would delete every {} object",
            old.name, old.spec.names.kind
        ),
    )]
}
