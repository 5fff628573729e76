//! Field paths in schema notation.
//!
//! A path starts at `^` (the object root). `.name` descends into a property,
//! `[*]` into list items and `{*}` into map values (`additionalProperties`):
//! `^.spec.ports[*].name`, `^.spec.selector.matchLabels{*}`. A property name
//! that contains `.`, brackets, braces, quotes or spaces is written
//! `["name"]`, so every path reads back unambiguously.

use std::fmt;

use super::Schema;

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

/// Where a walk over a schema is, as borrowed steps up to the root. The
/// [`FieldPath`] (one string per step) is built only where one is needed:
/// reading a schema wants it for an error, comparing two for a node that
/// differs, and most nodes are neither.
pub struct Trail<'a> {
    up: Option<&'a Trail<'a>>,
    step: Option<Step<'a>>,
    /// The schema of the object, list or map one step up, where the step
    /// was taken with it ([`Trail::property`], [`Trail::element`]).
    holder: Option<&'a Schema>,
}

/// One step of a [`Trail`].
#[derive(Clone, Copy)]
pub enum Step<'a> {
    Property(&'a str),
    Items,
    MapValues,
}

/// A step as a path renders it: `.name`, `["a.b"]`, `[*]`, `{*}`.
impl fmt::Display for Step<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Property(name) if needs_quotes(name) => write!(f, "[{name:?}]"),
            Step::Property(name) => write!(f, ".{name}"),
            Step::Items => f.write_str("[*]"),
            Step::MapValues => f.write_str("{*}"),
        }
    }
}

impl Step<'_> {
    /// What follows this step's rendering at the start of `text`, if it
    /// starts with it (written out only for the rare quoted name).
    pub fn strip_from<'t>(&self, text: &'t str) -> Option<&'t str> {
        match self {
            Step::Property(name) if needs_quotes(name) => {
                text.strip_prefix(format!("[{name:?}]").as_str())
            }
            Step::Property(name) => text.strip_prefix('.')?.strip_prefix(name),
            Step::Items => text.strip_prefix("[*]"),
            Step::MapValues => text.strip_prefix("{*}"),
        }
    }
}

impl<'a> Trail<'a> {
    /// `^`.
    pub const ROOT: Trail<'static> = Trail {
        up: None,
        step: None,
        holder: None,
    };

    /// One step further down.
    pub fn down(&'a self, step: Step<'a>) -> Trail<'a> {
        Trail {
            up: Some(self),
            step: Some(step),
            holder: None,
        }
    }

    /// Property `name` of `holder`, the schema of the object at this trail.
    pub fn property(&'a self, name: &'a str, holder: &'a Schema) -> Trail<'a> {
        Trail {
            holder: Some(holder),
            ..self.down(Step::Property(name))
        }
    }

    /// Items or map values (`step`) of `holder`, the list's or map's
    /// schema.
    pub fn element(&'a self, step: Step<'a>, holder: &'a Schema) -> Trail<'a> {
        Trail {
            holder: Some(holder),
            ..self.down(step)
        }
    }

    /// The list or map this is an element of, when the trail knows it.
    pub fn element_of(&self) -> Option<&'a Schema> {
        match self.step {
            Some(Step::Items | Step::MapValues) => self.holder,
            _ => None,
        }
    }

    /// Whether this is `^` itself.
    pub fn is_root(&self) -> bool {
        self.up.is_none()
    }

    /// Whether this is a property its holder lists in `required`.
    pub fn required_by_holder(&self) -> bool {
        match (self.step, self.holder) {
            (Some(Step::Property(name)), Some(holder)) => holder.required().contains(&name),
            _ => false,
        }
    }

    /// The path from the root.
    pub fn path(&self) -> FieldPath {
        let mut steps = Vec::new();
        let mut at = Some(self);
        while let Some(t) = at {
            steps.extend(t.step);
            at = t.up;
        }
        steps
            .into_iter()
            .rev()
            .map(|s| match s {
                Step::Property(name) => Segment::Property(name.to_string()),
                Step::Items => Segment::Items,
                Step::MapValues => Segment::MapValues,
            })
            .collect()
    }
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
                Segment::Property(name) => Step::Property(name).fmt(f)?,
                Segment::Items => Step::Items.fmt(f)?,
                Segment::MapValues => Step::MapValues.fmt(f)?,
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

    #[test]
    fn a_step_is_stripped_from_the_text_it_renders() {
        let names = ["spec", "a.b", "", "x y", "sp"];
        for name in names {
            let step = Step::Property(name);
            let text = format!("{step}.rest");
            assert_eq!(step.strip_from(&text), Some(".rest"), "{text}");
        }
        for step in [Step::Items, Step::MapValues] {
            assert_eq!(step.strip_from(&format!("{step}")), Some(""));
        }
        assert_eq!(Step::Property("spec").strip_from(".spex"), None);
        assert_eq!(Step::Property("a.b").strip_from(".a.b"), None);
        assert_eq!(Step::Items.strip_from("{*}"), None);
    }
}
