//! From findings to an admission verdict: the webhook mode, the break-glass
//! annotation, and the texts the requester sees (a denial message, warning
//! lines). Pure: the findings come from the same engine as `apply-check`,
//! so a denial names each finding with the text `apply-check` prints.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::compare::{Check, Finding, Severity};
use crate::config::{WebhookMode, WebhookSettings};

/// The annotation on the new CRD naming the checks its author accepts
/// (comma-separated ids, e.g. `existingFieldRemoval,enum`).
pub const ACCEPT_ANNOTATION: &str = "crd-safety.io/accept";
/// The annotation saying why; without it the accept annotation is ignored.
pub const ACCEPT_REASON_ANNOTATION: &str = "crd-safety.io/accept-reason";
/// The id the break-glass annotation uses for the deletion guard, which is
/// not a check of the comparison catalog.
pub const DELETION_CHECK: &str = "crdDeletion";

/// The label the chart's `objectSelector` example leaves out of review.
pub const SKIP_LABEL: &str = "crd-safety.io/skip";
/// The id the break-glass annotation uses to add [`SKIP_LABEL`]: adding
/// it turns every later check of the CRD off, so it is a recorded
/// decision like any other break-glass.
pub const SKIP_CHECK: &str = "skipLabel";

/// The annotation binding the accept annotation to one state of the CRD:
/// its `metadata.generation` (which only a change of the spec moves), so
/// an annotation left on the CRD accepts nothing after the next change.
pub const ACCEPT_GENERATION_ANNOTATION: &str = "crd-safety.io/accept-generation";

/// The API server truncates a warning longer than this (and kubectl shows
/// what is left); ours are cut first, at a character boundary.
const WARNING_MAX: usize = 256;
/// Warnings past this total are dropped by the API server; the last one
/// says how many more there were instead.
const WARNINGS_TOTAL_MAX: usize = 4000;
/// Findings named in a denial; the rest are counted.
const DENIAL_FINDINGS_MAX: usize = 10;

/// What is being reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    /// A new CRD.
    Create,
    /// A change of an existing CRD.
    Update,
    /// Deleting a CRD.
    Delete,
}

impl Operation {
    /// The name Kubernetes uses (`CREATE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// The verdict, as the metrics and the log count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Allowed with nothing to say.
    Allow,
    /// Allowed, with warnings returned to the requester.
    Warn,
    /// Allowed, findings only logged (`audit` mode).
    Audit,
    /// Denied.
    Deny,
}

impl Verdict {
    /// The label in metrics and the log.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Warn => "warn",
            Verdict::Audit => "audit",
            Verdict::Deny => "deny",
        }
    }
}

/// A problem the review found besides the catalog's findings: objects
/// that still exist on DELETE, a check that could not finish.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Problem {
    /// The id break-glass accepts it by (`crdDeletion`), if it can be.
    pub id: &'static str,
    /// Whether `enforce` denies on it.
    pub blocking: bool,
    /// One line: what, and how to proceed.
    pub message: String,
    /// Whether the consumers' requirements raised it (a deletion they pin,
    /// a requirement that could not be checked): decided as `enforce`
    /// whatever the mode, as their findings are.
    #[serde(skip)]
    pub by_requirement: bool,
}

/// What the author accepted with the break-glass annotations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BreakGlass {
    /// The ids listed.
    pub checks: Vec<String>,
    /// Why.
    pub reason: String,
}

/// The webhook's answer to one review.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The verdict.
    pub verdict: Verdict,
    /// The denial message, when denied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The admission warnings returned to the requester.
    pub warnings: Vec<String>,
    /// Error and warning findings, after the configured levels and
    /// exceptions (info findings never reach the requester).
    pub findings: Vec<Finding>,
    /// Problems besides findings.
    pub problems: Vec<Problem>,
    /// Blocking findings and problems the break-glass annotation let
    /// through (their check ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub accepted: Vec<String>,
    /// The break-glass annotations, when they were honoured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub break_glass: Option<BreakGlass>,
}

impl Decision {
    /// A denial that no mode, `failMode` or break-glass turns into
    /// anything else: for requests no API server sends.
    pub fn refused(message: String) -> Decision {
        Decision {
            verdict: Verdict::Deny,
            message: Some(message),
            warnings: Vec::new(),
            findings: Vec::new(),
            problems: Vec::new(),
            accepted: Vec::new(),
            break_glass: None,
        }
    }

    /// An allowing answer with nothing to say.
    pub fn allow() -> Decision {
        Decision {
            verdict: Verdict::Allow,
            message: None,
            ..Decision::refused(String::new())
        }
    }

    /// Whether the request may proceed.
    pub fn allowed(&self) -> bool {
        self.verdict != Verdict::Deny
    }
}

