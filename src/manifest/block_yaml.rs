//! The fastest path: a line scanner for the block YAML that CRD generators
//! write, building the value (and the positions) without a token stream.
//!
//! Even through [`super::fast_yaml`], the general YAML scanner was half of
//! a `diff` (`cargo bench --bench yaml`). controller-gen and its peers write
//! a narrow part of YAML: block mappings (plain keys, or quoted keys on one
//! line), block sequences (compact `- key: v` items included), plain scalars
//! folded over several lines, single- and double-quoted scalars on one line
//! or several, literal block scalars (`|`, `|-`, `|+`), `[]`, `{}`, one-line
//! flow lists of scalars, and whole-line comments. That part is read here
//! line by line. Anything else (a tab in an indent, an inline comment, a
//! nested flow collection, a folded `>` scalar, an anchor, a tag, an empty
//! value, an escape CRDs do not use, a control character...) answers `None`,
//! and the document goes to [`super::fast_yaml`] unchanged. Keys and
//! scalars are typed by the same functions as the fast path (kubectl's
//! reading, [`super::yaml11`]). The tests below hold it to the fast path's
//! values and positions on the whole corpus and on generated documents.
//!
//! Why it stays: with every document sent to [`super::fast_yaml`] instead,
//! `diff` of large pairs and directories and `lint` of the corpus are
//! slower (figures: docs/BENCHMARKS.md, "What each speed trick buys").

use serde_json::{Map, Value};

use super::fast_yaml::{key, scalar};
use super::positions::Tree;
use super::yaml11::Note;
use granit_parser::ScalarStyle;

/// The same budget as the fast path (serde-saphyr's).
const MAX_DEPTH: usize = 64;
const MAX_NODES: usize = 250_000;

/// The value of a one-document text, or `None` when another reader must
/// read it. Records positions into `tree` when given.
#[cfg(test)]
pub(super) fn parse(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Value>,
    tree: Option<&mut Tree>,
) -> Option<Value> {
    read(text, resolve, tree, &mut Vec::new()).0
}

/// [`parse`], adding to `notes` each plain scalar kubectl reads otherwise
/// than YAML 1.2 (left as they were when it answers `None`).
pub(super) fn parse_noting(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Value>,
    tree: Option<&mut Tree>,
    notes: &mut Vec<Note>,
) -> Option<Value> {
    let mut found = Vec::new();
    let value = read(text, resolve, tree, &mut found).0?;
    notes.extend(found);
    Some(value)
}

/// [`parse`], and the line the reader stopped at (where it gave up, when
/// it did: what the coverage test shows).
fn read(
    text: &str,
    resolve: &dyn Fn(&str) -> Option<Value>,
    tree: Option<&mut Tree>,
    notes: &mut Vec<Note>,
) -> (Option<Value>, usize) {
    let mut r = Reader {
        s: text.as_bytes(),
        text,
        pos: 0,
        line: 1,
        inline: None,
        tree,
        resolve,
        nodes: 0,
        depth: 0,
        notes,
    };
    if suspicious(text.as_bytes()) {
        return (None, 0);
    }
    let value = r.document();
    (value, r.line)
}

/// A line with content: where its content starts.
#[derive(Clone, Copy)]
struct Line {
    indent: usize,
    /// Byte offset of the first non-space character.
    at: usize,
    /// 1-based line number in the document.
    line: usize,
}

struct Reader<'t, 'r> {
    s: &'t [u8],
    text: &'t str,
    /// Start of the next line not yet read.
    pos: usize,
    /// Its line number.
    line: usize,
    /// A mapping that starts inside a sequence item's line (`- key: v`):
    /// read as if it were a line of its own, indented to the key.
    inline: Option<Line>,
    tree: Option<&'r mut Tree>,
    resolve: &'r dyn Fn(&str) -> Option<Value>,
    nodes: usize,
    depth: usize,
    notes: &'r mut Vec<Note>,
}

fn is_space_only(b: &[u8]) -> bool {
    b.iter().all(|&c| c == b' ')
}

impl Reader<'_, '_> {
    fn document(&mut self) -> Option<Value> {
        let first = self.peek()?;
        if first.indent != 0 || self.is_item(first.at) {
            return None;
        }
        let at = self.open(None, first.line, first.indent + 1, true);
        let value = self.mapping(0)?;
        self.close(at);
        // Nothing may follow the root mapping, and a failure deep inside
        // ends every read early, so it must not pass for a short document.
        if self.peek().is_some() || self.failed() {
            return None;
        }
        Some(value)
    }

