//! Witnesses for "can fail" verdicts: a concrete value that the old schema
//! accepts at a node and that a new constraint there refuses.
//!
//! An error that names such a value can be checked by a reviewer in a
//! second, and the soundness test (`tests/live/soundness.rs`) holds every
//! one to the real API server. The search is concrete, not a proof: values
//! are generated from the old node, biased to its boundaries (each enum
//! value, the bounds and just inside them, the empty and the longest
//! string, multi-byte characters, empty and full lists and maps, optional
//! fields absent and present) and to the literals of the rule, and each is
//! judged by the project's own object validator: OLD must accept it, as
//! written, on the oldest and the newest server whose rules are checked
//! against a real one, and NEW (its defaults applied, unknown fields
//! pruned, as the server reads the value through NEW) must refuse it for
//! the reason the finding is about, on both servers. For a tightened bound
//! the nearest value past NEW's bound is tried first, and failing it the
//! candidate nearest to that bound wins: `65536` for `maximum: 65535`
//! reads at a glance where 2^53 does not. No witness found says nothing:
//! the error stands as it is.
//!
//! The search is bounded by work, not by the clock, so a report is the
//! same on a busy machine: at most [`MAX_CANDIDATES`] candidates of at
//! most [`MAX_WORK`] JSON nodes in all, fields below the node varied only
//! where the rule names them, and the schemas cut to the fields the
//! candidates hold (and those with a default) before they are compiled,
//! so a rule on a large `spec` costs what its candidates cost. It judges
//! the node alone, so what an ancestor's rule demands of it is not seen;
//! rules at the root (which read `metadata`) and nodes with a property
//! named like the root's own fields are not searched.

use serde_json::{Map, Number, Value, json};

use crate::kube_version::KubeVersion;
use crate::object_validation::{Rule, ValidationOutcome, Validator};
use crate::re2::language::finite_language;
use crate::schema::sorted_map::SortedMap;
use crate::schema::{AdditionalProperties, Schema};

/// Candidates judged per search at most.
pub(crate) const MAX_CANDIDATES: usize = 64;
/// JSON nodes in all candidates of one search at most: what bounds its
/// time (each node is validated four times at most).
pub(crate) const MAX_WORK: usize = 20_000;
/// Variants of a value below the node kept while building candidates.
const VARIANTS: usize = 8;
/// Levels below the node that candidates vary.
const MAX_DEPTH: usize = 4;
/// The longest string, list or map built to reach a maximum.
const MAX_SIZE: u64 = 256;
/// Properties of the node itself varied (those the rule names first);
/// below it, only the properties the rule names are.
const MAX_PROPERTIES: usize = 12;

/// A value OLD accepts at `old` and the added CEL rule `rule` (its entry
/// of `x-kubernetes-validations`, as written) refuses at `new`: false, or
/// an evaluation error the server reports as a refusal (a missing key).
pub(crate) fn for_rule(old: &Schema, new: &Schema, rule: &Value) -> Option<Value> {
    let text = rule.get("rule").and_then(Value::as_str)?;
    // `new` with this rule as its only one at the node: a violation at the
    // node is then this rule's.
    let only_rule = |n: &mut Schema| {
        n.keywords.insert(
            "x-kubernetes-validations".to_string(),
            Value::Array(vec![rule.clone()]),
        );
    };
    search(old, new, &Hints::of(text), Nearest::NONE, only_rule, |n| {
        n.violations
            .iter()
            .any(|v| v.rule == Rule::Cel && v.schema_path.segments().is_empty())
    })
}

/// A value OLD accepts at `old` and NEW refuses at `new` by one of
/// `refused_by`, at the node itself. For a bound (`maximum`, `maxLength`,
/// `minItems`, ...) the nearest value past NEW's bound comes first
/// (`65536` for `maximum: 65535`, a string of 9 characters for `maxLength:
/// 8`), and failing that the candidate nearest to it: what a reviewer
/// checks in a second.
pub(crate) fn for_keyword(old: &Schema, new: &Schema, refused_by: &[Rule]) -> Option<Value> {
    let hints = Hints::default();
    let bound = refused_by.iter().find_map(|r| Bound::of(new, *r));
    let first = bound
        .as_ref()
        .map(|b| Generator { hints: &hints }.past(old, b))
        .unwrap_or_default();
    search(
        old,
        new,
        &hints,
        Nearest { first, bound },
        |_| {},
        |n| {
            n.violations
                .iter()
                .any(|v| v.path.is_empty() && refused_by.contains(&v.rule))
        },
    )
}

/// NEW's bound at a node: which side, and on what it counts.
#[derive(Debug, Clone, Copy)]
struct Bound {
    /// What the bound is on.
    measure: Measure,
    /// The bound as written.
    value: f64,
    /// A maximum (refused above it), or a minimum.
    upper: bool,
    /// `exclusiveMaximum`/`exclusiveMinimum`: the bound itself is refused.
    exclusive: bool,
}

/// What a [`Bound`] counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Measure {
    /// An `integer`'s value.
    Integer,
    /// A `number`'s value.
    Number,
    /// A string's length in code points.
    Length,
    /// A list's items.
    Items,
    /// A map's entries.
    Properties,
}

impl Bound {
    /// The bound of `new` that `rule` refuses by, if it is one.
    fn of(new: &Schema, rule: Rule) -> Option<Bound> {
        let (keyword, exclusive, upper, measure) = match rule {
            Rule::Maximum | Rule::Minimum => {
                let upper = rule == Rule::Maximum;
                let measure = match new.type_name()? {
                    "integer" => Measure::Integer,
                    "number" => Measure::Number,
                    _ => return None,
                };
                let (kw, ex) = if upper {
                    ("maximum", "exclusiveMaximum")
                } else {
                    ("minimum", "exclusiveMinimum")
                };
                (kw, new.flag(ex), upper, measure)
            }
            Rule::MaxLength => ("maxLength", false, true, Measure::Length),
            Rule::MinLength => ("minLength", false, false, Measure::Length),
            Rule::MaxItems => ("maxItems", false, true, Measure::Items),
            Rule::MinItems => ("minItems", false, false, Measure::Items),
            Rule::MaxProperties => ("maxProperties", false, true, Measure::Properties),
            Rule::MinProperties => ("minProperties", false, false, Measure::Properties),
            _ => return None,
        };
        let value = new.keyword(keyword)?.as_f64().filter(|v| v.is_finite())?;
        Some(Bound {
            measure,
            value,
            upper,
            exclusive,
        })
    }

