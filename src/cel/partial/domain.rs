//! The abstract values: what an expression can evaluate to over every
//! object the old schema allows.
//!
//! A value is a small set of concrete scalars, a range of numbers, a string
//! of bounded length, a list of bounded size whose elements share one
//! value, an object described by the schemas, or unknown. Every operation
//! over-approximates: its result holds every concrete result (an error
//! included), so a rule whose abstract result is only `true` is `true` on
//! every object.

use serde_json::Value;

use super::Site;

/// A concrete scalar.
#[derive(Debug, Clone)]
pub(super) enum Lit {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Double(f64),
    Str(String),
    /// A type value (`string`, `int`, what `type(x)` returns).
    Type(&'static str),
}

impl PartialEq for Lit {
    /// CEL's equality: numbers compare by value across int, uint and
    /// double; values of other different types are not equal.
    fn eq(&self, other: &Lit) -> bool {
        match (self, other) {
            (Lit::Null, Lit::Null) => true,
            (Lit::Bool(a), Lit::Bool(b)) => a == b,
            (Lit::Str(a), Lit::Str(b)) => a == b,
            (Lit::Type(a), Lit::Type(b)) => a == b,
            (a, b) => a.compare(b).is_some_and(|o| o.is_eq()),
        }
    }
}

impl Lit {
    pub(super) fn number(&self) -> Option<f64> {
        match self {
            Lit::Int(i) => Some(*i as f64),
            Lit::UInt(u) => Some(*u as f64),
            Lit::Double(d) => Some(*d),
            _ => None,
        }
    }

    pub(super) fn from_json(v: &Value) -> Option<Lit> {
        Some(match v {
            Value::Null => Lit::Null,
            Value::Bool(b) => Lit::Bool(*b),
            Value::String(s) => Lit::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Lit::Int(i),
                None => Lit::Double(n.as_f64()?),
            },
            _ => return None,
        })
    }

    /// Integers compare exactly (beyond 2^53 too), an integer and a double
    /// as doubles, as CEL does.
    pub(super) fn compare(&self, other: &Lit) -> Option<std::cmp::Ordering> {
        match (self, other) {
            (Lit::Str(a), Lit::Str(b)) => Some(a.cmp(b)),
            (Lit::Bool(a), Lit::Bool(b)) => Some(a.cmp(b)),
            (Lit::Int(a), Lit::Int(b)) => Some(a.cmp(b)),
            (Lit::UInt(a), Lit::UInt(b)) => Some(a.cmp(b)),
            (Lit::Int(a), Lit::UInt(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
            (Lit::UInt(a), Lit::Int(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
            (a, b) => a.number()?.partial_cmp(&b.number()?),
        }
    }
}

/// Bounds of a list's or a map's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Size {
    pub min: u64,
    pub max: u64,
}

impl Size {
    pub(super) const ANY: Size = Size {
        min: 0,
        max: u64::MAX,
    };
}

/// What an expression can evaluate to.
#[derive(Debug, Clone)]
pub(super) enum Abs<'s> {
    /// One of these scalars, or (with `error`) an evaluation error.
    Set { values: Vec<Lit>, error: bool },
    /// Any int in `lo..=hi`; never an error.
    Int { lo: i64, hi: i64 },
    /// Any double in `lo..=hi` (infinite ends for no bound); never an
    /// error.
    Dbl { lo: f64, hi: f64 },
    /// Any string of `min..=max` characters that is the part from
    /// character `skip` on (what `substring(skip)` returns) of a string
    /// all `facts` hold of. Never an error.
    Str {
        min: u64,
        max: u64,
        facts: Vec<StrFact<'s>>,
        skip: u64,
    },
    /// An object (or map) described by the schemas; never an error.
    Object(Site<'s>),
    /// A list whose elements are all described by one value.
    List(Box<Abs<'s>>, Size),
    /// A list of known elements.
    Items(Vec<Abs<'s>>),
    /// Anything, an error included.
    Any,
}

/// A regular fact about a string (`pattern` is found in it, or not,
/// searched from character `skip` on): the old schema's `pattern`, or a
/// condition of the rule on the branch being evaluated.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct StrFact<'s> {
    pub pattern: std::borrow::Cow<'s, str>,
    pub holds: bool,
    pub skip: u64,
    /// The condition in words when the rule established it; `None` for
    /// the old schema's pattern.
    pub checked: Option<String>,
}

/// Two abstract values are equal when they stand for the same
/// possibilities (not when the concrete values are equal): what a
/// comprehension's fixpoint and [`Abs::join`] ask.
impl PartialEq for Abs<'_> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Abs::Set {
                    values: a,
                    error: e,
                },
                Abs::Set {
                    values: b,
                    error: f,
                },
            ) => e == f && a.len() == b.len() && a.iter().all(|x| b.contains(x)),
            (Abs::Int { lo: a, hi: b }, Abs::Int { lo: c, hi: d }) => a == c && b == d,
            (Abs::Dbl { lo: a, hi: b }, Abs::Dbl { lo: c, hi: d }) => a == c && b == d,
            (
                Abs::Str {
                    min: a,
                    max: b,
                    facts: p,
                    skip: s,
                },
                Abs::Str {
                    min: c,
                    max: d,
                    facts: q,
                    skip: t,
                },
            ) => a == c && b == d && s == t && p == q,
            (Abs::Object(a), Abs::Object(b)) => {
                std::ptr::eq(a.old, b.old)
                    && match (a.new, b.new) {
                        (Some(x), Some(y)) => std::ptr::eq(x, y),
                        (None, None) => true,
                        _ => false,
                    }
            }
            (Abs::List(a, s), Abs::List(b, t)) => s == t && a == b,
            (Abs::Items(a), Abs::Items(b)) => a == b,
            // Two unknowns may be different values.
            _ => false,
        }
    }
}

