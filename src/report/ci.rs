//! Output that CI places on lines: SARIF 2.1.0 (GitHub code scanning and
//! other SARIF consumers) and GitHub Actions workflow commands.
//!
//! Both point at files relative to the working directory (the repository
//! root in CI). A finding whose file is not a file of the working tree
//! (stdin, a `git:REF:` revision, the cluster) keeps its CRD, version and
//! path but no file position, since an annotation there would land on the
//! wrong text.

use std::path::Path;

use serde_json::{Value, json};

use super::{CrdReport, Report};
use crate::compare::{Check, Finding, Severity};
use crate::manifest::Position;
use crate::outcome::fingerprint;

const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// `file` relative to `cwd` with `/` separators, or `None` when it is not a
/// file of the working tree.
fn workspace_path(file: &str, cwd: &Path) -> Option<String> {
    if file.starts_with('<') || file.starts_with("git:") || file.starts_with("cluster") {
        return None;
    }
    let path = Path::new(file);
    let relative = if path.is_absolute() {
        path.strip_prefix(cwd).ok()?
    } else {
        path
    };
    let text = relative
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/");
    (!text.is_empty()).then_some(text)
}

/// A relative path as a URI reference.
fn uri(path: &str) -> String {
    let mut out = String::new();
    for c in path.chars() {
        match c {
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            '[' => out.push_str("%5B"),
            ']' => out.push_str("%5D"),
            c => out.push(c),
        }
    }
    out
}

/// Where a finding is, as `crd version path`.
fn logical_name(crd: &str, f: &Finding) -> String {
    let mut parts = vec![crd.to_string()];
    parts.extend(f.version.clone());
    parts.extend(f.path.clone());
    parts.join(" ")
}

fn placed<'a>(f: &'a Finding, cwd: &Path) -> Option<(String, &'a Position)> {
    let p = f.location.as_ref()?;
    Some((workspace_path(&p.file, cwd)?, p))
}

fn sarif_result(
    crd: &str,
    f: &Finding,
    cwd: &Path,
    suppression: Option<(&str, &str)>,
    with_baseline: bool,
) -> Value {
    let mut location = json!({
        "logicalLocations": [{"fullyQualifiedName": logical_name(crd, f)}],
    });
    if let Some((file, p)) = placed(f, cwd) {
        location["physicalLocation"] = json!({
            "artifactLocation": {"uri": uri(&file)},
            "region": {"startLine": p.line, "startColumn": p.column},
        });
    }
    let index = Check::ALL.iter().position(|c| *c == f.check).unwrap_or(0);
    let mut result = json!({
        "ruleId": f.check.id(),
        "ruleIndex": index,
        "level": sarif_level(f.severity),
        "message": {"text": f.message},
        "locations": [location],
        "partialFingerprints": {"crdSafety/v1": fingerprint(crd, f)},
        "properties": {"crd": crd, "version": f.version, "path": f.path},
    });
    if with_baseline {
        let state = if suppression.is_some_and(|(kind, _)| kind == "baseline") {
            "unchanged"
        } else {
            "new"
        };
        result["baselineState"] = json!(state);
    }
    if let Some((_, why)) = suppression {
        result["suppressions"] = json!([{"kind": "external", "justification": why}]);
    }
    result
}

/// The report as a SARIF 2.1.0 log: one rule per check of the catalog,
/// one result per finding; excepted and baselined findings are results
/// with a suppression, so SARIF consumers list them as dismissed.
pub fn render_sarif(report: &Report, cwd: &Path) -> String {
    let rules: Vec<Value> = Check::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.id(),
                "name": c.id(),
                "shortDescription": {"text": c.summary()},
                "fullDescription": {"text": c.summary()},
                "help": {
                    "text": format!(
                        "{} Each result's message says what changed, why it breaks and how to do it safely; `kubectl crd-safety checks` lists every check.",
                        c.summary()
                    ),
                },
                "defaultConfiguration": {"level": sarif_level(c.default_severity())},
            })
        })
        .collect();
    let with_baseline = report.summary.baselined > 0 || report.summary.stale_baseline > 0;
    let mut results = Vec::new();
    for crd in &report.crds {
        results.extend(crd_results(crd, cwd, with_baseline));
    }
    let stale: Vec<Value> = report
        .stale_baseline
        .iter()
        .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
        .collect();
    let mut run = json!({
        "tool": {"driver": {
            "name": "crd-safety",
            "version": env!("CARGO_PKG_VERSION"),
            "rules": rules,
        }},
        "columnKind": "unicodeCodePoints",
        "results": results,
    });
    if !stale.is_empty() {
        run["properties"] = json!({"staleBaseline": stale});
    }
    let log = json!({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]});
    serde_json::to_string_pretty(&log).unwrap_or_default() + "\n"
}

