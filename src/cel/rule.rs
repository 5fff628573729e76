//! One node's `x-kubernetes-validations` compiled, and the names CEL sees
//! for declared properties: what the object validator's compiled nodes
//! hold. Its walk (`object_validation::rules`) reads those nodes and evaluates the
//! rules with [`super::direct`] and the `cel` crate.

use foldhash::HashMap;
use kube::core::cel::cel::common::ast::IdedExpr;
use kube::core::cel::{CompilationResult, compile_schema};
use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use super::program::{Program, compile};

/// One rule, ready to evaluate.
///
/// The `cel` crate's program ([`CelRule::compiled`]) is built only when a
/// value reaches it that [`super::direct`] cannot decide: most rules are
/// read by the fast parser and decided directly, and building the program
/// means parsing the rule again with the slower parser.
#[derive(Debug)]
pub(crate) struct CelRule {
    /// The CEL expression as written.
    pub source: String,
    /// `message`, `fieldPath` and `optionalOldSelf` as written.
    pub message: Option<String>,
    pub field_path: Option<String>,
    pub optional_old_self: Option<bool>,
    pub has_message_expression: bool,
    /// Whether the rule reads `oldSelf`, when known without the program:
    /// the fast parser read the rule, and nothing else can make the
    /// program fail to build (no `messageExpression`, fields of the right
    /// types, no optional syntax, which the `cel` crate's compile leaves off).
    known_transition: Option<bool>,
    /// The rule resolved for [`super::direct`], when it is written only
    /// with what that evaluates, so worth trying there first.
    pub direct: Option<Program>,
    raw: Value,
    compiled: OnceLock<Result<CompilationResult, String>>,
}

impl CelRule {
    /// The `cel` crate's program, built on the first call.
    pub(crate) fn compiled(&self) -> &Result<CompilationResult, String> {
        self.compiled.get_or_init(|| {
            // Never handed to the `cel` crate's parser (see [`super::depth`]).
            if let Some(why) = super::depth::unreadable(&self.source) {
                return Err(why);
            }
            let mut compiled = compile_schema(&json!({ "x-kubernetes-validations": [&self.raw] }));
            match compiled.validations.pop() {
                Some(Ok(cr)) => Ok(cr),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("rule not found".to_string()),
            }
        })
    }

    /// The program, if it has been built (for tests).
    #[cfg(test)]
    pub(crate) fn compiled_yet(&self) -> Option<&Result<CompilationResult, String>> {
        self.compiled.get()
    }

    /// Whether the rule reads `oldSelf` (a transition rule), or why its
    /// program does not build.
    pub(crate) fn is_transition(&self) -> Result<bool, &str> {
        match self.known_transition {
            Some(t) => Ok(t),
            None => self
                .compiled()
                .as_ref()
                .map(|cr| cr.is_transition_rule)
                .map_err(String::as_str),
        }
    }
}

/// A node's `x-kubernetes-validations`, compiled when first evaluated.
/// Checking a CRD's defaults compiles the subtree of each defaulted node,
/// and a default rarely reaches most of the rules in it; a scan evaluates
/// each rule from its first object on, so it pays the same as before.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    /// The list as written; `None` when it is absent or empty.
    raw: Option<Value>,
    compiled: OnceLock<Arc<[CelRule]>>,
}

thread_local! {
    /// Rule lists this thread has compiled, by their JSON: the versions of a
    /// CRD usually share their schema, and a scan's threads see the same
    /// lists page after page.
    static COMPILED: RefCell<HashMap<String, Arc<[CelRule]>>> = RefCell::new(HashMap::default());
}

