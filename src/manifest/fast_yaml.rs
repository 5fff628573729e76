//! The event reader: manifests as kubectl reads them, straight from
//! granit-parser's events.
//!
//! serde-saphyr's deserializer reads far slower than the event parser it is
//! built on (figures: docs/BENCHMARKS.md, "YAML parsers"), and YAML is most
//! of a `diff`'s time; it also reads YAML otherwise than kubectl (the key `y` is
//! the key `true` for kubectl, whose reader is sigs.k8s.io/yaml over go-yaml
//! v2). This module builds the `serde_json::Value` as kubectl would: keys
//! and scalars typed by [`super::yaml11`], anchors and aliases, go-yaml v2's
//! merge keys, a repeated key's last value, `!!str`. It stops for a syntax
//! error, any other tag, or a document past serde-saphyr's budget
//! ([`Stop::Elsewhere`]: serde-saphyr then reads it, or says why it
//! cannot), and for what kubectl refuses (a null or collection key, `.inf`:
//! [`Stop::Refused`]). `tests/offline/yaml_reading.rs` holds it to
//! sigs.k8s.io/yaml itself; the tests below and the corpus test hold it to
//! serde-saphyr where the two readings agree.
//!
//! This is the one event-driven reader; serde-saphyr reads what it cannot.
//! Without it (and [`super::block_yaml`], which falls back to it), `diff`
//! and `lint` take about twice the time or more, and more peak memory
//! (figures: docs/BENCHMARKS.md, "What each speed trick buys").

use std::borrow::Cow;

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Value};

use super::positions::Tree;
use super::yaml11::{self, Note, Refusal};

/// serde-saphyr's default budget: past it, it refuses the document, so the
/// fast path must not accept it either.
const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 250_000;

/// An open collection. A mapping gathers its entries in a vector and
/// becomes a map, at its exact size, when it closes: a map grown entry by
/// entry keeps up to half its room empty, and the parsed manifests are most
/// of a `diff`'s peak memory.
enum Frame {
    Seq(Vec<Value>, usize),
    /// Entries, the key whose value comes next, and the anchor.
    Map(Vec<(String, Value)>, Option<Key>, usize),
}

/// A mapping key read, or go-yaml's merge key `<<`.
enum Key {
    Name(String),
    Merge,
}

/// The value of a one-document text, or `None` when serde-saphyr must read it.
#[cfg(test)]
pub(super) fn parse(text: &str, resolve: &dyn Fn(&str) -> Option<Value>) -> Option<Value> {
    parse_recording(text, resolve, None)
}

/// [`parse`], also recording where each node starts into `tree` when given
/// (what `positions` would otherwise parse the text again for).
#[cfg(test)]
pub(super) fn parse_recording(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Value>,
    tree: Option<&mut Tree>,
) -> Option<Value> {
    read(text, resolve, tree, &mut Vec::new())
        .ok()
        .map(|r| r.value)
}

/// What [`read`] made of a document.
pub(super) struct Read {
    pub value: Value,
    /// The recorded positions hold: no alias, merge or repeated key put a
    /// node where the text does not have it.
    pub tree_holds: bool,
}

/// Why [`read`] did not give a value.
pub(super) enum Stop {
    /// Not read here (a syntax error, a tag, past the budget): serde-saphyr
    /// reads it, or says why it cannot.
    Elsewhere,
    /// kubectl refuses the document: at this 1-based line, for this reason.
    Refused(usize, String),
}

