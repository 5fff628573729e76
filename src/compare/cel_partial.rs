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
//! - everything else is unknown.
//!
//! Values are sets of possible outcomes (an error is one of them), so
//! `has(self.newField)` is `false`, `self.type == 'New'` is `false` when
//! `New` is not in the old enum, and `self.filter(f, f.type == 'New')` is
//! the empty list. The evaluation is sound: it answers "cannot fail" only
//! when every concrete object evaluates to `true`; anything it cannot
//! follow (a function it does not model, a value it cannot bound) is
//! unknown, and an unknown result keeps the finding's severity.

use crate::validate::cel_parse::parse_rule;
use kube::core::cel::cel::common::ast::{Expr, IdedExpr, LiteralValue, operators};
use serde_json::Value;

use crate::json::show;
use crate::schema::{AdditionalProperties, Schema};

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
pub fn cannot_fail(
    rule: &str,
    old: &Schema,
    new: &Schema,
    resource_root: bool,
) -> Option<CannotFail> {
    let expr = parse_rule(rule).ok()?;
    let mut eval = Eval {
        scope: Vec::new(),
        facts: Vec::new(),
        budget: BUDGET,
    };
    let root = Site {
        old,
        new: Some(new),
        name: None,
        resource_root,
    };
    let this = eval.value_of(root);
    eval.scope.push(("self".to_string(), this.clone()));
    eval.scope.push(("oldSelf".to_string(), this));
    let result = eval.expr(&expr);
    (result == Abs::only(Lit::Bool(true)) && eval.budget > 0)
        .then_some(CannotFail { facts: eval.facts })
}

/// Evaluation steps allowed for one rule: a rule nests comprehensions, and
/// each is evaluated once per element of a literal list; past this the
/// answer is unknown.
const BUDGET: usize = 10_000;

/// The most combinations a binary operator works out one by one before it
/// calls its result unknown.
const MAX_PAIRS: usize = 64;

/// A concrete scalar.
#[derive(Debug, Clone)]
enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
}

impl PartialEq for Lit {
    /// CEL's equality: numbers compare by value across int, uint and
    /// double; values of other different types are not equal.
    fn eq(&self, other: &Lit) -> bool {
        match (self, other) {
            (Lit::Null, Lit::Null) => true,
            (Lit::Bool(a), Lit::Bool(b)) => a == b,
            (Lit::Str(a), Lit::Str(b)) => a == b,
            (a, b) => match (a.number(), b.number()) {
                (Some(x), Some(y)) => x == y,
                _ => false,
            },
        }
    }
}

impl Lit {
    fn number(&self) -> Option<f64> {
        match self {
            Lit::Int(i) => Some(*i as f64),
            Lit::UInt(u) => Some(*u as f64),
            Lit::Double(d) => Some(*d),
            _ => None,
        }
    }

    fn from_json(v: &Value) -> Option<Lit> {
        Some(match v {
            Value::Null => Lit::Null,
            Value::Bool(b) => Lit::Bool(*b),
            Value::String(s) => Lit::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Lit::Int(i),
                None => Lit::Double(n.as_f64()?),
            },
            _ => return None,
        })
    }

    fn compare(&self, other: &Lit) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Lit::Str(a), Lit::Str(b)) => Some(a.cmp(b)),
            (Lit::Bool(a), Lit::Bool(b)) => Some(a.cmp(b)),
            (a, b) => a.number()?.partial_cmp(&b.number()?),
        }
    }
}

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
}

/// What an expression can evaluate to, over every object the old schema
/// allows.
#[derive(Debug, Clone)]
enum Abs<'s> {
    /// One of these scalars, or (with `error`) an evaluation error.
    Set { values: Vec<Lit>, error: bool },
    /// An object (or map) described by the schemas; never an error.
    Object(Site<'s>),
    /// A list of unknown length whose elements are all described by one
    /// value.
    List(Box<Abs<'s>>),
    /// A list of known elements.
    Items(Vec<Abs<'s>>),
    /// Anything, an error included.
    Any,
}

impl PartialEq for Abs<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Abs::Set {
                    values: a,
                    error: e,
                },
                Abs::Set {
                    values: b,
                    error: f,
                },
            ) => e == f && a.len() == b.len() && a.iter().all(|x| b.contains(x)),
            (Abs::Object(a), Abs::Object(b)) => {
                std::ptr::eq(a.old, b.old)
                    && match (a.new, b.new) {
                        (Some(x), Some(y)) => std::ptr::eq(x, y),
                        (None, None) => true,
                        _ => false,
                    }
            }
            (Abs::List(a), Abs::List(b)) => a == b,
            (Abs::Items(a), Abs::Items(b)) => a == b,
            // Two unknowns may be different values.
            _ => false,
        }
    }
}