impl Rules {
    pub(crate) fn new(raw: Option<&Value>) -> Rules {
        match raw {
            Some(Value::Array(a)) if !a.is_empty() => Rules {
                raw: raw.cloned(),
                compiled: OnceLock::new(),
            },
            _ => Rules::default(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.raw.is_none()
    }

    /// The rules, compiled on the first call.
    pub(crate) fn get(&self) -> &[CelRule] {
        self.compiled.get_or_init(|| {
            let raw = self.raw.as_ref();
            let key = raw.map(Value::to_string).unwrap_or_default();
            if let Some(hit) = COMPILED.with(|c| c.borrow().get(&key).cloned()) {
                return hit;
            }
            let rules: Arc<[CelRule]> = compile_rules(raw).into();
            COMPILED.with(|c| c.borrow_mut().insert(key, Arc::clone(&rules)));
            rules
        })
    }

    pub(crate) fn clear(&mut self) {
        *self = Rules::default();
    }
}

/// Reads a node's `x-kubernetes-validations` list.
pub(crate) fn compile_rules(raw: Option<&Value>) -> Vec<CelRule> {
    let Some(Value::Array(rules)) = raw else {
        return Vec::new();
    };
    rules.iter().map(read_rule).collect()
}

fn read_rule(r: &Value) -> CelRule {
    let field = |k: &str| r.get(k).filter(|v| !v.is_null());
    let string = |k: &str| field(k).and_then(Value::as_str).map(String::from);
    let source = string("rule").unwrap_or_default();
    // What kube-cel's `Rule` decodes: a wrong type fails its compile.
    let decodes = field("rule").is_some_and(Value::is_string)
        && ["message", "messageExpression", "reason", "fieldPath"]
            .iter()
            .all(|k| field(k).is_none_or(Value::is_string))
        && field("optionalOldSelf").is_none_or(Value::is_boolean);
    let has_message_expression = field("messageExpression").is_some();
    let parsed = super::depth::unreadable(&source)
        .is_none()
        .then(|| super::parse::parse(&source))
        .flatten()
        .filter(|e| !uses_optional_syntax(e));
    let mut rule = CelRule {
        message: string("message"),
        field_path: string("fieldPath"),
        optional_old_self: field("optionalOldSelf").and_then(Value::as_bool),
        has_message_expression,
        known_transition: None,
        direct: None,
        raw: r.clone(),
        compiled: OnceLock::new(),
        source,
    };
    match parsed {
        Some(e) => {
            let transition = e.references().has_variable("oldSelf");
            if decodes && !has_message_expression {
                rule.known_transition = Some(transition);
            }
            if !transition {
                rule.direct = compile(&e);
            }
        }
        None => {
            rule.direct = rule
                .compiled()
                .as_ref()
                .ok()
                .filter(|cr| !cr.is_transition_rule)
                .and_then(|cr| compile(cr.program.expression()));
        }
    }
    rule
}

/// Whether `e` uses `.?` or `[?` (the `cel` crate's compile, unlike the
/// server, leaves optional syntax off).
fn uses_optional_syntax(e: &IdedExpr) -> bool {
    use kube::core::cel::cel::common::ast::{EntryExpr, Expr};
    match &e.expr {
        Expr::Call(c) => {
            matches!(c.func_name.as_str(), "_?._" | "_[?_]")
                || c.target.as_deref().is_some_and(uses_optional_syntax)
                || c.args.iter().any(uses_optional_syntax)
        }
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .any(uses_optional_syntax),
        Expr::List(l) => {
            !l.optional_indices.is_empty() || l.elements.iter().any(uses_optional_syntax)
        }
        Expr::Map(m) => m.entries.iter().any(|en| match &en.expr {
            EntryExpr::MapEntry(me) => {
                me.optional || uses_optional_syntax(&me.key) || uses_optional_syntax(&me.value)
            }
            EntryExpr::StructField(f) => f.optional || uses_optional_syntax(&f.value),
        }),
        Expr::Select(sel) => uses_optional_syntax(&sel.operand),
        Expr::Struct(st) => st.entries.iter().any(|en| match &en.expr {
            EntryExpr::StructField(f) => f.optional || uses_optional_syntax(&f.value),
            EntryExpr::MapEntry(me) => uses_optional_syntax(&me.value),
        }),
        _ => false,
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
