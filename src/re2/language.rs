//! What a `pattern` allows, as a regular language: whether a new pattern
//! matches every string an old one matches, and the few strings a
//! const-like pattern (`^(Always|Never)$`) allows.
//!
//! Patterns are regular languages (RE2 has no back-references), so both are
//! decidable on a DFA of the strings a pattern finds a match in (`pattern`
//! is an unanchored search). Inclusion walks the pair of DFAs from their
//! start over every byte, looking for a string the old one accepts and the
//! new one does not; a finite language is read off a DFA without a cycle
//! that can still reach a match. Patterns whose DFA would be large, or that
//! use what a DFA cannot express (Unicode word boundaries), stay undecided.

use std::collections::HashSet;

use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input, MatchKind};

use super::translate_go;

/// Memory one DFA may take; beyond it the answer is undecided.
const DFA_LIMIT: usize = 1 << 21;

/// Pairs of states walked before the answer is undecided.
const MAX_PAIRS: usize = 50_000;

/// `Some(true)` when every string `old` finds a match in, `new` finds one
/// in too; `Some(false)` when some string tells them apart; `None` when it
/// cannot be decided here.
pub(crate) fn includes(old: &str, new: &str) -> Option<bool> {
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

/// The most strings a pattern may allow and still count as a few.
const MAX_STRINGS: usize = 64;

/// Every string `pattern` finds a match in, when there are at most
/// [`MAX_STRINGS`] of them; `None` when there are more, infinitely many,
/// or the pattern cannot be read.
pub(crate) fn finite_language(pattern: &str) -> Option<Vec<String>> {
    let dfa = language(pattern)?;
    let start = dfa
        .start_state_forward(&Input::new("").anchored(Anchored::Yes))
        .ok()?;
    let live = live_states(&dfa, start)?;
    let mut walk = Walk {
        dfa: &dfa,
        live: &live,
        path: Vec::new(),
        bytes: Vec::new(),
        out: Vec::new(),
    };
    walk.from(start).then_some(walk.out)
}

/// The states reachable from `start` that can still reach a match. A DFA
/// keeps states a match can no longer come from (an anchor already
/// passed), and those may loop; only a loop among live states makes the
/// language infinite.
fn live_states(dfa: &dense::DFA<Vec<u32>>, start: StateID) -> Option<HashSet<StateID>> {
    let mut edges: Vec<(StateID, StateID)> = Vec::new();
    let mut seen = HashSet::from([start]);
    let mut todo = vec![start];
    while let Some(state) = todo.pop() {
        for byte in 0..=255u8 {
            let next = dfa.next_state(state, byte);
            if dfa.is_dead_state(next) {
                continue;
            }
            if dfa.is_quit_state(next) {
                return None;
            }
            edges.push((state, next));
            if seen.insert(next) {
                if seen.len() > MAX_PAIRS {
                    return None;
                }
                todo.push(next);
            }
        }
    }
    let mut live: HashSet<StateID> = seen
        .iter()
        .copied()
        .filter(|s| dfa.is_match_state(dfa.next_eoi_state(*s)))
        .collect();
    loop {
        let before = live.len();
        for (from, to) in &edges {
            if live.contains(to) {
                live.insert(*from);
            }
        }
        if live.len() == before {
            return Some(live);
        }
    }
}

/// A depth-first walk over the live states, collecting the strings that
/// end in a match.
struct Walk<'a> {
    dfa: &'a dense::DFA<Vec<u32>>,
    live: &'a HashSet<StateID>,
    path: Vec<StateID>,
    bytes: Vec<u8>,
    out: Vec<String>,
}

impl Walk<'_> {
    /// `false` as soon as the language is infinite (a live state repeats on
    /// the path) or too large.
    fn from(&mut self, state: StateID) -> bool {
        if self.path.contains(&state) {
            return false;
        }
        let dfa = self.dfa;
        if dfa.is_match_state(dfa.next_eoi_state(state)) {
            match std::str::from_utf8(&self.bytes) {
                Ok(s) => self.out.push(s.to_string()),
                Err(_) => return false,
            }
            if self.out.len() > MAX_STRINGS {
                return false;
            }
        }
        self.path.push(state);
        for byte in 0..=255u8 {
            let next = dfa.next_state(state, byte);
            if !self.live.contains(&next) {
                continue;
            }
            self.bytes.push(byte);
            let finite = self.from(next);
            self.bytes.pop();
            if !finite {
                return false;
            }
        }
        self.path.pop();
        true
    }
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
    fn a_const_like_pattern_allows_a_few_strings() {
        assert_eq!(
            super::finite_language("^(Always|Never|IfNotPresent)$"),
            Some(vec![
                "Always".to_string(),
                "IfNotPresent".to_string(),
                "Never".to_string()
            ])
        );
        // Unanchored, or with a repetition: infinitely many.
        assert_eq!(super::finite_language("^(a|b)"), None);
        assert_eq!(super::finite_language("^a+$"), None);
    }

    #[test]
    fn what_cannot_be_decided_says_so() {
        assert_eq!(includes("(", "a"), None);
    }
}
