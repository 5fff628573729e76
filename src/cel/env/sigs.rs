//! The overloads of the functions CRD rules may call, and the type errors
//! cel-go's checker raises against them: a name the environment does not
//! declare, a call no overload accepts, an aggregate literal mixing types
//! (`cel.HomogeneousAggregateLiterals`), a field selected from a value that
//! has no fields.
//!
//! The signatures are those of cel-go's standard library, `ext.Strings`
//! v2, `ext.Sets`, the optional types and the Kubernetes libraries (lists,
//! regex, URLs, quantity, IP, CIDR, format, semver), read from their
//! declarations. A declared function missing from the table
//! ([`OTHER_NAMES`]) gets no overload verdict. What the checker does not
//! know about a value (a dynamic value, an untyped call's result, an object
//! of the schema against another) matches every parameter, so an error means
//! the server has no overload for types the checker is sure of.

use std::sync::LazyLock;

use foldhash::HashMap;

use super::ty::Ty;

/// A parameter type of an overload.
#[derive(Debug, Clone)]
enum Pat {
    /// Exactly this type: a scalar, or a Kubernetes library type.
    Is(Ty<'static>),
    Dyn,
    /// A type parameter (`A`, `B`), bound by the first argument it meets.
    Param(usize),
    List(Box<Pat>),
    Map(Box<Pat>, Box<Pat>),
    Opt(Box<Pat>),
}

struct Sig {
    member: bool,
    /// The receiver first, for a member overload.
    params: Vec<Pat>,
}

/// The declarations: `name`, member or global, the parameter types (the
/// receiver first for a member), comma separated.
const DECLS: &[(&str, bool, &str)] = &[
    // Operators.
    ("_?_:_", false, "bool, A, A"),
    ("_&&_", false, "bool, bool"),
    ("_||_", false, "bool, bool"),
    ("!_", false, "bool"),
    ("@not_strictly_false", false, "bool"),
    ("_==_", false, "A, A"),
    ("_!=_", false, "A, A"),
    ("_+_", false, "bytes, bytes"),
    ("_+_", false, "double, double"),
    ("_+_", false, "duration, duration"),
    ("_+_", false, "duration, timestamp"),
    ("_+_", false, "timestamp, duration"),
    ("_+_", false, "int, int"),
    ("_+_", false, "list(A), list(A)"),
    ("_+_", false, "string, string"),
    ("_+_", false, "uint, uint"),
    ("_-_", false, "double, double"),
    ("_-_", false, "duration, duration"),
    ("_-_", false, "int, int"),
    ("_-_", false, "timestamp, duration"),
    ("_-_", false, "timestamp, timestamp"),
    ("_-_", false, "uint, uint"),
    ("_*_", false, "double, double"),
    ("_*_", false, "int, int"),
    ("_*_", false, "uint, uint"),
    ("_/_", false, "double, double"),
    ("_/_", false, "int, int"),
    ("_/_", false, "uint, uint"),
    ("_%_", false, "int, int"),
    ("_%_", false, "uint, uint"),
    ("-_", false, "double"),
    ("-_", false, "int"),
    // The ordering operators are in [`ORDERING`].
    ("_[_]", false, "list(A), int"),
    ("_[_]", false, "map(A, B), A"),
    ("@in", false, "A, list(A)"),
    ("@in", false, "A, map(A, B)"),
    // Conversions and size.
    ("size", false, "bytes"),
    ("size", false, "list(A)"),
    ("size", false, "map(A, B)"),
    ("size", false, "string"),
    ("size", true, "bytes"),
    ("size", true, "list(A)"),
    ("size", true, "map(A, B)"),
    ("size", true, "string"),
    ("bool", false, "bool"),
    ("bool", false, "string"),
    ("bytes", false, "bytes"),
    ("bytes", false, "string"),
    ("double", false, "double"),
    ("double", false, "int"),
    ("double", false, "string"),
    ("double", false, "uint"),
    ("duration", false, "duration"),
    ("duration", false, "int"),
    ("duration", false, "string"),
    ("int", false, "int"),
    ("int", false, "double"),
    ("int", false, "duration"),
    ("int", false, "string"),
    ("int", false, "timestamp"),
    ("int", false, "uint"),
    ("string", false, "string"),
    ("string", false, "bool"),
    ("string", false, "bytes"),
    ("string", false, "double"),
    ("string", false, "duration"),
    ("string", false, "int"),
    ("string", false, "timestamp"),
    ("string", false, "uint"),
    ("string", false, "ip"),
    ("string", false, "cidr"),
    ("timestamp", false, "timestamp"),
    ("timestamp", false, "int"),
    ("timestamp", false, "string"),
    ("uint", false, "uint"),
    ("uint", false, "double"),
    ("uint", false, "int"),
    ("uint", false, "string"),
    // Strings (standard library, ext.Strings v2, Kubernetes regex).
    ("contains", true, "string, string"),
    ("endsWith", true, "string, string"),
    ("startsWith", true, "string, string"),
    ("matches", false, "string, string"),
    ("matches", true, "string, string"),
    ("charAt", true, "string, int"),
    ("indexOf", true, "string, string"),
    ("indexOf", true, "string, string, int"),
    ("indexOf", true, "list(A), A"),
    ("lastIndexOf", true, "string, string"),
    ("lastIndexOf", true, "string, string, int"),
    ("lastIndexOf", true, "list(A), A"),
    ("lowerAscii", true, "string"),
    ("upperAscii", true, "string"),
    ("replace", true, "string, string, string"),
    ("replace", true, "string, string, string, int"),
    ("split", true, "string, string"),
    ("split", true, "string, string, int"),
    ("substring", true, "string, int"),
    ("substring", true, "string, int, int"),
    ("trim", true, "string"),
    ("join", true, "list(string)"),
    ("join", true, "list(string), string"),
    ("strings.quote", false, "string"),
    ("format", true, "string, list(dyn)"),
    ("find", true, "string, string"),
    ("findAll", true, "string, string"),
    ("findAll", true, "string, string, int"),
    // ext.Lists v3 (new rules from Kubernetes 1.35), where the argument
    // types settle the overload.
    ("slice", true, "list(A), int, int"),
    ("distinct", true, "list(A)"),
    ("reverse", true, "list(A)"),
    ("lists.range", false, "int"),
    // Lists (Kubernetes) and sets.
    ("isSorted", true, "list(A)"),
    ("sum", true, "list(int)"),
    ("sum", true, "list(uint)"),
    ("sum", true, "list(double)"),
    ("sum", true, "list(duration)"),
    ("min", true, "list(A)"),
    ("max", true, "list(A)"),
    ("sets.contains", false, "list(A), list(A)"),
    ("sets.equivalent", false, "list(A), list(A)"),
    ("sets.intersects", false, "list(A), list(A)"),
    // URLs.
    ("url", false, "string"),
    ("isURL", false, "string"),
    ("getScheme", true, "url"),
    ("getHost", true, "url"),
    ("getHostname", true, "url"),
    ("getPort", true, "url"),
    ("getEscapedPath", true, "url"),
    ("getQuery", true, "url"),
    // Quantity and semver.
    ("quantity", false, "string"),
    ("isQuantity", false, "string"),
    ("sign", false, "quantity"),
    ("isInteger", true, "quantity"),
    ("asInteger", true, "quantity"),
    ("asApproximateFloat", true, "quantity"),
    ("add", true, "quantity, quantity"),
    ("add", true, "quantity, int"),
    ("sub", true, "quantity, quantity"),
    ("sub", true, "quantity, int"),
    ("isGreaterThan", true, "quantity, quantity"),
    ("isGreaterThan", true, "semver, semver"),
    ("isLessThan", true, "quantity, quantity"),
    ("isLessThan", true, "semver, semver"),
    ("compareTo", true, "quantity, quantity"),
    ("compareTo", true, "semver, semver"),
    ("semver", false, "string"),
    ("semver", false, "string, bool"),
    ("isSemver", false, "string"),
    ("isSemver", false, "string, bool"),
    ("major", true, "semver"),
    ("minor", true, "semver"),
    ("patch", true, "semver"),
    // IP and CIDR.
    ("ip", false, "string"),
    ("isIP", false, "string"),
    ("ip.isCanonical", false, "string"),
    ("family", true, "ip"),
    ("isUnspecified", true, "ip"),
    ("isLoopback", true, "ip"),
    ("isLinkLocalMulticast", true, "ip"),
    ("isLinkLocalUnicast", true, "ip"),
    ("isGlobalUnicast", true, "ip"),
    ("cidr", false, "string"),
    ("isCIDR", false, "string"),
    ("containsIP", true, "cidr, string"),
    ("containsIP", true, "cidr, ip"),
    ("containsCIDR", true, "cidr, string"),
    ("containsCIDR", true, "cidr, cidr"),
    ("ip", true, "cidr"),
    ("prefixLength", true, "cidr"),
    ("masked", true, "cidr"),
    // Timestamps and durations.
    ("getFullYear", true, "timestamp"),
    ("getFullYear", true, "timestamp, string"),
    ("getMonth", true, "timestamp"),
    ("getMonth", true, "timestamp, string"),
    ("getDayOfYear", true, "timestamp"),
    ("getDayOfYear", true, "timestamp, string"),
    ("getDate", true, "timestamp"),
    ("getDate", true, "timestamp, string"),
    ("getDayOfMonth", true, "timestamp"),
    ("getDayOfMonth", true, "timestamp, string"),
    ("getDayOfWeek", true, "timestamp"),
    ("getDayOfWeek", true, "timestamp, string"),
    ("getHours", true, "timestamp"),
    ("getHours", true, "timestamp, string"),
    ("getHours", true, "duration"),
    ("getMinutes", true, "timestamp"),
    ("getMinutes", true, "timestamp, string"),
    ("getMinutes", true, "duration"),
    ("getSeconds", true, "timestamp"),
    ("getSeconds", true, "timestamp, string"),
    ("getSeconds", true, "duration"),
    ("getMilliseconds", true, "timestamp"),
    ("getMilliseconds", true, "timestamp, string"),
    ("getMilliseconds", true, "duration"),
    // Format.
    ("format.named", false, "string"),
    ("validate", true, "format, string"),
    // Optionals.
    ("optional.of", false, "A"),
    ("optional.ofNonZeroValue", false, "A"),
    ("hasValue", true, "opt(A)"),
    ("value", true, "opt(A)"),
    ("or", true, "opt(A), opt(A)"),
    ("orValue", true, "opt(A), A"),
];

/// The operand pairs every ordering operator takes.
const ORDERING: &[&str] = &[
    "bool, bool",
    "int, int",
    "int, double",
    "int, uint",
    "uint, uint",
    "uint, double",
    "uint, int",
    "double, double",
    "double, int",
    "double, uint",
    "string, string",
    "bytes, bytes",
    "timestamp, timestamp",
    "duration, duration",
];

static TABLE: LazyLock<HashMap<&'static str, Vec<Sig>>> = LazyLock::new(|| {
    let mut table: HashMap<&'static str, Vec<Sig>> = HashMap::default();
    let ordering = ["_<_", "_<=_", "_>_", "_>=_"]
        .into_iter()
        .flat_map(|op| ORDERING.iter().map(move |params| (op, false, *params)));
    for (name, member, params) in DECLS.iter().copied().chain(ordering) {
        let params = split_top(params).into_iter().map(parse_pat).collect();
        table.entry(name).or_default().push(Sig { member, params });
    }
    table
});