    fn line_end(&self, from: usize) -> usize {
        memchr(b'\n', &self.s[from..]).map_or(self.s.len(), |i| from + i)
    }

    /// The next line with content, skipping blank and comment lines; `None`
    /// at the end. Does not consume it. A tab in an indent is not read here.
    fn peek(&mut self) -> Option<Line> {
        if let Some(l) = self.inline {
            return Some(l);
        }
        loop {
            if self.pos >= self.s.len() {
                return None;
            }
            let end = self.line_end(self.pos);
            let line = &self.s[self.pos..end];
            let indent = line.iter().take_while(|&&c| c == b' ').count();
            match line.get(indent) {
                None | Some(b'#') => {
                    self.next_line(end);
                }
                Some(b'\t') => {
                    // Only where nothing follows can a tab be skipped
                    // safely; anything else is left to the full parser.
                    if line[indent..].iter().all(|&c| c == b'\t' || c == b' ') {
                        self.next_line(end);
                    } else {
                        self.fail();
                        return None;
                    }
                }
                Some(_) => {
                    return Some(Line {
                        indent,
                        at: self.pos + indent,
                        line: self.line,
                    });
                }
            }
        }
    }

    fn next_line(&mut self, end: usize) {
        self.pos = (end + 1).min(self.s.len());
        self.line += 1;
    }

    /// Marks the document as not ours: every later read ends.
    fn fail(&mut self) {
        self.pos = self.s.len();
        self.inline = None;
        self.nodes = usize::MAX;
    }

    fn failed(&self) -> bool {
        self.nodes == usize::MAX
    }

    fn count(&mut self) -> Option<()> {
        if self.failed() {
            return None;
        }
        self.nodes += 1;
        (self.nodes <= MAX_NODES).then_some(())
    }

    fn open(&mut self, key: Option<&str>, line: usize, col: usize, map: bool) -> usize {
        self.tree
            .as_deref_mut()
            .map_or(0, |t| t.open(key, line, col, map))
    }

    fn close(&mut self, at: usize) {
        if let Some(t) = self.tree.as_deref_mut() {
            t.close(at);
        }
    }

    /// A `-` item indicator at `at`.
    fn is_item(&self, at: usize) -> bool {
        self.s[at] == b'-' && matches!(self.s.get(at + 1), None | Some(b' ' | b'\n'))
    }

