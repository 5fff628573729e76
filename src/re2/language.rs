//! What a `pattern` allows, as a regular language: whether a new pattern
//! matches every string an old one matches, or every string several facts
//! hold of (the old pattern, and what a CEL rule checked on the way), the
//! few strings a const-like pattern (`^(Always|Never)$`) allows, and the
//! lengths a pattern anchored at both ends allows.
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
use regex_automata::nfa::thompson;
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
    implies(&[Fact::found(old)], &Fact::found(new))
}

/// What a regular expression says of a string: `pattern` finds a match in
/// it (`holds`) or does not, searched from its `skip`-th character on
/// (the string CEL's `substring(skip)` returns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fact<'a> {
    pub pattern: &'a str,
    pub holds: bool,
    pub skip: usize,
}

impl<'a> Fact<'a> {
    pub(crate) fn found(pattern: &'a str) -> Fact<'a> {
        Fact {
            pattern,
            holds: true,
            skip: 0,
        }
    }
}

/// Where one fact's search stands: still skipping characters (the count
/// left; at zero, the continuation bytes of the last one skipped), or in a
/// state of its DFA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum At {
    Skip(usize),
    In(StateID),
}

struct Track {
    dfa: dense::DFA<Vec<u32>>,
    start: StateID,
    skip: usize,
    holds: bool,
}

impl Track {
    fn new(fact: &Fact<'_>) -> Option<Track> {
        let dfa = language(fact.pattern)?;
        let start = dfa
            .start_state_forward(&Input::new("").anchored(Anchored::Yes))
            .ok()?;
        Some(Track {
            dfa,
            start,
            skip: fact.skip,
            holds: fact.holds,
        })
    }

    fn first(&self) -> At {
        if self.skip == 0 {
            At::In(self.start)
        } else {
            At::Skip(self.skip)
        }
    }

    /// The next place after `byte`; `None` when the DFA gives up.
    fn next(&self, at: At, byte: u8) -> Option<At> {
        let continuation = byte & 0xC0 == 0x80;
        let state = match at {
            At::Skip(left) if continuation => return Some(At::Skip(left)),
            At::Skip(left) if left > 0 => return Some(At::Skip(left - 1)),
            At::Skip(_) => self.dfa.next_state(self.start, byte),
            At::In(s) => self.dfa.next_state(s, byte),
        };
        (!self.dfa.is_quit_state(state)).then_some(At::In(state))
    }

    /// Whether the fact holds of the string read so far; `None` when the
    /// string is shorter than `skip` (`substring` fails on it).
    fn holds_at_end(&self, at: At) -> Option<bool> {
        let found = |s: StateID| self.dfa.is_match_state(self.dfa.next_eoi_state(s));
        match at {
            At::Skip(left) if left > 0 => None,
            At::Skip(_) => Some(found(self.start) == self.holds),
            At::In(s) => Some(found(s) == self.holds),
        }
    }

    /// No string through here can satisfy the fact any more.
    fn dead(&self, at: At) -> bool {
        self.holds && matches!(at, At::In(s) if self.dfa.is_dead_state(s))
    }
}

