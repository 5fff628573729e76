//! The CEL types of the type checker ([`super::check`]) and of the
//! overload table ([`super::sigs`]), in a file of their own so that
//! both can use them.

use super::decl::{Decl, Shape};

/// A CEL type.
#[derive(Debug, Clone)]
pub enum Ty<'a> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List(Box<Ty<'a>>),
    Map(Box<Ty<'a>>, Box<Ty<'a>>),
    /// A schema object (cel-go's struct kind).
    Object(Decl<'a>),
    Opt(Box<Ty<'a>>),
    /// A Kubernetes library type (`quantity`, `ip`, `cidr`, `url`,
    /// `semver`, `format`).
    Lib(&'static str),
    /// A type value (`string`, `int`, `type(x)`).
    Type,
    Dyn,
    /// Not typed here.
    Unknown,
}

impl<'a> Ty<'a> {
    /// The CEL type the server declares for a schema node.
    pub fn of(d: Decl<'a>) -> Ty<'a> {
        match d.shape() {
            Shape::Bool => Ty::Bool,
            Shape::Int => Ty::Int,
            Shape::Double => Ty::Double,
            Shape::String => Ty::String,
            Shape::Bytes => Ty::Bytes,
            Shape::Duration => Ty::Duration,
            Shape::Timestamp => Ty::Timestamp,
            Shape::Dyn => Ty::Dyn,
            Shape::List(e) => Ty::List(Box::new(Ty::of(e))),
            Shape::Map(v) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of(v))),
            Shape::Object => Ty::Object(d),
        }
    }

    /// Scalars have a size of 1 (`isScalar`).
    pub fn is_scalar(&self) -> bool {
        match self {
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Timestamp => true,
            Ty::Opt(t) => t.is_scalar(),
            _ => false,
        }
    }

    pub fn is_dynamic(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Unknown)
    }

    pub fn elem(&self) -> Ty<'a> {
        match self {
            Ty::List(e) => (**e).clone(),
            Ty::Dyn => Ty::Dyn,
            _ => Ty::Unknown,
        }
    }

    /// The most specific type both branches of a conditional share.
    pub fn join(a: &Ty<'a>, b: &Ty<'a>) -> Ty<'a> {
        if a.same(b) {
            return a.clone();
        }
        match (a, b) {
            (Ty::Null, t) | (t, Ty::Null) => t.clone(),
            // An accumulator that started as `[]` takes the other branch's
            // element type (a `filter` step).
            (Ty::List(x), other) | (other, Ty::List(x))
                if matches!(**x, Ty::Unknown) && matches!(other, Ty::List(_)) =>
            {
                other.clone()
            }
            (Ty::Unknown, _) | (_, Ty::Unknown) => Ty::Unknown,
            _ => Ty::Dyn,
        }
    }

    /// Type equality, schema objects by identity.
    pub fn same(&self, other: &Ty<'a>) -> bool {
        match (self, other) {
            (Ty::List(a), Ty::List(b)) | (Ty::Opt(a), Ty::Opt(b)) => a.same(b),
            (Ty::Map(k1, v1), Ty::Map(k2, v2)) => k1.same(k2) && v1.same(v2),
            (Ty::Object(a), Ty::Object(b)) => a.same(b),
            (Ty::Lib(a), Ty::Lib(b)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}
