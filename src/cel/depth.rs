//! The API server's limits on a rule's size and nesting, checked before any
//! parser sees it.
//!
//! The API server compiles rules with cel-go, which refuses an expression
//! longer than 100,000 code points, nested deeper than 250 of one grammar
//! rule while parsing, or deeper than 250 operator nodes (`?:`, relations,
//! `+ - * / %`, `.` selections, method calls and `[]`) on any path of its
//! tree. The `cel` crate's parser and our own tree walkers recurse once per
//! level and have no such bound for chains: `self + self + ...` a few
//! thousand terms long overflowed a thread's stack, which aborts the
//! process (a CLI run, or `serve` for every review in flight). A forged
//! review reaches `serve` without the API server's check, and a manifest on
//! disk was never checked by anyone.
//!
//! [`refusal`] reads the tokens once, without building a tree, and counts
//! a lower bound of cel-go's operator depth (exact for chains of binary
//! operators, selections, calls and indexes; a ternary's condition counts
//! one level short) and the nesting of the grammar's `expr` (brackets,
//! arguments, a ternary's `else`). So it refuses only what cel-go refuses
//! (the live `crd_validation` cases sit on each side of both limits on
//! three API server versions): a rule it lets through is at most 250
//! operator levels and 250 levels of nesting deep, which the threads that
//! judge rules have the stack for ([`crate::parallel::STACK_BYTES`]).
//! Evaluating objects goes through `compile_schema`, whose parser reads 96
//! levels of nesting: deeper rules are reported as not evaluated
//! ([`unreadable`]), never handed to it.

/// cel-go's parser default, which Kubernetes keeps: operator levels on a
/// path, and nesting of one grammar rule.
pub const MAX_DEPTH: u32 = 250;

/// cel-go's `ExpressionSizeCodePointLimit` default, which Kubernetes keeps.
pub const MAX_CODE_POINTS: usize = 100_000;

/// Why the API server's CEL parser refuses `src` on its size or depth
/// alone, in its words; `None` when it does not (the rule may still not
/// parse, which the parser then says).
pub fn refusal(src: &str) -> Option<String> {
    past(src, MAX_DEPTH)
}

/// The `expr` nesting the `cel` crate's parser reads (its default, which
/// `compile_schema` uses). Past it the parser errs, and on a chain of
/// ternaries a debug build's overflow check panics on the way out, so
/// nothing nested deeper is handed to it.
pub const CEL_CRATE_NESTING: u32 = 96;

/// Why `src` is not handed to a CEL parser: [`refusal`], or nesting past
/// what the `cel` crate reads (a rule the API server accepts, which then
/// cannot be checked or evaluated here; no real rule comes close).
pub fn unreadable(src: &str) -> Option<String> {
    past(src, CEL_CRATE_NESTING)
}

/// Why `src` is past the server's limits, or nested deeper than `nesting`
/// (at most [`MAX_DEPTH`]), from one pass over it.
fn past(src: &str, nesting: u32) -> Option<String> {
    let size = src.chars().count();
    if size > MAX_CODE_POINTS {
        return Some(format!(
            "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        ));
    }
    let m = measure(src);
    if m.nesting > MAX_DEPTH {
        Some(format!("expression recursion limit exceeded: {MAX_DEPTH}"))
    } else if m.levels > MAX_DEPTH {
        Some("max recursion depth exceeded".to_string())
    } else if m.nesting > nesting {
        Some(format!(
            "nested {} levels deep, more than the {nesting} crd-safety reads \
             (the API server reads {MAX_DEPTH})",
            m.nesting
        ))
    } else {
        None
    }
}

/// How deep an expression goes, as cel-go's two limits count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Operator nodes on the deepest path (a lower bound: a ternary's
    /// condition counts one short).
    pub levels: u32,
    /// The grammar's `expr` rule inside itself: brackets, call arguments,
    /// indexes and the `else` of a ternary each open one more.
    pub nesting: u32,
}

/// [`Measure`] of `src`, in one pass over its tokens.
pub fn measure(src: &str) -> Measure {
    let mut scan = Scan::default();
    let mut lex = Lexer {
        b: src.as_bytes(),
        at: 0,
    };
    while let Some(tok) = lex.next() {
        scan.take(tok);
        // Past this, the count is all a caller needs.
        if scan.nesting > 2 * MAX_DEPTH {
            break;
        }
    }
    let nesting = scan.nesting;
    Measure {
        levels: scan.finish(),
        nesting,
    }
}

/// What [`refusal`] needs to know of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// An identifier, literal or reserved word that is not an operator.
    Operand,
    /// `.` (a selection, or a leading dot of a qualified name).
    Dot,
    /// A binary operator that makes a node: its precedence (relations 1,
    /// `+ -` 2, `* / %` 3).
    Binary(u8),
    /// `||` or `&&`: a node cel-go balances and does not count.
    Logic,
    /// `!`.
    Not,
    /// `-`, unary or binary by what precedes it.
    Minus,
    Question,
    Colon,
    Comma,
    Open(u8),
    Close,
}