/// The document as kubectl reads it: anchors, aliases and merge keys
/// resolved as go-yaml v2 does (a merge overwrites the keys before it, and
/// of merged maps the first wins), a repeated key's last value kept, plain
/// scalars typed by [`yaml11`], each place that reads otherwise in YAML 1.2
/// added to `notes`.
pub(super) fn read(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Value>,
    mut tree: Option<&mut Tree>,
    notes: &mut Vec<Note>,
) -> Result<Read, Stop> {
    let none = |_| Stop::Elsewhere;
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut tree_holds = true;
    let mut stack: Vec<Frame> = Vec::new();
    // The tree indexes of the open collections, and where the mapping key
    // whose value comes next starts.
    let mut open: Vec<usize> = Vec::new();
    let mut key_at = (0, 0);
    let mut root: Option<Value> = None;
    let mut documents = 0;
    let mut nodes = 0usize;
    // Comments carry no data; not collecting them saves a sixth of the parse.
    let options = granit_parser::options! { emit_comments: false };
    for event in Parser::new_from_str_with_options(text, options) {
        let (event, span) = event.map_err(none)?;
        let at = (span.start.line(), span.start.col() + 1);
        if matches!(event, Event::SequenceEnd | Event::MappingEnd)
            && let (Some(t), Some(i)) = (tree.as_deref_mut(), open.pop())
        {
            t.close(i);
        }
        let value = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(Stop::Elsewhere);
                }
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                // `!!str` keeps the text; go-yaml's other tags are left to
                // serde-saphyr.
                let style = match tag {
                    None => style,
                    Some(t) if t.is_yaml_core_schema_tag("str") => ScalarStyle::SingleQuoted,
                    Some(_) => return Err(Stop::Elsewhere),
                };
                nodes += 1;
                if let Some(Frame::Map(_, pending @ None, _)) = stack.last_mut() {
                    // A mapping key: no anchor on it is ever used as a value.
                    *pending = Some(if style == ScalarStyle::Plain && text == "<<" {
                        tree_holds = false;
                        Key::Merge
                    } else {
                        let (name, differs) = key(text.clone(), style)
                            .map_err(|r| Stop::Refused(at.0, r.message(&text)))?;
                        if differs {
                            notes.push(Note::new(at, &text, &name, true));
                        }
                        Key::Name(name)
                    });
                    key_at = at;
                    continue;
                }
                if let Some(t) = tree.as_deref_mut() {
                    record(t, &stack, key_at, at, false);
                }
                let written = (style == ScalarStyle::Plain).then(|| text.clone());
                let (value, differs) = scalar(text, style, resolve).ok_or_else(|| {
                    let written = written.as_deref().unwrap_or_default();
                    match yaml11::value(written) {
                        Err(r) => Stop::Refused(at.0, r.message(written)),
                        Ok(_) => Stop::Elsewhere,
                    }
                })?;
                if differs && let Some(written) = &written {
                    notes.push(Note::new(at, written, &value.to_string(), false));
                }
                if anchor != 0 {
                    anchors.insert(anchor, value.clone());
                }
                value
            }
            Event::SequenceStart(_, anchor, ref tag) | Event::MappingStart(_, anchor, ref tag) => {
                if tag.is_some() || stack.len() >= MAX_DEPTH {
                    return Err(Stop::Elsewhere);
                }
                // go-yaml refuses a collection as a key.
                if let Some(Frame::Map(_, None, _)) = stack.last() {
                    let kind = if matches!(event, Event::MappingStart(..)) {
                        "a mapping"
                    } else {
                        "a list"
                    };
                    return Err(Stop::Refused(
                        at.0,
                        format!("kubectl refuses {kind} as a mapping key"),
                    ));
                }
                nodes += 1;
                if let Some(t) = tree.as_deref_mut() {
                    let map = matches!(event, Event::MappingStart(..));
                    open.push(record(t, &stack, key_at, at, map));
                }
                stack.push(if matches!(event, Event::SequenceStart(..)) {
                    Frame::Seq(Vec::new(), anchor)
                } else {
                    Frame::Map(Vec::new(), None, anchor)
                });
                continue;
            }
            Event::SequenceEnd => match stack.pop().ok_or(Stop::Elsewhere)? {
                Frame::Seq(mut items, anchor) => {
                    items.shrink_to_fit();
                    anchored(&mut anchors, anchor, Value::Array(items))
                }
                Frame::Map(..) => return Err(Stop::Elsewhere),
            },
            Event::MappingEnd => match stack.pop().ok_or(Stop::Elsewhere)? {
                Frame::Map(entries, None, anchor) => {
                    let len = entries.len();
                    let mut map = Map::with_capacity(len);
                    // A repeated key keeps its last value, as in go-yaml.
                    map.extend(entries);
                    if map.len() != len {
                        tree_holds = false;
                    }
                    anchored(&mut anchors, anchor, Value::Object(map))
                }
                _ => return Err(Stop::Elsewhere),
            },
            Event::Alias(id) => {
                tree_holds = false;
                let value = anchors.get(&id).cloned().ok_or(Stop::Elsewhere)?;
                // Aliases may multiply a document: the budget counts every
                // node they copy.
                nodes += weight(&value);
                if let Some(Frame::Map(_, pending @ None, _)) = stack.last_mut() {
                    let Value::String(name) = value else {
                        return Err(Stop::Elsewhere);
                    };
                    *pending = Some(Key::Name(name));
                    key_at = at;
                    continue;
                }
                value
            }
            Event::Anchor(..) | Event::UnresolvedAlias(_) => return Err(Stop::Elsewhere),
            // Comments, when the parser reports them, carry no data.
            #[allow(unreachable_patterns)]
            _ => continue,
        };
        if nodes > MAX_NODES {
            return Err(Stop::Elsewhere);
        }
        match stack.last_mut() {
            None => {
                if root.is_some() {
                    return Err(Stop::Elsewhere);
                }
                root = Some(value);
            }
            Some(Frame::Seq(items, _)) => items.push(value),
            Some(Frame::Map(entries, pending, _)) => match pending.take() {
                Some(Key::Name(key)) => entries.push((key, value)),
                Some(Key::Merge) => merge(entries, value).map_err(|()| {
                    Stop::Refused(
                        at.0,
                        "a merge key (`<<`) takes a mapping or a list of mappings".into(),
                    )
                })?,
                None => return Err(Stop::Elsewhere),
            },
        }
    }
    if !stack.is_empty() {
        return Err(Stop::Elsewhere);
    }
    Ok(Read {
        value: root.unwrap_or(Value::Null),
        tree_holds,
    })
}

