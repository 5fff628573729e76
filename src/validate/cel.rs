//! `x-kubernetes-validations`: rules compiled once with kube-cel, evaluated
//! on the decoded object (pruned, nulls dropped, defaults applied), with
//! `self` bound per schema node.
//!
//! Only nodes that carry rules are converted to CEL values. Conversion
//! follows the schema the way the API server's does: declared property names
//! are escaped (`__dash__`, reserved words), map keys are not, `number`
//! fields are doubles, `date-time`/`duration`/`byte` strings become
//! timestamps, durations and bytes.
//!
//! Outcomes per rule: true passes; false is a [`Rule::Cel`] violation with
//! the rule's `messageExpression`/`message`; a "no such key" evaluation error
//! is a violation too (the server rejects the object with that error); any
//! other evaluation error, a non-bool result, or a rule that does not compile
//! (including functions and macros kube-cel lacks) is [`NotEvaluated`].
//! Transition rules (using `oldSelf`) are skipped on create unless
//! `optionalOldSelf` is set, where `oldSelf` is an empty optional.

use std::collections::HashMap;
use std::sync::Arc;

use kube::core::cel::CompilationResult;
use kube::core::cel::cel::objects::{Key, Map as CelMap, OptionalValue};
use kube::core::cel::cel::{Context, ExecutionError, Value as CelValue};
use serde_json::Value;

use super::node::{Additional, CompiledNode};
use super::trail::Trail;
use super::{NotEvaluated, Rule, ValidationOutcome, Violation};
use crate::cel::functions::BASE;
use crate::cel::rule::{CelRule, escape};
use crate::openapi::formats::{Format, decode_base64, parse_go_duration, parse_timestamp};

/// Deepest value (below the rule's node) converted for CEL.
const CEL_VALUE_DEPTH: usize = 100;

/// Evaluates every rule of the schema against `object`.
pub(crate) fn evaluate(root: &CompiledNode, object: &Value, out: &mut ValidationOutcome) {
    evaluate_with(root, object, out, !nests_deeper(object, CEL_VALUE_DEPTH));
}

/// [`evaluate`], with `direct` telling whether rules may be decided by
/// [`super::cel_direct`] before the `cel` crate is asked. An object nesting
/// deeper than CEL values may goes the `cel` crate's way only, so that its
/// rules keep their "nests deeper" outcome.
pub(crate) fn evaluate_with(
    root: &CompiledNode,
    object: &Value,
    out: &mut ValidationOutcome,
    direct: bool,
) {
    BASE.with(|base| {
        let mut ev = Eval { base, out, direct };
        ev.walk(root, object, None, &Trail::ROOT, 0, true);
    });
}

/// Some value of `v` lies more than `limit` levels below it.
fn nests_deeper(v: &Value, limit: usize) -> bool {
    match v {
        Value::Array(a) => a.iter().any(|x| limit == 0 || nests_deeper(x, limit - 1)),
        Value::Object(o) => o.values().any(|x| limit == 0 || nests_deeper(x, limit - 1)),
        _ => false,
    }
}

struct Eval<'b, 'o> {
    base: &'b Context<'static>,
    out: &'o mut ValidationOutcome,
    direct: bool,
}