/// Reads the break-glass annotations. `Err` is a note for the requester:
/// the annotation is there but cannot be honoured.
fn break_glass(
    annotations: &BTreeMap<String, String>,
    settings: &WebhookSettings,
) -> Result<Option<BreakGlass>, String> {
    let Some(list) = annotations.get(ACCEPT_ANNOTATION) else {
        return Ok(None);
    };
    if !settings.break_glass {
        return Err(format!(
            "{ACCEPT_ANNOTATION} is ignored: break-glass is switched off in this cluster's crd-safety configuration"
        ));
    }
    let reason = annotations
        .get(ACCEPT_REASON_ANNOTATION)
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            format!(
                "{ACCEPT_ANNOTATION} is ignored: {ACCEPT_REASON_ANNOTATION} must say why the change is acceptable"
            )
        })?;
    let checks: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .collect();
    if let Some(unknown) = checks.iter().find(|c| {
        ![DELETION_CHECK, SKIP_CHECK].contains(&c.as_str()) && c.parse::<Check>().is_err()
    }) {
        return Err(format!(
            "{ACCEPT_ANNOTATION} is ignored: {unknown:?} is not a check id (`kubectl crd-safety checks` lists them; {DELETION_CHECK} accepts deleting a CRD whose objects exist, {SKIP_CHECK} adding the {SKIP_LABEL} label)"
        ));
    }
    Ok(Some(BreakGlass {
        checks,
        reason: reason.to_string(),
    }))
}

/// Who sent a request, as the API server authenticated them (the
/// review's `userInfo`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Requester<'a> {
    /// The user name.
    pub user: &'a str,
    /// The groups the user is in.
    pub groups: &'a [String],
}

/// The break-glass annotations of one request and what ties them to it.
#[derive(Debug, Clone, Copy)]
pub struct Intent<'a> {
    /// Those of the object that carries the author's intent (the new CRD,
    /// or the one deleted).
    pub annotations: &'a BTreeMap<String, String>,
    /// Those of the stored object before the request: empty on CREATE,
    /// `None` on DELETE (which changes none).
    pub before: Option<&'a BTreeMap<String, String>>,
    /// `metadata.generation` of the CRD the request leaves.
    pub generation: Option<i64>,
    /// Who asks: `webhook.breakGlassBy` may restrict break-glass to some.
    pub requester: Requester<'a>,
}

/// No annotations at all (a request without the object that carries
/// them, or a creation's "before").
pub static NO_ANNOTATIONS: BTreeMap<String, String> = BTreeMap::new();

impl Intent<'_> {
    /// A request that carries no intent.
    pub fn none() -> Intent<'static> {
        Intent {
            annotations: &NO_ANNOTATIONS,
            before: None,
            generation: None,
            requester: Requester::default(),
        }
    }

    /// Annotations the request adds (as CREATE does).
    pub fn added(annotations: &BTreeMap<String, String>) -> Intent<'_> {
        Intent {
            annotations,
            before: Some(&NO_ANNOTATIONS),
            generation: None,
            requester: Requester::default(),
        }
    }
}

/// Whether the break-glass annotations were written for this request: the
/// request adds or changes them (`before` holds the stored object's
/// annotations; `None` on DELETE, which changes none), or
/// `crd-safety.io/accept-generation` names `generation`, the
/// `metadata.generation` of the CRD the request leaves (the new one on
/// CREATE and UPDATE, the deleted one on DELETE). `Err` says why not, and
/// how to accept this change.
pub fn bound(
    annotations: &BTreeMap<String, String>,
    before: Option<&BTreeMap<String, String>>,
    generation: Option<i64>,
) -> Result<(), String> {
    let changed = before.is_some_and(|b| {
        [
            ACCEPT_ANNOTATION,
            ACCEPT_REASON_ANNOTATION,
            ACCEPT_GENERATION_ANNOTATION,
        ]
        .iter()
        .any(|k| b.get(*k) != annotations.get(*k))
    });
    let written_for = annotations
        .get(ACCEPT_GENERATION_ANNOTATION)
        .and_then(|g| g.trim().parse::<i64>().ok());
    if changed || (written_for.is_some() && written_for == generation) {
        return Ok(());
    }
    let now = generation.map_or_else(
        || "its metadata.generation".to_string(),
        |g| format!("\"{g}\""),
    );
    let how = match before {
        None => format!(
            "to accept this deletion, first set {ACCEPT_GENERATION_ANNOTATION}: {now} (this CRD's metadata.generation) beside it"
        ),
        Some(_) => format!(
            "change it together with the change it accepts, or set {ACCEPT_GENERATION_ANNOTATION}: {now} (the metadata.generation this change leaves)"
        ),
    };
    Err(format!(
        "{ACCEPT_ANNOTATION} is ignored: it was set by an earlier change and this request does not change it; {how}"
    ))
}

/// What one review found, for [`decide`]: the webhook's own findings and
/// problems and the consumers' requirements' (a finding names its
/// requirement, as in the CLI's reports; a problem says it is the
/// consumer's), in one list each, so that one decision covers them all.
#[derive(Debug, Default)]
pub struct Found {
    /// After the configured levels and exceptions (info ones are dropped).
    pub findings: Vec<Finding>,
    /// Problems besides findings.
    pub problems: Vec<Problem>,
    /// Lines returned to the requester as they are, whatever the verdict
    /// (a requirement that cannot be read, so is not enforced).
    pub notices: Vec<String>,
}

