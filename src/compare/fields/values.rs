//! Value constraints: enum, numeric and length bounds, multipleOf, pattern
//! and format. Tightening one rejects stored values the old schema accepted.

use serde_json::Value;

use super::{FieldCheck, Node};
use crate::compare::Check;
use crate::compare::Severity;
use crate::compare::messages::{TIGHTENED, TIGHTENED_FIX, list};
use crate::compare::witness;
use crate::json::{json_eq, short, show};
use crate::object_validation::Rule;
use crate::openapi::formats::{Format, NumericFormat};
use crate::openapi::numbers::{self, GoNum};
use crate::re2::compile_go;

use crate::re2::language as pattern_language;

impl Node<'_, '_> {
    pub(super) fn enum_(&mut self, c: &FieldCheck) {
        if !self.changed("enum") {
            return;
        }
        let ratcheting = self.ratcheting();
        let (o, n) = self.kw("enum");
        let (o, n) = (o.cloned(), n.cloned());
        let empty = Vec::new();
        let old_vals = o.as_ref().and_then(Value::as_array).unwrap_or(&empty);
        let new_vals = n.as_ref().and_then(Value::as_array).unwrap_or(&empty);
        match (&o, &n) {
            (None, Some(_)) => {
                let witness = witness::for_keyword(self.old, self.new, &[Rule::Enum]);
                self.emit(
                    c.check,
                    Severity::Error,
                    format!(
                        "enum restriction added {}{}: objects with any other value {TIGHTENED}{ratcheting}; {TIGHTENED_FIX}",
                        list(&new_vals.iter().collect::<Vec<_>>()),
                        witness::shown(witness.as_ref())
                    ),
                    None,
                    n.as_ref(),
                );
                self.witnessed(witness);
            }
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
                            "enum values removed {}: objects holding them {TIGHTENED}{ratcheting}; {TIGHTENED_FIX}",
                            list(&removed)
                        ),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
                if !added.is_empty() {
                    let severity = Severity::info_if(self.ctx.options.enum_allow_additions);
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
        let (o, n) = (o.cloned(), n.cloned());
        let (of, nf) = (
            o.as_ref().and_then(Value::as_f64),
            n.as_ref().and_then(Value::as_f64),
        );
        if matches!(kw, "minimum" | "maximum")
            && let Some(b) = nf
            && self.bound_outside_type(check, kw, b)
        {
            return;
        }
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
        let what = match (&o, lower) {
            (None, _) => format!("{kw} {} added", show(n.as_ref())),
            (Some(_), true) => format!("{kw} raised {} -> {}", show(o.as_ref()), show(n.as_ref())),
            (Some(_), false) => {
                format!("{kw} lowered {} -> {}", show(o.as_ref()), show(n.as_ref()))
            }
        };
        let limit = nf.unwrap_or_default();
        let new = self.new;
        let meets = |v: &Value| -> bool {
            let exclusive = match kw {
                "minimum" => new.flag("exclusiveMinimum"),
                "maximum" => new.flag("exclusiveMaximum"),
                _ => false,
            };
            match (kw, v) {
                ("minLength" | "maxLength", Value::String(s)) => {
                    let m = s.chars().count() as f64;
                    if lower { m >= limit } else { m <= limit }
                }
                // As the server compares: an integer natively against the
                // bound truncated (exact beyond 2^53), a float as a float.
                ("minimum" | "maximum", Value::Number(x)) => {
                    numbers::within(GoNum::of(x), limit, exclusive, !lower, true)
                }
                _ => false,
            }
        };
        self.tightened(
            check,
            what,
            "objects outside the new bound",
            o.as_ref(),
            n.as_ref(),
            refusing_rule(kw),
            meets,
        );
    }

    /// A new `minimum`, `maximum` or `multipleOf` that is not a value of the
    /// node's type and format (not an integer on an `integer`, outside
    /// int32 with `format: int32`, beyond a float32 with `format: float`)
    /// makes the API server from 1.36 reject every value there
    /// (kube-openapi checks the bound against the type first). Reports that
    /// as an error and returns `true`.
    fn bound_outside_type(&mut self, check: Check, kw: &str, bound: f64) -> bool {
        let format = self.new.str_keyword("format");
        let (holds, typed) = match (self.new.type_name(), format) {
            (Some("integer"), Some("int32")) => (
                NumericFormat::Int32.holds_bound(bound),
                "integer with format int32",
            ),
            (Some("integer"), _) => (numbers::integer_bound(bound), "integer"),
            (Some("number"), Some("float")) => (
                NumericFormat::Float.holds_bound(bound),
                "number with format float",
            ),
            _ => (true, ""),
        };
        let unchanged = self.old.keyword(kw).and_then(Value::as_f64) == Some(bound)
            && self.old.type_name() == self.new.type_name()
            && self.old.str_keyword("format") == format;
        if holds || unchanged {
            return false;
        }
        let (o, n) = (self.old.keyword(kw).cloned(), self.new.keyword(kw).cloned());
        let before = if typed == "integer" {
            format!(
                "before 1.36 it truncates the bound to {}",
                numbers::go_trunc(bound)
                    .map_or_else(|| "an undefined integer".to_string(), |t| t.to_string())
            )
        } else {
            "before 1.36 it applies the bound as a plain number".to_string()
        };
        self.emit(
            check,
            Severity::Error,
            format!(
                "{kw} {} is not a value of {typed}: from Kubernetes 1.36 the API server rejects every value \
here (\"{kw} value must be of type {typed}\"); {before}; {TIGHTENED_FIX}",
                show(n.as_ref()),
            ),
            o.as_ref(),
            n.as_ref(),
        );
        true
    }

    /// Reports a tightened constraint: an error, unless every value the old
    /// schema allows at this node is one of a few (an enum) and each meets
    /// the new constraint, so no stored object can fail it.
    /// `refused_by` is the validation of NEW that refuses a failing value:
    /// an error names one such value the old schema allows, when the
    /// search finds one.
    #[allow(clippy::too_many_arguments)]
    fn tightened(
        &mut self,
        check: Check,
        what: String,
        failing: &str,
        old: Option<&Value>,
        new: Option<&Value>,
        refused_by: Rule,
        meets: impl Fn(&Value) -> bool,
    ) {
        let mut witness = None;
        let ratcheting = self.ratcheting();
        let (severity, message) = match self.old_values() {
            Some(values) if values.iter().all(meets) => (
                Severity::Info,
                format!(
                    "{what}: every value the old schema allows here ({}) meets it, so no stored object can fail it",
                    list(&values.iter().collect::<Vec<_>>())
                ),
            ),
            _ => {
                witness = witness::for_keyword(self.old, self.new, &[refused_by]);
                (
                    Severity::Error,
                    format!(
                        "{}: {failing} {TIGHTENED}{ratcheting}; {TIGHTENED_FIX}",
                        witness::after_change(&what, witness.as_ref())
                    ),
                )
            }
        };
        self.emit(check, severity, message, old, new);
        self.witnessed(witness);
    }

    /// The values the old schema allows at this node, when they are few:
    /// its `enum`, or the strings a const-like `pattern` (`^(A|B)$`)
    /// matches; and `null` when it is also nullable.
    fn old_values(&self) -> Option<Vec<Value>> {
        let mut values = match self.old.keyword("enum") {
            Some(e) if numbers::exact_enum(self.old.type_name(), e) => e.as_array()?.clone(),
            Some(_) => return None,
            None => pattern_language::finite_language(self.old.str_keyword("pattern")?)?
                .into_iter()
                .map(Value::String)
                .collect(),
        };
        if self.old.flag("nullable") {
            values.push(Value::Null);
        }
        Some(values)
    }

    /// `int32` on an integer or `float` on a number: from Kubernetes 1.36
    /// the server rejects values the format cannot hold. Info when the
    /// old bounds (or enum) keep every value within it.
    fn numeric_format(
        &mut self,
        c: &FieldCheck,
        numeric: NumericFormat,
        name: &str,
        o: Option<&Value>,
        n: Option<&Value>,
    ) {
        let what = format!(
            "format {} -> {}: from Kubernetes 1.36 the API server rejects values {name} cannot hold",
            show(o),
            show(n)
        );
        let bound = |kw: &str| self.old.keyword(kw).and_then(Value::as_number).cloned();
        let within_bounds = matches!(
            (bound("minimum"), bound("maximum")),
            (Some(lo), Some(hi)) if numeric.fits(&lo) && numeric.fits(&hi)
        );
        if within_bounds && self.old.keyword("enum").is_none() {
            self.emit(
                c.check,
                Severity::Info,
                format!(
                    "{what}, and the old minimum and maximum keep every value within it, so no stored \
object can fail it"
                ),
                o,
                n,
            );
            return;
        }
        let (o, n) = (o.cloned(), n.cloned());
        self.tightened(
            c.check,
            what,
            "objects whose value does not fit",
            o.as_ref(),
            n.as_ref(),
            Rule::Format,
            |v| v.as_number().is_some_and(|x| numeric.fits(x)),
        );
    }

    /// The strings the old node's `minLength`/`maxLength` allow, as a
    /// pattern (`^(?s:.){0,5}$`), when they bound it closely enough for an
    /// automaton.
    fn old_lengths_as_pattern(&self) -> Option<String> {
        if self.old.type_name() != Some("string") {
            return None;
        }
        let max = self.old.keyword("maxLength").and_then(Value::as_u64)?;
        let min = self
            .old
            .keyword("minLength")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        (max <= MAX_LENGTH_AS_PATTERN).then(|| format!("^(?s:.){{{min},{max}}}$"))
    }

    /// `bound` is the keyword the flag makes exclusive, named in the message.
    pub(super) fn exclusive(&mut self, c: &FieldCheck, bound: &str) {
        for &kw in c.keywords {
            if self.old.flag(kw) || !self.new.flag(kw) {
                continue;
            }
            let limit = self.new.keyword(bound).cloned();
            let limit_text = show(limit.as_ref());
            let limit = limit.as_ref().and_then(Value::as_f64);
            self.tightened(
                c.check,
                format!("{kw} turned on: the value {limit_text} itself is no longer allowed"),
                "objects holding it",
                Some(&Value::Bool(false)),
                Some(&Value::Bool(true)),
                refusing_rule(bound),
                |v| v.as_f64().is_some_and(|x| Some(x) != limit),
            );
        }
    }

    pub(super) fn multiple_of(&mut self, c: &FieldCheck) {
        if !self.changed("multipleOf") {
            return;
        }
        let (o, n) = self.kw("multipleOf");
        let (o, n) = (o.cloned(), n.cloned());
        let (of, nf) = (
            o.as_ref().and_then(Value::as_f64),
            n.as_ref().and_then(Value::as_f64),
        );
        if let Some(b) = nf
            && self.bound_outside_type(c.check, "multipleOf", b)
        {
            return;
        }
        // Every integer is a multiple of 1 (as an int, and as a float).
        let integers_only =
            self.old.type_name() == Some("integer") || self.old.flag("x-kubernetes-int-or-string");
        let safe = match (of, nf) {
            (_, None) => true,
            (Some(a), Some(b)) => multiple_implies(self.new.type_name(), a, b),
            (None, Some(b)) => integers_only && b == 1.0,
        };
        if safe {
            if of.is_none() && integers_only {
                self.emit(
                    c.check,
                    Severity::Info,
                    format!(
                        "multipleOf {} added: the old schema allows only integers, and every integer is a \
multiple of 1, so no stored object can fail it",
                        show(n.as_ref())
                    ),
                    o.as_ref(),
                    n.as_ref(),
                );
            }
            return;
        }
        let divisor = nf.unwrap_or_default();
        self.tightened(
            c.check,
            format!("multipleOf {} -> {}", show(o.as_ref()), show(n.as_ref())),
            "objects whose value is not a multiple of the new one",
            o.as_ref(),
            n.as_ref(),
            Rule::MultipleOf,
            // Before and from 1.36: natively (the factor truncated) for
            // integers, and as a plain number.
            |v| {
                v.as_number().is_some_and(|x| {
                    let x = GoNum::of(x);
                    numbers::multiple_of(x, divisor, true)
                        && numbers::multiple_of(x, divisor, false)
                })
            },
        );
    }

    pub(super) fn pattern(&mut self, c: &FieldCheck) {
        if !self.changed("pattern") {
            return;
        }
        let (o, n) = self.kw("pattern");
        let (o, n) = (o.cloned(), n.cloned());
        let (what, failing) = match (&o, &n) {
            (None, Some(p)) => (
                format!("pattern {} added", short(p, 60)),
                "objects whose value does not match",
            ),
            (Some(_), None) => {
                if !self.ctx.options.pattern_allow_removal {
                    self.emit(
                        c.check,
                        Severity::Error,
                        format!(
                            "pattern {} removed (pattern.allowRemoval is false)",
                            show(o.as_ref())
                        ),
                        o.as_ref(),
                        n.as_ref(),
                    );
                }
                return;
            }
            _ => (
                format!(
                    "pattern changed {} -> {}",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                "objects whose value matches only the old pattern",
            ),
        };
        let new_pattern = n.as_ref().and_then(Value::as_str).unwrap_or_default();
        // A new pattern that matches every string the old one matches
        // (within the old length bounds) rejects nothing stored. Without
        // an old pattern, the old lengths alone say what is stored.
        let old_language = match o.as_ref().and_then(Value::as_str) {
            Some(p) => Some(p.to_string()),
            None => self.old_lengths_as_pattern(),
        };
        if let Some(old_pattern) = old_language
            && self.old_values().is_none()
            && pattern_language::includes(&old_pattern, new_pattern) == Some(true)
        {
            self.emit(
                c.check,
                Severity::Info,
                format!(
                    "{what}: the new pattern matches every string the old one matches, so no stored object can fail it"
                ),
                o.as_ref(),
                n.as_ref(),
            );
            return;
        }
        let matcher = compile_go(new_pattern).ok();
        self.tightened(
            c.check,
            what,
            failing,
            o.as_ref(),
            n.as_ref(),
            Rule::Pattern,
            |v| matches!((&matcher, v.as_str()), (Some(m), Some(s)) if m.is_match(s)),
        );
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
        let new_format = new_format.to_string();
        let new_format = new_format.as_str();
        let (o, n) = (o.cloned(), n.cloned());
        if let Some(numeric) = NumericFormat::parse(new_format, u32::MAX)
            && matches!(
                (self.new.type_name(), numeric),
                (Some("integer"), NumericFormat::Int32) | (Some("number"), NumericFormat::Float)
            )
        {
            self.numeric_format(c, numeric, new_format, o.as_ref(), n.as_ref());
            return;
        }
        let validated = Format::is_validated(new_format);
        let (severity, message) = if validated {
            // Judged as the newest server validates it: a format only
            // newer servers check makes a value fail there, not pass.
            let format = Format::parse(new_format, u32::MAX);
            self.tightened(
                c.check,
                format!(
                    "format {} -> {}: the API server validates {new_format}",
                    show(o.as_ref()),
                    show(n.as_ref())
                ),
                "objects whose value does not conform",
                o.as_ref(),
                n.as_ref(),
                Rule::Format,
                |v| matches!((format, v.as_str()), (Some(f), Some(s)) if f.is_valid(s)),
            );
            return;
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

/// The validation of the new schema that refuses a value outside a bound
/// keyword (or the bound an exclusive flag applies to).
fn refusing_rule(kw: &str) -> Rule {
    match kw {
        "minimum" | "exclusiveMinimum" => Rule::Minimum,
        "maximum" | "exclusiveMaximum" => Rule::Maximum,
        "minLength" => Rule::MinLength,
        "maxLength" => Rule::MaxLength,
        "minItems" => Rule::MinItems,
        "maxItems" => Rule::MaxItems,
        "minProperties" => Rule::MinProperties,
        _ => Rule::MaxProperties,
    }
}

/// The longest `maxLength` read as a pattern for an inclusion test: the
/// automaton grows with it.
const MAX_LENGTH_AS_PATTERN: u64 = 64;

/// Whether every value a `multipleOf: old` accepts on a node of type `ty`
/// is accepted by `multipleOf: new`, on every supported server: an int64
/// value is checked against the factor truncated (before 1.36, or from
/// 1.36 when the factor is an integer), anything else as a float up to a
/// relative error (where the quotient of the two factors being an integer
/// is what carries over).
fn multiple_implies(ty: Option<&str>, old: f64, new: f64) -> bool {
    if new <= 0.0 {
        return false;
    }
    let quotient = old / new;
    let float_ok = numbers::is_json_integer(quotient) && quotient.round() != 0.0;
    let int_ok = match (numbers::go_trunc(old), numbers::go_trunc(new)) {
        // The old factor accepted no integer at all.
        (Some(a), _) if a <= 0 => true,
        (Some(a), Some(b)) if b > 0 => a % b == 0,
        _ => false,
    };
    // Integers only: the native check alone; anything else may be either.
    if ty == Some("integer") {
        int_ok
    } else {
        float_ok && int_ok
    }
}
