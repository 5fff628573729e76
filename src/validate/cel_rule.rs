//! One node's `x-kubernetes-validations` compiled, and the names CEL sees
//! for declared properties: what [`super::node`] stores when it compiles a
//! schema. The evaluator ([`super::cel`]) reads compiled nodes, so this part
//! lives apart from it and the dependency runs one way.

use kube::core::cel::{CompilationResult, compile_schema};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};

use super::cel_program::{Program, compile};

/// One rule as compiled.
#[derive(Debug)]
pub(crate) struct CelRule {
    /// The CEL expression as written.
    pub source: String,
    pub compiled: Result<CompilationResult, String>,
    /// The rule resolved for [`super::cel_direct`], when it is written only
    /// with what that evaluates, so worth trying there first.
    pub direct: Option<Program>,
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
    static COMPILED: RefCell<HashMap<String, Arc<[CelRule]>>> = RefCell::new(HashMap::new());
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
                .ok()
                .filter(|cr| !cr.is_transition_rule)
                .and_then(|cr| compile(cr.program.expression()));
            CelRule {
                source,
                compiled,
                direct,
            }
        })
        .collect()
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