/// `value`, kept for the aliases of `anchor` when it has one.
fn anchored(anchors: &mut HashMap<usize, Value>, anchor: usize, value: Value) -> Value {
    if anchor != 0 {
        anchors.insert(anchor, value.clone());
    }
    value
}

/// How many nodes a value holds.
fn weight(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(weight).sum::<usize>(),
        Value::Object(m) => 1 + m.values().map(weight).sum::<usize>(),
        _ => 1,
    }
}

/// go-yaml v2's merge: the merged entries are set where the `<<` is, so
/// they overwrite the keys before it and the keys after it overwrite them;
/// of a list of mappings, the first wins.
fn merge(entries: &mut Vec<(String, Value)>, value: Value) -> Result<(), ()> {
    match value {
        Value::Object(m) => entries.extend(m),
        Value::Array(items) => {
            for item in items.into_iter().rev() {
                let Value::Object(m) = item else {
                    return Err(());
                };
                entries.extend(m);
            }
        }
        _ => return Err(()),
    }
    Ok(())
}

/// Records a value node: a mapping's value at its key (`pending`, known
/// from the open frame), anything else where it starts.
fn record(
    tree: &mut Tree,
    stack: &[Frame],
    key_at: (usize, usize),
    at: (usize, usize),
    map: bool,
) -> usize {
    match stack.last() {
        Some(Frame::Map(_, Some(Key::Name(key)), _)) => {
            tree.open(Some(key), key_at.0, key_at.1, map)
        }
        _ => tree.open(None, at.0, at.1, map),
    }
}

/// A mapping key as kubectl reads it, and whether that differs from the
/// text (`y` is the key `true`). A plain key that may not be a string
/// (it starts like a number, or is a word of [`yaml11`]) is resolved there;
/// the merge key `<<` is the caller's.
pub(super) fn key(text: Cow<'_, str>, style: ScalarStyle) -> Result<(String, bool), Refusal> {
    if style != ScalarStyle::Plain || !may_be_typed(&text) {
        return Ok((text.into_owned(), false));
    }
    let read = yaml11::key(&text)?;
    if read == text {
        return Ok((text.into_owned(), false));
    }
    Ok((read.into_owned(), true))
}

/// Whether a plain scalar may read as anything but its text: it starts
/// like a number (digit, sign, dot), is a null, or one of the YAML 1.1
/// words (all at most five letters).
fn may_be_typed(text: &str) -> bool {
    let Some(&first) = text.as_bytes().first() else {
        return true;
    };
    (matches!(first, b'0'..=b'9' | b'+' | b'-' | b'.' | b'~')
        || (text.len() <= 5 && (is_yaml11_bool(text) || is_nullish(text))))
        && !text.contains('\n')
}