impl Found {
    /// Adds what another part of the review found.
    pub fn extend(&mut self, other: Found) {
        self.findings.extend(other.findings);
        self.problems.extend(other.problems);
        self.notices.extend(other.notices);
    }
}

/// Whose word a finding or problem is: the cluster operator's (the
/// webhook's `mode` applies) or a consumer's requirement (its action
/// applies whatever the mode: decided as `enforce`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Authority {
    Operator,
    Consumer,
}

impl Authority {
    fn of_finding(f: &Finding) -> Authority {
        if f.requirement.is_some() {
            Authority::Consumer
        } else {
            Authority::Operator
        }
    }

    fn of_problem(p: &Problem) -> Authority {
        if p.by_requirement {
            Authority::Consumer
        } else {
            Authority::Operator
        }
    }

    /// The mode its findings are decided under.
    fn mode(self, settings: &WebhookSettings) -> WebhookMode {
        match self {
            Authority::Operator => settings.mode,
            Authority::Consumer => WebhookMode::Enforce,
        }
    }
}

/// Decides on one review, once, over everything it found: the webhook's
/// own findings under `mode`, the requirements' as `enforce` (a consumer's
/// `Deny` denies in every mode; their `Warn` findings are warnings, which
/// reach the requester in `audit` too). The break-glass annotations of
/// `intent` are honoured only when [`bound`] to this request: once a
/// change went through, an annotation left on the CRD accepts nothing more.
pub fn decide(
    crd: &str,
    operation: Operation,
    found: Found,
    intent: Intent<'_>,
    settings: &WebhookSettings,
) -> Decision {
    let Found {
        mut findings,
        problems,
        notices,
    } = found;
    findings.retain(|f| f.severity > Severity::Info);
    let mut notes = Vec::new();
    let glass = match break_glass(intent.annotations, settings) {
        Ok(g) => g,
        Err(note) => {
            notes.push(note);
            None
        }
    };
    // Whether the annotation names something that blocks this request:
    // an annotation that could not be honoured is mentioned only then.
    let would_accept = |g: &BreakGlass| {
        findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.check.id())
            .chain(problems.iter().filter(|p| p.blocking).map(|p| p.id))
            .any(|id| g.checks.iter().any(|c| c == id))
    };
    // An annotation left from an earlier change: ignored, and said so
    // when it would have let something through.
    let glass = match (
        glass,
        bound(intent.annotations, intent.before, intent.generation),
    ) {
        (Some(g), Err(note)) => {
            if would_accept(&g) {
                notes.push(note);
            }
            None
        }
        (g, _) => g,
    };
    // Set by someone `breakGlassBy` does not list: ignored, and said so.
    let glass = match (glass, &settings.break_glass_by) {
        (Some(g), Some(by)) if !by.admits(intent.requester.user, intent.requester.groups) => {
            if would_accept(&g) {
                notes.push(format!(
                    "{ACCEPT_ANNOTATION} is ignored: {:?} may not use break-glass in this cluster \
                     (webhook.breakGlassBy lists who may); ask one of them to make the change",
                    intent.requester.user
                ));
            }
            None
        }
        (g, _) => g,
    };
    let accepts = |id: &str| {
        glass
            .as_ref()
            .is_some_and(|g| g.checks.iter().any(|c| c == id))
    };
    let mut accepted: Vec<String> = Vec::new();
    let mut accept = |id: &str| {
        if !accepted.iter().any(|a| a == id) {
            accepted.push(id.to_string());
        }
    };
    // Blocking: an error finding or a blocking problem break-glass does
    // not accept.
    let mut blocking_finding = vec![false; findings.len()];
    for (i, f) in findings.iter().enumerate() {
        if f.severity == Severity::Error {
            if accepts(f.check.id()) {
                accept(f.check.id());
            } else {
                blocking_finding[i] = true;
            }
        }
    }
    let mut blocking_problem = vec![false; problems.len()];
    for (i, p) in problems.iter().enumerate() {
        if p.blocking {
            if accepts(p.id) {
                accept(p.id);
            } else {
                blocking_problem[i] = true;
            }
        }
    }
    // Whether each authority denies under its mode. The deletion guard
    // protects what no warning brings back, and the skip label would turn
    // every later check off (the deletion guard's too), so both deny in
    // `warn` mode too; `audit` never denies.
    let blocks = |who: Authority, guarded_only: bool| {
        let by_finding = findings
            .iter()
            .zip(&blocking_finding)
            .any(|(f, b)| *b && !guarded_only && Authority::of_finding(f) == who);
        by_finding
            || problems.iter().zip(&blocking_problem).any(|(p, b)| {
                *b && Authority::of_problem(p) == who
                    && (!guarded_only || [DELETION_CHECK, SKIP_CHECK].contains(&p.id))
            })
    };
    let denies = |who: Authority| match who.mode(settings) {
        WebhookMode::Enforce => blocks(who, false),
        WebhookMode::Warn => blocks(who, true),
        WebhookMode::Audit => false,
    };
    let (operator_denies, consumer_denies) =
        (denies(Authority::Operator), denies(Authority::Consumer));
    let deny = |who: Authority| match who {
        Authority::Operator => operator_denies,
        Authority::Consumer => consumer_denies,
    };
    // `audit` keeps the operator's findings for the log alone; the
    // consumers' are always said.
    let shown = |who: Authority| who.mode(settings) != WebhookMode::Audit;
    let has = |who: Authority| {
        findings.iter().any(|f| Authority::of_finding(f) == who)
            || problems.iter().any(|p| Authority::of_problem(p) == who)
    };
    let operator = has(Authority::Operator) || !notes.is_empty();
    let consumer = has(Authority::Consumer) || !notices.is_empty();
    let verdict = if deny(Authority::Operator) || deny(Authority::Consumer) {
        Verdict::Deny
    } else if (operator && shown(Authority::Operator)) || consumer {
        Verdict::Warn
    } else if operator {
        Verdict::Audit
    } else {
        Verdict::Allow
    };
    // The denial names what blocks under the mode that denies; the
    // warnings say the rest of what the requester is shown: of an
    // authority that denies, what did not block it, of one that does
    // not, everything.
    let said_in_denial = |blocking: bool, who: Authority| blocking && deny(who);
    let message = (verdict == Verdict::Deny).then(|| {
        let blocking_findings: Vec<&Finding> = findings
            .iter()
            .enumerate()
            .filter(|(i, f)| said_in_denial(blocking_finding[*i], Authority::of_finding(f)))
            .map(|(_, f)| f)
            .collect();
        let blocking_problems: Vec<&Problem> = problems
            .iter()
            .enumerate()
            .filter(|(i, p)| said_in_denial(blocking_problem[*i], Authority::of_problem(p)))
            .map(|(_, p)| p)
            .collect();
        denial(
            crd,
            operation,
            &blocking_findings,
            &blocking_problems,
            glass.is_some(),
            &notes,
        )
    });
    let warnings = match verdict {
        Verdict::Audit | Verdict::Allow => Vec::new(),
        Verdict::Deny | Verdict::Warn => {
            let warned = |error: bool, who: Authority| {
                if deny(who) { !error } else { shown(who) }
            };
            let mut lines = Vec::new();
            for who in [Authority::Operator, Authority::Consumer] {
                lines.extend(
                    problems
                        .iter()
                        .filter(|p| Authority::of_problem(p) == who && warned(p.blocking, who))
                        .map(problem_line),
                );
                lines.extend(
                    findings
                        .iter()
                        .filter(|f| {
                            Authority::of_finding(f) == who
                                && warned(f.severity == Severity::Error, who)
                        })
                        .map(finding_line),
                );
            }
            warning_lines(&notes, &notices, lines)
        }
    };
    let honoured = glass.filter(|_| !accepted.is_empty());
    Decision {
        verdict,
        message,
        warnings,
        findings,
        problems,
        accepted,
        break_glass: honoured,
    }
}

