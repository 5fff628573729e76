//! Rules rewritten from an old rule, judged by the shape of the two
//! expressions rather than over the values the old schema allows.
//!
//! Releases often rewrite a rule without changing what it accepts: quotes
//! and parentheses (the same expression tree), or `has(x.f)` guards added
//! before a field the old rule read anyway. The abstract evaluation in
//! [`crate::cel::partial`] cannot relate two list comprehensions to each
//! other (Gateway API's "values must be unique" rules), so these two
//! shapes are decided here, on the syntax trees.
//!
//! The guard argument. Take OLD, a rule every stored object passed
//! (evaluated to `true`, not to an error), and NEW, the same tree with
//! some `has(P)` added as conjuncts. Wherever OLD's evaluation of a
//! subtree ends in a value (not an error), NEW's does too, and the same
//! value, provided each guard is justified:
//!
//! - it joins a conjunction in which another conjunct errors whenever `P`
//!   is absent: then OLD's conjunction is `false` or an error there, and
//!   NEW's is `false`;
//! - or it joins the condition of `c ? t : f` whose `t` errors whenever
//!   `P` is absent: where OLD took `t` without `P`, OLD was an error.
//!
//! CEL's `&&` and `||` absorb an error only when the other side decides
//! the result, and then both rules see that side alike; every other
//! operator passes an error on. So a rule that held keeps holding.

use kube::core::cel::cel::common::ast::{
    ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, operators,
};

use crate::cel::parse::parse_rule;

/// The rule's expression tree as text, without node ids: two rules with
/// the same canonical form are the same rule written differently (quotes,
/// spacing, parentheses, comments).
pub fn canonical(rule: &str) -> Option<String> {
    let expr = parse_rule(rule).ok()?;
    let mut out = String::new();
    write(&expr, &[], &mut out);
    Some(out)
}

/// Writes `e` with the identifiers renamed by `alias` (innermost last).
fn write(e: &IdedExpr, alias: &[(&str, &str)], out: &mut String) {
    match &e.expr {
        Expr::Unspecified => out.push('?'),
        Expr::Literal(l) => out.push_str(&literal(l)),
        Expr::Ident(n) => {
            let n = alias
                .iter()
                .rev()
                .find(|(from, _)| from == n)
                .map_or(n.as_str(), |(_, to)| to);
            out.push_str(n);
        }
        Expr::Select(s) => {
            out.push_str(if s.test { "has(" } else { "sel(" });
            write(&s.operand, alias, out);
            out.push(',');
            out.push_str(&s.field);
            out.push(')');
        }
        Expr::Call(c) => {
            out.push_str(&c.func_name);
            out.push('(');
            if let Some(t) = &c.target {
                write(t, alias, out);
                out.push(';');
            }
            for a in &c.args {
                write(a, alias, out);
                out.push(',');
            }
            out.push(')');
        }
        Expr::List(l) => {
            out.push('[');
            for x in &l.elements {
                write(x, alias, out);
                out.push(',');
            }
            out.push_str(&format!("{:?}]", l.optional_indices));
        }
        Expr::Map(m) => entries("map{", &m.entries, alias, out),
        Expr::Struct(s) => entries(&format!("{}{{", s.type_name), &s.entries, alias, out),
        Expr::Comprehension(c) => {
            out.push_str(&format!(
                "comp({},{:?},{};",
                c.iter_var, c.iter_var2, c.accu_var
            ));
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                write(part, alias, out);
                out.push(';');
            }
            out.push(')');
        }
    }
}

fn entries(
    open: &str,
    entries: &[kube::core::cel::cel::common::ast::IdedEntryExpr],
    alias: &[(&str, &str)],
    out: &mut String,
) {
    out.push_str(open);
    for e in entries {
        match &e.expr {
            EntryExpr::StructField(f) => {
                out.push_str(&format!(
                    "{}{}=",
                    f.field,
                    if f.optional { "?" } else { "" }
                ));
                write(&f.value, alias, out);
            }
            EntryExpr::MapEntry(m) => {
                write(&m.key, alias, out);
                out.push_str(if m.optional { "?=" } else { "=" });
                write(&m.value, alias, out);
            }
        }
        out.push(',');
    }
    out.push('}');
}

fn literal(l: &LiteralValue) -> String {
    match l {
        LiteralValue::Boolean(b) => format!("{}", **b),
        LiteralValue::Int(i) => format!("{}", **i),
        LiteralValue::UInt(u) => format!("{}u", **u),
        LiteralValue::Double(d) => format!("{:?}d", **d),
        LiteralValue::String(s) => format!("{:?}", s.to_string()),
        LiteralValue::Bytes(b) => format!("b{b:?}"),
        LiteralValue::Null => "null".to_string(),
    }
}

