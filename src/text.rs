//! Wording shared by messages across the crate, so that the same thing is
//! always said the same way.

use serde_json::Value;

/// `1 CRD`, `2 CRDs`.
pub fn plural<N>(n: N, one: &str, many: &str) -> String
where
    N: std::fmt::Display + PartialEq + From<u8>,
{
    let word = if n == N::from(1) { one } else { many };
    format!("{n} {word}")
}

/// `10,000,000`: figures in messages grouped by thousands, as people read
/// them.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a JSON value is, for "expected an object, found a list".
pub fn value_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `text` broken into lines of at most `width` characters, at spaces. A
/// word longer than a line (a schema path, a file path) is broken after a
/// `.`, `/`, `,` or `-`, or before a `[`, so `^.spec.template.` ends a line
/// and `containers[*]` starts the next; only a word with no such place is
/// cut at the width.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word;
        let mut word_len = word.chars().count();
        if len > 0 && len + 1 + word_len <= width {
            line.push(' ');
            line.push_str(word);
            len += 1 + word_len;
            continue;
        }
        if len > 0 {
            lines.push(std::mem::take(&mut line));
        }
        while word_len > width {
            let cut = break_before(word, width);
            lines.push(word[..cut].to_string());
            word = &word[cut..];
            word_len = word.chars().count();
        }
        line.push_str(word);
        len = word_len;
    }
    if len > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// The byte index at which to break `word` so the first part holds at most
/// `width` characters: the last `/` that fits (a file path keeps its file
/// name whole), else the last other break place, else the width.
fn break_before(word: &str, width: usize) -> usize {
    let (mut slash, mut other) = (None, None);
    let mut hard = word.len();
    for (n, (i, c)) in word.char_indices().enumerate() {
        if n == width {
            hard = i;
            break;
        }
        match c {
            '/' => slash = Some(i + 1),
            '.' | ',' | '-' => other = Some(i + 1),
            '[' if n > 0 => other = Some(i),
            _ => {}
        }
    }
    match slash.or(other) {
        Some(i) if i < word.len() => i,
        _ => hard,
    }
}

/// The longest piece of `text` that [`wrap`] never breaks: the narrowest a
/// column of such text can be without cutting a word.
pub fn longest_piece(text: &str) -> usize {
    let (mut longest, mut piece) = (0, 0);
    for c in text.chars() {
        match c {
            ' ' => piece = 0,
            '[' => piece = 1,
            '/' | '.' | ',' | '-' => {
                longest = longest.max(piece + 1);
                piece = 0;
            }
            _ => piece += 1,
        }
        longest = longest.max(piece);
    }
    longest
}

/// `text` wrapped to `width`, its first line after `first` and the others
/// after `indent` (both count towards the width).
pub fn wrap_indented(first: &str, indent: &str, text: &str, width: usize) -> String {
    let margin = first.chars().count().max(indent.chars().count());
    let lines = wrap(text, width.saturating_sub(margin).max(20));
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        out.push_str(if i == 0 { first } else { indent });
        out.push_str(l);
        if i + 1 < lines.len() {
            out.push('\n');
        }
    }
    out
}

/// The first `: ` of `s` outside `` `code` `` and `"quotes"`: where a
/// message's "what changed" ends and its "why and how" begins.
pub fn split_message(s: &str) -> Option<(&str, &str)> {
    let (mut tick, mut quote, mut escaped) = (false, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quote => escaped = true,
            '`' if !quote => tick = !tick,
            '"' if !tick => quote = !quote,
            ':' if !tick && !quote && s[i + 1..].starts_with(' ') => {
                return Some((&s[..i], &s[i + 2..]));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #[test]
    fn figures_are_grouped_by_thousands() {
        assert_eq!(super::thousands(0), "0");
        assert_eq!(super::thousands(999), "999");
        assert_eq!(super::thousands(1_000), "1,000");
        assert_eq!(super::thousands(10_000_000), "10,000,000");
    }

    use super::*;

    #[test]
    fn counts_pick_the_word() {
        assert_eq!(plural(1usize, "CRD", "CRDs"), "1 CRD");
        assert_eq!(plural(0u64, "request", "requests"), "0 requests");
        assert_eq!(value_kind(&serde_json::json!([1])), "a list");
    }

    #[test]
    fn words_stay_whole() {
        assert_eq!(
            wrap("stored version v1alpha1 removed from spec.versions", 16),
            [
                "stored version",
                "v1alpha1 removed",
                "from",
                "spec.versions"
            ]
        );
        assert_eq!(wrap("", 10), [""]);
    }

    #[test]
    fn long_paths_break_at_their_separators() {
        assert_eq!(
            wrap("^.spec.template.spec.containers[*].image", 16),
            ["^.spec.template.", "spec.containers", "[*].image"]
        );
        assert_eq!(
            wrap("see /home/me/project/config/crd/widgets.yaml:12", 20),
            ["see", "/home/me/project/", "config/crd/", "widgets.yaml:12"]
        );
        assert_eq!(longest_piece("^.spec.containers[*].image"), 10);
        // No break place: cut at the width rather than overflow.
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
    }
}
