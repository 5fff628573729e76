//! What `apply` did, for humans: one line per CRD with the state it is in,
//! then what that means for the bundle and what to run next, so a failed
//! or interrupted apply never leaves anyone guessing what the cluster has.

use owo_colors::OwoColorize;

use crate::outcome::{Applied, ApplyOutcome};
use crate::text::plural;

/// Renders the outcome table under a header naming the context, and the
/// summary below it; `interrupted` when Ctrl-C stopped the run.
pub fn render_outcomes(
    context: &str,
    results: &[Applied],
    interrupted: bool,
    color: bool,
) -> String {
    let width = results.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut out = format!("Apply to context {context}:\n");
    for r in results {
        let label = r.outcome.label();
        let label = match (&r.outcome, color) {
            (_, false) => label.to_string(),
            (ApplyOutcome::Created | ApplyOutcome::Configured, true) => label.green().to_string(),
            (ApplyOutcome::Restored(_), true) => label.yellow().to_string(),
            (ApplyOutcome::Unchanged | ApplyOutcome::NotApplied, true) => {
                label.dimmed().to_string()
            }
            (
                ApplyOutcome::Failed(_) | ApplyOutcome::Conflict(_) | ApplyOutcome::LeftApplied(_),
                true,
            ) => label.red().bold().to_string(),
        };
        out.push_str(&format!("  {:<width$}  {label}", r.name));
        if let Some(m) = r.outcome.message() {
            out.push_str(&format!(": {m}"));
        }
        out.push('\n');
    }
    out.push_str(&summary(results, interrupted));
    out
}

/// The lines under the table: the bundle's state, then what to run next.
fn summary(results: &[Applied], interrupted: bool) -> String {
    let names = |keep: &dyn Fn(&Applied) -> bool| -> Vec<&str> {
        results
            .iter()
            .filter(|r| keep(r))
            .map(|r| r.name.as_str())
            .collect()
    };
    let applied = names(&|r| r.outcome.is_applied());
    let restored = names(&|r| matches!(r.outcome, ApplyOutcome::Restored(_)));
    let left = names(&|r| matches!(r.outcome, ApplyOutcome::LeftApplied(_)));
    let culprits = names(&|r| r.stopped_run);
    let conflict = results
        .iter()
        .any(|r| matches!(r.outcome, ApplyOutcome::Conflict(_)));
    let failed = results.iter().any(|r| r.outcome.is_failure());
    let why = if culprits.is_empty() {
        "interrupted".to_string()
    } else {
        format!("{} failed", culprits.join(", "))
    };
    let restored_said = match restored.len() {
        0 if culprits.is_empty() => "no CRD had been written".to_string(),
        0 => "no other CRD had been written".to_string(),
        n => format!(
            "the {} already written {} restored",
            plural(n, "CRD", "CRDs"),
            if n == 1 { "was" } else { "were" }
        ),
    };
    if !left.is_empty() {
        return format!(
            "The bundle is half applied ({why}): {} left applied ({}), as restoring {} failed or \
was not safe (see above); {} restored.\n\
Next: run `kubectl crd-safety apply-check` on the same manifests to see each CRD as it is now, \
settle the ones left applied, then run the same apply again.\n",
            plural(left.len(), "CRD", "CRDs"),
            left.join(", "),
            if left.len() == 1 { "it" } else { "them" },
            restored.len(),
        );
    }
    if !failed {
        return format!("{} applied, all established.\n", applied.len());
    }
    let next = if interrupted && culprits.is_empty() {
        "run the same apply again to apply the bundle"
    } else if conflict {
        "run the same apply again: it checks the CRDs as they are now, another client's change \
included, before it writes"
    } else {
        "fix the cause above, then run the same apply again"
    };
    format!("Nothing of the bundle is left applied ({why}): {restored_said}.\nNext: {next}.\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Action;

    fn applied(name: &str, outcome: ApplyOutcome, stopped_run: bool) -> Applied {
        Applied {
            name: name.into(),
            action: Action::Update,
            outcome,
            stopped_run,
        }
    }

    #[test]
    fn a_restored_run_says_each_state_the_cause_and_what_to_run() {
        let results = [
            applied(
                "a.example.com",
                ApplyOutcome::Restored("configured, then written back as it was checked".into()),
                false,
            ),
            applied(
                "b.example.com",
                ApplyOutcome::Failed("the API server refused it: denied".into()),
                true,
            ),
            applied("c.example.com", ApplyOutcome::NotApplied, false),
        ];
        assert_eq!(
            render_outcomes("prod", &results, false, false),
            "Apply to context prod:\n\
             \x20 a.example.com  restored: configured, then written back as it was checked\n\
             \x20 b.example.com  FAILED: the API server refused it: denied\n\
             \x20 c.example.com  not attempted\n\
             Nothing of the bundle is left applied (b.example.com failed): the 1 CRD already \
             written was restored.\n\
             Next: fix the cause above, then run the same apply again.\n"
        );
    }

    #[test]
    fn what_is_left_applied_is_named_and_the_next_step_is_a_look() {
        let results = [
            applied(
                "a.example.com",
                ApplyOutcome::LeftApplied("created; not deleted: it has objects now".into()),
                false,
            ),
            applied(
                "b.example.com",
                ApplyOutcome::Conflict("changed by another client".into()),
                true,
            ),
        ];
        let text = render_outcomes("prod", &results, false, false);
        assert!(
            text.contains(
                "The bundle is half applied (b.example.com failed): 1 CRD left applied \
                 (a.example.com), as restoring it failed or was not safe (see above); 0 restored."
            ),
            "{text}"
        );
        assert!(text.contains("  b.example.com  CONFLICT: changed by another client\n"));
        assert!(text.contains("Next: run `kubectl crd-safety apply-check`"));
    }

    #[test]
    fn a_conflict_says_to_check_again_and_an_interruption_to_run_again() {
        let conflict = [applied(
            "a.example.com",
            ApplyOutcome::Conflict("changed".into()),
            true,
        )];
        let text = render_outcomes("c", &conflict, false, false);
        assert!(
            text.contains(
                "(a.example.com failed): no other CRD had been written.\nNext: run the same apply \
                 again: it checks the CRDs as they are now"
            ),
            "{text}"
        );
        let stopped = [
            applied("a.example.com", ApplyOutcome::Restored("x".into()), false),
            applied("b.example.com", ApplyOutcome::NotApplied, false),
        ];
        let text = render_outcomes("c", &stopped, true, false);
        assert!(
            text.ends_with(
                "Nothing of the bundle is left applied (interrupted): the 1 CRD already written \
                 was restored.\nNext: run the same apply again to apply the bundle.\n"
            ),
            "{text}"
        );
        let done = [applied("a.example.com", ApplyOutcome::Configured, false)];
        assert!(
            render_outcomes("c", &done, false, false).ends_with("1 applied, all established.\n")
        );
    }
}
