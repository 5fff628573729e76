//! Line and column of nodes inside a document, for findings that CI places
//! on lines (`-o sarif`, `-o github`).
//!
//! The documents are parsed into `serde_json::Value`s, which keep no
//! positions. Rather than carry spans through every check, each CRD keeps
//! the text of its document, and the first lookup runs a second, light pass
//! over it with granit-parser's events (the parser serde-saphyr itself
//! uses), recording where every mapping key and sequence item starts. Only
//! documents with findings are indexed, so a clean run pays nothing.
//!
//! When the caller knows it will need positions (`-o json`, `sarif`, ...),
//! the fast YAML path records a [`Tree`] in the same parse instead: each
//! node's start and the extent of its subtree, in document order, with no
//! path strings and no second parse.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use granit_parser::{Event, Parser};
use serde::Serialize;

use super::SharedText;

/// A node's place in a file: what `-o sarif` and `-o github` point at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Position {
    /// The file as the location names it (`config/crd/widgets.yaml`,
    /// `<stdin>`, `git:REF:path`).
    pub file: Arc<str>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
}

/// The text of one document and where it sits in its file.
#[derive(Debug)]
pub struct DocumentText {
    text: SharedText,
    /// The file line of the text's first line.
    first_line: usize,
    /// Path segments leading to this object inside the document (a `List`
    /// item is `items`, `3`), empty for a document that is the object.
    prefix: Vec<String>,
    index: OnceLock<Option<Index>>,
}

/// How a document's positions are looked up.
#[derive(Debug)]
enum Index {
    /// Recorded by the fast YAML path while the value was built.
    Tree(Arc<Tree>),
    /// Built by a second pass over the text, by path.
    Paths(HashMap<String, (usize, usize)>),
}