fn crd_results(crd: &CrdReport, cwd: &Path, with_baseline: bool) -> Vec<Value> {
    let name = crd.name.as_str();
    let mut out: Vec<Value> = crd
        .findings
        .iter()
        .map(|f| sarif_result(name, f, cwd, None, with_baseline))
        .collect();
    out.extend(crd.excepted.iter().map(|e| {
        sarif_result(
            name,
            &e.finding,
            cwd,
            Some(("exception", &e.reason)),
            with_baseline,
        )
    }));
    out.extend(crd.baselined.iter().map(|f| {
        sarif_result(
            name,
            f,
            cwd,
            Some(("baseline", "accepted by the baseline")),
            with_baseline,
        )
    }));
    out
}

/// Escapes a workflow command's message (`%`, CR, LF), as the Actions
/// runner reads it back.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a workflow command's property value: the message's escapes and
/// also `:` and `,`, which end a property.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The report as GitHub Actions workflow commands: an annotation per
/// finding (`::error`, `::warning`, `::notice` for info) on its file, line
/// and column; accepted findings and the summary as plain log lines.
pub fn render_github(report: &Report, cwd: &Path) -> String {
    let mut out = String::new();
    for crd in &report.crds {
        for f in &crd.findings {
            let command = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "notice",
            };
            let mut props = Vec::new();
            if let Some((file, p)) = placed(f, cwd) {
                props.push(format!("file={}", escape_property(&file)));
                props.push(format!("line={}", p.line));
                props.push(format!("col={}", p.column));
            }
            let title = format!("crd-safety {}: {}", f.check, logical_name(&crd.name, f));
            props.push(format!("title={}", escape_property(&title)));
            out.push_str(&format!(
                "::{command} {}::{}\n",
                props.join(","),
                escape_data(&f.message)
            ));
        }
        for e in &crd.excepted {
            out.push_str(&format!(
                "accepted by an exception: {} {} ({})\n",
                e.finding.check,
                logical_name(&crd.name, &e.finding),
                escape_data(&e.reason)
            ));
        }
        for f in &crd.baselined {
            out.push_str(&format!(
                "accepted by the baseline: {} {}\n",
                f.check,
                logical_name(&crd.name, f)
            ));
        }
    }
    for e in &report.stale_baseline {
        let mut what = vec![e.crd.clone(), e.check.clone()];
        what.extend(e.version.clone());
        what.extend(e.path.clone());
        out.push_str(&format!(
            "::notice title={}::{}\n",
            escape_property("crd-safety: stale baseline entry"),
            escape_data(&format!(
                "{} matches no finding any more; --write-baseline drops it",
                what.join(" ")
            ))
        ));
    }
    out.push_str(&escape_data(&report.summary_line()));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_command_text_is_escaped_as_the_runner_reads_it() {
        assert_eq!(
            escape_data("100% sure\r\nnext: a,b"),
            "100%25 sure%0D%0Anext: a,b"
        );
        assert_eq!(
            escape_property("crd-safety: a,b 100%\n"),
            "crd-safety%3A a%2Cb 100%25%0A"
        );
    }

    #[test]
    fn only_files_of_the_working_tree_are_placed() {
        let cwd = Path::new("/repo");
        assert_eq!(
            workspace_path("/repo/config/crd/a.yaml", cwd).as_deref(),
            Some("config/crd/a.yaml")
        );
        assert_eq!(
            workspace_path("./config/a.yaml", cwd).as_deref(),
            Some("config/a.yaml")
        );
        assert_eq!(workspace_path("/elsewhere/a.yaml", cwd), None);
        assert_eq!(workspace_path("<stdin>", cwd), None);
        assert_eq!(workspace_path("git:main:config/a.yaml", cwd), None);
        assert_eq!(uri("my dir/a#1.yaml"), "my%20dir/a%231.yaml");
    }
}