struct Lexer<'a> {
    b: &'a [u8],
    at: usize,
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> u8 {
        self.b.get(self.at + k).copied().unwrap_or(0)
    }

    fn next(&mut self) -> Option<Tok> {
        loop {
            let c = self.peek(0);
            match c {
                0 if self.at >= self.b.len() => return None,
                b' ' | b'\t' | b'\n' | b'\r' | 0x0c => self.at += 1,
                b'/' if self.peek(1) == b'/' => {
                    while self.at < self.b.len() && self.b[self.at] != b'\n' {
                        self.at += 1;
                    }
                }
                _ => break,
            }
        }
        let c = self.peek(0);
        let two = [c, self.peek(1)];
        let (tok, len) = match &two {
            b"||" | b"&&" => (Tok::Logic, 2),
            b"==" | b"!=" | b"<=" | b">=" => (Tok::Binary(1), 2),
            _ => match c {
                b'<' | b'>' => (Tok::Binary(1), 1),
                b'+' => (Tok::Binary(2), 1),
                b'*' | b'/' | b'%' => (Tok::Binary(3), 1),
                b'-' => (Tok::Minus, 1),
                b'!' => (Tok::Not, 1),
                b'?' => (Tok::Question, 1),
                b':' => (Tok::Colon, 1),
                b',' => (Tok::Comma, 1),
                b'.' if !self.peek(1).is_ascii_digit() => (Tok::Dot, 1),
                b'(' | b'[' | b'{' => (Tok::Open(c), 1),
                b')' | b']' | b'}' => (Tok::Close, 1),
                b'"' | b'\'' => {
                    self.string(false);
                    return Some(Tok::Operand);
                }
                b'`' => {
                    // A quoted field name: up to the next backquote.
                    self.at += 1;
                    while self.at < self.b.len() && self.b[self.at] != b'`' {
                        self.at += 1;
                    }
                    self.at += 1;
                    return Some(Tok::Operand);
                }
                b'0'..=b'9' | b'.' => {
                    self.number();
                    return Some(Tok::Operand);
                }
                _ if c == b'_' || c.is_ascii_alphabetic() => return Some(self.word()),
                // Anything else is not CEL; the parser will say so.
                _ => (Tok::Operand, 1),
            },
        };
        self.at += len;
        Some(tok)
    }

    /// A word: `in` (a relation), a string's prefix, or a name.
    fn word(&mut self) -> Tok {
        let start = self.at;
        while self.peek(0) == b'_' || self.peek(0).is_ascii_alphanumeric() {
            self.at += 1;
        }
        let word = &self.b[start..self.at];
        let quote = matches!(self.peek(0), b'"' | b'\'');
        if quote && word.len() <= 2 && word.iter().all(|c| b"rRbB".contains(c)) {
            self.string(word.iter().any(|c| matches!(c, b'r' | b'R')));
            return Tok::Operand;
        }
        if word == b"in" {
            Tok::Binary(1)
        } else {
            Tok::Operand
        }
    }

    /// A quoted string at `at`, single or triple quoted.
    fn string(&mut self, raw: bool) {
        let q = self.peek(0);
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.at += if triple { 3 } else { 1 };
        while self.at < self.b.len() {
            let c = self.b[self.at];
            if c == b'\\' && !raw {
                self.at += 2;
                continue;
            }
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.at += if triple { 3 } else { 1 };
                return;
            }
            self.at += 1;
        }
    }

    /// A number: digits, hex, a fraction, an exponent with its sign, `u`.
    fn number(&mut self) {
        let hex = self.peek(0) == b'0' && matches!(self.peek(1), b'x' | b'X');
        if hex {
            self.at += 2;
        }
        loop {
            let c = self.peek(0);
            let sign = matches!(c, b'+' | b'-')
                && !hex
                && matches!(self.b.get(self.at.wrapping_sub(1)), Some(b'e' | b'E'));
            let fraction = c == b'.' && self.peek(1).is_ascii_digit();
            if c.is_ascii_alphanumeric() || c == b'_' || sign || fraction {
                self.at += 1;
            } else {
                return;
            }
        }
    }
}

