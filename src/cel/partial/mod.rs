//! Whether a CEL rule can fail on an object the old schema allows.
//!
//! A rule added in a release is only a risk for the objects already stored
//! (and re-applied unchanged by GitOps or a restore) if one of them can fail
//! it. Many new rules only constrain what is new in the release: a field the
//! old schema did not have, or an enum value it did not allow. This module
//! evaluates the rule once over an abstract object that stands for every
//! object the old schema allows, with what is certain about all of them:
//!
//! - a field the old schema does not describe is absent (the old schema
//!   pruned it), unless the new schema defaults it, which the API server
//!   does when it reads the object;
//! - a field the old schema requires is present;
//! - a field with an enum holds one of the old enum values, a boolean one
//!   of the two;
//! - a string with a `pattern` is one the pattern finds a match in, so
//!   `matches`, `contains`, `startsWith` and `endsWith` with a literal are
//!   decided on the pattern's language where it implies their outcome
//!   (`re2::language`), and a branch of the rule knows what its condition
//!   checked of a variable (`!h.contains('*') ? h.matches(R) : true`);
//! - everything else is unknown.
//!
//! Values are sets of possible outcomes (an error is one of them), so
//! `has(self.newField)` is `false`, `self.type == 'New'` is `false` when
//! `New` is not in the old enum, and `self.filter(f, f.type == 'New')` is
//! the empty list. The evaluation is sound: it answers "cannot fail" only
//! when every concrete object evaluates to `true`; anything it cannot
//! follow (a function it does not model, a value it cannot bound) is
//! unknown, and an unknown result keeps the finding's severity.

mod domain;

use kube::core::cel::cel::common::ast::{Expr, IdedExpr, LiteralValue, operators};
use serde_json::Value;

use crate::cel::parse::parse_rule;
use crate::json::show;
use crate::openapi::numbers;
use crate::re2::language::{self, Fact};
use crate::schema::{AdditionalProperties, Schema};
use domain::{Abs, Lit, Range, Size, StrFact};

/// Why a rule cannot fail on objects valid under the old schema: the facts
/// the evaluation relied on, in the order it used them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CannotFail {
    pub facts: Vec<String>,
}

impl CannotFail {
    /// The facts as one clause for a message.
    pub fn reason(&self) -> String {
        if self.facts.is_empty() {
            "it holds for every value".to_string()
        } else {
            self.facts.join("; ")
        }
    }
}

/// Evaluates `rule`, declared on the node whose old schema is `old` and new
/// schema is `new` (`resource_root` when that node is the whole object),
/// over every object the old schema allows. `Some` when it is `true` for
/// all of them.
///
/// An optional field the rule reads splits the objects in two: those that
/// have it and those that do not. When the evaluation over all of them is
/// not conclusive, it is run again for each case (the guard
/// `!has(self.mode) || self.mode != 'Turbo'` holds in both), up to
/// [`MAX_SPLITS`] fields deep. Only fields of the node itself and of the
/// objects below it are split, never fields of list items or map values,
/// whose elements each take their own case.
pub fn cannot_fail(
    rule: &str,
    old: &Schema,
    new: &Schema,
    resource_root: bool,
) -> Option<CannotFail> {
    judge(rule, old, new, resource_root)
}

/// [`cannot_fail`], also using that every stored object passes `held`: the
/// old schema's own rules at the same node, which the API server enforced
/// on every write of those objects (as it enforced the old keywords the
/// evaluation already relies on). A rule rewritten into another form, or
/// extended with a term over a new field, then follows from the rule it
/// replaces: `(NEW) || !(OLD)` holds for every object.
pub fn cannot_fail_given(
    rule: &str,
    held: &[&str],
    old: &Schema,
    new: &Schema,
    resource_root: bool,
) -> Option<CannotFail> {
    if let Some(alone) = judge(rule, old, new, resource_root) {
        return Some(alone);
    }
    if held.is_empty() || !same_reading(old, new) {
        return None;
    }
    // Line breaks end a trailing `//` comment inside each rule.
    let assumed = held
        .iter()
        .map(|h| format!("({h}\n)"))
        .collect::<Vec<_>>()
        .join(" && ");
    let implied = format!("({rule}\n) || !({assumed})");
    let mut proof = judge(&implied, old, new, resource_root)?;
    let which = if held.len() == 1 { "rule" } else { "rules" };
    proof.facts.insert(
        0,
        format!("it follows from the old {which} at this node, which stored objects already pass"),
    );
    Some(proof)
}

/// Whether a stored object reads the same through `new` as through `old`
/// (see [`same_reading`]): what any argument from the old rules, which the
/// object passed as `old` read it, needs.
pub fn reads_alike(old: &Schema, new: &Schema) -> bool {
    same_reading(old, new)
}

/// Whether a stored object reads the same through `new` as through `old`,
/// at this node and below: nothing it holds is pruned by `new`, no default
/// fills it in, no value changes its CEL type. Only then is an old rule,
/// which passed on the object as `old` read it, also true of the object
/// the evaluation sees (read through `new`). A property `new` adds is
/// absent from stored objects, unless it carries a default or the old node
/// kept unknown fields (then it may hold anything).
fn same_reading(old: &Schema, new: &Schema) -> bool {
    const READING: [&str; 7] = [
        "type",
        "format",
        "nullable",
        "default",
        "x-kubernetes-int-or-string",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
    ];
    let same = |k: &str| match (old.keyword(k), new.keyword(k)) {
        (None, None) => true,
        (Some(a), Some(b)) => crate::json::json_eq(a, b),
        _ => false,
    };
    if !READING.iter().all(|k| same(k)) {
        return false;
    }
    for (name, o) in old.properties.iter() {
        match new.properties.get(name) {
            Some(n) if same_reading(o, n) => {}
            _ => return false,
        }
    }
    let kept_unknown = old.preserves_unknown_fields();
    for (name, n) in new.properties.iter() {
        if old.properties.get(name).is_none() && (kept_unknown || n.keyword("default").is_some()) {
            return false;
        }
    }
    let items = match (&old.items, &new.items) {
        (None, None) => true,
        (Some(o), Some(n)) => same_reading(o, n),
        _ => false,
    };
    let values = match (&old.additional_properties, &new.additional_properties) {
        (None, None) => true,
        (Some(AdditionalProperties::Allowed(a)), Some(AdditionalProperties::Allowed(b))) => a == b,
        (Some(AdditionalProperties::Schema(o)), Some(AdditionalProperties::Schema(n))) => {
            same_reading(o, n)
        }
        _ => false,
    };
    items && values
}

fn judge(rule: &str, old: &Schema, new: &Schema, resource_root: bool) -> Option<CannotFail> {
    judge_for(Goal::True, rule, old, new, resource_root)
}

/// What an evaluation must show of the rule's result on every object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goal {
    /// It is `true`: the rule cannot fail.
    True,
    /// It is `true` or `false`, never an evaluation error.
    Evaluates,
}

impl Goal {
    fn met(self, result: &Abs<'_>) -> bool {
        match self {
            Goal::True => *result == Abs::only(Lit::Bool(true)),
            Goal::Evaluates => matches!(result, Abs::Set { values, error: false }
                if values.iter().all(|v| matches!(v, Lit::Bool(_)))),
        }
    }
}

/// Whether `rule` can end in an evaluation error on an object the old
/// schema allows (read through `new`): a missing key, an unparsable
/// `duration()`, an overflow. The API server never ratchets such an
/// error, so only a rule that can raise one makes an unchanged update of a
/// stored object fail. `true` whenever the evaluation cannot show
/// otherwise.
pub fn can_error(rule: &str, old: &Schema, new: &Schema, resource_root: bool) -> bool {
    judge_for(Goal::Evaluates, rule, old, new, resource_root).is_none()
}

