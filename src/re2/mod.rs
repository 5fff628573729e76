//! Regular expressions as Go's `regexp` (RE2 syntax) parses and matches them.
//!
//! The API server checks `pattern` and runs CEL `matches()`/`find()` with Go's
//! `regexp`, whose syntax looks like Rust's `regex` but differs in ways that
//! change verdicts:
//!
//! - `\d`, `\w`, `\s` and `\b` are ASCII-only in Go (`\s` is `[\t\n\f\r ]`, no
//!   `\v`); Rust's are Unicode by default, so `^\d+$` would accept `"١٢٣"`.
//! - Inside a class Go has no set operations and no nested classes: `[a&&b]`
//!   is the three characters `a`, `&`, `b`, and `[[a]` is `[` or `a`.
//! - `{` that does not start a valid `{n}`, `{n,}`, `{n,m}` (no leading zeros)
//!   is a literal brace; `{,n}` is literal too.
//! - Go accepts `\Q...\E`, octal escapes (`\012`) and `(?)`, which Rust does
//!   not; Rust accepts `\<`, `\>`, `\b{start}`, `\e`, `\u{..}`, flags `x`,
//!   `R`, `u`, class operations, repeated repetition operators (`a**`) and
//!   counts over 1000, which Go rejects (or reads differently).
//!
//! So a Go pattern is not handed to Rust as written: [`translate_go`] parses
//! it with Go's rules (rejecting what Go rejects) and writes an equivalent
//! Rust pattern with the ASCII classes spelled out, and [`compile_go`]
//! compiles that. `.` still matches one whole code point, and `(?i)` still
//! folds case with Unicode simple case folding, as Go does (an ASCII class
//! under `(?i)` also matches `K`, KELVIN SIGN, in both).
//!
//! `\p{..}` names are resolved as Go 1.25 resolves them (see
//! [`go_unicode_class`]): `\p{greek}` and `\p{Letter}` are accepted,
//! `\p{Latn}` and `\p{Old_Italic}` are not (Rust accepts all four).
//!
//! Not covered: Go's size limits (at most 128 MB of compiled program, 1000
//! levels of nesting) are approximated by a nesting check and a larger Rust
//! size limit.

pub(crate) mod language;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use regex::{Regex, RegexBuilder};
use thiserror::Error;

/// Largest count Go allows in `{n,m}`, also for nested counts multiplied.
const MAX_REPEAT: u64 = 1000;
/// Deepest group nesting Go accepts.
const MAX_NESTING: usize = 1000;
/// Rust's compiled-size budget: above its 10 MB default, so patterns Go
/// accepts (`\pL{1000}`) compile here too.
const SIZE_LIMIT: usize = 256 << 20;

/// The first size a pattern is compiled within: nearly every pattern of
/// real CRDs fits, and what is charged for it in the caches is this.
const SMALL_LIMIT: usize = 1 << 20;

/// The most one pattern may take (its program, and its lazy DFA's cache),
/// [`SIZE_LIMIT`] unless [`limit_memory`] lowered it.
static MEMORY_LIMIT: AtomicUsize = AtomicUsize::new(SIZE_LIMIT);

/// Lowers what one pattern may take, for the whole process: `serve`
/// judges patterns anyone who may write CRDs sends it, and a pattern Go
/// compiles to a few KB (`\pL{1000}`) takes far more memory and time here.
/// A pattern over the limit is one this process cannot match, which every
/// caller takes as undecided (the finding it would have cleared stays),
/// as for [`PatternError::TooLarge`] already (figures: docs/BENCHMARKS.md,
/// "After the hostile-input bounds (2026-12-02)").
pub fn limit_memory(bytes: usize) {
    MEMORY_LIMIT.store(bytes.clamp(SMALL_LIMIT, SIZE_LIMIT), Ordering::Relaxed);
}

/// What one pattern may take now.
fn memory_limit() -> usize {
    MEMORY_LIMIT.load(Ordering::Relaxed)
}

/// Go's `unicode.Categories` names.
const GO_CATEGORIES: &[&str] = &[
    "C", "Cc", "Cf", "Cn", "Co", "Cs", "L", "Ll", "Lm", "Lo", "Lt", "Lu", "M", "Mc", "Me", "Mn",
    "N", "Nd", "Nl", "No", "P", "Pc", "Pd", "Pe", "Pf", "Pi", "Po", "Ps", "S", "Sc", "Sk", "Sm",
    "So", "Z", "Zl", "Zp", "Zs",
];

/// Go's `unicode.Scripts` names (Unicode 15.0). Rust also accepts script
/// aliases (`Latn`), Go does not.
const GO_SCRIPTS: &[&str] = &[
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cypro_Minoan",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Katakana",
    "Kawi",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nag_Mundari",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Old_Uyghur",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangsa",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Toto",
    "Ugaritic",
    "Vai",
    "Vithkuqi",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
];

