//! The static cost estimate of a CEL rule, ported from cel-go's
//! `checker/cost.go` with the estimators the API server plugs into it
//! (Kubernetes' `library/cost.go`, the size estimator of
//! `apiextensions-apiserver`'s `compilation.go`, and the list and set
//! extensions' own). The server refuses a CRD whose rule's maximum
//! estimate, times how many times the rule can run per object, exceeds
//! 10,000,000, or whose rules add up to more than 100,000,000; being a
//! port, this reproduces the server's figure rather than a guess, quirks
//! included (a comprehension over a literal list sizes its variable by the
//! rule's own node, as the server's path-based size estimator does).

use foldhash::HashMap;

use kube::core::cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::check::{Checked, Ty};
use super::decl::{Decl, Shape};

const STRING_TRAVERSAL: f64 = 0.1;
const REGEX_LENGTH: f64 = 0.25;
const LIST_CREATE: u64 = 10;
const MAP_CREATE: u64 = 30;
const STRUCT_CREATE: u64 = 40;
/// `cel.MaxNameFormatRegexSize`.
const MAX_NAME_FORMAT_REGEX: f64 = 128.0;
/// `cel.MaxFormatSize`.
const MAX_FORMAT_SIZE: u64 = 64;

/// A `[min, max]` range, of a cost or of a size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub min: u64,
    pub max: u64,
}

const UNKNOWN: Range = Range {
    min: 0,
    max: u64::MAX,
};

fn fixed(v: u64) -> Range {
    Range { min: v, max: v }
}

fn by_factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let ceil = (xf * f).ceil();
    if ceil >= 2f64.powi(64) {
        u64::MAX
    } else {
        ceil as u64
    }
}

