//! The library functions whose `cel` crate defaults differ from the API
//! server's, and the base context that holds every Kubernetes library with
//! them in place: `matches`, `find` and `findAll` use Go's `regexp` syntax,
//! `size()` counts a string's code points.

use std::sync::Arc;

use kube::core::cel::KubeCelExt;
use kube::core::cel::cel::common::types::{
    CelBytes, CelList, CelMap as CelValMap, CelString as CelValString,
};
use kube::core::cel::cel::extractors::{Arguments, This};
use kube::core::cel::cel::{
    Context, ExecutionError, FunctionContext, ResolveResult, Value as CelValue,
};

thread_local! {
    /// All Kubernetes CEL libraries, registered once per thread, with the
    /// functions whose Rust defaults differ from the API server's replaced.
    pub(crate) static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx.add_function("matches", go_matches);
        ctx.add_function("find", go_find);
        ctx.add_function("findAll", go_find_all);
        ctx.add_function("size", size);
        ctx.add_function("self.size", self_size);
        ctx
    };
}

/// Runs `f` with `pattern` compiled as Go's `regexp` (the API server's CEL
/// uses it), cached per pattern instead of compiled on every call.
fn with_regex<T>(
    ftx: &FunctionContext,
    pattern: &str,
    f: impl FnOnce(&regex::Regex) -> T,
) -> Result<T, ExecutionError> {
    super::regex::cached(pattern, f)
        .map_err(|err| ftx.error(format!("'{pattern}' not a valid regex:\n{err}")))
}

/// `string.matches(pattern)`: an unanchored search, as in cel-go.
fn go_matches(
    ftx: &FunctionContext,
    This(this): This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<bool, ExecutionError> {
    with_regex(ftx, &pattern, |re| re.is_match(&this))
}

/// `string.find(pattern)`: the leftmost match, or `''`.
fn go_find(
    ftx: &FunctionContext,
    This(this): This<Arc<String>>,
    pattern: Arc<String>,
) -> ResolveResult {
    let found = with_regex(ftx, &pattern, |re| {
        re.find(&this)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default()
    })?;
    Ok(CelValue::String(Arc::new(found)))
}

/// `string.findAll(pattern[, limit])`: every match, or the first `limit`
/// (a negative limit means all, as in the Kubernetes library).
fn go_find_all(
    ftx: &FunctionContext,
    This(this): This<Arc<String>>,
    Arguments(args): Arguments,
) -> ResolveResult {
    let Some(CelValue::String(pattern)) = args.first() else {
        return Err(ftx.error("findAll: expected a string pattern"));
    };
    let limit = match args.get(1) {
        Some(CelValue::Int(n)) if *n >= 0 => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let found = with_regex(ftx, pattern, |re| {
        re.find_iter(&this)
            .take(limit)
            .map(|m| CelValue::String(Arc::new(m.as_str().to_string())))
            .collect::<Vec<_>>()
    })?;
    Ok(CelValue::List(Arc::new(found)))
}

/// `size()`: Kubernetes CEL counts a string's Unicode code points (the cel
/// crate counts UTF-8 bytes, so `'ééé'.size()` would be 6, not 3).
fn size(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<i64, ExecutionError> {
    match &this {
        CelValue::String(s) => Ok(code_points(s)),
        _ => kube::core::cel::cel::functions::size(ftx, This(this)),
    }
}

fn code_points(s: &str) -> i64 {
    i64::try_from(s.chars().count()).unwrap_or(i64::MAX)
}

/// `self.size()`. The interpreter looks up a function named `self.size`
/// before `size`, and calls it without converting `self` to a [`CelValue`]
/// first (a deep copy of the whole value, done on every call otherwise).
/// Lists, maps, strings (in code points, like [`size`]) and bytes are
/// measured in place; anything else takes [`size`], errors included.
fn self_size(ftx: &FunctionContext) -> ResolveResult {
    let this = ftx
        .ptx
        .get_variable("self")
        .ok_or_else(|| ExecutionError::UndeclaredReference(Arc::new("self".to_string())))?;
    let n = if let Some(l) = this.downcast_ref::<CelList>() {
        Some(l.inner().len() as i64)
    } else if let Some(m) = this.downcast_ref::<CelValMap>() {
        Some(m.inner().len() as i64)
    } else if let Some(s) = this.downcast_ref::<CelValString>() {
        Some(code_points(s.inner()))
    } else {
        this.downcast_ref::<CelBytes>()
            .map(|b| b.inner().len() as i64)
    };
    if let Some(n) = n {
        return Ok(CelValue::Int(n));
    }
    let value = CelValue::try_from(this.as_ref())?;
    let ftx = FunctionContext::new(ftx.name, Some(value.clone()), ftx.ptx, ftx.args);
    size(&ftx, This(value)).map(CelValue::Int)
}