/// A `\p{..}` class: a Rust class name or an explicit set.
enum GoClass {
    Rust(String),
    Set(&'static str),
}

/// Go's `unicodeTable` (Go 1.25): the name is canonicalized (`_`, `-` and
/// spaces dropped, first letter upper case, the rest lower case), then read
/// as `Any`, `Assigned`, `Ascii`, `Lc`, a category, a script, or a category
/// alias (`Letter`, `Uppercase_Letter`, ...). Scripts whose names have inner
/// capitals or underscores (`Old_Italic`, `SignWriting`) cannot be reached
/// that way, and Go rejects them; so do we. Go 1.24 and older accepted only
/// exact category and script names.
fn go_unicode_class(name: &str) -> Option<GoClass> {
    let canonical = canonical_name(name);
    match canonical.as_str() {
        "Any" => return Some(GoClass::Set(r"\x{0}-\x{10FFFF}")),
        "Assigned" => return Some(GoClass::Rust("Assigned".into())),
        "Ascii" => return Some(GoClass::Set(r"\x{0}-\x{7F}")),
        "Lc" => return Some(GoClass::Rust("LC".into())),
        _ => {}
    }
    if GO_CATEGORIES.contains(&canonical.as_str()) || GO_SCRIPTS.contains(&canonical.as_str()) {
        return Some(GoClass::Rust(canonical));
    }
    GO_CATEGORY_ALIASES
        .iter()
        .find(|(alias, _)| canonical_name(alias) == canonical)
        .map(|(_, actual)| GoClass::Rust((*actual).into()))
}

/// Go's `canonicalName`: `_`, `-` and spaces dropped, the first letter upper
/// case, the others lower case.
fn canonical_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars().filter(|c| !matches!(c, '_' | '-' | ' ')) {
        if out.is_empty() {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Go's `unicode.CategoryAliases`.
const GO_CATEGORY_ALIASES: &[(&str, &str)] = &[
    ("Cased_Letter", "LC"),
    ("Close_Punctuation", "Pe"),
    ("Combining_Mark", "M"),
    ("Connector_Punctuation", "Pc"),
    ("Control", "Cc"),
    ("Currency_Symbol", "Sc"),
    ("Dash_Punctuation", "Pd"),
    ("Decimal_Number", "Nd"),
    ("Enclosing_Mark", "Me"),
    ("Final_Punctuation", "Pf"),
    ("Format", "Cf"),
    ("Initial_Punctuation", "Pi"),
    ("Letter", "L"),
    ("Letter_Number", "Nl"),
    ("Line_Separator", "Zl"),
    ("Lowercase_Letter", "Ll"),
    ("Mark", "M"),
    ("Math_Symbol", "Sm"),
    ("Modifier_Letter", "Lm"),
    ("Modifier_Symbol", "Sk"),
    ("Nonspacing_Mark", "Mn"),
    ("Number", "N"),
    ("Open_Punctuation", "Ps"),
    ("Other", "C"),
    ("Other_Letter", "Lo"),
    ("Other_Number", "No"),
    ("Other_Punctuation", "Po"),
    ("Other_Symbol", "So"),
    ("Paragraph_Separator", "Zp"),
    ("Private_Use", "Co"),
    ("Punctuation", "P"),
    ("Separator", "Z"),
    ("Space_Separator", "Zs"),
    ("Spacing_Mark", "Mc"),
    ("Surrogate", "Cs"),
    ("Symbol", "S"),
    ("Titlecase_Letter", "Lt"),
    ("Unassigned", "Cn"),
    ("Uppercase_Letter", "Lu"),
    ("cntrl", "Cc"),
    ("digit", "Nd"),
    ("punct", "P"),
];

/// Why a pattern cannot be used.
#[derive(Debug, Error)]
pub enum PatternError {
    /// Go's `regexp` would reject it; the message uses Go's wording.
    #[error("error parsing regexp: {code}: `{expr}`")]
    Go { code: &'static str, expr: String },
    /// Go would accept it but it does not compile here (a size limit).
    #[error("pattern too large to compile: {0}")]
    TooLarge(#[source] Box<regex::Error>),
}

/// Compiles `pattern` as Go's `regexp.Compile` would, to match like Go.
pub fn compile_go(pattern: &str) -> Result<Regex, PatternError> {
    compile_go_weighed(pattern).map(|(re, _)| re)
}

/// [`compile_go`], with the size limit it was compiled within: about what
/// it takes at most, program and matching cache each, so what a cache of
/// matchers charges for it. Compiled within [`SMALL_LIMIT`] first, then
/// within the whole limit: a large pattern fails the first build as soon
/// as it passes the small limit, so the first try costs little.
pub fn compile_go_weighed(pattern: &str) -> Result<(Regex, usize), PatternError> {
    let rust = translate_go(pattern)?;
    let limit = memory_limit();
    match build(pattern, &rust, SMALL_LIMIT.min(limit)) {
        Err(PatternError::TooLarge(_)) if limit > SMALL_LIMIT => {
            build(pattern, &rust, limit).map(|re| (re, limit))
        }
        built => built.map(|re| (re, SMALL_LIMIT.min(limit))),
    }
}

fn build(pattern: &str, rust: &str, limit: usize) -> Result<Regex, PatternError> {
    RegexBuilder::new(rust)
        .size_limit(limit)
        .dfa_size_limit(limit)
        .nest_limit(u32::try_from(MAX_NESTING * 2).unwrap_or(u32::MAX))
        .build()
        .map_err(|e| match e {
            regex::Error::CompiledTooBig(_) => PatternError::TooLarge(Box::new(e)),
            // The translation only writes syntax Rust accepts; anything else
            // is a Go construct Rust lacks (an unknown \p name, an empty
            // class), which Go would refuse as well.
            other => PatternError::Go {
                code: INVALID_RANGE,
                expr: format!("{pattern} ({})", first_line(&other.to_string())),
            },
        })
}

/// Whether Go's `regexp.Compile` accepts `pattern`, without building the
/// matcher: the translation applies Go's own limits (repeat counts, nesting,
/// program size), and parsing the translation is what decides the rest. A
/// matcher Rust could not build for its size is not a pattern Go refuses.
/// CRD validation checks every `pattern` of a schema, and building a matcher
/// for each was a tenth of a whole `diff`.
pub fn check_go(pattern: &str) -> Result<(), PatternError> {
    let rust = translate_go(pattern)?;
    let refused = |e: &dyn std::fmt::Display| PatternError::Go {
        code: INVALID_RANGE,
        expr: format!("{pattern} ({})", first_line(&e.to_string())),
    };
    let ast = regex_syntax::ast::parse::ParserBuilder::new()
        .nest_limit(u32::try_from(MAX_NESTING * 2).unwrap_or(u32::MAX))
        .build()
        .parse(&rust)
        .map_err(|e| refused(&e))?;
    // Past the syntax, Rust can refuse a Unicode class name, or bytes that
    // are not UTF-8, which only `(?-u)` can ask for and the translation
    // writes only around `\b`. So only a translation that names a class is
    // taken on to Rust's intermediate form: that step was two fifths of
    // checking a pattern.
    if rust.contains("\\p") || rust.contains("\\P") {
        regex_syntax::hir::translate::TranslatorBuilder::new()
            .build()
            .translate(&rust, &ast)
            .map_err(|e| refused(&e))?;
    }
    Ok(())
}

/// A schema's `pattern`, checked when the schema is compiled but built into
/// a matcher only when a value first meets it. Building is most of the cost
/// of compiling a schema, and the validators made for `default` values (one
/// per default, over the node's whole subtree) meet few of their patterns.
#[derive(Debug)]
pub struct LazyPattern {
    source: String,
    compiled: std::sync::OnceLock<Result<Arc<Regex>, String>>,
}

impl LazyPattern {
    /// Checks `pattern` with Go's rules ([`check_go_cached`]) without
    /// building it.
    pub fn new(pattern: &str) -> Result<LazyPattern, PatternError> {
        check_go_cached(pattern)?;
        Ok(LazyPattern {
            source: pattern.to_string(),
            compiled: std::sync::OnceLock::new(),
        })
    }

    /// The pattern as the schema writes it (the API server quotes it so).
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether `s` matches; `Err` with the reason when the matcher cannot be
    /// built here (Go accepts it, but it is over our size budget).
    pub fn is_match(&self, s: &str) -> Result<bool, &str> {
        self.compiled
            .get_or_init(|| compile_go_cached(&self.source))
            .as_ref()
            .map(|re| re.is_match(s))
            .map_err(String::as_str)
    }
}

/// [`compile_go`], remembered by the pattern's text for the whole process.
/// Checking a CRD builds one validator per `default`, each over the node's
/// subtree, and those subtrees share their patterns (and versions share
/// whole schemas). The matcher itself is shared, not cloned: a clone of a
/// `Regex` starts with an empty cache, and a first match (the lazy DFA's
/// tables, its first states) costs many times what later matches do.
/// The cache is bounded in what its matchers may take (each charged the
/// limit it was compiled within, twice: program and matching cache), not
/// only in their count: 1,025 patterns of 256 MB each fitted before.
fn compile_go_cached(pattern: &str) -> Result<Arc<Regex>, String> {
    if let Some(hit) = locked(&BUILT).entries.get(pattern).map(|(r, _)| r.clone()) {
        return hit;
    }
    // Built outside the lock: two threads may build the same pattern once
    // each, but none waits for another's build.
    let (built, weight) = match compile_go_weighed(pattern) {
        Ok((re, weight)) => (Ok(Arc::new(re)), 2 * weight),
        Err(e) => (Err(e.to_string()), 0),
    };
    let mut b = locked(&BUILT);
    let room = built_cache_bytes();
    if weight <= room / 4 {
        if b.entries.len() >= 1024 || b.bytes + weight > room {
            b.entries.clear();
            b.bytes = 0;
        }
        if let Some((_, old)) = b
            .entries
            .insert(pattern.to_string(), (built.clone(), weight))
        {
            b.bytes -= old;
        }
        b.bytes += weight;
    }
    built
}

/// What the matchers kept in [`BUILT`] may take together: 64 MiB, or
/// eight patterns of the largest size allowed when that is less.
pub(crate) fn built_cache_bytes() -> usize {
    (64 << 20).min(8 * memory_limit())
}

/// [`check_go`], with the patterns that passed remembered for the whole
/// process: the same patterns recur across the versions and CRDs of a
/// release (whichever thread checks them), and the validators built for
/// `default` values check them again and again.
pub fn check_go_cached(pattern: &str) -> Result<(), PatternError> {
    if locked(&GOOD).contains(pattern) {
        return Ok(());
    }
    check_go(pattern)?;
    let mut g = locked(&GOOD);
    if g.len() > 4096 {
        g.clear();
    }
    g.insert(pattern.to_string());
    Ok(())
}

/// Matchers by pattern, each with what it is charged, and their total.
#[derive(Default)]
struct Built {
    entries: foldhash::HashMap<String, (Result<Arc<Regex>, String>, usize)>,
    bytes: usize,
}
static BUILT: LazyLock<Mutex<Built>> = LazyLock::new(Default::default);
static GOOD: LazyLock<Mutex<foldhash::HashSet<String>>> = LazyLock::new(Default::default);

/// Empties the process's caches of checked and built patterns (and the
/// answers worked out about them), so that a benchmark can measure each
/// run as a fresh process would make it.
pub fn forget_patterns() {
    *locked(&BUILT) = Built::default();
    locked(&GOOD).clear();
    language::forget();
}

/// A cache's lock. A thread that panicked while holding it left the cache
/// whole (entries are inserted in one call), so a poisoned lock is used.
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn first_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .unwrap_or(s)
        .trim_start_matches("error: ")
        .to_string()
}

/// The Rust `regex` pattern that matches what the Go pattern matches, or
/// Go's parse error.
pub fn translate_go(pattern: &str) -> Result<String, PatternError> {
    Translator {
        src: pattern,
        pos: 0,
        out: String::with_capacity(pattern.len() + 16),
        frames: vec![Frame::default()],
    }
    .run()
}

/// One open group: what a following repetition operator would apply to.
#[derive(Default)]
struct Frame {
    /// Largest product of nested `{n,m}` counts in the group so far.
    weight: u64,
    /// The count product of the item a repetition would apply to, if any.
    last: Option<u64>,
    /// Whether the previous token was a repetition (Go rejects `a**`).
    after_repeat: bool,
    /// Where that repetition started, for Go's error text (`**`).
    repeat_start: usize,
}

struct Translator<'a> {
    src: &'a str,
    pos: usize,
    out: String,
    frames: Vec<Frame>,
}

fn err(code: &'static str, expr: &str) -> PatternError {
    PatternError::Go {
        code,
        expr: expr.to_string(),
    }
}

const MISSING_BRACKET: &str = "missing closing ]";
const INVALID_ESCAPE: &str = "invalid escape sequence";
const INVALID_RANGE: &str = "invalid character class range";
const INVALID_REPEAT_SIZE: &str = "invalid repeat count";
const INVALID_REPEAT_OP: &str = "invalid nested repetition operator";
const MISSING_REPEAT_ARG: &str = "missing argument to repetition operator";

/// Go's ASCII Perl classes, as class items.
fn perl_class(c: char) -> Option<(&'static str, bool)> {
    match c {
        'd' => Some(("0-9", false)),
        'D' => Some(("0-9", true)),
        's' => Some((r"\t\n\x0C\r ", false)),
        'S' => Some((r"\t\n\x0C\r ", true)),
        'w' => Some(("0-9A-Za-z_", false)),
        'W' => Some(("0-9A-Za-z_", true)),
        _ => None,
    }
}

/// A literal code point in Rust syntax, safe inside and outside classes.
fn push_literal(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || !c.is_ascii() && !c.is_whitespace() {
        out.push(c);
    } else {
        out.push_str(&format!(r"\x{{{:X}}}", c as u32));
    }
}

impl Translator<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn next_char(&mut self) -> Option<char> {
        let c = self.rest().chars().next()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn frame(&mut self) -> &mut Frame {
        // There is always the outermost frame; `)` never pops it.
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    /// An item a repetition may apply to, with its count product.
    fn item(&mut self, weight: u64) {
        let f = self.frame();
        f.weight = f.weight.max(weight);
        f.last = Some(weight);
        f.after_repeat = false;
    }

    fn run(mut self) -> Result<String, PatternError> {
        while let Some(c) = self.rest().chars().next() {
            let start = self.pos;
            match c {
                '(' => self.open_group()?,
                ')' => {
                    self.pos += 1;
                    if self.frames.len() < 2 {
                        return Err(err("unexpected )", self.src));
                    }
                    let group = self.frames.pop().map_or(1, |f| f.weight.max(1));
                    self.out.push(')');
                    self.item(group);
                }
                '|' => {
                    self.pos += 1;
                    self.out.push('|');
                    let f = self.frame();
                    f.last = None;
                    f.after_repeat = false;
                }
                '^' | '$' | '.' => {
                    self.pos += 1;
                    self.out.push(c);
                    self.item(1);
                }
                '[' => {
                    self.class()?;
                    self.item(1);
                }
                '*' | '+' | '?' => {
                    self.pos += 1;
                    self.repeat(start, None)?;
                    self.out.push(c);
                    self.lazy_suffix();
                }
                '{' => match self.counted() {
                    Some((min, max)) => {
                        self.repeat(start, Some((min, max)))?;
                        let text = &self.src[start..self.pos];
                        self.out.push_str(text);
                        self.lazy_suffix();
                    }
                    None => {
                        self.pos += 1;
                        push_literal(&mut self.out, '{');
                        self.item(1);
                    }
                },
                '\\' => self.escape()?,
                _ => {
                    self.pos += c.len_utf8();
                    push_literal(&mut self.out, c);
                    self.item(1);
                }
            }
        }
        if self.frames.len() > 1 {
            return Err(err("missing closing )", self.src));
        }
        Ok(self.out)
    }

    /// `?` after a repetition makes it non-greedy; it is not a second
    /// repetition.
    fn lazy_suffix(&mut self) {
        if self.rest().starts_with('?') {
            self.pos += 1;
            self.out.push('?');
        }
    }

    /// Applies a repetition (`*`, `+`, `?` when `counts` is `None`) to the
    /// previous item, with Go's checks.
    fn repeat(
        &mut self,
        start: usize,
        counts: Option<(u64, Option<u64>)>,
    ) -> Result<(), PatternError> {
        let expr = self.src[start..self.pos].to_string();
        let src = self.src;
        let end = self.pos;
        let f = self.frame();
        if f.after_repeat {
            return Err(err(INVALID_REPEAT_OP, &src[f.repeat_start..end]));
        }
        let Some(inner) = f.last else {
            return Err(err(MISSING_REPEAT_ARG, &expr));
        };
        let weight = match counts {
            None => inner,
            Some((min, max)) => {
                if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < min) {
                    return Err(err(INVALID_REPEAT_SIZE, &expr));
                }
                let weight = match max {
                    Some(0) => 1,
                    _ => inner.saturating_mul(max.unwrap_or(min).max(1)),
                };
                if (min >= 2 || max.is_some_and(|m| m >= 2)) && weight > MAX_REPEAT {
                    return Err(err(INVALID_REPEAT_SIZE, &expr));
                }
                weight
            }
        };
        f.weight = f.weight.max(weight);
        f.last = Some(weight);
        f.after_repeat = true;
        f.repeat_start = start;
        Ok(())
    }

    /// Parses `{n}`, `{n,}` or `{n,m}` at the cursor as Go does (no leading
    /// zeros, no `{,m}`), consuming it; `None` leaves the cursor on a literal
    /// `{`. Numbers too large to read become `u64::MAX` (rejected later).
    fn counted(&mut self) -> Option<(u64, Option<u64>)> {
        let rest = self.rest();
        let body_end = rest.find('}')?;
        let body = &rest[1..body_end];
        let int = |s: &str| -> Option<u64> {
            let ok = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && !(s.len() >= 2 && s.starts_with('0'));
            ok.then(|| s.parse().unwrap_or(u64::MAX))
        };
        let counts = match body.split_once(',') {
            None => {
                let n = int(body)?;
                (n, Some(n))
            }
            Some((min, "")) => (int(min)?, None),
            Some((min, max)) => (int(min)?, Some(int(max)?)),
        };
        self.pos += body_end + 1;
        Some(counts)
    }

    fn open_group(&mut self) -> Result<(), PatternError> {
        let rest = self.rest();
        if !rest.starts_with("(?") {
            self.pos += 1;
            return self.push_group("(");
        }
        let named = if rest.starts_with("(?P<") {
            Some(4)
        } else if rest.starts_with("(?<") {
            Some(3)
        } else {
            None
        };
        if let Some(begin) = named {
            let Some(end) = rest.find('>') else {
                return Err(err("invalid named capture", rest));
            };
            let name = &rest[begin..end];
            if name.is_empty() || !name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric()) {
                return Err(err("invalid named capture", &rest[..=end]));
            }
            let open = format!("(?P<{name}>");
            self.pos += end + 1;
            return self.push_group(&open);
        }
        // Flags, optionally opening a non-capturing group.
        let mut on = String::new();
        let mut off = String::new();
        let mut negated = false;
        let mut saw_flag = false;
        let mut len = 2;
        for c in rest[2..].chars() {
            len += c.len_utf8();
            match c {
                'i' | 'm' | 's' | 'U' => {
                    if negated { &mut off } else { &mut on }.push(c);
                    saw_flag = true;
                }
                '-' if !negated => {
                    negated = true;
                    saw_flag = false;
                }
                ':' | ')' if !negated || saw_flag => {
                    let flags = if off.is_empty() {
                        on.clone()
                    } else {
                        format!("{on}-{off}")
                    };
                    self.pos += len;
                    if c == ':' {
                        return self.push_group(&format!("(?{flags}:"));
                    }
                    // Flags alone are no item: `(?i)*` has nothing to repeat,
                    // and `a(?i)*` repeats the `a`.
                    if !flags.is_empty() {
                        self.out.push_str(&format!("(?{flags})"));
                    }
                    self.frame().after_repeat = false;
                    return Ok(());
                }
                _ => break,
            }
        }
        Err(err(
            "invalid or unsupported Perl syntax",
            &rest[..len.min(rest.len())],
        ))
    }

    fn push_group(&mut self, open: &str) -> Result<(), PatternError> {
        if self.frames.len() > MAX_NESTING {
            return Err(err("expression nests too deeply", self.src));
        }
        self.out.push_str(open);
        self.frame().after_repeat = false;
        self.frames.push(Frame::default());
        Ok(())
    }

    /// A backslash outside a class.
    fn escape(&mut self) -> Result<(), PatternError> {
        let start = self.pos;
        let Some(c) = self.rest()[1..].chars().next() else {
            return Err(err("trailing backslash at end of expression", ""));
        };
        match c {
            'A' | 'z' => {
                self.pos += 2;
                self.out.push('\\');
                self.out.push(c);
                self.item(1);
            }
            'b' | 'B' => {
                self.pos += 2;
                self.out
                    .push_str(if c == 'b' { r"(?-u:\b)" } else { r"(?-u:\B)" });
                self.item(1);
            }
            'Q' => {
                self.pos += 2;
                let rest = self.rest();
                let (lit, consumed) = match rest.find(r"\E") {
                    Some(i) => (&rest[..i], i + 2),
                    None => (rest, rest.len()),
                };
                let lit = lit.to_string();
                self.pos += consumed;
                for ch in lit.chars() {
                    push_literal(&mut self.out, ch);
                    self.item(1);
                }
            }
            'p' | 'P' => {
                let class = self.unicode_class()?;
                self.out.push_str(&class);
                self.item(1);
            }
            _ => {
                if let Some((set, negated)) = perl_class(c) {
                    self.pos += 2;
                    self.out.push_str(if negated { "[^" } else { "[" });
                    self.out.push_str(set);
                    self.out.push(']');
                } else {
                    let ch = self.single_escape(start)?;
                    push_literal(&mut self.out, ch);
                }
                self.item(1);
            }
        }
        Ok(())
    }

    /// `\pL`, `\p{Greek}`, `\p{^Greek}`, `\PL` at the cursor, in Rust syntax.
    fn unicode_class(&mut self) -> Result<String, PatternError> {
        let start = self.pos;
        let negated = self.rest().as_bytes().get(1) == Some(&b'P');
        self.pos += 2;
        let name = if self.rest().starts_with('{') {
            let Some(end) = self.rest().find('}') else {
                return Err(err(INVALID_RANGE, &self.src[start..]));
            };
            let name = self.rest()[1..end].to_string();
            self.pos += end + 1;
            name
        } else {
            match self.next_char() {
                Some(c) => c.to_string(),
                None => return Err(err(INVALID_RANGE, &self.src[start..])),
            }
        };
        let (name, flip) = match name.strip_prefix('^') {
            Some(n) => (n.to_string(), true),
            None => (name, false),
        };
        let Some(class) = go_unicode_class(&name) else {
            return Err(err(INVALID_RANGE, &self.src[start..self.pos]));
        };
        let negate = negated != flip;
        Ok(match class {
            GoClass::Rust(name) => format!(r"\{}{{{name}}}", if negate { 'P' } else { 'p' }),
            GoClass::Set(set) => format!("[{}{set}]", if negate { "^" } else { "" }),
        })
    }

    /// Go's `parseEscape`: one code point from `\n`, `\x41`, `\x{263a}`,
    /// `\012`, or an escaped ASCII punctuation character.
    fn single_escape(&mut self, start: usize) -> Result<char, PatternError> {
        self.pos += 1; // the backslash
        let bad = |t: &Self| err(INVALID_ESCAPE, &t.src[start..t.pos]);
        let Some(c) = self.next_char() else {
            return Err(err("trailing backslash at end of expression", ""));
        };
        let octal = |b: Option<&u8>| b.is_some_and(|b| (b'0'..=b'7').contains(b));
        match c {
            '1'..='7' | '0' => {
                if c != '0' && !octal(self.rest().as_bytes().first()) {
                    return Err(bad(self));
                }
                let mut r = c as u32 - '0' as u32;
                for _ in 1..3 {
                    let b = self.rest().as_bytes().first().copied();
                    if !octal(b.as_ref()) {
                        break;
                    }
                    r = r * 8 + u32::from(b.unwrap_or(b'0') - b'0');
                    self.pos += 1;
                }
                char::from_u32(r).ok_or_else(|| bad(self))
            }
            'x' => {
                if self.rest().starts_with('{') {
                    self.pos += 1;
                    let Some(end) = self.rest().find('}') else {
                        self.pos = self.src.len();
                        return Err(bad(self));
                    };
                    let digits = self.rest()[..end].to_string();
                    self.pos += end + 1;
                    if digits.is_empty() || !digits.chars().all(|d| d.is_ascii_hexdigit()) {
                        return Err(bad(self));
                    }
                    u32::from_str_radix(&digits, 16)
                        .ok()
                        .filter(|v| *v <= 0x10FFFF)
                        .and_then(char::from_u32)
                        .ok_or_else(|| bad(self))
                } else {
                    let hex: String = self.rest().chars().take(2).collect();
                    if hex.len() != 2 || !hex.chars().all(|d| d.is_ascii_hexdigit()) {
                        self.pos = (self.pos + hex.len()).min(self.src.len());
                        return Err(bad(self));
                    }
                    self.pos += 2;
                    u32::from_str_radix(&hex, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| bad(self))
                }
            }
            'a' => Ok('\x07'),
            'f' => Ok('\x0C'),
            'n' => Ok('\n'),
            'r' => Ok('\r'),
            't' => Ok('\t'),
            'v' => Ok('\x0B'),
            c if c.is_ascii() && !c.is_ascii_alphanumeric() => Ok(c),
            _ => Err(bad(self)),
        }
    }

    /// A bracketed class, written as a Rust class of literal code points,
    /// ranges, POSIX classes and the ASCII Perl classes.
    fn class(&mut self) -> Result<(), PatternError> {
        let start = self.pos;
        self.pos += 1;
        let missing = |t: &Self| err(MISSING_BRACKET, &t.src[start..]);
        self.out.push('[');
        if self.rest().starts_with('^') {
            self.pos += 1;
            self.out.push('^');
        }
        let mut first = true;
        loop {
            let rest = self.rest();
            if rest.is_empty() {
                return Err(missing(self));
            }
            if rest.starts_with(']') && !first {
                self.pos += 1;
                self.out.push(']');
                return Ok(());
            }
            first = false;
            if rest.starts_with("[:")
                && let Some(end) = rest[2..].find(":]")
            {
                let name = &rest[2..2 + end];
                let bare = name.strip_prefix('^').unwrap_or(name);
                const POSIX: [&str; 14] = [
                    "alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower",
                    "print", "punct", "space", "upper", "word", "xdigit",
                ];
                if !POSIX.contains(&bare) {
                    return Err(err(INVALID_RANGE, &rest[..end + 4]));
                }
                let text = rest[..end + 4].to_string();
                self.out.push_str(&text);
                self.pos += end + 4;
                continue;
            }
            if rest.starts_with("\\p") || rest.starts_with("\\P") {
                let class = self.unicode_class()?;
                self.out.push_str(&class);
                continue;
            }
            if let Some(c) = rest.strip_prefix('\\').and_then(|r| r.chars().next())
                && let Some((set, negated)) = perl_class(c)
            {
                self.pos += 2;
                if negated {
                    self.out.push_str("[^");
                    self.out.push_str(set);
                    self.out.push(']');
                } else {
                    self.out.push_str(set);
                }
                continue;
            }
            let range_start = self.pos;
            let lo = self.class_char(start)?;
            let mut hi = lo;
            let rest = self.rest();
            if rest.len() >= 2 && rest.starts_with('-') && !rest[1..].starts_with(']') {
                self.pos += 1;
                hi = self.class_char(start)?;
                if hi < lo {
                    return Err(err(INVALID_RANGE, &self.src[range_start..self.pos]));
                }
            }
            push_literal(&mut self.out, lo);
            if hi != lo {
                self.out.push('-');
                push_literal(&mut self.out, hi);
            }
        }
    }

    fn class_char(&mut self, class_start: usize) -> Result<char, PatternError> {
        let start = self.pos;
        match self.rest().chars().next() {
            None => Err(err(MISSING_BRACKET, &self.src[class_start..])),
            Some('\\') => self.single_escape(start),
            Some(c) => {
                self.pos += c.len_utf8();
                Ok(c)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PatternError, check_go, compile_go, translate_go};

    /// The validators built for defaults each hold their own `LazyPattern`;
    /// those of one pattern share one matcher, so its cache (the lazy DFA's
    /// states) is built once per thread, not once per validator.
    #[test]
    fn lazy_patterns_of_one_text_share_their_matcher() {
        let (a, b) = match (
            super::LazyPattern::new("^[a-z]+$"),
            super::LazyPattern::new("^[a-z]+$"),
        ) {
            (Ok(a), Ok(b)) => (a, b),
            other => panic!("{other:?}"),
        };
        assert_eq!(a.is_match("abc"), Ok(true));
        assert_eq!(b.is_match("ab1"), Ok(false));
        match (a.compiled.get(), b.compiled.get()) {
            (Some(Ok(x)), Some(Ok(y))) => assert!(std::sync::Arc::ptr_eq(x, y)),
            other => panic!("{other:?}"),
        }
    }

    fn go_matches(pattern: &str, s: &str) -> bool {
        compile_go(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(s)
    }

    fn go_rejects(pattern: &str) -> String {
        match compile_go(pattern) {
            Err(e @ PatternError::Go { .. }) => e.to_string(),
            Err(e) => panic!("{pattern}: not a Go syntax error: {e}"),
            Ok(re) => panic!("{pattern}: accepted as {re}"),
        }
    }

    #[test]
    fn checking_agrees_with_compiling() {
        for p in [
            "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
            "^\\d+(\\.\\d+)?$",
            "(a",
            "a**",
            "[z-a]",
            "\\p{Greek}+",
            "\\p{Nope}",
            "(?i)abc|def",
            "a{2,1000}",
            "a{1001}",
            "(?P<n>x)\\k<n>",
            "[[:alpha:]]+",
            "",
            "[^\\x00-\\x{10FFFF}]",
            "\\bword\\B",
            "\\p{^Greek}\\PL[\\p{Lu}\\d]",
            "(?i)\\pN",
            "[\\p{Nope}]",
            "\\\\p{Nope}",
            "\\Qa.b\\E+",
            "(?U)a+?",
        ] {
            assert_eq!(
                check_go(p).is_ok(),
                compile_go(p).is_ok(),
                "{p}: {:?} vs {:?}",
                check_go(p).err(),
                compile_go(p).err().map(|e| e.to_string())
            );
        }
    }

    #[test]
    fn perl_classes_are_ascii_only_as_in_go() {
        assert!(go_matches(r"^\d{3}$", "123"));
        assert!(!go_matches(r"^\d{3}$", "١٢٣"));
        assert!(!go_matches(r"^\w+$", "héllo"));
        assert!(go_matches(r"^\W$", "é"));
        assert!(!go_matches(r"^\s$", "\u{00A0}"));
        assert!(!go_matches(r"^\s$", "\x0B"), "Go's \\s has no \\v");
        assert!(go_matches(r"^[\d\s]+$", "1 2"));
        assert!(!go_matches(r"^[\d]+$", "١"));
        assert!(go_matches(r"^[^\d]$", "١"));
        assert!(go_matches(r"^[\D]$", "١"));
    }

    #[test]
    fn word_boundaries_are_ascii_as_in_go() {
        // In Go, é is not a word character: there is a boundary between it and l.
        assert!(go_matches(r"\bllo", "héllo"));
        assert!(!go_matches(r"\Bllo", "héllo"));
    }

    #[test]
    fn dot_matches_one_code_point_and_case_folds_like_go() {
        assert!(go_matches("^.$", "é"));
        assert!(go_matches("^...$", "日本語"));
        assert!(!go_matches("^.$", "\n"));
        assert!(go_matches("(?s)^.$", "\n"));
        assert!(go_matches("(?i)^straße$", "STRAẞE"));
        assert!(go_matches("(?i)^k$", "\u{212A}"), "KELVIN SIGN folds to k");
        assert!(
            go_matches(r"(?i)^\w$", "\u{212A}"),
            "so does \\w under (?i) in Go"
        );
        assert!(go_matches("(?i)^ÉTÉ$", "été"));
    }

    #[test]
    fn class_syntax_is_read_as_go_reads_it() {
        assert!(go_matches("^[a&&b]+$", "a&b"));
        assert!(go_matches(r"^[a\--]+$", "-a"));
        assert!(go_matches("^[a~~b]+$", "~"));
        assert!(go_matches("^[[a]+$", "[a"));
        assert!(go_matches("^[]a]+$", "]a"));
        assert!(go_matches("^[a-]+$", "-"));
        assert!(go_matches("^[[:alpha:]]+$", "abc"));
        assert!(!go_matches("^[[:alpha:]]+$", "é"));
        assert!(go_matches(r"^\pL+$", "héllo"));
        assert!(go_matches(r"^\p{Greek}+$", "αβ"));
        assert!(go_matches(r"^\p{^Greek}+$", "ab"));
        assert!(go_matches(r"^[\p{Greek}x]+$", "αx"));
        assert!(go_matches(r"^\p{Any}+$", "a日\n"));
        assert!(go_matches(
            r"^\p{Lu}\p{greek}\p{Letter}\p{Cased_Letter}$",
            "Aαxy"
        ));
        assert!(go_matches(r"^\p{Ascii}\P{Ascii}$", "aé"));
    }

    #[test]
    fn go_only_syntax_is_translated() {
        assert!(go_matches(r"^\Qa.b*\E$", "a.b*"));
        assert!(go_matches(r"^\012$", "\n"));
        assert!(go_matches(r"^a{,2}$", "a{,2}"), "{{,n}} is literal in Go");
        assert!(
            go_matches(r"^a{01}$", "a{01}"),
            "leading zeros make {{ literal"
        );
        assert!(go_matches(r"^x{$", "x{"));
        assert!(
            go_matches(r"^\<\>$", "<>"),
            "escaped punctuation is literal"
        );
        assert!(go_matches("^(?)a$", "a"));
        assert!(go_matches("^(?<n>a)(?P<m>b)$", "ab"));
        assert!(go_matches("^a*?b+?c??$", "abc"));
        assert!(go_matches(r"^\x41\x{42}$", "AB"));
    }

    #[test]
    fn syntax_go_rejects_is_rejected() {
        assert!(go_rejects("a**").contains("invalid nested repetition operator"));
        assert!(go_rejects("a{2}{3}").contains("invalid nested repetition operator"));
        assert!(go_rejects("a+*").contains("invalid nested repetition operator"));
        assert!(go_rejects("a{1001}").contains("invalid repeat count"));
        assert!(go_rejects("(a{100}){11}").contains("invalid repeat count"));
        assert!(go_rejects("((a{10}b){10}c){11}").contains("invalid repeat count"));
        assert!(go_rejects("a{3,2}").contains("invalid repeat count"));
        assert!(go_rejects(r"\Z").contains("invalid escape sequence"));
        assert!(go_rejects(r"\e").contains("invalid escape sequence"));
        assert!(go_rejects(r"\1").contains("invalid escape sequence"));
        assert!(go_rejects(r"\C").contains("invalid escape sequence"));
        assert!(go_rejects(r"\é").contains("invalid escape sequence"));
        assert!(go_rejects(r"[\b]").contains("invalid escape sequence"));
        assert!(go_rejects("(?x)a").contains("invalid or unsupported Perl syntax"));
        assert!(go_rejects("(?<=a)b").contains("invalid named capture"));
        assert!(go_rejects("(?=a)").contains("invalid or unsupported Perl syntax"));
        assert!(go_rejects("(?!a)").contains("invalid or unsupported Perl syntax"));
        assert!(go_rejects("(?-)a").contains("invalid or unsupported Perl syntax"));
        assert!(go_rejects("*a").contains("missing argument to repetition operator"));
        assert!(go_rejects("(*)").contains("missing argument to repetition operator"));
        assert!(go_rejects("a|*").contains("missing argument to repetition operator"));
        assert!(go_rejects("[a").contains("missing closing ]"));
        assert!(go_rejects("[]").contains("missing closing ]"));
        assert!(go_rejects("[z-a]").contains("invalid character class range"));
        assert!(go_rejects("[a--b]").contains("invalid character class range"));
        assert!(go_rejects("[[:foo:]]").contains("invalid character class range"));
        assert!(go_rejects("(a").contains("missing closing )"));
        assert!(go_rejects("a)").contains("unexpected )"));
        assert!(go_rejects(r"a\").contains("trailing backslash"));
        assert!(go_rejects("(?P<a-b>x)").contains("invalid named capture"));
        assert!(go_rejects(r"\p{Latn}").contains("invalid character class range"));
        assert!(go_rejects(r"\p{Old_Italic}").contains("invalid character class range"));
    }

    #[test]
    fn nested_counts_within_the_limit_compile() {
        assert!(compile_go("(a{10}){100}").is_ok());
        assert!(
            compile_go("((a{10}b)c{10}){11}").is_ok(),
            "each chain is 110"
        );
        assert!(compile_go("(a{2,}){500}").is_ok());
        assert!(compile_go("(a{1000}){0}").is_ok());
        assert!(compile_go("(a*){1000}").is_ok());
        assert!(compile_go(r"\pL{1000}").is_ok());
    }

    #[test]
    fn translation_spells_out_ascii_classes() {
        assert_eq!(translate_go(r"^\d$").ok().as_deref(), Some("^[0-9]$"));
        assert_eq!(
            translate_go(r"[\w-]").ok().as_deref(),
            Some(r"[0-9A-Za-z_\x{2D}]")
        );
    }

    /// A Go double-quoted string literal (`strconv.Unquote`), as bytes: Go's
    /// `\x` escapes may spell bytes that are not UTF-8.
    fn go_unquote(line: &str) -> Option<Vec<u8>> {
        let inner = line.strip_prefix('"')?.strip_suffix('"')?;
        let mut out = Vec::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            fn hex(chars: &mut std::str::Chars<'_>, n: usize) -> Option<u32> {
                let digits: String = chars.by_ref().take(n).collect();
                u32::from_str_radix(&digits, 16).ok()
            }
            match chars.next()? {
                'a' => out.push(7),
                'b' => out.push(8),
                'f' => out.push(12),
                'n' => out.push(b'\n'),
                'r' => out.push(b'\r'),
                't' => out.push(b'\t'),
                'v' => out.push(11),
                '\\' => out.push(b'\\'),
                '"' => out.push(b'"'),
                '\'' => out.push(b'\''),
                'x' => out.push(u8::try_from(hex(&mut chars, 2)?).ok()?),
                e @ ('u' | 'U') => {
                    let c = char::from_u32(hex(&mut chars, if e == 'u' { 4 } else { 8 })?)?;
                    let mut buf = [0; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                d @ '0'..='7' => {
                    let rest: String = chars.by_ref().take(2).collect();
                    out.push(u8::from_str_radix(&format!("{d}{rest}"), 8).ok()?);
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// Go's own regular-expression test data, which ships with every Go
    /// installation (`$GOROOT/src/regexp/testdata/re2-search.txt`, what
    /// `regexp`'s `TestRE2Search` runs): every pattern compiles with
    /// `compile_go` as with Go's `regexp`, and on every string the leftmost
    /// match is Go's, which is what a schema `pattern` and CEL `matches()`
    /// decide with. Cases Go's own test skips are skipped (`\C`; `\B` on
    /// text that is not single bytes), and so are inputs that are not UTF-8
    /// (a Kubernetes string always is). Without Go it prints a notice,
    /// except with `CI=true`, where Go is required.
    #[test]
    fn agrees_with_gos_own_re2_test_data() {
        let in_ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let goroot = std::process::Command::new("go")
            .args(["env", "GOROOT"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        let Some(goroot) = goroot else {
            assert!(!in_ci, "go is required when CI=true");
            eprintln!("notice: no go on PATH; Go's regexp test data not compared");
            return;
        };
        let path = std::path::Path::new(&goroot).join("src/regexp/testdata/re2-search.txt");
        let text = std::fs::read_to_string(&path).expect("Go's re2-search.txt is readable");
        let (mut strings, mut in_strings) = (Vec::<Option<String>>::new(), false);
        let mut pending: std::collections::VecDeque<Option<String>> = Default::default();
        let mut current: Option<(String, regex::Regex)> = None;
        let (mut compared, mut failures) = (0usize, Vec::new());
        for (n, line) in text.lines().enumerate() {
            let first = line.as_bytes().first().copied().unwrap_or(b'#');
            match first {
                b'#' => {}
                b'A'..=b'Z' => {}
                _ if line == "strings" => {
                    strings.clear();
                    in_strings = true;
                }
                _ if line == "regexps" => in_strings = false,
                b'"' => {
                    let bytes = go_unquote(line).expect("a Go string literal");
                    let text = String::from_utf8(bytes).ok();
                    if in_strings {
                        strings.push(text);
                        continue;
                    }
                    assert!(pending.is_empty(), "line {}: out of sync", n + 1);
                    pending = strings.iter().cloned().collect();
                    let Some(pattern) = text else {
                        current = None;
                        continue;
                    };
                    current = match compile_go(&pattern) {
                        Ok(re) => Some((pattern, re)),
                        Err(_) if pattern.contains(r"\C") => None,
                        Err(e) => {
                            failures.push(format!("line {}: `{pattern}` refused: {e}", n + 1));
                            None
                        }
                    };
                }
                _ => {
                    let input = pending.pop_front().expect("a string for each result");
                    let (Some((pattern, re)), Some(input)) = (&current, input) else {
                        continue;
                    };
                    if !input.is_ascii() && pattern.contains(r"\B") {
                        continue;
                    }
                    // full;partial;longest full;longest partial: Go's
                    // `MatchString` is the partial, leftmost-first one.
                    let partial = line.split(';').nth(1).expect("four results");
                    let want = partial
                        .split(' ')
                        .next()
                        .filter(|s| *s != "-")
                        .and_then(|span| span.split_once('-'))
                        .map(|(a, b)| (a.parse::<usize>(), b.parse::<usize>()));
                    let want = want.map(|(a, b)| (a.expect("start"), b.expect("end")));
                    let have = re.find(&input).map(|m| (m.start(), m.end()));
                    compared += 1;
                    if have != want {
                        failures.push(format!(
                            "line {}: `{pattern}` on {input:?}: {have:?}, Go: {want:?}",
                            n + 1
                        ));
                    }
                }
            }
        }
        assert!(
            failures.is_empty(),
            "{} of {compared} differ from Go:\n{}",
            failures.len(),
            failures[..failures.len().min(20)].join("\n")
        );
        // re2-search.txt holds about 1,800 such cases (Go 1.2x).
        assert!(compared > 1500, "only {compared} cases compared");
    }
}
