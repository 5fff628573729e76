//! The regexes CEL's `matches`, `find` and `findAll` compile, kept per
//! thread by pattern so a rule does not compile its pattern on every object.

use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// Regexes compiled by `matches`, `find` and `findAll`, by pattern.
    static REGEXES: RefCell<HashMap<String, regex::Regex>> = RefCell::new(HashMap::new());
}

/// Most patterns kept per thread.
const REGEX_CACHE_SIZE: usize = 256;

/// Runs `f` with `pattern` compiled as Go's `regexp` (the API server's CEL
/// uses it); `Err` is the compile error.
pub(crate) fn cached<T>(pattern: &str, f: impl FnOnce(&regex::Regex) -> T) -> Result<T, String> {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(re) = cache.get(pattern) {
            return Ok(f(re));
        }
        let re = crate::re2::compile_go(pattern).map_err(|e| e.to_string())?;
        let out = f(&re);
        if cache.len() >= REGEX_CACHE_SIZE {
            cache.clear();
        }
        cache.insert(pattern.to_string(), re);
        Ok(out)
    })
}