/// Where a finding is, as the table names it: `check version path`.
fn place(f: &Finding) -> String {
    let mut parts = vec![f.check.id().to_string()];
    parts.extend(f.version.clone());
    parts.extend(f.path.clone());
    parts.join(" ")
}

/// The denial: what would break, each finding in `apply-check`'s words, and
/// the ways forward.
fn denial(
    crd: &str,
    operation: Operation,
    findings: &[&Finding],
    problems: &[&Problem],
    glass_present: bool,
    notes: &[String],
) -> String {
    let what = match operation {
        Operation::Create => "creating",
        Operation::Update => "this update of",
        Operation::Delete => "deleting",
    };
    let count = findings.len() + problems.len();
    let mut out = format!(
        "crd-safety: {what} {crd} is unsafe ({count} {}):",
        if count == 1 { "error" } else { "errors" }
    );
    for (i, f) in findings.iter().enumerate() {
        if i == DENIAL_FINDINGS_MAX {
            out.push_str(&format!(
                "\n- and {} more (kubectl crd-safety apply-check lists them)",
                findings.len() - i
            ));
            break;
        }
        out.push_str(&format!("\n- {}: {}", place(f), one_line(&f.message)));
    }
    for p in problems {
        out.push_str(&format!("\n- {}: {}", p.id, p.message));
    }
    let mut ids: Vec<&str> = findings.iter().map(|f| f.check.id()).collect();
    ids.extend(problems.iter().map(|p| p.id));
    ids.dedup();
    ids.sort_unstable();
    ids.dedup();
    let hint = if glass_present {
        "the crd-safety.io/accept annotation does not list"
    } else {
        "to accept deliberately, annotate the CRD with"
    };
    out.push_str(&format!(
        "\n{hint} {ACCEPT_ANNOTATION}: \"{}\" and {ACCEPT_REASON_ANNOTATION}: \"<why>\"",
        ids.join(",")
    ));
    // Why an annotation that is there did not count.
    for note in notes {
        out.push_str(&format!("\n{note}"));
    }
    out
}

fn problem_line(p: &Problem) -> String {
    format!("crd-safety {}: {}", p.id, p.message)
}

fn finding_line(f: &Finding) -> String {
    format!(
        "crd-safety {} {}: {}",
        f.severity.as_str(),
        place(f),
        f.message
    )
}