/// What a bracket opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// `(`, `[` or `{` with no operand before it: a group, list or map.
    Value,
    /// `f(`: a global call (no node cel-go counts).
    Call,
    /// `x.f(`: a method call (counted at the `.`).
    Method,
    /// `x[`: an index.
    Index,
    /// `T{`: a message.
    Message,
}

/// One bracket level's operators, as cel-go's tree will have them.
#[derive(Default)]
struct Frame {
    /// Operands already followed by an operator, grouped by the lowest
    /// precedence after them (later operators of that precedence or lower
    /// are their ancestors): (precedence, deepest path), precedences
    /// increasing.
    groups: Vec<(u8, u32)>,
    /// The operators before the next operand that will be its ancestors
    /// (precedences strictly increasing).
    before: Vec<u8>,
    /// The operand being read: its ancestors counted so far and its own
    /// depth.
    operand: Option<(u32, u32)>,
    /// Whether the operand ended in `.name` (so `(` makes a method call).
    selected: bool,
    /// Ternaries this level is inside: the `?` not yet met by their `:`,
    /// and the `:` passed.
    questions: u32,
    elses: u32,
    /// The deepest path of the parts of this level already read.
    deepest: u32,
    /// How this level was opened (the root: `Value`).
    opened: Option<Opened>,
    /// The `expr` rules open around this level.
    outer: u32,
}

impl Frame {
    /// Ends the run of operators: nothing after this is an ancestor of
    /// what came before.
    fn settle(&mut self) {
        let operand = self.operand.take().map_or(0, |(a, d)| a + d);
        let groups = self.groups.drain(..).map(|(_, d)| d).max().unwrap_or(0);
        self.deepest = self.deepest.max(operand).max(groups);
        self.before.clear();
        self.selected = false;
    }

    /// A new operand of depth `own` starts here.
    fn start(&mut self, own: u32) {
        let ancestors = self.before.len() as u32 + self.elses + self.questions;
        self.operand = Some((ancestors, own));
        self.selected = false;
    }

    /// A binary operator of precedence `p` (a node cel-go counts).
    fn binary(&mut self, p: u8) {
        let mut deepest = self.operand.take().map_or(0, |(a, d)| a + d);
        while let Some(&(q, d)) = self.groups.last() {
            if q < p {
                break;
            }
            deepest = deepest.max(d);
            self.groups.pop();
        }
        self.groups.push((p, deepest + 1));
        while self.before.last().is_some_and(|&q| q >= p) {
            self.before.pop();
        }
        self.before.push(p);
        self.selected = false;
    }
}

#[derive(Default)]
struct Scan {
    frames: Vec<Frame>,
    root: Frame,
    /// The token before this one.
    last: Option<Tok>,
    /// The deepest `expr` nesting met.
    nesting: u32,
}

impl Scan {
    fn top(&mut self) -> &mut Frame {
        self.frames.last_mut().unwrap_or(&mut self.root)
    }