/// `Some(true)` when every string of which all `given` facts hold (and
/// that is long enough for their `skip`) satisfies `then` (and is long
/// enough for its `skip`); `Some(false)` when some string does not;
/// `None` when it cannot be decided here. Only valid UTF-8 strings count,
/// as CEL strings and JSON hold no other.
pub(crate) fn implies(given: &[Fact<'_>], then: &Fact<'_>) -> Option<bool> {
    let owned = |f: &Fact<'_>| (f.pattern.to_string(), f.holds, f.skip);
    let key = (given.iter().map(owned).collect(), owned(then));
    IMPLIED.get_or(key, || implies_walk(given, then))
}

fn implies_walk(given: &[Fact<'_>], then: &Fact<'_>) -> Option<bool> {
    // The empty pattern is found in every valid UTF-8 string, and in no
    // other: it keeps the walk to strings.
    let mut tracks = vec![Track::new(&Fact::found(""))?];
    for g in given {
        tracks.push(Track::new(g)?);
    }
    let last = tracks.len();
    tracks.push(Track::new(then)?);
    let first: Vec<At> = tracks.iter().map(Track::first).collect();
    let mut seen: HashSet<Vec<At>> = HashSet::from([first.clone()]);
    let mut todo = vec![first];
    while let Some(at) = todo.pop() {
        let given_hold = tracks[..last]
            .iter()
            .zip(&at)
            .all(|(t, a)| t.holds_at_end(*a) == Some(true));
        if given_hold && tracks[last].holds_at_end(at[last]) != Some(true) {
            return Some(false);
        }
        'bytes: for byte in 0..=255u8 {
            let mut next = Vec::with_capacity(at.len());
            for (i, (t, a)) in tracks.iter().zip(&at).enumerate() {
                let n = t.next(*a, byte)?;
                if i < last && t.dead(n) {
                    continue 'bytes;
                }
                next.push(n);
            }
            if !seen.contains(&next) {
                if seen.len() >= MAX_PAIRS {
                    return None;
                }
                seen.insert(next.clone());
                todo.push(next);
            }
        }
    }
    Some(true)
}

/// The fewest and the most characters (code points, as CEL and the API
/// server count them) a string `pattern` finds a match in can have when
/// the pattern bounds them: `(min, Some(max))`, or `(min, None)` when
/// strings can be as long as they like. `None` when the pattern cannot
/// be read or matches nothing.
pub(crate) fn length_bounds(pattern: &str) -> Option<(u64, Option<u64>)> {
    LENGTHS.get_or(pattern.to_string(), || length_bounds_walk(pattern))
}

fn length_bounds_walk(pattern: &str) -> Option<(u64, Option<u64>)> {
    let dfa = language(pattern)?;
    let start = dfa
        .start_state_forward(&Input::new("").anchored(Anchored::Yes))
        .ok()?;
    let live = live_states(&dfa, start)?;
    if !live.contains(&start) || live.len() > MAX_LENGTH_STATES {
        return None;
    }
    let weight = |byte: u8| u64::from(byte & 0xC0 != 0x80);
    let accepts = |s: StateID| dfa.is_match_state(dfa.next_eoi_state(s));
    // Fewest: a 0-1 breadth-first walk (continuation bytes cost nothing).
    let mut dist: std::collections::HashMap<StateID, u64> = [(start, 0)].into();
    let mut queue = std::collections::VecDeque::from([start]);
    let mut min = None;
    while let Some(s) = queue.pop_front() {
        let d = dist[&s];
        if accepts(s) {
            min = Some(min.map_or(d, |m: u64| m.min(d)));
        }
        for byte in 0..=255u8 {
            let n = dfa.next_state(s, byte);
            if !live.contains(&n) {
                continue;
            }
            let nd = d + weight(byte);
            if dist.get(&n).is_none_or(|old| nd < *old) {
                dist.insert(n, nd);
                if weight(byte) == 0 {
                    queue.push_front(n);
                } else {
                    queue.push_back(n);
                }
            }
        }
    }
    // Most: the longest path over the live states, none if they loop.
    let mut longest: std::collections::HashMap<StateID, Option<u64>> = Default::default();
    let max = longest_from(&dfa, &live, start, &mut longest, &mut HashSet::new());
    Some((min?, max))
}

/// Answers already worked out: the abstract evaluation asks the same
/// question of the same patterns for every rule, version and branch, and
/// each answer builds DFAs. Bounded, as `serve` judges what requests send.
struct Memo<K, V>(std::sync::Mutex<Option<std::collections::HashMap<K, V>>>);

type ImpliedKey = (Vec<(String, bool, usize)>, (String, bool, usize));
static IMPLIED: Memo<ImpliedKey, Option<bool>> = Memo::new();
static LENGTHS: Memo<String, Option<(u64, Option<u64>)>> = Memo::new();

/// Empties the answers, with the other pattern caches
/// ([`super::forget_patterns`]).
pub(super) fn forget() {
    IMPLIED.clear();
    LENGTHS.clear();
}

/// Answers kept before a memo starts over.
const MEMO_ENTRIES: usize = 1024;

impl<K: std::hash::Hash + Eq, V: Clone> Memo<K, V> {
    const fn new() -> Self {
        Memo(std::sync::Mutex::new(None))
    }

    fn clear(&self) {
        *super::locked(&self.0) = None;
    }

    fn get_or(&self, key: K, work: impl FnOnce() -> V) -> V {
        if let Some(known) = super::locked(&self.0).as_ref().and_then(|m| m.get(&key)) {
            return known.clone();
        }
        // Worked out without the lock: another thread may do the same work,
        // never wait on it.
        let value = work();
        let mut map = super::locked(&self.0);
        let map = map.get_or_insert_with(Default::default);
        if map.len() >= MEMO_ENTRIES {
            map.clear();
        }
        map.insert(key, value.clone());
        value
    }
}

/// Live states beyond which lengths are not worked out.
const MAX_LENGTH_STATES: usize = 4096;

/// The most characters read from `state` to a match; `None` when a loop
/// makes it unbounded.
fn longest_from(
    dfa: &dense::DFA<Vec<u32>>,
    live: &HashSet<StateID>,
    state: StateID,
    memo: &mut std::collections::HashMap<StateID, Option<u64>>,
    path: &mut HashSet<StateID>,
) -> Option<u64> {
    if let Some(known) = memo.get(&state) {
        return *known;
    }
    if !path.insert(state) {
        return None;
    }
    let mut best = dfa
        .is_match_state(dfa.next_eoi_state(state))
        .then_some(0u64);
    let mut bounded = true;
    for byte in 0..=255u8 {
        let next = dfa.next_state(state, byte);
        if !live.contains(&next) {
            continue;
        }
        match longest_from(dfa, live, next, memo, path) {
            Some(n) => {
                let n = n + u64::from(byte & 0xC0 != 0x80);
                best = Some(best.map_or(n, |b| b.max(n)));
            }
            None => bounded = false,
        }
        if !bounded {
            break;
        }
    }
    path.remove(&state);
    let out = if bounded { best } else { None };
    memo.insert(state, out);
    out
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
    // Backwards from the states that accept, over reversed edges: each
    // state is visited once (a fixpoint over all edges was quadratic in
    // the length a pattern bounds, seconds for a hostname pattern).
    let mut into: std::collections::HashMap<StateID, Vec<StateID>> = Default::default();
    for (from, to) in edges {
        into.entry(to).or_default().push(from);
    }
    let mut live: HashSet<StateID> = seen
        .iter()
        .copied()
        .filter(|s| dfa.is_match_state(dfa.next_eoi_state(*s)))
        .collect();
    let mut todo: Vec<StateID> = live.iter().copied().collect();
    while let Some(state) = todo.pop() {
        for from in into.get(&state).into_iter().flatten() {
            if live.insert(*from) {
                todo.push(*from);
            }
        }
    }
    Some(live)
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
        // The NFA first: without a limit of its own it was built whole
        // whatever the DFA's limit (a `\pL{1000}` took 100s of MB).
        .thompson(thompson::Config::new().nfa_size_limit(Some(DFA_LIMIT)))
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

    #[test]
    fn facts_together_imply_what_neither_implies_alone() {
        use super::{Fact, implies};
        let host = "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
        let rfc1123 = "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$";
        let no_star = Fact {
            pattern: "\\*",
            holds: false,
            skip: 0,
        };
        assert_eq!(includes(host, rfc1123), Some(false));
        assert_eq!(
            implies(&[Fact::found(host), no_star], &Fact::found(rfc1123)),
            Some(true)
        );
        // With a wildcard, what follows `*.` is a plain hostname.
        let star = Fact::found("\\*");
        let after_two = Fact {
            pattern: rfc1123,
            holds: true,
            skip: 2,
        };
        assert_eq!(implies(&[Fact::found(host), star], &after_two), Some(true));
        assert_eq!(implies(&[Fact::found(host)], &after_two), Some(false));
        // `substring(2)` fails on a string of one character.
        let two = Fact::found("");
        assert_eq!(
            implies(&[Fact::found("^a$")], &Fact { skip: 2, ..two }),
            Some(false)
        );
        // A fact that must not hold: no string of `^a+$` lacks an `a`.
        assert_eq!(
            implies(
                &[Fact::found("^a+$")],
                &Fact {
                    pattern: "b",
                    holds: false,
                    skip: 0
                }
            ),
            Some(true)
        );
    }

    #[test]
    fn a_bounded_pattern_bounds_the_length_in_characters() {
        use super::length_bounds;
        assert_eq!(length_bounds("^[a-z]{1,5}$"), Some((1, Some(5))));
        assert_eq!(length_bounds("^(ab|é)$"), Some((1, Some(2))));
        assert_eq!(length_bounds("^[a-z]+$"), Some((1, None)));
        // Unanchored: anything may come around the match.
        assert_eq!(length_bounds("[a-z]{1,5}"), Some((1, None)));
        assert_eq!(length_bounds("^x{0,3}"), Some((0, None)));
    }
}
