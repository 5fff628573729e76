//! What `migrate` plans and what it did, for humans: per CRD its storage
//! version, stored versions, objects and the check's findings; then one line
//! per CRD saying whether storedVersions was trimmed and, if not, what
//! remains.

use owo_colors::OwoColorize;

use super::TableOptions;
use super::table::object_findings_table;
use crate::outcome::{EngineName, Migrated, MigrationOutcome, MigrationPlan};

/// Renders the plan and the check.
pub fn render_migration_plan(plan: &MigrationPlan, opts: TableOptions) -> String {
    let mut out = format!("context: {}  server: {}\n", plan.context, plan.server);
    if plan.crds.iter().any(|c| c.needs_migration) {
        let engine = match (plan.engine.name, &plan.engine.api) {
            (EngineName::Server, Some(api)) => {
                format!("server (the cluster's storage-version migrator, {api})")
            }
            _ => "client (crd-safety writes every object back)".to_string(),
        };
        out.push_str(&format!("engine: {engine}: {}\n", plan.engine.reason));
    }
    for c in &plan.crds {
        let name = if opts.color {
            c.name.bold().to_string()
        } else {
            c.name.clone()
        };
        out.push_str(&format!(
            "\n{name}  storage version {}, storedVersions [{}]",
            c.storage_version,
            c.stored_versions.join(", ")
        ));
        if !c.needs_migration {
            out.push_str(": nothing to migrate\n");
            continue;
        }
        let objects = c.objects.unwrap_or(0);
        out.push_str(&format!(
            ": {} to rewrite in {}\n",
            crate::text::plural(objects, "object", "objects"),
            c.storage_version
        ));
        if let Some(namespaces) = &c.namespaces {
            let width = namespaces.keys().map(String::len).max().unwrap_or(0).max(9);
            for (ns, n) in namespaces {
                let ns = if ns.is_empty() { "(cluster)" } else { ns };
                out.push_str(&format!("  {ns:<width$}  {n}\n"));
            }
        }
        if let Some(check) = &c.check {
            out.push_str(&format!(
                "check: {} read in {}; {} rejected by a rewrite, {} losing data (server {}, \
                 ratcheting {})\n",
                check.scanned,
                check.versions.join(", "),
                c.rejected,
                c.losing_data,
                check.server_version,
                if check.ratcheting { "on" } else { "off" }
            ));
        }
        if !c.unreadable_versions.is_empty() {
            out.push_str(&format!(
                "  not served, only seen through {}: {}\n",
                c.storage_version,
                c.unreadable_versions.join(", ")
            ));
        }
        if let Some(table) = object_findings_table(&c.findings, opts) {
            out.push_str(&table);
            out.push('\n');
        }
        for f in c.findings.iter().filter(|f| f.objects.is_none()) {
            out.push_str(&format!("  {}: {}\n", f.check.id(), f.message));
        }
    }
    out
}

/// Renders the outcome, one line per CRD.
pub fn render_migration_outcome(context: &str, results: &[Migrated], color: bool) -> String {
    let width = results.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out = format!("\nMigration in context {context}:\n");
    for r in results {
        let label = r.outcome.label();
        let label = match (&r.outcome, color) {
            (_, false) => label.to_string(),
            (MigrationOutcome::Migrated, true) => label.green().to_string(),
            (MigrationOutcome::Unchanged | MigrationOutcome::NotMigrated, true) => {
                label.dimmed().to_string()
            }
            (MigrationOutcome::Failed(_) | MigrationOutcome::Interrupted(_), true) => {
                label.red().bold().to_string()
            }
        };
        out.push_str(&format!("  {:<width$}  {label}", r.name));
        match &r.outcome {
            MigrationOutcome::Migrated if r.engine == EngineName::Server => {
                out.push_str(&format!(
                    ": by the cluster's migrator (storageversionmigration {}); storedVersions \
                     now [{}], set by {}",
                    r.migration.as_deref().unwrap_or("?"),
                    r.stored_versions.join(", "),
                    if r.trimmed_by == Some(EngineName::Server) {
                        "the migrator"
                    } else {
                        "crd-safety"
                    }
                ))
            }
            MigrationOutcome::Migrated => out.push_str(&format!(
                ": {} rewritten, {} written by others meanwhile, {} deleted; storedVersions now [{}]",
                r.rewritten,
                r.written_by_others,
                r.deleted,
                r.stored_versions.join(", ")
            )),
            MigrationOutcome::Failed(m) | MigrationOutcome::Interrupted(m) => {
                out.push_str(&format!(": {m}"));
            }
            MigrationOutcome::Unchanged => out.push_str(&format!(
                ": storedVersions already [{}]",
                r.stored_versions.join(", ")
            )),
            MigrationOutcome::NotMigrated => out.push_str(": not started"),
        }
        if let Some(why) = &r.fallback {
            out.push_str(&format!(
                "\n    (crd-safety rewrote the objects itself: {why})"
            ));
        }
        out.push('\n');
    }
    out
}