/// Whether `rule`, declared on a map or a list of int-or-string values
/// (schema `old`), refuses every object in which one of the values is an
/// integer: it is `self.all(x, P)` and `P` cannot be `true` of an integer
/// (`!self[x].startsWith('-')` is an error on one). The API server then
/// never stored such an object, so every stored value is a string.
pub fn refuses_int_elements(rule: &str, old: &Schema) -> bool {
    let Ok(expr) = parse_rule(rule) else {
        return false;
    };
    let Expr::Comprehension(c) = &expr.expr else {
        return false;
    };
    let (Some(body), None) = (all_body(c), &c.iter_var2) else {
        return false;
    };
    if !matches!(&c.iter_range.expr, Expr::Ident(n) if n == "self") {
        return false;
    }
    let (element, map) = match (old.items.as_deref(), old.map_values()) {
        (Some(items), _) => (items, false),
        (None, Some(values)) if old.properties.is_empty() => (values, true),
        _ => return false,
    };
    let root = Site {
        old,
        new: Some(old),
        name: None,
        resource_root: false,
        unique: true,
    };
    let mut eval = Eval::new(Vec::new(), Some(element));
    let this = eval.value_of(root);
    eval.scope.push(("self".to_string(), this));
    let iterated = if map {
        eval.map_keys.push((eval.scope.len(), root));
        Abs::Str {
            min: 0,
            max: u64::MAX,
            facts: Vec::new(),
            skip: 0,
        }
    } else {
        Abs::of_range(Range::Int(i64::MIN, i64::MAX))
    };
    eval.scope.push((c.iter_var.clone(), iterated));
    let result = eval.expr(body);
    eval.budget > 0 && !result.truth().0
}

/// The predicate of an `all` macro as the parser expands it: the
/// accumulator starts `true` and each step is `accu && P`.
fn all_body(c: &kube::core::cel::cel::common::ast::ComprehensionExpr) -> Option<&IdedExpr> {
    if !matches!(&c.accu_init.expr, Expr::Literal(LiteralValue::Boolean(b)) if **b) {
        return None;
    }
    let Expr::Call(step) = &c.loop_step.expr else {
        return None;
    };
    match (
        step.func_name.as_str(),
        step.target.as_deref(),
        step.args.as_slice(),
    ) {
        (operators::LOGICAL_AND, None, [accu, body]) if matches!(&accu.expr, Expr::Ident(n) if *n == c.accu_var) => {
            Some(body)
        }
        _ => None,
    }
}

fn judge_for(
    goal: Goal,
    rule: &str,
    old: &Schema,
    new: &Schema,
    resource_root: bool,
) -> Option<CannotFail> {
    let expr = parse_rule(rule).ok()?;
    let root = Site {
        old,
        new: Some(new),
        name: None,
        resource_root,
        unique: true,
    };
    let mut runs = MAX_RUNS;
    if let Some(facts) = decide(goal, &expr, root, None, &mut Vec::new(), &mut runs) {
        return Some(CannotFail { facts });
    }
    // A rule that reads its own value twice (`self.lowerAscii() == self`,
    // `type(self) == int || type(self) == string`) loses that both are one
    // value; a node of a few enum values, or an int-or-string, is decided
    // one case at a time.
    let (cases, fact) = self_cases(root)?;
    let mut facts = Vec::new();
    for case in &cases {
        for f in decide(goal, &expr, root, Some(case), &mut Vec::new(), &mut runs)? {
            if !facts.contains(&f) {
                facts.push(f);
            }
        }
    }
    facts.push(fact);
    Some(CannotFail { facts })
}

/// The cases the rule's own value splits into, with the fact that covers
/// them: each of a few enum values, or an int and a string.
fn self_cases<'s>(root: Site<'s>) -> Option<(Vec<Abs<'s>>, String)> {
    let (old, new) = (root.old, root.new);
    let int_or_string = |s: &Schema| s.flag("x-kubernetes-int-or-string") && !s.flag("nullable");
    if int_or_string(old) && new.is_none_or(int_or_string) {
        let any_string = Abs::Str {
            min: 0,
            max: u64::MAX,
            facts: Vec::new(),
            skip: 0,
        };
        return Some((
            vec![Abs::of_range(Range::Int(i64::MIN, i64::MAX)), any_string],
            "it holds whether `self` is an int or a string (x-kubernetes-int-or-string)"
                .to_string(),
        ));
    }
    let mut eval = Eval::new(Vec::new(), None);
    match eval.value_of(root) {
        Abs::Set {
            values,
            error: false,
        } if (2..=MAX_VALUE_CASES).contains(&values.len()) => Some((
            values.into_iter().map(Abs::only).collect(),
            "it holds for each value of `self`".to_string(),
        )),
        _ => None,
    }
}

/// Fields split on, at most, along one path of cases.
const MAX_SPLITS: usize = 4;

/// Evaluations allowed for one rule, all cases together.
const MAX_RUNS: usize = 32;

/// The most values of a field split into one case each.
const MAX_VALUE_CASES: usize = 4;

/// What one case takes a field of a unique object to be.
#[derive(Debug, Clone, PartialEq)]
enum Case {
    Absent,
    Present,
    Is(Lit),
    /// A boolean test of the object's own fields only (an atom, see
    /// [`Eval::atom`]) comes out this way.
    Atom(String, bool),
    /// The size of a present list or map of the object (see
    /// [`Eval::atom`]) is in `lo..=hi`.
    Count(String, i64, i64),
}

/// The key of every atom's split: atoms are told apart by their text.
const ATOM_KEY: FieldKey = (usize::MAX, usize::MAX);

/// One evaluation under the `assumed` cases, split further where that is
/// not conclusive; the facts of every case when all of them hold.
fn decide<'s>(
    goal: Goal,
    expr: &IdedExpr,
    root: Site<'s>,
    pinned: Option<&Abs<'s>>,
    assumed: &mut Vec<(FieldKey, Case)>,
    runs: &mut usize,
) -> Option<Vec<String>> {
    if *runs == 0 {
        return None;
    }
    *runs -= 1;
    let mut eval = Eval::new(assumed.clone(), None);
    let mut this = eval.value_of(root);
    if let Some(case) = pinned {
        this = case.clone();
    }
    eval.scope.push(("self".to_string(), this.clone()));
    eval.scope.push(("oldSelf".to_string(), this));
    let result = eval.expr(expr);
    if goal.met(&result) && eval.budget > 0 {
        return Some(eval.facts);
    }
    if eval.budget == 0 || assumed.len() >= MAX_SPLITS {
        return None;
    }
    let (key, name, cases) = eval.splits.into_iter().next()?;
    let mut facts = Vec::new();
    for case in cases.iter() {
        assumed.push((key, case.clone()));
        let outcome = decide(goal, expr, root, pinned, assumed, runs);
        assumed.pop();
        for f in outcome? {
            if !facts.contains(&f) {
                facts.push(f);
            }
        }
    }
    facts.push(if matches!(cases.first(), Some(Case::Atom(..))) {
        format!("it holds whichever way `{name}` comes out")
    } else if matches!(cases.first(), Some(Case::Count(..))) {
        format!("it holds whatever the size of `{name}`")
    } else if cases.contains(&Case::Absent) {
        format!("it holds whether `{name}` is set or not")
    } else {
        format!("it holds for each value of `{name}`")
    });
    Some(facts)
}

/// A field of one object of the schema: the parent's old schema node and
/// the field's, by address.
type FieldKey = (usize, usize);

/// Joins a comprehension's accumulator is widened by before it is
/// called unknown.
const MAX_FIXPOINT_STEPS: usize = 4;

/// Evaluation steps allowed for one rule: a rule nests comprehensions, and
/// each is evaluated once per element of a literal list; past this the
/// answer is unknown.
const BUDGET: usize = 10_000;

/// The most combinations a binary operator works out one by one before it
/// calls its result unknown.
const MAX_PAIRS: usize = 64;

/// A node of the schemas: the old one says what stored objects hold, the
/// new one what the API server adds (defaults) or drops (pruning) when it
/// reads them after the update.
#[derive(Debug, Clone, Copy)]
struct Site<'s> {
    old: &'s Schema,
    new: Option<&'s Schema>,
    /// The field's name, for the facts.
    name: Option<&'s str>,
    /// The whole object, whose `apiVersion`, `kind` and `metadata` the API
    /// server fills in whatever the schema says.
    resource_root: bool,
    /// One object per evaluated object (the rule's node and objects below
    /// it), not an element of a list or a map: the presence of its fields
    /// can be split on.
    unique: bool,
}