/// A numeric value as a range: ints exactly, doubles as doubles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Range {
    Int(i64, i64),
    Dbl(f64, f64),
}

impl Range {
    /// The range as doubles, widened where an int has no exact double.
    pub(super) fn doubles(self) -> (f64, f64) {
        match self {
            Range::Int(lo, hi) => (to_f64_down(lo), to_f64_up(hi)),
            Range::Dbl(lo, hi) => (lo, hi),
        }
    }
}

fn to_f64_down(i: i64) -> f64 {
    let f = i as f64;
    if (f as i128) > i128::from(i) {
        f.next_down()
    } else {
        f
    }
}

fn to_f64_up(i: i64) -> f64 {
    let f = i as f64;
    if (f as i128) < i128::from(i) {
        f.next_up()
    } else {
        f
    }
}

impl<'s> Abs<'s> {
    pub(super) fn only(lit: Lit) -> Abs<'s> {
        Abs::Set {
            values: vec![lit],
            error: false,
        }
    }

    /// The one value this certainly is (the inverse of [`Abs::only`]):
    /// a call's literal argument, such as a pattern or an index.
    pub(super) fn known(&self) -> Option<&Lit> {
        match self {
            Abs::Set {
                values,
                error: false,
            } => match values.as_slice() {
                [lit] => Some(lit),
                _ => None,
            },
            _ => None,
        }
    }

    pub(super) fn error() -> Abs<'s> {
        Abs::Set {
            values: Vec::new(),
            error: true,
        }
    }

    pub(super) fn bools(t: bool, f: bool, error: bool) -> Abs<'s> {
        let mut values = Vec::new();
        if t {
            values.push(Lit::Bool(true));
        }
        if f {
            values.push(Lit::Bool(false));
        }
        Abs::Set { values, error }
    }

    /// The outcomes as a boolean: (can be true, can be false, can be an
    /// error or not a boolean).
    pub(super) fn truth(&self) -> (bool, bool, bool) {
        match self {
            Abs::Set { values, error } => {
                let mut out = (false, false, *error);
                for v in values {
                    match v {
                        Lit::Bool(true) => out.0 = true,
                        Lit::Bool(false) => out.1 = true,
                        _ => out.2 = true,
                    }
                }
                out
            }
            _ => (true, true, true),
        }
    }

    /// Whether this is certainly not a string (nor an error-free value
    /// of unknown type): a string function called on it has no overload.
    pub(super) fn never_string(&self) -> bool {
        match self {
            Abs::Int { .. } | Abs::Dbl { .. } | Abs::Object(_) | Abs::List(..) | Abs::Items(_) => {
                true
            }
            Abs::Set { values, .. } => {
                !values.is_empty() && values.iter().all(|v| !matches!(v, Lit::Str(_)))
            }
            Abs::Str { .. } | Abs::Any => false,
        }
    }

    /// Whether this is certainly a string, never an error.
    pub(super) fn always_string(&self) -> bool {
        match self {
            Abs::Str { .. } => true,
            Abs::Set {
                values,
                error: false,
            } => !values.is_empty() && values.iter().all(|v| matches!(v, Lit::Str(_))),
            _ => false,
        }
    }

    /// The value as one numeric range, when it is only numbers of one
    /// kind (ints, or doubles) and never an error.
    pub(super) fn range(&self) -> Option<Range> {
        match self {
            Abs::Int { lo, hi } => Some(Range::Int(*lo, *hi)),
            Abs::Dbl { lo, hi } => Some(Range::Dbl(*lo, *hi)),
            Abs::Set {
                values,
                error: false,
            } if !values.is_empty() => {
                if values.iter().all(|v| matches!(v, Lit::Int(_))) {
                    let ints = values.iter().filter_map(|v| match v {
                        Lit::Int(i) => Some(*i),
                        _ => None,
                    });
                    let lo = ints.clone().min()?;
                    Some(Range::Int(lo, ints.max()?))
                } else if values.iter().all(|v| matches!(v, Lit::Double(_))) {
                    let ds: Vec<f64> = values.iter().filter_map(Lit::number).collect();
                    if ds.iter().any(|d| d.is_nan()) {
                        return None;
                    }
                    let lo = ds.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = ds.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    Some(Range::Dbl(lo, hi))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// The value from a range: a single value as a set, so that equality
    /// and `in` stay exact.
    pub(super) fn of_range(r: Range) -> Abs<'s> {
        match r {
            Range::Int(lo, hi) if lo == hi => Abs::only(Lit::Int(lo)),
            Range::Int(lo, hi) => Abs::Int { lo, hi },
            Range::Dbl(lo, hi) if lo == hi => Abs::only(Lit::Double(lo)),
            Range::Dbl(lo, hi) => Abs::Dbl { lo, hi },
        }
    }

    /// The ints of a small range as a set, for `in` and equality.
    pub(super) fn enumerate(&self, limit: u64) -> Option<Abs<'s>> {
        match self {
            Abs::Int { lo, hi } if hi.abs_diff(*lo) < limit => Some(Abs::Set {
                values: (*lo..=*hi).map(Lit::Int).collect(),
                error: false,
            }),
            Abs::Set { .. } => Some(self.clone()),
            _ => None,
        }
    }

    /// Either value.
    pub(super) fn join(self, other: Abs<'s>) -> Abs<'s> {
        if self == other {
            return self;
        }
        match (self, other) {
            (
                Abs::Set {
                    mut values,
                    error: e,
                },
                Abs::Set {
                    values: more,
                    error: f,
                },
            ) => {
                for v in more {
                    if !values.contains(&v) {
                        values.push(v);
                    }
                }
                Abs::Set {
                    values,
                    error: e || f,
                }
            }
            (
                Abs::Str {
                    min: a,
                    max: b,
                    facts: p,
                    skip: s,
                },
                Abs::Str {
                    min: c,
                    max: d,
                    facts: q,
                    skip: t,
                },
            ) => {
                // What holds of both: the facts they share, about strings
                // cut at the same place.
                let (facts, skip) = if s == t {
                    (p.into_iter().filter(|f| q.contains(f)).collect(), s)
                } else {
                    (Vec::new(), 0)
                };
                Abs::Str {
                    min: a.min(c),
                    max: b.max(d),
                    facts,
                    skip,
                }
            }
            (a, b) => match (a.range(), b.range()) {
                (Some(Range::Int(a, b)), Some(Range::Int(c, d))) => Abs::Int {
                    lo: a.min(c),
                    hi: b.max(d),
                },
                (Some(Range::Dbl(a, b)), Some(Range::Dbl(c, d))) => Abs::Dbl {
                    lo: a.min(c),
                    hi: b.max(d),
                },
                _ => Abs::Any,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_widen_to_doubles_that_hold_them() {
        let big = (1_i64 << 53) + 1;
        let (lo, hi) = Range::Int(big, big).doubles();
        assert!(lo <= 9_007_199_254_740_992.0 && hi >= 9_007_199_254_740_994.0);
        assert_eq!(Range::Int(-3, 10).doubles(), (-3.0, 10.0));
    }

    #[test]
    fn joins_keep_what_both_sides_allow() {
        let a = Abs::Int { lo: 0, hi: 3 };
        let b = Abs::only(Lit::Int(7));
        assert_eq!(a.join(b), Abs::Int { lo: 0, hi: 7 });
        let s = Abs::only(Lit::Str("a".into())).join(Abs::only(Lit::Int(1)));
        assert!(matches!(s, Abs::Set { ref values, .. } if values.len() == 2));
        assert!(matches!(Abs::Any.join(Abs::only(Lit::Int(1))), Abs::Any));
    }
}