    /// The block mapping whose keys are at `indent`.
    fn mapping(&mut self, indent: usize) -> Option<Value> {
        self.enter()?;
        let mut entries: Vec<(String, Value)> = Vec::new();
        while let Some(l) = self.peek() {
            if l.indent < indent {
                break;
            }
            if l.indent > indent || self.is_item(l.at) {
                return None;
            }
            self.inline = None;
            let end = self.line_end(l.at);
            let (name, colon) = if matches!(self.s[l.at], b'"' | b'\'') {
                quoted_key(&self.text[l.at..end]).map(|(k, c)| (k, c + l.at))?
            } else {
                let colon = key_end(&self.s[l.at..end])? + l.at;
                let name = &self.text[l.at..colon];
                // The merge key is the fast path's.
                if name == "<<" {
                    return None;
                }
                let (read, differs) =
                    key(std::borrow::Cow::Borrowed(name), ScalarStyle::Plain).ok()?;
                if differs {
                    let note = Note::new((l.line, l.indent + 1), name, &read, true);
                    self.notes.push(note);
                }
                (read, colon)
            };
            self.count()?;
            let value = self.value(indent, colon + 1, end, Some(&name), l)?;
            entries.push((name, value));
        }
        self.depth -= 1;
        let len = entries.len();
        let mut map = Map::with_capacity(len);
        map.extend(entries);
        // A repeated key: the fast path reads it as go-yaml does.
        (map.len() == len).then_some(Value::Object(map))
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth < MAX_DEPTH && !self.failed()).then_some(())
    }

    /// The block sequence whose `-` are at `indent`.
    fn sequence(&mut self, indent: usize) -> Option<Value> {
        self.enter()?;
        let mut items = Vec::new();
        while let Some(l) = self.peek() {
            if l.indent < indent || (l.indent == indent && !self.is_item(l.at)) {
                break;
            }
            if l.indent > indent || self.inline.is_some() {
                return None;
            }
            let end = self.line_end(l.at);
            let mut at = l.at + 1;
            while at < end && self.s[at] == b' ' {
                at += 1;
            }
            self.count()?;
            if at < end
                && !matches!(self.s[at], b'"' | b'\'')
                && key_end(&self.s[at..end]).is_some()
            {
                // `- key: v`: a mapping indented to its first key.
                let item = Line {
                    indent: at - self.pos,
                    at,
                    line: self.line,
                };
                self.inline = Some(item);
                let node = self.open(None, item.line, item.indent + 1, true);
                let v = self.mapping(item.indent)?;
                self.close(node);
                items.push(v);
            } else {
                // The item's own start, where a scalar item is recorded.
                let start = Line {
                    indent: at - self.pos,
                    at,
                    line: self.line,
                };
                items.push(self.value(indent, l.at + 1, end, None, start)?);
            }
        }
        self.depth -= 1;
        Some(Value::Array(items))
    }

    /// The value after a key's `:` or an item's `-`, from `from` to the line's
    /// `end`; `parent` is the indent of the key or `-`. `key` and `at` say
    /// where the node is recorded (a mapping value at its key).
    fn value(
        &mut self,
        parent: usize,
        from: usize,
        end: usize,
        key: Option<&str>,
        at: Line,
    ) -> Option<Value> {
        let mut start = from;
        while start < end && self.s[start] == b' ' {
            start += 1;
        }
        if start == end {
            // `-` alone: the item starts on a later line; left to the full
            // parser.
            key?;
            // The value is on the following lines.
            self.next_line(end);
            let next = self.peek()?;
            let nested = next.indent > parent
                || (next.indent == parent && key.is_some() && self.is_item(next.at));
            if !nested {
                return None; // an empty value (null): left to the full parser
            }
            let is_map = !self.is_item(next.at);
            let node = self.open(key, at.line, at.indent + 1, is_map);
            let v = if is_map {
                self.mapping(next.indent)?
            } else {
                self.sequence(next.indent)?
            };
            self.close(node);
            return Some(v);
        }
        self.count()?;
        let col = start - (at.at - at.indent) + 1;
        let own = (at.line, col);
        let (line, col) = if key.is_some() {
            (at.line, at.indent + 1)
        } else {
            (at.line, col)
        };
        let rest = &self.s[start..end];
        // `{}` is an (empty) mapping to the position finder too.
        let node = self.open(key, line, col, rest[0] == b'{');
        let v = match rest[0] {
            b'"' | b'\'' => Value::String(self.quoted(start, end, parent)?),
            b'[' | b'{' => {
                let v = match rest.trim_ascii_end() {
                    b"[]" => Value::Array(Vec::new()),
                    b"{}" => Value::Object(Map::new()),
                    _ if rest[0] == b'[' => self.flow_sequence(start, end, node)?,
                    _ => return None,
                };
                self.next_line(end);
                v
            }
            // As an item, the full parser places it elsewhere: left to it.
            b'|' if key.is_none() => return None,
            b'|' => {
                let chomp = match rest.trim_ascii_end() {
                    b"|" => Chomp::Clip,
                    b"|-" => Chomp::Strip,
                    b"|+" => Chomp::Keep,
                    _ => return None,
                };
                self.next_line(end);
                Value::String(self.literal(parent, chomp)?)
            }
            b'>' | b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b'?' | b':' | b',' | b'#' | b']'
            | b'}' => return None,
            b'-' if rest.len() == 1 || rest[1] == b' ' => return None,
            _ => {
                let first = &self.text[start..end];
                let text = self.plain(first, parent, end)?;
                let (value, differs) = scalar(
                    std::borrow::Cow::Borrowed(&text),
                    ScalarStyle::Plain,
                    self.resolve,
                )?;
                if differs {
                    let note = Note::new(own, &text, &value.to_string(), false);
                    self.notes.push(note);
                }
                value
            }
        };
        Some(v)
    }

    /// A plain scalar starting with `first` (the rest of its line), folded
    /// with the continuation lines indented past `parent`.
    fn plain(&mut self, first: &str, parent: usize, end: usize) -> Option<String> {
        let first = first.trim_end_matches(' ');
        // A scalar that starts like a document marker is read otherwise by
        // serde-saphyr (a continuation line that does is only text).
        if !plain_line_ok(first.as_bytes()) || first.starts_with("---") || first.starts_with("...")
        {
            return None;
        }
        let mut out = first.to_string();
        self.next_line(end);
        let mut breaks = 0usize;
        loop {
            if self.pos >= self.s.len() {
                break;
            }
            let e = self.line_end(self.pos);
            let line = &self.s[self.pos..e];
            if is_space_only(line) {
                breaks += 1;
                self.next_line(e);
                continue;
            }
            let indent = line.iter().take_while(|&&c| c == b' ').count();
            if indent <= parent {
                break;
            }
            let content = self.text[self.pos + indent..e].trim_end_matches(' ');
            // Past the indent a line goes on with the scalar whatever it
            // starts with (`- x` is text here), but a comment ends it.
            if !plain_line_ok(content.as_bytes()) || content.starts_with('#') {
                return None;
            }
            if breaks == 0 {
                out.push(' ');
            } else {
                out.extend(std::iter::repeat_n('\n', breaks));
            }
            breaks = 0;
            out.push_str(content);
            self.next_line(e);
        }
        // Blank lines after the scalar belong to nothing: the reader went
        // past them, as `peek` would.
        Some(out)
    }

    /// A one-line flow sequence of scalars (`[a, "b", 'c']`), opening at
    /// `start`: items are recorded where they start, then the sequence
    /// node (`node`) is closed. Nested collections, empty items and
    /// anything after the `]` but spaces are left to the full parser.
    fn flow_sequence(&mut self, start: usize, end: usize, node: usize) -> Option<Value> {
        let line_start = self.pos;
        let mut items = Vec::new();
        let mut i = start + 1;
        loop {
            while i < end && self.s[i] == b' ' {
                i += 1;
            }
            if i >= end {
                return None;
            }
            if self.s[i] == b']' && items.is_empty() {
                return None; // `[ ]`: rare, left to the full parser
            }
            self.count()?;
            self.open(None, self.line, i - line_start + 1, false);
            let (item, next) = match self.s[i] {
                b'"' | b'\'' => {
                    let mut out = String::new();
                    let line = &self.text[i + 1..end];
                    let closed = quoted_line(line, &mut out, true, 0, self.s[i] == b'"')??;
                    (Value::String(out), i + 1 + closed)
                }
                _ => {
                    let len = self.s[i..end]
                        .iter()
                        .position(|&c| matches!(c, b',' | b']'))?;
                    let text = self.text[i..i + len].trim_end_matches(' ');
                    let b = text.as_bytes();
                    if b.is_empty()
                        || starts_like_indicator(b)
                        || b.iter()
                            .any(|&c| matches!(c, b'[' | b'{' | b'}' | b'#' | b':'))
                    {
                        return None;
                    }
                    let (v, differs) = scalar(
                        std::borrow::Cow::Borrowed(text),
                        ScalarStyle::Plain,
                        self.resolve,
                    )?;
                    if differs {
                        let at = (self.line, i - line_start + 1);
                        self.notes.push(Note::new(at, text, &v.to_string(), false));
                    }
                    (v, i + len)
                }
            };
            items.push(item);
            i = next;
            while i < end && self.s[i] == b' ' {
                i += 1;
            }
            match self.s.get(i) {
                Some(b',') if i < end => i += 1,
                Some(b']') if i < end => {
                    if !self.s[i + 1..end].iter().all(|&c| c == b' ') {
                        return None;
                    }
                    self.close(node);
                    return Some(Value::Array(items));
                }
                _ => return None,
            }
        }
    }

    /// A quoted scalar opening at `start` on a line ending at `end`, folded
    /// over the following lines (indented past `parent`) until it closes.
    /// Nothing but spaces may follow the closing quote.
    fn quoted(&mut self, start: usize, end: usize, parent: usize) -> Option<String> {
        let double = self.s[start] == b'"';
        let mut out = String::new();
        let mut from = start + 1;
        let mut e = end;
        let mut breaks = 0usize;
        let mut first = true;
        loop {
            let line = &self.text[from..e];
            let closed = quoted_line(line, &mut out, first, breaks, double)?;
            if let Some(after) = closed {
                if !line[after..].bytes().all(|b| b == b' ') {
                    return None;
                }
                self.next_line(e);
                return Some(out);
            }
            first = false;
            breaks = 0;
            // The next line with content, counting blank ones.
            self.next_line(e);
            loop {
                if self.pos >= self.s.len() {
                    return None;
                }
                e = self.line_end(self.pos);
                if is_space_only(&self.s[self.pos..e]) {
                    breaks += 1;
                    self.next_line(e);
                    continue;
                }
                break;
            }
            let indent = self.s[self.pos..e]
                .iter()
                .take_while(|&&c| c == b' ')
                .count();
            if indent <= parent {
                return None;
            }
            from = self.pos + indent;
        }
    }

    /// A literal block scalar's lines (the header line already read), for
    /// a node whose key or `-` is at `parent`.
    fn literal(&mut self, parent: usize, chomp: Chomp) -> Option<String> {
        // The indentation: the first line with content decides.
        let mut scan = self.pos;
        let mut leading_max = 0usize;
        let indent = loop {
            if scan >= self.s.len() {
                return None; // empty: left to the full parser
            }
            let e = self.line_end(scan);
            let line = &self.s[scan..e];
            if is_space_only(line) {
                leading_max = leading_max.max(line.len());
                scan = (e + 1).min(self.s.len());
                continue;
            }
            break line.iter().take_while(|&&c| c == b' ').count();
        };
        if indent <= parent || leading_max > indent {
            return None;
        }
        let mut out = String::new();
        let mut pending_breaks = 0usize;
        let mut any = false;
        while self.pos < self.s.len() {
            let e = self.line_end(self.pos);
            let line = &self.s[self.pos..e];
            if is_space_only(line) {
                if line.len() > indent {
                    return None; // spaces as content: left to the full parser
                }
                pending_breaks += 1;
                self.next_line(e);
                continue;
            }
            let ind = line.iter().take_while(|&&c| c == b' ').count();
            if ind < indent {
                break;
            }
            if any {
                out.push('\n');
            }
            out.extend(std::iter::repeat_n('\n', pending_breaks));
            pending_breaks = 0;
            out.push_str(&self.text[self.pos + indent..e]);
            any = true;
            self.next_line(e);
        }
        if out.contains('\r') {
            return None;
        }
        match chomp {
            Chomp::Strip => {}
            Chomp::Clip => out.push('\n'),
            Chomp::Keep => {
                out.push('\n');
                out.extend(std::iter::repeat_n('\n', pending_breaks));
            }
        }
        Some(out)
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Strip,
    Clip,
    Keep,
}

