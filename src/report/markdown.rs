//! Markdown for pull-request comments: a headline with the verdict, a table
//! of warnings and errors per CRD, and info findings folded away.

use super::{CrdStatus, Report};
use crate::compare::{Finding, Severity, StoredVersionsSource};

/// `s` as a table cell: `|` escaped, one line, and `<` outside code spans
/// written `&lt;`, or GitHub takes `<none>` for an HTML tag and drops it.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut code = false;
    for c in s.chars() {
        match c {
            '`' => {
                code = !code;
                out.push(c);
            }
            '<' if !code => out.push_str("&lt;"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

fn code(s: Option<&str>) -> String {
    match s {
        Some(s) if !s.is_empty() => format!("`{}`", s.replace('`', "'").replace('|', "\\|")),
        _ => String::new(),
    }
}

fn rows(findings: &[&Finding], out: &mut String) {
    out.push_str("| Severity | Check | Version | Path | Message |\n|---|---|---|---|---|\n");
    for f in findings {
        out.push_str(&format!(
            "| {} | `{}` | {} | {} | {} |\n",
            f.severity,
            f.check,
            cell(f.version.as_deref().unwrap_or("")),
            code(f.path.as_deref()),
            cell(&f.message)
        ));
    }
}

/// Renders the report as Markdown.
pub fn render_markdown(report: &Report) -> String {
    let icon = if report.summary.errors > 0 {
        "❌"
    } else if report.summary.warnings > 0 {
        "⚠️"
    } else {
        "✅"
    };
    let mut out = format!("## {icon} crd-safety\n\n{}\n", report.summary_line());
    for notice in &report.notices {
        out.push_str(&format!("\n> **Notice:** {notice}\n"));
    }
    if let Some(c) = &report.cluster {
        out.push_str(&format!(
            "\nCluster: context `{}`, server `{}`\n",
            c.context, c.server
        ));
    }
    for crd in &report.crds {
        let badge = match crd.status {
            CrdStatus::Unsafe => "❌ unsafe",
            CrdStatus::Warning => "⚠️ warnings",
            CrdStatus::Safe => "✅ safe",
            CrdStatus::New => "🆕 new",
            CrdStatus::Absent => "➖ absent",
        };
        out.push_str(&format!("\n### `{}`: {badge}\n\n", crd.name));
        if let Some(sv) = &crd.stored_versions {
            out.push_str(&format!(
                "storedVersions: {} ({})\n\n",
                sv.versions.join(", "),
                match sv.source {
                    StoredVersionsSource::Status | StoredVersionsSource::Flag =>
                        format!("from {}", sv.source),
                    StoredVersionsSource::Assumed => sv.source.to_string(),
                }
            ));
        }
        for owner in &crd.owners {
            out.push_str(&format!("Owner: {}\n\n", owner.line()));
        }
        let serious: Vec<&Finding> = crd
            .findings
            .iter()
            .filter(|f| f.severity > Severity::Info)
            .collect();
        let info: Vec<&Finding> = crd
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Info)
            .collect();
        if serious.is_empty() {
            out.push_str("No unsafe changes.\n");
        } else {
            rows(&serious, &mut out);
        }
        if !info.is_empty() {
            out.push_str(&format!(
                "\n<details><summary>{}</summary>\n\n",
                crate::text::plural(info.len(), "info finding", "info findings")
            ));
            rows(&info, &mut out);
            out.push_str("\n</details>\n");
        }
        if !crd.excepted.is_empty() {
            out.push_str("\nAccepted by exceptions:\n\n");
            for e in &crd.excepted {
                out.push_str(&format!(
                    "- `{}` {} {}: {}\n",
                    e.finding.check,
                    e.finding.version.as_deref().unwrap_or(""),
                    code(e.finding.path.as_deref()),
                    cell(&e.reason)
                ));
            }
        }
        if !crd.baselined.is_empty() {
            out.push_str("\nAccepted by the baseline:\n\n");
            for f in &crd.baselined {
                out.push_str(&format!(
                    "- `{}` {} {}: {}\n",
                    f.check,
                    f.version.as_deref().unwrap_or(""),
                    code(f.path.as_deref()),
                    cell(super::change_of(f))
                ));
            }
        }
    }
    if !report.stale_baseline.is_empty() {
        out.push_str(
            "\n### Stale baseline entries\n\nNothing matches them any more; `--write-baseline` drops them.\n\n",
        );
        for e in &report.stale_baseline {
            out.push_str(&format!(
                "- `{}` `{}` {} {}\n",
                e.crd,
                e.check,
                e.version.as_deref().unwrap_or(""),
                code(e.path.as_deref())
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn a_cell_keeps_angle_brackets_visible_and_code_as_written() {
        assert_eq!(
            cell("x-kubernetes-list-type <none> -> \"map\""),
            "x-kubernetes-list-type &lt;none> -> \"map\""
        );
        assert_eq!(
            cell("rule `a <= b || c`\nadded"),
            "rule `a <= b \\|\\| c` added"
        );
    }
}
