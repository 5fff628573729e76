//! Documentation keywords. The API server neither validates nor prunes by
//! them, so a change to any of them is worth knowing and never fails: it is
//! reported at `info` under the `description` check, wherever it is (a node,
//! or a branch of allOf/anyOf/oneOf/not).

use serde_json::Value;

use super::{FieldCheck, Node};
use crate::compare::{Check, Severity};

/// The keywords that only document a schema.
pub(in crate::compare) const DOC_KEYWORDS: &[&str] =
    &["description", "title", "example", "externalDocs"];

impl Node<'_, '_> {
    pub(super) fn documentation(&mut self, c: &FieldCheck) {
        for &kw in c.keywords {
            if !self.changed(kw) {
                continue;
            }
            let (o, n) = self.kw(kw);
            let (o, n) = (o.cloned(), n.cloned());
            let what = match (&o, &n) {
                (None, Some(_)) => format!("{kw} added"),
                (Some(_), None) => format!("{kw} removed"),
                _ => format!("{kw} changed"),
            };
            self.documentation_changed(what, o.as_ref(), n.as_ref());
        }
    }

    /// Reports a documentation-only change; `what` says which.
    pub(super) fn documentation_changed(
        &mut self,
        what: String,
        old: Option<&Value>,
        new: Option<&Value>,
    ) {
        if self.ctx.cross_version {
            return; // two versions may document a field differently
        }
        self.emit(
            Check::Description,
            Severity::Info,
            format!("{what} (documentation only; never fails)"),
            old,
            new,
        );
    }
}
