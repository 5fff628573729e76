//! Field errors the way the API server writes them
//! (`k8s.io/apimachinery/pkg/util/validation/field`): a path such as
//! `spec.versions[0].schema.openAPIV3Schema.properties[spec].type`, an error
//! type, the offending value and a detail. Keeping the server's wording means
//! a user can search for our message and find the server's.

use std::fmt;

use serde_json::Value;

/// A field path: `.child`, `[key]` and `[index]` steps, rendered like
/// `field.Path.String()`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path starting at a top-level field (`spec`, `metadata`).
    pub fn new(root: &str) -> FieldPath {
        FieldPath(root.to_string())
    }

    /// `path.name`; `name` may itself hold dots (`openAPIV3Schema.type`),
    /// as the server's own paths sometimes do.
    pub fn child(&self, name: &str) -> FieldPath {
        if self.0.is_empty() {
            FieldPath(name.to_string())
        } else {
            let mut s = String::with_capacity(self.0.len() + 1 + name.len());
            s.push_str(&self.0);
            s.push('.');
            s.push_str(name);
            FieldPath(s)
        }
    }

    /// `path[key]` (map keys and property names are not quoted).
    pub fn key(&self, key: &str) -> FieldPath {
        let mut s = String::with_capacity(self.0.len() + 2 + key.len());
        s.push_str(&self.0);
        s.push('[');
        s.push_str(key);
        s.push(']');
        FieldPath(s)
    }

    /// `path[i]`.
    pub fn index(&self, i: usize) -> FieldPath {
        FieldPath(format!("{}[{i}]", self.0))
    }

    /// The rendered path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Extends this path in place for one step of a recursive walk; the
    /// guard restores it when dropped. Walking a schema of 100,000 nodes
    /// then builds no strings; only errors copy the path.
    pub fn push(&mut self) -> PathGuard<'_> {
        let mark = self.0.len();
        PathGuard { path: self, mark }
    }
}

/// A path extended in place; see [`FieldPath::push`].
pub struct PathGuard<'a> {
    path: &'a mut FieldPath,
    mark: usize,
}

impl PathGuard<'_> {
    /// `.name`
    pub fn child(self, name: &str) -> Self {
        self.path.0.push('.');
        self.path.0.push_str(name);
        self
    }

    /// `[key]`
    pub fn key(self, key: &str) -> Self {
        self.path.0.push('[');
        self.path.0.push_str(key);
        self.path.0.push(']');
        self
    }

    /// `[i]`
    pub fn index(self, i: usize) -> Self {
        use std::fmt::Write;
        let _ = write!(self.path.0, "[{i}]");
        self
    }
}

impl std::ops::Deref for PathGuard<'_> {
    type Target = FieldPath;
    fn deref(&self) -> &FieldPath {
        self.path
    }
}

impl std::ops::DerefMut for PathGuard<'_> {
    fn deref_mut(&mut self) -> &mut FieldPath {
        self.path
    }
}

impl Drop for PathGuard<'_> {
    fn drop(&mut self) {
        self.path.0.truncate(self.mark);
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The server's error types (`field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    Required,
    Invalid,
    Forbidden,
    NotSupported,
    Duplicate,
    TooMany,
    TooLong,
    Internal,
}

impl ErrorType {
    fn as_str(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::TooMany => "Too many",
            ErrorType::TooLong => "Too long",
            ErrorType::Internal => "Internal error",
        }
    }

    /// Types whose rendering leaves the value out, as the server does.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal
        )
    }
}

/// One reason the API server refuses a CRD.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Where, as the server writes it.
    pub path: FieldPath,
    pub kind: ErrorType,
    /// The offending value, when the server shows one.
    pub value: Option<Value>,
    /// The server's explanation.
    pub detail: String,
    /// How to fix it, in our words (not part of the server's message).
    pub fix: Option<std::borrow::Cow<'static, str>>,
}

impl FieldError {
    fn new(path: FieldPath, kind: ErrorType, value: Option<Value>, detail: String) -> FieldError {
        FieldError {
            path,
            kind,
            value,
            detail,
            fix: None,
        }
    }

    pub fn required(path: FieldPath, detail: impl Into<String>) -> FieldError {
        Self::new(path, ErrorType::Required, None, detail.into())
    }

    pub fn invalid(path: FieldPath, value: Value, detail: impl Into<String>) -> FieldError {
        Self::new(path, ErrorType::Invalid, Some(value), detail.into())
    }

    pub fn forbidden(path: FieldPath, detail: impl Into<String>) -> FieldError {
        Self::new(path, ErrorType::Forbidden, None, detail.into())
    }

    pub fn not_supported(path: FieldPath, value: Value, allowed: &[&str]) -> FieldError {
        let list: Vec<String> = allowed.iter().map(|a| format!("{a:?}")).collect();
        Self::new(
            path,
            ErrorType::NotSupported,
            Some(value),
            format!("supported values: {}", list.join(", ")),
        )
    }

    pub fn duplicate(path: FieldPath, value: Value) -> FieldError {
        Self::new(path, ErrorType::Duplicate, Some(value), String::new())
    }

    pub fn too_many(path: FieldPath, actual: usize, max: usize) -> FieldError {
        Self::new(
            path,
            ErrorType::TooMany,
            Some(Value::from(actual)),
            format!("must have at most {max} items"),
        )
    }

    pub fn too_long(path: FieldPath, max: usize) -> FieldError {
        Self::new(
            path,
            ErrorType::TooLong,
            None,
            format!("may not be more than {max} bytes"),
        )
    }

    pub fn internal(path: FieldPath, detail: impl Into<String>) -> FieldError {
        Self::new(path, ErrorType::Internal, None, detail.into())
    }

    /// Attaches a hint on how to fix the error.
    pub fn with_fix(mut self, fix: &'static str) -> FieldError {
        self.fix = Some(fix.into());
        self
    }

    /// [`FieldError::with_fix`] for a hint made for this error.
    pub fn with_fix_owned(mut self, fix: String) -> FieldError {
        self.fix = Some(fix.into());
        self
    }

    /// The part after the path: `Invalid value: "x": detail`.
    pub fn body(&self) -> String {
        let mut s = self.kind.as_str().to_string();
        if self.kind.shows_value() {
            let v = match &self.value {
                None | Some(Value::Null) => "null".to_string(),
                Some(Value::String(s)) => format!("{s:?}"),
                Some(other) => other.to_string(),
            };
            s.push_str(": ");
            s.push_str(&v);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_render_like_the_api_server() {
        let p = FieldPath::new("spec")
            .child("versions")
            .index(0)
            .child("schema")
            .child("openAPIV3Schema")
            .child("properties")
            .key("spec")
            .child("type");
        assert_eq!(
            FieldError::required(p.clone(), "must not be empty for specified object fields")
                .to_string(),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        );
        assert_eq!(
            FieldError::invalid(FieldPath::new("spec").child("group"), json!("x"), "bad")
                .to_string(),
            "spec.group: Invalid value: \"x\": bad"
        );
        assert_eq!(
            FieldError::not_supported(
                FieldPath::new("spec").child("scope"),
                json!("Global"),
                &["Cluster", "Namespaced"]
            )
            .body(),
            "Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
        );
    }
}
