//! What the commands produce and the report renders: scan totals, the
//! apply and migration plans with what became of each CRD, and baseline
//! entries. Plain data kept below both sides, so that [`crate::report`]
//! renders them without importing the commands that make them.

mod apply;
mod baseline;
mod migrate;
mod scan;

pub use apply::{Action, Applied, ApplyOutcome, ApplySection, Planned};
pub use baseline::{BaselineEntry, fingerprint};
pub use migrate::{
    CrdPlan, EngineName, MigrateSection, Migrated, MigrationOutcome, MigrationPlan, ObjectFailure,
    PlannedEngine,
};
pub use scan::{Grading, ObjectDataLoss, ObjectReport, ObjectViolation, ScanSummary};