/// [`canonical`] of one expression.
pub(crate) fn text_of(e: &IdedExpr) -> String {
    text(e, &[])
}

/// An expression as a reader writes it, for a fact: `self.a.startsWith("x")`;
/// a comprehension is shown as its range and macro-like form.
pub(crate) fn display(e: &IdedExpr) -> String {
    match &e.expr {
        Expr::Ident(n) => n.clone(),
        Expr::Literal(l) => match l {
            LiteralValue::String(s) => format!("{:?}", s.to_string()),
            other => literal(other),
        },
        Expr::Select(s) if s.test => format!("has({}.{})", display(&s.operand), s.field),
        Expr::Select(s) => format!("{}.{}", display(&s.operand), s.field),
        Expr::Call(c) if c.func_name == operators::CONDITIONAL && c.args.len() == 3 => format!(
            "({} ? {} : {})",
            display(&c.args[0]),
            display(&c.args[1]),
            display(&c.args[2])
        ),
        Expr::Call(c) => {
            let args: Vec<String> = c.args.iter().map(display).collect();
            match &c.target {
                Some(t) => format!("{}.{}({})", display(t), c.func_name, args.join(", ")),
                None => format!("{}({})", c.func_name, args.join(", ")),
            }
        }
        Expr::Comprehension(c) => format!(
            "{}.<{} over {}>",
            display(&c.iter_range),
            "macro",
            c.iter_var
        ),
        _ => "…".to_string(),
    }
}

/// Whether `self` is the only variable `e` reads from outside it: its
/// value is then one per object, wherever it is evaluated.
pub(crate) fn only_self(e: &IdedExpr) -> bool {
    fn go(e: &IdedExpr, bound: &mut Vec<String>) -> bool {
        match &e.expr {
            Expr::Ident(n) => n == "self" || bound.contains(n),
            Expr::Literal(_) | Expr::Unspecified => true,
            Expr::Select(s) => go(&s.operand, bound),
            Expr::Call(c) => {
                c.target.as_deref().is_none_or(|t| go(t, bound))
                    && c.args.iter().all(|a| go(a, bound))
            }
            Expr::List(l) => l.elements.iter().all(|x| go(x, bound)),
            Expr::Map(m) => m.entries.iter().all(|en| match &en.expr {
                EntryExpr::MapEntry(me) => go(&me.key, bound) && go(&me.value, bound),
                EntryExpr::StructField(f) => go(&f.value, bound),
            }),
            Expr::Struct(st) => st.entries.iter().all(|en| match &en.expr {
                EntryExpr::MapEntry(me) => go(&me.key, bound) && go(&me.value, bound),
                EntryExpr::StructField(f) => go(&f.value, bound),
            }),
            Expr::Comprehension(c) => {
                if !go(&c.iter_range, bound) || !go(&c.accu_init, bound) {
                    return false;
                }
                let depth = bound.len();
                bound.push(c.iter_var.clone());
                bound.extend(c.iter_var2.clone());
                bound.push(c.accu_var.clone());
                let ok = go(&c.loop_cond, bound) && go(&c.loop_step, bound) && go(&c.result, bound);
                bound.truncate(depth);
                ok
            }
        }
    }
    go(e, &mut Vec::new())
}

fn text(e: &IdedExpr, alias: &[(&str, &str)]) -> String {
    let mut out = String::new();
    write(e, alias, &mut out);
    out
}

/// When `new` is `old` with `has(...)` guards added only where `old`
/// could not evaluate without them (see the module's argument), the
/// guards, as the report names them.
pub fn guarded_rewrite(new: &str, old: &str) -> Option<Vec<String>> {
    let (new, old) = (parse_rule(new).ok()?, parse_rule(old).ok()?);
    let mut walk = Walk {
        bound: Vec::new(),
        guards: Vec::new(),
    };
    (walk.align(&new, &old, None) && !walk.guards.is_empty()).then_some(walk.guards)
}

struct Walk {
    /// Comprehension variables in scope, innermost last, each with the
    /// canonical text of the range it iterates.
    bound: Vec<(String, String)>,
    /// The guards justified so far.
    guards: Vec<String>,
}

