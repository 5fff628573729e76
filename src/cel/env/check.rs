//! A CEL type checker for CRD rules, as far as the cost estimate needs it:
//! the type of every expression and the overloads each call may resolve to
//! (`checkedAST.GetType`, `GetOverloadIDs`). The estimator's formulas depend
//! on both (a `+` of strings costs by length, of ints a flat 1; selecting a
//! field of an object costs 1, of a `dyn` nothing).
//!
//! Types come from the schema ([`Decl`]); functions are the CEL standard
//! library plus the libraries Kubernetes 1.34 gives CRD rules. What this
//! checker cannot type is [`Ty::Unknown`], which never produces a verdict of
//! its own: an unknown call costs what the server charges any call it has
//! no formula for (1 plus its arguments).
//!
//! Before checking, calls are rewritten to what cel-go's parser and checker
//! produce: namespaced functions (`ip.isCanonical(x)`, `strings.quote(x)`)
//! lose their pseudo-target, and the two-variable comprehension macros of
//! Kubernetes 1.32+ (`all(k, v, p)`, `transformList`, ...) are expanded.

use foldhash::HashMap;

use kube::core::cel::cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
};

pub use super::ty::Ty;

/// The checked expression: types and overloads by expression id.
pub struct Checked<'a> {
    pub types: HashMap<u64, Ty<'a>>,
    pub overloads: HashMap<u64, Vec<&'static str>>,
    /// Type errors in cel-go's words (a call no overload accepts, a
    /// literal mixing types, a field of a value without fields); only where
    /// the types involved are certain ([`super::sigs`]).
    pub no_overload: Vec<String>,
}

impl<'a> Checked<'a> {
    pub fn ty(&self, id: u64) -> Ty<'a> {
        self.types.get(&id).cloned().unwrap_or(Ty::Unknown)
    }
}

/// Namespaces whose functions cel-go resolves by qualified name.
const NAMESPACES: &[&str] = &[
    "ip", "cidr", "strings", "format", "lists", "sets", "optional", "url", "math",
];

/// Rewrites `e` into the shape cel-go checks: namespaced calls and the
/// two-variable comprehension macros. `next_id` hands out fresh ids.
pub fn normalize(e: &IdedExpr, next_id: &mut u64) -> IdedExpr {
    let expr = match &e.expr {
        Expr::Call(call) => {
            let args: Vec<IdedExpr> = call.args.iter().map(|a| normalize(a, next_id)).collect();
            let target = call.target.as_ref().map(|t| normalize(t, next_id));
            if let Some(IdedExpr {
                expr: Expr::Ident(ns),
                ..
            }) = &target
                && NAMESPACES.contains(&ns.as_str())
            {
                Expr::Call(CallExpr {
                    func_name: format!("{ns}.{}", call.func_name),
                    target: None,
                    args,
                })
            } else if let (Some(target), Some(expanded)) = (
                target.clone(),
                expand_two_var(&call.func_name, &args, &mut |expr: Expr| {
                    *next_id += 1;
                    IdedExpr { id: *next_id, expr }
                }),
            ) {
                let (v1, v2, init, cond, step, result) = expanded;
                Expr::Comprehension(Box::new(ComprehensionExpr {
                    iter_range: target,
                    iter_var: v1,
                    iter_var2: Some(v2),
                    accu_var: "@result".into(),
                    accu_init: init,
                    loop_cond: cond,
                    loop_step: step,
                    result,
                }))
            } else {
                Expr::Call(CallExpr {
                    func_name: call.func_name.clone(),
                    target: target.map(Box::new),
                    args,
                })
            }
        }
        Expr::Select(s) => {
            let mut s = s.clone();
            *s.operand = normalize(&s.operand, next_id);
            Expr::Select(s)
        }
        Expr::List(l) => Expr::List(ListExpr {
            elements: l.elements.iter().map(|x| normalize(x, next_id)).collect(),
            optional_indices: l.optional_indices.clone(),
        }),
        Expr::Map(m) => {
            let mut m: MapExpr = m.clone();
            for entry in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    me.key = normalize(&me.key, next_id);
                    me.value = normalize(&me.value, next_id);
                }
            }
            Expr::Map(m)
        }
        Expr::Struct(s) => {
            let mut s = s.clone();
            for entry in &mut s.entries {
                if let EntryExpr::StructField(f) = &mut entry.expr {
                    f.value = normalize(&f.value, next_id);
                }
            }
            Expr::Struct(s)
        }
        Expr::Comprehension(c) => {
            let mut c = (**c).clone();
            c.iter_range = normalize(&c.iter_range, next_id);
            c.accu_init = normalize(&c.accu_init, next_id);
            c.loop_cond = normalize(&c.loop_cond, next_id);
            c.loop_step = normalize(&c.loop_step, next_id);
            c.result = normalize(&c.result, next_id);
            Expr::Comprehension(Box::new(c))
        }
        other => other.clone(),
    };
    IdedExpr { id: e.id, expr }
}

