//! Splitting a YAML stream into documents while keeping line numbers.
//!
//! The stream is cut at `---` / `...` marker lines (a marker at column 0 ends
//! any block scalar, so this is exact), and each piece is parsed on its own.
//! That gives every document its starting line, and lets a syntax error be
//! reported at the right line of the file.

use std::sync::Arc;

use serde_json::Value;

use super::positions::{DocumentText, Tree};
use super::shared_text::SharedText;
use super::yaml11::{self, Reading};
use super::{Location, ManifestError, Position};
use super::{block_yaml, fast_yaml};

/// A parsed document, where it starts, its text (for positions inside it),
/// and the places kubectl reads otherwise than YAML 1.2.
pub(super) type Document = (Value, Location, DocumentText, Vec<Reading>);

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
/// A range of the file's text when its lines need no rewriting (the usual
/// case), shared with the parsed document's [`DocumentText`]: manifests
/// are large, and each copy is one more at peak memory.
pub(super) struct Piece {
    pub text: SharedText,
    pub start_line: usize,
}

/// Cuts `file` into its non-blank documents. Cheap next to parsing, so the
/// pieces of every file can then be parsed in parallel.
///
/// Each piece is its lines, each ended by `\n` (a `\r\n` ending read as
/// `\n`), the marker line that opens it reduced to what follows the marker.
/// That is a range of `file` itself unless a line must be rewritten.
pub(super) fn pieces(file: &Arc<String>) -> Vec<Piece> {
    let base = if file.starts_with('\u{feff}') { 3 } else { 0 };
    let text = &file[base..];
    let mut out = Vec::new();
    let mut open = Open {
        start_line: 1,
        head: None,
        body_start: 0,
        clean: true,
        shared_start: Some(0),
    };
    if memchr::memchr(b'\r', text.as_bytes()).is_none() {
        return pieces_lf(file, base, text, open);
    }
    let mut offset = 0;
    for (i, raw) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        let line = line_of(raw);
        let lf_only = line.len() + 1 == raw.len();
        if is_marker(line, "---") || is_marker(line, "...") {
            open.flush(file, base, offset, &mut out);
            let head = line.strip_prefix("---").unwrap_or("");
            // The piece starts right after the three marker characters when
            // what follows them on the line is the head, ended by `\n`.
            let after_marker = &line[3..];
            open = Open {
                start_line: line_no,
                head: Some(head),
                body_start: offset + raw.len(),
                clean: true,
                shared_start: (lf_only && after_marker == head).then_some(offset + 3),
            };
        } else if !lf_only && line.len() != raw.len() {
            // A `\r\n` ending: this piece is rebuilt line by line.
            open.clean = false;
        }
        offset += raw.len();
    }
    open.flush(file, base, offset, &mut out);
    out
}

/// [`pieces`] of a text whose lines all end in `\n` alone (nearly every
/// file): only the lines that begin with `---` or `...` can end a piece,
/// so those are searched for, and the lines between them are only
/// counted. Going line by line was a tenth of reading a large CRD.
fn pieces_lf<'t>(file: &Arc<String>, base: usize, text: &'t str, mut open: Open<'t>) -> Vec<Piece> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    // Where lines begin with a marker's first three characters, in order.
    let dashes = memchr::memmem::find_iter(b, b"\n---").map(|p| p + 1);
    let dots = memchr::memmem::find_iter(b, b"\n...").map(|p| p + 1);
    let first = (b.starts_with(b"---") || b.starts_with(b"...")).then_some(0);
    let mut candidates: Vec<usize> = first.into_iter().chain(dashes).chain(dots).collect();
    candidates.sort_unstable();
    let (mut counted, mut line_no) = (0, 1);
    for start in candidates {
        let end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |i| start + i);
        let line = &text[start..end];
        if !(is_marker(line, "---") || is_marker(line, "...")) {
            continue;
        }
        line_no += b[counted..start].iter().filter(|&&c| c == b'\n').count();
        counted = start;
        open.flush(file, base, start, &mut out);
        let head = line.strip_prefix("---").unwrap_or("");
        let lf_only = end < b.len();
        let raw_len = line.len() + usize::from(lf_only);
        open = Open {
            start_line: line_no,
            head: Some(head),
            body_start: start + raw_len,
            clean: true,
            shared_start: (lf_only && &line[3..] == head).then_some(start + 3),
        };
    }
    open.flush(file, base, text.len(), &mut out);
    out
}