impl Walk {
    /// Whether NEW's `n` agrees with OLD's `o` wherever `o` evaluates to
    /// a value. `then` is OLD's then-branch when `o` is the condition of a
    /// ternary.
    fn align(&mut self, n: &IdedExpr, o: &IdedExpr, then: Option<&IdedExpr>) -> bool {
        if text(n, &[]) == text(o, &[]) {
            return true;
        }
        if junction(n, operators::LOGICAL_AND) {
            return self.junction(operators::LOGICAL_AND, n, o, then);
        }
        if junction(n, operators::LOGICAL_OR) {
            return self.junction(operators::LOGICAL_OR, n, o, None);
        }
        match (&n.expr, &o.expr) {
            (Expr::Call(a), Expr::Call(b))
                if a.func_name == b.func_name
                    && a.args.len() == b.args.len()
                    && a.target.is_some() == b.target.is_some() =>
            {
                if let (Some(x), Some(y)) = (&a.target, &b.target)
                    && !self.align(x, y, None)
                {
                    return false;
                }
                if a.func_name == operators::CONDITIONAL && a.target.is_none() {
                    return self.align(&a.args[0], &b.args[0], Some(&b.args[1]))
                        && self.align(&a.args[1], &b.args[1], None)
                        && self.align(&a.args[2], &b.args[2], None);
                }
                a.args
                    .iter()
                    .zip(&b.args)
                    .all(|(x, y)| self.align(x, y, None))
            }
            (Expr::Select(a), Expr::Select(b)) if a.field == b.field && a.test == b.test => {
                self.align(&a.operand, &b.operand, None)
            }
            (Expr::Comprehension(a), Expr::Comprehension(b)) => self.comprehension(a, b),
            _ => false,
        }
    }

    fn comprehension(&mut self, a: &ComprehensionExpr, b: &ComprehensionExpr) -> bool {
        if a.iter_var != b.iter_var
            || a.iter_var2 != b.iter_var2
            || a.accu_var != b.accu_var
            || !self.align(&a.iter_range, &b.iter_range, None)
            || !self.align(&a.accu_init, &b.accu_init, None)
        {
            return false;
        }
        self.bound
            .push((a.iter_var.clone(), text(&b.iter_range, &[])));
        let inner = self.align(&a.loop_cond, &b.loop_cond, None)
            && self.align(&a.loop_step, &b.loop_step, None)
            && self.align(&a.result, &b.result, None);
        self.bound.pop();
        inner
    }

    /// A conjunction (`op` is `&&`) or disjunction (`||`) of NEW against
    /// OLD's: the same terms in order, each aligned, plus guards (`has(P)`
    /// in a conjunction, `!has(P)` in a disjunction), each justified by an
    /// OLD term that errors without `P` or, in a condition, by OLD's
    /// then-branch. Without `P`, OLD's junction is an error unless another
    /// term decides it, and then NEW's guard agrees with that term.
    fn junction(&mut self, op: &str, n: &IdedExpr, o: &IdedExpr, then: Option<&IdedExpr>) -> bool {
        let mut ns = Vec::new();
        flatten(op, n, &mut ns);
        let mut os = Vec::new();
        flatten(op, o, &mut os);
        let mut rest = os.iter().peekable();
        let mut guards = Vec::new();
        for x in ns {
            if let Some(y) = rest.peek()
                && text(x, &[]) == text(y, &[])
            {
                rest.next();
                continue;
            }
            if let Some(g) = guard(op, x) {
                guards.push(g);
                continue;
            }
            match rest.next() {
                Some(y) if self.align(x, y, None) => {}
                _ => return false,
            }
        }
        if rest.next().is_some() {
            return false;
        }
        for g in guards {
            let path = read_of(g);
            let by_conjunct = os.iter().any(|c| self.strict(c, &path, &[]));
            let by_branch = then.is_some_and(|t| self.strict(t, &path, &[]));
            if !by_conjunct && !by_branch {
                return false;
            }
            let shown = if op == operators::LOGICAL_OR {
                format!("`!has({})`", shown_path(g))
            } else {
                format!("`has({})`", shown_path(g))
            };
            if !self.guards.contains(&shown) {
                self.guards.push(shown);
            }
        }
        true
    }

