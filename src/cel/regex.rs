//! The regexes CEL's `matches`, `find` and `findAll` compile, kept per
//! thread by pattern so a rule does not compile its pattern on every object.

use std::cell::RefCell;
use std::collections::HashMap;

thread_local! {
    /// Regexes compiled by `matches`, `find` and `findAll`, by pattern,
    /// each with what it is charged ([`crate::re2::compile_go_weighed`]).
    static REGEXES: RefCell<Kept> = RefCell::new(Kept::default());
}

#[derive(Default)]
struct Kept {
    by_pattern: HashMap<String, (regex::Regex, usize)>,
    bytes: usize,
}

/// Most patterns kept per thread.
const REGEX_CACHE_SIZE: usize = 256;

/// Runs `f` with `pattern` compiled as Go's `regexp` (the API server's CEL
/// uses it); `Err` is the compile error. What a thread keeps is bounded in
/// bytes as the process's cache of schema patterns is, not only in count.
pub(crate) fn cached<T>(pattern: &str, f: impl FnOnce(&regex::Regex) -> T) -> Result<T, String> {
    REGEXES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some((re, _)) = cache.by_pattern.get(pattern) {
            return Ok(f(re));
        }
        let (re, weight) = crate::re2::compile_go_weighed(pattern).map_err(|e| e.to_string())?;
        let out = f(&re);
        let (weight, room) = (2 * weight, crate::re2::built_cache_bytes());
        if weight <= room / 4 {
            if cache.by_pattern.len() >= REGEX_CACHE_SIZE || cache.bytes + weight > room {
                *cache = Kept::default();
            }
            cache.bytes += weight;
            cache.by_pattern.insert(pattern.to_string(), (re, weight));
        }
        Ok(out)
    })
}
