//! What `apply` did, for humans: one line per CRD, so a partial failure
//! never leaves anyone guessing which CRDs the cluster now has.

use owo_colors::OwoColorize;

use crate::outcome::{Applied, ApplyOutcome};

/// Renders the outcome table under a header naming the context.
pub fn render_outcomes(context: &str, results: &[Applied], color: bool) -> String {
    let width = results.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out = format!("Apply to context {context}:\n");
    for r in results {
        let label = r.outcome.label();
        let label = match (&r.outcome, color) {
            (_, false) => label.to_string(),
            (ApplyOutcome::Created | ApplyOutcome::Configured, true) => label.green().to_string(),
            (ApplyOutcome::Unchanged | ApplyOutcome::NotApplied, true) => {
                label.dimmed().to_string()
            }
            (ApplyOutcome::Failed(_) | ApplyOutcome::NotEstablished(_), true) => {
                label.red().bold().to_string()
            }
        };
        out.push_str(&format!("  {:<width$}  {label}", r.name));
        if let ApplyOutcome::Failed(m) | ApplyOutcome::NotEstablished(m) = &r.outcome {
            out.push_str(&format!(": {m}"));
        }
        out.push('\n');
    }
    let applied = results.iter().filter(|r| r.outcome.is_applied()).count();
    let failed = results.iter().filter(|r| r.outcome.is_failure()).count();
    if failed > 0 {
        let names: Vec<&str> = results
            .iter()
            .filter(|r| r.outcome.is_applied())
            .map(|r| r.name.as_str())
            .collect();
        out.push_str(&format!(
            "{applied} applied ({}), {failed} not applied or not established.\n",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ));
        out.push_str(
            "To finish: fix the cause above and run the same apply again; the CRDs already applied \
are unchanged and are skipped.\n",
        );
    } else {
        out.push_str(&format!("{applied} applied, all established.\n"));
    }
    out
}
