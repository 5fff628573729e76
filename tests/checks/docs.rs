//! docs/checks.md, the check catalog for users: its generated section (every
//! check with its default severity, its summary, an example pair of CRDs and
//! the findings the engine reports for it) must be exactly what this test
//! renders from `Check::ALL` and [`unsafe_example`]. The hand-written parts
//! around the markers are left alone.
//!
//! `UPDATE_DOCS=1 cargo test --test checks catalog_doc` rewrites the section.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::PathBuf;

use similar::{Algorithm, ChangeTag, capture_diff_slices, group_diff_ops};

use crate::catalog::{LIVE_ONLY, SOURCE_ONLY, flagged, unsafe_example};
use crate::fixtures::*;
use crd_safety::compare::catalog::{DecidedBy, VALUE_RULES};

const BEGIN: &str = "<!-- BEGIN GENERATED: cargo test --test checks catalog_doc -->";
const END: &str = "<!-- END GENERATED -->";
const REGENERATE: &str = "UPDATE_DOCS=1 cargo test --test checks catalog_doc";

/// Unchanged lines shown around each change of an example.
const CONTEXT: usize = 3;

fn doc_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/checks.md")
}

/// The anchor GitHub gives the heading `` ### `id` ``.
fn anchor(check: Check) -> String {
    check.id().to_lowercase()
}

fn yaml(doc: &Value) -> String {
    serde_saphyr::to_string(doc).expect("an example CRD serializes as YAML")
}

/// Where a live-only check comes from, since no pair of manifests shows it.
fn live_source(check: Check) -> &'static str {
    match check {
        Check::ApiServerRejects | Check::FieldManagerConflict => {
            "the API server's dry run of the update, in `apply-check` and `apply`"
        }
        Check::ConversionWebhookNotReady => {
            "the cluster's Service, EndpointSlices and Secrets behind the new CRD's conversion \
             webhook, in `apply-check` and `apply` (see \
             [delivery.md](delivery.md#conversion-webhook-readiness))"
        }
        Check::RolloutCrdPolicy => {
            "the objects of the engines that own the live CRD (a Flux HelmRelease's \
             `upgrade.crds`, an Argo CD application's sync options), in `apply-check`, `apply` \
             and `helm crd-safety upgrade` (see \
             [delivery.md](delivery.md#what-the-rollout-engine-does-to-the-crd))"
        }
        Check::InvalidObjects
        | Check::PrunedFields
        | Check::DefaultedFields
        | Check::NotEvaluated => {
            "the scan of the stored objects, in `apply-check --objects`, \
             `apply --objects` and `migrate`"
        }
        other => panic!("{other} is not live-only: give it an example in catalog.rs"),
    }
}

