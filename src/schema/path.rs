//! Field paths in schema notation.
//!
//! A path starts at `^` (the object root). `.name` descends into a property,
//! `[*]` into list items and `{*}` into map values (`additionalProperties`):
//! `^.spec.ports[*].name`, `^.spec.selector.matchLabels{*}`. A property name
//! that contains `.`, brackets, braces, quotes or spaces is written
//! `["name"]`, so every path reads back unambiguously.

use std::fmt;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A named property.
    Property(String),
    /// List items.
    Items,
    /// Map values.
    MapValues,
}

/// A path from the root of a schema.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(Vec<Segment>);

impl FieldPath {
    /// `^`.
    pub fn root() -> Self {
        Self::default()
    }

    fn with(&self, s: Segment) -> Self {
        let mut v = Vec::with_capacity(self.0.len() + 1);
        v.extend_from_slice(&self.0);
        v.push(s);
        Self(v)
    }

    /// This path followed by property `name`.
    pub fn property(&self, name: &str) -> Self {
        self.with(Segment::Property(name.to_string()))
    }

    /// This path followed by `[*]`.
    pub fn items(&self) -> Self {
        self.with(Segment::Items)
    }

    /// This path followed by `{*}`.
    pub fn map_values(&self) -> Self {
        self.with(Segment::MapValues)
    }

    /// The steps of the path.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// The path one step up; the root is its own parent.
    pub fn parent(&self) -> Self {
        let mut v = self.0.clone();
        v.pop();
        Self(v)
    }

    /// Whether `self` is `other` or lies below it.
    pub fn starts_with(&self, other: &FieldPath) -> bool {
        self.0.starts_with(&other.0)
    }

    /// Whether the path goes through `.status` at the top, where only the
    /// controller writes.
    pub fn is_status(&self) -> bool {
        matches!(self.0.first(), Some(Segment::Property(p)) if p == "status")
    }
}

fn needs_quotes(name: &str) -> bool {
    name.is_empty()
        || name
            .chars()
            .any(|c| matches!(c, '.' | '[' | ']' | '{' | '}' | '"' | '^') || c.is_whitespace())
}

/// A path from its segments, root first: one allocation for the whole path
/// where appending step by step would copy the prefix at each step.
impl FromIterator<Segment> for FieldPath {
    fn from_iter<I: IntoIterator<Item = Segment>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("^")?;
        for seg in &self.0 {
            match seg {
                Segment::Property(name) if needs_quotes(name) => write!(f, "[{name:?}]")?,
                Segment::Property(name) => write!(f, ".{name}")?,
                Segment::Items => f.write_str("[*]")?,
                Segment::MapValues => f.write_str("{*}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_in_schema_notation() {
        let p = FieldPath::root()
            .property("spec")
            .property("ports")
            .items()
            .property("name");
        assert_eq!(p.to_string(), "^.spec.ports[*].name");
        let m = FieldPath::root()
            .property("metadata")
            .property("labels")
            .map_values();
        assert_eq!(m.to_string(), "^.metadata.labels{*}");
        let q = FieldPath::root().property("app.kubernetes.io/name");
        assert_eq!(q.to_string(), "^[\"app.kubernetes.io/name\"]");
        assert_eq!(FieldPath::root().to_string(), "^");
        assert!(p.starts_with(&FieldPath::root().property("spec")));
        assert!(
            FieldPath::root()
                .property("status")
                .property("x")
                .is_status()
        );
    }
}
