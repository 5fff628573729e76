//! Value constraints: enum, numeric and length bounds, multipleOf, pattern
//! and format. Tightening one rejects stored values the old schema accepted.

use serde_json::Value;

use super::{FieldCheck, Node};
use crate::compare::Check;
use crate::compare::Severity;
use crate::compare::messages::{TIGHTENED, TIGHTENED_FIX, list};
use crate::json::{json_eq, short, show};
use crate::validate::formats::Format;

impl Node<'_, '_> {
    pub(super) fn enum_(&mut self, c: &FieldCheck) {
        if !self.changed("enum") {
            return;
        }
        let (o, n) = self.kw("enum");
        let (o, n) = (o.cloned(), n.cloned());
        let empty = Vec::new();
        let old_vals = o.as_ref().and_then(Value::as_array).unwrap_or(&empty);
        let new_vals = n.as_ref().and_then(Value::as_array).unwrap_or(&empty);
        match (&o, &n) {
            (None, Some(_)) => self.emit(
                c.check,
                Severity::Error,
                format!(
                    "enum restriction added {}: objects with any other value {TIGHTENED}; {TIGHTENED_FIX}",
                    list(&new_vals.iter().collect::<Vec<_>>())
                ),
                None,
                n.as_ref(),
            ),
            (Some(_), None) => {} // restriction lifted: safe
            _ => {
                let removed: Vec<&Value> = old_vals
                    .iter()
                    .filter(|v| !new_vals.iter().any(|w| json_eq(v, w)))
                    .collect();
                let added: Vec<&Value> = new_vals
                    .iter()
                    .filter(|v| !old_vals.iter().any(|w| json_eq(v, w)))
                    .collect();
                if !removed.is_empty() {
                    self.emit(
                        c.check,
                        Severity::Error,
                        format!(
                            "enum values removed {}: objects holding them {TIGHTENED}; {TIGHTENED_FIX}",
                            list(&removed)
                        ),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
                if !added.is_empty() {
                    let severity = if self.ctx.options.enum_allow_additions {
                        Severity::Info
                    } else {
                        Severity::Error
                    };
                    self.emit(
                        c.check,
                        severity,
                        format!(
                            "enum values added {}: safe for the API server, but clients and controllers reading \
this field may meet values they do not know",
                            list(&added)
                        ),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
            }
        }
    }

    pub(super) fn lower_bound(&mut self, c: &FieldCheck) {
        for &kw in c.keywords {
            self.bound(c.check, kw, true);
        }
    }

    pub(super) fn upper_bound(&mut self, c: &FieldCheck) {
        for &kw in c.keywords {
            self.bound(c.check, kw, false);
        }
    }

    fn bound(&mut self, check: Check, kw: &str, lower: bool) {
        if !self.changed(kw) {
            return;
        }
        let (o, n) = self.kw(kw);
        let (of, nf) = (o.and_then(Value::as_f64), n.and_then(Value::as_f64));
        let tightened = match (of, nf) {
            // A zero lower bound on a length or count allows everything.
            (None, Some(b)) => !(lower && kw != "minimum" && b <= 0.0),
            (Some(a), Some(b)) => {
                if lower {
                    b > a
                } else {
                    b < a
                }
            }
            _ => false,
        };
        if !tightened {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        let what = match (&o, lower) {
            (None, _) => format!("{kw} {} added", show(n.as_ref())),
            (Some(_), true) => format!("{kw} raised {} -> {}", show(o.as_ref()), show(n.as_ref())),
            (Some(_), false) => {
                format!("{kw} lowered {} -> {}", show(o.as_ref()), show(n.as_ref()))
            }
        };
        self.emit(
            check,
            Severity::Error,
            format!("{what}: objects outside the new bound {TIGHTENED}; {TIGHTENED_FIX}"),
            o.as_ref(),
            n.as_ref(),
        );
    }

    /// `bound` is the keyword the flag makes exclusive, named in the message.
    pub(super) fn exclusive(&mut self, c: &FieldCheck, bound: &str) {
        for &kw in c.keywords {
            if self.old.flag(kw) || !self.new.flag(kw) {
                continue;
            }
            let limit = self.new.keyword(bound).cloned();
            let limit_text = show(limit.as_ref());
            self.emit(
            c.check,
            Severity::Error,
            format!(
                "{kw} turned on: the value {limit_text} itself is no longer allowed, so objects holding it \
{TIGHTENED}"
            ),
            Some(&Value::Bool(false)),
            Some(&Value::Bool(true)),
        );
        }
    }

    pub(super) fn multiple_of(&mut self, c: &FieldCheck) {
        if !self.changed("multipleOf") {
            return;
        }
        let (o, n) = self.kw("multipleOf");
        let safe = match (o.and_then(Value::as_f64), n.and_then(Value::as_f64)) {
            (_, None) => true,
            (Some(a), Some(b)) if b != 0.0 => {
                let q = a / b;
                (q - q.round()).abs() < 1e-9
            }
            _ => false,
        };
        if safe {
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.emit(
            c.check,
            Severity::Error,
            format!(
                "multipleOf {} -> {}: objects whose value is not a multiple of the new one {TIGHTENED}",
                show(o.as_ref()),
                show(n.as_ref())
            ),
            o.as_ref(),
            n.as_ref(),
        );
    }

    pub(super) fn pattern(&mut self, c: &FieldCheck) {
        if !self.changed("pattern") {
            return;
        }
        let (o, n) = self.kw("pattern");
        let (o, n) = (o.cloned(), n.cloned());
        let message = match (&o, &n) {
            (None, Some(p)) => format!(
                "pattern {} added: objects whose value does not match {TIGHTENED}; {TIGHTENED_FIX}",
                short(p, 60)
            ),
            (Some(_), None) => {
                if self.ctx.options.pattern_allow_removal {
                    return;
                }
                format!(
                    "pattern {} removed (pattern.allowRemoval is false)",
                    show(o.as_ref())
                )
            }
            _ => format!(
                "pattern changed {} -> {}: objects whose value matches only the old pattern {TIGHTENED}; {TIGHTENED_FIX}",
                show(o.as_ref()),
                show(n.as_ref())
            ),
        };
        self.emit(c.check, Severity::Error, message, o.as_ref(), n.as_ref());
    }

    pub(super) fn format(&mut self, c: &FieldCheck) {
        if !self.changed("format") {
            return;
        }
        let (o, n) = self.kw("format");
        // The API server reads `date-time` as `datetime`.
        let norm = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .map(|f| f.replace("date-time", "datetime"))
        };
        if norm(o) == norm(n) {
            return;
        }
        let Some(new_format) = n.and_then(Value::as_str) else {
            return; // format removed: looser
        };
        let (o, n) = (o.cloned(), n.cloned());
        let validated = Format::is_validated(new_format);
        let (severity, message) = if validated {
            (
                Severity::Error,
                format!(
                    "format {} -> {}: the API server validates {new_format}, so objects whose value does not conform \
{TIGHTENED}",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
            )
        } else {
            (
                Severity::Info,
                format!(
                    "format {} -> {}: the API server does not validate {new_format} on custom resources, \
so this only changes what clients and generated code expect",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
            )
        };
        self.emit(c.check, severity, message, o.as_ref(), n.as_ref());
    }
}
