//! The human report: one block per CRD with a findings table, and a summary
//! line. Colors come from owo-colors and are decided by the caller (the
//! binary resolves `--color`, `NO_COLOR` and whether stdout is a terminal),
//! so rendering stays a pure function that tests can pin down.

use std::path::Path;

use comfy_table::{ContentArrangement, Table, presets};
use owo_colors::OwoColorize;

use super::{CrdReport, CrdStatus, Report, change_of, detail_of};
use crate::compare::{Finding, GradeOutcome, Severity, StoredVersionsSource};
use crate::text::{longest_piece, wrap, wrap_indented};

/// How to draw the table.
#[derive(Debug, Clone, Copy)]
pub struct TableOptions<'a> {
    /// Use ANSI colors.
    pub color: bool,
    /// Total width to wrap the table to.
    pub width: u16,
    /// Show info findings (hidden by default: descriptions and printer
    /// columns change in every release and would bury what matters).
    pub show_info: bool,
    /// Full messages in every row (`-o wide`), instead of what changed in
    /// the row and the why and how once per check below the table.
    pub wide: bool,
    /// The working directory: source files under it are shown relative to
    /// it, as the user would type them.
    pub cwd: Option<&'a Path>,
}

pub(super) fn paint_severity(s: Severity, color: bool) -> String {
    if !color {
        return s.as_str().to_string();
    }
    match s {
        Severity::Error => s.as_str().red().bold().to_string(),
        Severity::Warning => s.as_str().yellow().to_string(),
        Severity::Info => s.as_str().blue().to_string(),
    }
}

fn paint_status(s: CrdStatus, color: bool) -> String {
    let l = s.label();
    if !color {
        return l.to_string();
    }
    match s {
        CrdStatus::Unsafe => l.red().bold().to_string(),
        CrdStatus::Warning => l.yellow().bold().to_string(),
        CrdStatus::Safe => l.green().bold().to_string(),
        CrdStatus::New => l.cyan().bold().to_string(),
        CrdStatus::Absent => l.dimmed().to_string(),
    }
}

/// Renders the whole report.
pub fn render_table(report: &Report, opts: TableOptions) -> String {
    let mut out = String::new();
    if let Some(c) = &report.cluster {
        out.push_str(&format!("context: {}  server: {}\n\n", c.context, c.server));
    }
    match &report.summary.grading {
        // A check against the cluster's own objects: the verdict first.
        Some(grading) if !opts.wide && report.crds.len() > 1 => {
            render_graded(report, grading, opts, &mut out)
        }
        _ => {
            for crd in &report.crds {
                render_crd(crd, opts, &mut out);
                out.push('\n');
            }
        }
    }
    if let Some(c) = report.cluster.as_ref().filter(|c| c.retries > 0) {
        out.push_str(&retries_line(c.retries));
        out.push('\n');
    }
    if !report.stale_baseline.is_empty() {
        out.push_str(
            "stale baseline entries (nothing matches them any more; --write-baseline drops them):\n",
        );
        for e in &report.stale_baseline {
            out.push_str(&format!(
                "  {} {} {} {}\n",
                e.crd,
                e.check,
                e.version.as_deref().unwrap_or("-"),
                e.path.as_deref().unwrap_or("-")
            ));
        }
        out.push('\n');
    }
    let mut line = report.summary_line();
    if let Some(v) = &report.kube_version {
        use crate::crd_validation::KubeVersionSource as From;
        let from = match (report.kube_version_source, &report.server_version) {
            (Some(From::Server), Some(server)) => format!(", the server runs {server}"),
            (Some(From::Flag | From::Config), _) => {
                format!(
                    ", from {}",
                    report
                        .kube_version_source
                        .map(|s| s.to_string())
                        .unwrap_or_default()
                )
            }
            _ => String::new(),
        };
        line.push_str(&format!(" (CRD rules of Kubernetes {v}{from})"));
    }
    let line = wrap_indented("", "  ", &line, opts.width.into());
    if opts.color {
        let painted = if report.summary.errors > 0 {
            line.red().bold().to_string()
        } else if report.summary.warnings > 0 {
            line.yellow().to_string()
        } else {
            line.green().to_string()
        };
        out.push_str(&painted);
    } else {
        out.push_str(&line);
    }
    out.push('\n');
    for notice in &report.notices {
        out.push_str(&wrap_indented(
            "",
            "  ",
            &format!("notice: {notice}"),
            opts.width.into(),
        ));
        out.push('\n');
    }
    out
}