    /// Whether `e` is an error whenever the field `path` (a select, not a
    /// test) is absent. `alias` renames comprehension variables that take
    /// the value of an outer one.
    fn strict(&self, e: &IdedExpr, path: &str, alias: &[(&str, &str)]) -> bool {
        if text(e, alias) == path {
            return true;
        }
        match &e.expr {
            Expr::Select(s) => self.strict(&s.operand, path, alias),
            Expr::Call(c) => match (c.func_name.as_str(), c.args.as_slice()) {
                (operators::LOGICAL_AND, [a, b]) => {
                    let (sa, sb) = (self.strict(a, path, alias), self.strict(b, path, alias));
                    (sa && (sb || never_false(b, alias))) || (sb && never_false(a, alias))
                }
                (operators::LOGICAL_OR | operators::NOT_STRICTLY_FALSE, _) => false,
                (operators::CONDITIONAL, [c0, t, f]) => {
                    self.strict(c0, path, alias)
                        || (self.strict(t, path, alias) && self.strict(f, path, alias))
                }
                _ => {
                    c.target
                        .as_deref()
                        .is_some_and(|t| self.strict(t, path, alias))
                        || c.args.iter().any(|a| self.strict(a, path, alias))
                }
            },
            Expr::Comprehension(c) => {
                if self.strict(&c.iter_range, path, alias) {
                    return true;
                }
                self.strict_over_member(c, path, alias)
            }
            _ => false,
        }
    }

    /// A comprehension that evaluates its predicate on every element
    /// (`exists_one`, `filter`: the step is `P ? ... : ...`, the loop never
    /// stops early) over the same range an outer variable `v` iterates:
    /// one step takes `v` itself, so it errors when `P` with `v` does.
    fn strict_over_member(
        &self,
        c: &ComprehensionExpr,
        path: &str,
        alias: &[(&str, &str)],
    ) -> bool {
        let every_element = matches!(&c.loop_cond.expr,
            Expr::Literal(LiteralValue::Boolean(b)) if **b);
        let Expr::Call(step) = &c.loop_step.expr else {
            return false;
        };
        if !every_element || step.func_name != operators::CONDITIONAL || step.args.len() != 3 {
            return false;
        }
        let range = text(&c.iter_range, alias);
        // Only a range outside every comprehension (`self`, `self.x`) is
        // the same list for the outer variable and this one.
        if self.bound.iter().any(|(v, _)| mentions(&c.iter_range, v)) {
            return false;
        }
        self.bound.iter().rev().any(|(v, r)| {
            if *r != range || c.iter_var == *v {
                return false;
            }
            let mut inner: Vec<(&str, &str)> = alias.to_vec();
            inner.push((c.iter_var.as_str(), v.as_str()));
            self.strict(&step.args[0], path, &inner)
        })
    }
}

/// `a && b && ...` (or `||`), as the parser nests it.
fn junction(e: &IdedExpr, op: &str) -> bool {
    matches!(&e.expr, Expr::Call(c) if c.func_name == op && c.target.is_none())
}

fn flatten<'e>(op: &str, e: &'e IdedExpr, out: &mut Vec<&'e IdedExpr>) {
    match &e.expr {
        Expr::Call(c) if c.func_name == op && c.target.is_none() => {
            for a in &c.args {
                flatten(op, a, out);
            }
        }
        _ => out.push(e),
    }
}

/// The canonical text of the read `x.f` that the guard `has(x.f)` tests.
fn read_of(guard: &IdedExpr) -> String {
    match &guard.expr {
        Expr::Select(s) => format!("sel({},{})", text(&s.operand, &[]), s.field),
        _ => String::new(),
    }
}

/// The `has(x.f)` of a guard: the term itself in a conjunction, under a
/// `!` in a disjunction.
fn guard<'e>(op: &str, e: &'e IdedExpr) -> Option<&'e IdedExpr> {
    let tested = if op == operators::LOGICAL_OR {
        match &e.expr {
            Expr::Call(c) if c.func_name == operators::LOGICAL_NOT && c.args.len() == 1 => {
                &c.args[0]
            }
            _ => return None,
        }
    } else {
        e
    };
    match &tested.expr {
        Expr::Select(s) if s.test && path_like(&s.operand) => Some(tested),
        _ => None,
    }
}

fn path_like(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Ident(_) => true,
        Expr::Select(s) => !s.test && path_like(&s.operand),
        _ => false,
    }
}

/// `x.f` for the guard `has(x.f)`.
fn shown_path(guard: &IdedExpr) -> String {
    fn go(e: &IdedExpr) -> String {
        match &e.expr {
            Expr::Ident(n) => n.clone(),
            Expr::Select(s) => format!("{}.{}", go(&s.operand), s.field),
            _ => "?".to_string(),
        }
    }
    go(guard)
}

/// True or an error on every value (never `false`): `true`, and `x == x`
/// (JSON has no NaN, so a stored value equals itself).
fn never_false(e: &IdedExpr, alias: &[(&str, &str)]) -> bool {
    match &e.expr {
        Expr::Literal(LiteralValue::Boolean(b)) => **b,
        Expr::Call(c) if c.func_name == operators::EQUALS && c.args.len() == 2 => {
            text(&c.args[0], alias) == text(&c.args[1], alias)
        }
        Expr::Call(c) if c.func_name == operators::LOGICAL_AND && c.args.len() == 2 => {
            never_false(&c.args[0], alias) && never_false(&c.args[1], alias)
        }
        _ => false,
    }
}