    /// How far past the bound `v` is (0 for the nearest refused value);
    /// `None` for a value it does not measure.
    fn distance(&self, v: &Value) -> Option<f64> {
        let measured = match (self.measure, v) {
            (Measure::Integer | Measure::Number, Value::Number(n)) => n.as_f64()?,
            (Measure::Length, Value::String(s)) => s.chars().count() as f64,
            (Measure::Items, Value::Array(a)) => a.len() as f64,
            (Measure::Properties, Value::Object(o)) => o.len() as f64,
            _ => return None,
        };
        Some((measured - self.value).abs())
    }

    /// The nearest size past a length or count bound: one more than a
    /// maximum, one fewer than a minimum (none below 0).
    fn size_past(&self) -> Option<u64> {
        let b = u64::try_from(clamp_i64(self.value)?).ok()?;
        let n = if self.upper {
            b.checked_add(1)?
        } else {
            b.checked_sub(1)?
        };
        (n <= NEAREST_MAX).then_some(n)
    }

    /// The nearest numbers past the bound: the first integer it refuses
    /// (also the first multiple of OLD's `multipleOf`, which OLD may
    /// demand), or for a `number` the bound itself when exclusive, else
    /// one step of its last decimal past it (`2.5` -> `2.6`, `65535` ->
    /// `65536`).
    fn numbers_past(&self, old: &Schema) -> Vec<Value> {
        let b = self.value;
        let mut out = Vec::new();
        match self.measure {
            Measure::Integer => {
                let first = match (self.upper, self.exclusive) {
                    (true, true) => b.ceil(),
                    (true, false) => b.floor() + 1.0,
                    (false, true) => b.floor(),
                    (false, false) => b.ceil() - 1.0,
                };
                let Some(first) = clamp_i64(first) else {
                    return out;
                };
                out.push(Value::from(first));
                if let Some(step) = old
                    .keyword("multipleOf")
                    .and_then(Value::as_f64)
                    .filter(|m| *m >= 1.0 && m.fract() == 0.0)
                    .and_then(clamp_i64)
                {
                    let below = first.div_euclid(step).saturating_mul(step);
                    let multiple = if self.upper && below < first {
                        below.saturating_add(step)
                    } else {
                        below
                    };
                    out.push(Value::from(multiple));
                }
            }
            Measure::Number if self.exclusive => out.push(number(b)),
            Measure::Number => {
                let written = b.to_string();
                if written.contains(['e', 'E']) {
                    return out;
                }
                let decimals = written.split_once('.').map_or(0, |(_, d)| d.len()).min(15);
                let scale = 10f64.powi(decimals as i32);
                let scaled = (b * scale).round() + if self.upper { 1.0 } else { -1.0 };
                if let Ok(x) = format!("{:.decimals$}", scaled / scale).parse::<f64>() {
                    out.push(number(x));
                }
            }
            _ => {}
        }
        out
    }
}

/// The longest string or list a nearest witness is built with: past it,
/// the search's own candidates read as well.
const NEAREST_MAX: u64 = 4096;

/// Candidates of [`for_keyword`] that come before the search's own, and
/// how the search ranks its own: the nearest to NEW's bound wins, not the
/// first.
struct Nearest {
    /// Tried first, in order; the first that holds is the witness.
    first: Vec<Value>,
    /// NEW's bound, when there is one: the search's own candidates that
    /// hold are ranked by their distance to it.
    bound: Option<Bound>,
}

impl Nearest {
    /// No bound: the first candidate that holds.
    const NONE: Nearest = Nearest {
        first: Vec::new(),
        bound: None,
    };
}

/// A witness in a message, after what changed: `` (e.g. `10` passes the
/// old schema and fails it)``, cut to 60 characters, with its size when
/// counting it by eye would take longer than reading it (`"aaaaaaaaa"`,
/// 9 characters). Nothing when there is none, or when its text holds a
/// backtick (the report splits a message outside code spans).
pub(crate) fn shown(witness: Option<&Value>) -> String {
    let Some(w) = witness else {
        return String::new();
    };
    let text = crate::json::short(w, 60);
    if text.contains('`') {
        return String::new();
    }
    let plural = crate::text::plural;
    let size = match w {
        Value::String(t) if t.chars().count() > 3 => {
            Some(plural(t.chars().count(), "character", "characters"))
        }
        Value::Array(a) if a.len() > 3 => Some(plural(a.len(), "item", "items")),
        Value::Object(o) if o.len() > 3 => Some(plural(o.len(), "entry", "entries")),
        _ => None,
    };
    match size {
        Some(size) => format!(" (e.g. `{text}`, {size}, passes the old schema and fails it)"),
        None => format!(" (e.g. `{text}` passes the old schema and fails it)"),
    }
}

/// `what` (a finding's "what changed", which may carry a clause of its
/// own after `: `) with the witness right after the change, where the
/// report's table row shows it.
pub(crate) fn after_change(what: &str, witness: Option<&Value>) -> String {
    match crate::text::split_message(what) {
        Some((head, tail)) => format!("{head}{}: {tail}", shown(witness)),
        None => format!("{what}{}", shown(witness)),
    }
}

/// The servers a witness must hold on: the newest whose rules this build
/// knows (tried first), and the oldest held to a real API server.
const MINORS: [u32; 2] = [KubeVersion::NEWEST.minor, KubeVersion::CHECKED_SINCE.minor];

