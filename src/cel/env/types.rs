//! Field selection in CEL rules, checked against the types the schema
//! declares, the way the server's CEL type checker sees them
//! (`SchemaDeclType`): an object has exactly its declared properties (plus
//! `apiVersion`, `kind` and `metadata.name`/`generateName` at a resource
//! root), a map (`additionalProperties`) has any key, a list has items, an
//! int-or-string is dynamic. Property names are escaped as the server
//! escapes them (`foo-bar` is `self.foo__dash__bar`), and a property whose
//! name cannot be escaped, or whose schema has no type, is not a field.
//!
//! Only what can be decided without a full type checker is reported: a
//! selection of an undeclared field on an object reached from `self` or
//! `oldSelf` (directly, through list and map indexing, or through a
//! comprehension variable); a constant regular expression given to
//! `matches`, `find` or `findAll` that Go's RE2 refuses (the server compiles
//! constant patterns when it compiles the rule); and `cel.bind`, which the
//! CRD environment of Kubernetes 1.34 does not declare; and functions of
//! libraries newer than the expression may use. Calls against their
//! overloads are checked in [`super::check`] ([`super::sigs`]).

use foldhash::HashMap;

use kube::core::cel::cel::common::ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use crate::kube_version::KubeVersion;
use crate::openapi::props::{
    AdditionalProperties, Obj, additional_properties, items, obj_of, str_of,
};

/// The words that mark a function newer than the libraries a rule may
/// use; an update lets rules the stored CRD has use them.
pub const NEW_LIBRARY: &str = "not available to new CRD rules before Kubernetes";

/// The Kubernetes minor version whose CRD environment first declares the
/// function `call` names (`environment/base.go`); `None` for what every
/// supported version has.
fn introduced(call: &CallExpr, env: &HashMap<String, Ty<'_>>) -> Option<u32> {
    let namespace = match call.target.as_deref().map(|t| &t.expr) {
        Some(Expr::Ident(n)) if !env.contains_key(n) => Some(n.as_str()),
        _ => None,
    };
    let member = call.target.is_some() && namespace.is_none();
    let n = call.args.len();
    Some(match (namespace, call.func_name.as_str(), member) {
        (None, "quantity" | "isQuantity", false) => 28,
        (Some("optional"), _, _) => 28,
        (None, "orValue" | "hasValue" | "value" | "or", true) => 28,
        (Some("sets"), _, _) | (Some("strings"), "quote", _) => 29,
        (None, "format", true) => 29,
        (None, "ip" | "isIP" | "cidr" | "isCIDR", false) | (Some("ip"), "isCanonical", _) => 30,
        (Some("format"), _, _) => 31,
        (None, "all" | "exists" | "existsOne" | "exists_one", true) if n == 3 => 32,
        (None, "transformList" | "transformMap" | "transformMapEntry", true) => 32,
        (None, "semver" | "isSemver", false) => 33,
        (Some("lists"), "range", _) => 34,
        (None, "slice" | "flatten" | "distinct" | "sort" | "sortBy" | "reverse", true) => 34,
        _ => return None,
    })
}

/// The Kubernetes minor version whose CEL implementation (the cel-go it is
/// built with) first has the function `call` names, whatever libraries the
/// environment declares: cel-go 0.23 (Kubernetes 1.33) added `first`,
/// `last`, `unwrapOpt` and `optional.unwrap` to the optional types every
/// CRD environment has had since 1.28. These are judged by the server's own
/// version, for new and stored rules alike.
fn implemented(call: &CallExpr, env: &HashMap<String, Ty<'_>>) -> Option<u32> {
    let namespace = match call.target.as_deref().map(|t| &t.expr) {
        Some(Expr::Ident(n)) if !env.contains_key(n) => Some(n.as_str()),
        _ => None,
    };
    let member = call.target.is_some() && namespace.is_none();
    match (namespace, call.func_name.as_str(), member) {
        (None, "first" | "last" | "unwrapOpt", true) | (Some("optional"), "unwrap", _) => Some(33),
        _ => None,
    }
}