/// The admission warnings: the notes on the break-glass annotations, the
/// notices, then one line per finding or problem, cut to what the API
/// server passes on whole, then a count of what did not fit.
fn warning_lines(notes: &[String], notices: &[String], items: Vec<String>) -> Vec<String> {
    let mut lines: Vec<String> = notes.iter().map(|n| format!("crd-safety: {n}")).collect();
    for notice in notices {
        if !lines.contains(notice) {
            lines.push(notice.clone());
        }
    }
    lines.extend(items);
    let mut out = Vec::new();
    let mut total = 0;
    for (i, line) in lines.iter().enumerate() {
        let line = cut(&one_line(line), WARNING_MAX);
        // Leave room for the line that counts the rest.
        if total + line.len() > WARNINGS_TOTAL_MAX - 100 {
            out.push(format!(
                "crd-safety: {} more findings not shown (kubectl crd-safety apply-check lists them)",
                lines.len() - i
            ));
            break;
        }
        total += line.len();
        out.push(line);
    }
    out
}

/// Control characters are not allowed in a warning header; a message's
/// line breaks become spaces.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// `s` in at most `max` bytes, ending with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn removal() -> Finding {
        Finding::new(
            Check::ExistingFieldRemoval,
            Severity::Error,
            "field removed: stored objects lose it on their next write. Deprecate it first",
        )
        .in_version("v1")
        .at("^.spec.size")
    }

    fn description() -> Finding {
        Finding::new(Check::Description, Severity::Warning, "description changed")
            .in_version("v1")
            .at("^.spec")
    }

    fn found(findings: &[Finding], problems: Vec<Problem>) -> Found {
        Found {
            findings: findings.to_vec(),
            problems,
            notices: Vec::new(),
        }
    }

    fn settings(mode: WebhookMode) -> WebhookSettings {
        WebhookSettings {
            mode,
            ..WebhookSettings::default()
        }
    }

    /// The decision on CRD `w` with no other problems, in `mode`.
    fn judge(
        op: Operation,
        findings: &[Finding],
        annotations: &BTreeMap<String, String>,
        mode: WebhookMode,
    ) -> Decision {
        decide(
            "w",
            op,
            found(findings, Vec::new()),
            Intent::added(annotations),
            &settings(mode),
        )
    }

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn enforce_denies_an_error_and_names_it_with_the_way_out() {
        let d = decide(
            "widgets.example.com",
            Operation::Update,
            found(&[removal(), description()], Vec::new()),
            Intent::none(),
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Deny);
        assert_eq!(
            d.message.as_deref(),
            Some(
                "crd-safety: this update of widgets.example.com is unsafe (1 error):\n\
                 - existingFieldRemoval v1 ^.spec.size: field removed: stored objects lose it on their next write. Deprecate it first\n\
                 to accept deliberately, annotate the CRD with crd-safety.io/accept: \"existingFieldRemoval\" and crd-safety.io/accept-reason: \"<why>\""
            )
        );
        // The warning that did not block is still shown.
        assert_eq!(
            d.warnings,
            ["crd-safety warning description v1 ^.spec: description changed"]
        );
    }

    #[test]
    fn warn_allows_and_returns_every_finding_as_a_warning() {
        let d = judge(
            Operation::Update,
            &[removal(), description()],
            &BTreeMap::new(),
            WebhookMode::Warn,
        );
        assert!(d.allowed());
        assert_eq!(d.verdict, Verdict::Warn);
        assert_eq!(d.warnings.len(), 2);
        assert!(d.warnings[0].starts_with("crd-safety error existingFieldRemoval v1 ^.spec.size:"));
    }

    #[test]
    fn audit_allows_silently_but_keeps_the_findings_for_the_log() {
        let d = judge(
            Operation::Update,
            &[removal()],
            &BTreeMap::new(),
            WebhookMode::Audit,
        );
        assert_eq!(d.verdict, Verdict::Audit);
        assert!(d.warnings.is_empty());
        assert_eq!(d.findings.len(), 1);
    }

    #[test]
    fn info_findings_never_reach_the_requester() {
        let info = Finding::new(Check::NewCrd, Severity::Info, "new CRD");
        let d = judge(
            Operation::Create,
            &[info],
            &BTreeMap::new(),
            WebhookMode::Enforce,
        );
        assert_eq!(d.verdict, Verdict::Allow);
        assert!(d.warnings.is_empty() && d.findings.is_empty());
    }

    #[test]
    fn break_glass_with_a_reason_lets_the_named_checks_through_and_records_why() {
        let a = annotations(&[
            (ACCEPT_ANNOTATION, "existingFieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "size was never read; see #12"),
        ]);
        let d = judge(Operation::Update, &[removal()], &a, WebhookMode::Enforce);
        assert_eq!(d.verdict, Verdict::Warn);
        assert_eq!(d.accepted, ["existingFieldRemoval"]);
        assert_eq!(
            d.break_glass.as_ref().map(|g| g.reason.as_str()),
            Some("size was never read; see #12")
        );
        assert_eq!(d.warnings.len(), 1);
    }

    #[test]
    fn break_glass_without_a_reason_or_switched_off_is_ignored_and_says_so() {
        let no_reason = annotations(&[(ACCEPT_ANNOTATION, "existingFieldRemoval")]);
        let d = judge(
            Operation::Update,
            &[removal()],
            &no_reason,
            WebhookMode::Enforce,
        );
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(
            d.warnings[0].contains("accept-reason must say why"),
            "{:?}",
            d.warnings
        );
        let full = annotations(&[
            (ACCEPT_ANNOTATION, "existingFieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "ok"),
        ]);
        let off = WebhookSettings {
            break_glass: false,
            ..settings(WebhookMode::Enforce)
        };
        let d = decide(
            "w",
            Operation::Update,
            found(&[removal()], Vec::new()),
            Intent::added(&full),
            &off,
        );
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(d.warnings[0].contains("switched off"));
    }

    #[test]
    fn break_glass_for_another_check_does_not_open_the_door() {
        let a = annotations(&[
            (ACCEPT_ANNOTATION, "enum"),
            (ACCEPT_REASON_ANNOTATION, "ok"),
        ]);
        let d = judge(Operation::Update, &[removal()], &a, WebhookMode::Enforce);
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(d.break_glass.is_none());
        assert!(d.message.as_deref().is_some_and(|m| {
            m.contains("does not list crd-safety.io/accept: \"existingFieldRemoval\"")
        }));
    }

    #[test]
    fn a_blocking_problem_denies_a_delete_and_break_glass_accepts_it_by_its_id() {
        let objects = Problem {
            id: DELETION_CHECK,
            blocking: true,
            message: "3 Widget objects exist".into(),
            ..Problem::default()
        };
        let d = decide(
            "widgets.example.com",
            Operation::Delete,
            found(&[], vec![objects.clone()]),
            Intent::none(),
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(
            d.message
                .as_deref()
                .is_some_and(|m| m.starts_with("crd-safety: deleting widgets.example.com is unsafe (1 error):\n- crdDeletion: 3 Widget objects exist"))
        );
        let a = annotations(&[
            (ACCEPT_ANNOTATION, DELETION_CHECK),
            (ACCEPT_REASON_ANNOTATION, "retiring widgets"),
            (ACCEPT_GENERATION_ANNOTATION, "3"),
        ]);
        let d = decide(
            "widgets.example.com",
            Operation::Delete,
            found(&[], vec![objects]),
            Intent {
                annotations: &a,
                before: None,
                generation: Some(3),
                requester: Requester::default(),
            },
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Warn);
    }

    /// A warning cannot bring deleted objects back: `deleteGuard` denies
    /// in `warn` mode too, while other blocking problems only warn there
    /// and `audit` denies nothing.
    #[test]
    fn the_deletion_guard_denies_in_warn_mode_and_only_audit_lets_it_through() {
        let objects = Problem {
            id: DELETION_CHECK,
            blocking: true,
            message: "3 Widget objects exist".into(),
            ..Problem::default()
        };
        let unfinished = Problem {
            id: "unfinished",
            blocking: true,
            message: "the scan did not finish".into(),
            ..Problem::default()
        };
        let verdict = |problem: &Problem, mode| {
            decide(
                "widgets.example.com",
                Operation::Delete,
                found(&[], vec![problem.clone()]),
                Intent::none(),
                &settings(mode),
            )
            .verdict
        };
        assert_eq!(verdict(&objects, WebhookMode::Warn), Verdict::Deny);
        assert_eq!(verdict(&objects, WebhookMode::Audit), Verdict::Audit);
        assert_eq!(verdict(&unfinished, WebhookMode::Warn), Verdict::Warn);
        // Adding the skip label would turn the guard off: guarded alike,
        // and break-glass accepts it by its id.
        let skip = Problem {
            id: SKIP_CHECK,
            blocking: true,
            message: "adds the skip label".into(),
            ..Problem::default()
        };
        assert_eq!(verdict(&skip, WebhookMode::Warn), Verdict::Deny);
        let a = annotations(&[
            (ACCEPT_ANNOTATION, SKIP_CHECK),
            (ACCEPT_REASON_ANNOTATION, "managed by hand from now on"),
        ]);
        let d = decide(
            "widgets.example.com",
            Operation::Update,
            found(&[], vec![skip]),
            Intent {
                annotations: &a,
                before: Some(&BTreeMap::new()),
                generation: Some(2),
                requester: Requester::default(),
            },
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Warn, "{d:#?}");
        assert_eq!(d.accepted, [SKIP_CHECK]);
    }

    #[test]
    fn warnings_fit_the_api_servers_limits() {
        let long = "x".repeat(1000);
        let many: Vec<Finding> = (0..100)
            .map(|i| {
                Finding::new(
                    Check::Description,
                    Severity::Warning,
                    format!("{i}\n{long}"),
                )
            })
            .collect();
        let d = judge(
            Operation::Update,
            &many,
            &BTreeMap::new(),
            WebhookMode::Warn,
        );
        assert!(d.warnings.iter().all(|w| w.len() <= WARNING_MAX));
        assert!(d.warnings.iter().all(|w| !w.chars().any(char::is_control)));
        assert!(d.warnings.iter().map(String::len).sum::<usize>() <= WARNINGS_TOTAL_MAX);
        let last = d.warnings.last().map(String::as_str).unwrap_or("");
        assert!(last.contains("more findings not shown"), "{last}");
    }

    #[test]
    fn an_unknown_id_in_the_annotation_is_named() {
        let a = annotations(&[
            (ACCEPT_ANNOTATION, "fieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "ok"),
        ]);
        let d = judge(Operation::Update, &[removal()], &a, WebhookMode::Enforce);
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(d.warnings[0].contains("\"fieldRemoval\" is not a check id"));
    }

    #[test]
    fn break_glass_left_from_an_earlier_change_accepts_nothing_more() {
        let a = annotations(&[
            (ACCEPT_ANNOTATION, "existingFieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "size was never read"),
        ]);
        let unchanged = Intent {
            annotations: &a,
            before: Some(&a),
            generation: Some(5),
            requester: Requester::default(),
        };
        let d = decide(
            "w",
            Operation::Update,
            found(&[removal()], Vec::new()),
            unchanged,
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Deny);
        assert!(d.break_glass.is_none());
        let message = d.message.unwrap_or_default();
        assert!(
            message.contains("crd-safety.io/accept is ignored: it was set by an earlier change")
                && message.contains("crd-safety.io/accept-generation: \"5\""),
            "{message}"
        );
        // Written for the generation this change leaves: honoured.
        let mut pinned = a.clone();
        pinned.insert(ACCEPT_GENERATION_ANNOTATION.into(), "5".into());
        let d = decide(
            "w",
            Operation::Update,
            found(&[removal()], Vec::new()),
            Intent {
                annotations: &pinned,
                before: Some(&pinned),
                generation: Some(5),
                requester: Requester::default(),
            },
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Warn);
        // For another generation, or on a DELETE without one: not.
        for generation in [Some(6), None] {
            let d = decide(
                "w",
                Operation::Delete,
                found(&[removal()], Vec::new()),
                Intent {
                    annotations: &pinned,
                    before: None,
                    generation,
                    requester: Requester::default(),
                },
                &settings(WebhookMode::Enforce),
            );
            assert_eq!(d.verdict, Verdict::Deny, "{generation:?}");
        }
        // Unbound but irrelevant (nothing it names blocks): no note.
        let d = decide(
            "w",
            Operation::Update,
            found(&[description()], Vec::new()),
            unchanged,
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
    }

    #[test]
    fn break_glass_changed_by_the_request_is_bound_to_it() {
        let before = annotations(&[
            (ACCEPT_ANNOTATION, "enum"),
            (ACCEPT_REASON_ANNOTATION, "old"),
        ]);
        let after = annotations(&[
            (ACCEPT_ANNOTATION, "enum,existingFieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "old"),
        ]);
        assert!(bound(&after, Some(&before), None).is_ok());
        assert!(bound(&after, Some(&BTreeMap::new()), None).is_ok());
        assert!(bound(&after, Some(&after), Some(2)).is_err());
        assert!(bound(&after, None, Some(2)).is_err());
    }

    #[test]
    fn break_glass_by_someone_not_listed_is_ignored_and_says_who_may() {
        let a = annotations(&[
            (ACCEPT_ANNOTATION, "existingFieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "size was never read"),
        ]);
        let restricted = WebhookSettings {
            break_glass_by: Some(crate::config::BreakGlassBy {
                users: vec!["alice".into()],
                groups: vec!["admins".into()],
            }),
            ..settings(WebhookMode::Enforce)
        };
        fn by(
            user: &str,
            groups: &[String],
            a: &BTreeMap<String, String>,
            settings: &WebhookSettings,
        ) -> Decision {
            decide(
                "w",
                Operation::Update,
                found(&[removal()], Vec::new()),
                Intent {
                    requester: Requester { user, groups },
                    ..Intent::added(a)
                },
                settings,
            )
        }
        let mallory = by("mallory", &["devs".to_string()], &a, &restricted);
        assert_eq!(mallory.verdict, Verdict::Deny);
        assert!(mallory.break_glass.is_none());
        let message = mallory.message.unwrap_or_default();
        assert!(
            message.contains(
                "crd-safety.io/accept is ignored: \"mallory\" may not use break-glass in this cluster"
            ),
            "{message}"
        );
        let alice = by("alice", &[], &a, &restricted);
        assert_eq!(alice.verdict, Verdict::Warn);
        assert_eq!(alice.accepted, ["existingFieldRemoval"]);
        let bob = by("bob", &["admins".to_string()], &a, &restricted);
        assert_eq!(bob.verdict, Verdict::Warn, "a member of a listed group");
    }

    /// A finding of a consumer's requirement, as `requirement::judge`
    /// gives it: naming the requirement, at its action's level.
    fn broken(severity: Severity) -> Finding {
        let mut f = Finding::new(
            Check::ExistingFieldRemoval,
            severity,
            "breaks `uses-route`: field ^.spec.route removed",
        )
        .in_version("v1")
        .at("^.spec.route");
        f.requirement = Some(crate::compare::RequirementRef {
            name: "uses-route".into(),
            owner: None,
            source: "the cluster".into(),
        });
        f
    }

    /// The consumer's `Deny` denies whatever the webhook's mode; the
    /// webhook's own findings keep to that mode in the same answer: in
    /// `warn` its error is a warning, not part of the denial.
    #[test]
    fn a_requirements_denial_wins_over_the_webhooks_own_warn_mode() {
        let d = decide(
            "widgets.example.com",
            Operation::Update,
            found(&[removal(), broken(Severity::Error)], Vec::new()),
            Intent::none(),
            &settings(WebhookMode::Warn),
        );
        assert_eq!(d.verdict, Verdict::Deny);
        let message = d.message.unwrap_or_default();
        assert!(
            message.starts_with(
                "crd-safety: this update of widgets.example.com is unsafe (1 error):\n\
                 - existingFieldRemoval v1 ^.spec.route: breaks `uses-route`"
            ),
            "{message}"
        );
        assert!(!message.contains("^.spec.size"), "{message}");
        assert_eq!(
            d.warnings,
            [
                "crd-safety error existingFieldRemoval v1 ^.spec.size: field removed: stored objects \
              lose it on their next write. Deprecate it first"
            ]
        );
        assert_eq!(d.findings.len(), 2, "both are logged");
        // In audit mode too; and a deletion a requirement pins.
        for mode in [WebhookMode::Audit, WebhookMode::Enforce] {
            let d = decide(
                "w",
                Operation::Update,
                found(&[broken(Severity::Error)], Vec::new()),
                Intent::none(),
                &settings(mode),
            );
            assert_eq!(d.verdict, Verdict::Deny, "{mode:?}");
        }
        let pinned = Problem {
            id: DELETION_CHECK,
            blocking: true,
            message: "w is pinned by the requirement `uses-route`".into(),
            by_requirement: true,
        };
        let d = decide(
            "w",
            Operation::Delete,
            found(&[], vec![pinned]),
            Intent::none(),
            &settings(WebhookMode::Audit),
        );
        assert_eq!(d.verdict, Verdict::Deny);
    }

    /// `audit` keeps the webhook's own findings for the log; a `Warn`
    /// requirement's findings and the notices about requirements reach
    /// the requester all the same.
    #[test]
    fn a_requirements_warnings_and_notices_reach_the_requester_in_audit_mode() {
        let notice = "CRDRequirement stale is not enforced, it cannot be read: spec.fields.0: no";
        let d = decide(
            "w",
            Operation::Update,
            Found {
                findings: vec![removal(), broken(Severity::Warning)],
                problems: Vec::new(),
                notices: vec![notice.to_string()],
            },
            Intent::none(),
            &settings(WebhookMode::Audit),
        );
        assert_eq!(d.verdict, Verdict::Warn);
        assert_eq!(d.warnings.len(), 2, "{:?}", d.warnings);
        assert_eq!(d.warnings[0], notice);
        assert!(
            d.warnings[1].starts_with("crd-safety warning existingFieldRemoval v1 ^.spec.route")
        );
        // A notice alone makes an allowed change a warned one.
        let d = decide(
            "w",
            Operation::Update,
            Found {
                notices: vec![notice.to_string()],
                ..Found::default()
            },
            Intent::none(),
            &settings(WebhookMode::Enforce),
        );
        assert_eq!((d.verdict, d.warnings.len()), (Verdict::Warn, 1));
    }

    /// The webhook's and a requirement's errors deny in one message: one
    /// count, one way out, a note said once. Before, two decisions were
    /// merged and the message was two denials, each with its own count.
    #[test]
    fn own_and_requirement_errors_are_one_denial() {
        let a = annotations(&[(ACCEPT_ANNOTATION, "existingFieldRemoval")]);
        let d = decide(
            "w",
            Operation::Update,
            found(&[removal(), broken(Severity::Error)], Vec::new()),
            Intent::added(&a),
            &settings(WebhookMode::Enforce),
        );
        assert_eq!(d.verdict, Verdict::Deny);
        let message = d.message.unwrap_or_default();
        assert_eq!(message.matches("crd-safety: this update of w").count(), 1);
        assert!(message.contains("is unsafe (2 errors)"), "{message}");
        assert_eq!(message.matches("accept-reason must say why").count(), 1);
        assert_eq!(
            message.matches("to accept deliberately").count(),
            1,
            "{message}"
        );
        // Break-glass accepts both by the check's id, once.
        let a = annotations(&[
            (ACCEPT_ANNOTATION, "existingFieldRemoval"),
            (ACCEPT_REASON_ANNOTATION, "team B moved to v2 routes"),
        ]);
        let d = decide(
            "w",
            Operation::Update,
            found(&[removal(), broken(Severity::Error)], Vec::new()),
            Intent::added(&a),
            &settings(WebhookMode::Audit),
        );
        assert_eq!(d.verdict, Verdict::Warn);
        assert_eq!(d.accepted, ["existingFieldRemoval"]);
    }
}