fn mentions(e: &IdedExpr, var: &str) -> bool {
    text(e, &[])
        .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '@'))
        .any(|w| w == var)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD_UNIQUE: &str = "self.all(a1, a1.type == 'IPAddress' ? self.exists_one(a2, \
a2.type == a1.type && a2.value == a1.value) : true )";
    const NEW_UNIQUE: &str = "self.all(a1, a1.type == 'IPAddress' && has(a1.value) ? \
self.exists_one(a2, a2.type == a1.type && has(a2.value) && a2.value == a1.value) : true )";

    #[test]
    fn the_same_tree_written_differently_is_one_rule() {
        assert_eq!(
            canonical(
                "((has(self.operation) ? self.operation : '') == 'UPSERT') ? self.value != '' : true"
            ),
            canonical(
                "((has(self.operation) ? self.operation : \"\") == \"UPSERT\") ? (self.value != \"\") : true"
            )
        );
        assert_ne!(canonical("self.a == 'x'"), canonical("self.a == 'y'"));
        assert_ne!(
            canonical("self.all(a, a > 0)"),
            canonical("self.exists(a, a > 0)")
        );
    }

    #[test]
    fn gateway_apis_uniqueness_rules_only_add_guards_the_old_rules_needed() {
        assert_eq!(
            guarded_rewrite(NEW_UNIQUE, OLD_UNIQUE),
            Some(vec![
                "`has(a1.value)`".to_string(),
                "`has(a2.value)`".to_string()
            ])
        );
    }

    #[test]
    fn a_guard_the_old_rule_did_not_need_changes_what_passes() {
        // `self.b` alone never reads `self.a`: an object without `a` and
        // with `b == 1` passed the old rule and fails the new one.
        assert_eq!(
            guarded_rewrite("has(self.a) && self.b == 1", "self.b == 1"),
            None
        );
        // The old then-branch does not read `a1.value` on every list: an
        // `exists_one` over another list may not reach it.
        let old = "self.all(a1, a1.t == 'X' ? self.other.exists_one(a2, a2.v == a1.value) : true)";
        let new = "self.all(a1, a1.t == 'X' && has(a1.value) ? \
self.other.exists_one(a2, a2.v == a1.value) : true)";
        assert_eq!(guarded_rewrite(new, old), None);
        // `exists` stops at the first match, before reaching `a1` itself.
        let old = "self.all(a1, a1.t == 'X' ? self.exists(a2, a2.value == a1.value) : true)";
        let new = "self.all(a1, a1.t == 'X' && has(a1.value) ? \
self.exists(a2, a2.value == a1.value) : true)";
        assert_eq!(guarded_rewrite(new, old), None);
        // Something else changed besides the guard.
        assert_eq!(
            guarded_rewrite("has(self.a) && self.a == 2", "self.a == 1"),
            None
        );
        // Under an `||` too: where it absorbed the old rule's error, its
        // other side decided both rules alike.
        assert_eq!(
            guarded_rewrite(
                "(has(self.a) && self.a == 1) || self.b",
                "self.a == 1 || self.b"
            ),
            Some(vec!["`has(self.a)`".to_string()])
        );
    }

    #[test]
    fn a_disjunct_for_objects_without_the_field_only_admits_what_could_not_evaluate() {
        let old = "self.type == 'Hostname' ? self.value.matches('^[a-z]+$') : true";
        let new =
            "self.type == 'Hostname' ? (!has(self.value) || self.value.matches('^[a-z]+$')) : true";
        assert_eq!(
            guarded_rewrite(new, old),
            Some(vec!["`!has(self.value)`".to_string()])
        );
        // With no old term that reads the field, `!has` admits objects the
        // old rule refused.
        assert_eq!(
            guarded_rewrite("!has(self.value) || self.w", "self.w"),
            None
        );
    }

    #[test]
    fn a_guard_in_a_condition_needs_the_old_branch_to_read_the_field() {
        assert_eq!(
            guarded_rewrite(
                "self.t == 'X' && has(self.v) ? self.v.size() > 0 : true",
                "self.t == 'X' ? self.v.size() > 0 : true"
            ),
            Some(vec!["`has(self.v)`".to_string()])
        );
        assert_eq!(
            guarded_rewrite(
                "self.t == 'X' && has(self.v) ? self.w > 0 : true",
                "self.t == 'X' ? self.w > 0 : true"
            ),
            None
        );
    }
}