fn search(
    old: &Schema,
    new: &Schema,
    hints: &Hints,
    nearest: Nearest,
    adjust_new: impl Fn(&mut Schema),
    refused: impl Fn(&ValidationOutcome) -> bool,
) -> Option<Value> {
    if has_root_names(old) || has_root_names(new) {
        return None;
    }
    let first = nearest.first.len();
    let mut candidates = nearest.first;
    let generated = Generator { hints }.values(old, 0, MAX_CANDIDATES);
    for v in generated {
        if !candidates.contains(&v) {
            candidates.push(v);
        }
    }
    let mut work = 0;
    candidates.retain(|c| {
        work += nodes(c);
        work <= MAX_WORK
    });
    let seen: Vec<&Value> = candidates.iter().collect();
    let old = trimmed(old, &seen);
    let mut new = trimmed(new, &seen);
    adjust_new(&mut new);
    // Compiled for the second server only once a candidate holds on the
    // first, and only when the two servers may judge these schemas apart.
    let minors = if version_sensitive(&old) || version_sensitive(&new) {
        &MINORS[..]
    } else {
        &MINORS[..1]
    };
    let mut compiled: Vec<(Validator, Validator)> = Vec::new();
    // The best candidate that holds so far, with its distance.
    let mut best: Option<(f64, &Value)> = None;
    for (index, candidate) in candidates.iter().enumerate() {
        let mut holds = true;
        for (i, minor) in minors.iter().enumerate() {
            if compiled.len() <= i {
                compiled.push((
                    Validator::new(&old, *minor).ok()?,
                    Validator::new(&new, *minor).ok()?,
                ));
            }
            let (o, n) = &compiled[i];
            // As written is as stored: nothing pruned or defaulted by OLD.
            if !o.validate(candidate).is_clean() || !refused(&n.validate(candidate)) {
                holds = false;
                break;
            }
        }
        if !holds {
            continue;
        }
        // The nearest candidates are nearest by construction; the others
        // are ranked when there is a bound to be near.
        let Some(bound) = nearest.bound.filter(|_| index >= first) else {
            return Some(candidate.clone());
        };
        let d = bound.distance(candidate).unwrap_or(f64::INFINITY);
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, candidate));
        }
    }
    best.map(|(_, v)| v.clone())
}

/// Whether the validator's verdicts on `s` may depend on the server's
/// version: what it gates on the version is formats and the typed reading
/// of a bound that is not an integer on an `integer` (the combinators are
/// not looked into, so they count as sensitive).
fn version_sensitive(s: &Schema) -> bool {
    let fractional = |kw: &str| {
        s.keyword(kw)
            .and_then(Value::as_f64)
            .is_some_and(|b| !crate::openapi::numbers::integer_bound(b))
    };
    let here = s.keyword("format").is_some()
        || ["allOf", "anyOf", "oneOf", "not"]
            .iter()
            .any(|kw| s.keyword(kw).is_some())
        || (s.type_name() == Some("integer")
            && ["minimum", "maximum", "multipleOf"]
                .iter()
                .any(|kw| fractional(kw)));
    here || s.properties.values().any(version_sensitive)
        || s.items.as_deref().is_some_and(version_sensitive)
        || matches!(&s.additional_properties, Some(AdditionalProperties::Schema(a)) if version_sensitive(a))
}

/// JSON nodes in `v`.
fn nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(nodes).sum(),
        Value::Object(o) => o.values().map(nodes).sum(),
        _ => 0,
    }
}

/// `s` with only the properties some value of `seen` holds, and those
/// with a default (absent, they are read as it), at every level: what
/// validating `seen` needs, whatever the size of `s`.
fn trimmed(s: &Schema, seen: &[&Value]) -> Schema {
    let mut properties = SortedMap::new();
    for (name, child) in s.properties.iter() {
        let below: Vec<&Value> = seen
            .iter()
            .filter_map(|v| v.as_object()?.get(name))
            .collect();
        if !below.is_empty() {
            properties.insert(name.clone(), trimmed(child, &below));
        } else if child.keyword("default").is_some() {
            properties.insert(name.clone(), child.clone());
        }
    }
    let items = s.items.as_ref().map(|items| {
        let below: Vec<&Value> = seen.iter().filter_map(|v| v.as_array()).flatten().collect();
        Box::new(trimmed(items, &below))
    });
    let additional_properties = match &s.additional_properties {
        Some(AdditionalProperties::Schema(a)) => {
            let below: Vec<&Value> = seen
                .iter()
                .filter_map(|v| v.as_object())
                .flat_map(|o| o.iter())
                .filter(|(k, _)| !s.properties.contains_key(k.as_str()))
                .map(|(_, v)| v)
                .collect();
            Some(AdditionalProperties::Schema(Box::new(trimmed(a, &below))))
        }
        other => other.clone(),
    };
    Schema {
        keywords: s.keywords.clone(),
        properties,
        items,
        additional_properties,
    }
}

/// The validator reads `apiVersion`, `kind` and `metadata` of the value it
/// is given as the object's own: a node with such a property cannot be
/// judged alone.
fn has_root_names(s: &Schema) -> bool {
    ["apiVersion", "kind", "metadata"]
        .iter()
        .any(|n| s.properties.contains_key(*n))
}

/// What a rule's text suggests to try: its literals, and the names it
/// reads (their fields are varied first).
#[derive(Default)]
struct Hints {
    strings: Vec<String>,
    numbers: Vec<f64>,
    names: Vec<String>,
}

impl Hints {
    fn of(rule: &str) -> Hints {
        let mut h = Hints::default();
        let chars: Vec<char> = rule.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' || c == '"' {
                let end = chars[i + 1..]
                    .iter()
                    .position(|d| *d == c)
                    .map_or(chars.len(), |p| i + 1 + p);
                let s: String = chars[i + 1..end].iter().collect();
                if !s.contains('\\') && h.strings.len() < 8 && !h.strings.contains(&s) {
                    h.strings.push(s);
                }
                i = end + 1;
            } else if c.is_ascii_digit() && (i == 0 || !is_ident(chars[i - 1])) {
                let end = chars[i..]
                    .iter()
                    .position(|d| !(d.is_ascii_digit() || *d == '.'))
                    .map_or(chars.len(), |p| i + p);
                let s: String = chars[i..end].iter().collect();
                if let Ok(n) = s.trim_end_matches('.').parse::<f64>()
                    && h.numbers.len() < 8
                {
                    h.numbers.push(n);
                }
                i = end;
            } else if c == '.' && chars.get(i + 1).is_some_and(|d| is_ident(*d)) {
                let end = chars[i + 1..]
                    .iter()
                    .position(|d| !is_ident(*d))
                    .map_or(chars.len(), |p| i + 1 + p);
                let s: String = chars[i + 1..end].iter().collect();
                if !h.names.contains(&s) {
                    h.names.push(s);
                }
                i = end;
            } else {
                i += 1;
            }
        }
        // A rule about addresses is refused by an address: a hostname
        // pattern allows dotted digits.
        if ["isIP(", "ip(", "cidr(", "isCIDR("]
            .iter()
            .any(|f| rule.contains(f))
        {
            for ip in ["192.0.2.1", "2001:db8::1"] {
                if !h.strings.iter().any(|s| s == ip) {
                    h.strings.push(ip.to_string());
                }
            }
        }
        h
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