struct Eval<'s> {
    /// Variables, innermost last.
    scope: Vec<(String, Abs<'s>)>,
    facts: Vec<String>,
    budget: usize,
    /// What this case takes fields of unique objects to be.
    assumed: Vec<(FieldKey, Case)>,
    /// Fields of unique objects the evaluation met undecided (optional, or
    /// one of a few values), in order, with their names and the cases
    /// that cover them: what a further evaluation would split on.
    splits: Vec<(FieldKey, String, Vec<Case>)>,
    /// Comprehension variables that iterate a map's keys: the scope index
    /// of the variable and the map.
    map_keys: Vec<(usize, Site<'s>)>,
    /// A node whose values are taken to be integers whatever its schema
    /// says (see [`refuses_int_elements`]).
    ints_at: Option<&'s Schema>,
}

/// CEL's type identifiers, as `type(x) == string` compares them.
const TYPE_NAMES: [&str; 10] = [
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// Whether a field is in every, no, or some stored objects.
enum Presence<'s> {
    Present(Abs<'s>),
    Absent,
    Maybe,
}

impl<'s> Eval<'s> {
    /// An evaluation under the `assumed` cases, with the values at
    /// `ints_at` taken to be integers.
    fn new(assumed: Vec<(FieldKey, Case)>, ints_at: Option<&'s Schema>) -> Eval<'s> {
        Eval {
            scope: Vec::new(),
            facts: Vec::new(),
            budget: BUDGET,
            assumed,
            splits: Vec::new(),
            map_keys: Vec::new(),
            ints_at,
        }
    }

    fn fact(&mut self, fact: String) {
        if !self.facts.contains(&fact) {
            self.facts.push(fact);
        }
    }

    /// What a stored value at `site` can be.
    fn value_of(&mut self, site: Site<'s>) -> Abs<'s> {
        let (old, new) = (site.old, site.new);
        if self.ints_at.is_some_and(|at| std::ptr::eq(at, old)) {
            return Abs::of_range(Range::Int(i64::MIN, i64::MAX));
        }
        if let Some(new) = new
            && old.type_name() != new.type_name()
        {
            return Abs::Any;
        }
        if old.flag("nullable")
            || old.flag("x-kubernetes-int-or-string")
            || old.flag("x-kubernetes-embedded-resource")
        {
            return Abs::Any;
        }
        // Strings of these formats are bytes, durations and timestamps in
        // CEL, not strings.
        if old.type_name() == Some("string")
            && matches!(
                old.str_keyword("format"),
                Some("byte" | "duration" | "date" | "date-time" | "datetime")
            )
        {
            return Abs::Any;
        }
        if let Some(values) = old.keyword("enum").and_then(Value::as_array)
            && numbers::exact_enum(old.type_name(), old.keyword("enum").unwrap_or(&Value::Null))
        {
            let lits: Option<Vec<Lit>> = values.iter().map(Lit::from_json).collect();
            let Some(lits) = lits.filter(|l| !l.is_empty()) else {
                return Abs::Any;
            };
            if let Some(name) = site.name.or(site.unique.then_some("self")) {
                let mut shown: Vec<String> = values.iter().take(4).map(|v| show(Some(v))).collect();
                if values.len() > 4 {
                    shown.push(format!("… {} more", values.len() - 4));
                }
                self.fact(format!(
                    "`{name}` holds one of its old enum values [{}]",
                    shown.join(", ")
                ));
            }
            return Abs::Set {
                values: lits,
                error: false,
            };
        }
        let element = |o: &'s Schema, n: Option<&'s Schema>| Site {
            old: o,
            new: n,
            name: None,
            resource_root: false,
            unique: false,
        };
        // Facts name the field (`self` for the rule's own node); elements
        // of lists and maps are described by their list's facts.
        let named = site.name.or(site.unique.then_some("self"));
        let fact = |eval: &mut Self, what: String| {
            if named.is_some() {
                eval.fact(what);
            }
        };
        let name = named.unwrap_or_default();
        match old.type_name() {
            Some("boolean") => Abs::bools(true, true, false),
            Some("object") => Abs::Object(site),
            Some("array") => {
                let size = counts(old, "minItems", "maxItems");
                if size != Size::ANY {
                    fact(
                        self,
                        format!(
                            "the old schema bounds the items of `{name}` to {}",
                            shown_size(size)
                        ),
                    );
                }
                let elements = match (&old.items, new.map(|n| &n.items)) {
                    (Some(o), Some(Some(n))) => self.value_of(element(o, Some(n))),
                    (Some(o), None) => self.value_of(element(o, None)),
                    _ => return Abs::Any,
                };
                Abs::List(Box::new(elements), size)
            }
            Some("integer") => {
                let (lo, hi) = int_bounds(old);
                if (lo, hi) != (i64::MIN, i64::MAX) {
                    fact(
                        self,
                        format!(
                            "the old schema bounds `{name}` to {}",
                            shown_range(Range::Int(lo, hi))
                        ),
                    );
                }
                Abs::of_range(Range::Int(lo, hi))
            }
            Some("number") => {
                let lo = old
                    .keyword("minimum")
                    .and_then(Value::as_f64)
                    .unwrap_or(f64::NEG_INFINITY);
                let hi = old
                    .keyword("maximum")
                    .and_then(Value::as_f64)
                    .unwrap_or(f64::INFINITY);
                // An exclusive bound leaves out the bound itself: the
                // nearest double inside it is the closed bound.
                let lo = if old.flag("exclusiveMinimum") {
                    lo.next_up()
                } else {
                    lo
                };
                let hi = if old.flag("exclusiveMaximum") {
                    hi.next_down()
                } else {
                    hi
                };
                if lo.is_finite() || hi.is_finite() {
                    let (open_lo, open_hi) =
                        (old.flag("exclusiveMinimum"), old.flag("exclusiveMaximum"));
                    let shown = if open_lo || open_hi {
                        let end = |v: f64, open: bool, side: &str, closed: &str| {
                            if !v.is_finite() {
                                None
                            } else if open {
                                Some(format!("{side} {v}"))
                            } else {
                                Some(format!("{closed} {v}"))
                            }
                        };
                        let lo_v = old.number("minimum").unwrap_or(f64::NEG_INFINITY);
                        let hi_v = old.number("maximum").unwrap_or(f64::INFINITY);
                        [
                            end(lo_v, open_lo, "above", "at least"),
                            end(hi_v, open_hi, "below", "at most"),
                        ]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" and ")
                    } else {
                        shown_range(Range::Dbl(lo, hi))
                    };
                    fact(self, format!("the old schema bounds `{name}` to {shown}"));
                }
                Abs::Dbl { lo, hi }
            }
            Some("string") => {
                let mut size = counts(old, "minLength", "maxLength");
                if size != Size::ANY {
                    fact(
                        self,
                        format!(
                            "the old schema bounds `{name}` to {} characters",
                            shown_size(size)
                        ),
                    );
                }
                let mut facts = Vec::new();
                if let Some(p) = old.str_keyword("pattern") {
                    fact(self, format!("`{name}` matches its old pattern `{p}`"));
                    facts.push(StrFact {
                        pattern: std::borrow::Cow::Borrowed(p),
                        holds: true,
                        skip: 0,
                        checked: None,
                    });
                    // A pattern anchored at both ends may bound the length
                    // more tightly than `minLength`/`maxLength`.
                    if let Some((lo, hi)) = language::length_bounds(p) {
                        let hi = hi.unwrap_or(u64::MAX);
                        if lo > size.min || hi < size.max {
                            size = Size {
                                min: size.min.max(lo),
                                max: size.max.min(hi),
                            };
                            let whose =
                                named.map_or("its strings".to_string(), |n| format!("`{n}`"));
                            self.fact(format!(
                                "the old pattern `{p}` bounds {whose} to {} characters",
                                shown_size(size)
                            ));
                        }
                    }
                }
                Abs::Str {
                    min: size.min,
                    max: size.max,
                    facts,
                    skip: 0,
                }
            }
            _ => Abs::Any,
        }
    }

    /// Whether field `name` of an object at `site` is present in every
    /// stored object, in none, or in some.
    fn presence(&mut self, site: Site<'s>, name: &str) -> Presence<'s> {
        let (old, new) = (site.old, site.new);
        let open = |s: &Schema| {
            s.preserves_unknown_fields()
                || matches!(
                    s.additional_properties,
                    Some(AdditionalProperties::Schema(_))
                        | Some(AdditionalProperties::Allowed(true))
                )
        };
        let implicit = site.resource_root && matches!(name, "apiVersion" | "kind" | "metadata");
        if open(old) || implicit {
            return Presence::Maybe;
        }
        let new_child = new.and_then(|n| n.properties.get_key_value(name));
        let old_child = old.properties.get_key_value(name);
        // Read after the update, an object is pruned and defaulted by the
        // new schema.
        let pruned = new.is_some_and(|n| new_child.is_none() && !open(n));
        if pruned {
            self.fact(match old_child {
                Some(_) => format!("`{name}` is not in the new schema, so it is pruned"),
                None => format!("`{name}` is in neither schema"),
            });
            return Presence::Absent;
        }
        let Some((old_name, old_child)) = old_child else {
            // Objects written while an earlier release had the field still
            // hold it in etcd, and it reappears on read: the verdict
            // assumes there were none, and says so.
            return match new_child.and_then(|(_, c)| c.keyword("default")) {
                Some(default) => match Lit::from_json(default) {
                    Some(lit) => {
                        self.fact(format!(
                            "`{name}` is new, so every stored object reads its default {} (unless an earlier \
release had `{name}` and objects written then still hold it)",
                            show(Some(default))
                        ));
                        Presence::Present(Abs::only(lit))
                    }
                    None => Presence::Maybe,
                },
                None => {
                    self.fact(format!(
                        "`{name}` is new in this release, so no stored object has it (unless an earlier \
release had it and objects written then still hold it)"
                    ));
                    Presence::Absent
                }
            };
        };
        let child = Site {
            old: old_child,
            new: new_child.map(|(_, c)| c),
            name: Some(old_name.as_str()),
            resource_root: false,
            unique: site.unique,
        };
        let key: FieldKey = (
            std::ptr::from_ref(old) as usize,
            std::ptr::from_ref(old_child) as usize,
        );
        // The latest case taken for the field: a value after `Present`.
        let assumed = self
            .assumed
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, case)| case.clone());
        let default = child.new.and_then(|c| c.keyword("default"));
        // A nullable field may hold null, which CEL reads as absent.
        let required = old.required().contains(&name) && !old_child.flag("nullable");
        let value = match (&assumed, required, default) {
            (Some(Case::Is(lit)), _, _) => return Presence::Present(Abs::only(lit.clone())),
            (Some(Case::Absent), _, Some(default)) => {
                return Presence::Present(Lit::from_json(default).map_or(Abs::Any, Abs::only));
            }
            (Some(Case::Absent), _, None) => return Presence::Absent,
            (Some(Case::Present), _, _) => self.value_of(child),
            // Atoms are keyed apart from fields ([`ATOM_KEY`]).
            (Some(Case::Atom(..) | Case::Count(..)), _, _) => return Presence::Maybe,
            (None, true, _) => {
                self.fact(format!(
                    "`{name}` was required, so every stored object has it"
                ));
                self.value_of(child)
            }
            // An absent field with a default reads the default.
            (None, false, Some(default)) => {
                self.fact(format!(
                    "`{name}` has a default, so every stored object has it or reads {}",
                    show(Some(default))
                ));
                let stored = self.value_of(child);
                stored.join(Lit::from_json(default).map_or(Abs::Any, Abs::only))
            }
            (None, false, None) => {
                if site.unique && !self.splits.iter().any(|(k, _, _)| *k == key) {
                    self.splits
                        .push((key, old_name.clone(), vec![Case::Present, Case::Absent]));
                }
                return Presence::Maybe;
            }
        };
        // A field of a unique object holding one of a few values: each
        // value can be a case of its own (`self.flag || !self.flag`).
        if site.unique
            && let Abs::Set {
                values,
                error: false,
            } = &value
            && (2..=MAX_VALUE_CASES).contains(&values.len())
            && !self.splits.iter().any(|(k, _, _)| *k == key)
        {
            let cases = values.iter().cloned().map(Case::Is).collect();
            self.splits.push((key, old_name.clone(), cases));
        }
        Presence::Present(value)
    }

    /// Ties an undecided test of the object's own fields to one outcome
    /// per case, so that two places that compute it agree: a rule
    /// rewritten from `has(self.a) && self.a.startsWith('x')` into
    /// `(has(self.a) ? self.a : '').startsWith('x')` reads the same
    /// outcome twice. An atom is a string test with literal arguments
    /// (`startsWith`, `endsWith`, `contains`, `matches`) or a comprehension,
    /// over a field path from `self` that is present in this case (or
    /// `has(P) ? P : d` of one), with no variable but `self` in it: its
    /// value is one per object, wherever it is evaluated.
    fn atom(&mut self, e: &IdedExpr, out: Abs<'s>) -> Abs<'s> {
        if let Abs::Int { lo, hi } = out {
            return self.count(e, lo, hi).unwrap_or(out);
        }
        let (can_true, can_false, can_err) = out.truth();
        if !(can_true && can_false) || can_err {
            return out;
        }
        let Some((text, shown)) = self.atom_text(e) else {
            return out;
        };
        let pinned = self.assumed.iter().rev().find_map(|(_, c)| match c {
            Case::Atom(t, v) if *t == text => Some(*v),
            _ => None,
        });
        if let Some(v) = pinned {
            return Abs::only(Lit::Bool(v));
        }
        let case = Case::Atom(text.clone(), true);
        if !self.splits.iter().any(|(_, _, cs)| cs.contains(&case)) {
            self.splits
                .push((ATOM_KEY, shown, vec![case, Case::Atom(text, false)]));
        }
        out
    }

    /// `size()` of a present list or map of the object, split into its
    /// smallest value, the next, and the rest, so that `size(x) == 1` and
    /// `x.size() <= 1` agree.
    fn count(&mut self, e: &IdedExpr, lo: i64, hi: i64) -> Option<Abs<'s>> {
        let Expr::Call(c) = &e.expr else {
            return None;
        };
        let of = match (c.func_name.as_str(), c.target.as_deref(), c.args.as_slice()) {
            ("size", Some(t), []) | ("size", None, [t]) => t,
            _ => return None,
        };
        if !crate::cel::rewrite::only_self(of) {
            return None;
        }
        let (path, read) = self.present_path(of)?;
        let text = format!("{path}|size");
        let pinned = self.assumed.iter().rev().find_map(|(_, c)| match c {
            Case::Count(t, a, b) if *t == text => Some((*a, *b)),
            _ => None,
        });
        if let Some((a, b)) = pinned {
            return Some(Abs::of_range(Range::Int(a.max(lo), b.min(hi))));
        }
        let exists = |cs: &Vec<Case>| {
            cs.iter()
                .any(|k| matches!(k, Case::Count(t, ..) if *t == text))
        };
        if !self.splits.iter().any(|(_, _, cs)| exists(cs)) {
            let mut cases = vec![Case::Count(text.clone(), lo, lo)];
            let next = lo.saturating_add(1);
            if next < hi {
                cases.push(Case::Count(text.clone(), next, next));
                cases.push(Case::Count(text.clone(), next.saturating_add(1), hi));
            } else {
                cases.push(Case::Count(text.clone(), next, hi));
            }
            let shown = crate::cel::rewrite::display(read);
            self.splits.push((ATOM_KEY, shown, cases));
        }
        None
    }

    /// The atom's identity (the present field path it reads and the
    /// test) and how a fact names it.
    fn atom_text(&mut self, e: &IdedExpr) -> Option<(String, String)> {
        use crate::cel::rewrite::{display, only_self, text_of};
        if !only_self(e) {
            return None;
        }
        let (receiver, rest, test) = match &e.expr {
            Expr::Call(c)
                if matches!(
                    c.func_name.as_str(),
                    "startsWith" | "endsWith" | "contains" | "matches"
                ) && c.args.iter().all(|a| matches!(a.expr, Expr::Literal(_))) =>
            {
                let args: Vec<String> = c.args.iter().map(text_of).collect();
                let shown: Vec<String> = c.args.iter().map(display).collect();
                (
                    c.target.as_deref()?,
                    format!("{}({})", c.func_name, args.join(",")),
                    format!(".{}({})", c.func_name, shown.join(", ")),
                )
            }
            Expr::Comprehension(c) => {
                let parts: Vec<String> = [&c.accu_init, &c.loop_cond, &c.loop_step, &c.result]
                    .into_iter()
                    .map(text_of)
                    .collect();
                (
                    &c.iter_range,
                    format!("comp({},{})", c.iter_var, parts.join(";")),
                    format!(".{}({}, …)", macro_name(c), c.iter_var),
                )
            }
            _ => return None,
        };
        let (path, read) = self.present_path(receiver)?;
        Some((format!("{path}|{rest}"), format!("{}{test}", display(read))))
    }

    /// The text of `e` when it is a field path from `self` present in this
    /// case, or `c ? P : d` of such a path where `c` is certainly true
    /// (`has(P) ? P : d`).
    fn present_path<'e>(&mut self, e: &'e IdedExpr) -> Option<(String, &'e IdedExpr)> {
        use crate::cel::rewrite::text_of;
        // `cond ? P : d` is `P` where `cond` is certainly true.
        let mut path = e;
        while let Expr::Call(c) = &path.expr
            && c.func_name == operators::CONDITIONAL
            && c.args.len() == 3
        {
            if self.expr(&c.args[0]) != Abs::only(Lit::Bool(true)) {
                return None;
            }
            path = &c.args[1];
        }
        let Expr::Select(s) = &path.expr else {
            return None;
        };
        if s.test || !rooted_at_self(&s.operand) {
            return None;
        }
        let operand = self.expr(&s.operand);
        if self.select(operand, &s.field, true) != Abs::only(Lit::Bool(true)) {
            return None;
        }
        Some((text_of(path), path))
    }

    fn lookup(&self, name: &str) -> Abs<'s> {
        if let Some((_, v)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return v.clone();
        }
        match TYPE_NAMES.iter().find(|t| **t == name) {
            Some(t) => Abs::only(Lit::Type(t)),
            None => Abs::Any,
        }
    }

    /// The value of a map entry `map[key]` where `key` is the variable of
    /// a comprehension over that same map: a key it has, so the value is
    /// one the map's value schema describes.
    fn entry(&mut self, map: &IdedExpr, key: &IdedExpr) -> Option<Abs<'s>> {
        let Expr::Ident(key) = &key.expr else {
            return None;
        };
        let bound = self.scope.iter().rposition(|(n, _)| n == key)?;
        let (depth, site) = self.map_keys.iter().rev().find(|(d, _)| *d == bound)?;
        let (depth, site) = (*depth, *site);
        let Abs::Object(of) = self.expr(map) else {
            return None;
        };
        if depth != bound || !std::ptr::eq(of.old, site.old) {
            return None;
        }
        let old = site.old.map_values()?;
        self.fact("`self[key]` of a key the map has is one of its values, as the old schema describes them".to_string());
        let new = match site.new {
            Some(n) => Some(n.map_values()?),
            None => None,
        };
        Some(self.value_of(Site {
            old,
            new,
            name: None,
            resource_root: false,
            unique: false,
        }))
    }

    fn expr(&mut self, e: &IdedExpr) -> Abs<'s> {
        if self.budget == 0 {
            return Abs::Any;
        }
        self.budget -= 1;
        match &e.expr {
            Expr::Literal(lit) => match lit {
                LiteralValue::Boolean(b) => Abs::only(Lit::Bool(**b)),
                LiteralValue::Int(i) => Abs::only(Lit::Int(**i)),
                LiteralValue::UInt(u) => Abs::only(Lit::UInt(**u)),
                LiteralValue::Double(d) => Abs::only(Lit::Double(**d)),
                LiteralValue::String(s) => Abs::only(Lit::Str(s.to_string())),
                LiteralValue::Null => Abs::only(Lit::Null),
                LiteralValue::Bytes(_) => Abs::Any,
            },
            Expr::Ident(name) => self.lookup(name),
            Expr::Select(select) => {
                let operand = self.expr(&select.operand);
                self.select(operand, &select.field, select.test)
            }
            Expr::List(list) if list.optional_indices.is_empty() => {
                Abs::Items(list.elements.iter().map(|x| self.expr(x)).collect())
            }
            Expr::Call(call) => {
                let out = self.call(&call.func_name, call.target.as_deref(), &call.args);
                self.atom(e, out)
            }
            Expr::Comprehension(c) => {
                let out = self.comprehension(c);
                self.atom(e, out)
            }
            _ => Abs::Any,
        }
    }

    fn select(&mut self, operand: Abs<'s>, field: &str, test: bool) -> Abs<'s> {
        match operand {
            Abs::Object(site) => match (self.presence(site, field), test) {
                (Presence::Present(_), true) => Abs::only(Lit::Bool(true)),
                (Presence::Absent, true) => Abs::only(Lit::Bool(false)),
                (Presence::Maybe, true) => Abs::bools(true, true, false),
                (Presence::Present(v), false) => v,
                (Presence::Absent, false) => Abs::error(),
                (Presence::Maybe, false) => Abs::Any,
            },
            Abs::Set { values, .. } if values.is_empty() => Abs::error(),
            _ => Abs::Any,
        }
    }

    fn call(&mut self, func: &str, target: Option<&IdedExpr>, args: &[IdedExpr]) -> Abs<'s> {
        match (func, target, args) {
            (operators::LOGICAL_AND, None, [a, b]) => {
                // CEL's && is commutative over errors: false on either
                // side wins, true needs both, anything else is an error.
                // Where `a` cannot be an error, `b` only matters where `a`
                // is true, and is evaluated knowing that.
                let ta = self.expr(a).truth();
                let tb = if ta.2 {
                    self.expr(b)
                } else {
                    self.under(a, true, |e| e.expr(b))
                };
                let (a, b) = (ta, tb.truth());
                Abs::bools(
                    a.0 && b.0,
                    a.1 || b.1,
                    (a.2 && (b.0 || b.2)) || (b.2 && (a.0 || a.2)),
                )
            }
            (operators::LOGICAL_OR, None, [a, b]) => {
                let ta = self.expr(a).truth();
                let tb = if ta.2 {
                    self.expr(b)
                } else {
                    self.under(a, false, |e| e.expr(b))
                };
                let (a, b) = (ta, tb.truth());
                Abs::bools(
                    a.0 || b.0,
                    a.1 && b.1,
                    (a.2 && (b.1 || b.2)) || (b.2 && (a.1 || a.2)),
                )
            }
            (operators::LOGICAL_NOT, None, [a]) => {
                let a = self.expr(a).truth();
                Abs::bools(a.1, a.0, a.2)
            }
            (operators::NOT_STRICTLY_FALSE, None, [a]) => {
                let a = self.expr(a).truth();
                Abs::bools(a.0 || a.2, a.1, false)
            }
            (operators::CONDITIONAL, None, [cond, t, f]) => {
                let c = self.expr(cond).truth();
                let mut out: Option<Abs<'s>> = None;
                let mut add = |v: Abs<'s>| {
                    out = Some(match out.take() {
                        Some(o) => o.join(v),
                        None => v,
                    })
                };
                // Each branch is evaluated where the condition took it.
                if c.0 {
                    add(self.under(cond, true, |e| e.expr(t)));
                }
                if c.1 {
                    add(self.under(cond, false, |e| e.expr(f)));
                }
                if c.2 {
                    add(Abs::error());
                }
                out.unwrap_or_else(Abs::error)
            }
            (
                operators::EQUALS
                | operators::NOT_EQUALS
                | operators::LESS
                | operators::LESS_EQUALS
                | operators::GREATER
                | operators::GREATER_EQUALS,
                None,
                [a, b],
            ) => {
                let (a, b) = (self.expr(a), self.expr(b));
                self.compare(func, a, b)
            }
            (operators::ADD, None, [a, b]) => {
                let (a, b) = (self.expr(a), self.expr(b));
                match (a, b) {
                    (Abs::Items(mut x), Abs::Items(y)) => {
                        x.extend(y);
                        Abs::Items(x)
                    }
                    (a @ Abs::Set { .. }, b @ Abs::Set { .. }) => {
                        self.pairwise(a, b, |x, y| match (x, y) {
                            (Lit::Int(x), Lit::Int(y)) => x.checked_add(*y).map(Lit::Int),
                            (Lit::Double(x), Lit::Double(y)) => Some(Lit::Double(x + y)),
                            (Lit::Str(x), Lit::Str(y)) => Some(Lit::Str(format!("{x}{y}"))),
                            _ => None,
                        })
                    }
                    (a, b) => arithmetic(func, &a, &b),
                }
            }
            (
                operators::SUBSTRACT | operators::MULTIPLY | operators::DIVIDE | operators::MODULO,
                None,
                [a, b],
            ) => {
                let (a, b) = (self.expr(a), self.expr(b));
                if !(matches!(a, Abs::Set { .. }) && matches!(b, Abs::Set { .. })) {
                    return arithmetic(func, &a, &b);
                }
                // Integer arithmetic is exact and an overflow (or a
                // division by zero) is an error, as in CEL.
                self.pairwise(a, b, |x, y| match (x, y) {
                    (Lit::Int(x), Lit::Int(y)) => match func {
                        operators::SUBSTRACT => x.checked_sub(*y),
                        operators::MULTIPLY => x.checked_mul(*y),
                        operators::DIVIDE => x.checked_div(*y),
                        _ => x.checked_rem(*y),
                    }
                    .map(Lit::Int),
                    _ => None,
                })
            }
            (operators::IN, None, [a, b]) => {
                let (a, b) = (self.expr(a), self.expr(b));
                let Some(a @ Abs::Set { .. }) = a.enumerate(MAX_PAIRS as u64) else {
                    return Abs::Any;
                };
                match b {
                    Abs::Items(items) => {
                        let mut all = Vec::new();
                        for item in items {
                            match item {
                                Abs::Set {
                                    values,
                                    error: false,
                                } if values.len() == 1 => all.extend(values),
                                _ => return Abs::Any,
                            }
                        }
                        self.map_set(a, |x| Some(Lit::Bool(all.contains(x))))
                    }
                    _ => Abs::Any,
                }
            }
            ("size", Some(t), []) | ("size", None, [t]) => {
                let t = self.expr(t);
                let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
                match t {
                    Abs::Items(items) => Abs::only(Lit::Int(items.len() as i64)),
                    Abs::Str { min, max, .. } => Abs::of_range(Range::Int(count(min), count(max))),
                    Abs::List(_, size) => {
                        Abs::of_range(Range::Int(count(size.min), count(size.max)))
                    }
                    // A map: its property count.
                    Abs::Object(site) if !site.old.properties.is_empty() => Abs::Any,
                    Abs::Object(site) => {
                        let size = counts(site.old, "minProperties", "maxProperties");
                        Abs::of_range(Range::Int(count(size.min), count(size.max)))
                    }
                    s @ Abs::Set { .. } => self.map_set(s, |x| match x {
                        Lit::Str(s) => Some(Lit::Int(s.chars().count() as i64)),
                        _ => None,
                    }),
                    _ => Abs::Any,
                }
            }
            ("lowerAscii" | "upperAscii" | "trim", Some(t), []) => {
                let t = self.expr(t);
                self.map_set(t, |x| match x {
                    Lit::Str(s) => Some(Lit::Str(match func {
                        "lowerAscii" => s.to_ascii_lowercase(),
                        "upperAscii" => s.to_ascii_uppercase(),
                        // CEL trims Unicode white space, as Rust's trim.
                        _ => s.trim().to_string(),
                    })),
                    _ => None,
                })
            }
            ("type", None, [x]) => match self.expr(x) {
                Abs::Int { .. } => Abs::only(Lit::Type("int")),
                Abs::Dbl { .. } => Abs::only(Lit::Type("double")),
                Abs::Str { .. } => Abs::only(Lit::Type("string")),
                Abs::List(..) | Abs::Items(_) => Abs::only(Lit::Type("list")),
                s @ Abs::Set { .. } => self.map_set(s, |x| {
                    Some(Lit::Type(match x {
                        Lit::Null => "null_type",
                        Lit::Bool(_) => "bool",
                        Lit::Int(_) => "int",
                        Lit::UInt(_) => "uint",
                        Lit::Double(_) => "double",
                        Lit::Str(_) => "string",
                        Lit::Type(_) => "type",
                    }))
                }),
                _ => Abs::Any,
            },
            (operators::INDEX, None, [map, key]) => self.entry(map, key).unwrap_or(Abs::Any),
            ("string", None, [x]) => {
                let x = self.expr(x);
                match x {
                    Abs::Int { lo, hi } => Abs::Str {
                        min: 1,
                        max: lo.to_string().len().max(hi.to_string().len()) as u64,
                        facts: Vec::new(),
                        skip: 0,
                    },
                    s @ Abs::Set { .. } => self.map_set(s, |x| match x {
                        Lit::Int(i) => Some(Lit::Str(i.to_string())),
                        Lit::Str(s) => Some(Lit::Str(s.clone())),
                        _ => None,
                    }),
                    s @ Abs::Str { .. } => s,
                    _ => Abs::Any,
                }
            }
            ("double", None, [x]) => {
                let x = self.expr(x);
                match x {
                    Abs::Int { lo, hi } => Abs::Dbl {
                        lo: lo as f64,
                        hi: hi as f64,
                    },
                    d @ Abs::Dbl { .. } => d,
                    s @ Abs::Set { .. } => self.map_set(s, |x| match x {
                        Lit::Int(i) => Some(Lit::Double(*i as f64)),
                        Lit::Double(d) => Some(Lit::Double(*d)),
                        _ => None,
                    }),
                    _ => Abs::Any,
                }
            }
            ("int", None, [x]) => {
                let x = self.expr(x);
                match x {
                    i @ Abs::Int { .. } => i,
                    s @ Abs::Set { .. } => self.map_set(s, |x| match x {
                        Lit::Int(i) => Some(Lit::Int(*i)),
                        _ => None,
                    }),
                    _ => Abs::Any,
                }
            }
            ("matches", Some(t), [arg]) => {
                let (t, arg) = (self.expr(t), self.expr(arg));
                let Some(Lit::Str(pattern)) = arg.known() else {
                    return Abs::Any;
                };
                match t {
                    Abs::Str { facts, skip, .. } => {
                        self.regular(&facts, skip, pattern, "matches", pattern)
                    }
                    s @ Abs::Set { .. } => {
                        let Ok(re) = crate::re2::compile_go(pattern) else {
                            return Abs::error();
                        };
                        self.map_set(s, |x| match x {
                            Lit::Str(s) => Some(Lit::Bool(re.is_match(s))),
                            _ => None,
                        })
                    }
                    _ => Abs::Any,
                }
            }
            ("startsWith" | "endsWith" | "contains", Some(t), [arg]) => {
                let (t, arg) = (self.expr(t), self.expr(arg));
                if t.never_string() {
                    return Abs::error();
                }
                if let Abs::Str { facts, skip, .. } = &t
                    && let Some(Lit::Str(lit)) = arg.known()
                    && let Some(pattern) = as_pattern(func, lit)
                {
                    return self.regular(facts, *skip, &pattern, func, lit);
                }
                self.pairwise(t, arg, |x, y| match (x, y) {
                    (Lit::Str(x), Lit::Str(y)) => Some(Lit::Bool(match func {
                        "startsWith" => x.starts_with(y.as_str()),
                        "endsWith" => x.ends_with(y.as_str()),
                        _ => x.contains(y.as_str()),
                    })),
                    _ => None,
                })
            }
            ("substring", Some(t), [k]) => {
                let (t, k) = (self.expr(t), self.expr(k));
                let Some(Lit::Int(k)) = k.known() else {
                    return Abs::Any;
                };
                let Ok(k) = u64::try_from(*k) else {
                    return Abs::Any;
                };
                match t {
                    Abs::Str {
                        min,
                        max,
                        facts,
                        skip,
                    } => {
                        // `substring(k)` fails on a string shorter than k.
                        let long_enough = min >= k || {
                            let given = given(&facts, skip);
                            let rest = Fact {
                                pattern: "",
                                holds: true,
                                skip: usize::try_from(skip.saturating_add(k)).unwrap_or(usize::MAX),
                            };
                            language::implies(&given, &rest) == Some(true)
                        };
                        if !long_enough {
                            return Abs::Any;
                        }
                        Abs::Str {
                            min: min.saturating_sub(k),
                            max: if max == u64::MAX {
                                max
                            } else {
                                max.saturating_sub(k)
                            },
                            facts,
                            skip: skip.saturating_add(k),
                        }
                    }
                    s @ Abs::Set { .. } => self.map_set(s, |x| match x {
                        Lit::Str(s) => {
                            let k = usize::try_from(k).ok()?;
                            (s.chars().count() >= k).then(|| Lit::Str(s.chars().skip(k).collect()))
                        }
                        _ => None,
                    }),
                    _ => Abs::Any,
                }
            }
            _ => Abs::Any,
        }
    }

    /// Whether the Go regular expression `pattern` is found in every string
    /// a value `Str { facts, skip }` stands for, in none, or in some; `call`
    /// and `arg` name the CEL call it decides, for the facts.
    fn regular(
        &mut self,
        facts: &[StrFact<'s>],
        skip: u64,
        pattern: &str,
        call: &str,
        arg: &str,
    ) -> Abs<'s> {
        if crate::re2::compile_go(pattern).is_err() {
            return Abs::Any;
        }
        let given = given(facts, skip);
        let skip_chars = usize::try_from(skip).unwrap_or(usize::MAX);
        for holds in [true, false] {
            let then = Fact {
                pattern,
                holds,
                skip: skip_chars,
            };
            if language::implies(&given, &then) == Some(true) {
                self.fact(pattern_fact(facts, skip, &in_words(call, arg, holds)));
                return Abs::only(Lit::Bool(holds));
            }
        }
        Abs::bools(true, true, false)
    }

    /// Evaluates `body` where `cond` is `holds`: a string variable that
    /// `cond` checks with `contains`, `startsWith`, `endsWith` or
    /// `matches` and a literal carries that check as a fact there.
    fn under(
        &mut self,
        cond: &IdedExpr,
        holds: bool,
        body: impl FnOnce(&mut Self) -> Abs<'s>,
    ) -> Abs<'s> {
        let depth = self.scope.len();
        let mut narrowed = Vec::new();
        self.narrowed(cond, holds, &mut narrowed);
        self.scope.extend(narrowed);
        let out = body(self);
        self.scope.truncate(depth);
        out
    }

    fn narrowed(&self, cond: &IdedExpr, holds: bool, out: &mut Vec<(String, Abs<'s>)>) {
        let Expr::Call(call) = &cond.expr else {
            return;
        };
        match (
            call.func_name.as_str(),
            call.target.as_deref(),
            call.args.as_slice(),
        ) {
            (operators::LOGICAL_NOT, None, [a]) => self.narrowed(a, !holds, out),
            (operators::LOGICAL_AND, None, [a, b]) if holds => {
                self.narrowed(a, true, out);
                self.narrowed(b, true, out);
            }
            (operators::LOGICAL_OR, None, [a, b]) if !holds => {
                self.narrowed(a, false, out);
                self.narrowed(b, false, out);
            }
            (func @ ("contains" | "startsWith" | "endsWith" | "matches"), Some(target), [arg]) => {
                let (Expr::Ident(var), Expr::Literal(LiteralValue::String(lit))) =
                    (&target.expr, &arg.expr)
                else {
                    return;
                };
                let lit = lit.to_string();
                let current = out
                    .iter()
                    .rev()
                    .find(|(n, _)| n == var)
                    .map_or_else(|| self.lookup(var), |(_, v)| v.clone());
                let Abs::Str {
                    min,
                    max,
                    mut facts,
                    skip,
                } = current
                else {
                    return;
                };
                let Some(pattern) = as_pattern(func, &lit) else {
                    return;
                };
                if crate::re2::compile_go(&pattern).is_err() {
                    return;
                }
                facts.push(StrFact {
                    pattern: std::borrow::Cow::Owned(pattern),
                    holds,
                    skip,
                    checked: Some(in_words(func, &lit, holds)),
                });
                out.push((
                    var.clone(),
                    Abs::Str {
                        min,
                        max,
                        facts,
                        skip,
                    },
                ));
            }
            _ => {}
        }
    }

    /// `==`, `!=`, `<`, `<=`, `>`, `>=`: value by value over small sets, by
    /// their ends over numeric ranges.
    fn compare(&mut self, func: &str, a: Abs<'s>, b: Abs<'s>) -> Abs<'s> {
        if let (Abs::Set { .. }, Abs::Set { .. }) = (&a, &b) {
            return self.pairwise(a, b, |x, y| {
                Some(Lit::Bool(match func {
                    operators::EQUALS => x == y,
                    operators::NOT_EQUALS => x != y,
                    _ => {
                        let o = x.compare(y)?;
                        match func {
                            operators::LESS => o.is_lt(),
                            operators::LESS_EQUALS => o.is_le(),
                            operators::GREATER => o.is_gt(),
                            _ => o.is_ge(),
                        }
                    }
                }))
            });
        }
        let (Some(x), Some(y)) = (a.range(), b.range()) else {
            // Two strings compare without error, whatever they are.
            if a.always_string() && b.always_string() {
                return Abs::bools(true, true, false);
            }
            return Abs::Any;
        };
        let (always, never) = match (x, y) {
            (Range::Int(a, b), Range::Int(c, d)) => ordered(func, a, b, c, d),
            _ => {
                let ((a, b), (c, d)) = (x.doubles(), y.doubles());
                ordered(func, a, b, c, d)
            }
        };
        Abs::bools(!never, !always, false)
    }

    /// `op` over every combination of the two sets; `None` from `op` (a
    /// type or overflow error) is an error outcome.
    fn pairwise(
        &mut self,
        a: Abs<'s>,
        b: Abs<'s>,
        op: impl Fn(&Lit, &Lit) -> Option<Lit>,
    ) -> Abs<'s> {
        let (
            Abs::Set {
                values: x,
                error: e,
            },
            Abs::Set {
                values: y,
                error: f,
            },
        ) = (a, b)
        else {
            return Abs::Any;
        };
        if x.len() * y.len() > MAX_PAIRS {
            return Abs::Any;
        }
        let mut out = Abs::Set {
            values: Vec::new(),
            error: e || f,
        };
        for l in &x {
            for r in &y {
                out = out.join(match op(l, r) {
                    Some(v) => Abs::only(v),
                    None => Abs::error(),
                });
            }
        }
        out
    }

    fn map_set(&mut self, a: Abs<'s>, op: impl Fn(&Lit) -> Option<Lit>) -> Abs<'s> {
        self.pairwise(a, Abs::only(Lit::Null), |x, _| op(x))
    }

    /// A macro (`all`, `exists`, `exists_one`, `filter`, `map`). Over a
    /// literal list each element is evaluated in turn. Over a list of
    /// unknown length the step is evaluated once on the element's value:
    /// if it leaves the accumulator as it was, it does so for every
    /// element and any number of them, and the result follows from the
    /// initial accumulator; otherwise the result is unknown.
    fn comprehension(
        &mut self,
        c: &kube::core::cel::cel::common::ast::ComprehensionExpr,
    ) -> Abs<'s> {
        if c.iter_var2.is_some() {
            return Abs::Any;
        }
        let range = self.expr(&c.iter_range);
        let init = self.expr(&c.accu_init);
        let depth = self.scope.len();
        let accu = match range {
            Abs::Items(items) => {
                let mut accu = init;
                for item in items {
                    self.scope.push((c.accu_var.clone(), accu.clone()));
                    let go_on = self.expr(&c.loop_cond).truth();
                    if !go_on.0 && go_on.1 && !go_on.2 {
                        self.scope.truncate(depth);
                        break;
                    }
                    self.scope.push((c.iter_var.clone(), item));
                    let next = self.expr(&c.loop_step);
                    self.scope.truncate(depth);
                    let definite = go_on.0 && !go_on.1 && !go_on.2;
                    if !definite && next != accu {
                        return Abs::Any;
                    }
                    accu = next;
                }
                accu
            }
            Abs::List(element, _) => self.fixpoint(c, init, *element),
            // Iterating a map visits its keys; `map[key]` is then one of
            // its values.
            Abs::Object(site) if site.old.properties.is_empty() => {
                self.map_keys.push((self.scope.len() + 1, site));
                let accu = self.fixpoint(c, init, Abs::Any);
                self.map_keys.pop();
                accu
            }
            Abs::Object(_) => self.fixpoint(c, init, Abs::Any),
            _ => return Abs::Any,
        };
        self.scope.truncate(depth);
        if matches!(accu, Abs::Any) {
            return Abs::Any;
        }
        self.scope.push((c.accu_var.clone(), accu));
        let result = self.expr(&c.result);
        self.scope.truncate(depth);
        result
    }

    fn fixpoint(
        &mut self,
        c: &kube::core::cel::cel::common::ast::ComprehensionExpr,
        init: Abs<'s>,
        element: Abs<'s>,
    ) -> Abs<'s> {
        // The accumulator after any number of steps is one of the values
        // of the least `A` with `init ⊔ step(A) = A`: joined until it stops
        // growing (a boolean in two steps), or unknown.
        let depth = self.scope.len();
        let mut accu = init;
        for _ in 0..MAX_FIXPOINT_STEPS {
            self.scope.push((c.accu_var.clone(), accu.clone()));
            self.scope.push((c.iter_var.clone(), element.clone()));
            let next = self.expr(&c.loop_step);
            self.scope.truncate(depth);
            if matches!(next, Abs::Any) {
                return Abs::Any;
            }
            let joined = accu.clone().join(next);
            if joined == accu {
                return accu;
            }
            accu = joined;
        }
        Abs::Any
    }
}