/// Splits `a, list(b), map(c, d)` at its top-level commas.
fn split_top(s: &'static str) -> Vec<&'static str> {
    let (mut out, mut depth, mut start) = (Vec::new(), 0usize, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

fn parse_pat(s: &'static str) -> Pat {
    let inner = |prefix: &str| {
        s.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(')'))
            .map(split_top)
    };
    if let Some(args) = inner("list(") {
        return Pat::List(Box::new(parse_pat(args[0])));
    }
    if let Some(args) = inner("opt(") {
        return Pat::Opt(Box::new(parse_pat(args[0])));
    }
    if let Some(args) = inner("map(") {
        return Pat::Map(
            Box::new(parse_pat(args[0])),
            Box::new(parse_pat(args.get(1).copied().unwrap_or("dyn"))),
        );
    }
    Pat::Is(match s {
        "A" => return Pat::Param(0),
        "B" => return Pat::Param(1),
        "dyn" => return Pat::Dyn,
        "bool" => Ty::Bool,
        "int" => Ty::Int,
        "uint" => Ty::Uint,
        "double" => Ty::Double,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "duration" => Ty::Duration,
        "timestamp" => Ty::Timestamp,
        lib => Ty::Lib(lib),
    })
}

/// What the checker cannot be sure of matches anything.
fn wildcard(t: &Ty<'_>) -> bool {
    matches!(t, Ty::Dyn | Ty::Unknown | Ty::Type)
}

/// The types `null` is not assignable to (the server refuses
/// `self.name == null` but takes `self.obj != null`).
fn never_null(t: &Ty<'_>) -> bool {
    matches!(
        t,
        Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes
    )
}

/// Whether two argument types can be the same type. Objects of the schema
/// are taken as alike each other (cel-go names them by path, which is not
/// modelled here), never as maps.
fn alike(a: &Ty<'_>, b: &Ty<'_>) -> bool {
    if wildcard(a) || wildcard(b) {
        return true;
    }
    match (a, b) {
        (Ty::Null, t) | (t, Ty::Null) => !never_null(t),
        (Ty::List(x), Ty::List(y)) | (Ty::Opt(x), Ty::Opt(y)) => alike(x, y),
        (Ty::Map(k1, v1), Ty::Map(k2, v2)) => alike(k1, k2) && alike(v1, v2),
        (Ty::Object(_), Ty::Object(_)) => true,
        (Ty::Lib(x), Ty::Lib(y)) => x == y,
        _ => std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

fn unify<'a>(p: &Pat, t: &Ty<'a>, binds: &mut [Option<Ty<'a>>; 2]) -> bool {
    if wildcard(t) {
        return true;
    }
    match (p, t) {
        (Pat::Dyn, _) => true,
        (Pat::Param(i), _) => match &binds[*i] {
            Some(b) if wildcard(b) => {
                binds[*i] = Some(t.clone());
                true
            }
            Some(b) => alike(b, t),
            None => {
                binds[*i] = Some(t.clone());
                true
            }
        },
        // `null` where a library type is declared: not modelled, so not
        // refused.
        (Pat::Is(Ty::Lib(_)), Ty::Null) => true,
        (Pat::Is(want), _) => t.same(want),
        (Pat::List(p), Ty::List(e)) | (Pat::Opt(p), Ty::Opt(e)) => unify(p, e, binds),
        (Pat::Map(pk, pv), Ty::Map(k, v)) => unify(pk, k, binds) && unify(pv, v, binds),
        // Nor where a list, map or optional is.
        (Pat::List(_) | Pat::Map(..) | Pat::Opt(_), Ty::Null) => true,
        _ => false,
    }
}

/// cel-go's spelling of a type in its errors.
pub fn display(t: &Ty<'_>) -> String {
    match t {
        Ty::Bool => "bool".into(),
        Ty::Int => "int".into(),
        Ty::Uint => "uint".into(),
        Ty::Double => "double".into(),
        Ty::String => "string".into(),
        Ty::Bytes => "bytes".into(),
        Ty::Null => "null_type".into(),
        Ty::Duration => "google.protobuf.Duration".into(),
        Ty::Timestamp => "google.protobuf.Timestamp".into(),
        Ty::List(e) => format!("list({})", display(e)),
        Ty::Map(k, v) => format!("map({}, {})", display(k), display(v)),
        Ty::Object(_) => "object".into(),
        Ty::Opt(e) => format!("optional_type({})", display(e)),
        Ty::Lib(name) => match *name {
            "quantity" => "kubernetes.Quantity".into(),
            "url" => "kubernetes.URL".into(),
            "ip" => "net.IP".into(),
            "cidr" => "net.IPNet".into(),
            "semver" => "kubernetes.Semver".into(),
            "format" => "kubernetes.NamedFormat".into(),
            other => other.into(),
        },
        Ty::Type => "type".into(),
        Ty::Dyn | Ty::Unknown => "dyn".into(),
    }
}

/// Functions the CRD environment declares that the table above leaves
/// unchecked: their calls get no overload verdict, but they exist. The
/// macros are here too, for calls that do not expand (a wrong arity).
const OTHER_NAMES: &[&str] = &[
    "dyn",
    "type",
    "optional.none",
    "optional.unwrap",
    "unwrapOpt",
    "optMap",
    "optFlatMap",
    "_?._",
    "_[?_]",
    "first",
    "last",
    "flatten",
    "sort",
    "sortBy",
    "@sortByAssociatedKeys",
    "cel.@mapInsert",
    "@not_strictly_false",
    "__not_strictly_false__",
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "has",
    "transformList",
    "transformMap",
    "transformMapEntry",
    // The authorizer library, declared though CRD rules have no authorizer.
    "path",
    "group",
    "serviceAccount",
    "resource",
    "subresource",
    "namespace",
    "name",
    "check",
    "allowed",
    "reason",
    "errored",
    "error",
    "fieldSelector",
    "labelSelector",
];

/// Whether the CRD environment declares a function of this name (after
/// [`super::check::normalize`], so namespaced names are qualified).
pub fn declared(name: &str) -> bool {
    TABLE.contains_key(name) || OTHER_NAMES.contains(&name) || name.starts_with("format.")
}

/// The error for a call of `name` the server refuses, if the checker is
/// sure of it: a name the environment does not declare, or a call no
/// overload accepts.
pub fn call_error(name: &str, target: Option<&Ty<'_>>, args: &[Ty<'_>]) -> Option<String> {
    let Some(sigs) = TABLE.get(name) else {
        return (!declared(name)).then(|| format!("undeclared reference to '{name}'"));
    };
    let arity = args.len() + usize::from(target.is_some());
    let accepted = sigs.iter().any(|sig| {
        sig.member == target.is_some() && sig.params.len() == arity && {
            let mut binds = [None, None];
            sig.params
                .iter()
                .zip(target.into_iter().chain(args))
                .all(|(p, t)| unify(p, t, &mut binds))
        }
    });
    if accepted {
        return None;
    }
    let list = |ts: &[Ty<'_>]| ts.iter().map(display).collect::<Vec<_>>().join(", ");
    let applied = match target {
        Some(t) => format!("{}.({})", display(t), list(args)),
        None => format!("({})", list(args)),
    };
    Some(format!(
        "found no matching overload for '{name}' applied to '{applied}'"
    ))
}

/// The error for an element of an aggregate literal whose type differs
/// from the first element's (`cel.HomogeneousAggregateLiterals`).
pub fn mixed_literal(first: &Ty<'_>, next: &Ty<'_>) -> Option<String> {
    (!alike(first, next)).then(|| {
        format!(
            "expected type '{}' but found '{}'",
            display(first),
            display(next)
        )
    })
}

/// The error for selecting a field of a value that has none.
pub fn no_fields(operand: &Ty<'_>) -> Option<String> {
    match operand {
        Ty::Bool
        | Ty::Int
        | Ty::Uint
        | Ty::Double
        | Ty::String
        | Ty::Bytes
        | Ty::Duration
        | Ty::Timestamp
        | Ty::List(_)
        | Ty::Lib(_) => Some(format!(
            "type '{}' does not support field selection",
            display(operand)
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(t: Ty<'static>) -> Ty<'static> {
        Ty::List(Box::new(t))
    }

    #[test]
    fn calls_are_matched_against_every_overload_of_the_name() {
        assert_eq!(call_error("_+_", None, &[Ty::Int, Ty::Int]), None);
        assert_eq!(
            call_error("_+_", None, &[Ty::String, Ty::Int]).as_deref(),
            Some("found no matching overload for '_+_' applied to '(string, int)'")
        );
        assert_eq!(
            call_error("indexOf", Some(&l(Ty::String)), &[Ty::String]),
            None
        );
        assert!(call_error("indexOf", Some(&l(Ty::String)), &[Ty::Int]).is_some());
        assert_eq!(
            call_error("lastIndexOf", Some(&Ty::String), &[Ty::String, Ty::String]).as_deref(),
            Some(
                "found no matching overload for 'lastIndexOf' applied to 'string.(string, string)'"
            )
        );
        // A member overload is not a global one.
        assert!(call_error("startsWith", None, &[Ty::String, Ty::String]).is_some());
    }

    #[test]
    fn type_parameters_bind_once_and_unsure_types_match_anything() {
        assert!(call_error("_==_", None, &[Ty::Int, Ty::Uint]).is_some());
        assert_eq!(call_error("_==_", None, &[Ty::Int, Ty::Dyn]), None);
        assert_eq!(call_error("_==_", None, &[Ty::Unknown, Ty::String]), None);
        assert!(call_error("@in", None, &[Ty::Int, l(Ty::String)]).is_some());
        assert_eq!(call_error("@in", None, &[Ty::String, l(Ty::Dyn)]), None);
        assert!(call_error("_?_:_", None, &[Ty::Bool, Ty::Int, Ty::String]).is_some());
        assert!(call_error("_?_:_", None, &[Ty::Int, Ty::Int, Ty::Int]).is_some());
        assert!(call_error("orValue", Some(&Ty::Opt(Box::new(Ty::Int))), &[Ty::String]).is_some());
    }

    #[test]
    fn names_not_declared_here_get_no_verdict() {
        assert_eq!(call_error("sortBy", Some(&Ty::Int), &[]), None);
        assert!(declared("sortBy") && declared("format.dns1123Label") && declared("_+_"));
        assert!(!declared("startswith") && !declared("greatest"));
    }

    #[test]
    fn null_is_no_scalar_and_objects_are_no_maps() {
        let map = Ty::Map(Box::new(Ty::String), Box::new(Ty::String));
        assert!(call_error("_==_", None, &[Ty::String, Ty::Null]).is_some());
        assert!(call_error("size", None, &[Ty::Int]).is_some());
        assert_eq!(call_error("_==_", None, &[map.clone(), Ty::Null]), None);
        assert!(mixed_literal(&Ty::Int, &Ty::Null).is_some());
        assert!(mixed_literal(&map, &Ty::Unknown).is_none());
    }

    #[test]
    fn literals_must_not_mix_types_and_scalars_have_no_fields() {
        assert!(mixed_literal(&Ty::Int, &Ty::String).is_some());
        assert_eq!(mixed_literal(&Ty::Int, &Ty::Dyn), None);
        assert_eq!(
            no_fields(&Ty::Int).as_deref(),
            Some("type 'int' does not support field selection")
        );
        assert_eq!(no_fields(&Ty::Dyn), None);
    }
}
