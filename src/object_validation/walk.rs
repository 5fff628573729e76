//! The structural pass: decoding effects (pruning, dropped nulls, defaults)
//! and the OpenAPI value validations, in one walk over object and schema.
//!
//! The walk only descends where the schema describes the data, so its depth is
//! bounded by the schema's. Paths are built only for findings.

use serde_json::{Map, Value};

use super::list_type::{duplicates, key_object};
use super::node::{Additional, CompiledNode, ListType, Types};
use super::trail::Trail;
use super::{NotEvaluated, Pruned, PrunedKind, Rule, ValidationOutcome, Violation};
use crate::openapi::numbers::{self, GoNum};

/// Where failures go.
pub(crate) enum Sink<'o> {
    /// Top level: into the outcome, ratchetable per rule.
    Main(&'o mut Vec<Violation>),
    /// Inside `allOf`: collected, then re-tagged.
    Collect(Vec<Violation>),
    /// Inside `anyOf`/`oneOf`/`not`: only whether something failed.
    Count(usize),
}

impl Sink<'_> {
    fn fail(&mut self, rule: Rule, trail: &Trail, msg: impl FnOnce(&str) -> String) {
        let make = |ratchetable: bool, msg: String| Violation {
            path: trail.concrete(),
            schema_path: trail.schema_path(),
            rule,
            message: msg,
            ratchetable,
        };
        let ratchetable = rule != Rule::EmbeddedResource;
        match self {
            Sink::Main(v) => {
                let m = msg(&trail.display());
                v.push(make(ratchetable, m));
            }
            Sink::Collect(v) => {
                let m = msg(&trail.display());
                v.push(make(ratchetable, m));
            }
            Sink::Count(n) => *n += 1,
        }
    }

    fn push(&mut self, v: Violation) {
        match self {
            Sink::Main(out) => out.push(v),
            Sink::Collect(out) => out.push(v),
            Sink::Count(n) => *n += 1,
        }
    }

    fn failed(&self) -> bool {
        match self {
            Sink::Main(v) => !v.is_empty(),
            Sink::Collect(v) => !v.is_empty(),
            Sink::Count(n) => *n > 0,
        }
    }
}