    fn take(&mut self, tok: Tok) {
        let after_dot = self.last.replace(tok) == Some(Tok::Dot);
        let f = self.top();
        let has_operand = f.operand.is_some();
        let after_operand = has_operand && !after_dot;
        match tok {
            // A name after a dot is the selection's; counted at the dot.
            Tok::Operand if has_operand => {}
            Tok::Operand => f.start(0),
            Tok::Dot if after_operand => {
                // `.name`, `.?name` or `.name(`: one node.
                if let Some((_, d)) = f.operand.as_mut() {
                    *d += 1;
                }
                f.selected = true;
            }
            Tok::Dot => {}
            Tok::Binary(p) if after_operand => f.binary(p),
            Tok::Minus if after_operand => f.binary(2),
            // Unary `!` and `-` repeat without nesting in cel-go's tree; a
            // stray binary operator is the parser's to refuse.
            Tok::Binary(_) | Tok::Minus | Tok::Not => {}
            Tok::Logic => f.settle(),
            // `a ? b : c`; after a dot, `.?name` (optional syntax).
            Tok::Question if after_operand => {
                f.settle();
                f.questions += 1;
            }
            // `.?`, `[?` and `{?`: optional syntax, no node of its own.
            Tok::Question => {}
            Tok::Colon => {
                f.settle();
                if f.questions > 0 {
                    f.questions -= 1;
                    f.elses += 1;
                    let here = f.outer + 1 + f.elses;
                    self.nesting = self.nesting.max(here);
                } else {
                    // A map entry's key ends: its value starts afresh.
                    f.elses = 0;
                }
            }
            Tok::Comma => {
                f.settle();
                f.questions = 0;
                f.elses = 0;
            }
            Tok::Open(c) => {
                let opened = match (c, after_operand, f.selected) {
                    (b'(', true, true) => Opened::Method,
                    (b'(', true, false) => Opened::Call,
                    (b'[', true, _) => Opened::Index,
                    (b'{', true, _) => Opened::Message,
                    _ => Opened::Value,
                };
                if opened == Opened::Value {
                    f.start(0);
                }
                let outer = f.outer + 1 + f.elses;
                self.nesting = self.nesting.max(outer + 1);
                self.frames.push(Frame {
                    opened: Some(opened),
                    outer,
                    ..Frame::default()
                });
            }
            Tok::Close => {
                let Some(mut inner) = self.frames.pop() else {
                    return;
                };
                inner.settle();
                let d = inner.deepest;
                let f = self.top();
                if let Some((_, own)) = f.operand.as_mut() {
                    *own = match inner.opened {
                        Some(Opened::Index) => (*own + 1).max(d + 1),
                        Some(Opened::Method) => (*own).max(d + 1),
                        _ => (*own).max(d),
                    };
                }
                f.selected = false;
            }
        }
    }

    /// The deepest path of the whole expression (unclosed brackets closed).
    fn finish(mut self) -> u32 {
        while !self.frames.is_empty() {
            self.take(Tok::Close);
        }
        self.root.settle();
        self.root.deepest
    }
}