type Expansion = (String, String, IdedExpr, IdedExpr, IdedExpr, IdedExpr);

/// The expansion of `ext.TwoVarComprehensions`' macros.
fn expand_two_var(
    name: &str,
    args: &[IdedExpr],
    fresh: &mut impl FnMut(Expr) -> IdedExpr,
) -> Option<Expansion> {
    let ident = |e: &IdedExpr| match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        _ => None,
    };
    let n = args.len();
    let arity_ok = match name {
        "all" | "exists" | "existsOne" | "exists_one" => n == 3,
        "transformList" | "transformMap" | "transformMapEntry" => n == 3 || n == 4,
        _ => false,
    };
    if !arity_ok {
        return None;
    }
    let (v1, v2) = (ident(&args[0])?, ident(&args[1])?);
    let accu = |fresh: &mut dyn FnMut(Expr) -> IdedExpr| fresh(Expr::Ident("@result".into()));
    let call = |fresh: &mut dyn FnMut(Expr) -> IdedExpr, f: &str, args: Vec<IdedExpr>| {
        fresh(Expr::Call(CallExpr {
            func_name: f.into(),
            target: None,
            args,
        }))
    };
    let lit = |fresh: &mut dyn FnMut(Expr) -> IdedExpr, v: LiteralValue| fresh(Expr::Literal(v));
    let f: &mut dyn FnMut(Expr) -> IdedExpr = fresh;
    let out = match name {
        "all" => {
            let init = lit(f, LiteralValue::Boolean(true.into()));
            let a = accu(f);
            let cond = call(f, "@not_strictly_false", vec![a]);
            let a = accu(f);
            let step = call(f, "_&&_", vec![a, args[2].clone()]);
            (init, cond, step, accu(f))
        }
        "exists" => {
            let init = lit(f, LiteralValue::Boolean(false.into()));
            let a = accu(f);
            let not = call(f, "!_", vec![a]);
            let cond = call(f, "@not_strictly_false", vec![not]);
            let a = accu(f);
            let step = call(f, "_||_", vec![a, args[2].clone()]);
            (init, cond, step, accu(f))
        }
        "existsOne" | "exists_one" => {
            let init = lit(f, LiteralValue::Int(0.into()));
            let cond = lit(f, LiteralValue::Boolean(true.into()));
            let a = accu(f);
            let one = lit(f, LiteralValue::Int(1.into()));
            let plus = call(f, "_+_", vec![a, one]);
            let a = accu(f);
            let step = call(f, "_?_:_", vec![args[2].clone(), plus, a]);
            let a = accu(f);
            let one = lit(f, LiteralValue::Int(1.into()));
            let result = call(f, "_==_", vec![a, one]);
            (init, cond, step, result)
        }
        _ => {
            let (filter, transform) = if n == 4 {
                (Some(args[2].clone()), args[3].clone())
            } else {
                (None, args[2].clone())
            };
            let (init, step) = if name == "transformList" {
                let init = f(Expr::List(ListExpr {
                    elements: vec![],
                    optional_indices: vec![],
                }));
                let a = accu(f);
                let l = f(Expr::List(ListExpr {
                    elements: vec![transform],
                    optional_indices: vec![],
                }));
                (init, call(f, "_+_", vec![a, l]))
            } else {
                let init = f(Expr::Map(MapExpr { entries: vec![] }));
                let a = accu(f);
                let mut insert_args = vec![a];
                if name == "transformMap" {
                    insert_args.push(f(Expr::Ident(v1.clone())));
                }
                insert_args.push(transform);
                (init, call(f, "cel.@mapInsert", insert_args))
            };
            let step = match filter {
                Some(filter) => {
                    let a = accu(f);
                    call(f, "_?_:_", vec![filter, step, a])
                }
                None => step,
            };
            let cond = lit(f, LiteralValue::Boolean(true.into()));
            (init, cond, step, accu(f))
        }
    };
    Some((v1, v2, out.0, out.1, out.2, out.3))
}