/// Every node of one document in document order (a collection before its
/// children): where it starts (for a mapping entry, where its key starts)
/// and where its subtree ends. Finding a path walks it from the root,
/// skipping each sibling's subtree in one step.
#[derive(Debug, Default, PartialEq)]
pub struct Tree {
    nodes: Vec<TreeNode>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct TreeNode {
    /// The hash of the mapping key this node is the value of (0 otherwise).
    key: u64,
    line: u32,
    col: u32,
    /// One past the last node of this subtree.
    end: u32,
    /// A mapping: children are found by key, else by position.
    map: bool,
}

/// FNV-1a: keys are short and only compared among siblings, where two
/// different keys with one 64-bit hash do not occur in practice (and would
/// only misplace a line number).
fn key_hash(key: &str) -> u64 {
    key.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Tree {
    /// Where two trees first differ (for tests that compare readers).
    #[cfg(test)]
    pub(super) fn first_difference(&self, other: &Tree) -> Option<String> {
        let n = self.nodes.len().max(other.nodes.len());
        (0..n).find_map(|i| {
            let (a, b) = (self.nodes.get(i), other.nodes.get(i));
            (a != b).then(|| format!("node {i}: {a:?} vs {b:?}"))
        })
    }

    /// Records a node starting at `line`/`col` (1-based), the value of
    /// mapping key `key` if any; returns its index for [`Tree::close`].
    pub(super) fn open(&mut self, key: Option<&str>, line: usize, col: usize, map: bool) -> usize {
        let at = self.nodes.len();
        self.nodes.push(TreeNode {
            key: key.map_or(0, key_hash),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            col: u32::try_from(col).unwrap_or(u32::MAX),
            end: u32::try_from(at + 1).unwrap_or(u32::MAX),
            map,
        });
        at
    }

    /// Ends the subtree of the node at `at` (a collection) after the last
    /// node recorded so far.
    pub(super) fn close(&mut self, at: usize) {
        let end = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        if let Some(n) = self.nodes.get_mut(at) {
            n.end = end;
        }
    }

    /// Line and column of the node at `path` (keys and item indexes).
    fn find(&self, path: &[&str]) -> Option<(usize, usize)> {
        let nodes = &self.nodes;
        let mut i = 0;
        nodes.first()?;
        for seg in path {
            let parent = nodes[i];
            let end = parent.end as usize;
            let want_key = key_hash(seg);
            // Item indexes as the path index writes them: no sign, no
            // leading zero.
            let want_item = seg.parse::<usize>().ok().filter(|n| n.to_string() == *seg);
            if !parent.map && want_item.is_none() {
                return None;
            }
            let (mut j, mut item) = (i + 1, 0);
            loop {
                let child = nodes.get(j).filter(|_| j < end)?;
                if (parent.map && child.key == want_key) || (!parent.map && Some(item) == want_item)
                {
                    i = j;
                    break;
                }
                j = (child.end as usize).max(j + 1);
                item += 1;
            }
        }
        Some((nodes[i].line as usize, nodes[i].col as usize))
    }
}

/// Separates path segments in index keys (it occurs in no key we look up).
const SEPARATOR: char = '\u{1}';

/// Joins path segments into one index key.
fn key_of<S: AsRef<str>>(segments: &[S]) -> String {
    let mut out = String::new();
    for (i, s) in segments.iter().enumerate() {
        if i > 0 {
            out.push(SEPARATOR);
        }
        out.push_str(s.as_ref());
    }
    out
}

impl DocumentText {
    /// A document whose text starts at `first_line` of its file.
    pub fn new(text: SharedText, first_line: usize) -> DocumentText {
        DocumentText {
            text,
            first_line,
            prefix: Vec::new(),
            index: OnceLock::new(),
        }
    }

    /// The same text, for the object at `segments` inside it (a list item).
    pub fn nested(&self, segments: &[&str]) -> DocumentText {
        let mut prefix = self.prefix.clone();
        prefix.extend(segments.iter().map(|s| s.to_string()));
        // A recorded tree covers the whole document: items share it.
        let index = OnceLock::new();
        if let Some(Some(Index::Tree(tree))) = self.index.get() {
            let _ = index.set(Some(Index::Tree(Arc::clone(tree))));
        }
        DocumentText {
            text: self.text.clone(),
            first_line: self.first_line,
            prefix,
            index,
        }
    }

    /// The length of the text in bytes: what indexing it costs (nothing
    /// when its parse recorded the positions).
    pub fn size(&self) -> usize {
        self.text.len()
    }

    /// The same document with the positions its parse recorded. The text
    /// itself is no longer needed then, and is let go (it is as large as the
    /// manifest).
    pub(super) fn with_tree(self, tree: Tree) -> DocumentText {
        let index = OnceLock::new();
        let _ = index.set(Some(Index::Tree(Arc::new(tree))));
        DocumentText {
            text: SharedText::default(),
            index,
            ..self
        }
    }

    /// Builds the index now (it is built on first use otherwise), so that
    /// callers can build the indexes of several documents in parallel.
    pub fn prepare(&self) {
        self.index
            .get_or_init(|| index(&self.text).map(Index::Paths));
    }

    /// Line and column (1-based, in the file) of the node at `path` (mapping
    /// keys and sequence indexes below the object); for a mapping entry, where
    /// its key starts. `None` when the path is not in the document or the
    /// text does not parse.
    pub fn find(&self, path: &[&str]) -> Option<(usize, usize)> {
        let index = self
            .index
            .get_or_init(|| index(&self.text).map(Index::Paths))
            .as_ref()?;
        let mut full: Vec<&str> = self.prefix.iter().map(String::as_str).collect();
        full.extend_from_slice(path);
        let (line, col) = match index {
            Index::Tree(tree) => tree.find(&full)?,
            Index::Paths(paths) => *paths.get(&key_of(&full))?,
        };
        Some((self.first_line + line - 1, col))
    }
}

/// An open collection while indexing; `base` is the length of the shared
/// path string at the collection itself.
enum Frame {
    /// A mapping; `keyed` when the key whose value comes next was read.
    Map { base: usize, keyed: bool },
    /// A sequence; `next` is the index of the next item.
    Seq { base: usize, next: usize },
    /// A collection used as a mapping key: nothing inside is recorded.
    Ignored,
}

/// Every mapping key and sequence item of the first document in `text`,
/// by path, with its 1-based line and column in `text`. One path string is
/// extended and cut back as the events go, so recording a node costs one
/// allocation.
fn index(text: &str) -> Option<HashMap<String, (usize, usize)>> {
    let mut out = HashMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut path = String::new();
    let mut parser =
        Parser::new_from_str_with_options(text, granit_parser::options! { emit_comments: false });
    while let Some(event) = parser.next_event() {
        let (event, span) = event.ok()?;
        let at = (span.start.line(), span.start.col() + 1);
        let starts = matches!(event, Event::MappingStart(..) | Event::SequenceStart(..));
        match &event {
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                end_value(&mut stack);
                continue;
            }
            Event::DocumentEnd => break,
            Event::Scalar(..)
            | Event::Alias(..)
            | Event::MappingStart(..)
            | Event::SequenceStart(..) => {}
            _ => continue,
        }
        // Where this node sits: the document, a key, a value, or an item.
        let recorded = match stack.last_mut() {
            None => {
                out.entry(String::new()).or_insert(at);
                true
            }
            Some(Frame::Ignored) => false,
            Some(Frame::Map {
                base,
                keyed: keyed @ false,
            }) => {
                if let Event::Scalar(key, ..) = &event {
                    path.truncate(*base);
                    if *base > 0 {
                        path.push(SEPARATOR);
                    }
                    path.push_str(key);
                    out.entry(path.clone()).or_insert(at);
                    *keyed = true;
                } else if starts {
                    // A complex key: skip it, and its value with it.
                    stack.push(Frame::Ignored);
                }
                continue;
            }
            Some(Frame::Map { .. }) => true,
            Some(Frame::Seq { base, next }) => {
                path.truncate(*base);
                if *base > 0 {
                    path.push(SEPARATOR);
                }
                path.push_str(&next.to_string());
                out.entry(path.clone()).or_insert(at);
                true
            }
        };
        let base = path.len();
        match event {
            Event::MappingStart(..) if recorded => stack.push(Frame::Map { base, keyed: false }),
            Event::SequenceStart(..) if recorded => stack.push(Frame::Seq { base, next: 0 }),
            Event::MappingStart(..) | Event::SequenceStart(..) => stack.push(Frame::Ignored),
            _ => end_value(&mut stack),
        }
    }
    Some(out)
}

/// A value just ended: its mapping waits for the next key, its sequence
/// moves to the next item.
fn end_value(stack: &mut [Frame]) {
    match stack.last_mut() {
        Some(Frame::Map { keyed, .. }) => *keyed = false,
        Some(Frame::Seq { next, .. }) => *next += 1,
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str, first_line: usize) -> DocumentText {
        DocumentText::new(text.into(), first_line)
    }

    #[test]
    fn keys_and_items_have_their_line_and_column() {
        let d = doc(
            "spec:\n  versions:\n  - name: v1\n    schema: {type: object}\n  - name: v2\n",
            10,
        );
        assert_eq!(d.find(&["spec"]), Some((10, 1)));
        assert_eq!(d.find(&["spec", "versions"]), Some((11, 3)));
        assert_eq!(d.find(&["spec", "versions", "0"]), Some((12, 5)));
        assert_eq!(
            d.find(&["spec", "versions", "0", "schema", "type"]),
            Some((13, 14))
        );
        assert_eq!(d.find(&["spec", "versions", "1", "name"]), Some((14, 5)));
        assert_eq!(d.find(&["spec", "versions", "2"]), None);
    }

    #[test]
    fn a_list_item_is_found_below_its_prefix() {
        let d = doc("kind: List\nitems:\n- kind: A\n- kind: B\n  spec: 1\n", 1);
        let item = d.nested(&["items", "1"]);
        assert_eq!(item.find(&["spec"]), Some((5, 3)));
        assert_eq!(item.find(&[]), Some((4, 3)));
    }

    #[test]
    fn json_text_is_indexed_too() {
        let d = doc(
            "{\n  \"spec\": {\n    \"scope\": \"Namespaced\"\n  }\n}\n",
            1,
        );
        assert_eq!(d.find(&["spec", "scope"]), Some((3, 5)));
    }

    #[test]
    fn text_that_does_not_parse_has_no_positions() {
        assert_eq!(doc("a: [oops\n", 1).find(&["a"]), None);
    }
}