impl<'s> Abs<'s> {
    fn only(lit: Lit) -> Abs<'s> {
        Abs::Set {
            values: vec![lit],
            error: false,
        }
    }

    fn error() -> Abs<'s> {
        Abs::Set {
            values: Vec::new(),
            error: true,
        }
    }

    fn bools(t: bool, f: bool, error: bool) -> Abs<'s> {
        let mut values = Vec::new();
        if t {
            values.push(Lit::Bool(true));
        }
        if f {
            values.push(Lit::Bool(false));
        }
        Abs::Set { values, error }
    }

    /// The outcomes as a boolean: (can be true, can be false, can be an
    /// error or not a boolean).
    fn truth(&self) -> (bool, bool, bool) {
        match self {
            Abs::Set { values, error } => {
                let mut out = (false, false, *error);
                for v in values {
                    match v {
                        Lit::Bool(true) => out.0 = true,
                        Lit::Bool(false) => out.1 = true,
                        _ => out.2 = true,
                    }
                }
                out
            }
            _ => (true, true, true),
        }
    }

    /// Either value.
    fn join(self, other: Abs<'s>) -> Abs<'s> {
        match (self, other) {
            (
                Abs::Set {
                    mut values,
                    error: e,
                },
                Abs::Set {
                    values: more,
                    error: f,
                },
            ) => {
                for v in more {
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                Abs::Set {
                    values,
                    error: e || f,
                }
            }
            (a, b) if a == b => a,
            _ => Abs::Any,
        }
    }
}

struct Eval<'s> {
    /// Variables, innermost last.
    scope: Vec<(String, Abs<'s>)>,
    facts: Vec<String>,
    budget: usize,
}

/// Whether a field is in every, no, or some stored objects.
enum Presence<'s> {
    Present(Abs<'s>),
    Absent,
    Maybe,
}

impl<'s> Eval<'s> {
    fn fact(&mut self, fact: String) {
        if !self.facts.contains(&fact) {
            self.facts.push(fact);
        }
    }

    /// What a stored value at `site` can be.
    fn value_of(&mut self, site: Site<'s>) -> Abs<'s> {
        let (old, new) = (site.old, site.new);
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
        if let Some(values) = old.keyword("enum").and_then(Value::as_array) {
            let lits: Option<Vec<Lit>> = values.iter().map(Lit::from_json).collect();
            let Some(lits) = lits.filter(|l| !l.is_empty()) else {
                return Abs::Any;
            };
            if let Some(name) = site.name {
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
        match old.type_name() {
            Some("boolean") => Abs::bools(true, true, false),
            Some("object") => Abs::Object(site),
            Some("array") => match (&old.items, new.map(|n| &n.items)) {
                (Some(o), Some(Some(n))) => Abs::List(Box::new(self.value_of(Site {
                    old: o,
                    new: Some(n),
                    name: None,
                    resource_root: false,
                }))),
                (Some(o), None) => Abs::List(Box::new(self.value_of(Site {
                    old: o,
                    new: None,
                    name: None,
                    resource_root: false,
                }))),
                _ => Abs::Any,
            },
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
            return match new_child.and_then(|(_, c)| c.keyword("default")) {
                Some(default) => match Lit::from_json(default) {
                    Some(lit) => {
                        self.fact(format!(
                            "`{name}` is new, so every stored object reads its default {}",
                            show(Some(default))
                        ));
                        Presence::Present(Abs::only(lit))
                    }
                    None => Presence::Maybe,
                },
                None => {
                    self.fact(format!(
                        "`{name}` is new in this release, so no stored object has it"
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
        };
        if old.required().contains(&name) {
            self.fact(format!(
                "`{name}` was required, so every stored object has it"
            ));
            Presence::Present(self.value_of(child))
        } else if child.new.is_some_and(|c| c.keyword("default").is_some()) {
            self.fact(format!(
                "`{name}` has a default, so every stored object reads it"
            ));
            Presence::Present(self.value_of(child))
        } else {
            Presence::Maybe
        }
    }

    fn lookup(&self, name: &str) -> Abs<'s> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map_or(Abs::Any, |(_, v)| v.clone())
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
            Expr::Call(call) => self.call(&call.func_name, call.target.as_deref(), &call.args),
            Expr::Comprehension(c) => self.comprehension(c),
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
                let (a, b) = (self.expr(a).truth(), self.expr(b).truth());
                Abs::bools(
                    a.0 && b.0,
                    a.1 || b.1,
                    (a.2 && (b.0 || b.2)) || (b.2 && (a.0 || a.2)),
                )
            }
            (operators::LOGICAL_OR, None, [a, b]) => {
                let (a, b) = (self.expr(a).truth(), self.expr(b).truth());
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
            (operators::CONDITIONAL, None, [c, t, f]) => {
                let c = self.expr(c).truth();
                let mut out: Option<Abs<'s>> = None;
                let mut add = |v: Abs<'s>| {
                    out = Some(match out.take() {
                        Some(o) => o.join(v),
                        None => v,
                    })
                };
                if c.0 {
                    add(self.expr(t));
                }
                if c.1 {
                    add(self.expr(f));
                }
                if c.2 {
                    add(Abs::error());
                }
                out.unwrap_or_else(Abs::error)
            }
            (operators::EQUALS | operators::NOT_EQUALS, None, [a, b]) => {
                let negate = func == operators::NOT_EQUALS;
                let (a, b) = (self.expr(a), self.expr(b));
                self.pairwise(a, b, |x, y| Some(Lit::Bool((x == y) != negate)))
            }
            (
                operators::LESS
                | operators::LESS_EQUALS
                | operators::GREATER
                | operators::GREATER_EQUALS,
                None,
                [a, b],
            ) => {
                let (a, b) = (self.expr(a), self.expr(b));
                self.pairwise(a, b, |x, y| {
                    let o = x.compare(y)?;
                    Some(Lit::Bool(match func {
                        operators::LESS => o.is_lt(),
                        operators::LESS_EQUALS => o.is_le(),
                        operators::GREATER => o.is_gt(),
                        _ => o.is_ge(),
                    }))
                })
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
                            (Lit::Str(x), Lit::Str(y)) => Some(Lit::Str(format!("{x}{y}"))),
                            _ => None,
                        })
                    }
                    _ => Abs::Any,
                }
            }
            (operators::IN, None, [a, b]) => {
                let (a, b) = (self.expr(a), self.expr(b));
                match (a, b) {
                    (a @ Abs::Set { .. }, Abs::Items(items)) => {
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
                match t {
                    Abs::Items(items) => Abs::only(Lit::Int(items.len() as i64)),
                    s @ Abs::Set { .. } => self.map_set(s, |x| match x {
                        Lit::Str(s) => Some(Lit::Int(s.chars().count() as i64)),
                        _ => None,
                    }),
                    _ => Abs::Any,
                }
            }
            ("startsWith" | "endsWith" | "contains", Some(t), [arg]) => {
                let (t, arg) = (self.expr(t), self.expr(arg));
                self.pairwise(t, arg, |x, y| match (x, y) {
                    (Lit::Str(x), Lit::Str(y)) => Some(Lit::Bool(match func {
                        "startsWith" => x.starts_with(y.as_str()),
                        "endsWith" => x.ends_with(y.as_str()),
                        _ => x.contains(y.as_str()),
                    })),
                    _ => None,
                })
            }
            _ => Abs::Any,
        }
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
            Abs::List(element) => self.fixpoint(c, init, *element),
            // Iterating a map visits its keys.
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
        let depth = self.scope.len();
        self.scope.push((c.accu_var.clone(), init.clone()));
        self.scope.push((c.iter_var.clone(), element));
        let next = self.expr(&c.loop_step);
        self.scope.truncate(depth);
        if next == init { init } else { Abs::Any }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Schema {
        Schema::from_value(&v).expect("test schema")
    }

    fn verdict(rule: &str, old: Value, new: Value) -> Option<CannotFail> {
        cannot_fail(rule, &schema(old), &schema(new), false)
    }

    #[test]
    fn a_rule_that_only_constrains_a_new_field_cannot_fail() {
        let old = json!({"type": "object", "required": ["secretRef"], "properties": {
            "secretRef": {"type": "object"}}});
        let new = json!({"type": "object", "properties": {
            "secretRef": {"type": "object"}, "configMapRef": {"type": "object"}}});
        let v = verdict(
            "has(self.configMapRef) || has(self.secretRef)",
            old.clone(),
            new.clone(),
        )
        .expect("cannot fail");
        assert!(
            v.reason().contains("`secretRef` was required"),
            "{}",
            v.reason()
        );
        assert!(
            verdict(
                "!has(self.configMapRef) || !has(self.secretRef)",
                old.clone(),
                new.clone()
            )
            .is_some()
        );
        // Without the old `required`, an object may lack both.
        let loose = json!({"type": "object", "properties": {"secretRef": {"type": "object"}}});
        assert_eq!(
            verdict("has(self.configMapRef) || has(self.secretRef)", loose, new),
            None
        );
    }

    #[test]
    fn a_rule_on_a_value_the_old_enum_did_not_allow_cannot_fail() {
        let old = json!({"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string", "enum": ["A", "B"]}}});
        let new = json!({"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string", "enum": ["A", "B", "CORS"]},
            "cors": {"type": "object"}}});
        for rule in [
            "!(has(self.cors) && self.type != 'CORS')",
            "!(!has(self.cors) && self.type == 'CORS')",
            "self.type == 'CORS' ? has(self.cors) : !has(self.cors)",
        ] {
            assert!(verdict(rule, old.clone(), new.clone()).is_some(), "{rule}");
        }
        // A rule on the old values themselves can fail.
        assert_eq!(verdict("self.type == 'A'", old, new), None);
    }

    #[test]
    fn a_filter_on_a_new_enum_value_is_empty_for_stored_lists() {
        let item = |values: Value| {
            json!({"type": "object", "required": ["type"], "properties": {
            "type": {"type": "string", "enum": values}}})
        };
        let old = json!({"type": "array", "items": item(json!(["A", "B"]))});
        let new = json!({"type": "array", "items": item(json!(["A", "B", "CORS"]))});
        let rule = "self.filter(f, f.type == 'CORS').size() <= 1";
        assert!(verdict(rule, old.clone(), new.clone()).is_some());
        assert!(verdict("self.all(f, f.type != 'CORS')", old.clone(), new.clone()).is_some());
        assert!(
            verdict(
                "!self.exists(f, f.type == 'CORS')",
                old.clone(),
                new.clone()
            )
            .is_some()
        );
        // On an old value, any number of elements may match.
        assert_eq!(
            verdict("self.filter(f, f.type == 'A').size() <= 1", old, new),
            None
        );
    }

    #[test]
    fn reading_a_new_field_fails_and_a_defaulted_one_is_present() {
        let old = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let new = json!({"type": "object", "properties": {"a": {"type": "string"},
            "b": {"type": "string", "default": "x"}, "c": {"type": "string"}}});
        // Selecting an absent field is an error: the rule fails.
        assert_eq!(verdict("self.c == 'x'", old.clone(), new.clone()), None);
        assert_eq!(verdict("!has(self.b)", old.clone(), new.clone()), None);
        assert!(verdict("self.b == 'x'", old.clone(), new.clone()).is_some());
        // An error on the other side of || is hidden by true, as in CEL.
        assert!(verdict("!has(self.c) || self.c == 'x'", old, new).is_some());
    }

    #[test]
    fn what_the_api_server_fills_in_is_unknown_at_the_root_only() {
        let old = json!({"type": "object", "properties": {
            "metadata": {"type": "object"},
            "kind": {"type": "string", "enum": ["A"]}}, "required": ["kind"]});
        let root = |rule: &str| cannot_fail(rule, &schema(old.clone()), &schema(old.clone()), true);
        assert_eq!(root("!has(self.metadata.name)"), None);
        assert_eq!(root("self.kind == 'A'"), None);
        // Below the root, `kind` is a field like any other.
        assert!(verdict("self.kind == 'A'", old.clone(), old).is_some());
    }

    #[test]
    fn open_objects_and_unknown_functions_stay_unknown() {
        let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        assert_eq!(verdict("!has(self.cors)", open.clone(), open), None);
        let old = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(
            verdict(
                "self.a.matches('^x$') || true == false",
                old.clone(),
                old.clone()
            ),
            None
        );
        assert_eq!(verdict("not valid CEL ((", old.clone(), old), None);
    }
}