/// Type-checks `e` with `self` (and `oldSelf`) of type `self_ty`.
pub fn check<'a>(e: &IdedExpr, self_ty: Ty<'a>, old_self_optional: bool) -> Checked<'a> {
    let mut c = Checked {
        types: HashMap::default(),
        overloads: HashMap::default(),
        no_overload: Vec::new(),
    };
    let mut env: Vec<(String, Ty<'a>)> = vec![("self".into(), self_ty.clone())];
    let old = if old_self_optional {
        Ty::Opt(Box::new(self_ty))
    } else {
        self_ty
    };
    env.push(("oldSelf".into(), old));
    walk(e, &mut env, &mut c);
    c
}

fn lookup<'a>(env: &[(String, Ty<'a>)], name: &str) -> Option<Ty<'a>> {
    env.iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.clone())
}

fn field_ty<'a>(t: &Ty<'a>, field: &str) -> Ty<'a> {
    match t {
        Ty::Object(d) => d.field(field).map_or(Ty::Unknown, Ty::of),
        Ty::Map(_, v) => (**v).clone(),
        Ty::Dyn => Ty::Dyn,
        // Selecting from an optional gives an optional (`optionalOldSelf`).
        Ty::Opt(inner) => match field_ty(inner, field) {
            Ty::Unknown => Ty::Unknown,
            t => Ty::Opt(Box::new(t)),
        },
        _ => Ty::Unknown,
    }
}