impl Range {
    fn add(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }
    fn mul(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }
    fn factor(self, f: f64) -> Range {
        Range {
            min: by_factor(self.min, f),
            max: by_factor(self.max, f),
        }
    }
    fn union(self, o: Range) -> Range {
        Range {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    List,
    Map,
    Unknown,
}

#[derive(Debug, Clone, Copy)]
struct EntrySize {
    container: Container,
    key: Range,
    val: Range,
}

fn union_entries(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
    let (a, b) = (a?, b?);
    Some(EntrySize {
        container: a.container,
        key: a.key.union(b.key),
        val: a.val.union(b.val),
    })
}

#[derive(Clone)]
struct LocalVar {
    path: Vec<String>,
    size: Option<Range>,
    entry: Option<EntrySize>,
}

/// `checker.AstNode`: what an estimator sees of an argument.
#[derive(Clone)]
struct AstNode<'e, 'a> {
    path: Vec<String>,
    ty: Ty<'a>,
    expr: Option<&'e IdedExpr>,
    size: Option<Range>,
}

struct Coster<'e, 'a> {
    /// Nodes sized by the request limit instead of a declared bound, and
    /// the keyword that would bound each.
    unbounded: std::cell::RefCell<std::collections::BTreeSet<(String, &'static str)>>,
    /// Every node whose size the rule's cost depends on.
    read: std::cell::RefCell<std::collections::BTreeSet<SizeRead>>,
    checked: &'e Checked<'a>,
    root: Decl<'a>,
    paths: HashMap<u64, Vec<String>>,
    locals: HashMap<String, Vec<LocalVar>>,
    sizes: HashMap<u64, Range>,
    entries: HashMap<u64, EntrySize>,
    /// cel-go 0.29 (Kubernetes 1.37) costs the global `matches(s, re)` as
    /// the method form; before, as a plain call.
    global_matches: bool,
}

/// The first minor whose cel-go costs the global `matches(s, re)` by its
/// arguments' sizes.
const GLOBAL_MATCHES_COSTED_SINCE: u32 = 37;

/// A rule's estimated cost, and the nodes it read whose size only the
/// request limit bounds.
pub struct Estimate {
    pub cost: Range,
    /// (`self.spec.items[*]`, `maxItems`), in path order.
    pub unbounded: Vec<(String, &'static str)>,
    /// The sizes the estimate took, in path order.
    pub read: Vec<SizeRead>,
}

/// A node whose size a rule's cost depends on, as the estimate sized it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SizeRead {
    /// `self.spec.items`.
    pub path: String,
    /// Its largest size, in `unit`.
    pub max: u64,
    /// `items`, `entries`, `characters` (`bytes` as the write-time
    /// estimate sizes strings, and for `format: byte`).
    pub unit: &'static str,
    /// Declared by a keyword (or an enum, a format), not the request size.
    pub bounded: bool,
}

/// The estimated cost of `expr` (normalized and checked) for a rule whose
/// `self` is declared by `root`, by the estimator of Kubernetes `minor`.
pub fn estimate<'a>(
    expr: &IdedExpr,
    checked: &Checked<'a>,
    root: Decl<'a>,
    minor: u32,
) -> Estimate {
    let mut c = Coster {
        global_matches: minor >= GLOBAL_MATCHES_COSTED_SINCE,
        unbounded: Default::default(),
        read: Default::default(),
        checked,
        root,
        paths: HashMap::default(),
        locals: HashMap::default(),
        sizes: HashMap::default(),
        entries: HashMap::default(),
    };
    let cost = c.cost(expr);
    Estimate {
        cost,
        unbounded: c.unbounded.into_inner().into_iter().collect(),
        read: c.read.into_inner().into_iter().collect(),
    }
}

/// `self.a[*].b` for a size-estimator path.
fn render(path: &[String]) -> String {
    let mut out = String::from("self");
    for p in path.iter().skip(1) {
        match p.as_str() {
            "@items" | "@values" => out.push_str("[*]"),
            "@keys" => out.push_str(".<key>"),
            f => {
                out.push('.');
                out.push_str(f);
            }
        }
    }
    out
}

impl<'e, 'a> Coster<'e, 'a> {
    fn ty(&self, e: &IdedExpr) -> Ty<'a> {
        self.checked.ty(e.id)
    }

    fn peek(&self, name: &str) -> Option<&LocalVar> {
        self.locals.get(name).and_then(|v| v.last())
    }

    fn push(&mut self, name: &str, var: LocalVar) {
        self.locals.entry(name.to_string()).or_default().push(var);
    }

    fn pop(&mut self, name: &str) {
        if let Some(v) = self.locals.get_mut(name) {
            v.pop();
        }
    }

    fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr
            && let Some(v) = self.peek(name)
        {
            return v.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// The path-based size estimator of `compilation.go`: the declared
    /// bound of the node the path reaches from the rule's node.
    fn estimate_size(&self, path: &[String]) -> Option<Range> {
        if path.is_empty() {
            return None;
        }
        let mut node = self.root;
        for name in &path[1..] {
            node = match (name.as_str(), node.shape()) {
                ("@items" | "@values", Shape::List(e) | Shape::Map(e)) => e,
                ("@keys", Shape::Map(_)) => Decl::map_key(),
                (_, Shape::Object) => node.field(name)?,
                _ => return None,
            };
        }
        let unit = match node.shape() {
            Shape::List(_) => Some("items"),
            Shape::Map(_) => Some("entries"),
            Shape::String if node.counts_chars() => Some("characters"),
            Shape::String | Shape::Bytes => Some("bytes"),
            _ => None,
        };
        if let Some(unit) = unit {
            self.read.borrow_mut().insert(SizeRead {
                path: render(path),
                max: node.max_elements().max(0) as u64,
                unit,
                bounded: node.bounded(),
            });
        }
        if !node.bounded() {
            let keyword = match node.shape() {
                Shape::List(_) => "maxItems",
                Shape::Map(_) => "maxProperties",
                _ => "maxLength",
            };
            self.unbounded.borrow_mut().insert((render(path), keyword));
        }
        Some(Range {
            min: 0,
            max: node.max_elements().max(0) as u64,
        })
    }

    fn compute_size(&mut self, e: &IdedExpr) -> Option<Range> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = expr_size(e) {
            return Some(s);
        }
        let path = self.path(e);
        if let Some(s) = self.estimate_size(&path) {
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        if self.ty(e).is_scalar() {
            return Some(fixed(1));
        }
        if let Expr::Ident(name) = &e.expr
            && let Some(v) = self.peek(name)
            && let Some(s) = v.size
        {
            return Some(s);
        }
        None
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Range {
        self.compute_size(e).unwrap_or(UNKNOWN)
    }

    fn entry_size(&self, e: &IdedExpr) -> Option<EntrySize> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        if let Expr::Ident(name) = &e.expr {
            return self.peek(name).and_then(|v| v.entry);
        }
        None
    }

    fn node(&mut self, e: &'e IdedExpr) -> AstNode<'e, 'a> {
        let mut path = self.path(e);
        if path
            .first()
            .is_some_and(|p| p == "@result" || p == "__result__")
        {
            path = Vec::new();
        }
        AstNode {
            path,
            ty: self.ty(e),
            expr: Some(e),
            size: self.compute_size(e),
        }
    }

    /// `sizeEstimate` of the Kubernetes estimator and `estimateSize` of the
    /// extensions: the node's computed size, else its declared one.
    fn node_size(&self, n: &AstNode) -> Range {
        n.size
            .or_else(|| self.estimate_size(&n.path))
            .unwrap_or(UNKNOWN)
    }

    fn cost(&mut self, e: &'e IdedExpr) -> Range {
        match &e.expr {
            Expr::Literal(_) => fixed(0),
            Expr::Ident(name) => {
                let path = match self.peek(name) {
                    Some(v) => v.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                fixed(1)
            }
            Expr::Select(sel) => {
                if sel.test {
                    // PresenceTestHasCost(false) in the Kubernetes environment.
                    return self.cost(&sel.operand);
                }
                let mut sum = self.cost(&sel.operand);
                if matches!(self.ty(&sel.operand), Ty::Object(_) | Ty::Map(..)) {
                    sum = sum.add(fixed(1));
                }
                let mut p = self.path(&sel.operand);
                p.push(sel.field.clone());
                self.paths.insert(e.id, p);
                sum
            }
            Expr::Call(_) => self.cost_call(e),
            Expr::List(l) => {
                let mut sum = fixed(0);
                let mut item = Range {
                    min: if l.elements.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                for x in &l.elements {
                    sum = sum.add(self.cost(x));
                    item = item.union(self.size_or_unknown(x));
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        container: Container::List,
                        key: fixed(1),
                        val: item,
                    },
                );
                sum.add(fixed(LIST_CREATE))
            }
            Expr::Map(m) => {
                let mut sum = fixed(0);
                let empty = m.entries.is_empty();
                let start = Range {
                    min: if empty { 0 } else { u64::MAX },
                    max: 0,
                };
                let (mut key, mut val) = (start, start);
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.add(self.cost(&me.key));
                        sum = sum.add(self.cost(&me.value));
                        key = key.union(self.size_or_unknown(&me.key));
                        val = val.union(self.size_or_unknown(&me.value));
                    }
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        container: Container::Map,
                        key,
                        val,
                    },
                );
                sum.add(fixed(MAP_CREATE))
            }
            Expr::Struct(s) => {
                let mut sum = fixed(0);
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        sum = sum.add(self.cost(&f.value));
                    }
                }
                sum.add(fixed(STRUCT_CREATE))
            }
            Expr::Comprehension(_) => self.cost_comprehension(e),
            Expr::Unspecified => fixed(0),
        }
    }

    fn container_of(&self, entry: Option<EntrySize>, range: &IdedExpr) -> Container {
        match entry.map_or(Container::Unknown, |e| e.container) {
            Container::Unknown => match self.ty(range) {
                Ty::List(_) => Container::List,
                Ty::Map(..) => Container::Map,
                _ => Container::Unknown,
            },
            c => c,
        }
    }

    fn cost_comprehension(&mut self, e: &'e IdedExpr) -> Range {
        let Expr::Comprehension(comp) = &e.expr else {
            return fixed(0);
        };
        let mut sum = self.cost(&comp.iter_range);
        sum = sum.add(self.cost(&comp.accu_init));
        let accu = LocalVar {
            path: self.path(&comp.accu_init),
            size: self.compute_size(&comp.accu_init),
            entry: self.entry_size(&comp.accu_init),
        };
        self.push(&comp.accu_var, accu);
        let entry = self.entry_size(&comp.iter_range);
        let container = self.container_of(entry, &comp.iter_range);
        let range_path = self.path(&comp.iter_range);
        let with = |sub: &str| {
            let mut p = range_path.clone();
            p.push(sub.to_string());
            p
        };
        match &comp.iter_var2 {
            Some(v2) => {
                let key_path = with(if container == Container::List {
                    "@indices"
                } else {
                    "@keys"
                });
                self.push(
                    &comp.iter_var,
                    LocalVar {
                        path: key_path,
                        size: entry.map(|x| x.key),
                        entry: None,
                    },
                );
                let val_path = with(if container == Container::List {
                    "@items"
                } else {
                    "@values"
                });
                self.push(
                    v2,
                    LocalVar {
                        path: val_path,
                        size: entry.map(|x| x.val),
                        entry: None,
                    },
                );
            }
            None => {
                let (sub, size) = if container == Container::List {
                    ("@items", entry.map(|x| x.val))
                } else {
                    ("@keys", entry.map(|x| x.key))
                };
                self.push(
                    &comp.iter_var,
                    LocalVar {
                        path: with(sub),
                        size,
                        entry: None,
                    },
                );
            }
        }
        let loop_cost = self.cost(&comp.loop_cond);
        let step_cost = self.cost(&comp.loop_step);
        self.pop(&comp.iter_var);
        if let Some(v2) = &comp.iter_var2 {
            self.pop(v2);
        }
        sum = sum.add(self.cost(&comp.result));
        self.pop(&comp.accu_var);
        let range_count = self.size_or_unknown(&comp.iter_range);
        sum = sum.add(range_count.mul(step_cost.add(loop_cost)));
        match &comp.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(s) = self.compute_size(&comp.accu_init) {
                    self.sizes.insert(e.id, s);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                self.sizes.insert(e.id, range_count);
                if let Some(step_entry) = self.entry_size(&comp.loop_step) {
                    self.entries.insert(e.id, step_entry);
                }
            }
            _ => {}
        }
        sum
    }

    fn cost_call(&mut self, e: &'e IdedExpr) -> Range {
        let Expr::Call(call) = &e.expr else {
            return fixed(0);
        };
        if call.func_name == "dyn"
            && call.target.is_none()
            && let Some(arg) = call.args.first()
        {
            let c = self.cost(arg);
            if let Some(s) = self.compute_size(arg) {
                self.sizes.insert(e.id, s);
            }
            if let Some(s) = self.entry_size(arg) {
                self.entries.insert(e.id, s);
            }
            return fixed(1).add(c);
        }
        let mut arg_costs = Vec::with_capacity(call.args.len());
        let mut arg_nodes = Vec::with_capacity(call.args.len());
        for a in &call.args {
            arg_costs.push(self.cost(a));
            arg_nodes.push(self.node(a));
        }
        let ids = self
            .checked
            .overloads
            .get(&e.id)
            .cloned()
            .unwrap_or_else(|| vec!["other"]);
        let mut sum = fixed(0);
        let target = match &call.target {
            Some(t) => {
                sum = sum.add(self.cost(t));
                Some(self.node(t))
            }
            None => None,
        };
        let mut fn_cost = Range {
            min: u64::MAX,
            max: 0,
        };
        let mut result: Option<Range> = None;
        for id in ids {
            let (cost, size) = self.function_cost(
                e,
                &call.func_name,
                id,
                target.as_ref(),
                &arg_nodes,
                &arg_costs,
            );
            fn_cost = fn_cost.union(cost);
            if let Some(s) = size {
                result = Some(result.map_or(s, |r| r.union(s)));
            }
            if (id == "index_list" || id == "index_map")
                && let Some(first) = call.args.first()
            {
                result = self.entry_size(first).map(|x| x.val);
                let mut p = self.path(first);
                p.push(
                    if id == "index_list" {
                        "@items"
                    } else {
                        "@values"
                    }
                    .into(),
                );
                self.paths.insert(e.id, p);
            }
            if result.is_none() {
                result = self.compute_size(e);
            }
        }
        if let Some(r) = result {
            self.sizes.insert(e.id, r);
        }
        sum.add(fn_cost)
    }

    fn function_cost(
        &mut self,
        e: &IdedExpr,
        function: &str,
        id: &str,
        target: Option<&AstNode<'e, 'a>>,
        args: &[AstNode<'e, 'a>],
        arg_costs: &[Range],
    ) -> (Range, Option<Range>) {
        let arg_sum = arg_costs.iter().fold(fixed(0), |s, c| s.add(*c));
        if let Some((c, size)) = self.extension_estimate(id, target, args) {
            return (c.add(arg_sum), size);
        }
        if let Some((c, size)) = self.kubernetes_estimate(function, id, target, args) {
            return (c.add(arg_sum), size);
        }
        let size_of = |n: &AstNode| n.size.unwrap_or(UNKNOWN);
        match id {
            "string_format" => {
                if let Some(t) = target {
                    return (size_of(t).factor(STRING_TRAVERSAL).add(arg_sum), None);
                }
            }
            "string_to_bytes" if args.len() == 1 => {
                let sz = size_of(&args[0]);
                return (
                    sz.factor(STRING_TRAVERSAL).add(arg_sum),
                    Some(Range {
                        min: sz.min,
                        max: sz.max.saturating_mul(4),
                    }),
                );
            }
            "bytes_to_string" if args.len() == 1 => {
                let sz = size_of(&args[0]);
                return (
                    sz.factor(STRING_TRAVERSAL).add(arg_sum),
                    Some(Range {
                        min: sz.min / 4,
                        max: sz.max,
                    }),
                );
            }
            "strings_quote" if args.len() == 1 => {
                let sz = size_of(&args[0]);
                return (
                    sz.factor(STRING_TRAVERSAL).add(arg_sum),
                    Some(Range {
                        min: sz.min.saturating_add(2),
                        max: sz.max.saturating_mul(2).saturating_add(2),
                    }),
                );
            }
            "starts_with_string" | "ends_with_string" if args.len() == 1 => {
                return (
                    size_of(&args[0]).factor(STRING_TRAVERSAL).add(arg_sum),
                    None,
                );
            }
            "in_list" if args.len() == 2 => {
                return (size_of(&args[1]).factor(1.0).add(arg_sum), None);
            }
            "matches_string" if args.len() == 1 => {
                if let Some(t) = target {
                    let s = size_of(t).add(fixed(1)).factor(STRING_TRAVERSAL);
                    let r = size_of(&args[0]).factor(REGEX_LENGTH);
                    return (s.mul(r).add(arg_sum), None);
                }
            }
            "matches" if self.global_matches && target.is_none() && args.len() == 2 => {
                let s = size_of(&args[0]).add(fixed(1)).factor(STRING_TRAVERSAL);
                let r = size_of(&args[1]).factor(REGEX_LENGTH);
                return (s.mul(r).add(arg_sum), None);
            }
            "contains_string" if args.len() == 1 => {
                if let Some(t) = target {
                    let s = size_of(t).factor(STRING_TRAVERSAL);
                    let sub = size_of(&args[0]).factor(STRING_TRAVERSAL);
                    return (s.mul(sub).add(arg_sum), None);
                }
            }
            "logical_or" | "logical_and" if arg_costs.len() == 2 => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                return (
                    Range {
                        min: l.min,
                        max: l.add(r).max,
                    },
                    None,
                );
            }
            "conditional" if args.len() == 3 && arg_costs.len() == 3 => {
                let size = size_of(&args[1]).union(size_of(&args[2]));
                if let (Some(a), Some(b)) = (args[1].expr, args[2].expr) {
                    let u = union_entries(self.entry_size(a), self.entry_size(b));
                    if let Some(u) = u {
                        self.entries.insert(e.id, u);
                    }
                }
                let c = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
                return (c, Some(size));
            }
            "add_string" | "add_bytes" | "add_list" if args.len() == 2 => {
                let result = size_of(&args[0]).add(size_of(&args[1]));
                if let (Some(a), Some(b)) = (args[0].expr, args[1].expr) {
                    let u = union_entries(self.entry_size(a), self.entry_size(b));
                    if let Some(u) = u {
                        self.entries.insert(e.id, u);
                    }
                }
                if id == "add_list" {
                    return (fixed(1).add(arg_sum), Some(result));
                }
                return (result.factor(STRING_TRAVERSAL).add(arg_sum), Some(result));
            }
            "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals"
                if args.len() == 2 =>
            {
                let (l, r) = (size_of(&args[0]), size_of(&args[1]));
                let smallest = l.max.min(r.max);
                let min = u64::from(smallest > 0);
                return (
                    Range { min, max: smallest }
                        .factor(STRING_TRAVERSAL)
                        .add(arg_sum),
                    None,
                );
            }
            _ => {}
        }
        (fixed(1).add(arg_sum), None)
    }

    /// The estimators the list and set extensions register per overload.
    fn extension_estimate(
        &self,
        id: &str,
        target: Option<&AstNode>,
        args: &[AstNode],
    ) -> Option<(Range, Option<Range>)> {
        let list_call = |factor: f64, size: Range| {
            let c = size.factor(factor).add(fixed(1)).add(fixed(LIST_CREATE));
            Some((c, Some(size)))
        };
        let int_literal = |n: &AstNode, default: u64| match n.expr.map(|e| &e.expr) {
            Some(Expr::Literal(LiteralValue::Int(i))) => {
                let v = **i;
                if v < 0 { 0 } else { v as u64 }
            }
            _ => default,
        };
        match id {
            "list_slice" if args.len() == 2 => {
                let sz = self.node_size(target?);
                let start = int_literal(&args[0], 0);
                let end = int_literal(&args[1], sz.max);
                list_call(1.0, fixed(end.wrapping_sub(start)))
            }
            "lists_range" if target.is_none() && args.len() == 1 => {
                list_call(1.0, fixed(int_literal(&args[0], u64::MAX)))
            }
            "list_reverse" if args.is_empty() => list_call(1.0, self.node_size(target?)),
            "list_flatten" | "list_flatten_int" if args.len() <= 1 => {
                let depth = args.first().map_or(1, |a| int_literal(a, u64::MAX));
                list_call(depth as f64, self.node_size(target?))
            }
            "list_distinct" if args.is_empty() => {
                let sz = self.node_size(target?);
                list_call(2.0, sz.mul(sz))
            }
            "list_sort" if args.is_empty() => {
                let t = target?;
                let sz = self.node_size(t);
                let factor = match t.ty.clone() {
                    Ty::List(e) if matches!(*e, Ty::String | Ty::Bytes) => 2.0 + STRING_TRAVERSAL,
                    _ => 2.0,
                };
                list_call(factor, sz.mul(sz))
            }
            "list_sets_contains_list"
            | "list_sets_intersects_list"
            | "list_sets_equivalent_list"
                if args.len() == 2 =>
            {
                let factor = if id == "list_sets_equivalent_list" {
                    2.0
                } else {
                    1.0
                };
                let c = self
                    .node_size(&args[0])
                    .mul(self.node_size(&args[1]))
                    .factor(factor)
                    .add(fixed(1));
                Some((c, None))
            }
            _ => None,
        }
    }

    /// The element of a list (or the key of a map) as an estimator node
    /// (`listElementNode`).
    fn element_node(list: &AstNode<'e, 'a>) -> Option<AstNode<'e, 'a>> {
        let ty = match &list.ty {
            Ty::List(e) => (**e).clone(),
            Ty::Map(k, _) => (**k).clone(),
            Ty::Opt(t) => (**t).clone(),
            _ => return None,
        };
        let mut path = list.path.clone();
        if !path.is_empty() {
            path.push("@items".into());
        }
        Some(AstNode {
            path,
            ty,
            expr: None,
            size: None,
        })
    }

    /// Kubernetes' `CostEstimator.EstimateCallCost`, by function name.
    fn kubernetes_estimate(
        &self,
        function: &str,
        id: &str,
        target: Option<&AstNode<'e, 'a>>,
        args: &[AstNode<'e, 'a>],
    ) -> Option<(Range, Option<Range>)> {
        let size = |n: &AstNode| self.node_size(n);
        let traverse = |n: &AstNode| size(n).factor(STRING_TRAVERSAL);
        match function {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let t = target?;
                match Self::element_node(t) {
                    Some(el) => {
                        let mut el_cost = fixed(1);
                        if matches!(el.ty, Ty::String | Ty::Bytes) {
                            el_cost = el_cost.add(size(&el).factor(STRING_TRAVERSAL));
                        }
                        Some((size(t).mul(el_cost), None))
                    }
                    None => Some((traverse(t), None)),
                }
            }
            "url" | "jsonpatch.escapeKey" if args.len() == 1 => {
                let sz = size(&args[0]);
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = size(target?);
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "replace" if args.len() >= 2 => {
                let sz = size(target?);
                let to_replace = size(&args[0]);
                let with = size(&args[1]);
                let (mut count, mut retained) = (fixed(0), fixed(0));
                if to_replace.min == 0 {
                    count.max = sz.max.saturating_add(1);
                    retained.max = sz.max;
                } else if with.max <= to_replace.min {
                    count.max = 0;
                    retained.max = sz.max;
                } else {
                    count.max = (sz.max as f64 / to_replace.min as f64).ceil() as u64;
                }
                if to_replace.max == 0 {
                    count.min = sz.min.saturating_add(1);
                    retained.min = sz.min;
                } else if to_replace.max <= with.min {
                    count.min = 0;
                    retained.min = sz.min;
                } else {
                    count.min = (sz.min as f64 / to_replace.max as f64).ceil() as u64;
                }
                let result = count.mul(with).add(retained);
                Some((sz.factor(2.0 * STRING_TRAVERSAL), Some(result)))
            }
            "split" => {
                let sz = size(target?);
                let mut max = sz.max;
                if let Some(Expr::Literal(LiteralValue::Int(i))) =
                    args.get(1).and_then(|a| a.expr).map(|e| &e.expr)
                {
                    max = **i as u64;
                }
                Some((
                    sz.factor(2.0 * STRING_TRAVERSAL),
                    Some(Range { min: 0, max }),
                ))
            }
            "join" => {
                let t = target?;
                let list = size(t);
                let mut sz = fixed(0);
                if let Some(el) = Self::element_node(t) {
                    sz = list.mul(size(&el));
                }
                if let Some(sep) = args.first() {
                    let seps = Range {
                        min: list.min.saturating_sub(1),
                        max: list.max.saturating_sub(1),
                    };
                    sz = sz.add(size(sep).mul(seps));
                }
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "find" | "findAll" if !args.is_empty() => {
                let sz = size(target?);
                let s = sz.add(fixed(1)).factor(STRING_TRAVERSAL);
                let r = size(&args[0]).factor(REGEX_LENGTH);
                Some((
                    s.mul(r),
                    Some(Range {
                        min: 0,
                        max: sz.max,
                    }),
                ))
            }
            "cidr" | "isIP" | "isCIDR" if !args.is_empty() => Some((traverse(&args[0]), None)),
            "ip" => {
                if id == "cidr_ip" {
                    return Some((fixed(1), None));
                }
                args.first().map(|a| (traverse(a), None))
            }
            "ip.isCanonical" if !args.is_empty() => {
                Some((size(&args[0]).factor(2.0 * STRING_TRAVERSAL), None))
            }
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => Some((fixed(1), None)),
            "containsIP" | "containsCIDR" if !args.is_empty() => {
                let ip = Range { min: 4, max: 16 };
                let mut c = ip.add(ip).factor(STRING_TRAVERSAL);
                if function == "containsCIDR" {
                    c = c.add(ip.factor(STRING_TRAVERSAL)).add(fixed(1));
                }
                if id == "cidr_contains_ip_string" || id == "cidr_contains_cidr_string" {
                    c = c.add(traverse(&args[0]));
                }
                Some((c, None))
            }
            "quantity" | "isQuantity" | "semver" | "isSemver" if !args.is_empty() => {
                Some((traverse(&args[0]), None))
            }
            "validate" if !args.is_empty() => Some((
                traverse(&args[0]).factor(MAX_NAME_FORMAT_REGEX * REGEX_LENGTH),
                None,
            )),
            "format.named" | "sign" | "asInteger" | "isInteger" | "asApproximateFloat"
            | "isGreaterThan" | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor"
            | "patch" | "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath"
            | "getQuery" => Some((fixed(1), None)),
            "_==_" if args.len() == 2 => match (&args[0].ty, &args[1].ty) {
                (Ty::Lib(a), Ty::Lib(b)) if a == b => match *a {
                    "format" => Some((
                        Range {
                            min: 1,
                            max: MAX_FORMAT_SIZE,
                        }
                        .factor(STRING_TRAVERSAL),
                        None,
                    )),
                    "url" => {
                        // The server reads the right-hand size twice.
                        let s = args[1].size.unwrap_or(fixed(1));
                        Some((Range { min: 1, max: s.max }.factor(STRING_TRAVERSAL), None))
                    }
                    _ => Some((fixed(1), None)),
                },
                _ => None,
            },
            _ => None,
        }
    }
}