/// A report the stored objects graded, read in a minute: one row per CRD
/// (its verdict, what is left, what the objects cleared), every CRD with an
/// error in full, the other warnings once per check across the CRDs, and
/// the cleared findings counted per check. `-o wide` and JSON list each.
fn render_graded(
    report: &Report,
    grading: &crate::outcome::Grading,
    opts: TableOptions,
    out: &mut String,
) {
    let is_cleared = Finding::cleared_by_objects;
    let mut overview = Table::new();
    overview
        .load_style(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "CRD", "VERDICT", "ERRORS", "WARNINGS", "CLEARED", "OBJECTS",
        ]);
    for crd in &report.crds {
        let cleared = crd.findings.iter().filter(|f| is_cleared(f)).count();
        let warnings = crd
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Warning && !is_cleared(f))
            .count();
        let objects = crd
            .scan
            .as_ref()
            .map_or("-".to_string(), |s| s.scanned.to_string());
        overview.add_row(vec![
            crd.name.clone(),
            paint_status(crd.status, opts.color),
            crd.count(Severity::Error).to_string(),
            warnings.to_string(),
            cleared.to_string(),
            objects,
        ]);
    }
    if opts.color {
        overview.enforce_styling();
    }
    out.push_str(&overview.to_string());
    out.push_str("\n\n");
    // What decides the verdict, in full.
    for crd in report.crds.iter().filter(|c| c.status == CrdStatus::Unsafe) {
        render_crd(crd, opts, out);
        out.push('\n');
    }
    // The rest, once per check across the CRDs.
    let rest: Vec<(&CrdReport, &Finding)> = report
        .crds
        .iter()
        .filter(|c| c.status != CrdStatus::Unsafe)
        .flat_map(|c| c.findings.iter().map(move |f| (c, f)))
        .filter(|(_, f)| f.severity == Severity::Warning && !is_cleared(f))
        .collect();
    let mut per_check: Vec<(crate::compare::Check, Vec<(&CrdReport, &Finding)>)> = Vec::new();
    for (crd, f) in rest {
        match per_check.iter_mut().find(|(c, _)| *c == f.check) {
            Some((_, all)) => all.push((crd, f)),
            None => per_check.push((f.check, vec![(crd, f)])),
        }
    }
    if !per_check.is_empty() {
        out.push_str("warnings that do not depend on the stored objects, once per check:\n");
        let rows = per_check
            .iter()
            .map(|(check, all)| {
                let mut crds: Vec<&str> = all.iter().map(|(c, _)| short_name(&c.name)).collect();
                crds.dedup();
                let (_, first) = all[0];
                let at = match (&first.version, &first.path) {
                    (Some(v), Some(p)) => format!(" ({v} {p})"),
                    (Some(v), None) => format!(" ({v})"),
                    _ => String::new(),
                };
                (
                    Severity::Warning,
                    vec![
                        check.id().to_string(),
                        all.len().to_string(),
                        crds.join(", "),
                        format!("{}{at}", change_of(first)),
                    ],
                )
            })
            .collect();
        let columns = [
            ("CHECK", Wrap::Never),
            ("COUNT", Wrap::Never),
            ("CRDS", Wrap::Words),
            ("E.G.", Wrap::Words),
        ];
        out.push_str(&grid(opts, &columns, rows));
        let firsts: Vec<&Finding> = per_check.iter().map(|(_, all)| all[0].1).collect();
        why_and_how(&firsts, opts, out);
        out.push('\n');
    }
    // What the objects cleared, outside the CRDs shown in full.
    let cleared: Vec<&Finding> = report
        .crds
        .iter()
        .filter(|c| c.status != CrdStatus::Unsafe)
        .flat_map(|c| c.findings.iter())
        .filter(|f| is_cleared(f))
        .collect();
    if !cleared.is_empty() {
        out.push_str(&note(
            &cleared_line(&cleared, grading.objects_scanned),
            opts,
        ));
        out.push('\n');
    }
    let undecided = report
        .crds
        .iter()
        .filter(|c| c.status != CrdStatus::Unsafe)
        .flat_map(|c| c.findings.iter())
        .filter(|f| {
            f.grade
                .as_ref()
                .is_some_and(|g| g.outcome == GradeOutcome::Undecided)
        })
        .count();
    if undecided > 0 {
        out.push_str(&note(
            &format!(
                "{} the stored objects could not decide (-o wide says why for each)",
                crate::text::plural(undecided, "finding", "findings")
            ),
            opts,
        ));
        out.push('\n');
    }
    if let Some(scan) = report.crds.iter().find_map(|c| c.scan.as_ref()) {
        out.push_str(&note(
            &format!(
                "{} stored objects scanned on the server (Kubernetes {}, ratcheting {})",
                grading.objects_scanned,
                scan.server_version,
                if scan.ratcheting { "on" } else { "off" }
            ),
            opts,
        ));
        out.push('\n');
    }
    out.push('\n');
}