fn walk<'a>(e: &IdedExpr, env: &mut Vec<(String, Ty<'a>)>, c: &mut Checked<'a>) -> Ty<'a> {
    let t = match &e.expr {
        Expr::Literal(l) => match l {
            LiteralValue::Boolean(_) => Ty::Bool,
            LiteralValue::Int(_) => Ty::Int,
            LiteralValue::UInt(_) => Ty::Uint,
            LiteralValue::Double(_) => Ty::Double,
            LiteralValue::String(_) => Ty::String,
            LiteralValue::Bytes(_) => Ty::Bytes,
            LiteralValue::Null => Ty::Null,
        },
        Expr::Ident(name) => lookup(env, name).unwrap_or_else(|| match name.as_str() {
            "int" | "uint" | "double" | "string" | "bytes" | "bool" | "list" | "map"
            | "null_type" | "type" | "dyn" | "optional_type" => Ty::Type,
            _ => {
                // CRD rules declare `self` and `oldSelf` only.
                c.no_overload
                    .push(format!("undeclared reference to '{name}'"));
                Ty::Unknown
            }
        }),
        Expr::Select(s) => {
            let operand = walk(&s.operand, env, c);
            if let Some(why) = super::sigs::no_fields(&operand) {
                c.no_overload.push(why);
            }
            if s.test {
                Ty::Bool
            } else {
                field_ty(&operand, &s.field)
            }
        }
        Expr::Call(call) => {
            let target = call.target.as_ref().map(|t| walk(t, env, c));
            let args: Vec<Ty<'a>> = call.args.iter().map(|a| walk(a, env, c)).collect();
            if let Some(why) = super::sigs::call_error(&call.func_name, target.as_ref(), &args) {
                c.no_overload.push(why);
            }
            let (ids, result) = resolve(&call.func_name, target.as_ref(), &args, &call.args);
            c.overloads.insert(e.id, ids);
            result
        }
        Expr::List(l) => {
            let mut elem: Option<Ty<'a>> = None;
            let mut first: Option<Ty<'a>> = None;
            for (i, x) in l.elements.iter().enumerate() {
                let mut t = walk(x, env, c);
                if l.optional_indices.contains(&i)
                    && let Ty::Opt(inner) = t
                {
                    t = *inner;
                }
                if let Some(why) = first
                    .as_ref()
                    .and_then(|f| super::sigs::mixed_literal(f, &t))
                {
                    c.no_overload.push(why);
                }
                if first.is_none() {
                    first = Some(t.clone());
                }
                elem = Some(match elem {
                    None => t,
                    Some(prev) => Ty::join(&prev, &t),
                });
            }
            Ty::List(Box::new(elem.unwrap_or(Ty::Dyn)))
        }
        Expr::Map(m) => {
            let mut kv: Option<(Ty<'a>, Ty<'a>)> = None;
            let mut first: Option<(Ty<'a>, Ty<'a>)> = None;
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    let k = walk(&me.key, env, c);
                    let mut v = walk(&me.value, env, c);
                    if me.optional
                        && let Ty::Opt(inner) = v
                    {
                        v = *inner;
                    }
                    if let Some((fk, fv)) = &first {
                        let why = super::sigs::mixed_literal(fk, &k)
                            .or_else(|| super::sigs::mixed_literal(fv, &v));
                        c.no_overload.extend(why);
                    } else {
                        first = Some((k.clone(), v.clone()));
                    }
                    kv = Some(match kv {
                        None => (k, v),
                        Some((pk, pv)) => (Ty::join(&pk, &k), Ty::join(&pv, &v)),
                    });
                }
            }
            let (k, v) = kv.unwrap_or((Ty::Dyn, Ty::Dyn));
            Ty::Map(Box::new(k), Box::new(v))
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    walk(&f.value, env, c);
                }
            }
            Ty::Unknown
        }
        Expr::Comprehension(comp) => {
            let range = walk(&comp.iter_range, env, c);
            let accu = walk(&comp.accu_init, env, c);
            let (key, value) = match &range {
                Ty::List(e) => (Ty::Int, (**e).clone()),
                Ty::Map(k, v) => ((**k).clone(), (**v).clone()),
                Ty::Dyn => (Ty::Dyn, Ty::Dyn),
                _ => (Ty::Unknown, Ty::Unknown),
            };
            let depth = env.len();
            match &comp.iter_var2 {
                Some(v2) => {
                    env.push((comp.iter_var.clone(), key));
                    env.push((v2.clone(), value));
                }
                None => {
                    let single = if matches!(range, Ty::Map(..)) {
                        key
                    } else {
                        value
                    };
                    env.push((comp.iter_var.clone(), single));
                }
            }
            // An accumulator that starts as `[]` has the element type of
            // what the step appends (cel-go's free type variable); until the
            // step is typed it is unknown.
            let accu_in_step = match &comp.accu_init.expr {
                Expr::List(l) if l.elements.is_empty() => Ty::List(Box::new(Ty::Unknown)),
                _ => accu.clone(),
            };
            env.push((comp.accu_var.clone(), accu_in_step));
            walk(&comp.loop_cond, env, c);
            let step = walk(&comp.loop_step, env, c);
            env.truncate(depth);
            // The accumulator takes the step's type (an empty list literal
            // becomes a list of what the step appends).
            let accu_ty = match (&accu, &step) {
                (Ty::List(_) | Ty::Map(..), Ty::List(_) | Ty::Map(..)) => step,
                _ => accu,
            };
            env.push((comp.accu_var.clone(), accu_ty));
            let r = walk(&comp.result, env, c);
            env.truncate(depth);
            r
        }
        Expr::Unspecified => Ty::Unknown,
    };
    c.types.insert(e.id, t.clone());
    t
}

