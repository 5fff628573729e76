//! `x-kubernetes-validations`: the fields of each rule, the `fieldPath`
//! it reports at, and whether its CEL compiles.
//!
//! Checked here: the rule and `messageExpression` parse (with the optional
//! syntax Kubernetes turns on), select only declared fields, evaluate to a
//! boolean (a string), stay within the server's cost limits, per rule and
//! per schema; `oldSelf` only where old and new values can be correlated,
//! `optionalOldSelf` only with `oldSelf`. Overload errors are left to the
//! server's dry run in `apply-check` (docs/api-server-rules.md says so).

use kube::core::cel::cel::common::ast::IdedExpr;
use serde_json::Value;

use crate::cel::env::check::{Ty, check, normalize};
use crate::cel::env::cost::estimate;
use crate::cel::env::decl::{Decl, max_cardinality};

use super::field::{FieldError, FieldPath};
use crate::openapi::props::{
    AdditionalProperties, Obj, additional_properties, arr_of, has_properties, property,
};

const REASONS: &[&str] = &[
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

fn has_newlines(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// The per-rule field checks the server runs before any CEL.
/// `structural` says whether the schema converts to a structural one: only
/// then can a `fieldPath` be resolved (the server accepts any otherwise).
pub fn rule_field_errors(s: &Obj, path: &FieldPath, structural: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, rule) in arr_of(s, "x-kubernetes-validations").iter().enumerate() {
        let Some(r) = rule.as_object() else { continue };
        let p = path.child("x-kubernetes-validations").index(i);
        let get = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (rule_src, msg, msg_expr) = (get("rule"), get("message"), get("messageExpression"));
        if rule_src.trim().is_empty() {
            errs.push(FieldError::required(
                p.child("rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            errs.push(FieldError::invalid(
                p.child("message"),
                Value::from(msg),
                "must be non-empty if specified",
            ));
        } else if has_newlines(msg.trim()) {
            errs.push(FieldError::invalid(
                p.child("message"),
                Value::from(msg),
                "must not contain line breaks",
            ));
        } else if has_newlines(rule_src.trim()) && msg.trim().is_empty() {
            errs.push(
                FieldError::required(
                    p.child("message"),
                    "message must be specified if rule contains line breaks",
                )
                .with_fix("add a message (or write the rule on one line)"),
            );
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                p.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = r.get("reason").and_then(Value::as_str)
            && !REASONS.contains(&reason)
        {
            errs.push(FieldError::not_supported(
                p.child("reason"),
                Value::from(reason),
                REASONS,
            ));
        }
        let fp = get("fieldPath");
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid(
                p.child("fieldPath"),
                Value::from(fp),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(FieldError::invalid(
                p.child("fieldPath"),
                Value::from(fp),
                "must not contain line breaks",
            ));
        }
        if !fp.is_empty() && structural && valid_field_path(fp, s, true).is_err() {
            errs.push(
                FieldError::invalid(p.child("fieldPath"), Value::from(fp), "must be a valid path")
                    .with_fix("fieldPath is relative to the node that holds the rule and must name declared fields (e.g. .spec.replicas or ['a.b'])"),
            );
        }
    }
    errs
}

/// Rule costs above this are refused (`StaticEstimatedCostLimit`).
pub const RULE_COST_LIMIT: u64 = 10_000_000;
/// The rules of one schema may add up to this
/// (`StaticEstimatedCRDCostLimit`).
pub const SCHEMA_COST_LIMIT: u64 = 100_000_000;

/// The running total of a schema's rule costs, with the rules that
/// contribute most (`TotalCost`).
#[derive(Default)]
pub struct TotalCost {
    pub total: u64,
    /// At most 4, each at least 1% of the schema limit, most expensive
    /// first.
    pub most_expensive: Vec<(FieldPath, u64)>,
}

impl TotalCost {
    fn observe(&mut self, path: FieldPath, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < SCHEMA_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

/// What the cost limits need to know about the node being compiled.
pub struct CostScope<'t> {
    /// How often the node's rules can run per object: `None` below a list
    /// or map without `maxItems`/`maxProperties`.
    pub cardinality: Option<u64>,
    /// The version's schema is unchanged from the stored CRD: per-rule
    /// limits are not enforced (`suppressPerExpressionCost`).
    pub suppress_per_expression: bool,
    pub total: &'t std::cell::RefCell<TotalCost>,
    /// The server version judged against.
    pub kube: super::KubeVersion,
    /// The stored CRD's rules and message expressions, if an update.
    pub stored_expressions: Option<&'t foldhash::HashSet<&'t str>>,
}

impl CostScope<'_> {
    /// Whose CEL libraries `text` may use: the server's own for a rule the
    /// stored CRD already has, its compatibility version's for a new one.
    fn libraries_for(&self, text: &str) -> super::KubeVersion {
        if self.stored_expressions.is_some_and(|s| s.contains(text)) {
            self.kube
        } else {
            self.kube.for_new_expressions()
        }
    }
}

/// `getCostErrorMessage`.
pub fn cost_message(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// The cost of one expression times how often it runs
/// (`getExpressionCost`, with `multiplyWithOverflowGuard`).
fn expression_cost(max: u64, cardinality: u64) -> u64 {
    if max == 0 {
        0
    } else {
        max.saturating_mul(cardinality)
    }
}

/// What checking and estimating an expression found.
struct Compiled {
    /// Its cost times how often it runs.
    cost: u64,
    /// The bounds that would lower it.
    unbounded: Vec<(String, &'static str)>,
    result: ResultKind,
    /// A call no overload accepts.
    no_overload: Option<String>,
}

/// Type-checks and estimates `expr` for a node declared as `decl`.
fn compile(
    expr: &IdedExpr,
    decl: Decl<'_>,
    optional_old_self: bool,
    cardinality: u64,
    minor: u32,
) -> Compiled {
    let mut next = 1u64 << 40;
    let e = normalize(expr, &mut next);
    let checked = check(&e, Ty::of(decl), optional_old_self);
    let est = estimate(&e, &checked, decl, minor);
    Compiled {
        cost: expression_cost(est.cost.max, cardinality),
        unbounded: est.unbounded,
        result: ResultKind::of(&checked.ty(e.id)),
        no_overload: checked.no_overload.into_iter().next(),
    }
}

/// What an expression's static type says about its result, where the
/// checker is sure.
#[derive(PartialEq, Eq)]
enum ResultKind {
    Bool,
    String,
    /// Some other definite type.
    Other,
    /// Dynamic or not typed here: no verdict.
    Unsure,
}

impl ResultKind {
    fn of(t: &Ty<'_>) -> ResultKind {
        match t {
            Ty::Bool => ResultKind::Bool,
            Ty::String => ResultKind::String,
            Ty::Dyn | Ty::Unknown => ResultKind::Unsure,
            _ => ResultKind::Other,
        }
    }
}

/// The fix for a rule over budget: the bounds it lacks.
fn cost_fix(unbounded: &[(String, &'static str)], cardinality: Option<u64>) -> String {
    let mut parts: Vec<String> = unbounded
        .iter()
        .take(4)
        .map(|(p, k)| format!("{k} on {p}"))
        .collect();
    if cardinality.is_none() {
        parts.push("maxItems/maxProperties on the list or map above this node (the rule runs once per element)".into());
    }
    if parts.is_empty() {
        "simplify the rule".into()
    } else {
        format!("declare {}", parts.join(", "))
    }
}

/// Parse errors, type errors, `oldSelf` placement, `optionalOldSelf` and
/// the cost limits, per rule.
pub fn compile_errors(
    s: &Obj,
    path: &FieldPath,
    uncorrelatable: Option<&FieldPath>,
    resource_root: bool,
    scope: &CostScope<'_>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let decl = Decl::of(
        s,
        resource_root
            || s.get("x-kubernetes-embedded-resource")
                .and_then(Value::as_bool)
                == Some(true),
    )
    .map(|d| d.judged_by(scope.kube.minor));
    let cardinality = decl.as_ref().map(|d| {
        scope
            .cardinality
            .unwrap_or_else(|| max_cardinality(d.min_size()))
    });
    for (i, rule) in arr_of(s, "x-kubernetes-validations").iter().enumerate() {
        let Some(r) = rule.as_object() else { continue };
        let p = path.child("x-kubernetes-validations").index(i);
        let src = r.get("rule").and_then(Value::as_str).unwrap_or("");
        let optional_old_self = r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true);
        let parsed = parse(src);
        let uses_old_self = match parsed.as_ref() {
            Ok(expr) => {
                if let Some(why) = crate::cel::env::types::compile_problems(
                    expr,
                    s,
                    resource_root,
                    scope.libraries_for(src),
                    scope.kube,
                )
                .first()
                {
                    errs.push(
                        FieldError::invalid(
                            p.child("rule"),
                            rule.clone(),
                            format!("compilation failed: {why}"),
                        )
                        .with_fix("select only fields the schema declares at that node (names with - . / are escaped: foo-bar is foo__dash__bar), call only functions of the libraries new rules may use, and give constant patterns, durations and timestamps that parse"),
                    );
                } else if let (Some(decl), Some(card)) = (&decl, cardinality) {
                    let Compiled {
                        cost,
                        unbounded,
                        result,
                        no_overload,
                    } = compile(expr, *decl, optional_old_self, card, scope.kube.minor);
                    if let Some(why) = no_overload {
                        errs.push(
                            FieldError::invalid(
                                p.child("rule"),
                                rule.clone(),
                                format!("compilation failed: ERROR: <input>: {why}"),
                            )
                            .with_fix("give each function and operator values of the types it takes (the message names the types the server sees; dyn(x) makes a value dynamic)"),
                        );
                        continue;
                    }
                    if !scope.suppress_per_expression && cost > RULE_COST_LIMIT {
                        errs.push(
                            FieldError::forbidden(
                                p.child("rule"),
                                cost_message("estimated rule cost", cost, RULE_COST_LIMIT),
                            )
                            .with_fix_owned(cost_fix(&unbounded, scope.cardinality)),
                        );
                    }
                    scope.total.borrow_mut().observe(p.child("rule"), cost);
                    if result != ResultKind::Bool && result != ResultKind::Unsure {
                        errs.push(
                            FieldError::invalid(
                                p.child("rule"),
                                rule.clone(),
                                "cel expression must evaluate to a bool",
                            )
                            .with_fix("a rule is a condition: compare the value (self.x == 'a'), do not return it"),
                        );
                    }
                }
                expr.references().has_variable("oldSelf")
            }
            Err(e) => {
                errs.push(
                    FieldError::invalid(
                        p.child("rule"),
                        rule.clone(),
                        format!("compilation failed: {e}"),
                    )
                    .with_fix("fix the CEL syntax"),
                );
                false
            }
        };
        if let Some(me) = r.get("messageExpression").and_then(Value::as_str)
            && !me.trim().is_empty()
        {
            let parsed_me = parse(me);
            let why = match parsed_me.as_ref() {
                Err(e) => Some(e.clone()),
                Ok(expr) => crate::cel::env::types::compile_problems(
                    expr,
                    s,
                    resource_root,
                    scope.libraries_for(me),
                    scope.kube,
                )
                .into_iter()
                .next(),
            };
            if let Some(why) = why {
                errs.push(FieldError::invalid(
                    p.child("messageExpression"),
                    rule.clone(),
                    format!("messageExpression compilation failed: {why}"),
                ));
            } else if let (Ok(expr), Some(decl)) = (parsed_me.as_ref(), &decl) {
                // The server holds a messageExpression to its own cost, not
                // multiplied by how often the rule runs.
                let Compiled {
                    cost,
                    unbounded,
                    result,
                    no_overload,
                } = compile(expr, *decl, optional_old_self, 1, scope.kube.minor);
                if let Some(why) = no_overload {
                    errs.push(FieldError::invalid(
                        p.child("messageExpression"),
                        rule.clone(),
                        format!("messageExpression compilation failed: ERROR: <input>: {why}"),
                    ));
                } else if result != ResultKind::String && result != ResultKind::Unsure {
                    errs.push(FieldError::invalid(
                        p.child("messageExpression"),
                        rule.clone(),
                        "messageExpression must evaluate to a string",
                    ));
                } else {
                    if !scope.suppress_per_expression && cost > RULE_COST_LIMIT {
                        errs.push(
                            FieldError::forbidden(
                                p.child("messageExpression"),
                                cost_message(
                                    "estimated messageExpression cost",
                                    cost,
                                    RULE_COST_LIMIT,
                                ),
                            )
                            .with_fix_owned(cost_fix(&unbounded, scope.cardinality)),
                        );
                    }
                    scope
                        .total
                        .borrow_mut()
                        .observe(p.child("messageExpression"), cost);
                }
            }
        }
        if uses_old_self {
            if let Some(u) = uncorrelatable {
                errs.push(
                    FieldError::invalid(
                        p.child("rule"),
                        Value::from(src),
                        format!(
                            "oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"
                        ),
                    )
                    .with_fix("transition rules need a correlatable value: put the rule above the list, or make the list x-kubernetes-list-type: map"),
                );
            }
        } else if parsed.is_ok()
            && let Some(o) = r.get("optionalOldSelf").filter(|v| !v.is_null())
        {
            errs.push(FieldError::invalid(
                p.child("optionalOldSelf"),
                o.clone(),
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
    errs
}

/// A CEL expression parsed with the options Kubernetes uses, or the first
/// line of the parser's error.
type Parsed = std::rc::Rc<Result<IdedExpr, String>>;

/// Parses `src`, cached per thread by its text. The same rules recur across
/// the versions of a CRD and across CRDs of a release (a namespaced store and
/// its cluster-scoped twin), and parsing is the costliest step of checking a
/// rule. Like the pattern cache, it is cleared when it grows large; worker
/// threads start with it empty. The fast path ([`crate::cel::parse`]) reads
/// nearly every real rule; the `cel` crate's parser reads the rest and words
/// the errors.
fn parse(src: &str) -> Parsed {
    thread_local! {
        static SEEN: std::cell::RefCell<foldhash::HashMap<String, Parsed>> =
            Default::default();
    }
    SEEN.with(|seen| {
        if let Some(p) = seen.borrow().get(src) {
            return p.clone();
        }
        let parsed = std::rc::Rc::new(if calls_exists_one(src) {
            Err("ERROR: <input>: undeclared reference to 'existsOne' (in container '')".to_string())
        } else {
            crate::cel::parse::parse_rule(src).map_err(|e| first_line(&e.to_string()))
        });
        let mut seen = seen.borrow_mut();
        if seen.len() > 4096 {
            seen.clear();
        }
        seen.insert(src.to_string(), parsed.clone());
        parsed
    })
}

/// Whether `src` calls `existsOne(...)`. The `cel` crate expands it as a
/// macro, like `exists_one`; no CRD environment of Kubernetes 1.30 to 1.37
/// declares it (checked against those servers), so it is an undeclared
/// reference there. Quoted text is skipped.
fn calls_exists_one(src: &str) -> bool {
    if !src.contains("existsOne") {
        return false;
    }
    let bytes = src.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(_) if b == b'\\' => i += 1,
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if src[i..].starts_with("existsOne") => {
                let before = i.checked_sub(1).map(|j| bytes[j]);
                let rest = src[i + "existsOne".len()..].trim_start();
                let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
                if !before.is_some_and(ident) && rest.starts_with('(') {
                    return true;
                }
            }
            None => {}
        }
        i += 1;
    }
    false
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// A step of a validated field path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A declared property.
    Field(String),
    /// A key of a map (`additionalProperties`).
    Key(String),
}

/// `cel.ValidFieldPath`: a JSONPath-like `.a.b['c.d']` relative to `schema`,
/// naming only declared fields. Returns the steps and the schema reached
/// (none for a value of a map declared as `additionalProperties: true`).
pub fn valid_field_path<'a>(
    path: &str,
    schema: &'a Obj,
    allow_array_notation: bool,
) -> Result<(Vec<Step>, Option<&'a Obj>), String> {
    let tokens = tokenize(path);
    let mut steps = Vec::new();
    let mut node = Some(schema);
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        let name = match tok.as_str() {
            "[" => {
                if !allow_array_notation {
                    return Err("array notation is not allowed".into());
                }
                let t = it.next().ok_or("unexpected end of JSON path")?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {t}"));
                }
                let name = t[1..t.len() - 1].replace("\\'", "'").replace("\\\\", "\\");
                let close = it.next().ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
                name
            }
            "." => it.next().ok_or("unexpected end of JSON path")?,
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        // Below a value without a schema the server has nothing to look in
        // (it fails with an internal error); call it what it is.
        let current = node.ok_or("does not refer to a valid field")?;
        if has_properties(current) {
            node = Some(property(current, &name).ok_or("does not refer to a valid field")?);
            steps.push(Step::Field(name));
        } else {
            match additional_properties(current) {
                AdditionalProperties::Schema(o) => node = Some(o),
                AdditionalProperties::Bool(_) => node = None,
                AdditionalProperties::Absent => {
                    return Err("does not refer to a valid field".into());
                }
            }
            steps.push(Step::Key(name));
        }
    }
    Ok((steps, node))
}

/// Splits at `.`, `[` and `]`, keeping single-quoted strings whole.
fn tokenize(path: &str) -> Vec<String> {
    let b = path.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\'' {
            let mut j = i + 1;
            while j < b.len() && !(b[j] == b'\'' && b[j - 1] != b'\\') {
                j += 1;
            }
            let end = (j + 1).min(b.len());
            out.push(path[i..end].to_string());
            i = end;
            continue;
        }
        if matches!(b[i], b'.' | b'[' | b']') {
            out.push(path[i..i + 1].to_string());
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && !matches!(b[j], b'.' | b'[' | b']') {
            j += 1;
        }
        out.push(path[i..j].to_string());
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Obj {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "a.b": {"type": "string"}
            }}
        }})
        .as_object()
        .cloned()
        .unwrap_or_default()
    }

    #[test]
    fn field_paths_name_declared_fields_only() {
        let s = schema();
        assert!(valid_field_path(".spec.replicas", &s, true).is_ok());
        assert!(valid_field_path(".spec['a.b']", &s, true).is_ok());
        assert!(valid_field_path(".spec.labels.anything", &s, true).is_ok());
        assert_eq!(
            valid_field_path(".spec.replica", &s, true).unwrap_err(),
            "does not refer to a valid field"
        );
        assert!(valid_field_path("spec", &s, true).is_err());
        assert_eq!(
            valid_field_path(".spec['a.b']", &s, false).unwrap_err(),
            "array notation is not allowed"
        );
    }
}