impl<'b> Eval<'b, '_> {
    /// `cel` is `v` already converted for CEL when an ancestor with rules
    /// converted its whole value: descendants take their part of it
    /// instead of converting their subtree again.
    fn walk(
        &mut self,
        node: &CompiledNode,
        v: &Value,
        cel: Option<CelValue>,
        trail: &Trail,
        depth: usize,
        is_root: bool,
    ) {
        if !node.has_rules || depth > super::node::MAX_DEPTH {
            return;
        }
        let cel = if node.rules.is_empty() {
            cel
        } else {
            self.rules(node, v, cel, trail, is_root)
        };
        let map = match &cel {
            Some(CelValue::Map(m)) => Some(m),
            _ => None,
        };
        match v {
            Value::Object(o) => {
                for (name, p) in &node.properties {
                    if !p.has_rules {
                        continue;
                    }
                    let cv = match super::cel_direct::get(o, name) {
                        Some(c) if c.is_null() && !p.nullable => p.default.as_ref(),
                        Some(c) => Some(c),
                        None => p.default.as_ref(),
                    };
                    if let Some(cv) = cv {
                        let child = map.and_then(|m| {
                            let k = Key::String(p.cel_name.clone()?);
                            m.map.get(&k).cloned()
                        });
                        self.walk(p, cv, child, &trail.prop(name), depth + 1, false);
                    }
                }
                if let Additional::Schema(a) = &node.additional
                    && a.has_rules
                {
                    for (k, c) in o {
                        if node.properties.contains_key(k) || (c.is_null() && a.drops_null()) {
                            continue;
                        }
                        let child = map.and_then(|m| m.map.get(&key(k.clone())).cloned());
                        self.walk(a, c, child, &trail.key(k), depth + 1, false);
                    }
                }
            }
            Value::Array(a) => {
                if let Some(items) = &node.items {
                    let list = match &cel {
                        Some(CelValue::List(l)) if l.len() == a.len() => Some(l),
                        _ => None,
                    };
                    for (i, it) in a.iter().enumerate() {
                        let child = list.and_then(|l| l.get(i).cloned());
                        self.walk(items, it, child, &trail.index(i), depth + 1, false);
                    }
                }
            }
            _ => {}
        }
    }

    fn not_evaluated(&mut self, trail: &Trail, rule: &str, reason: String) {
        let schema_path = trail.schema_path();
        let seen = self
            .out
            .not_evaluated
            .iter()
            .any(|n| n.rule == rule && n.schema_path == schema_path && n.reason == reason);
        if !seen {
            let reason = if reason.chars().count() > 300 {
                let cut: String = reason.chars().take(300).collect();
                format!("{cut}...")
            } else {
                reason
            };
            self.out.not_evaluated.push(NotEvaluated {
                schema_path,
                rule: rule.to_string(),
                reason,
            });
        }
    }

    /// Runs the node's rules; returns the node's value as converted for
    /// CEL, when a rule needed it, for the rules below to reuse.
    fn rules(
        &mut self,
        node: &CompiledNode,
        v: &Value,
        converted: Option<CelValue>,
        trail: &Trail,
        is_root: bool,
    ) -> Option<CelValue> {
        let mut converted = converted;
        if !self.direct && converted.is_none() {
            match to_cel(Some(node), v, 0, is_root) {
                Ok(x) => converted = Some(x),
                Err(reason) => {
                    for r in node.rules.get() {
                        self.not_evaluated(trail, &r.source, reason.clone());
                    }
                    return None;
                }
            }
        }
        let base: &'b Context<'static> = self.base;
        // `self` bound for the `cel` crate, built when a rule first needs it.
        let mut ctx: Option<Context<'b>> = None;
        let mut scope = super::cel_direct::Scope::default();
        for rule in node.rules.get() {
            let transition = match rule.is_transition() {
                Ok(t) => t,
                Err(e) => {
                    self.not_evaluated(trail, &rule.source, format!("does not compile: {e}"));
                    continue;
                }
            };
            if transition && rule.optional_old_self != Some(true) {
                // Transition rules do not run on create.
                continue;
            }
            if self.direct
                && let Some(program) = &rule.direct
            {
                match super::cel_direct::evaluate(program, node, v, is_root, &mut scope) {
                    Some(true) => continue,
                    Some(false) if !rule.has_message_expression => {
                        let message = fixed_message(rule);
                        self.out
                            .violations
                            .push(violation(rule, trail, message, true));
                        continue;
                    }
                    _ => {}
                }
            }
            let cr = match rule.compiled() {
                Ok(cr) => cr,
                Err(e) => {
                    self.not_evaluated(trail, &rule.source, format!("does not compile: {e}"));
                    continue;
                }
            };
            let ctx = match &mut ctx {
                Some(ctx) => ctx,
                None => {
                    let self_val = match converted.clone() {
                        Some(x) => x,
                        None => match to_cel(Some(node), v, 0, is_root) {
                            Ok(x) => {
                                converted = Some(x.clone());
                                x
                            }
                            Err(reason) => {
                                self.not_evaluated(trail, &rule.source, reason);
                                continue;
                            }
                        },
                    };
                    let mut scope = base.new_inner_scope();
                    scope.add_variable_from_value("self", self_val);
                    ctx.insert(scope)
                }
            };
            if transition {
                let mut inner = ctx.new_inner_scope();
                inner.add_variable_from_value(
                    "oldSelf",
                    CelValue::Opaque(Arc::new(OptionalValue::none())),
                );
                self.run(rule, cr, &inner, trail, false);
            } else {
                self.run(rule, cr, ctx, trail, true);
            }
        }
        converted
    }

    fn run(
        &mut self,
        rule: &CelRule,
        cr: &CompilationResult,
        ctx: &Context,
        trail: &Trail,
        ratchetable: bool,
    ) {
        match cr.program.execute(ctx) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => {
                let message = message(rule, cr, ctx);
                self.out
                    .violations
                    .push(violation(rule, trail, message, ratchetable));
            }
            Ok(other) => {
                let reason = format!("evaluated to {:?} instead of a bool", other.type_of());
                self.not_evaluated(trail, &cr.rule.rule, reason);
            }
            Err(ExecutionError::NoSuchKey(k)) => {
                let message = format!("no such key: {k}");
                self.out
                    .violations
                    .push(violation(rule, trail, message, ratchetable));
            }
            Err(ExecutionError::UndeclaredReference(name)) => {
                let reason = format!("uses `{name}`, which kube-cel does not support");
                self.not_evaluated(trail, &cr.rule.rule, reason);
            }
            Err(e) => {
                self.not_evaluated(trail, &cr.rule.rule, format!("evaluation error: {e}"));
            }
        }
    }
}