/// A CRD's name without its group when the group is long: the overview
/// and the grouped warnings name many of them.
fn short_name(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

fn render_crd(crd: &CrdReport, opts: TableOptions, out: &mut String) {
    let name = if opts.color {
        crd.name.bold().to_string()
    } else {
        crd.name.clone()
    };
    out.push_str(&format!("{name}  {}", paint_status(crd.status, opts.color)));
    let sources: Vec<String> = [("old", &crd.old_source), ("new", &crd.new_source)]
        .iter()
        .filter_map(|(k, v)| {
            v.as_ref()
                .map(|v| format!("{k}: {}", shown_source(v, opts)))
        })
        .collect();
    if !sources.is_empty() {
        let sources = format!("({})", sources.join(", "));
        let line = crd.name.len() + 2 + crd.status.label().len() + 2 + sources.chars().count();
        if line <= usize::from(opts.width) {
            out.push_str(&format!("  {sources}"));
        } else {
            out.push('\n');
            out.push_str(&note(&sources, opts));
        }
    }
    out.push('\n');
    if let Some(sv) = &crd.stored_versions {
        let how = match sv.source {
            StoredVersionsSource::Status | StoredVersionsSource::Flag => {
                format!("from {}", sv.source)
            }
            StoredVersionsSource::Assumed => format!(
                "ASSUMED: {}; pass --stored-versions or run apply-check against the cluster",
                sv.source
            ),
        };
        let line = format!("storedVersions: {} ({how})", sv.versions.join(", "));
        out.push_str(&wrap_indented("", "  ", &line, opts.width.into()));
        out.push('\n');
    }
    for owner in &crd.owners {
        let line = format!("owner: {}", owner.line());
        out.push_str(&wrap_indented("", "  ", &line, opts.width.into()));
        out.push('\n');
    }
    // Object-scan findings get their own table below; findings the stored
    // objects cleared are counted per check in one line unless `-o wide`.
    let cleared = |f: &&Finding| !opts.wide && f.cleared_by_objects();
    let schema_findings: Vec<_> = crd
        .findings
        .iter()
        .filter(|f| f.objects.is_none() && !cleared(f))
        .collect();
    let cleared: Vec<&Finding> = crd.findings.iter().filter(cleared).collect();
    let shown: Vec<_> = schema_findings
        .iter()
        .copied()
        .filter(|f| opts.show_info || f.severity > Severity::Info)
        .collect();
    let hidden = schema_findings.len() - shown.len();
    if shown.is_empty() && !cleared.is_empty() {
        // The line below says what there is.
    } else if shown.is_empty() {
        let what = if schema_findings.is_empty() {
            "no changes found".to_string()
        } else {
            "no unsafe changes".to_string()
        };
        out.push_str(&format!("  {what}"));
    } else {
        let last = if opts.wide { "MESSAGE" } else { "CHANGE" };
        let rows = shown
            .iter()
            .map(|f| {
                let change = if opts.wide {
                    f.message.clone()
                } else {
                    change_of(f).to_string()
                };
                let cells = vec![
                    f.check.id().to_string(),
                    f.version.clone().unwrap_or_default(),
                    f.path.clone().unwrap_or_default(),
                    change,
                ];
                (f.severity, cells)
            })
            .collect();
        let columns = [
            ("CHECK", Wrap::Never),
            ("VERSION", Wrap::Never),
            ("PATH", Wrap::Words),
            (last, Wrap::Words),
        ];
        out.push_str(&grid(opts, &columns, rows));
        if !opts.wide {
            why_and_how(&shown, opts, out);
        }
    }
    if !cleared.is_empty() {
        if !shown.is_empty() {
            out.push('\n');
        }
        let scanned = crd.grading.map_or(0, |g| g.objects_scanned);
        out.push_str(&note(&cleared_line(&cleared, scanned), opts));
    }
    if hidden > 0 {
        out.push_str(&format!(
            "\n  {} hidden (--show-info to list)",
            crate::text::plural(hidden, "info finding", "info findings")
        ));
    }
    render_scan(crd, opts, out);
    for e in &crd.excepted {
        out.push('\n');
        out.push_str(&note(
            &format!(
                "accepted: {} {} {} ({})",
                e.finding.check,
                e.finding.version.as_deref().unwrap_or("-"),
                e.finding.path.as_deref().unwrap_or("-"),
                e.reason
            ),
            opts,
        ));
    }
    for f in &crd.baselined {
        out.push('\n');
        out.push_str(&note(
            &format!(
                "baselined: {} {} {} ({})",
                f.check,
                f.version.as_deref().unwrap_or("-"),
                f.path.as_deref().unwrap_or("-"),
                change_of(f)
            ),
            opts,
        ));
    }
    out.push('\n');
}

/// The findings the stored objects cleared, in one line: how many, what
/// they rest on, and how many of each check, most first.
fn cleared_line(cleared: &[&Finding], scanned: u64) -> String {
    let mut per_check: Vec<(&str, usize)> = Vec::new();
    for f in cleared {
        match per_check.iter_mut().find(|(c, _)| *c == f.check.id()) {
            Some((_, n)) => *n += 1,
            None => per_check.push((f.check.id(), 1)),
        }
    }
    per_check.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let checks: Vec<String> = per_check.iter().map(|(c, n)| format!("{c} {n}")).collect();
    let evidence = if scanned == 0 {
        "no object is stored".to_string()
    } else {
        format!("0 of {scanned} stored objects fail them")
    };
    format!(
        "{} reach no stored object ({evidence}), so they are warnings here; new objects must \
         meet them (-o wide lists each): {}",
        crate::text::plural(cleared.len(), "finding", "findings"),
        checks.join(", ")
    )
}

/// Each check's why and how, once, below the compact table (`-o wide` has
/// them in every row).
fn why_and_how(shown: &[&Finding], opts: TableOptions, out: &mut String) {
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for f in shown {
        let detail = detail_of(f);
        let key = (f.check.id(), detail);
        if !detail.is_empty() && !seen.contains(&key) {
            seen.push(key);
        }
    }
    for (check, detail) in seen {
        // A server's message may hold line breaks; a note is one paragraph.
        let detail = detail.split_whitespace().collect::<Vec<_>>().join(" ");
        out.push('\n');
        out.push_str(&note(&format!("{check}: {detail}"), opts));
    }
}

/// A source file as the user would type it: relative to the working
/// directory when it is under it.
fn shown_source(source: &str, opts: TableOptions) -> String {
    let Some(cwd) = opts.cwd else {
        return source.to_string();
    };
    let path = Path::new(source);
    match path.strip_prefix(cwd) {
        Ok(rest) if path.is_absolute() => rest.to_string_lossy().into_owned(),
        _ => source.to_string(),
    }
}

/// A line below a table, indented by two and wrapped to the width with
/// its continuation lines indented by four.
fn note(text: &str, opts: TableOptions) -> String {
    wrap_indented("  ", "    ", text, opts.width.into())
}

/// Whether a column's cells may be wrapped.
#[derive(Clone, Copy, PartialEq)]
enum Wrap {
    /// Ids, versions, counts: one word each, never broken.
    Never,
    /// Prose and paths: broken at spaces, and long words at their
    /// separators (`text::wrap`), never inside a word that fits.
    Words,
}

/// A findings table in the report's style: a SEVERITY column, then
/// `columns`, laid out to fit `opts.width`.
///
/// The layout is computed here rather than by comfy-table, whose dynamic
/// arrangement cuts words (`storedVersionRem` / `oval`) once a column is
/// narrower than its longest word: columns that never wrap keep their
/// widest cell, and the wrapping ones share the rest in proportion to their
/// widest line, never narrower than their longest unbreakable piece.
fn grid(
    opts: TableOptions,
    columns: &[(&str, Wrap)],
    rows: Vec<(Severity, Vec<String>)>,
) -> String {
    let mut header = vec!["SEVERITY"];
    header.extend(columns.iter().map(|(h, _)| *h));
    let mut wraps = vec![Wrap::Never];
    wraps.extend(columns.iter().map(|(_, w)| *w));
    let plain: Vec<Vec<String>> = rows
        .iter()
        .map(|(s, cells)| {
            let mut row = vec![s.as_str().to_string()];
            row.extend(cells.iter().cloned());
            row
        })
        .collect();
    let widths = column_widths(&header, &wraps, &plain, opts.width.into());
    let mut table = Table::new();
    table
        .load_style(presets::UTF8_FULL_CONDENSED)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    for ((severity, _), row) in rows.iter().zip(plain) {
        let cells: Vec<String> = row
            .into_iter()
            .enumerate()
            .map(|(i, cell)| match (i, wraps[i]) {
                (0, _) => paint_severity(*severity, opts.color),
                (_, Wrap::Never) => cell,
                (_, Wrap::Words) => wrap(&cell, widths[i]).join("\n"),
            })
            .collect();
        table.add_row(cells);
    }
    if opts.color {
        table.enforce_styling();
    }
    table.to_string()
}

/// Each column's width (content only; the borders and padding take `3n+1`).
fn column_widths(
    header: &[&str],
    wraps: &[Wrap],
    rows: &[Vec<String>],
    width: usize,
) -> Vec<usize> {
    let n = header.len();
    let widest = |i: usize, measure: fn(&str) -> usize| {
        rows.iter()
            .map(|r| measure(&r[i]))
            .chain([header[i].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let natural: Vec<usize> = (0..n).map(|i| widest(i, |s| s.chars().count())).collect();
    let fixed: usize = (0..n)
        .filter(|&i| wraps[i] == Wrap::Never)
        .map(|i| natural[i])
        .sum();
    let available = width.saturating_sub(3 * n + 1 + fixed);
    let open: Vec<usize> = (0..n).filter(|&i| wraps[i] == Wrap::Words).collect();
    let wanted: usize = open.iter().map(|&i| natural[i]).sum();
    let mut widths = natural.clone();
    if wanted <= available {
        return widths;
    }
    // Columns that fit in an even share take all they want (a path is read
    // more easily whole); each of the others gets its longest unbreakable
    // piece, then what is left in proportion to how much more it would take.
    let mut open = open;
    open.sort_by_key(|&i| natural[i]);
    let mut available = available;
    while let Some(&i) = open.first() {
        if natural[i] > available / open.len() {
            break;
        }
        available -= natural[i];
        open.remove(0);
    }
    let floor: Vec<usize> = (0..n)
        .map(|i| widest(i, longest_piece).min(natural[i]))
        .collect();
    let spare = available.saturating_sub(open.iter().map(|&i| floor[i]).sum());
    let more: usize = open.iter().map(|&i| natural[i] - floor[i]).sum();
    for &i in &open {
        widths[i] = floor[i] + spare * (natural[i] - floor[i]) / more.max(1);
    }
    // Rounding down leaves a few columns: the widest wrapping column takes
    // them.
    let used: usize = open.iter().map(|&i| widths[i]).sum();
    if let Some(&last) = open.last() {
        widths[last] = (widths[last] + available.saturating_sub(used)).min(natural[last]);
    }
    widths
}

/// `1 request`, `2 requests`.
fn plural_requests(n: u64) -> String {
    crate::text::plural(n, "request", "requests")
}

/// The footer line that says the API server was retried, and that the
/// counts are complete anyway (a run that gave up fails instead).
pub fn retries_line(retries: u64) -> String {
    format!(
        "retries: {} to the API server retried after transient failures (429, 5xx, lost \
         connections); every count above is complete",
        plural_requests(retries)
    )
}

/// The object scan's totals and its findings, one row per rule and path.
fn render_scan(crd: &CrdReport, opts: TableOptions, out: &mut String) {
    let Some(scan) = &crd.scan else {
        // The inputs' own objects, without a scan of the cluster's.
        if let Some(table) = object_findings_table(&crd.findings, opts) {
            out.push('\n');
            out.push_str(&table);
        }
        return;
    };
    let mut line = format!("\nobjects: {} scanned", scan.scanned);
    if !scan.versions.is_empty() {
        line.push_str(&format!(" in {}", scan.versions.join(", ")));
    }
    if let Some(ns) = &scan.namespace {
        line.push_str(&format!(" (namespace {ns} only)"));
    }
    line.push_str(&format!(
        "; {} invalid, {} losing data (server {}, ratcheting {})",
        scan.invalid,
        scan.losing_data,
        scan.server_version,
        if scan.ratcheting { "on" } else { "off" }
    ));
    if !scan.unchanged_versions.is_empty() {
        line.push_str(&format!(
            "; not scanned, schema unchanged: {}",
            scan.unchanged_versions.join(", ")
        ));
    }
    if scan.retries > 0 {
        line.push_str(&format!("; {} retried", plural_requests(scan.retries)));
    }
    out.push('\n');
    out.push_str(&wrap_indented(
        "",
        "  ",
        line.trim_start(),
        opts.width.into(),
    ));
    if let Some(table) = object_findings_table(&crd.findings, opts) {
        out.push('\n');
        out.push_str(&table);
    }
}

/// The object scan's findings, one row per rule and path, with the note on
/// ratcheting when it applies; `None` when there are none.
pub(super) fn object_findings_table(findings: &[Finding], opts: TableOptions) -> Option<String> {
    let rows: Vec<_> = findings
        .iter()
        .filter_map(|f| f.objects.as_ref().map(|o| (f, o)))
        .collect();
    if rows.is_empty() {
        return None;
    }
    let cells = rows
        .iter()
        .map(|(f, o)| {
            let more = o.count.saturating_sub(o.examples.len() as u64);
            let mut examples = o.examples.join(", ");
            if more > 0 {
                examples.push_str(&format!(", +{more} more"));
            }
            let ratcheted = match o.ratcheted {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            };
            let row = vec![
                f.check.id().to_string(),
                f.version.clone().unwrap_or_default(),
                f.path.clone().unwrap_or_default(),
                o.rule.clone(),
                format!("{} of {}", o.count, o.scanned),
                ratcheted.to_string(),
                examples,
            ];
            (f.severity, row)
        })
        .collect();
    let columns = [
        ("CHECK", Wrap::Never),
        ("VERSION", Wrap::Never),
        ("PATH", Wrap::Words),
        ("RULE", Wrap::Words),
        ("OBJECTS", Wrap::Never),
        ("RATCHETED", Wrap::Never),
        ("EXAMPLES", Wrap::Words),
    ];
    let mut out = grid(opts, &columns, cells);
    if rows.iter().any(|(_, o)| o.ratcheted.is_some()) {
        out.push('\n');
        out.push_str(&note(
            "ratcheted yes: updates that leave the field unchanged (in a list that is not listType: \
             map, the whole list; for required, the object that lacks it) still succeed, and for \
             listType duplicates every update does; \
             creating such an object fails. no: every write of these objects fails until they are \
             fixed.",
            opts,
        ));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FailMode, Mode};
    use crate::delivery::owners::{Owner, OwnerKind};

    #[test]
    fn each_owner_gets_a_line_under_the_crd_header() {
        let mut crd = CrdReport::new(
            "widgets.example.com".into(),
            CrdStatus::Safe,
            vec![],
            vec![],
        );
        crd.owners.push(Owner {
            kind: OwnerKind::ArgoCdApplication,
            name: "payments".into(),
            namespace: None,
            evidence: vec!["annotation argocd.argoproj.io/tracking-id".into()],
            reverts: true,
            effect: "Argo CD reverts a manual change at the application's next sync: change it \
                     in the application's source instead"
                .into(),
            new_chart: None,
        });
        let report = Report::new(vec![crd], vec![], Mode::Error, FailMode::Closed);
        let opts = TableOptions {
            color: false,
            width: 80,
            show_info: false,
            wide: false,
            cwd: None,
        };
        let table = render_table(&report, opts);
        let lines: Vec<&str> = table.lines().take(4).collect();
        assert_eq!(
            lines,
            [
                "widgets.example.com  SAFE",
                "owner: Argo CD application payments: Argo CD reverts a manual change at the",
                "  application's next sync: change it in the application's source instead",
                "  no changes found",
            ]
        );
    }
}