/// What a CEL expression is, as far as field selection cares.
#[derive(Clone, Copy)]
enum Ty<'a> {
    /// An object with exactly these properties; `root` adds the implicit
    /// resource fields.
    Object { schema: &'a Obj, root: bool },
    /// The implicit `metadata` of a resource root: `name`, `generateName`.
    RootMetadata,
    /// A map with values of this schema.
    Map(&'a Obj),
    /// A list with items of this schema.
    List(&'a Obj),
    /// Anything else, or unknown: never checked.
    Dyn,
}

fn ty_of(s: &Obj, resource_root: bool) -> Ty<'_> {
    if s.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true) {
        return Ty::Dyn;
    }
    let root = resource_root
        || s.get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true);
    match str_of(s, "type") {
        "array" => items(s).map_or(Ty::Dyn, Ty::List),
        "object" => match additional_properties(s) {
            AdditionalProperties::Schema(v) => Ty::Map(v),
            _ => Ty::Object { schema: s, root },
        },
        // An untyped root gets `type: object` from the server.
        "" if root => Ty::Object { schema: s, root },
        _ => Ty::Dyn,
    }
}

use crate::cel::rule::escape;

/// Whether the property schema gives the field a type (`SchemaDeclType`
/// returns nothing for an untyped node, and the field is then left out).
fn typed(p: &Obj) -> bool {
    !str_of(p, "type").is_empty()
        || p.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true)
        || p.get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true)
}

/// The type of field `field` (a CEL name) of an object, or `None` when the
/// object has no such field.
/// From the CEL environment of 1.31 (`SetRecognizeKeywordAsFieldName`), a
/// property named like a CEL keyword (`namespace`) is also selected as
/// written, besides its escaped form (`__namespace__`).
const KEYWORD_FIELDS_SINCE: u32 = 31;

fn field_of<'a>(schema: &'a Obj, root: bool, field: &str, kube: KubeVersion) -> Option<Ty<'a>> {
    if root {
        match field {
            "apiVersion" | "kind" => return Some(Ty::Dyn),
            "metadata" => return Some(Ty::RootMetadata),
            _ => {}
        }
    }
    let props = obj_of(schema, "properties")?;
    for (name, p) in props {
        let Some(p) = p.as_object() else { continue };
        let escaped = escape(name);
        let keyword = escaped.as_deref() == Some(format!("__{name}__").as_str());
        let as_written = keyword && kube.minor >= KEYWORD_FIELDS_SINCE && name == field;
        if typed(p) && (as_written || escaped.as_deref() == Some(field)) {
            return Some(ty_of(p, false));
        }
    }
    None
}

/// What the server's CEL compiler would refuse in `expr`, where `self`
/// (and `oldSelf`) has the type of `node`, `kube` is the version whose
/// libraries the expression may use and `server` the version of the server
/// that compiles it: server-style messages.
pub fn compile_problems(
    expr: &IdedExpr,
    node: &Obj,
    resource_root: bool,
    kube: KubeVersion,
    server: KubeVersion,
) -> Vec<String> {
    let mut env: HashMap<String, Ty<'_>> = HashMap::default();
    let self_ty = ty_of(node, resource_root);
    env.insert("self".into(), self_ty);
    env.insert("oldSelf".into(), self_ty);
    let mut out = Vec::new();
    walk(expr, &env, &mut out, (kube, server));
    out
}

