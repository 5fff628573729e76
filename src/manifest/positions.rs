//! Line and column of nodes inside a document, for findings that CI places
//! on lines (`-o sarif`, `-o github`).
//!
//! The documents are parsed into `serde_json::Value`s, which keep no
//! positions. Rather than carry spans through every check, each document
//! has one index, a [`Tree`]: every node's start and the extent of its
//! subtree, in document order. When the caller knows it will need positions
//! (`-o json`, `sarif`, ...), the fast YAML path records it in the same
//! parse. Otherwise the CRD keeps its text and the first lookup builds the
//! tree from granit-parser's events (the parser serde-saphyr itself uses);
//! only documents with findings are indexed, so a clean run pays nothing.

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
    /// Recorded by the fast YAML path, or built from the text on first use.
    index: OnceLock<Option<Arc<Tree>>>,
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
        if let Some(Some(tree)) = self.index.get() {
            let _ = index.set(Some(Arc::clone(tree)));
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
        let _ = index.set(Some(Arc::new(tree)));
        DocumentText {
            text: SharedText::default(),
            index,
            ..self
        }
    }

    /// Builds the index now (it is built on first use otherwise), so that
    /// callers can build the indexes of several documents in parallel.
    pub fn prepare(&self) {
        self.index.get_or_init(|| tree_of(&self.text).map(Arc::new));
    }

    /// Line and column (1-based, in the file) of the node at `path` (mapping
    /// keys and sequence indexes below the object); for a mapping entry, where
    /// its key starts. `None` when the path is not in the document or the
    /// text does not parse.
    pub fn find(&self, path: &[&str]) -> Option<(usize, usize)> {
        let tree = self
            .index
            .get_or_init(|| tree_of(&self.text).map(Arc::new))
            .as_ref()?;
        let mut full: Vec<&str> = self.prefix.iter().map(String::as_str).collect();
        full.extend_from_slice(path);
        let (line, col) = tree.find(&full)?;
        Some((self.first_line + line - 1, col))
    }
}

/// An open collection while indexing: its node in the tree, and for a
/// mapping the key whose value comes next, with where the key starts.
enum Frame {
    Seq(usize),
    Map(usize, Option<(String, (usize, usize))>),
}

/// The [`Tree`] of the first document in `text`, from its events: for a
/// document the fast YAML path did not read (an anchor, a tag, a repeated
/// key), built on first use. A document with a collection or an alias as a
/// mapping key has no positions.
fn tree_of(text: &str) -> Option<Tree> {
    let mut tree = Tree::default();
    let mut stack: Vec<Frame> = Vec::new();
    let mut parser =
        Parser::new_from_str_with_options(text, granit_parser::options! { emit_comments: false });
    while let Some(event) = parser.next_event() {
        let (event, span) = event.ok()?;
        let at = (span.start.line(), span.start.col() + 1);
        let map = match event {
            Event::MappingEnd | Event::SequenceEnd => {
                let (Frame::Seq(i) | Frame::Map(i, _)) = stack.pop()?;
                tree.close(i);
                continue;
            }
            Event::DocumentEnd => break,
            Event::MappingStart(..) => Some(true),
            Event::SequenceStart(..) => Some(false),
            Event::Scalar(..) | Event::Alias(..) => None,
            _ => continue,
        };
        if let Some(Frame::Map(_, pending @ None)) = stack.last_mut() {
            let Event::Scalar(key, ..) = event else {
                return None;
            };
            *pending = Some((key.into_owned(), at));
            continue;
        }
        let node = match stack.last_mut() {
            Some(Frame::Map(_, pending)) => {
                let (key, (line, col)) = pending.take()?;
                tree.open(Some(&key), line, col, map == Some(true))
            }
            _ => tree.open(None, at.0, at.1, map == Some(true)),
        };
        match map {
            Some(true) => stack.push(Frame::Map(node, None)),
            Some(false) => stack.push(Frame::Seq(node)),
            None => {}
        }
    }
    Some(tree)
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
    fn the_tree_built_on_demand_is_the_one_the_fast_path_records() {
        let text = "a: 1\nb:\n  - {c: [1, 2], d: x}\n  - e: |\n      text\n    f: 'q'\ng: []\n";
        let mut recorded = Tree::default();
        super::super::fast_yaml::parse_recording(text, &|_| None, Some(&mut recorded))
            .expect("plain YAML");
        let built = tree_of(text).expect("parses");
        assert_eq!(built.first_difference(&recorded), None);
    }

    #[test]
    fn anchors_and_aliases_keep_their_positions() {
        let d = doc("a: &x {b: 1}\nc: *x\nd:\n  - e: 2\n", 1);
        assert_eq!(d.find(&["c"]), Some((2, 1)));
        assert_eq!(d.find(&["d", "0", "e"]), Some((4, 5)));
        assert_eq!(d.find(&["a", "b"]), Some((1, 8)));
    }

    #[test]
    fn text_that_does_not_parse_has_no_positions() {
        assert_eq!(doc("a: [oops\n", 1).find(&["a"]), None);
    }
}