/// A line as `str::lines` gives it: without `\n` or `\r\n`.
fn line_of(raw: &str) -> &str {
    match raw.strip_suffix('\n') {
        Some(l) => l.strip_suffix('\r').unwrap_or(l),
        None => raw,
    }
}

/// The piece being gathered by [`pieces`].
struct Open<'a> {
    start_line: usize,
    /// What follows the marker on the line that opened the piece.
    head: Option<&'a str>,
    /// Where the lines after the marker start.
    body_start: usize,
    /// No line needs rewriting.
    clean: bool,
    /// Where the piece starts in the text when the marker line needs no
    /// rewriting either.
    shared_start: Option<usize>,
}

impl Open<'_> {
    /// Adds the piece ending at `body_end` (offsets in the text after a
    /// byte-order mark of `base` bytes).
    fn flush(&self, file: &Arc<String>, base: usize, body_end: usize, out: &mut Vec<Piece>) {
        let text = &file[base..];
        let body = &text[self.body_start..body_end];
        let shared = match self.shared_start {
            Some(start) if self.clean && (body.is_empty() || body.ends_with('\n')) => {
                SharedText::slice(file, base + start..base + body_end)
            }
            _ => None,
        };
        let piece = shared.unwrap_or_else(|| {
            let head = self.head.map_or(0, |h| h.len() + 1);
            let mut piece = String::with_capacity(head + body.len() + 1);
            if let Some(h) = self.head {
                piece.push_str(h);
                piece.push('\n');
            }
            if self.clean {
                piece.push_str(body);
                if !body.is_empty() && !body.ends_with('\n') {
                    piece.push('\n');
                }
            } else {
                for line in body.lines() {
                    piece.push_str(line);
                    piece.push('\n');
                }
            }
            SharedText::whole(piece)
        });
        if !is_blank(&piece) {
            out.push(Piece {
                text: piece,
                start_line: self.start_line,
            });
        }
    }
}

