//! Splitting a YAML stream into documents while keeping line numbers.
//!
//! The stream is cut at `---` / `...` marker lines (a marker at column 0 ends
//! any block scalar, so this is exact), and each piece is parsed on its own.
//! That gives every document its starting line, and lets a syntax error be
//! reported at the right line of the file.

use std::sync::Arc;

use serde_json::Value;

use super::fast_yaml;
use super::positions::{DocumentText, Tree};
use super::{Location, ManifestError};

/// A parsed document, where it starts, and its text (for positions inside it).
pub(super) type Document = (Value, Location, DocumentText);

fn is_marker(line: &str, marker: &str) -> bool {
    line.strip_prefix(marker)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
}

fn is_blank(text: &str) -> bool {
    text.lines().all(|l| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#')
    })
}

/// One document's text and the file line it starts at, before parsing.
/// Shared with the parsed document's [`DocumentText`] rather than copied:
/// manifests are large, and each copy is one more at peak memory.
pub(super) struct Piece {
    pub text: Arc<str>,
    pub start_line: usize,
}

/// Cuts `text` into its non-blank documents. Cheap next to parsing, so the
/// pieces of every file can then be parsed in parallel.
pub(super) fn pieces(text: &str) -> Vec<Piece> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = Vec::new();
    let mut start_line = 1usize;
    let mut current = String::new();
    let mut flush = |current: &mut String, start_line: usize| {
        let piece = std::mem::take(current);
        if !is_blank(&piece) {
            out.push(Piece {
                text: Arc::from(piece),
                start_line,
            });
        }
    };
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if is_marker(line, "---") || is_marker(line, "...") {
            flush(&mut current, start_line);
            start_line = line_no;
            // Content may follow `--- ` on the marker line itself.
            if let Some(rest) = line.strip_prefix("---") {
                current.push_str(rest);
            }
            current.push('\n');
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    flush(&mut current, start_line);
    out
}

/// Parses every non-empty document of `text`, in order.
#[cfg(test)]
fn documents(text: &str, file: &str) -> Result<Vec<Document>, ManifestError> {
    let mut docs = Vec::new();
    for piece in pieces(text) {
        docs.extend(parse(&piece, file, false)?);
    }
    Ok(docs)
}

/// Parses one document; an empty one (`null`) is `None`.
/// With `record`, the fast path also records where each node starts.
pub(super) fn parse(
    piece: &Piece,
    file: &str,
    record: bool,
) -> Result<Option<Document>, ManifestError> {
    let Piece { text, start_line } = piece;
    let start_line = *start_line;
    let mut tree = record.then(Tree::default);
    let parsed = match fast_yaml::parse_recording(text, &resolve_scalar, tree.as_mut()) {
        Some(value) => Ok(value),
        None => {
            tree = None;
            serde_saphyr::from_str_with_options::<Value>(text, options())
        }
    };
    match parsed {
        Ok(Value::Null) => Ok(None),
        Ok(value) => {
            // The document starts at its first non-blank line.
            let offset = text
                .lines()
                .position(|l| {
                    let t = l.trim();
                    !t.is_empty() && !t.starts_with('#')
                })
                .unwrap_or(0);
            Ok(Some((
                value,
                Location {
                    file: file.to_string(),
                    line: start_line + offset,
                },
                match tree {
                    Some(tree) => DocumentText::new(Arc::clone(text), start_line).with_tree(tree),
                    None => DocumentText::new(Arc::clone(text), start_line),
                },
            )))
        }
        Err(e) => {
            let (line, message) = yaml_error(&e);
            Err(ManifestError::Yaml {
                location: Location {
                    file: file.to_string(),
                    line: line.map_or(start_line, |l| start_line + l - 1),
                },
                message,
            })
        }
    }
}

/// How manifests are read. kubectl reads YAML 1.1 (`0755` is octal) and,
/// with the API server, accepts a repeated key with a warning, the last one
/// winning: released operator manifests rely on both.
pub(super) fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        legacy_octal_numbers: true,
        duplicate_keys: serde_saphyr::options::DuplicateKeyPolicy::LastWins,
    }
}

/// A plain scalar the fast path cannot type by itself, read by serde-saphyr
/// alone; `None` (read the whole document with serde-saphyr) unless it is
/// still one scalar there.
fn resolve_scalar(text: &str) -> Option<Value> {
    serde_saphyr::from_str_with_options::<Value>(text, options())
        .ok()
        .filter(|v| !v.is_array() && !v.is_object())
}

/// A serde-saphyr error as the 1-based line it names (in the text parsed)
/// and its message without the position, which callers put in front.
pub(crate) fn yaml_error(e: &serde_saphyr::Error) -> (Option<usize>, String) {
    let inner = e.without_snippet();
    let line = inner.location().map(|l| l.line() as usize);
    let text = inner.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    (line, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_keep_their_starting_lines() {
        let text = "# header\na: 1\n---\n\nb: 2\n--- # trailing comment\nc: 3\n---\n";
        let docs = documents(text, "f.yaml").unwrap();
        let lines: Vec<usize> = docs.iter().map(|(_, l, _)| l.line).collect();
        assert_eq!(lines, [2, 5, 7]);
    }

    #[test]
    fn the_yaml_1_1_equals_sign_reads_as_a_string() {
        let docs = documents("enum:\n- =\n- '!='\n", "f.yaml").unwrap();
        assert_eq!(docs[0].0["enum"][0], "=");
    }

    #[test]
    fn a_marker_inside_text_is_not_a_separator() {
        let docs = documents("a: |\n  text\n  ---\n  more\n", "f.yaml").unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].0["a"], "text\n---\nmore\n");
    }
}