struct Generator<'h> {
    hints: &'h Hints,
}

impl Generator<'_> {
    /// Up to `cap` values to try for `s`: the first its plainest (what the
    /// other fields of a candidate take), the rest its boundaries.
    fn values(&self, s: &Schema, depth: usize, cap: usize) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(d) = s.keyword("default") {
            push(&mut out, d.clone());
        }
        if let Some(Value::Array(e)) = s.keyword("enum") {
            for v in e {
                push(&mut out, v.clone());
            }
        } else if s.flag("x-kubernetes-int-or-string") {
            self.int_or_string(&mut out);
        } else {
            match s.type_name() {
                Some("integer") => self.integers(s, &mut out),
                Some("number") => self.numbers(s, &mut out),
                Some("string") => self.strings(s, &mut out),
                Some("boolean") => {
                    push(&mut out, Value::Bool(false));
                    push(&mut out, Value::Bool(true));
                }
                Some("array") => self.lists(s, depth, &mut out),
                Some("object")
                    if matches!(
                        s.additional_properties,
                        Some(AdditionalProperties::Schema(_))
                    ) =>
                {
                    self.maps(s, depth, &mut out)
                }
                Some("object") => self.objects(s, depth, cap, &mut out),
                _ => push(&mut out, json!({})),
            }
        }
        if s.flag("nullable") {
            push(&mut out, Value::Null);
        }
        out.truncate(cap);
        out
    }

    /// The plainest value of `s` that its own keywords allow, as far as
    /// they can be read: what the other fields of a candidate hold.
    fn base(&self, s: &Schema, depth: usize) -> Value {
        if let Some(d) = s.keyword("default") {
            return d.clone();
        }
        match s.type_name() {
            Some("array") if s.keyword("enum").is_none() => {
                let min = s.keyword("minItems").and_then(Value::as_u64).unwrap_or(0);
                let item = match &s.items {
                    Some(i) if depth < MAX_DEPTH => self.base(i, depth + 1),
                    _ => json!({}),
                };
                Value::Array(std::iter::repeat_n(item, min.min(MAX_SIZE) as usize).collect())
            }
            Some("object") if s.keyword("enum").is_none() => {
                let mut o = Map::new();
                if depth < MAX_DEPTH {
                    for (name, child) in s.properties.iter() {
                        // A default is what the server stores for an absent
                        // field: as written is then as stored.
                        if required(s).contains(&name.as_str())
                            || child.keyword("default").is_some()
                        {
                            o.insert(name.clone(), self.base(child, depth + 1));
                        }
                    }
                }
                Value::Object(o)
            }
            _ => self
                .values(s, MAX_DEPTH, 1)
                .into_iter()
                .next()
                .unwrap_or_else(|| plain(s)),
        }
    }

    /// The values nearest past `bound` (NEW's) built of what `old` holds:
    /// see [`Bound::numbers_past`]; a string of one character, a list of OLD's
    /// plainest items (and of distinct ones, for sets), a map of plain
    /// entries, one longer than a maximum or one shorter than a minimum.
    fn past(&self, old: &Schema, bound: &Bound) -> Vec<Value> {
        if bound.measure == Measure::Integer || bound.measure == Measure::Number {
            return bound.numbers_past(old);
        }
        let Some(n) = bound.size_past() else {
            return Vec::new();
        };
        let n = n as usize;
        let mut out = Vec::new();
        match bound.measure {
            Measure::Length => {
                // `a`s, or a character of a value OLD's generator makes
                // (a digit, for a pattern of digits) when OLD refuses `a`.
                let mut chars = vec!['a'];
                for v in self.values(old, 0, MAX_CANDIDATES) {
                    if let Some(c) = v.as_str().and_then(|t| t.chars().next())
                        && !chars.contains(&c)
                        && chars.len() < VARIANTS
                    {
                        chars.push(c);
                    }
                }
                for c in chars {
                    out.push(Value::String(std::iter::repeat_n(c, n).collect()));
                }
            }
            Measure::Items => {
                let (base, mut items) = match &old.items {
                    Some(i) => (self.base(i, 1), self.values(i, 1, VARIANTS)),
                    None => (json!({}), Vec::new()),
                };
                out.push(Value::Array(vec![base.clone(); n]));
                items.sort_by_key(|v| nodes(v) * 64 + v.to_string().len().min(63));
                let mut distinct: Vec<Value> = items.into_iter().take(n).collect();
                distinct.resize(n, base);
                push(&mut out, Value::Array(distinct));
            }
            Measure::Properties => {
                if let Some(AdditionalProperties::Schema(values)) = &old.additional_properties {
                    // The shortest value OLD's generator makes, as its maps do.
                    let mut fillers = self.values(values, 1, VARIANTS);
                    fillers.sort_by_key(|v| nodes(v) * 64 + v.to_string().len().min(63));
                    let plain = fillers
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| self.base(values, 1));
                    let map: Map<String, Value> =
                        (0..n).map(|k| (format!("k{k}"), plain.clone())).collect();
                    out.push(Value::Object(map));
                }
            }
            Measure::Integer | Measure::Number => {}
        }
        out
    }

    fn int_or_string(&self, out: &mut Vec<Value>) {
        for v in [json!(0), json!(1), json!("1"), json!("50%"), json!("a")] {
            push(out, v);
        }
        for n in &self.hints.numbers {
            push(out, number(*n));
        }
        for s in &self.hints.strings {
            push(out, Value::String(s.clone()));
        }
    }

    fn integers(&self, s: &Schema, out: &mut Vec<Value>) {
        let bound = |kw: &str, exclusive: &str, step: i64| -> Option<i64> {
            let written = s.keyword(kw)?.as_f64()?;
            let b = clamp_i64(if step > 0 {
                written.ceil()
            } else {
                written.floor()
            })?;
            Some(if s.flag(exclusive) && written == b as f64 {
                b.saturating_add(step)
            } else {
                b
            })
        };
        let lo = bound("minimum", "exclusiveMinimum", 1);
        let hi = bound("maximum", "exclusiveMaximum", -1);
        let step = s
            .keyword("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m >= 1.0 && m.fract() == 0.0)
            .and_then(clamp_i64)
            .unwrap_or(1);
        // The multiples of `step` next to `n`, inside the bounds.
        let near = |n: i64, out: &mut Vec<Value>| {
            let below = n.div_euclid(step).saturating_mul(step);
            for m in [below, below.saturating_add(step)] {
                if lo.is_none_or(|l| m >= l) && hi.is_none_or(|h| m <= h) {
                    push(out, Value::from(m));
                }
            }
        };
        near(lo.or(hi).unwrap_or(0), out);
        if let Some(h) = hi {
            near(h, out);
            near(h.saturating_sub(step), out);
        }
        if let Some(l) = lo {
            near(l.saturating_add(step), out);
        }
        for n in &self.hints.numbers {
            if let Some(n) = clamp_i64(n.trunc()) {
                for m in [n, n.saturating_add(1), n.saturating_sub(1)] {
                    near(m, out);
                }
            }
        }
        for n in [0, 1, -1, 1 << 53, (1 << 53) + 1, i64::MAX, i64::MIN] {
            near(n, out);
        }
    }

    fn numbers(&self, s: &Schema, out: &mut Vec<Value>) {
        let lo = s.keyword("minimum").and_then(Value::as_f64);
        let hi = s.keyword("maximum").and_then(Value::as_f64);
        let mut tries = Vec::new();
        if let Some(l) = lo {
            tries.extend([l, l + 0.5, l + 1.0]);
        }
        if let Some(h) = hi {
            tries.extend([h, h - 0.5, h - 1.0]);
        }
        for n in &self.hints.numbers {
            tries.extend([*n, n + 0.5, n - 0.5, n + 1.0]);
        }
        tries.extend([0.0, 0.5, 1.0, -0.5, 1.5, 1e15, -1e15]);
        let within = |x: f64| {
            let above = lo.is_none_or(|l| {
                if s.flag("exclusiveMinimum") {
                    x > l
                } else {
                    x >= l
                }
            });
            let below = hi.is_none_or(|h| {
                if s.flag("exclusiveMaximum") {
                    x < h
                } else {
                    x <= h
                }
            });
            above && below
        };
        for x in tries.into_iter().filter(|x| within(*x)) {
            push(out, number(x));
        }
    }

    fn strings(&self, s: &Schema, out: &mut Vec<Value>) {
        if let Some(p) = s.str_keyword("pattern")
            && let Some(words) = finite_language(p)
        {
            for w in words.into_iter().take(VARIANTS) {
                push(out, Value::String(w));
            }
            return;
        }
        let min = s.keyword("minLength").and_then(Value::as_u64).unwrap_or(0);
        let max = s.keyword("maxLength").and_then(Value::as_u64);
        if let Some(sample) = s.str_keyword("format").and_then(format_sample) {
            push(out, Value::String(sample.to_string()));
        }
        let fill = |c: char, n: u64| -> Value {
            Value::String(std::iter::repeat_n(c, n.min(MAX_SIZE) as usize).collect())
        };
        push(out, fill('a', min.max(1).min(max.unwrap_or(u64::MAX))));
        // A rule's numbers are often lengths (`self.size() < 5`).
        for n in &self.hints.numbers {
            if let Some(n) = clamp_i64(n.trunc()).and_then(|n| u64::try_from(n).ok()) {
                for len in [n, n.saturating_add(1), n.saturating_sub(1)] {
                    if len >= min && max.is_none_or(|m| len <= m) {
                        push(out, fill('a', len));
                    }
                }
            }
        }
        if let Some(m) = max {
            push(out, fill('a', m));
            push(out, fill('é', m));
            push(out, fill('a', m.saturating_sub(1)));
        } else {
            push(out, fill('a', MAX_SIZE));
        }
        push(out, fill('a', min));
        for h in &self.hints.strings {
            push(out, Value::String(h.clone()));
            push(out, Value::String(format!("{h}a")));
        }
        for v in ["a b", "a\nb", "0", "-1", "A", "é"] {
            push(out, json!(v));
        }
    }

    fn lists(&self, s: &Schema, depth: usize, out: &mut Vec<Value>) {
        let (base, items) = match &s.items {
            Some(i) if depth < MAX_DEPTH => {
                (self.base(i, depth + 1), self.values(i, depth + 1, VARIANTS))
            }
            _ => (json!({}), Vec::new()),
        };
        let min = s.keyword("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = s.keyword("maxItems").and_then(Value::as_u64);
        // `n` items: all plain, and distinct where the variants allow (the
        // shortest first, so a witness stays readable).
        let mut fillers: Vec<&Value> = items.iter().collect();
        fillers.sort_by_key(|v| nodes(v) * 64 + v.to_string().len().min(63));
        let plain_of_len = |n: u64| Value::Array(vec![base.clone(); n.min(MAX_SIZE) as usize]);
        let of_len = |n: u64| -> Value {
            let n = n.min(MAX_SIZE) as usize;
            let mut list: Vec<Value> = fillers.iter().take(n).map(|v| (*v).clone()).collect();
            list.resize(n, base.clone());
            Value::Array(list)
        };
        push(out, plain_of_len(min));
        push(out, plain_of_len(min.max(1)));
        push(out, of_len(min));
        push(out, of_len(min.max(1)));
        // Each variant of an item, the others plain.
        for it in &items {
            let mut one = vec![it.clone()];
            one.resize(min.clamp(1, MAX_SIZE) as usize, base.clone());
            push(out, Value::Array(one));
        }
        if let Some(m) = max {
            push(out, plain_of_len(m));
            push(out, of_len(m));
        }
        push(out, of_len(2.max(min)));
    }

    fn maps(&self, s: &Schema, depth: usize, out: &mut Vec<Value>) {
        let values = match &s.additional_properties {
            Some(AdditionalProperties::Schema(v)) if depth < MAX_DEPTH => {
                self.values(v, depth + 1, VARIANTS)
            }
            _ => vec![json!({})],
        };
        let mut keys: Vec<String> = self.hints.strings.clone();
        let max = s.keyword("maxProperties").and_then(Value::as_u64);
        let min = s
            .keyword("minProperties")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let want = max.unwrap_or(2).max(min).min(MAX_SIZE) as usize;
        let mut k = 0;
        while keys.len() < want.max(2) {
            keys.push(format!("k{k}"));
            k += 1;
        }
        let of = |keys: &[String], vs: &mut dyn Iterator<Item = &Value>| -> Value {
            Value::Object(
                keys.iter()
                    .zip(vs)
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        };
        let n = |m: u64| (m.min(MAX_SIZE) as usize).min(keys.len());
        let mut fillers: Vec<&Value> = values.iter().collect();
        fillers.sort_by_key(|v| nodes(v) * 64 + v.to_string().len().min(63));
        let plain = fillers.first().map(|v| (*v).clone()).unwrap_or(json!({}));
        push(out, of(&keys[..n(min)], &mut std::iter::repeat(&plain)));
        push(out, of(&keys[..n(min)], &mut values.iter().cycle()));
        for v in &values {
            push(out, of(&keys[..n(min.max(1))], &mut std::iter::repeat(v)));
        }
        if let Some(m) = max {
            push(out, of(&keys[..n(m)], &mut std::iter::repeat(&plain)));
            push(out, of(&keys[..n(m)], &mut values.iter().cycle()));
        }
    }

    /// Stops once `cap` candidates are built: a wide node's fields each
    /// have many values, and only the first `cap` candidates are judged.
    fn objects(&self, s: &Schema, depth: usize, cap: usize, out: &mut Vec<Value>) {
        let required = required(s);
        let Value::Object(base) = self.base(s, depth) else {
            return;
        };
        // The fields the rule names first, then the required ones; below
        // the node only those the rule names.
        let mut names: Vec<&String> = s
            .properties
            .keys()
            .filter(|n| depth == 0 || self.hints.names.contains(n))
            .collect();
        names.sort_by_key(|n| {
            (
                !self.hints.names.contains(n),
                !required.contains(&n.as_str()),
            )
        });
        names.truncate(if depth < MAX_DEPTH { MAX_PROPERTIES } else { 0 });
        let child_cap = if depth == 0 { 2 * VARIANTS } else { VARIANTS };
        let varied: Vec<(&String, Vec<Value>)> = names
            .into_iter()
            .filter_map(|n| {
                let child = s.properties.get(n.as_str())?;
                Some((n, self.values(child, depth + 1, child_cap)))
            })
            .collect();
        push(out, Value::Object(base.clone()));
        // One field the rule names at a time at each of its values, then
        // every field at its j-th value (sums, sizes of several), then the
        // other fields one at a time.
        let one_at_a_time = |named: bool, out: &mut Vec<Value>| {
            for (name, vs) in varied
                .iter()
                .filter(|(n, _)| self.hints.names.contains(n) == named)
            {
                for v in vs {
                    if out.len() >= cap {
                        return;
                    }
                    let mut o = base.clone();
                    o.insert((*name).clone(), v.clone());
                    push(out, Value::Object(o));
                }
            }
        };
        one_at_a_time(true, out);
        for j in 1..4 {
            let mut o = base.clone();
            for (name, vs) in &varied {
                if let Some(v) = vs.get(j).or(vs.last()) {
                    o.insert((*name).clone(), v.clone());
                }
            }
            push(out, Value::Object(o));
        }
        one_at_a_time(false, out);
    }
}

/// The names in `required`.
fn required(s: &Schema) -> Vec<&str> {
    match s.keyword("required") {
        Some(Value::Array(r)) => r.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The plainest value of a schema, without looking deeper.
fn plain(s: &Schema) -> Value {
    if let Some(d) = s.keyword("default") {
        return d.clone();
    }
    if let Some(Value::Array(e)) = s.keyword("enum")
        && let Some(first) = e.first()
    {
        return first.clone();
    }
    match s.type_name() {
        Some("integer" | "number") => json!(0),
        Some("string") => json!(""),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => json!({}),
    }
}

/// Adds `v` unless it is there already; the list is capped well above
/// what one search judges.
fn push(out: &mut Vec<Value>, v: Value) {
    if out.len() < MAX_CANDIDATES * 4 && !out.contains(&v) {
        out.push(v);
    }
}

fn clamp_i64(f: f64) -> Option<i64> {
    // `i64::MAX as f64` rounds up to 2^63, which is out of range.
    (f.is_finite() && f >= i64::MIN as f64 && f < i64::MAX as f64).then_some(f as i64)
}

/// A JSON number: an integer when `x` is one (as YAML writes it).
fn number(x: f64) -> Value {
    match clamp_i64(x) {
        Some(i) if i as f64 == x => Value::from(i),
        _ => Number::from_f64(x).map_or(Value::Null, Value::Number),
    }
}

/// A value of a format the API server validates.
fn format_sample(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" | "datetime" => "2006-01-02T15:04:05Z",
        "date" => "2006-01-02",
        "uuid" => "123e4567-e89b-12d3-a456-426614174000",
        "byte" => "YWJj",
        "duration" => "1h",
        "ipv4" => "10.0.0.1",
        "ipv6" => "::1",
        "cidr" => "10.0.0.0/8",
        "mac" => "00:00:5e:00:53:01",
        "hostname" => "a.example.com",
        "email" => "a@example.com",
        "uri" => "https://example.com",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(v: Value) -> Schema {
        Schema::from_value(&v).expect("a schema")
    }

    fn sized() -> Value {
        json!({"type": "object", "properties": {
            "size": {"type": "integer", "minimum": 0, "maximum": 10},
            "name": {"type": "string", "maxLength": 3}}})
    }

    fn with_rule(mut s: Value, rule: &str) -> (Value, Value) {
        let entry = json!({"rule": rule});
        s["x-kubernetes-validations"] = json!([entry.clone()]);
        (s, entry)
    }

    #[test]
    fn a_rule_the_old_bounds_allow_to_fail_is_shown_failing_at_the_bound() {
        let (new, rule) = with_rule(sized(), "!has(self.size) || self.size < 10");
        let w = for_rule(&schema(sized()), &schema(new), &rule);
        assert_eq!(w, Some(json!({"size": 10})));
    }

    #[test]
    fn a_rule_the_old_bounds_imply_has_no_witness() {
        let (new, rule) = with_rule(sized(), "!has(self.size) || self.size <= 10");
        assert_eq!(for_rule(&schema(sized()), &schema(new), &rule), None);
    }

    #[test]
    fn a_missing_field_the_rule_reads_is_a_witness() {
        // The server refuses the object with "no such key".
        let (new, rule) = with_rule(sized(), "self.size >= 0");
        assert_eq!(
            for_rule(&schema(sized()), &schema(new), &rule),
            Some(json!({}))
        );
    }

    #[test]
    fn multi_byte_strings_within_max_length_are_tried() {
        let (new, rule) = with_rule(sized(), "!has(self.name) || self.name.matches('^[a-z]*$')");
        let w = for_rule(&schema(sized()), &schema(new), &rule);
        assert_eq!(w, Some(json!({"name": "ééé"})));
    }

    #[test]
    fn a_new_default_is_read_through_new_before_the_rule() {
        let old = json!({"type": "object", "properties": {
            "level": {"type": "integer", "enum": [1, 3, 5]}}});
        let (mut new, rule) = with_rule(old.clone(), "self.level > 0");
        new["properties"]["level"] = json!({"type": "integer", "enum": [0, 1, 3, 5], "default": 0});
        // Without `level` the old schema stores nothing; NEW reads 0.
        assert_eq!(for_rule(&schema(old), &schema(new), &rule), Some(json!({})));
    }

    #[test]
    fn values_an_old_rule_refuses_are_no_witnesses() {
        let (old, _) = with_rule(sized(), "!has(self.size) || self.size != 10");
        let (new, rule) = with_rule(sized(), "!has(self.size) || self.size < 9");
        // 10 fails the new rule but not the old schema; 9 is next.
        assert_eq!(
            for_rule(&schema(old), &schema(new), &rule),
            Some(json!({"size": 9}))
        );
    }

    /// The witness of `rule` between `old` and `new`.
    fn witness(old: Value, new: Value, rule: Rule) -> Option<Value> {
        for_keyword(&schema(old), &schema(new), &[rule])
    }

    #[test]
    fn a_lowered_maximum_is_shown_with_the_value_past_the_new_one() {
        let old = json!({"type": "integer", "maximum": 10});
        let new = json!({"type": "integer", "maximum": 5});
        assert_eq!(witness(old, new, Rule::Maximum), Some(json!(6)));
    }

    #[test]
    fn an_added_maximum_is_shown_with_the_next_integer() {
        let new = json!({"type": "integer", "maximum": 65535});
        let old = json!({"type": "integer"});
        assert_eq!(witness(old, new, Rule::Maximum), Some(json!(65536)));
    }

    #[test]
    fn an_exclusive_bound_is_shown_with_the_bound_itself() {
        let old = json!({"type": "integer", "minimum": 0, "maximum": 65535});
        let new = json!({"type": "integer", "minimum": 0, "maximum": 65535,
            "exclusiveMaximum": true});
        assert_eq!(witness(old.clone(), new, Rule::Maximum), Some(json!(65535)));
        let new = json!({"type": "integer", "minimum": 0, "exclusiveMinimum": true,
            "maximum": 65535});
        assert_eq!(witness(old, new, Rule::Minimum), Some(json!(0)));
    }

    #[test]
    fn an_added_minimum_is_shown_with_the_integer_below_it() {
        let old = json!({"type": "integer"});
        let new = json!({"type": "integer", "minimum": 1});
        assert_eq!(witness(old, new, Rule::Minimum), Some(json!(0)));
    }

    #[test]
    fn a_number_bound_is_passed_by_one_step_of_its_last_decimal() {
        let old = json!({"type": "number"});
        let bounded = |kw: &str, b: f64| json!({"type": "number", kw: b});
        assert_eq!(
            witness(old.clone(), bounded("maximum", 2.5), Rule::Maximum),
            Some(json!(2.6))
        );
        assert_eq!(
            witness(old.clone(), bounded("maximum", 100.0), Rule::Maximum),
            Some(json!(101))
        );
        assert_eq!(
            witness(old.clone(), bounded("minimum", 0.05), Rule::Minimum),
            Some(json!(0.04))
        );
        let exclusive = json!({"type": "number", "maximum": 2.5, "exclusiveMaximum": true});
        assert_eq!(witness(old, exclusive, Rule::Maximum), Some(json!(2.5)));
    }

    #[test]
    fn lengths_are_shown_one_character_past_the_new_bound() {
        let old = json!({"type": "string", "maxLength": 20});
        let new = json!({"type": "string", "maxLength": 8});
        assert_eq!(witness(old, new, Rule::MaxLength), Some(json!("aaaaaaaaa")));
        let old = json!({"type": "string"});
        let new = json!({"type": "string", "minLength": 3});
        assert_eq!(witness(old, new, Rule::MinLength), Some(json!("aa")));
    }

    #[test]
    fn item_counts_are_shown_one_item_past_the_new_bound() {
        let old = json!({"type": "array", "items": {"type": "integer"}});
        let new = json!({"type": "array", "maxItems": 2, "items": {"type": "integer"}});
        assert_eq!(
            witness(old.clone(), new, Rule::MaxItems),
            Some(json!([0, 0, 0]))
        );
        let new = json!({"type": "array", "minItems": 2, "items": {"type": "integer"}});
        assert_eq!(witness(old, new, Rule::MinItems), Some(json!([0])));
    }

    #[test]
    fn a_set_past_its_new_max_items_holds_distinct_items() {
        let set = |extra: Value| {
            let mut s = json!({"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "integer", "minimum": 0}});
            if let (Some(s), Some(extra)) = (s.as_object_mut(), extra.as_object()) {
                s.extend(extra.clone());
            }
            s
        };
        let w = witness(set(json!({})), set(json!({"maxItems": 1})), Rule::MaxItems)
            .expect("a witness");
        let items = w.as_array().expect("a list");
        assert_eq!(items.len(), 2, "{w}");
        assert_ne!(items[0], items[1], "{w}");
    }

    #[test]
    fn entry_counts_of_a_map_are_shown_one_entry_past_the_new_bound() {
        let map = |extra: Value| {
            let mut s = json!({"type": "object", "additionalProperties": {"type": "string"}});
            if let (Some(s), Some(extra)) = (s.as_object_mut(), extra.as_object()) {
                s.extend(extra.clone());
            }
            s
        };
        assert_eq!(
            witness(
                map(json!({})),
                map(json!({"maxProperties": 2})),
                Rule::MaxProperties
            ),
            Some(json!({"k0": "", "k1": "", "k2": ""}))
        );
        assert_eq!(
            witness(
                map(json!({})),
                map(json!({"minProperties": 2})),
                Rule::MinProperties
            ),
            Some(json!({"k0": ""}))
        );
    }

    #[test]
    fn where_the_old_schema_refuses_the_next_value_the_nearest_it_accepts_is_shown() {
        // 8 is not a multiple of 5: 10 is the nearest OLD accepts.
        let old = json!({"type": "integer", "maximum": 10, "multipleOf": 5});
        let new = json!({"type": "integer", "maximum": 7, "multipleOf": 5});
        assert_eq!(witness(old, new, Rule::Maximum), Some(json!(10)));
        // Below 65535 (exclusive), nothing is past 65534: no witness.
        let old = json!({"type": "integer", "maximum": 65535, "exclusiveMaximum": true});
        let new = json!({"type": "integer", "maximum": 65534});
        assert_eq!(witness(old, new, Rule::Maximum), None);
        // A pattern that refuses `a`s: the string nearest to the bound
        // that OLD accepts.
        let old = json!({"type": "string", "pattern": "^[0-9]+$"});
        let new = json!({"type": "string", "pattern": "^[0-9]+$", "maxLength": 1});
        let w = witness(old, new, Rule::MaxLength).expect("a witness");
        let text = w.as_str().expect("a string");
        assert!(
            text.chars().all(|c| c.is_ascii_digit()) && text.len() == 2,
            "{w}"
        );
    }

    #[test]
    fn a_raised_min_items_is_shown_with_an_empty_list() {
        let old = json!({"type": "array", "items": {"type": "string"}});
        let new = json!({"type": "array", "minItems": 1, "items": {"type": "string"}});
        assert_eq!(
            for_keyword(&schema(old), &schema(new), &[Rule::MinItems]),
            Some(json!([]))
        );
    }

    #[test]
    fn a_new_pattern_is_shown_with_a_string_within_the_old_length() {
        let old = json!({"type": "string", "maxLength": 4});
        let new = json!({"type": "string", "maxLength": 4, "pattern": "^[a-z]*$"});
        assert_eq!(
            for_keyword(&schema(old), &schema(new), &[Rule::Pattern]),
            Some(json!("éééé"))
        );
    }

    #[test]
    fn a_multiple_of_on_integers_is_shown_with_an_odd_value() {
        let old = json!({"type": "integer", "minimum": 0});
        let new = json!({"type": "integer", "minimum": 0, "multipleOf": 2});
        assert_eq!(
            for_keyword(&schema(old), &schema(new), &[Rule::MultipleOf]),
            Some(json!(1))
        );
    }

    #[test]
    fn an_unrefusing_change_has_no_witness() {
        let old = json!({"type": "string", "enum": ["a", "b"]});
        let new = json!({"type": "string", "enum": ["a", "b"], "maxLength": 1});
        assert_eq!(
            for_keyword(&schema(old), &schema(new), &[Rule::MaxLength]),
            None
        );
    }

    #[test]
    fn a_hostname_pattern_that_allows_dotted_digits_is_shown_failing_is_ip() {
        // Gateway API's TLSRoute hostnames, and the rule v1.5 added.
        let item = json!({"type": "string", "minLength": 1, "maxLength": 253,
            "pattern": "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"});
        let old = json!({"type": "array", "maxItems": 16, "items": item});
        let (new, rule) = with_rule(old.clone(), "self.all(h, !isIP(h))");
        let w = for_rule(&schema(old), &schema(new), &rule).expect("an address is a witness");
        assert!(w.to_string().contains("192.0.2.1"), "{w}");
    }

    #[test]
    fn rule_hints_are_its_literals_and_names() {
        let h = Hints::of("self.mode != 'Turbo' && self.replicas <= 3");
        assert_eq!(h.strings, vec!["Turbo".to_string()]);
        assert_eq!(h.numbers, vec![3.0]);
        assert_eq!(h.names, vec!["mode".to_string(), "replicas".to_string()]);
    }

    #[test]
    fn the_message_names_the_witness_cut_short() {
        assert_eq!(shown(None), "");
        assert_eq!(
            shown(Some(&json!({"size": 10}))),
            " (e.g. `{\"size\":10}` passes the old schema and fails it)"
        );
        assert_eq!(shown(Some(&json!("a`b"))), "");
        assert_eq!(
            shown(Some(&json!("aaaaaaaaa"))),
            " (e.g. `\"aaaaaaaaa\"`, 9 characters, passes the old schema and fails it)"
        );
        assert_eq!(
            shown(Some(&json!([0, 0, 0, 0]))),
            " (e.g. `[0,0,0,0]`, 4 items, passes the old schema and fails it)"
        );
    }
}
