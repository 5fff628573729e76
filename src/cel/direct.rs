//! Rules evaluated in place on the decoded object, without building CEL
//! values first.
//!
//! The `cel` crate's interpreter deep-copies: binding `self`, selecting a
//! field, iterating a list and calling a function each copy the subtree
//! they touch, so a schema with many rules on nested nodes (Gateway API's
//! HTTPRoute) spends most of its time copying. This evaluator reads the
//! `serde_json` value through the schema instead, for the part of CEL that
//! such rules use: literals, `self` and macro variables, field selection and
//! `has()`, `!`, `&&`, `||`, `?:`, `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`,
//! `+`, indexing, the macros (`all`, `exists`, `exists_one`, `filter`,
//! `map`), `size`, `startsWith`, `endsWith`, `contains` and `matches`.
//!
//! It decides a rule only when every step it takes is one whose result is
//! certain: same-typed comparisons, declared fields of plain objects,
//! strings without a CEL-specific format. Anything else (an error, a type
//! mix, a map-typed or preserved value, a `date-time` string) returns
//! `None`, and the caller runs the rule through the `cel` crate as before,
//! so errors and rare forms keep exactly their former outcome.

use std::sync::Arc;

use kube::core::cel::cel::Value as CelValue;
use serde_json::{Map, Value};

use super::program::{Cmp, Lit, Op, Program, StrFn};
use super::value::{Extra, Typed, number};
use crate::openapi::formats::Format;

/// A value as CEL sees it, borrowed from the object or the expression.
#[derive(Debug)]
enum Val<'a, N> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Str(&'a str),
    /// A plain object: only declared properties are visible (plus
    /// `apiVersion`, `kind` and `metadata` at the root and on embedded
    /// resources).
    Object {
        map: &'a Map<String, Value>,
        node: &'a N,
        keeps_meta: bool,
    },
    /// A list from the object, its items typed by `items`.
    Array(&'a [Value], Option<&'a N>),
    /// A list built during evaluation (a list literal, `filter`, `map`).
    List(Arc<Vec<Val<'a, N>>>),
}

// Derived `Clone` would ask `N: Clone`; the variants only borrow it.
impl<N> Clone for Val<'_, N> {
    fn clone(&self) -> Self {
        match self {
            Val::Null => Val::Null,
            Val::Bool(b) => Val::Bool(*b),
            Val::Int(i) => Val::Int(*i),
            Val::UInt(u) => Val::UInt(*u),
            Val::Str(s) => Val::Str(s),
            Val::Object {
                map,
                node,
                keeps_meta,
            } => Val::Object {
                map,
                node,
                keeps_meta: *keeps_meta,
            },
            Val::Array(a, n) => Val::Array(a, *n),
            Val::List(l) => Val::List(l.clone()),
        }
    }
}

/// Values bound while evaluating, by slot: `self`, then macro variables.
/// Kept by the caller across the rules of a node, so that evaluating a rule
/// allocates nothing.
pub(crate) struct Scope<'a, N>(Vec<Val<'a, N>>);

impl<N> Default for Scope<'_, N> {
    fn default() -> Self {
        Scope(Vec::new())
    }
}

/// The rule's result when it evaluates to a bool without any step this
/// evaluator leaves to the `cel` crate; `None` otherwise.
pub(crate) fn evaluate<'a, N: Typed>(
    program: &'a Program,
    node: &'a N,
    value: &'a Value,
    is_root: bool,
    scope: &mut Scope<'a, N>,
) -> Option<bool> {
    let this = match value {
        Value::Object(map) => object(map, node, is_root)?,
        v => from_json(v, Some(node))?,
    };
    let slots = &mut scope.0;
    if slots.len() < program.slots {
        slots.resize(program.slots, Val::Null);
    }
    slots[0] = this;
    match eval(&program.root, slots)? {
        Val::Bool(b) => Some(b),
        _ => None,
    }
}

/// An object's view, when its visible keys are simple to tell: no
/// `additionalProperties`, not an untyped preserved map.
fn object<'a, N: Typed>(
    map: &'a Map<String, Value>,
    node: &'a N,
    is_root: bool,
) -> Option<Val<'a, N>> {
    let untyped = node.properties().is_empty() && matches!(node.additional(), Extra::Absent);
    if !matches!(node.additional(), Extra::Absent) || (node.preserve_unknown() && untyped) {
        return None;
    }
    Some(Val::Object {
        map,
        node,
        keeps_meta: is_root || node.embedded(),
    })
}