/// Rules on an integer `self` as deep as the API server accepts, each at
/// one of its limits or both, and as many past them; for the tests that
/// judge and evaluate them on a thread of [`crate::parallel::STACK_BYTES`].
#[cfg(test)]
pub(crate) fn deepest_rules() -> (Vec<String>, Vec<String>) {
    let chain = |n: usize| format!("self{} > 0", " + self".repeat(n));
    let nested_chain = |lists: usize, n: usize| {
        format!(
            "{}self{}{} != []",
            "[".repeat(lists),
            " + self".repeat(n),
            "]".repeat(lists)
        )
    };
    let ternaries = |n: usize| format!("{}self > 1", "self > 0 ? true : ".repeat(n));
    let indexes = |n: usize| {
        format!(
            "{}self{}{} > 0",
            "[".repeat(n),
            "]".repeat(n),
            "[0]".repeat(n)
        )
    };
    let macros_over = |n: usize, chain: usize| {
        let last = n.saturating_sub(1);
        let mut body = format!("v{last}{} > 0", " + self".repeat(chain));
        for i in (0..n).rev() {
            let over = if i == 0 {
                "self".to_string()
            } else {
                format!("v{}", i - 1)
            };
            body = format!("[{over}].all(v{i}, {body})");
        }
        body
    };
    let macros = |n: usize| macros_over(n, 0);
    let groups = |n: usize| format!("{}self{} > 0", "(self + ".repeat(n), ")".repeat(n));
    // At the server's limits, and within the 96 levels of nesting the
    // `cel` crate's parser reads (so that these are evaluated too).
    let accepted = vec![
        chain(249),
        nested_chain(248, 249),
        ternaries(249),
        indexes(249),
        macros(249),
        groups(248),
        nested_chain(94, 249),
        ternaries(94),
        indexes(94),
        macros(94),
        groups(94),
        macros_over(94, 155),
    ];
    let refused = vec![
        chain(250),
        chain(20_000),
        nested_chain(250, 10),
        nested_chain(10, 250),
        ternaries(250),
        indexes(250),
        macros(250),
        groups(250),
        format!("{}self{}", "(".repeat(20_000), ")".repeat(20_000)),
        format!("self{} == 1", ".a".repeat(20_000)),
    ];
    (accepted, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(src: &str) -> u32 {
        measure(src).levels
    }

    #[test]
    fn operator_levels_are_counted_as_cel_go_nests_them() {
        for (src, levels) in [
            ("self", 0),
            ("self > 0", 1),
            ("self + 1 > 0", 2),
            ("a + b * c + d", 3),
            ("a * b + c", 2),
            ("a < b + c * d", 3),
            ("a - -b", 1),
            ("!!!!a", 0),
            ("a || b && c || d", 0),
            ("a.b.c.d", 3),
            ("a.b().c(x.y.z)", 3),
            ("a[0][1]", 2),
            ("a[b.c.d]", 3),
            ("f(a + b + c)", 2),
            ("[a + b, [c.d.e.f]]", 3),
            ("{'k': a.b, 'l': c ? d : e.f}", 2),
            ("c ? a : b", 1),
            ("c ? a.b : d ? e : f.g.h", 4),
            ("self.all(x, x.a.b > 0)", 4),
            ("(a + b) * c", 2),
            ("(((a)))", 0),
            ("a.?b.c", 2),
            ("[?a, ?b.c]", 1),
            ("1e+5 + 2.5e-3 > 0x1F", 2),
            (r"'a + b + c' + r'\d+' + d > b'\x00' // + + +", 3),
            (r#"r"\" + "\"" + """a"b""" > x"#, 3),
            ("'''a'b + c''' + x", 1),
            ("a in b", 1),
            ("`a-b`.c + d", 2),
        ] {
            assert_eq!(depth(src), levels, "{src}");
        }
    }

    /// The boundary as the real API server draws it (tests/live/
    /// crd_validation.rs creates CRDs on both sides of it).
    #[test]
    fn a_chain_is_refused_one_operator_past_the_servers_limit() {
        let chain = |n: usize| format!("self{} > 0", " + self".repeat(n));
        assert_eq!(refusal(&chain(249)), None);
        assert_eq!(
            refusal(&chain(250)).as_deref(),
            Some("max recursion depth exceeded")
        );
        let select = |n: usize| format!("self{} == 1", ".a".repeat(n));
        assert_eq!(refusal(&select(249)), None);
        assert!(refusal(&select(250)).is_some());
    }

    #[test]
    fn nesting_and_size_past_the_servers_limits_are_refused() {
        // The whole expression is one `expr`; each bracket opens another.
        let nested = |n: usize| format!("{}self{} > 0", "[".repeat(n), "]".repeat(n));
        assert_eq!(measure(&nested(249)).nesting, 250);
        assert_eq!(refusal(&nested(249)), None);
        assert_eq!(
            refusal(&nested(250)).as_deref(),
            Some("expression recursion limit exceeded: 250")
        );
        // So does each `else` of a chain of ternaries.
        let ternaries = |n: usize| format!("{}0", "self ? 1 : ".repeat(n));
        assert_eq!(measure(&ternaries(249)).nesting, 250);
        assert!(refusal(&ternaries(250)).is_some());
        assert_eq!(measure("f(a ? b : [c ? d : e])").nesting, 5);
        // Unclosed brackets count as deep as they go.
        assert!(refusal(&"(".repeat(10_000)).is_some());
        let long = format!("self == '{}'", "é".repeat(MAX_CODE_POINTS));
        assert!(
            refusal(&long)
                .unwrap_or_default()
                .starts_with("expression code point size exceeds limit")
        );
        // Long without nesting is fine: `&&` and `||` are balanced.
        assert_eq!(refusal(&vec!["self > 0"; 5000].join(" && ")), None);
    }

    #[test]
    fn the_deepest_rules_are_on_the_right_side_of_the_limits() {
        let (accepted, refused) = deepest_rules();
        for r in &accepted {
            assert_eq!(refusal(r), None, "{}", &r[..80]);
            let m = measure(r);
            assert!(m.levels >= 95 || m.nesting >= 95, "{m:?}: {}", &r[..80]);
        }
        for r in &refused {
            assert!(refusal(r).is_some(), "{}", &r[..80]);
        }
    }

    #[test]
    fn chains_inside_brackets_add_up() {
        // Each level: a group, then 100 operators over it.
        let mut src = "self".to_string();
        for _ in 0..3 {
            src = format!("({src}){}", " + self".repeat(100));
        }
        assert_eq!(depth(&src), 300);
        assert!(refusal(&format!("{src} > 0")).is_some());
    }
}