/// Parses every non-empty document of `text`, in order.
#[cfg(test)]
fn documents(text: &str, file: &str) -> Result<Vec<Document>, ManifestError> {
    let mut docs = Vec::new();
    for piece in pieces(&Arc::new(text.to_string())) {
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
    let mut notes = Vec::new();
    let at_line = |line: usize| Location {
        file: file.to_string(),
        line: start_line + line.max(1) - 1,
    };
    let parsed = match block_yaml::parse_noting(text, &resolve_scalar, tree.as_mut(), &mut notes) {
        Some(value) => Ok(value),
        None => {
            tree = record.then(Tree::default);
            match fast_yaml::read(text, &resolve_scalar, tree.as_mut(), &mut notes) {
                Ok(read) => {
                    if !read.tree_holds {
                        tree = None;
                    }
                    Ok(read.value)
                }
                Err(fast_yaml::Stop::Refused(line, message)) => {
                    return Err(ManifestError::Yaml {
                        location: at_line(line),
                        message,
                    });
                }
                // A tag, a syntax error, past the budget: serde-saphyr's
                // reading, or its error.
                Err(fast_yaml::Stop::Elsewhere) => {
                    tree = None;
                    notes.clear();
                    serde_saphyr::from_str_with_options::<Value>(text, options())
                }
            }
        }
    };
    let file_label: Arc<str> = Arc::from(file);
    let readings = notes
        .into_iter()
        .map(|n| Reading {
            position: Position {
                file: file_label.clone(),
                line: start_line + n.line - 1,
                column: n.column,
            },
            written: n.written,
            read_as: n.read_as,
            key: n.key,
        })
        .collect();
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
                    Some(tree) => DocumentText::new(text.clone(), start_line).with_tree(tree),
                    None => DocumentText::new(text.clone(), start_line),
                },
                readings,
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

/// A plain scalar the fast paths cannot type by themselves, as kubectl reads
/// it; `None` where kubectl refuses it (`.inf`).
pub(super) fn resolve_scalar(text: &str) -> Option<Value> {
    yaml11::value(text).ok()
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
    fn slicing_gives_the_same_pieces_as_copying_line_by_line() {
        let cases = [
            "",
            "a: 1",
            "a: 1\n",
            "\u{feff}a: 1\n---\nb: 2",
            "---\na: 1\n...\n---\nb: 2\n",
            "--- # c\na: 1\n--- x: 1\n---\n\n",
            "a: 1\r\nb: |\r\n  x\r\n---\r\nc: 3\r\n",
            "a: 1\r\n---\nb: 2\n",
            "k: v\r",
            "# only a comment\n---\n   \n---\nz: 1\n",
            "----\na: 1\n---\tb\n",
            "\u{feff}a: 1\n--- # c\nb: 2\n",
            "a: 1\n... # end\nb: 2\n...\nc: 3\n---",
            "a: 1\n---\r\nb: 2\n--- x\nc: 3",
        ];
        for case in cases {
            let ours: Vec<_> = pieces(&Arc::new(case.to_string()))
                .into_iter()
                .map(|p| (p.text.to_string(), p.start_line))
                .collect();
            let reference: Vec<_> = pieces_line_by_line(case)
                .into_iter()
                .map(|p| (p.text.to_string(), p.start_line))
                .collect();
            assert_eq!(ours, reference, "{case:?}");
        }
    }

    /// Generated texts of marker lines, near misses and content, with and
    /// without a last line ending: the search for markers finds what going
    /// line by line finds.
    #[test]
    fn the_marker_search_agrees_with_going_line_by_line() {
        let lines = [
            "---",
            "...",
            "--- # c",
            "--- x: 1",
            "...\t# end",
            "----",
            "-- -",
            "..x",
            ".. .",
            "a: 1",
            "  - b",
            "",
            "   ",
            "# ---",
            "k: ---",
            "---\tz",
        ];
        let mut seed = 0x2545_f491_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as usize
        };
        for _ in 0..2000 {
            let n = next() % 12;
            let mut joined = (0..n)
                .map(|_| lines[next() % lines.len()])
                .collect::<Vec<_>>()
                .join("\n");
            if next() % 2 == 0 {
                joined.push('\n');
            }
            if next() % 5 == 0 {
                joined.insert(0, '\u{feff}');
            }
            let ours: Vec<_> = pieces(&Arc::new(joined.clone()))
                .into_iter()
                .map(|p| (p.text.to_string(), p.start_line))
                .collect();
            let reference: Vec<_> = pieces_line_by_line(&joined)
                .into_iter()
                .map(|p| (p.text.to_string(), p.start_line))
                .collect();
            assert_eq!(ours, reference, "{joined:?}");
        }
    }

    /// Documents whose lines need no rewriting are ranges of the file's
    /// own buffer, not copies of it.
    #[test]
    fn clean_pieces_share_the_file_text() {
        let file = Arc::new("a: 1\n--- # c\nb: 2\n---\r\nc: 3\n".to_string());
        let shared: Vec<bool> = pieces(&file)
            .iter()
            .map(|p| p.text.is_range_of(&file))
            .collect();
        assert_eq!(shared, [true, true, false]);
    }

    /// The straightforward definition [`pieces`] must agree with.
    fn pieces_line_by_line(text: &str) -> Vec<Piece> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut out = Vec::new();
        let mut start_line = 1usize;
        let mut current = String::new();
        let mut flush = |current: &mut String, start_line: usize| {
            let piece = std::mem::take(current);
            if !is_blank(&piece) {
                out.push(Piece {
                    text: piece.into(),
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

    #[test]
    fn documents_keep_their_starting_lines() {
        let text = "# header\na: 1\n---\n\nb: 2\n--- # trailing comment\nc: 3\n---\n";
        let docs = documents(text, "f.yaml").unwrap();
        let lines: Vec<usize> = docs.iter().map(|(_, l, ..)| l.line).collect();
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
