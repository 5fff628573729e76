//! Whether a new `pattern` matches every string an old one matches.
//!
//! Both are regular languages (RE2 has no back-references), so inclusion is
//! decidable: build a DFA for the strings each pattern finds a match in
//! (`pattern` is an unanchored search), walk the pair of DFAs from their
//! start over every byte, and look for a string the old one accepts and
//! the new one does not. Patterns whose DFA would be large, or that use
//! what a DFA cannot express (Unicode word boundaries), stay undecided.

use std::collections::HashSet;

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input, MatchKind};

use crate::validate::regex::translate_go;

/// Memory one DFA may take; beyond it the answer is undecided.
const DFA_LIMIT: usize = 1 << 21;

/// Pairs of states walked before the answer is undecided.
const MAX_PAIRS: usize = 50_000;

/// `Some(true)` when every string `old` finds a match in, `new` finds one
/// in too; `Some(false)` when some string tells them apart; `None` when it
/// cannot be decided here.
pub(super) fn includes(old: &str, new: &str) -> Option<bool> {
    let (a, b) = (language(old)?, language(new)?);
    let start = |d: &dense::DFA<Vec<u32>>| {
        d.start_state_forward(&Input::new("").anchored(Anchored::Yes))
            .ok()
    };
    let (sa, sb) = (start(&a)?, start(&b)?);
    let accepts = |d: &dense::DFA<Vec<u32>>, s: StateID| d.is_match_state(d.next_eoi_state(s));
    let mut seen: HashSet<(StateID, StateID)> = HashSet::new();
    let mut todo = vec![(sa, sb)];
    seen.insert((sa, sb));
    while let Some((x, y)) = todo.pop() {
        if accepts(&a, x) && !accepts(&b, y) {
            return Some(false);
        }
        for byte in 0..=255u8 {
            let nx = a.next_state(x, byte);
            if a.is_dead_state(nx) {
                continue;
            }
            let ny = b.next_state(y, byte);
            if a.is_quit_state(nx) || b.is_quit_state(ny) {
                return None;
            }
            if seen.insert((nx, ny)) {
                if seen.len() > MAX_PAIRS {
                    return None;
                }
                todo.push((nx, ny));
            }
        }
    }
    Some(true)
}

/// The DFA of the whole strings `pattern` finds a match in.
fn language(pattern: &str) -> Option<dense::DFA<Vec<u32>>> {
    let rust = translate_go(pattern).ok()?;
    let whole = format!("(?s:.)*(?:{rust})(?s:.)*");
    dense::Builder::new()
        .configure(
            dense::Config::new()
                .match_kind(MatchKind::All)
                .start_kind(StartKind::Anchored)
                .dfa_size_limit(Some(DFA_LIMIT))
                .determinize_size_limit(Some(DFA_LIMIT)),
        )
        .build(&whole)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::includes;

    #[test]
    fn a_widened_pattern_includes_the_old_one() {
        assert_eq!(
            includes("^http(s)?://.+$", "^(http|https|socks5)://.+$"),
            Some(true)
        );
        assert_eq!(includes("^[a-z]+$", "^[a-z0-9]+$"), Some(true));
        assert_eq!(includes("^System$", "^[A-Za-z]+$"), Some(true));
        // Unanchored: the new pattern only has to be found somewhere.
        assert_eq!(includes("^abc$", "b"), Some(true));
    }

    #[test]
    fn a_narrowed_pattern_does_not() {
        assert_eq!(
            includes("^(http|https|socks5)://.+$", "^http(s)?://.+$"),
            Some(false)
        );
        assert_eq!(includes("^[a-z0-9]+$", "^[a-z]+$"), Some(false));
        assert_eq!(includes("b", "^abc$"), Some(false));
        // Go's \d is ASCII only, as it is in the translation.
        assert_eq!(includes("^[0-9]+$", "^\\d+$"), Some(true));
    }

    #[test]
    fn what_cannot_be_decided_says_so() {
        assert_eq!(includes("(", "a"), None);
    }
}