/// Characters YAML treats specially that CRDs never hold outside
/// comments: control characters but tab, DEL, C1 controls (NEL is a line
/// break to YAML 1.1), a byte-order mark, U+2028/U+2029 and the
/// non-characters U+FFFE/U+FFFF. One pass over the bytes, and the
/// document goes to the full parser, which knows what each means.
///
/// The pass reads 64 bytes at a time for any byte that can start one of
/// these (a loop the compiler turns into vector compares), and looks
/// closer only at blocks that have one: byte by byte, this scan was a
/// third of parsing a large CRD.
fn suspicious(b: &[u8]) -> bool {
    const BLOCK: usize = 64;
    let may_start = |c: u8| {
        u8::from(c < 0x20 && c != b'\n' && c != b'\t')
            | u8::from(c == 0x7f)
            | u8::from(c == 0xc2)
            | u8::from(c == 0xe2)
            | u8::from(c == 0xef)
    };
    b.chunks(BLOCK).enumerate().any(|(n, block)| {
        block.iter().fold(0u8, |acc, &c| acc | may_start(c)) != 0
            && (n * BLOCK..n * BLOCK + block.len()).any(|i| suspicious_at(b, i))
    })
}

/// Whether the character starting at byte `i` of `b` is one
/// [`suspicious`] looks for.
fn suspicious_at(b: &[u8], i: usize) -> bool {
    match b[i] {
        b'\n' | b'\t' => false,
        0..0x20 | 0x7f => true,
        0xc2 => matches!(b.get(i + 1), Some(0x80..=0x9f)),
        0xe2 => b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xa8 | 0xa9)),
        0xef => matches!(
            (b.get(i + 1), b.get(i + 2)),
            (Some(0xbb), Some(0xbf)) | (Some(0xbf), Some(0xbe | 0xbf))
        ),
        _ => false,
    }
}

fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    memchr::memchr(needle, hay)
}

/// Where a plain key on this line ends (its `:`), when the line is
/// `key: ...` or `key:`; `None` for anything else, a quoted or odd key
/// included.
fn key_end(line: &[u8]) -> Option<usize> {
    if line.is_empty() || starts_like_indicator(line) || matches!(line[0], b'"' | b'\'') {
        return None;
    }
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b':' if matches!(line.get(i + 1), None | Some(b' ')) => {
                let k = &line[..i];
                if k.is_empty() || k.ends_with(b" ") || k.contains(&b'#') || k.contains(&b'\t') {
                    return None;
                }
                return Some(i);
            }
            b'\t' | b'\r' => return None,
            _ => i += 1,
        }
    }
    None
}

/// A quoted key on one line (`"key": v`, `'key':`): the key and where its
/// `:` is.
fn quoted_key(line: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let body = &line[1..];
    let closed = quoted_line(body, &mut out, true, 0, line.starts_with('"'))??;
    let colon = 1 + closed;
    (line.as_bytes().get(colon) == Some(&b':')
        && matches!(line.as_bytes().get(colon + 1), None | Some(b' ')))
    .then_some((out, colon))
}

/// A character that starts a YAML indicator (or may, with what follows).
fn starts_like_indicator(b: &[u8]) -> bool {
    matches!(
        b.first(),
        Some(
            b'-' | b'?'
                | b':'
                | b','
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'#'
                | b'&'
                | b'*'
                | b'!'
                | b'|'
                | b'>'
                | b'\''
                | b'"'
                | b'%'
                | b'@'
                | b'`'
        )
    )
}