/// `computeExprSize`: the size of a literal.
fn expr_size(e: &IdedExpr) -> Option<Range> {
    let v = match &e.expr {
        Expr::Literal(l) => match l {
            LiteralValue::String(s) => s.chars().count() as u64,
            LiteralValue::Bytes(b) => b.len() as u64,
            _ => 1,
        },
        Expr::List(l) => l.elements.len() as u64,
        Expr::Map(m) => m.entries.len() as u64,
        _ => return None,
    };
    Some(fixed(v))
}

#[cfg(test)]
mod tests {
    use super::super::check::{check, normalize};
    use super::*;
    use kube::core::cel::cel::parser::Parser;
    use serde_json::{Value, json};

    fn cost(rule: &str, schema: Value) -> u64 {
        cost_on(34, rule, schema)
    }

    fn cost_on(minor: u32, rule: &str, schema: Value) -> u64 {
        cost_at(minor, rule, schema, false)
    }

    fn cost_at(minor: u32, rule: &str, schema: Value, resource_root: bool) -> u64 {
        let decl = Decl::of(schema.as_object().unwrap(), resource_root)
            .unwrap()
            .judged_by(minor);
        let parsed = Parser::new()
            .enable_optional_syntax(true)
            .parse(rule)
            .unwrap();
        let mut next = 1_000_000;
        let e = normalize(&parsed, &mut next);
        let checked = check(&e, Ty::of(decl), false);
        estimate(&e, &checked, decl, minor).cost.max
    }

