//! A finding's message in two parts: what changed (`maximum lowered 100 ->
//! 50`), for a table row, and why it matters and how to do it safely, which
//! the compact table prints once per check below the rows.
//!
//! Messages are written "what: why. how", so the split is read
//! from the message itself: the first `: ` outside backticks and quotes.
//! Deriving it here keeps the checks free of a second text to maintain.

use crate::compare::{Check, Finding};

use crate::text::split_message as split;

/// Both parts: (what changed, why and how).
fn parts(f: &Finding) -> (&str, &str) {
    // A requirement's finding leads with who it breaks (``breaks `x`
    // (owner: y): ``): that stays with the change, and the split is read
    // from the catalog's message after it.
    if let Some(r) = &f.requirement
        && let Some(rest) = f.message.strip_prefix(&(r.prefix() + ": "))
    {
        let lead = f.message.len() - rest.len();
        let (change, detail) = split(rest).unwrap_or((rest, ""));
        return (&f.message[..lead + change.len()], detail);
    }
    // A graded finding leads with its grade (an admission warning is cut
    // to its start): the change and its advice are in what follows.
    let message = match &f.grade {
        Some(g) => f
            .message
            .strip_prefix(g.reason.as_str())
            .and_then(|rest| rest.strip_prefix(". "))
            .unwrap_or(&f.message),
        None => f.message.as_str(),
    };
    let Some((head, rest)) = split(message) else {
        return (message, "");
    };
    // The server's verdict is in what follows its preamble.
    if matches!(f.check, Check::InvalidCrd | Check::ApiServerRejects) {
        return (rest, head);
    }
    // `^.spec: x-foo 1 -> 2 (...)`: the path is in its own column.
    if f.path.as_deref() == Some(head) {
        return split(rest).unwrap_or((rest, ""));
    }
    (head, rest)
}

/// What changed, in a few words (`maximum lowered 100 -> 50`).
pub fn change_of(f: &Finding) -> &str {
    parts(f).0
}

/// Why it matters and how to do it safely; empty when the message has no
/// such part.
pub fn detail_of(f: &Finding) -> &str {
    parts(f).1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Severity;

    fn finding(check: Check, path: Option<&str>, message: &str) -> Finding {
        let mut f = Finding::new(check, Severity::Error, message).in_version("v1");
        f.path = path.map(str::to_string);
        f
    }

    #[test]
    fn the_change_is_what_comes_before_the_first_colon() {
        let f = finding(
            Check::Maximum,
            Some("^.spec.size"),
            "maximum lowered 100 -> 50: objects outside the new bound fail",
        );
        assert_eq!(change_of(&f), "maximum lowered 100 -> 50");
        assert_eq!(detail_of(&f), "objects outside the new bound fail");
    }

    #[test]
    fn a_colon_inside_code_or_quotes_does_not_split() {
        let f = finding(
            Check::XValidations,
            Some("^.spec"),
            "CEL rule added `self.a ? b: c`: objects that fail it",
        );
        assert_eq!(change_of(&f), "CEL rule added `self.a ? b: c`");
        let f = finding(Check::Enum, None, r#"value "a: \"b" gone: why"#);
        assert_eq!(change_of(&f), r#"value "a: \"b" gone"#);
    }

    #[test]
    fn the_server_verdict_is_the_change_and_its_preamble_the_why() {
        let f = finding(
            Check::InvalidCrd,
            Some("spec.names.kind"),
            "the API server (Kubernetes 1.34) refuses this CRD: spec.names.kind: Required value",
        );
        assert_eq!(change_of(&f), "spec.names.kind: Required value");
        assert_eq!(
            detail_of(&f),
            "the API server (Kubernetes 1.34) refuses this CRD"
        );
    }

    #[test]
    fn a_requirement_finding_keeps_who_it_breaks_with_the_change() {
        let mut f = finding(
            Check::ExistingFieldRemoval,
            Some("^.spec.rules"),
            "breaks `team/routes` (owner: #ingress): field ^.spec.rules removed: clients lose it",
        );
        f.requirement = Some(crate::compare::RequirementRef {
            name: "team/routes".into(),
            owner: Some("#ingress".into()),
            source: "r.yaml:1".into(),
        });
        assert_eq!(
            change_of(&f),
            "breaks `team/routes` (owner: #ingress): field ^.spec.rules removed"
        );
        assert_eq!(detail_of(&f), "clients lose it");
    }

    #[test]
    fn a_message_led_by_its_path_skips_it() {
        let f = finding(
            Check::UnknownChange,
            Some("^.spec"),
            "^.spec: x-foo 1 -> 2 (no check understands this keyword)",
        );
        assert_eq!(
            change_of(&f),
            "x-foo 1 -> 2 (no check understands this keyword)"
        );
    }
}