/// A value for messages, as the API server prints it.
pub(crate) fn show(v: &Value) -> String {
    match v {
        Value::Object(_) => "\"object\"".to_string(),
        Value::Array(_) => "\"array\"".to_string(),
        Value::String(s) if s.chars().count() > 100 => {
            let cut: String = s.chars().take(100).collect();
            format!("{:?}", format!("{cut}..."))
        }
        other => other.to_string(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if is_integer(n) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON integers, and floats that are integral within ±2^53 (kube-openapi `isFloatInt`).
pub(crate) fn is_integer(n: &serde_json::Number) -> bool {
    if n.is_i64() || n.is_u64() {
        return true;
    }
    n.as_f64()
        .is_some_and(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
}

fn type_bit(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => Types::BOOLEAN,
        Value::Number(n) if is_integer(n) => Types::INTEGER,
        Value::Number(_) => Types::NUMBER,
        Value::String(_) => Types::STRING,
        Value::Array(_) => Types::ARRAY,
        Value::Object(_) => Types::OBJECT,
    }
}

fn fmt_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

/// The value the API server sees for property `k` of `obj` after decoding, by
/// the object's own schema `main`: pruned fields and dropped nulls are gone,
/// defaults are in.
pub(crate) fn effective<'a>(
    main: Option<&'a CompiledNode>,
    obj: &'a Map<String, Value>,
    k: &str,
) -> Option<&'a Value> {
    let Some(m) = main else {
        return obj.get(k);
    };
    match obj.get(k) {
        Some(v) => {
            if let Some(p) = m.properties.get(k) {
                if v.is_null() && !p.nullable {
                    return p.default.as_ref();
                }
                Some(v)
            } else {
                match &m.additional {
                    Additional::Schema(a) if v.is_null() && a.drops_null() => None,
                    Additional::Schema(_) | Additional::Any => Some(v),
                    Additional::Absent if m.preserve_unknown => Some(v),
                    Additional::Absent => None,
                }
            }
        }
        None => m.properties.get(k).and_then(|p| p.default.as_ref()),
    }
}

/// `enum`: the value must match one of its values as the server compares.
fn enum_check(node: &CompiledNode, v: &Value, trail: &Trail, sink: &mut Sink) {
    if let Some(values) = &node.enum_values
        && !values.iter().any(|e| numbers::enum_matches(v, e))
    {
        sink.fail(Rule::Enum, trail, |_| {
            let supported: Vec<String> = values.iter().map(Value::to_string).collect();
            format!(
                "Unsupported value: {}: supported values: {}",
                show(v),
                supported.join(", ")
            )
        });
    }
}

/// Type, enum, numeric, string and item-count checks; `false` when the type
/// is wrong (nothing else applies then).
fn value_checks(node: &CompiledNode, v: &Value, trail: &Trail, sink: &mut Sink) -> bool {
    if v.is_null() {
        if !node.nullable && (!node.types.any() || node.int_or_string) {
            sink.fail(Rule::Nullable, trail, |p| {
                format!(
                    "Invalid value: \"null\": {p} in body must be of type {}: \"null\"",
                    node.types.names()
                )
            });
        } else {
            // `nullable` lets a null past the type, not past an enum
            // without null (kube-apiserver 1.34: "Unsupported value:
            // null"; tests/live/soundness.rs found it).
            enum_check(node, v, trail, sink);
        }
        return false;
    }
    if !node.types.any() && !node.types.has(type_bit(v)) {
        sink.fail(Rule::Type, trail, |p| {
            format!(
                "Invalid value: \"{}\": {p} in body must be of type {}: \"{}\"",
                type_name(v),
                node.types.names(),
                type_name(v)
            )
        });
        return false;
    }
    enum_check(node, v, trail, sink);
    match v {
        Value::Number(n) => {
            if let Some(nf) = node.numeric_format
                && !nf.fits(n)
            {
                sink.fail(Rule::Format, trail, |p| {
                    format!(
                        "Invalid value: \"\": Checked value must be of type {} in {p}",
                        nf.describe()
                    )
                });
            }
            // From 1.36 a bound that is not a value of the node's type and
            // format fails every value here (it is still applied, as a
            // plain number); a bound that is one is applied natively.
            let native = |b: f64| match node.numeric_format {
                Some(nf) => nf.holds_bound(b),
                None => !node.integer_bounds || numbers::integer_bound(b),
            };
            if node.numeric_format.is_some() || node.integer_bounds {
                let typed = node
                    .numeric_format
                    .map_or("integer (default format)", |nf| nf.describe());
                let bounds = [
                    ("MultipleOf", node.multiple_of),
                    ("Minimum boundary", node.minimum.map(|b| b.value)),
                    ("Maximum boundary", node.maximum.map(|b| b.value)),
                ];
                for (what, bound) in bounds {
                    if let Some(b) = bound
                        && !native(b)
                    {
                        sink.fail(Rule::Format, trail, |p| {
                            format!(
                                "Invalid value: \"\": {what} value must be of type {typed} in {p}"
                            )
                        });
                    }
                }
            }
            let data = GoNum::of(n);
            if let Some(b) = node.minimum
                && !numbers::within(data, b.value, b.exclusive, false, native(b.value))
            {
                sink.fail(Rule::Minimum, trail, |p| {
                    let op = if b.exclusive {
                        "greater than"
                    } else {
                        "greater than or equal to"
                    };
                    format!(
                        "Invalid value: {n}: {p} in body should be {op} {}",
                        fmt_num(b.value)
                    )
                });
            }
            if let Some(b) = node.maximum
                && !numbers::within(data, b.value, b.exclusive, true, native(b.value))
            {
                sink.fail(Rule::Maximum, trail, |p| {
                    let op = if b.exclusive {
                        "less than"
                    } else {
                        "less than or equal to"
                    };
                    format!(
                        "Invalid value: {n}: {p} in body should be {op} {}",
                        fmt_num(b.value)
                    )
                });
            }
            // Like the server, an integer is checked against the factor
            // truncated to an integer (0.5 becomes 0 and fails), a float
            // up to a relative error.
            if let Some(m) = node.multiple_of
                && !numbers::multiple_of(data, m, native(m))
            {
                sink.fail(Rule::MultipleOf, trail, |p| {
                    format!(
                        "Invalid value: {n}: {p} in body should be a multiple of {}",
                        fmt_num(m)
                    )
                });
            }
        }
        Value::String(s) => {
            if node.min_length.is_some() || node.max_length.is_some() {
                let len = s.chars().count() as u64;
                if let Some(min) = node.min_length
                    && len < min
                {
                    sink.fail(Rule::MinLength, trail, |p| {
                        format!(
                            "Invalid value: {}: {p} in body should be at least {min} chars long",
                            show(v)
                        )
                    });
                }
                if let Some(max) = node.max_length
                    && len > max
                {
                    sink.fail(Rule::MaxLength, trail, |_| {
                        format!(
                            "Too long: {}: may not be more than {max} characters (has {len})",
                            show(v)
                        )
                    });
                }
            }
            if let Some(re) = &node.pattern {
                match re.is_match(s) {
                    Ok(true) => {}
                    Ok(false) => sink.fail(Rule::Pattern, trail, |p| {
                        format!(
                            "Invalid value: {}: {p} in body should match '{}'",
                            show(v),
                            re.as_str()
                        )
                    }),
                    // Go accepts the pattern but it is over our size budget:
                    // never counted as a match.
                    Err(why) => sink.fail(Rule::Pattern, trail, |p| {
                        format!(
                            "{p}: pattern '{}' could not be checked here: {why}",
                            re.as_str()
                        )
                    }),
                }
            }
            if let Some(f) = node.format
                && !f.is_valid(s)
            {
                sink.fail(Rule::Format, trail, |p| {
                    format!(
                        "Invalid value: {}: {p} in body must be of type {}: {}",
                        show(v),
                        f.name(),
                        show(v)
                    )
                });
            }
        }
        Value::Array(a) => {
            let len = a.len() as u64;
            if let Some(min) = node.min_items
                && len < min
            {
                sink.fail(Rule::MinItems, trail, |p| {
                    format!("Invalid value: {len}: {p} in body should have at least {min} items")
                });
            }
            if let Some(max) = node.max_items
                && len > max
            {
                sink.fail(Rule::MaxItems, trail, |_| {
                    format!("Too many: {len}: must have at most {max} items")
                });
            }
        }
        _ => {}
    }
    true
}

fn property_counts(node: &CompiledNode, count: usize, trail: &Trail, sink: &mut Sink) {
    let count = count as u64;
    if let Some(min) = node.min_properties
        && count < min
    {
        sink.fail(Rule::MinProperties, trail, |p| {
            format!("Invalid value: {count}: {p} in body should have at least {min} properties")
        });
    }
    if let Some(max) = node.max_properties
        && count > max
    {
        sink.fail(Rule::MaxProperties, trail, |_| {
            format!("Too many: {count}: must have at most {max} properties")
        });
    }
}

/// `allOf`/`anyOf`/`oneOf`/`not` on `v`; `main` is the value's own schema
/// node, which decides what decoding left of an object.
fn junctors(
    node: &CompiledNode,
    main: Option<&CompiledNode>,
    v: &Value,
    trail: &Trail,
    sink: &mut Sink,
    depth: usize,
) {
    for (i, b) in node.all_of.iter().enumerate() {
        let mut inner = Sink::Collect(Vec::new());
        branch(b, main, v, trail, &mut inner, depth + 1);
        if let Sink::Collect(found) = inner {
            for f in found {
                sink.push(Violation {
                    message: format!("allOf[{i}]: {}: {}", f.rule.id(), f.message),
                    rule: Rule::AllOf,
                    ..f
                });
            }
        }
    }
    let passes = |b: &CompiledNode| {
        let mut c = Sink::Count(0);
        branch(b, main, v, trail, &mut c, depth + 1);
        !c.failed()
    };
    if !node.any_of.is_empty() && !node.any_of.iter().any(passes) {
        sink.fail(Rule::AnyOf, trail, |p| {
            let mut reasons = Vec::new();
            for b in &node.any_of {
                let mut c = Sink::Collect(Vec::new());
                branch(b, main, v, trail, &mut c, depth + 1);
                if let Sink::Collect(found) = c
                    && let Some(f) = found.into_iter().next()
                {
                    reasons.push(f.message);
                }
            }
            format!(
                "Invalid value: {}: {p} in body must validate at least one schema (anyOf): {}",
                show(v),
                reasons.join("; ")
            )
        });
    }
    if !node.one_of.is_empty() {
        let matched = node.one_of.iter().filter(|b| passes(b)).count();
        if matched != 1 {
            sink.fail(Rule::OneOf, trail, |p| {
                format!(
                    "Invalid value: {}: {p} in body must validate one and only one schema (oneOf), {matched} matched",
                    show(v)
                )
            });
        }
    }
    if let Some(b) = &node.not
        && passes(b)
    {
        sink.fail(Rule::Not, trail, |p| {
            format!(
                "Invalid value: {}: {p} in body must not validate the schema (not)",
                show(v)
            )
        });
    }
}

/// A value against a junctor branch: value validations only, on the decoded
/// view of the value (`main` is its own schema node, when there is one).
fn branch(
    b: &CompiledNode,
    main: Option<&CompiledNode>,
    v: &Value,
    trail: &Trail,
    sink: &mut Sink,
    depth: usize,
) {
    if depth > super::node::MAX_DEPTH || !value_checks(b, v, trail, sink) {
        return;
    }
    match v {
        Value::Array(a) => {
            if let Some(items) = &b.items {
                let main_items = main.and_then(|m| m.items.as_deref());
                for (i, it) in a.iter().enumerate() {
                    branch(items, main_items, it, &trail.index(i), sink, depth + 1);
                }
            }
        }
        Value::Object(o) => {
            if b.min_properties.is_some() || b.max_properties.is_some() {
                let mut count = o.keys().filter(|k| effective(main, o, k).is_some()).count();
                if let Some(m) = main {
                    count += m
                        .properties
                        .iter()
                        .filter(|(k, p)| p.default.is_some() && !o.contains_key(*k))
                        .count();
                }
                property_counts(b, count, trail, sink);
            }
            for r in &b.required {
                if effective(main, o, r).is_none() {
                    sink.fail(Rule::Required, &trail.prop(r), |_| {
                        "Required value".to_string()
                    });
                }
            }
            for (k, bs) in &b.properties {
                if let Some(cv) = effective(main, o, k) {
                    let mp = main.and_then(|m| m.properties.get(k));
                    branch(bs, mp, cv, &trail.prop(k), sink, depth + 1);
                }
            }
            if let Additional::Schema(bs) = &b.additional {
                let ma = main.and_then(|m| match &m.additional {
                    Additional::Schema(a) => Some(&**a),
                    _ => None,
                });
                for (k, cv) in o {
                    if b.properties.contains_key(k) || effective(main, o, k).is_none() {
                        continue;
                    }
                    branch(bs, ma, cv, &trail.key(k), sink, depth + 1);
                }
            }
        }
        _ => {}
    }
    junctors(b, main, v, trail, sink, depth);
}

/// One key of a list-map item; a missing key takes its default (the server
/// defaults before it checks uniqueness), else it is absent.
fn map_key_part<'a>(
    item: &'a Value,
    k: &str,
    items: Option<&'a CompiledNode>,
) -> Option<&'a Value> {
    let Value::Object(o) = item else { return None };
    match o.get(k) {
        Some(v) if !v.is_null() => Some(v),
        _ => items
            .and_then(|p| p.properties.get(k))
            .and_then(|p| p.default.as_ref()),
    }
}

