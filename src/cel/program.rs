//! A rule's expression resolved once for [`super::direct`]: operators
//! and functions become variants, variables become slots.
//!
//! The `cel` crate's tree names every call and variable by string, so an
//! evaluator walking it compares strings at each step, object after object.
//! Resolving them when the schema is compiled leaves only the data's own
//! field names to look up. Only expressions made entirely of what the direct
//! evaluator decides compile; any other rule has no program and goes to the
//! `cel` crate.

use kube::core::cel::cel::IdedExpr;
use kube::core::cel::cel::common::ast::{Expr, LiteralValue, operators};

/// A constant of the expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Str(Box<str>),
}

/// `<`, `<=`, `>`, `>=`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cmp {
    Less,
    LessEquals,
    Greater,
    GreaterEquals,
}

/// The string methods the evaluator knows, as `target.method(arg)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum StrFn {
    StartsWith,
    EndsWith,
    Contains,
    Matches,
}

/// One step of a compiled expression.
#[derive(Debug)]
pub(crate) enum Op {
    Lit(Lit),
    /// A variable: its slot in the scope (0 is `self`).
    Var(usize),
    /// `variable.field`, or `has(variable.field)` when `test`: the most
    /// common selection, one step instead of two.
    Field {
        slot: usize,
        field: Box<str>,
        test: bool,
    },
    /// `operand.field`, or `has(operand.field)` when `test`.
    Select {
        operand: Box<Op>,
        field: Box<str>,
        test: bool,
    },
    List(Vec<Op>),
    Cond(Box<[Op; 3]>),
    And(Box<[Op; 2]>),
    Or(Box<[Op; 2]>),
    Not(Box<Op>),
    NotStrictlyFalse(Box<Op>),
    Eq(Box<[Op; 2]>),
    Ne(Box<[Op; 2]>),
    /// `x == literal`, `x != literal`: the literal needs no evaluation.
    EqLit(Box<Op>, Lit),
    NeLit(Box<Op>, Lit),
    Cmp(Cmp, Box<[Op; 2]>),
    Add(Box<[Op; 2]>),
    Index(Box<[Op; 2]>),
    /// `x in [literals]`: no list built at each evaluation.
    InLits(Box<Op>, Vec<Lit>),
    In(Box<[Op; 2]>),
    Size(Box<Op>),
    Str(StrFn, Box<[Op; 2]>),
    /// A macro expanded to a comprehension; the accumulator's slot is
    /// `accu`, the item's `accu + 1`.
    Fold(Box<Fold>),
}

/// The parts of a comprehension.
#[derive(Debug)]
pub(crate) struct Fold {
    pub accu: usize,
    pub range: Op,
    pub init: Op,
    pub cond: Op,
    pub step: Op,
    pub result: Op,
}

/// A rule ready for [`super::direct::evaluate`].
#[derive(Debug)]
pub(crate) struct Program {
    pub(crate) root: Op,
    /// Slots the deepest nesting of macros needs.
    pub(crate) slots: usize,
}

/// The program for `e`, when every part of it is one the direct evaluator
/// decides; `None` otherwise.
pub(crate) fn compile(e: &IdedExpr) -> Option<Program> {
    let mut c = Compiler {
        names: vec!["self"],
        slots: 1,
    };
    let root = c.op(e)?;
    Some(Program {
        root,
        slots: c.slots,
    })
}

struct Compiler<'e> {
    /// Variables in scope, innermost last.
    names: Vec<&'e str>,
    slots: usize,
}

impl<'e> Compiler<'e> {
    fn two(&mut self, a: &'e IdedExpr, b: &'e IdedExpr) -> Option<Box<[Op; 2]>> {
        Some(Box::new([self.op(a)?, self.op(b)?]))
    }

