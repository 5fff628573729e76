//! What the object scan found besides its findings: produced by
//! [`crate::scan`], carried in the report and in a migration plan.

use serde::Serialize;

/// What the scan of one CRD found, besides its findings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanSummary {
    /// `1.34`.
    pub server_version: String,
    /// Whether the server ratchets unchanged invalid fields on update.
    pub ratcheting: bool,
    /// Versions scanned.
    pub versions: Vec<String>,
    /// Served before and after, but with an unchanged schema: not scanned.
    pub unchanged_versions: Vec<String>,
    /// The namespace the scan was narrowed to (`-n`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Objects scanned (in the version with the most; every version lists
    /// the same stored objects).
    pub scanned: u64,
    /// Objects the new schema rejects (in any scanned version).
    pub invalid: u64,
    /// Objects that lose or change data.
    pub losing_data: u64,
    /// Times a listing restarted after its continue token expired.
    pub restarts: u32,
    /// Requests of this scan retried after a transient failure (429, 5xx,
    /// a lost connection); the counts are complete all the same.
    pub retries: u64,
    /// Every offending object.
    pub objects: Vec<ObjectReport>,
}

/// One offending object, for JSON and YAML.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReport {
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub object: String,
    /// The version it was read and validated in.
    pub version: String,
    /// Rule violations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<ObjectViolation>,
    /// Fields dropped or changed on the next read or write.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data_loss: Vec<ObjectDataLoss>,
}

/// A violation of one object.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectViolation {
    /// Concrete path, e.g. `spec.ports[2].name`.
    pub path: String,
    /// Rule id, e.g. `maxLength`.
    pub rule: String,
    /// What is wrong.
    pub message: String,
    /// Whether an update leaving the field alone still succeeds.
    pub ratcheted: bool,
}

/// A field of one object that is dropped or changed.
#[derive(Debug, Clone, Serialize)]
pub struct ObjectDataLoss {
    /// Concrete path.
    pub path: String,
    /// `pruned`, `nullDropped` or `defaulted`.
    pub kind: &'static str,
}

/// What grading did to one CRD's findings, for the verdict line and JSON.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grading {
    /// Stored objects read (in the version with the most).
    pub objects_scanned: u64,
    /// Findings decided by the objects that reach none of them.
    pub reach_no_object: usize,
    /// Findings decided by the objects that reach some of them.
    pub reach_objects: usize,
    /// Findings the objects would decide but the scan could not.
    pub undecided: usize,
    /// Warnings and errors that do not depend on stored objects.
    pub not_object_dependent: usize,
}

impl Grading {
    /// Adds another CRD's grading.
    pub fn add(&mut self, other: &Grading) {
        self.objects_scanned += other.objects_scanned;
        self.reach_no_object += other.reach_no_object;
        self.reach_objects += other.reach_objects;
        self.undecided += other.undecided;
        self.not_object_dependent += other.not_object_dependent;
    }
}
