//! One node's `x-kubernetes-validations` compiled, and the names CEL sees
//! for declared properties: what [`super::node`] stores when it compiles a
//! schema. The evaluator ([`super::cel`]) reads compiled nodes, so this part
//! lives apart from it and the dependency runs one way.

use kube::core::cel::cel::IdedExpr;
use kube::core::cel::cel::common::ast::{Expr, LiteralValue, operators};
use kube::core::cel::{CompilationResult, compile_schema};
use serde_json::{Value, json};

/// One rule as compiled.
#[derive(Debug)]
pub(crate) struct CelRule {
    /// The CEL expression as written.
    pub source: String,
    pub compiled: Result<CompilationResult, String>,
    /// Written only with what [`super::cel_direct`] evaluates, so worth
    /// trying there first.
    pub direct: bool,
}

/// Compiles a node's `x-kubernetes-validations` list.
pub(crate) fn compile_rules(raw: Option<&Value>) -> Vec<CelRule> {
    let Some(Value::Array(rules)) = raw else {
        return Vec::new();
    };
    rules
        .iter()
        .map(|r| {
            let source = r
                .get("rule")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let mut compiled = compile_schema(&json!({ "x-kubernetes-validations": [r] }));
            let compiled = match compiled.validations.pop() {
                Some(Ok(cr)) => Ok(cr),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("rule not found".to_string()),
            };
            let direct = compiled
                .as_ref()
                .is_ok_and(|cr| !cr.is_transition_rule && direct(cr.program.expression()));
            CelRule {
                source,
                compiled,
                direct,
            }
        })
        .collect()
}

/// Functions and operators [`super::cel_direct`] knows.
const DIRECT_CALLS: &[&str] = &[
    operators::CONDITIONAL,
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::NOT_STRICTLY_FALSE,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::LESS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::GREATER_EQUALS,
    operators::ADD,
    operators::INDEX,
    operators::IN,
    "size",
    "startsWith",
    "endsWith",
    "contains",
    "matches",
];

/// The expression uses only what [`super::cel_direct`] evaluates.
fn direct(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Literal(l) => !matches!(l, LiteralValue::Double(_) | LiteralValue::Bytes(_)),
        Expr::Ident(_) => true,
        Expr::Select(s) => direct(&s.operand),
        Expr::List(l) => l.optional_indices.is_empty() && l.elements.iter().all(direct),
        Expr::Call(c) => {
            DIRECT_CALLS.contains(&c.func_name.as_str())
                && c.target.as_deref().is_none_or(direct)
                && c.args.iter().all(direct)
        }
        Expr::Comprehension(c) => {
            c.iter_var2.is_none()
                && [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .into_iter()
                .all(direct)
        }
        Expr::Map(_) | Expr::Struct(_) | Expr::Unspecified => false,
    }
}

const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A declared property name as CEL sees it (`apiservercel.Escape`):
/// reserved words become `__word__`; `__`, `.`, `-` and `/` become
/// `__underscores__`, `__dot__`, `__dash__` and `__slash__`. A name with any
/// other character, or starting with a digit, has no CEL name: the field is
/// invisible to rules.
pub(crate) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}
