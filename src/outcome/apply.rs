//! What `apply` plans and what became of each CRD: produced by
//! [`crate::cluster_write::apply`] and [`crate::live_check`], rendered by [`crate::report`].

use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::crd::Crd;

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
    /// The live CRD as the check read it (`None`: there was none): its
    /// `resourceVersion` is the precondition of the write, so a change made
    /// since is a conflict, never overwritten; and it is what a restore
    /// puts back. Shared with the check's model, not copied.
    pub checked: Option<Arc<Crd>>,
}

impl Planned {
    /// The live CRD as checked, as JSON.
    pub fn checked_json(&self) -> Option<&Value> {
        self.checked.as_deref().map(|c| &c.manifest)
    }
}

/// The state one CRD is in after `apply`: the JSON `result` and, where
/// there is more to say, `message`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "message")]
pub enum ApplyOutcome {
    /// Created and established.
    Created,
    /// Updated and established.
    Configured,
    /// Nothing to change; not written.
    Unchanged,
    /// The write was refused or failed; not written, the CRD is as checked.
    Failed(String),
    /// Another client changed (or created) the CRD since the check: not
    /// written, so that change stays.
    Conflict(String),
    /// Written, then put back as it was checked (an update written back, a
    /// CRD this run created deleted again) because the bundle could not be
    /// applied whole.
    Restored(String),
    /// Written, and still as written: restoring it failed, or was not safe
    /// (a created CRD that has objects now, a change by someone else since).
    LeftApplied(String),
    /// Not attempted: the run stopped (a failure, Ctrl-C) before it.
    NotApplied,
}

impl ApplyOutcome {
    /// Whether the cluster now has this manifest.
    pub fn is_applied(&self) -> bool {
        matches!(self, ApplyOutcome::Created | ApplyOutcome::Configured)
    }

    /// Whether this outcome means the bundle was not applied whole.
    pub fn is_failure(&self) -> bool {
        !matches!(
            self,
            ApplyOutcome::Created | ApplyOutcome::Configured | ApplyOutcome::Unchanged
        )
    }

    /// A short word for the outcome table: capitals for what needs a look.
    pub fn label(&self) -> &'static str {
        match self {
            ApplyOutcome::Created => "created",
            ApplyOutcome::Configured => "configured",
            ApplyOutcome::Unchanged => "unchanged",
            ApplyOutcome::Failed(_) => "FAILED",
            ApplyOutcome::Conflict(_) => "CONFLICT",
            ApplyOutcome::Restored(_) => "restored",
            ApplyOutcome::LeftApplied(_) => "LEFT APPLIED",
            ApplyOutcome::NotApplied => "not attempted",
        }
    }

    /// The message, if the outcome has one.
    pub fn message(&self) -> Option<&str> {
        match self {
            ApplyOutcome::Failed(m)
            | ApplyOutcome::Conflict(m)
            | ApplyOutcome::Restored(m)
            | ApplyOutcome::LeftApplied(m) => Some(m),
            _ => None,
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
    /// What state it is in.
    #[serde(flatten)]
    pub outcome: ApplyOutcome,
    /// Whether this CRD's own write is what stopped the run (refused,
    /// changed since the check, never established), for the summary under
    /// the table; its message says why.
    #[serde(skip)]
    pub stopped_run: bool,
}

/// The `apply` section that `apply -o json|yaml` adds to the report: part of
/// the output contract (docs/output.md), typed so that it changes only on
/// purpose.
#[derive(Debug, Clone, Serialize)]
pub struct ApplySection<'a> {
    /// `applied`, `nothingToDo`, `refused`, `declined`, `failed`,
    /// `interrupted` or `partial`.
    pub decision: &'a str,
    /// What became of each CRD, in manifest order (empty when nothing was
    /// applied).
    pub results: &'a [Applied],
    /// Requests retried during the apply itself.
    pub retries: u64,
}