    #[test]
    fn costs_match_the_servers_figures() {
        // Figures as kube-apiserver 1.34 computes them (from the cost tests
        // of apiextensions-apiserver and cel-go).
        let s = json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10},
            "free": {"type": "string"},
            "n": {"type": "integer"},
            "items": {"type": "array", "items": {"type": "string"}},
            "small": {"type": "array", "maxItems": 5, "items": {"type": "string", "maxLength": 4}}
        }});
        assert_eq!(cost("self.n > 1", s.clone()), 3);
        assert_eq!(cost("self.name == 'abc'", s.clone()), 3);
        assert_eq!(cost("self.free.startsWith('a')", s.clone()), 3);
        assert_eq!(
            cost("self.free.matches('^[a-z]+$')", s.clone()),
            2 + 314_573 * 2
        );
        assert_eq!(
            cost("self.small.all(x, x.size() < 3)", s.clone()),
            2 + 1 + 5 * 6
        );
        assert!(cost("self.items.all(x, self.items.exists(y, x == y))", s) > 10_000_000);
    }

    #[test]
    fn a_smaller_declared_max_length_caps_metadata_name_from_1_37() {
        let rule = "self.metadata.name.matches('^[a-z]+$')";
        let bare = json!({"type": "object"});
        let declared = json!({"type": "object", "properties": {"metadata": {
            "type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}}});
        let capped = cost_at(37, rule, bare.clone(), true);
        let smaller = cost_at(37, rule, declared.clone(), true);
        assert!(smaller < capped, "{smaller} < {capped}");
        // Before 1.37 both are sized from the request.
        assert_eq!(
            cost_at(36, rule, bare, true),
            cost_at(36, rule, declared, true)
        );
    }

    #[test]
    fn the_global_matches_is_costed_like_the_method_from_1_37() {
        let s = json!({"type": "object", "properties": {"free": {"type": "string"}}});
        let method = cost_on(37, "self.free.matches('^[a-z]+$')", s.clone());
        assert_eq!(
            cost_on(37, "matches(self.free, '^[a-z]+$')", s.clone()),
            method
        );
        // cel-go before 0.29: a plain call over its arguments.
        assert_eq!(cost_on(36, "matches(self.free, '^[a-z]+$')", s), 3);
    }
}
