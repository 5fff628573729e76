//! Where the walk is in the object: a chain of stack frames, so descending
//! costs nothing and paths are only built for findings.

use crate::schema::FieldPath;
use crate::schema::path::Segment;

/// One step from the parent value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step<'a> {
    /// The object root.
    Root,
    /// A property described by `properties` (or an unknown field).
    Prop(&'a str),
    /// A list item.
    Index(usize),
    /// A map value (`additionalProperties`).
    Key(&'a str),
}

/// The path from the root to the current value.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Trail<'a> {
    parent: Option<&'a Trail<'a>>,
    step: Step<'a>,
}

impl<'a> Trail<'a> {
    pub(crate) const ROOT: Trail<'static> = Trail {
        parent: None,
        step: Step::Root,
    };

    pub(crate) fn prop(&'a self, name: &'a str) -> Trail<'a> {
        Trail {
            parent: Some(self),
            step: Step::Prop(name),
        }
    }

    pub(crate) fn index(&'a self, i: usize) -> Trail<'a> {
        Trail {
            parent: Some(self),
            step: Step::Index(i),
        }
    }

    pub(crate) fn key(&'a self, k: &'a str) -> Trail<'a> {
        Trail {
            parent: Some(self),
            step: Step::Key(k),
        }
    }

    fn steps(&self) -> Vec<Step<'a>> {
        let mut v = Vec::with_capacity(16);
        let mut cur = Some(self);
        while let Some(t) = cur {
            if !matches!(t.step, Step::Root) {
                v.push(t.step);
            }
            cur = t.parent;
        }
        v.reverse();
        v
    }

    /// `spec.ports[2].name`, `spec.labels[foo]`; empty at the root.
    pub(crate) fn concrete(&self) -> String {
        use std::fmt::Write;
        let steps = self.steps();
        let len = steps
            .iter()
            .map(|s| match s {
                Step::Root => 0,
                Step::Prop(n) | Step::Key(n) => n.len() + 2,
                Step::Index(_) => 6,
            })
            .sum();
        let mut s = String::with_capacity(len);
        for step in steps {
            match step {
                Step::Root => {}
                Step::Prop(name) => {
                    if !s.is_empty() {
                        s.push('.');
                    }
                    s.push_str(name);
                }
                Step::Index(i) => {
                    // Writing to a String cannot fail.
                    let _ = write!(s, "[{i}]");
                }
                Step::Key(k) => {
                    s.push('[');
                    s.push_str(k);
                    s.push(']');
                }
            }
        }
        s
    }

    /// `^.spec.ports[*].name`.
    pub(crate) fn schema_path(&self) -> FieldPath {
        self.steps()
            .into_iter()
            .filter_map(|step| match step {
                Step::Root => None,
                Step::Prop(name) => Some(Segment::Property(name.to_string())),
                Step::Index(_) => Some(Segment::Items),
                Step::Key(_) => Some(Segment::MapValues),
            })
            .collect()
    }

    /// The path for "in body" messages: the concrete path, or `body` at the root.
    pub(crate) fn display(&self) -> String {
        let c = self.concrete();
        if c.is_empty() { "body".to_string() } else { c }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_k8s_style_and_in_schema_notation() {
        let root = Trail::ROOT;
        let spec = root.prop("spec");
        let ports = spec.prop("ports");
        let item = ports.index(2);
        let name = item.prop("name");
        assert_eq!(name.concrete(), "spec.ports[2].name");
        assert_eq!(name.schema_path().to_string(), "^.spec.ports[*].name");
        let labels = spec.prop("labels");
        let foo = labels.key("foo");
        assert_eq!(foo.concrete(), "spec.labels[foo]");
        assert_eq!(foo.schema_path().to_string(), "^.spec.labels{*}");
        assert_eq!(root.concrete(), "");
        assert_eq!(root.display(), "body");
    }
}