fn lib(name: &'static str) -> Ty<'static> {
    Ty::Lib(name)
}

/// The overloads a call may resolve to and its result type. Only the
/// overload ids the estimator prices specially are spelled out; any other
/// call is `"other"`.
fn resolve<'a>(
    name: &str,
    target: Option<&Ty<'a>>,
    args: &[Ty<'a>],
    arg_exprs: &[IdedExpr],
) -> (Vec<&'static str>, Ty<'a>) {
    let other = |t: Ty<'a>| (vec!["other"], t);
    let a0 = args.first().cloned().unwrap_or(Ty::Unknown);
    let a1 = args.get(1).cloned().unwrap_or(Ty::Unknown);
    let member = target.is_some();
    let tgt = target.cloned().unwrap_or(Ty::Unknown);
    match (name, member) {
        ("_&&_", false) => (vec!["logical_and"], Ty::Bool),
        ("_||_", false) => (vec!["logical_or"], Ty::Bool),
        ("_?_:_", false) => (
            vec!["conditional"],
            Ty::join(&a1, &args.get(2).cloned().unwrap_or(Ty::Unknown)),
        ),
        ("!_" | "@not_strictly_false", false) => other(Ty::Bool),
        ("_==_", false) => (vec!["equals"], Ty::Bool),
        ("_!=_", false) => (vec!["not_equals"], Ty::Bool),
        ("_<_" | "_<=_" | "_>_" | "_>=_", false) => {
            let suffix = |t: &Ty| match t {
                Ty::String => Some("string"),
                Ty::Bytes => Some("bytes"),
                _ => None,
            };
            let ids: Vec<&'static str> = match (suffix(&a0), a0.is_dynamic()) {
                (Some(s), _) => vec![ordering_id(name, s)],
                (None, true) => vec![
                    ordering_id(name, "string"),
                    ordering_id(name, "bytes"),
                    "other",
                ],
                (None, false) => vec!["other"],
            };
            (ids, Ty::Bool)
        }
        ("_+_", false) => match (&a0, &a1) {
            (Ty::String, _) | (_, Ty::String) => (vec!["add_string"], Ty::String),
            (Ty::Bytes, _) | (_, Ty::Bytes) => (vec!["add_bytes"], Ty::Bytes),
            // An accumulator that starts as `[]` takes what is appended.
            (Ty::List(x), Ty::List(y)) if matches!(**x, Ty::Unknown) => {
                (vec!["add_list"], Ty::List(y.clone()))
            }
            (Ty::List(x), Ty::List(y)) => (vec!["add_list"], Ty::List(Box::new(Ty::join(x, y)))),
            (Ty::List(x), _) | (_, Ty::List(x)) => (vec!["add_list"], Ty::List(x.clone())),
            (Ty::Timestamp, _) | (_, Ty::Timestamp) => other(Ty::Timestamp),
            (Ty::Duration, _) => other(Ty::Duration),
            (x, y) if x.is_dynamic() || y.is_dynamic() => (
                vec!["add_string", "add_bytes", "add_list", "other"],
                if matches!(x, Ty::Unknown) || matches!(y, Ty::Unknown) {
                    Ty::Unknown
                } else {
                    Ty::Dyn
                },
            ),
            (x, _) => other(x.clone()),
        },
        ("_-_" | "_*_" | "_/_" | "_%_", false) => match (&a0, &a1) {
            (Ty::Timestamp, Ty::Timestamp) => other(Ty::Duration),
            (x, _) => other(x.clone()),
        },
        ("-_", false) => other(a0),
        ("_[_]", false) => match &a0 {
            Ty::List(e) => (vec!["index_list"], (**e).clone()),
            Ty::Map(_, v) => (vec!["index_map"], (**v).clone()),
            Ty::Dyn => (vec!["index_list", "index_map"], Ty::Dyn),
            _ => other(Ty::Unknown),
        },
        ("_[?_]", false) => match &a0 {
            Ty::List(e) => other(Ty::Opt(e.clone())),
            Ty::Map(_, v) => other(Ty::Opt(v.clone())),
            _ => other(Ty::Opt(Box::new(Ty::Dyn))),
        },
        ("_?._", false) => {
            let field = match arg_exprs.get(1).map(|e| &e.expr) {
                Some(Expr::Literal(LiteralValue::String(s))) => s.to_string(),
                _ => String::new(),
            };
            // On an optional, the result stays one optional.
            let from = match &a0 {
                Ty::Opt(inner) => inner,
                t => t,
            };
            other(Ty::Opt(Box::new(field_ty(from, &field))))
        }
        ("@in", false) => match &a1 {
            Ty::List(_) => (vec!["in_list"], Ty::Bool),
            Ty::Map(..) => (vec!["in_map"], Ty::Bool),
            t if t.is_dynamic() => (vec!["in_list", "in_map"], Ty::Bool),
            _ => other(Ty::Bool),
        },
        ("size", _) => other(Ty::Int),
        ("int", false) => other(Ty::Int),
        ("uint", false) => other(Ty::Uint),
        ("double", false) => other(Ty::Double),
        ("bool", false) => other(Ty::Bool),
        ("string", false) => match a0 {
            Ty::Bytes => (vec!["bytes_to_string"], Ty::String),
            _ => other(Ty::String),
        },
        ("bytes", false) => match a0 {
            Ty::String => (vec!["string_to_bytes"], Ty::Bytes),
            _ => other(Ty::Bytes),
        },
        ("dyn", false) => other(Ty::Dyn),
        ("type", false) => other(Ty::Type),
        ("duration", false) => other(Ty::Duration),
        ("timestamp", false) => other(Ty::Timestamp),
        ("matches", true) => (vec!["matches_string"], Ty::Bool),
        ("matches", false) => (vec!["matches"], Ty::Bool),
        ("contains", true) => (vec!["contains_string"], Ty::Bool),
        ("startsWith", true) => (vec!["starts_with_string"], Ty::Bool),
        ("endsWith", true) => (vec!["ends_with_string"], Ty::Bool),
        ("format", true) => (vec!["string_format"], Ty::String),
        ("strings.quote", false) => (vec!["strings_quote"], Ty::String),
        (
            "getFullYear" | "getMonth" | "getDayOfYear" | "getDate" | "getDayOfMonth"
            | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            true,
        ) => other(Ty::Int),
        // Strings (ext.Strings v2) and lists (Kubernetes).
        ("charAt" | "lowerAscii" | "upperAscii" | "replace" | "substring" | "trim", true) => {
            other(Ty::String)
        }
        ("indexOf" | "lastIndexOf", true) => other(Ty::Int),
        ("split", true) => other(Ty::List(Box::new(Ty::String))),
        ("join", true) => other(Ty::String),
        ("isSorted", true) => other(Ty::Bool),
        ("sum" | "max" | "min", true) => other(tgt.elem()),
        // ext.Lists v3.
        ("slice", true) => (vec!["list_slice"], tgt.clone()),
        ("flatten", true) => {
            let id = if args.is_empty() {
                "list_flatten"
            } else {
                "list_flatten_int"
            };
            let inner = match tgt.elem() {
                Ty::List(e) => Ty::List(e),
                _ => Ty::List(Box::new(Ty::Dyn)),
            };
            (vec![id], inner)
        }
        ("lists.range", false) => (vec!["lists_range"], Ty::List(Box::new(Ty::Int))),
        ("reverse", true) if matches!(tgt, Ty::List(_)) => (vec!["list_reverse"], tgt.clone()),
        ("distinct", true) => (vec!["list_distinct"], tgt.clone()),
        ("sort", true) => (vec!["list_sort"], tgt.clone()),
        ("first" | "last", true) => other(Ty::Opt(Box::new(tgt.elem()))),
        // ext.Sets.
        ("sets.contains", false) => (vec!["list_sets_contains_list"], Ty::Bool),
        ("sets.intersects", false) => (vec!["list_sets_intersects_list"], Ty::Bool),
        ("sets.equivalent", false) => (vec!["list_sets_equivalent_list"], Ty::Bool),
        // Regex (Kubernetes).
        ("find", true) => other(Ty::String),
        ("findAll", true) => other(Ty::List(Box::new(Ty::String))),
        // URLs.
        ("url", false) => other(lib("url")),
        ("isURL", false) => other(Ty::Bool),
        ("getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath", true) => {
            other(Ty::String)
        }
        ("getQuery", true) => other(Ty::Map(
            Box::new(Ty::String),
            Box::new(Ty::List(Box::new(Ty::String))),
        )),
        // Quantity.
        ("quantity", false) => other(lib("quantity")),
        ("isQuantity" | "isInteger" | "isGreaterThan" | "isLessThan", _) => other(Ty::Bool),
        ("sign" | "asInteger" | "compareTo", true) => other(Ty::Int),
        ("asApproximateFloat", true) => other(Ty::Double),
        ("add" | "sub", true) => other(tgt.clone()),
        // IP and CIDR.
        ("ip", false) => other(lib("ip")),
        ("cidr", false) => other(lib("cidr")),
        ("isIP" | "isCIDR" | "ip.isCanonical", false) => other(Ty::Bool),
        ("ip", true) => (vec!["cidr_ip"], lib("ip")),
        ("family" | "prefixLength", true) => other(Ty::Int),
        (
            "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast",
            true,
        ) => other(Ty::Bool),
        ("masked", true) => other(lib("cidr")),
        ("containsIP", true) => match a0 {
            Ty::String => (vec!["cidr_contains_ip_string"], Ty::Bool),
            _ => other(Ty::Bool),
        },
        ("containsCIDR", true) => match a0 {
            Ty::String => (vec!["cidr_contains_cidr_string"], Ty::Bool),
            _ => other(Ty::Bool),
        },
        // Semver.
        ("semver", false) => other(lib("semver")),
        ("isSemver", false) => other(Ty::Bool),
        ("major" | "minor" | "patch", true) => other(Ty::Int),
        // Format.
        ("format.named", false) => other(Ty::Opt(Box::new(lib("format")))),
        (f, false) if f.starts_with("format.") => other(lib("format")),
        ("validate", true) => other(Ty::Opt(Box::new(Ty::List(Box::new(Ty::String))))),
        // Optionals.
        ("optional.of" | "optional.ofNonZeroValue", false) => other(Ty::Opt(Box::new(a0))),
        ("optional.none", false) => other(Ty::Opt(Box::new(Ty::Dyn))),
        ("hasValue", true) => other(Ty::Bool),
        ("value", true) => match tgt {
            Ty::Opt(t) => other(*t),
            _ => other(Ty::Unknown),
        },
        ("orValue", true) => match tgt {
            Ty::Opt(t) => other(*t),
            _ => other(Ty::Unknown),
        },
        ("or", true) => other(tgt.clone()),
        ("cel.@mapInsert", false) => other(a0),
        _ => other(Ty::Unknown),
    }
}

fn ordering_id(op: &str, suffix: &str) -> &'static str {
    match (op, suffix) {
        ("_<_", "string") => "less_string",
        ("_<_", _) => "less_bytes",
        ("_<=_", "string") => "less_equals_string",
        ("_<=_", _) => "less_equals_bytes",
        ("_>_", "string") => "greater_string",
        ("_>_", _) => "greater_bytes",
        ("_>=_", "string") => "greater_equals_string",
        _ => "greater_equals_bytes",
    }
}