fn is_nullish(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// A value scalar. Quoted and block scalars are strings. A plain scalar is
/// a string when it cannot be anything else: it does not start like a
/// number (digit, sign, dot) and is not a YAML 1.1 boolean or a null.
/// Small decimal integers are read here; every other plain scalar that may
/// be typed is resolved by `resolve` (serde-saphyr on the scalar alone).
///
/// The second value says whether kubectl's reading differs from YAML 1.2's
/// (`yes`, `0755`).
pub(super) fn scalar(
    text: Cow<'_, str>,
    style: ScalarStyle,
    resolve: &dyn Fn(&str) -> Option<Value>,
) -> Option<(Value, bool)> {
    if style != ScalarStyle::Plain {
        // A scalar the scanner had to rewrite (escapes, folding) is
        // already owned: moved, not copied.
        return Some((Value::String(text.into_owned()), false));
    }
    if is_nullish(&text) {
        return Some((Value::Null, false));
    }
    // A plain scalar folded over several lines keeps a line break only
    // where a blank line was; no number, boolean or null has one, and
    // reading it again on its own would fold that break away.
    if !may_be_typed(&text) {
        return Some((Value::String(text.into_owned()), false));
    }
    if let Some(n) = small_integer(&text) {
        return Some((n, false));
    }
    let value = resolve(&text)?;
    let differs = yaml11::value_differs(&text, &value);
    Some((value, differs))
}

fn is_yaml11_bool(t: &str) -> bool {
    ["y", "yes", "true", "on", "n", "no", "false", "off"]
        .iter()
        .any(|b| t.eq_ignore_ascii_case(b))
}

/// `0`, `42`, `-7`: no sign on zero, no leading zero, no `+`, no `_`.
fn small_integer(t: &str) -> Option<Value> {
    let (negative, digits) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t),
    };
    if digits.is_empty()
        || digits.len() > 18
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
        || (negative && digits == "0")
    {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    Some(if negative {
        Value::from(-n)
    } else {
        Value::from(n as u64)
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// The slow path, with the loader's options.
    fn saphyr(text: &str) -> Option<Value> {
        serde_saphyr::from_str_with_options::<Value>(text, crate::manifest::split::options()).ok()
    }

    #[test]
    fn same_values_as_serde_saphyr() {
        let texts = [
            "a: 1\nb: -2\nc: 0\nd: 0755\ne: 1.5\nf: .inf\ng: -.5\nh: 1e3\ni: 0x1F\nj: 1_000\n",
            "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: true\ng: nope\nh: ~\ni: null\nj:\nk: Null\n",
            "a: '1'\nb: \"true\"\nc: |\n  text\n  more\nd: >\n  folded\n  line\ne: 'null'\n",
            "list: [1, two, 3.0, {x: y}, [a]]\nmap: {a: 1, 'b': c}\nempty: {}\nnone: []\n",
            "- a\n- 1\n- - nested\n  - -1\n- k: v\n",
            "- 1.5\n\n  'q'\n- 12\n  3\n",
            "key with spaces: value with: colon\n'quoted key': 2\n\"1\": one\ntrue: t\n1: x\n",
            "description: A plain\n  multi-line scalar\n  folded\npattern: ^[a-z]+$\n",
            "big: 123456789012345678901234567890\nneg: -9223372036854775808\nplus: +5\n",
            "x: -\ny: --1\nz: -.inf\nw: .nan\nv: +.inf\nu: 1.\nt: .1\ns: 1e\n",
            "",
            "# only a comment\n",
            "just a scalar\n",
        ];
        for text in texts {
            let fast = parse(text, &saphyr);
            assert_eq!(fast, saphyr(text), "fast path differs on {text:?}");
        }
    }

    /// Anchors, aliases, merge keys, repeated keys and `!!str` read as
    /// go-yaml v2 reads them (`tests/offline/yaml_reading.rs` holds these
    /// to the real reader).
    #[test]
    fn what_go_yaml_resolves_is_read_here() {
        let kubectl = |t: &str| crate::manifest::yaml11::value(t).ok();
        let cases = [
            ("a: &x 1\nb: *x\n", serde_json::json!({"a": 1, "b": 1})),
            (
                "base: &b {x: 1, w: 1}\nderived:\n  w: 3\n  <<: *b\n  z: 2\n",
                serde_json::json!({"base": {"x": 1, "w": 1}, "derived": {"x": 1, "w": 1, "z": 2}}),
            ),
            (
                "m:\n  <<: [{p: 1}, {p: 2, s: 5}]\n",
                serde_json::json!({"m": {"p": 1, "s": 5}}),
            ),
            ("a: !!str 1\n", serde_json::json!({"a": "1"})),
            ("a: 1\na: 2\n", serde_json::json!({"a": 2})),
            ("y: 1\n'n': 2\n", serde_json::json!({"true": 1, "n": 2})),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text, &kubectl), Some(want), "{text:?}");
        }
    }

    #[test]
    fn what_kubectl_refuses_or_serde_saphyr_must_read_is_not_read_here() {
        let kubectl = |t: &str| crate::manifest::yaml11::value(t).ok();
        for (text, refused) in [
            ("? [a, b]\n: c\n", true),
            ("~: x\n", true),
            ("a: .inf\n", true),
            ("a: !!int 1\n", false),
            ("a: [1, 2\n", false),
            ("a: b\n  c: d\n", false),
        ] {
            let stop = read(text, &kubectl, None, &mut Vec::new());
            assert!(
                matches!(stop, Err(Stop::Refused(..))) == refused && stop.is_err(),
                "{text:?}"
            );
        }
    }

    /// The YAML files of the shared corpus (none, outside CI, when it is
    /// missing).
    pub(in crate::manifest) fn corpus_files() -> Vec<std::path::PathBuf> {
        let Some(dir) = crate::manifest::test_corpus() else {
            return Vec::new();
        };
        let mut files = Vec::new();
        let mut dirs = vec![dir];
        while let Some(d) = dirs.pop() {
            for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                    files.push(path);
                }
            }
        }
        files.sort();
        files
    }

    /// Every document of the shared corpus reads to the same value both ways,
    /// and the fast path takes nearly all of them (else it saves nothing).
    #[test]
    fn the_corpus_reads_the_same_both_ways() {
        let files = corpus_files();
        if files.is_empty() {
            return;
        }
        let (mut fast, mut total) = (0usize, 0usize);
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for piece in crate::manifest::split::pieces(&std::sync::Arc::new(text.clone())) {
                total += 1;
                if let Some(value) = parse(&piece.text, &saphyr) {
                    fast += 1;
                    assert_eq!(
                        Some(value),
                        saphyr(&piece.text),
                        "{} line {}: the fast path reads another value",
                        file.display(),
                        piece.start_line
                    );
                }
            }
        }
        eprintln!("fast path: {fast} of {total} corpus documents");
        assert!(total > 1000, "only {total} corpus documents found");
        assert!(
            fast * 100 >= total * 95,
            "the fast path took {fast} of {total} documents"
        );
    }

    /// Every path of a value: mapping keys and item indexes from the root.
    fn paths(v: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        out.push(at.clone());
        let children: Vec<(String, &Value)> = match v {
            Value::Object(m) => m.iter().map(|(k, c)| (k.clone(), c)).collect(),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .map(|(i, c)| (i.to_string(), c))
                .collect(),
            _ => Vec::new(),
        };
        for (seg, c) in children {
            at.push(seg);
            paths(c, at, out);
            at.pop();
        }
    }

    /// Positions recorded during the parse are the ones the second pass
    /// finds, for every node of every fast-path document of the corpus (one
    /// file in five, to keep the test short), and paths that are not there
    /// are not found.
    #[test]
    fn recorded_positions_match_the_second_pass() {
        use super::super::positions::DocumentText;
        let mut checked = 0usize;
        for file in corpus_files().iter().step_by(5) {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for piece in crate::manifest::split::pieces(&std::sync::Arc::new(text.clone())) {
                let mut tree = Tree::default();
                let Some(value) = parse_recording(&piece.text, &saphyr, Some(&mut tree)) else {
                    continue;
                };
                let recorded = DocumentText::new(piece.text.clone(), 3).with_tree(tree);
                let reparsed = DocumentText::new(piece.text.clone(), 3);
                let mut all = Vec::new();
                paths(&value, &mut Vec::new(), &mut all);
                for p in &all {
                    let p: Vec<&str> = p.iter().map(String::as_str).collect();
                    assert_eq!(
                        recorded.find(&p),
                        reparsed.find(&p),
                        "{} line {}: {p:?}",
                        file.display(),
                        piece.start_line
                    );
                    checked += 1;
                }
                for missing in [&["nope"][..], &["spec", "versions", "01"], &["spec", "-1"]] {
                    assert_eq!(recorded.find(missing), reparsed.find(missing));
                }
            }
        }
        eprintln!("{checked} positions compared");
        assert!(
            checked > 100_000 || corpus_files().is_empty(),
            "only {checked}"
        );
    }

    #[test]
    fn the_depth_budget_is_serde_saphyrs() {
        let deep = format!(
            "{}1{}",
            "[".repeat(MAX_DEPTH + 1),
            "]".repeat(MAX_DEPTH + 1)
        );
        assert_eq!(parse(&deep, &saphyr), None);
        let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(parse(&ok, &saphyr).is_some());
    }
}
