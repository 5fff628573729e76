//! The tiny glob language of `exceptions[].path` and `exceptions[].crd`.
//!
//! Schema paths contain `[*]` and `{*}` literally, which general-purpose glob
//! crates read as character classes and alternations. So the language here is
//! deliberately small: `*` matches any run of characters (including none and
//! including `.`), every other character matches itself.

/// Whether `text` matches `pattern` (`*` = any sequence, all else literal).
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Classic two-pointer wildcard match with backtracking to the last star.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn star_matches_across_segments_and_brackets_are_literal() {
        assert!(matches("^.spec.*", "^.spec.ports[*].name"));
        assert!(matches("^.spec.ports[*].name", "^.spec.ports[*].name"));
        assert!(matches("*.name", "^.spec.ports[*].name"));
        assert!(!matches("^.status.*", "^.spec.ports[*].name"));
        assert!(matches("*", ""));
        assert!(!matches("a", "ab"));
        assert!(matches("*.example.com", "widgets.example.com"));
    }
}