fn walk<'a>(
    e: &IdedExpr,
    env: &HashMap<String, Ty<'a>>,
    out: &mut Vec<String>,
    versions: (KubeVersion, KubeVersion),
) -> Ty<'a> {
    let (kube, server) = versions;
    match &e.expr {
        Expr::Ident(name) => env.get(name).copied().unwrap_or(Ty::Dyn),
        Expr::Select(sel) => {
            let operand = walk(&sel.operand, env, out, versions);
            match operand {
                Ty::Object { schema, root } => match field_of(schema, root, &sel.field, kube) {
                    Some(t) => t,
                    None => {
                        out.push(format!("undefined field '{}'", sel.field));
                        Ty::Dyn
                    }
                },
                Ty::RootMetadata => {
                    if !matches!(sel.field.as_str(), "name" | "generateName") {
                        out.push(format!("undefined field '{}'", sel.field));
                    }
                    Ty::Dyn
                }
                Ty::Map(v) => ty_of(v, false),
                Ty::List(_) | Ty::Dyn => Ty::Dyn,
            }
        }
        Expr::Call(call) => {
            if call.func_name == "bind"
                && matches!(call.target.as_deref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel")
            {
                out.push(format!(
                    "undeclared reference to 'cel' (cel.bind is not available to CRD rules on Kubernetes {server})"
                ));
                return Ty::Dyn;
            }
            // cel-go 0.29 (Kubernetes 1.37) dropped `duration(int)`, which
            // type-checked before and only failed when evaluated.
            if server.minor >= 37
                && call.func_name == "duration"
                && call.target.is_none()
                && matches!(
                    call.args.as_slice(),
                    [IdedExpr {
                        expr: Expr::Literal(LiteralValue::Int(_)),
                        ..
                    }]
                )
            {
                out.push(
                    "found no matching overload for 'duration' applied to '(int)'".to_string(),
                );
            }
            if let Some(since) = implemented(call, env)
                && server.minor < since
            {
                out.push(format!(
                    "undeclared reference to '{}' (Kubernetes {server} does not implement it: its CEL \
comes with Kubernetes 1.{since})",
                    call.func_name
                ));
            }
            if let Some(since) = introduced(call, env)
                && kube.minor < since
            {
                out.push(format!(
                    "undeclared reference to '{}' ({NEW_LIBRARY} 1.{}: the function comes with Kubernetes 1.{since}, and a server takes in new rules only what the version before it has)",
                    call.func_name,
                    since + 1
                ));
            }
            // Constant durations and timestamps must parse (the literal
            // validators of 1.29+).
            if kube.minor >= 29
                && call.target.is_none()
                && let [arg] = call.args.as_slice()
                && let Expr::Literal(LiteralValue::String(text)) = &arg.expr
            {
                use crate::openapi::formats::{parse_go_duration, parse_timestamp};
                let bad = match call.func_name.as_str() {
                    "duration" => parse_go_duration(text.as_ref()).is_none(),
                    "timestamp" => parse_timestamp(text.as_ref()).is_none(),
                    _ => false,
                };
                if bad {
                    out.push(format!("invalid {} argument", call.func_name));
                }
            }
            if matches!(call.func_name.as_str(), "matches" | "find" | "findAll") {
                // The pattern is the argument after the string: the first
                // for a member call, the second for a global one.
                let pattern = if call.target.is_some() {
                    call.args.first()
                } else {
                    call.args.get(1)
                };
                if let Some(Expr::Literal(LiteralValue::String(p))) = pattern.map(|p| &p.expr)
                    && crate::re2::check_go(p.as_ref()).is_err()
                {
                    out.push(format!("invalid {} argument", call.func_name));
                }
            }
            if let Some(t) = &call.target {
                walk(t, env, out, versions);
            }
            let args: Vec<Ty<'a>> = call
                .args
                .iter()
                .map(|a| walk(a, env, out, versions))
                .collect();
            match (call.func_name.as_str(), args.first()) {
                ("_[_]", Some(Ty::List(item))) => ty_of(item, false),
                ("_[_]", Some(Ty::Map(v))) => ty_of(v, false),
                _ => Ty::Dyn,
            }
        }
        Expr::Comprehension(c) => {
            let range = walk(&c.iter_range, env, out, versions);
            let mut inner = env.clone();
            let (first, second) = match range {
                Ty::List(item) => (Ty::Dyn, ty_of(item, false)),
                Ty::Map(v) => (Ty::Dyn, ty_of(v, false)),
                _ => (Ty::Dyn, Ty::Dyn),
            };
            match &c.iter_var2 {
                // Two variables: index (or key) and value.
                Some(v2) => {
                    inner.insert(c.iter_var.clone(), first);
                    inner.insert(v2.clone(), second);
                }
                // One variable: the element of a list, the key of a map.
                None => {
                    let only = if matches!(range, Ty::List(_)) {
                        second
                    } else {
                        Ty::Dyn
                    };
                    inner.insert(c.iter_var.clone(), only);
                }
            }
            inner.insert(c.accu_var.clone(), Ty::Dyn);
            walk(&c.accu_init, env, out, versions);
            walk(&c.loop_cond, &inner, out, versions);
            walk(&c.loop_step, &inner, out, versions);
            let mut result_env = env.clone();
            result_env.insert(c.accu_var.clone(), Ty::Dyn);
            walk(&c.result, &result_env, out, versions);
            Ty::Dyn
        }
        Expr::List(l) => {
            for x in &l.elements {
                walk(x, env, out, versions);
            }
            Ty::Dyn
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    walk(&me.key, env, out, versions);
                    walk(&me.value, env, out, versions);
                }
            }
            Ty::Dyn
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    walk(&f.value, env, out, versions);
                }
            }
            Ty::Dyn
        }
        Expr::Literal(_) | Expr::Unspecified => Ty::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::cel::cel::parser::Parser;
    use serde_json::json;

    /// The problems of `rule` on `node`, judged and served as Kubernetes 1.`minor`.
    fn check_at(rule: &str, node: Value, root: bool, minor: u32) -> Vec<String> {
        let expr = Parser::new()
            .enable_optional_syntax(true)
            .parse(rule)
            .unwrap();
        let version = KubeVersion { minor };
        compile_problems(&expr, node.as_object().unwrap(), root, version, version)
    }

    fn check(rule: &str, node: Value, root: bool) -> Vec<String> {
        check_at(rule, node, root, KubeVersion::NEWEST.minor)
    }

    fn spec() -> Value {
        json!({"type": "object", "properties": {
            "size": {"type": "integer"},
            "foo-bar": {"type": "string"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }})
    }

    #[test]
    fn undeclared_fields_are_found_through_lists_and_variables() {
        assert!(check("self.size > 1 && self.foo__dash__bar != ''", spec(), false).is_empty());
        assert_eq!(
            check("self.nope > 1", spec(), false),
            vec!["undefined field 'nope'"]
        );
        assert!(check("self.ports.all(p, p.name != '')", spec(), false).is_empty());
        assert_eq!(
            check("self.ports.all(p, p.nam != '')", spec(), false),
            vec!["undefined field 'nam'"]
        );
        assert!(
            check(
                "self.ports[0].name != '' && self.labels.anything == 'x'",
                spec(),
                false
            )
            .is_empty()
        );
        assert_eq!(
            check("has(self.sise)", spec(), false),
            vec!["undefined field 'sise'"]
        );
        assert!(check("self.?nope.orValue(1) == 1", spec(), false).is_empty());
    }

    #[test]
    fn constant_patterns_and_cel_bind_are_checked() {
        assert_eq!(
            check("self.foo__dash__bar.matches('(a')", spec(), false),
            vec!["invalid matches argument"]
        );
        assert!(check("self.foo__dash__bar.matches('^a+$')", spec(), false).is_empty());
        assert_eq!(
            check("cel.bind(x, self.size, x > 0)", spec(), false).len(),
            1
        );
    }

    #[test]
    fn libraries_follow_the_judged_kubernetes_version() {
        let at = |rule: &str, minor: u32| check_at(rule, spec(), false, minor);
        let two_var = "self.labels.all(k, v, v != '')";
        assert!(at(two_var, 32).is_empty());
        assert_eq!(at(two_var, 31).len(), 1, "{:?}", at(two_var, 31));
        assert!(at("isQuantity(self.foo__dash__bar)", 28).is_empty());
        assert_eq!(at("isQuantity(self.foo__dash__bar)", 27).len(), 1);
        assert_eq!(at("self.ports.slice(0, 1).size() == 1", 33).len(), 1);
        assert!(at("self.ports.slice(0, 1).size() == 1", 34).is_empty());
        assert_eq!(at("ip.isCanonical(self.foo__dash__bar)", 29).len(), 1);
        assert!(at("self.size > 1", 25).is_empty());
    }

    #[test]
    fn a_resource_root_has_its_implicit_fields() {
        let root = json!({"type": "object", "properties": {"spec": spec()}});
        assert!(
            check(
                "self.metadata.name.startsWith('a') && self.kind == 'W'",
                root.clone(),
                true
            )
            .is_empty()
        );
        assert_eq!(
            check("self.metadata.labels.size() > 0", root, true),
            vec!["undefined field 'labels'"]
        );
    }
}