/// One line of a plain scalar that means only itself: no `: ` (a key), no
/// ` #` (a comment), no tab or carriage return, not ending in `:`.
fn plain_line_ok(b: &[u8]) -> bool {
    if b.is_empty() || b.ends_with(b":") {
        return false;
    }
    !b.windows(2).any(|w| w == b": " || w == b" #") && !b.contains(&b'\t') && !b.contains(&b'\r')
}

/// Joins a quoted scalar's next line to what came before: a line break
/// folds to a space, blank lines between are kept as line breaks.
fn fold(out: &mut String, first: bool, breaks: usize) {
    if !first {
        if breaks == 0 {
            out.push(' ');
        } else {
            out.extend(std::iter::repeat_n('\n', breaks));
        }
    }
}

/// One line of a quoted scalar (leading spaces already skipped on a
/// continuation line), appended to `out`; answers where the text after the
/// closing quote starts, if it closes here. In a single-quoted scalar `''`
/// is a quote; in a double-quoted one only the escapes CRD generators write
/// are read, and any other, or a line ending in `\`, is left to the full
/// parser.
fn quoted_line(
    line: &str,
    out: &mut String,
    first: bool,
    breaks: usize,
    double: bool,
) -> Option<Option<usize>> {
    fold(out, first, breaks);
    let quote = if double { '"' } else { '\'' };
    let mut chars = line.char_indices().peekable();
    let mut trailing = 0usize; // spaces held back: trimmed at a line break
    while let Some((i, c)) = chars.next() {
        if c != ' ' && trailing > 0 {
            out.extend(std::iter::repeat_n(' ', trailing));
            trailing = 0;
        }
        match c {
            ' ' => trailing += 1,
            '\'' if !double && matches!(chars.peek(), Some((_, '\''))) => {
                chars.next();
                out.push('\'');
            }
            c if c == quote => return Some(Some(i + 1)),
            '\\' if double => {
                let (_, e) = chars.next()?;
                out.push(escaped(e, &mut chars)?);
            }
            '\t' | '\r' => return None,
            c => out.push(c),
        }
    }
    Some(None)
}

