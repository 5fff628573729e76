//! What `migrate` plans and what became of each CRD: produced by
//! [`crate::cluster_write::migrate`], rendered by [`crate::report`].

use std::collections::BTreeMap;

use serde::Serialize;

use super::ScanSummary;
use crate::compare::Finding;
use crate::crd::ResourceRef;

/// One CRD's plan and check.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdPlan {
    /// `metadata.name`.
    pub name: String,
    /// The version objects are written in.
    pub storage_version: String,
    /// `status.storedVersions` as read.
    pub stored_versions: Vec<String>,
    /// Whether storedVersions lists more than the storage version.
    pub needs_migration: bool,
    /// Objects read in the storage version (not counted when there is
    /// nothing to do).
    pub objects: Option<u64>,
    /// Objects per namespace (`""`: cluster-scoped), with `--by-namespace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespaces: Option<BTreeMap<String, u64>>,
    /// What the check found, most serious first.
    pub findings: Vec<Finding>,
    /// The check's totals and every offending object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<ScanSummary>,
    /// Stored versions no longer served: their objects were only seen
    /// through the storage version.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable_versions: Vec<String>,
    /// Objects a write would reject.
    #[serde(skip)]
    pub rejected: u64,
    /// Objects a write would take fields from.
    #[serde(skip)]
    pub losing_data: u64,
    #[serde(skip)]
    pub(crate) resource: ResourceRef,
    /// The CRD's `resourceVersion` when planned: the precondition of the
    /// storedVersions update, so any change to the CRD meanwhile fails safe.
    #[serde(skip)]
    pub(crate) resource_version: String,
    /// The CRD's `metadata.generation` when planned: the server engine's
    /// precondition, since the cluster's migrator writes the CRD's status
    /// (a new `resourceVersion`) while the spec stays as planned.
    #[serde(skip)]
    pub(crate) generation: i64,
}

/// Who writes the objects back in the storage version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineName {
    /// The cluster's storage-version migrator, through a
    /// `StorageVersionMigration` (kube-controller-manager does the writes).
    Server,
    /// crd-safety itself: every object read and written back.
    Client,
}

/// The engine the plan chose, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlannedEngine {
    /// Which one.
    pub name: EngineName,
    /// `storagemigration.k8s.io/v1` (or `v1beta1`, `v1alpha1`) for the
    /// server engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<String>,
    /// Why: `--engine`, or what the cluster serves.
    pub reason: String,
    /// Whether the client engine takes over a CRD whose migration the
    /// cluster does not take up (`--engine auto`).
    pub fallback: bool,
}

/// The plan for every CRD named, and where.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MigrationPlan {
    /// kubeconfig context.
    pub context: String,
    /// API server URL.
    pub server: String,
    /// Whether `--allow-pruning` was given.
    pub allow_pruning: bool,
    /// Who writes the objects back.
    pub engine: PlannedEngine,
    /// In the order named.
    pub crds: Vec<CrdPlan>,
}

/// What became of one CRD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "message")]
pub enum MigrationOutcome {
    /// Every object rewritten and storedVersions trimmed.
    Migrated,
    /// storedVersions was already just the storage version.
    Unchanged,
    /// storedVersions untouched; the message says why and what remains.
    Failed(String),
    /// Stopped by Ctrl-C; storedVersions untouched.
    Interrupted(String),
    /// Not started (an earlier CRD was denied or interrupted).
    NotMigrated,
}

impl MigrationOutcome {
    /// A short word for the outcome table.
    pub fn label(&self) -> &'static str {
        match self {
            MigrationOutcome::Migrated => "migrated",
            MigrationOutcome::Unchanged => "unchanged",
            MigrationOutcome::Failed(_) => "FAILED",
            MigrationOutcome::Interrupted(_) => "INTERRUPTED",
            MigrationOutcome::NotMigrated => "not migrated",
        }
    }
}

/// One CRD's result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Migrated {
    /// `metadata.name`.
    pub name: String,
    /// What happened.
    #[serde(flatten)]
    pub outcome: MigrationOutcome,
    /// Who migrated it (the client when the server's migrator did not
    /// take it up and `--engine auto` let the client take over).
    pub engine: EngineName,
    /// The `StorageVersionMigration` the server engine created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migration: Option<String>,
    /// Who set storedVersions to the storage version: the cluster's
    /// migrator (1.36 and later) or crd-safety.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trimmed_by: Option<EngineName>,
    /// Why the client took over from the server engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// Objects written back by this run (the client engine's count; the
    /// server's migrator does not report one).
    pub rewritten: u64,
    /// Objects someone else wrote after they were read (409): stored in
    /// the storage version by that write.
    pub written_by_others: u64,
    /// Objects deleted after they were read (404).
    pub deleted: u64,
    /// Transient failures retried.
    pub retries: u64,
    /// Objects that could not be written.
    pub failed: Vec<ObjectFailure>,
    /// `status.storedVersions` after the run.
    pub stored_versions: Vec<String>,
}

/// An object that could not be written back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObjectFailure {
    /// `namespace/name`.
    pub object: String,
    /// The server's answer.
    pub message: String,
}

/// The `migrate` section that `migrate -o json|yaml` adds to the plan: part
/// of the output contract (docs/output.md), typed so that it changes only
/// on purpose.
#[derive(Debug, Clone, Serialize)]
pub struct MigrateSection<'a> {
    /// `migrated`, `nothingToDo`, `dryRun`, `refused`, `declined`, `failed`
    /// or `interrupted`.
    pub decision: &'a str,
    /// What became of each CRD, in the order given.
    pub results: &'a [Migrated],
}