    fn op(&mut self, e: &'e IdedExpr) -> Option<Op> {
        Some(match &e.expr {
            Expr::Literal(l) => Op::Lit(literal(l)?),
            Expr::Ident(name) => Op::Var(self.names.iter().rposition(|n| *n == name.as_str())?),
            Expr::Select(s) => match self.op(&s.operand)? {
                Op::Var(slot) => Op::Field {
                    slot,
                    field: s.field.as_str().into(),
                    test: s.test,
                },
                operand => Op::Select {
                    operand: Box::new(operand),
                    field: s.field.as_str().into(),
                    test: s.test,
                },
            },
            Expr::List(l) => {
                if !l.optional_indices.is_empty() {
                    return None;
                }
                Op::List(
                    l.elements
                        .iter()
                        .map(|e| self.op(e))
                        .collect::<Option<_>>()?,
                )
            }
            Expr::Call(call) => {
                let a = &call.args;
                match (call.target.as_deref(), call.func_name.as_str(), a.len()) {
                    (None, operators::CONDITIONAL, 3) => Op::Cond(Box::new([
                        self.op(&a[0])?,
                        self.op(&a[1])?,
                        self.op(&a[2])?,
                    ])),
                    (None, operators::LOGICAL_AND, 2) => Op::And(self.two(&a[0], &a[1])?),
                    (None, operators::LOGICAL_OR, 2) => Op::Or(self.two(&a[0], &a[1])?),
                    (None, operators::LOGICAL_NOT, 1) => Op::Not(Box::new(self.op(&a[0])?)),
                    (None, operators::NOT_STRICTLY_FALSE, 1) => {
                        Op::NotStrictlyFalse(Box::new(self.op(&a[0])?))
                    }
                    (None, op @ (operators::EQUALS | operators::NOT_EQUALS), 2) => {
                        let eq = op == operators::EQUALS;
                        match &a[1].expr {
                            Expr::Literal(l) => {
                                let (x, l) = (Box::new(self.op(&a[0])?), literal(l)?);
                                if eq { Op::EqLit(x, l) } else { Op::NeLit(x, l) }
                            }
                            _ if eq => Op::Eq(self.two(&a[0], &a[1])?),
                            _ => Op::Ne(self.two(&a[0], &a[1])?),
                        }
                    }
                    (None, operators::LESS, 2) => Op::Cmp(Cmp::Less, self.two(&a[0], &a[1])?),
                    (None, operators::LESS_EQUALS, 2) => {
                        Op::Cmp(Cmp::LessEquals, self.two(&a[0], &a[1])?)
                    }
                    (None, operators::GREATER, 2) => Op::Cmp(Cmp::Greater, self.two(&a[0], &a[1])?),
                    (None, operators::GREATER_EQUALS, 2) => {
                        Op::Cmp(Cmp::GreaterEquals, self.two(&a[0], &a[1])?)
                    }
                    (None, operators::ADD, 2) => Op::Add(self.two(&a[0], &a[1])?),
                    (None, operators::INDEX, 2) => Op::Index(self.two(&a[0], &a[1])?),
                    (None, operators::IN, 2) => match &a[1].expr {
                        Expr::List(l)
                            if l.optional_indices.is_empty()
                                && l.elements
                                    .iter()
                                    .all(|e| matches!(e.expr, Expr::Literal(_))) =>
                        {
                            let lits = l
                                .elements
                                .iter()
                                .map(|e| match &e.expr {
                                    Expr::Literal(l) => literal(l),
                                    _ => None,
                                })
                                .collect::<Option<_>>()?;
                            Op::InLits(Box::new(self.op(&a[0])?), lits)
                        }
                        _ => Op::In(self.two(&a[0], &a[1])?),
                    },
                    (None, "size", 1) => Op::Size(Box::new(self.op(&a[0])?)),
                    (Some(t), "size", 0) if !namespaced(t) => Op::Size(Box::new(self.op(t)?)),
                    (Some(t), name, 1) if !namespaced(t) => {
                        let f = match name {
                            "startsWith" => StrFn::StartsWith,
                            "endsWith" => StrFn::EndsWith,
                            "contains" => StrFn::Contains,
                            "matches" => StrFn::Matches,
                            _ => return None,
                        };
                        Op::Str(f, self.two(t, &a[0])?)
                    }
                    _ => return None,
                }
            }
            Expr::Comprehension(c) => {
                if c.iter_var2.is_some() {
                    return None;
                }
                let range = self.op(&c.iter_range)?;
                let init = self.op(&c.accu_init)?;
                let accu = self.names.len();
                self.names.push(&c.accu_var);
                self.names.push(&c.iter_var);
                self.slots = self.slots.max(self.names.len());
                let body = (|| Some((self.op(&c.loop_cond)?, self.op(&c.loop_step)?)))();
                self.names.pop();
                let result = self.op(&c.result);
                self.names.pop();
                let (cond, step) = body?;
                Op::Fold(Box::new(Fold {
                    accu,
                    range,
                    init,
                    cond,
                    step,
                    result: result?,
                }))
            }
            _ => return None,
        })
    }
}

/// A call on an identifier the `cel` crate may resolve as a namespaced
/// function (`sets.contains`, `math.abs`): left to it.
fn namespaced(target: &IdedExpr) -> bool {
    matches!(&target.expr, Expr::Ident(p) if p != "self" && !p.starts_with('@')
        && matches!(p.as_str(), "base64" | "format" | "ip" | "jsonpatch" | "lists" | "math"
            | "sets" | "strings"))
}

fn literal(lit: &LiteralValue) -> Option<Lit> {
    Some(match lit {
        LiteralValue::Boolean(b) => Lit::Bool(*b.inner()),
        LiteralValue::Int(i) => Lit::Int(*i.inner()),
        LiteralValue::UInt(u) => Lit::UInt(*u.inner()),
        LiteralValue::String(s) => Lit::Str(Box::from(s.inner())),
        LiteralValue::Null => Lit::Null,
        LiteralValue::Double(_) | LiteralValue::Bytes(_) => return None,
    })
}
