//! `x-kubernetes-validations` run on an object: the walk that finds the
//! nodes with rules in the decoded object (pruned, nulls dropped, defaults
//! applied), binds `self` per node and turns each outcome into a violation.
//! The language itself (conversion of values, the in-place evaluator, the
//! library functions) is [`crate::cel`]'s; only nodes that carry rules are
//! converted.
//!
//! Outcomes per rule: true passes; false is a [`Rule::Cel`] violation with
//! the rule's `messageExpression`/`message`; a "no such key" evaluation error
//! is a violation too (the server rejects the object with that error); any
//! other evaluation error, a non-bool result, or a rule that does not compile
//! (including functions and macros kube-cel lacks) is [`NotEvaluated`].
//! Transition rules (using `oldSelf`) are skipped on create unless
//! `optionalOldSelf` is set, where `oldSelf` is an empty optional.

use std::sync::Arc;

use kube::core::cel::CompilationResult;
use kube::core::cel::cel::objects::{Key, OptionalValue};
use kube::core::cel::cel::{Context, ExecutionError, Value as CelValue};
use serde_json::Value;

use super::node::{Additional, CompiledNode};
use super::trail::Trail;
use super::{NotEvaluated, Rule, ValidationOutcome, Violation};
use crate::cel::direct::{self, Scope};
use crate::cel::functions::BASE;
use crate::cel::rule::CelRule;
use crate::cel::value::{CEL_VALUE_DEPTH, key, to_cel};

/// Evaluates every rule of the schema against `object`.
pub(crate) fn evaluate(root: &CompiledNode, object: &Value, out: &mut ValidationOutcome) {
    evaluate_with(root, object, out, !nests_deeper(object, CEL_VALUE_DEPTH));
}

/// [`evaluate`], with `direct` telling whether rules may be decided by
/// [`crate::cel::direct`] before the `cel` crate is asked. An object nesting
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
                    let cv = match direct::get(o, name) {
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
        let mut scope = Scope::default();
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
                match direct::evaluate(program, node, v, is_root, &mut scope) {
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
                // An evaluation error, which the server never ratchets.
                let message = format!("no such key: {k}");
                self.out
                    .violations
                    .push(violation(rule, trail, message, false));
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