/// The macro a comprehension was written as, for a fact.
fn macro_name(c: &kube::core::cel::cel::common::ast::ComprehensionExpr) -> &'static str {
    let step = match &c.loop_step.expr {
        Expr::Call(step) => step.func_name.as_str(),
        _ => "",
    };
    match (&c.accu_init.expr, step) {
        (Expr::Literal(LiteralValue::Boolean(b)), operators::LOGICAL_AND) if **b => "all",
        (Expr::Literal(LiteralValue::Boolean(b)), operators::LOGICAL_OR) if !**b => "exists",
        (Expr::Literal(LiteralValue::Int(_)), operators::CONDITIONAL) => "exists_one",
        _ => "map",
    }
}

/// `self`, or fields under it.
fn rooted_at_self(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Ident(n) => n == "self",
        Expr::Select(s) => !s.test && rooted_at_self(&s.operand),
        _ => false,
    }
}

/// The facts of a string value as the language module reads them: all of
/// them, and that the string reaches past `skip` characters (what made the
/// `substring` that cut it valid).
fn given<'f>(facts: &'f [StrFact<'_>], skip: u64) -> Vec<Fact<'f>> {
    let mut given: Vec<Fact<'f>> = facts
        .iter()
        .map(|f| Fact {
            pattern: &f.pattern,
            holds: f.holds,
            skip: usize::try_from(f.skip).unwrap_or(usize::MAX),
        })
        .collect();
    if skip > 0 {
        given.push(Fact {
            pattern: "",
            holds: true,
            skip: usize::try_from(skip).unwrap_or(usize::MAX),
        });
    }
    given
}

/// The Go regular expression found in exactly the strings for which the
/// CEL string function `func` with the literal `arg` is true.
fn as_pattern(func: &str, arg: &str) -> Option<String> {
    // Go's regexp.QuoteMeta.
    let quoted: String = arg
        .chars()
        .flat_map(|c| {
            let meta = "\\.+*?()|[]{}^$".contains(c);
            meta.then_some('\\').into_iter().chain(std::iter::once(c))
        })
        .collect();
    Some(match func {
        "contains" => quoted,
        "startsWith" => format!("^{quoted}"),
        "endsWith" => format!("{quoted}$"),
        "matches" => arg.to_string(),
        _ => return None,
    })
}

/// A string check in words: "does not contain `*`".
fn in_words(func: &str, arg: &str, holds: bool) -> String {
    let (yes, no) = match func {
        "contains" => ("contains", "does not contain"),
        "startsWith" => ("starts with", "does not start with"),
        "endsWith" => ("ends with", "does not end with"),
        _ => ("matches", "does not match"),
    };
    format!("{} `{arg}`", if holds { yes } else { no })
}

/// The fact a string check was decided by: the old pattern (and the checks
/// the rule made on the way) imply its outcome.
fn pattern_fact(facts: &[StrFact<'_>], skip: u64, outcome: &str) -> String {
    let old: Vec<String> = facts
        .iter()
        .filter(|f| f.checked.is_none())
        .map(|f| format!("`{}`", f.pattern))
        .collect();
    let checked: Vec<&str> = facts.iter().filter_map(|f| f.checked.as_deref()).collect();
    let that = if checked.is_empty() {
        String::new()
    } else {
        format!(" that {}", checked.join(" and "))
    };
    let from = if skip > 0 {
        format!(" from character {skip} on")
    } else {
        String::new()
    };
    match old.as_slice() {
        [] => format!("every string{that} {outcome}{from}"),
        [one] => format!(
            "the old pattern {one} implies it: every string it matches{that} {outcome}{from}"
        ),
        more => format!(
            "the old patterns {} imply it: every string they match{that} {outcome}{from}",
            more.join(", ")
        ),
    }
}

/// Whether `x op y` holds for every `x` in `a..=b` and `y` in `c..=d`,
/// and whether it holds for none.
fn ordered<T: PartialOrd>(func: &str, a: T, b: T, c: T, d: T) -> (bool, bool) {
    match func {
        operators::LESS => (b < c, a >= d),
        operators::LESS_EQUALS => (b <= c, a > d),
        operators::GREATER => (a > d, b <= c),
        operators::GREATER_EQUALS => (a >= d, b < c),
        operators::EQUALS => (a == b && b == c && c == d, b < c || d < a),
        _ => (b < c || d < a, a == b && b == c && c == d),
    }
}

/// `+`, `-`, `*` over numeric ranges: ints exactly, unknown where the
/// result may overflow (an error in CEL); doubles by their ends.
fn arithmetic<'s>(func: &str, a: &Abs<'s>, b: &Abs<'s>) -> Abs<'s> {
    match (a.range(), b.range()) {
        (Some(Range::Int(a, b)), Some(Range::Int(c, d))) => {
            let (a, b, c, d) = (i128::from(a), i128::from(b), i128::from(c), i128::from(d));
            let (lo, hi) = match func {
                operators::ADD => (a + c, b + d),
                operators::SUBSTRACT => (a - d, b - c),
                operators::MULTIPLY => {
                    let p = [a * c, a * d, b * c, b * d];
                    (
                        p.iter().copied().min().unwrap_or(0),
                        p.iter().copied().max().unwrap_or(0),
                    )
                }
                _ => return Abs::Any,
            };
            match (i64::try_from(lo), i64::try_from(hi)) {
                (Ok(lo), Ok(hi)) => Abs::of_range(Range::Int(lo, hi)),
                _ => Abs::Any,
            }
        }
        (Some(Range::Dbl(a, b)), Some(Range::Dbl(c, d))) => {
            let (lo, hi) = match func {
                operators::ADD => (a + c, b + d),
                operators::SUBSTRACT => (a - d, b - c),
                operators::MULTIPLY => {
                    let p = [a * c, a * d, b * c, b * d];
                    if p.iter().any(|x| x.is_nan()) {
                        return Abs::Any;
                    }
                    (
                        p.iter().copied().fold(f64::INFINITY, f64::min),
                        p.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                    )
                }
                _ => return Abs::Any,
            };
            if lo.is_nan() || hi.is_nan() {
                return Abs::Any;
            }
            Abs::of_range(Range::Dbl(lo, hi))
        }
        _ => Abs::Any,
    }
}

/// `minItems`/`maxItems` (or lengths, or property counts) of a node.
fn counts(node: &Schema, min: &str, max: &str) -> Size {
    Size {
        min: node.keyword(min).and_then(Value::as_u64).unwrap_or(0),
        max: node
            .keyword(max)
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX),
    }
}

/// The ints an `integer` node allows, on every supported server: before
/// 1.36 an int is compared with the bound truncated, from 1.36 with the
/// bound itself (a bound that is not an integer rejects everything, which
/// the wider range also covers).
fn int_bounds(node: &Schema) -> (i64, i64) {
    let bound = |kw: &str, excl: &str, lower: bool| -> Option<i64> {
        let exclusive = node.flag(excl);
        // An integer bound is read exactly (a float would round near 2^63).
        if let Some(b) = node.keyword(kw).and_then(Value::as_i64) {
            return match (lower, exclusive) {
                (_, false) => Some(b),
                (true, true) => b.checked_add(1),
                (false, true) => b.checked_sub(1),
            };
        }
        let b = node.keyword(kw).and_then(Value::as_f64)?;
        let native = numbers::go_trunc(b)?;
        let (native, float) = match (lower, exclusive) {
            (true, false) => (native, b.ceil()),
            (true, true) => (native.checked_add(1)?, b.floor() + 1.0),
            (false, false) => (native, b.floor()),
            (false, true) => (native.checked_sub(1)?, b.ceil() - 1.0),
        };
        let float = numbers::go_trunc(float)?;
        Some(if lower {
            native.min(float)
        } else {
            native.max(float)
        })
    };
    (
        bound("minimum", "exclusiveMinimum", true).unwrap_or(i64::MIN),
        bound("maximum", "exclusiveMaximum", false).unwrap_or(i64::MAX),
    )
}

fn shown_size(s: Size) -> String {
    match (s.min, s.max) {
        (0, u64::MAX) => "any number".to_string(),
        (0, max) => format!("at most {max}"),
        (min, u64::MAX) => format!("at least {min}"),
        (min, max) if min == max => format!("exactly {min}"),
        (min, max) => format!("{min}..{max}"),
    }
}

fn shown_range(r: Range) -> String {
    match r {
        Range::Int(lo, hi) => match (lo, hi) {
            (i64::MIN, hi) => format!("at most {hi}"),
            (lo, i64::MAX) => format!("at least {lo}"),
            (lo, hi) => format!("{lo}..{hi}"),
        },
        Range::Dbl(lo, hi) => match (lo.is_finite(), hi.is_finite()) {
            (false, _) => format!("at most {hi}"),
            (_, false) => format!("at least {lo}"),
            _ => format!("{lo}..{hi}"),
        },
    }
}

#[cfg(test)]
mod tests;