/// What the catalog says of a check reported from the manifests' text or a
/// chart's layout, which no pair of CRD values shows.
fn source_only(check: Check) -> Option<&'static str> {
    Some(match check {
        Check::ManifestObjects => {
            "Reported from the custom resources that come with NEW: the objects in its files, \
             overlays and rendered charts, and with `diff OLD NEW --objects PATH` those of PATH \
             (a kubebuilder project's `config/samples`, a GitOps repository), in `diff`, `lint`, \
             `apply-check` and `apply`. Each object of a CRD of NEW is validated against its \
             version's new schema; one OLD accepts and NEW refuses or prunes is reported at its \
             file and line. Example: `config/samples/widget.yaml` sets `spec.name: abcdef` and \
             NEW adds `maxLength: 3`: ``1 of 1 objects in the inputs fail maxLength at \
             ^.spec.name under the new schema ...: applying them fails``. Samples are not all \
             the objects a cluster holds, so they grade no other finding."
        }
        Check::YamlReading => {
            "Reported from the text of the manifests wherever they are read (`diff`'s NEW side, \
             `lint`, `apply-check`, `apply`), at the file and line. Example: a schema that \
             declares the property `y:` unquoted is applied by kubectl with the property `true`: \
             ``key `y` is read by kubectl as `true` ``. See \
             [delivery.md](delivery.md#manifests-as-kubectl-reads-them)."
        }
        Check::CrdSize => {
            "Reported on every CRD of NEW from its size as JSON (an example would fill the page). \
             Example: a CRD of 300,000 bytes: ``client-side apply of this CRD fails: `kubectl \
             apply` without `--server-side` and Argo CD without `ServerSideApply=true` store the \
             whole object in the `kubectl.kubernetes.io/last-applied-configuration` annotation \
             ...``. See [delivery.md](delivery.md#too-large-for-client-side-apply)."
        }
        Check::HelmCrdsNotUpgraded => {
            "Reported by `diff` of two Helm charts. Example: `chart-1.0.0/crds/widgets.yaml` \
             gains a field in `chart-1.1.0/crds/widgets.yaml`: ``helm upgrade does not apply this \
             change of crds/ ... Apply the CRDs first (`kubectl crd-safety apply -f \
             chart-1.1.0/crds`)``. See [delivery.md](delivery.md#helm-upgrade-never-applies-crds)."
        }
        Check::HelmDeletesCrd => {
            "Reported by `diff` of two Helm charts. Example: the CRD rendered by \
             `chart-1.0.0/templates/crd.yaml` is in `chart-1.1.0/crds/` instead: ``helm upgrade \
             deletes this CRD and every Widget``. See \
             [delivery.md](delivery.md#helm-upgrade-deletes-what-leaves-templates)."
        }
        Check::HelmUninstallDeletes => {
            "Reported by `diff`, `lint` and `apply-check` of a Helm chart whose templates render \
             CRDs without `helm.sh/resource-policy: keep`, once per chart. See \
             [delivery.md](delivery.md#helm-uninstall-deletes-templated-crds)."
        }
        _ => return None,
    })
}

/// Each line of a YAML text keyed by the lines it is nested in (by
/// indentation), so that a line only pairs with the same line at the same
/// place: `served: true` of version `v1alpha1` never with that of `v1`.
fn keyed(lines: &[&str]) -> Vec<String> {
    let mut stack: Vec<(usize, &str)> = Vec::new();
    lines
        .iter()
        .map(|line| {
            let indent = line.len() - line.trim_start().len();
            while stack.last().is_some_and(|&(i, _)| i >= indent) {
                stack.pop();
            }
            stack.push((indent, line));
            stack.iter().map(|&(_, l)| l).collect::<Vec<_>>().join("\n")
        })
        .collect()
}

/// `start,len` of a hunk side, as `diff -u` writes it.
fn hunk_range(range: Range<usize>) -> String {
    match range.len() {
        0 => format!("{},0", range.start),
        1 => format!("{}", range.start + 1),
        n => format!("{},{n}", range.start + 1),
    }
}

/// A unified diff of two YAML texts with [`CONTEXT`] lines around each
/// change.
fn unified(old: &str, new: &str) -> String {
    let old: Vec<&str> = old.lines().collect();
    let new: Vec<&str> = new.lines().collect();
    let ops = capture_diff_slices(Algorithm::Myers, &keyed(&old), &keyed(&new));
    let mut out = String::from("--- old.yaml\n+++ new.yaml\n");
    for group in group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            hunk_range(first.old_range().start..last.old_range().end),
            hunk_range(first.new_range().start..last.new_range().end)
        );
        for op in &group {
            for change in op.iter_changes(&old, &new) {
                let sign = match change.tag() {
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                    ChangeTag::Equal => ' ',
                };
                let _ = writeln!(out, "{sign}{}", change.value());
            }
        }
    }
    out
}

/// The example of `check`: the old and new CRD, as a unified diff of their
/// YAML, or the one side there is (without its schema, which is the
/// baseline every other example shows).
fn example(old: Option<&Value>, new: Option<&Value>, out: &mut String) {
    match (old, new) {
        (Some(old), Some(new)) => {
            let _ = write!(out, "```diff\n{}```\n", unified(&yaml(old), &yaml(new)));
        }
        (Some(side), None) | (None, Some(side)) => {
            let (present, missing) = if old.is_some() {
                ("old", "new")
            } else {
                ("new", "old")
            };
            let mut brief = String::new();
            for line in yaml(side).lines() {
                let trimmed = line.trim_start();
                if trimmed.starts_with("schema:") {
                    let indent = &line[..line.len() - trimmed.len()];
                    let _ = writeln!(brief, "{indent}# schema: left out");
                    break;
                }
                let _ = writeln!(brief, "{line}");
            }
            let _ = write!(
                out,
                "The {missing} manifests hold no CRD `{NAME}`; the {present} ones hold:\n\n\
                 ```yaml\n{brief}```\n"
            );
        }
        (None, None) => unreachable!("live-only checks have no example"),
    }
}