/// A value below the rule's node, typed by `node` as `cel::to_cel` types it.
fn from_json<'a, N: Typed>(v: &'a Value, node: Option<&'a N>) -> Option<Val<'a, N>> {
    Some(match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => match number(n, node) {
            CelValue::Int(i) => Val::Int(i),
            CelValue::UInt(u) => Val::UInt(u),
            _ => return None,
        },
        Value::String(s) => {
            let format = node.and_then(Typed::string_format);
            if matches!(
                format,
                Some(Format::DateTime | Format::Duration | Format::Byte)
            ) {
                return None;
            }
            Val::Str(s)
        }
        Value::Array(a) => Val::Array(a, node.and_then(Typed::items)),
        Value::Object(o) => object(o, node?, false)?,
    })
}

/// Field `field` (a CEL name) of an object view: `Some(None)` when absent.
fn field<'a, N: Typed>(
    map: &'a Map<String, Value>,
    node: &'a N,
    keeps_meta: bool,
    field: &str,
) -> Option<Option<Val<'a, N>>> {
    let declared = match node.properties().get_key_value(field) {
        Some((k, p)) if p.cel_name().map(|n| n.as_str()) == Some(field) => Some((k, p)),
        _ => node
            .properties()
            .iter()
            .find(|(_, p)| p.cel_name().map(|n| n.as_str()) == Some(field)),
    };
    if let Some((name, p)) = declared {
        let value = match get(map, name) {
            Some(c) if c.is_null() && !p.nullable() => p.default(),
            Some(c) => Some(c),
            None if node.has_defaults() => p.default(),
            None => None,
        };
        return match value {
            Some(v) => from_json(v, Some(p)).map(Some),
            None => Some(None),
        };
    }
    if keeps_meta
        && matches!(field, "apiVersion" | "kind" | "metadata")
        && let Some(v) = get(map, field)
    {
        return from_json(v, None).map(Some);
    }
    Some(None)
}

/// `map[key]`. Objects in custom resources are small: comparing the few
/// keys beats hashing the one looked for.
pub(crate) fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= 8 {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

fn eval<'a, N: Typed>(op: &'a Op, scope: &mut Vec<Val<'a, N>>) -> Option<Val<'a, N>> {
    match op {
        Op::Lit(lit) => Some(literal(lit)),
        Op::Var(slot) => scope.get(*slot).cloned(),
        Op::Field {
            slot,
            field: name,
            test,
        } => select(scope.get(*slot)?, name, *test),
        Op::Select {
            operand,
            field: name,
            test,
        } => select(&eval(operand, scope)?, name, *test),
        Op::List(elements) => {
            let items = elements
                .iter()
                .map(|e| eval(e, scope))
                .collect::<Option<Vec<_>>>()?;
            Some(Val::List(Arc::new(items)))
        }
        Op::Cond(a) => match eval(&a[0], scope)? {
            Val::Bool(true) => eval(&a[1], scope),
            Val::Bool(false) => eval(&a[2], scope),
            _ => None,
        },
        Op::And(a) => match eval(&a[0], scope)? {
            Val::Bool(false) => Some(Val::Bool(false)),
            Val::Bool(true) => boolean(eval(&a[1], scope)?),
            _ => None,
        },
        Op::Or(a) => match eval(&a[0], scope)? {
            Val::Bool(true) => Some(Val::Bool(true)),
            Val::Bool(false) => boolean(eval(&a[1], scope)?),
            _ => None,
        },
        Op::Not(a) => match eval(a, scope)? {
            Val::Bool(b) => Some(Val::Bool(!b)),
            _ => None,
        },
        Op::NotStrictlyFalse(a) => boolean(eval(a, scope)?),
        Op::Eq(a) => {
            let l = eval(&a[0], scope)?;
            let r = eval(&a[1], scope)?;
            equal(&l, &r).map(Val::Bool)
        }
        Op::Ne(a) => {
            let l = eval(&a[0], scope)?;
            let r = eval(&a[1], scope)?;
            equal(&l, &r).map(|e| Val::Bool(!e))
        }
        Op::EqLit(a, lit) => equal(&eval(a, scope)?, &literal(lit)).map(Val::Bool),
        Op::NeLit(a, lit) => equal(&eval(a, scope)?, &literal(lit)).map(|e| Val::Bool(!e)),
        Op::Cmp(op, a) => {
            let l = eval(&a[0], scope)?;
            let r = eval(&a[1], scope)?;
            let ord = compare(&l, &r)?;
            Some(Val::Bool(match op {
                Cmp::Less => ord.is_lt(),
                Cmp::LessEquals => ord.is_le(),
                Cmp::Greater => ord.is_gt(),
                Cmp::GreaterEquals => ord.is_ge(),
            }))
        }
        Op::Add(a) => {
            let l = eval(&a[0], scope)?;
            let r = eval(&a[1], scope)?;
            add(l, r)
        }
        Op::Index(a) => {
            let list = eval(&a[0], scope)?;
            match eval(&a[1], scope)? {
                Val::Int(i) => item(&list, usize::try_from(i).ok()?),
                _ => None,
            }
        }
        Op::InLits(needle, lits) => {
            let needle = eval(needle, scope)?;
            // Literals cannot fail, so stopping at the first match is safe.
            for l in lits {
                if equal(&literal(l), &needle)? {
                    return Some(Val::Bool(true));
                }
            }
            Some(Val::Bool(false))
        }
        Op::In(a) => {
            let needle = eval(&a[0], scope)?;
            let hay = eval(&a[1], scope)?;
            for i in 0..len(&hay)? {
                if equal(&item(&hay, i)?, &needle)? {
                    return Some(Val::Bool(true));
                }
            }
            Some(Val::Bool(false))
        }
        Op::Size(a) => size(&eval(a, scope)?),
        Op::Str(f, a) => {
            let (Val::Str(s), Val::Str(arg)) = (eval(&a[0], scope)?, eval(&a[1], scope)?) else {
                return None;
            };
            Some(Val::Bool(match f {
                StrFn::StartsWith => s.starts_with(arg),
                StrFn::EndsWith => s.ends_with(arg),
                StrFn::Contains => s.contains(arg),
                StrFn::Matches => super::regex::cached(arg, |re| re.is_match(s)).ok()?,
            }))
        }
        Op::Fold(c) => {
            let range = eval(&c.range, scope)?;
            let n = len(&range)?;
            scope[c.accu] = eval(&c.init, scope)?;
            for i in 0..n {
                match eval(&c.cond, scope)? {
                    Val::Bool(true) => {}
                    Val::Bool(false) => break,
                    _ => return None,
                }
                scope[c.accu + 1] = item(&range, i)?;
                scope[c.accu] = eval(&c.step, scope)?;
            }
            eval(&c.result, scope)
        }
    }
}

/// `v.name`, or whether it is present when `test`.
fn select<'a, N: Typed>(v: &Val<'a, N>, name: &str, test: bool) -> Option<Val<'a, N>> {
    match *v {
        Val::Object {
            map,
            node,
            keeps_meta,
        } => {
            let found = field(map, node, keeps_meta, name)?;
            if test {
                Some(Val::Bool(found.is_some()))
            } else {
                found
            }
        }
        _ => None,
    }
}

