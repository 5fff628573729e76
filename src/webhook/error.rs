//! Why a review could not be judged. Each becomes the problem it names
//! (denied or let through as `failMode` says, or refused outright), and
//! `/metrics` counts the reviews left unfinished by [`Kind`], so an
//! operator can tell a webhook that cannot reach the API server from one
//! short of memory without reading its log.

use std::fmt;

/// What kind of thing kept a review from being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The review's objects cannot be read as the CRDs they should be.
    Unreadable,
    /// Judging it would take more memory than `--memory-budget` holds.
    TooLarge,
    /// The work stopped inside crd-safety (a worker that failed, the
    /// server shutting down).
    Stopped,
    /// The API server could not be read for what the check needs.
    Cluster,
    /// The request's object is not the CRD the API server stores under its
    /// name: nothing is read on its behalf.
    Refused,
    /// A step ran past its own deadline.
    Deadline,
    /// A configured limit was reached (`scanObjects.maxObjects`).
    Limit,
}

impl Kind {
    /// The kind as `/metrics` labels it.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Unreadable => "unreadable",
            Kind::TooLarge => "tooLarge",
            Kind::Stopped => "stopped",
            Kind::Cluster => "cluster",
            Kind::Refused => "refused",
            Kind::Deadline => "deadline",
            Kind::Limit => "limit",
        }
    }
}

/// Why a review could not be judged: its kind, and the sentence the
/// review's answer carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewError {
    pub kind: Kind,
    message: String,
}

impl ReviewError {
    pub fn new(kind: Kind, message: impl Into<String>) -> ReviewError {
        ReviewError {
            kind,
            message: message.into(),
        }
    }

    pub fn unreadable(message: impl Into<String>) -> ReviewError {
        ReviewError::new(Kind::Unreadable, message)
    }

    pub fn cluster(message: impl Into<String>) -> ReviewError {
        ReviewError::new(Kind::Cluster, message)
    }

    pub fn refused(message: impl Into<String>) -> ReviewError {
        ReviewError::new(Kind::Refused, message)
    }

    /// The same error, said of a step: `"{what}: {self}"`.
    pub fn within(self, what: &str) -> ReviewError {
        ReviewError {
            kind: self.kind,
            message: format!("{what}: {}", self.message),
        }
    }
}

impl fmt::Display for ReviewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReviewError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_said_of_a_step_keeps_its_kind() {
        let e = ReviewError::cluster("the API server did not answer")
            .within("cannot count the objects of widgets.example.com");
        assert_eq!(e.kind, Kind::Cluster);
        assert_eq!(
            e.to_string(),
            "cannot count the objects of widgets.example.com: the API server did not answer"
        );
    }
}