/// A failed rule's violation, at its node or its `fieldPath`.
fn violation(rule: &CelRule, trail: &Trail, message: String, ratchetable: bool) -> Violation {
    let mut path = trail.concrete();
    if let Some(fp) = rule.field_path.as_deref() {
        if path.is_empty() {
            path.push_str(fp.trim_start_matches('.'));
        } else {
            path.push_str(fp);
        }
    }
    Violation {
        path,
        schema_path: trail.schema_path(),
        rule: Rule::Cel,
        message,
        ratchetable,
    }
}

/// The rule's message: `messageExpression` when it yields a non-empty
/// string, else `message`, else the server's default.
fn message(rule: &CelRule, cr: &CompilationResult, ctx: &Context) -> String {
    if let Some(p) = &cr.message_program
        && let Ok(CelValue::String(s)) = p.execute(ctx)
        && !s.trim().is_empty()
    {
        return s.to_string();
    }
    fixed_message(rule)
}

/// `message`, else the server's default.
fn fixed_message(rule: &CelRule) -> String {
    match &rule.message {
        Some(m) if !m.is_empty() => m.clone(),
        _ => format!("failed rule: {}", rule.source),
    }
}

fn key(k: String) -> Key {
    Key::String(Arc::new(k))
}

fn string(s: &str, node: Option<&CompiledNode>) -> CelValue {
    let format = node.filter(|n| !n.int_or_string).and_then(|n| n.format);
    match format {
        Some(Format::DateTime) => {
            if let Some(t) = parse_timestamp(s) {
                return CelValue::Timestamp(t);
            }
        }
        Some(Format::Duration) => {
            if let Some(d) = parse_go_duration(s) {
                return CelValue::Duration(chrono::Duration::nanoseconds(d));
            }
        }
        Some(Format::Byte) => {
            if let Some(b) = decode_base64(s) {
                return CelValue::Bytes(Arc::new(b));
            }
        }
        _ => {}
    }
    CelValue::String(Arc::new(s.to_string()))
}

/// The decoded value as CEL sees it; `Err` when it nests too deep.
fn to_cel(
    node: Option<&CompiledNode>,
    v: &Value,
    depth: usize,
    is_root: bool,
) -> Result<CelValue, String> {
    if depth > CEL_VALUE_DEPTH {
        return Err(format!(
            "the value nests deeper than {CEL_VALUE_DEPTH} levels below the rule"
        ));
    }
    Ok(match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => super::cel_direct::number(n, node),
        Value::String(s) => string(s, node),
        Value::Array(a) => {
            let items = node.and_then(|n| n.items.as_deref());
            let list = a
                .iter()
                .map(|x| to_cel(items, x, depth + 1, false))
                .collect::<Result<Vec<_>, _>>()?;
            CelValue::List(Arc::new(list))
        }
        Value::Object(o) => {
            let mut map = HashMap::with_capacity(o.len());
            match node {
                None => {
                    for (k, c) in o {
                        if let Some(name) = escape(k) {
                            map.insert(key(name), to_cel(None, c, depth + 1, false)?);
                        }
                    }
                }
                Some(n) => {
                    let untyped =
                        n.properties.is_empty() && matches!(n.additional, Additional::Absent);
                    for (k, c) in o {
                        if let Some(p) = n.properties.get(k) {
                            let c = if c.is_null() && !p.nullable {
                                match &p.default {
                                    Some(d) => d,
                                    None => continue,
                                }
                            } else {
                                c
                            };
                            if let Some(name) = &p.cel_name {
                                map.insert(
                                    Key::String(name.clone()),
                                    to_cel(Some(p), c, depth + 1, false)?,
                                );
                            }
                            continue;
                        }
                        match &n.additional {
                            Additional::Schema(a) => {
                                if c.is_null() && a.drops_null() {
                                    continue;
                                }
                                map.insert(key(k.clone()), to_cel(Some(a), c, depth + 1, false)?);
                            }
                            Additional::Any => {
                                map.insert(key(k.clone()), to_cel(None, c, depth + 1, false)?);
                            }
                            Additional::Absent => {
                                let kept = (n.preserve_unknown && untyped)
                                    || ((is_root || n.embedded)
                                        && matches!(
                                            k.as_str(),
                                            "apiVersion" | "kind" | "metadata"
                                        ));
                                if kept && let Some(name) = escape(k) {
                                    map.insert(key(name), to_cel(None, c, depth + 1, false)?);
                                }
                            }
                        }
                    }
                    if n.has_defaults {
                        for (name, p) in &n.properties {
                            if let (Some(d), false) = (&p.default, o.contains_key(name))
                                && let Some(escaped) = &p.cel_name
                            {
                                map.insert(
                                    Key::String(escaped.clone()),
                                    to_cel(Some(p), d, depth + 1, false)?,
                                );
                            }
                        }
                    }
                }
            }
            CelValue::Map(CelMap { map: Arc::new(map) })
        }
    })
}
