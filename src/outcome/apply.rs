//! What `apply` plans and what became of each CRD: produced by
//! [`crate::change::apply`] and [`crate::live_check`], rendered by [`crate::report`].

use serde::Serialize;
use serde_json::Value;

/// What applying a manifest would do to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The CRD does not exist yet.
    Create,
    /// The CRD exists and the manifest changes it.
    Update,
    /// The server would store exactly what it has now.
    Unchanged,
}

impl Action {
    /// The word for reports and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Unchanged => "unchanged",
        }
    }
}

/// One manifest CRD and what applying it would do.
#[derive(Debug, Clone)]
pub struct Planned {
    /// `metadata.name`.
    pub name: String,
    /// Create, update or nothing.
    pub action: Action,
    /// The manifest as read (v1).
    pub manifest: Value,
    /// The API server's conflict message when another field manager owns
    /// fields this manifest changes.
    pub conflict: Option<String>,
    /// Managers of a plain `kubectl apply`/`kubectl create` whose fields
    /// `apply` takes over first, as `kubectl apply --server-side` does.
    pub take_over: Vec<String>,
    /// The API server's reason when its dry run of this CRD's apply was
    /// refused: `apply` then writes none of the bundle.
    pub rejected: Option<String>,
    /// Who else manages the live CRD: `apply` asks again before changing
    /// one whose owner puts its own version back.
    pub owners: Vec<crate::delivery::owners::Owner>,
}

/// What happened to one CRD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "message")]
pub enum ApplyOutcome {
    /// Created and established.
    Created,
    /// Updated and established.
    Configured,
    /// Nothing to change; not written.
    Unchanged,
    /// The write was refused or failed; the CRD is as it was.
    Failed(String),
    /// Written, but not usable: names refused or not established in time.
    NotEstablished(String),
    /// Not attempted because an earlier CRD failed.
    NotApplied,
}

impl ApplyOutcome {
    /// Whether the cluster now has this manifest.
    pub fn is_applied(&self) -> bool {
        matches!(self, ApplyOutcome::Created | ApplyOutcome::Configured)
    }

    /// Whether this outcome makes the run fail.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            ApplyOutcome::Failed(_) | ApplyOutcome::NotEstablished(_) | ApplyOutcome::NotApplied
        )
    }

    /// A short word for the outcome table.
    pub fn label(&self) -> &'static str {
        match self {
            ApplyOutcome::Created => "created",
            ApplyOutcome::Configured => "configured",
            ApplyOutcome::Unchanged => "unchanged",
            ApplyOutcome::Failed(_) => "FAILED",
            ApplyOutcome::NotEstablished(_) => "NOT ESTABLISHED",
            ApplyOutcome::NotApplied => "not applied",
        }
    }
}

/// One CRD's result.
#[derive(Debug, Clone, Serialize)]
pub struct Applied {
    /// `metadata.name`.
    pub name: String,
    /// What the plan said.
    pub action: Action,
    /// What happened.
    #[serde(flatten)]
    pub outcome: ApplyOutcome,
}

/// The `apply` section that `apply -o json|yaml` adds to the report: part of
/// the output contract (docs/output.md), typed so that it changes only on
/// purpose.
#[derive(Debug, Clone, Serialize)]
pub struct ApplySection<'a> {
    /// `applied`, `nothingToDo`, `refused`, `declined` or `failed`.
    pub decision: &'a str,
    /// What became of each CRD, in manifest order (empty when nothing was
    /// applied).
    pub results: &'a [Applied],
    /// Requests retried during the apply itself.
    pub retries: u64,
}