/// `text` for a Markdown table cell, rendered as it is: every character
/// Markdown could take for markup (emphasis, code, links, HTML such as the
/// `<none>` of "multipleOf <none> -> 2", the cell separator) is escaped.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '<' | '[' | ']' | '|' | '&' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A version or path for a table cell: code, or empty when there is none.
fn code_cell(text: Option<&str>) -> String {
    match text {
        None => String::new(),
        Some(t) if t.contains('`') || t.contains('\n') => escaped(t),
        Some(t) => format!("`{}`", t.replace('|', "\\|")),
    }
}

/// The findings of one check as the engine reports them: severity, version,
/// path and message, one row each.
fn findings_table(findings: &[&Finding], out: &mut String) {
    out.push_str("| severity | version | path | message |\n| --- | --- | --- | --- |\n");
    for f in findings {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            f.severity,
            code_cell(f.version.as_deref()),
            code_cell(f.path.as_deref()),
            escaped(&f.message)
        );
    }
}

/// What the catalog row says decides a check, in words, when the stored
/// objects do.
fn decided_by(check: Check) -> Option<String> {
    let rules = |rules: &[&str]| {
        rules
            .iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match check.decided_by() {
        DecidedBy::Schema => None,
        DecidedBy::Failing(r) if r == VALUE_RULES => Some(
            "an error only while a stored object fails a rule of the new schema at the node or \
             below it, else a warning"
                .to_string(),
        ),
        DecidedBy::FailingOrLosing => Some(
            "an error only while a stored object fails the new schema or loses data at the node \
             or below it, else a warning"
                .to_string(),
        ),
        DecidedBy::Failing(r) => Some(format!(
            "an error only while a stored object fails {} at the node or below it, else a warning",
            rules(r)
        )),
        DecidedBy::Lacking => Some(
            "an error only while a stored object lacks the new required field, else a warning"
                .to_string(),
        ),
        DecidedBy::Holding => Some(
            "an error only while a stored object holds data the new schema drops there, else a \
             warning"
                .to_string(),
        ),
        DecidedBy::Defaulting => Some(
            "an error only while a stored object lacks the field under an existing parent (it \
             would read the new default), else a warning"
                .to_string(),
        ),
    }
}

/// The section of one check.
fn section(check: Check, out: &mut String) {
    let _ = write!(
        out,
        "### `{}`\n\n- Default severity: **{}**\n- Catches: {}\n\n",
        check.id(),
        check.default_severity(),
        check.summary()
    );
    if let Some(how) = decided_by(check) {
        let _ = writeln!(
            out,
            "With `--objects` against a cluster, the stored objects decide it: {how} \
             ([how](#graded-by-the-stored-objects)).\n"
        );
    }
    if let Some(text) = source_only(check) {
        let _ = writeln!(out, "{text}\n");
        return;
    }
    if LIVE_ONLY.contains(&check) {
        let _ = writeln!(
            out,
            "Reported only against a live cluster, by {}; no pair of manifests \
             produces it, so there is no offline example.\n",
            live_source(check)
        );
        return;
    }
    let (old, new) = unsafe_example(check);
    out.push_str("Example:\n\n");
    example(old.as_ref(), new.as_ref(), out);
    let findings = flagged(check);
    let own: Vec<&Finding> = findings.iter().filter(|f| f.check == check).collect();
    assert!(
        !own.is_empty(),
        "{check}: its example reports no {check} finding:\n{}",
        dump(&findings)
    );
    out.push_str("\nReported:\n\n");
    findings_table(&own, out);
    let mut others: Vec<String> = Vec::new();
    for f in findings.iter().filter(|f| f.check != check) {
        let other = format!("`{}` ({})", f.check, f.severity);
        if !others.contains(&other) {
            others.push(other);
        }
    }
    if !others.is_empty() {
        let _ = writeln!(
            out,
            "\nThe same change is also reported as {}.",
            others.join(", ")
        );
    }
    out.push('\n');
}

/// The generated section, between the markers (exclusive).
fn render() -> String {
    let mut out = String::new();
    out.push_str(
        "\n## Checks\n\n\
         Every check in catalog order, as `kubectl crd-safety checks` lists them. Each \
         example changes the CRD `widgets.example.com` as little as trips the check; the \
         table under it holds the findings of that check, word for word, that \
         `kubectl crd-safety diff old.yaml new.yaml` reports for the pair with the default \
         configuration (and no `--stored-versions`, so the old storage version is assumed \
         stored).\n\n\
         | check | default | catches |\n| --- | --- | --- |\n",
    );
    for &check in Check::ALL {
        let _ = writeln!(
            out,
            "| [`{}`](#{}) | {} | {} |",
            check.id(),
            anchor(check),
            check.default_severity(),
            check.summary().replace('|', "\\|")
        );
    }
    out.push('\n');
    for &check in Check::ALL {
        section(check, &mut out);
    }
    out
}

/// The generated section of `doc` (between the markers), the line of
/// `doc` it starts on (0-based: the line of [`BEGIN`]), and `doc` with that
/// section replaced by `generated`.
fn splice(doc: &str, generated: &str) -> (String, usize, String) {
    let start = doc
        .find(BEGIN)
        .unwrap_or_else(|| panic!("docs/checks.md has no line {BEGIN}"))
        + BEGIN.len();
    let end = doc[start..]
        .find(END)
        .unwrap_or_else(|| panic!("docs/checks.md has no line {END} after {BEGIN}"))
        + start;
    let line = doc[..start].matches('\n').count();
    let updated = format!("{}{generated}{}", &doc[..start], &doc[end..]);
    (doc[start..end].to_string(), line, updated)
}

/// The anchor GitHub gives a heading line (`` ### `oneOf` `` -> `oneof`).
fn heading_anchor(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn catalog_doc() {
    let generated = format!("\n{}", render());
    let sections: Vec<&str> = generated.split("\n### ").skip(1).collect();
    assert_eq!(sections.len(), Check::ALL.len(), "one section per check");
    for (&check, section) in Check::ALL.iter().zip(&sections) {
        assert!(
            section.starts_with(&format!("`{}`\n", check.id())),
            "{check}: sections out of catalog order"
        );
        // The table of what the engine reports is only written when the
        // example reports this check (`section` asserts it).
        let shown = section.contains("\nExample:\n") && section.contains("\nReported:\n");
        assert!(
            shown || LIVE_ONLY.contains(&check) || SOURCE_ONLY.contains(&check),
            "{check} has no example and no findings"
        );
    }

    let path = doc_path();
    let doc = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
        .replace("\r\n", "\n");
    let (current, begin_line, updated) = splice(&doc, &generated);

    // The links of the summary table go to the sections, whatever the
    // hand-written parts add: no other heading takes a check's anchor.
    let mut fenced = false;
    let anchors: Vec<String> = updated
        .lines()
        .filter(|l| {
            fenced ^= l.starts_with("```");
            !fenced && l.starts_with('#')
        })
        .map(heading_anchor)
        .collect();
    for &check in Check::ALL {
        let same = anchors.iter().filter(|a| **a == anchor(check)).count();
        assert_eq!(
            same,
            1,
            "{check}: {same} headings have the anchor #{}",
            anchor(check)
        );
    }

    if current == generated {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some_and(|v| !v.is_empty() && v != "0") {
        std::fs::write(&path, updated)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        return;
    }
    let first = current
        .lines()
        .zip(generated.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| current.lines().count().min(generated.lines().count()));
    panic!(
        "docs/checks.md is stale: its generated section differs from the check registry \
         from line {} on; run `{REGENERATE}`",
        begin_line + first + 1
    );
}