/// The character a double-quoted escape `\e` stands for (`\uXXXX` reads its
/// digits from `rest`); `None` for the escapes left to the full parser.
fn escaped(e: char, rest: &mut impl Iterator<Item = (usize, char)>) -> Option<char> {
    Some(match e {
        '"' => '"',
        '\\' => '\\',
        '/' => '/',
        // Kept where a space would be trimmed by folding.
        ' ' => ' ',
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'b' => '\u{8}',
        'f' => '\u{c}',
        '0' => '\0',
        'u' => {
            let hex: String = (0..4)
                .map(|_| rest.next().map(|(_, h)| h))
                .collect::<Option<_>>()?;
            char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::fast_yaml;
    use crate::manifest::split::resolve_scalar;

    /// The block-wise scan finds exactly what a byte-by-byte one finds, on
    /// text full of the bytes it looks for (and of near misses: other
    /// C2/E2/EF sequences), wherever blocks begin and end.
    #[test]
    fn the_block_scan_for_suspicious_characters_matches_a_byte_scan() {
        let bytewise = |b: &[u8]| (0..b.len()).any(|i| suspicious_at(b, i));
        let pieces: [&[u8]; 14] = [
            b"a",
            b"key: value\n",
            b"\t",
            b"\r",
            b"\x7f",
            "\u{85}".as_bytes(),
            "\u{a0}".as_bytes(),
            "\u{2028}".as_bytes(),
            "\u{2019}".as_bytes(),
            "\u{feff}".as_bytes(),
            "\u{fffe}".as_bytes(),
            "\u{fffd}".as_bytes(),
            b"\x00",
            "\u{e9}".as_bytes(),
        ];
        let mut seed = 0x9e37_79b9_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        let (mut found, mut clean) = (0, 0);
        for _ in 0..3000 {
            let mut text = Vec::new();
            let len = next() % 200;
            for _ in 0..len {
                // Mostly harmless pieces, a rare special one.
                let k = next() as usize % 60;
                text.extend_from_slice(if k < 46 {
                    pieces[k % 3]
                } else {
                    pieces[k - 46]
                });
            }
            assert_eq!(suspicious(&text), bytewise(&text), "{text:?}");
            if bytewise(&text) {
                found += 1
            } else {
                clean += 1
            }
        }
        assert!(found > 100 && clean > 100, "{found} {clean}");
    }

    /// The event reader: what kubectl reads (the reference since both
    /// readers type scalars as sigs.k8s.io/yaml does; serde-saphyr reads
    /// `n:` as the key `n`).
    fn event_reader(text: &str) -> Option<Value> {
        fast_yaml::parse(text, &resolve_scalar)
    }

    fn ours(text: &str) -> Option<Value> {
        parse(text, &resolve_scalar, None)
    }

    /// What the line reader takes reads as the event reader reads it.
    #[test]
    fn same_values_as_the_event_reader() {
        let texts = [
            "a: 1\nb: two\nc: 'it''s'\nd: \"x\\ty \\\"q\\\" \\u00e9\"\n",
            "a:\n  b:\n    c: true\n  d: [] \ne: {}\n",
            "list:\n- a\n- 2\n- name: x\n  port: 80\n-   k: v\n    j: w\nafter: 1\n",
            "list:\n  - a\n  - b: 1\n    c:\n    - 1\n    - 2\n",
            "d: a long line\n  folded here\n\n  and a new paragraph\nnext: 1\n",
            "d: |-\n  line one\n\n    indented\n  last\ne: |\n  clip\n\n\nf: |+\n  keep\n\ng: 0\n",
            "# comment\n\na: 1 # not a comment?\n",
            "n: -1\nf: 1.5\no: 0755\nb: yes\nnul: ~\nt: 2024-01-01\nh: 0x1f\n",
            "\n\nkind: CustomResourceDefinition\nspec:\n  names:\n    plural: widgets\n",
            "a: b: c\n",
            "a: 'x\n  y'\n",
            "a: \"x\n  y\"\n",
            "a: >\n  folded\n",
            "a: |2\n   x\n",
            "a:\n- - x\n",
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: 1\na: 2\n",
            "a:\nb: 1\n",
            "k: v\n  - x\n",
            "k: [a, b]\n",
            "a:\n  - x\n b: 1\n",
            "a: x\n\t b\n",
            "a: x\n  y: z\n",
            "a: |\n  x\n    \n  y\n",
            "a: |\n     \n  x\n",
            "\"quoted key\": 1\n",
            "a: \"\\x41\"\n",
            "a: -\n",
            "a:\n  -\n    b: 1\n",
            "on: 1\ny: 2\n",
            "a: x\n# c\n  y\n",
            "\"quoted\": 1\n'single': [v1, \"v2\", 'v3', 4]\n\"k\":\n  x: [a]\n",
            "a: [a, [b]]\n",
            "a: [a,b ]\n",
            "a: [a, ]\n",
            "a: [\"a\" b]\n",
            "a: [a] x\n",
            "\"a\" : 1\n",
            "a: 1.5\n\n  'q'\nb: 12\n  3\n",
        ];
        for text in texts {
            if let Some(v) = ours(text) {
                assert_eq!(Some(v), event_reader(text), "{text:?}");
            }
        }
        // And it does take the common forms.
        for text in [
            &texts[0], &texts[1], &texts[2], &texts[3], &texts[4], &texts[5],
        ] {
            assert!(ours(text).is_some(), "{text:?} left to the full parser");
        }
    }

    /// Every document of the shared corpus the line reader takes reads to
    /// the value the fast path reads, with the positions it records; and it takes most of the bytes (else it saves nothing).
    #[test]
    fn the_corpus_reads_the_same_as_the_other_readers() {
        let files = fast_yaml::tests::corpus_files();
        if files.is_empty() {
            return;
        }
        let (mut taken, mut total) = (0usize, 0usize);
        let mut left = Vec::new();
        for file in &files {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            for piece in crate::manifest::split::pieces(&std::sync::Arc::new(text.clone())) {
                total += piece.text.len();
                let mut tree = Tree::default();
                let (value, stop) = read(
                    &piece.text,
                    &resolve_scalar,
                    Some(&mut tree),
                    &mut Vec::new(),
                );
                let Some(value) = value else {
                    let line = piece.text.lines().nth(stop.saturating_sub(1)).unwrap_or("");
                    left.push((line.to_string(), file.display().to_string()));
                    continue;
                };
                taken += piece.text.len();
                let at = format!("{} line {}", file.display(), piece.start_line);
                let mut fast_tree = Tree::default();
                let fast =
                    fast_yaml::parse_recording(&piece.text, &resolve_scalar, Some(&mut fast_tree));
                match fast {
                    Some(fast) => {
                        assert_eq!(value, fast, "{at}: another value than the fast path");
                        assert!(
                            tree == fast_tree,
                            "{at}: other positions than the fast path: {:?}",
                            tree.first_difference(&fast_tree)
                        );
                    }
                    None => assert_eq!(Some(value), event_reader(&piece.text), "{at}"),
                }
            }
        }
        eprintln!("line reader: {taken} of {total} corpus bytes");
        for (line, file) in left.iter().take(20) {
            eprintln!("left: {file}: {line}");
        }
        assert!(total > 10_000_000, "only {total} corpus bytes found");
        assert!(
            taken * 100 >= total * 95,
            "the line reader took {taken} of {total} bytes"
        );
    }

    /// Keys, items and continuation lines at random indents, their values
    /// made of the pieces that trip YAML readers up (indicators, quotes,
    /// comments, colons, folding, block scalars).
    fn tricky_document() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let fragment = proptest::sample::select(vec![
            "a",
            "b c",
            "x: y",
            "#",
            " # c",
            "'q'",
            "'it''s",
            "\"d\\\" e\"",
            "\"\\ s\"",
            "- z",
            "-",
            "|-",
            "|",
            "|+",
            ">",
            "[a, b]",
            "[\"v1\", 'v2']",
            "[]",
            "{}",
            "&a",
            "*a",
            "!t",
            "null",
            "~",
            "1",
            "-1",
            "0x1",
            "0755",
            "yes",
            "`t`",
            "a'b",
            "\" x",
            "k:",
            "\"k\":",
            "'k':",
            "? k",
            "--- ",
            "...",
            "%Y",
            "@a",
            "a\tb",
            ": x",
            "1.5",
        ]);
        let key = proptest::sample::select(vec!["a", "b", "k", "on", "\"q\"", "'s'", "x y"]);
        let words = proptest::collection::vec(fragment, 1..3).prop_map(|w| w.join(" "));
        // Each line one level deeper, shallower or level with the last, so
        // that most documents nest as YAML wants.
        let line = (0usize..3, 0usize..7, key, words).prop_map(|(step, shape, key, words)| {
            let body = match shape {
                0 | 1 => format!("{key}: {words}"),
                2 => format!("{key}:"),
                3 => format!("- {words}"),
                4 => format!("- {key}: {words}"),
                5 => format!("  {words}"),
                _ => String::new(),
            };
            (step, body)
        });
        proptest::collection::vec(line, 1..10).prop_map(|lines| {
            let mut text = String::from("root:\n");
            let mut depth = 1usize;
            for (step, body) in lines {
                depth = (depth + step).saturating_sub(1).min(4);
                if !body.is_empty() {
                    text.push_str(&"  ".repeat(depth));
                    text.push_str(&body);
                }
                text.push('\n');
            }
            text
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

        /// Whatever the line reader takes, it reads as the event reader
        /// does, with the positions the fast path records.
        #[test]
        fn what_it_takes_it_reads_as_the_full_parser(text in tricky_document()) {
            let mut tree = Tree::default();
            if let Some(v) = parse(&text, &resolve_scalar, Some(&mut tree)) {
                proptest::prop_assert_eq!(Some(v.clone()), event_reader(&text), "{:?}", text);
                let mut fast_tree = Tree::default();
                if let Some(fast) =
                    fast_yaml::parse_recording(&text, &resolve_scalar, Some(&mut fast_tree))
                {
                    proptest::prop_assert_eq!(v, fast);
                    proptest::prop_assert!(
                        tree == fast_tree,
                        "{:?}: {:?}",
                        text,
                        tree.first_difference(&fast_tree)
                    );
                }
            }
        }
    }
}
