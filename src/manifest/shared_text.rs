//! A document's text as a range of the file it was read from.
//!
//! Manifests are megabytes and hold one document or many. Copying each
//! document out of its file (and again into an `Arc<str>`) cost a third of
//! a `diff`'s page faults on a large CRD; sharing the file's buffer costs
//! nothing, and the buffer is let go with the last document that uses it.

use std::ops::{Deref, Range};
use std::sync::Arc;

/// Text shared with other documents of the same file: cheap to clone.
#[derive(Clone, Debug)]
pub struct SharedText {
    file: Arc<String>,
    range: Range<usize>,
}

impl SharedText {
    /// A whole text, taken without copying.
    pub fn whole(text: String) -> SharedText {
        let range = 0..text.len();
        SharedText {
            file: Arc::new(text),
            range,
        }
    }

    /// `range` of `file`, or `None` when it does not fall on character
    /// boundaries inside it.
    pub fn slice(file: &Arc<String>, range: Range<usize>) -> Option<SharedText> {
        file.get(range.clone())?;
        Some(SharedText {
            file: Arc::clone(file),
            range,
        })
    }
}

#[cfg(test)]
impl SharedText {
    /// Whether this text is a range of `file` (not a copy).
    pub fn is_range_of(&self, file: &Arc<String>) -> bool {
        Arc::ptr_eq(&self.file, file)
    }
}

impl Default for SharedText {
    fn default() -> Self {
        SharedText::whole(String::new())
    }
}

impl Deref for SharedText {
    type Target = str;

    fn deref(&self) -> &str {
        // Checked when the range was made; a miss here would be a bug, and
        // reads as empty text rather than a panic.
        self.file.get(self.range.clone()).unwrap_or_default()
    }
}

impl From<&str> for SharedText {
    fn from(text: &str) -> Self {
        SharedText::whole(text.to_string())
    }
}

impl From<String> for SharedText {
    fn from(text: String) -> Self {
        SharedText::whole(text)
    }
}