fn literal<N>(lit: &Lit) -> Val<'_, N> {
    match lit {
        Lit::Bool(b) => Val::Bool(*b),
        Lit::Int(i) => Val::Int(*i),
        Lit::UInt(u) => Val::UInt(*u),
        Lit::Str(s) => Val::Str(s),
        Lit::Null => Val::Null,
    }
}

fn boolean<N>(v: Val<'_, N>) -> Option<Val<'_, N>> {
    matches!(v, Val::Bool(_)).then_some(v)
}

/// Equality where the `cel` crate's answer is plain; `None` for type
/// mixes, doubles, lists and maps.
fn equal<N>(l: &Val<'_, N>, r: &Val<'_, N>) -> Option<bool> {
    match (l, r) {
        (Val::Bool(a), Val::Bool(b)) => Some(a == b),
        (Val::Int(a), Val::Int(b)) => Some(a == b),
        (Val::UInt(a), Val::UInt(b)) => Some(a == b),
        (Val::Str(a), Val::Str(b)) => Some(a == b),
        _ => None,
    }
}

fn compare<N>(l: &Val<'_, N>, r: &Val<'_, N>) -> Option<std::cmp::Ordering> {
    match (l, r) {
        (Val::Int(a), Val::Int(b)) => Some(a.cmp(b)),
        (Val::UInt(a), Val::UInt(b)) => Some(a.cmp(b)),
        (Val::Str(a), Val::Str(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn add<'a, N>(l: Val<'a, N>, r: Val<'a, N>) -> Option<Val<'a, N>> {
    match (l, r) {
        (Val::Int(a), Val::Int(b)) => a.checked_add(b).map(Val::Int),
        (Val::UInt(a), Val::UInt(b)) => a.checked_add(b).map(Val::UInt),
        (Val::List(mut a), Val::List(b)) => {
            Arc::make_mut(&mut a).extend(b.iter().cloned());
            Some(Val::List(a))
        }
        _ => None,
    }
}

/// Length of a list; `None` for anything else.
fn len<N>(v: &Val<'_, N>) -> Option<usize> {
    match v {
        Val::Array(a, _) => Some(a.len()),
        Val::List(l) => Some(l.len()),
        _ => None,
    }
}

fn item<'a, N: Typed>(list: &Val<'a, N>, i: usize) -> Option<Val<'a, N>> {
    match list {
        Val::Array(a, items) => from_json(a.get(i)?, *items),
        Val::List(l) => l.get(i).cloned(),
        _ => None,
    }
}

/// `size`: a list's length, a string's code points (as Kubernetes counts).
fn size<'a, N>(v: &Val<'a, N>) -> Option<Val<'a, N>> {
    let n = match v {
        Val::Str(s) => s.chars().count(),
        v => len(v)?,
    };
    i64::try_from(n).ok().map(Val::Int)
}