const ROOT_KEPT: [&str; 3] = ["apiVersion", "kind", "metadata"];

struct Walker<'o> {
    out: &'o mut ValidationOutcome,
}

impl Walker<'_> {
    fn pruned(&mut self, trail: &Trail, kind: PrunedKind) {
        self.out.pruned.push(Pruned {
            path: trail.concrete(),
            schema_path: trail.schema_path(),
            kind,
        });
    }

    fn node(&mut self, node: &CompiledNode, v: &Value, trail: &Trail, depth: usize, is_root: bool) {
        if depth > super::node::MAX_DEPTH {
            return;
        }
        if !value_checks(node, v, trail, &mut Sink::Main(&mut self.out.violations)) {
            return;
        }
        match v {
            Value::Object(o) => self.object(node, o, trail, depth, is_root),
            Value::Array(a) => self.array(node, a, trail, depth),
            _ => {}
        }
        junctors(
            node,
            Some(node),
            v,
            trail,
            &mut Sink::Main(&mut self.out.violations),
            depth,
        );
    }

    fn object(
        &mut self,
        node: &CompiledNode,
        o: &Map<String, Value>,
        trail: &Trail,
        depth: usize,
        is_root: bool,
    ) {
        let mut count = 0usize;
        for (k, child) in o {
            let ct = trail.prop(k);
            if is_root && ROOT_KEPT.contains(&k.as_str()) {
                count += 1;
                if k == "metadata" {
                    self.metadata(node, child, &ct, depth);
                } else if let Some(p) = node.properties.get(k)
                    && !child.is_null()
                {
                    self.node(p, child, &ct, depth + 1, false);
                }
                continue;
            }
            if let Some(p) = node.properties.get(k) {
                if child.is_null() && !p.nullable {
                    if p.default.is_some() {
                        count += 1;
                        self.pruned(&ct, PrunedKind::Defaulted);
                    } else {
                        self.pruned(&ct, PrunedKind::NullDropped);
                    }
                    continue;
                }
                count += 1;
                self.node(p, child, &ct, depth + 1, false);
                continue;
            }
            if node.embedded && ROOT_KEPT.contains(&k.as_str()) {
                count += 1;
                continue;
            }
            match &node.additional {
                Additional::Schema(a) => {
                    let kt = trail.key(k);
                    if child.is_null() && a.drops_null() {
                        self.pruned(&kt, PrunedKind::NullDropped);
                        continue;
                    }
                    count += 1;
                    self.node(a, child, &kt, depth + 1, false);
                }
                Additional::Any => count += 1,
                Additional::Absent if node.preserve_unknown => count += 1,
                Additional::Absent => self.pruned(&ct, PrunedKind::Unknown),
            }
        }
        if node.has_defaults {
            for (name, p) in &node.properties {
                if p.default.is_some() && !o.contains_key(name) {
                    count += 1;
                    self.pruned(&trail.prop(name), PrunedKind::Defaulted);
                }
            }
        }
        let mut sink = Sink::Main(&mut self.out.violations);
        for r in &node.required {
            let present = if is_root && ROOT_KEPT.contains(&r.as_str()) {
                o.contains_key(r)
            } else {
                effective(Some(node), o, r).is_some()
            };
            if !present {
                sink.fail(Rule::Required, &trail.prop(r), |_| {
                    "Required value".to_string()
                });
            }
        }
        property_counts(node, count, trail, &mut sink);
        if node.embedded {
            for key in ["apiVersion", "kind"] {
                let ok = matches!(o.get(key), Some(Value::String(s)) if !s.is_empty());
                if !ok {
                    sink.fail(Rule::EmbeddedResource, &trail.prop(key), |_| {
                        "Required value: must not be empty".to_string()
                    });
                }
            }
        }
    }

    /// Root `metadata`: only the `name`/`generateName` restrictions a CRD
    /// schema may declare; nothing is pruned.
    fn metadata(&mut self, root: &CompiledNode, meta: &Value, trail: &Trail, depth: usize) {
        let (Some(ms), Value::Object(m)) = (root.properties.get("metadata"), meta) else {
            return;
        };
        for f in ["name", "generateName"] {
            if let (Some(fs), Some(v)) = (ms.properties.get(f), m.get(f)) {
                self.node(fs, v, &trail.prop(f), depth + 2, false);
            }
        }
    }

    fn array(&mut self, node: &CompiledNode, a: &[Value], trail: &Trail, depth: usize) {
        if let Some(items) = &node.items {
            for (i, it) in a.iter().enumerate() {
                self.node(items, it, &trail.index(i), depth + 1, false);
            }
        }
        match &node.list_type {
            ListType::Atomic => {}
            ListType::Set => {
                let dups = duplicates(a.len(), |i, f| {
                    let v = &a[i];
                    f(&[if v.is_null() { None } else { Some(v) }])
                });
                let mut sink = Sink::Main(&mut self.out.violations);
                for i in dups {
                    if a[i].is_null() {
                        continue;
                    }
                    sink.fail(Rule::ListSet, &trail.index(i), |_| {
                        format!("Duplicate value: {}", a[i])
                    });
                }
            }
            ListType::Map(keys) if !keys.is_empty() => {
                let item_props = node.items.as_deref();
                let dups = duplicates(a.len(), |i, f| {
                    if !a[i].is_object() {
                        // Not a map item: it has no key (and is a type error).
                        f(&[]);
                        return;
                    }
                    let mut parts: [Option<&Value>; 4] = [None; 4];
                    if keys.len() <= 4 {
                        for (slot, k) in parts.iter_mut().zip(keys) {
                            *slot = map_key_part(&a[i], k, item_props);
                        }
                        f(&parts[..keys.len()]);
                    } else {
                        let parts: Vec<Option<&Value>> = keys
                            .iter()
                            .map(|k| map_key_part(&a[i], k, item_props))
                            .collect();
                        f(&parts);
                    }
                });
                let mut sink = Sink::Main(&mut self.out.violations);
                for i in dups {
                    if !a[i].is_object() {
                        continue;
                    }
                    sink.fail(Rule::ListMap, &trail.index(i), |_| {
                        let parts: Vec<Option<&Value>> = keys
                            .iter()
                            .map(|k| map_key_part(&a[i], k, item_props))
                            .collect();
                        format!("Duplicate value: {}", key_object(keys, &parts))
                    });
                }
            }
            ListType::Map(_) => {}
        }
    }
}

/// Validates `object` against `root`, structural pass then CEL.
pub(crate) fn validate(root: &CompiledNode, object: &Value, out: &mut ValidationOutcome) {
    Walker { out }.node(root, object, &Trail::ROOT, 0, true);
    if !root.has_rules {
        return;
    }
    if out.violations.iter().any(|v| v.rule.is_blocking()) {
        out.not_evaluated.push(NotEvaluated {
            schema_path: crate::schema::FieldPath::root(),
            rule: "*".to_string(),
            reason: "some validation rules were not checked because the object has type or enum errors (the API server skips them too)".to_string(),
        });
        return;
    }
    super::rules::evaluate(root, object, out);
}
