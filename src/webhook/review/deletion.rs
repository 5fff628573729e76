//! The deletion guard: the objects a CRD's deletion (or the update that arms
//! its break-glass) would take with it, counted with the webhook's rights on
//! the CRD the API server stores.

use super::*;

impl Reviewer {
    /// What deleting the CRD would take with it: the stored CRD and the
    /// number of its objects, or why they could not be counted. The outer
    /// `Err` refuses the request (it is not about the stored CRD).
    pub(super) async fn objects_at_stake(
        &self,
        request: &Request<'_>,
        claims: &[&Outline<'_>],
    ) -> Result<Result<(Crd, Objects), ReviewError>, ReviewError> {
        let stored = match self.stored_crd(request, claims).await {
            Ok(crd) => crd,
            Err(e) if e.kind == Kind::Refused => return Err(e),
            Err(why) => {
                return Ok(Err(
                    why.within(&format!("cannot count the objects of {}", request.name))
                ));
            }
        };
        // Nothing served, nothing to count with: the objects stay stored
        // all the same, so the guard assumes they exist. Treating this
        // as an unfinished check let `failMode: open` allow deleting a
        // CRD whose versions had all been unserved first.
        if stored.served_versions().next().is_none() {
            return Ok(Ok((stored, Objects::Unseen)));
        }
        Ok(match self.count_objects(&stored).await {
            Ok(n) => Ok((stored, Objects::Counted(n))),
            Err(why) => Err(why.within(&format!("cannot count the objects of {}", stored.name))),
        })
    }

    /// How many objects the CRD has: one `limit=1` LIST per served
    /// version, storage version first, until one answers (every version
    /// lists the same stored objects; another may fail to convert).
    pub(super) async fn count_objects(&self, crd: &Crd) -> Result<u64, ReviewError> {
        let storage = crd.storage_version().name().to_string();
        let mut versions: Vec<String> = crd
            .served_versions()
            .map(|v| v.name().to_string())
            .collect();
        versions.sort_by_key(|v| *v != storage);
        let mut last = "no version is served".to_string();
        for version in versions {
            match self.conn.list_page(&crd.resource(&version), 1, None).await {
                Ok(page) => {
                    let rest = page.metadata.remaining_item_count.unwrap_or(0).max(0);
                    return Ok(page.items.len() as u64 + rest as u64);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(ReviewError::cluster(last))
    }
}

/// What the deletion guard knows of a CRD's objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Objects {
    /// Counted through a served version.
    Counted(u64),
    /// No version is served, so none can be counted; they may exist.
    Unseen,
    /// Counted, but the requester may not list them, so the count is not
    /// said: why.
    Hidden(String),
}

impl Objects {
    pub(super) fn count(&self) -> Option<u64> {
        match self {
            Objects::Counted(n) => Some(*n),
            Objects::Unseen | Objects::Hidden(_) => None,
        }
    }

    /// `3 Widget objects still exist` (`still` is the word before
    /// `exist`), or why some may.
    pub(super) fn exist(&self, crd: &Crd, still: &str) -> String {
        let kind = &crd.spec.names.kind;
        match self {
            Objects::Hidden(why) => format!("{kind} objects {still}exist ({why})"),
            Objects::Counted(n) => format!(
                "{n} {kind} {} {still}exist",
                if *n == 1 { "object" } else { "objects" }
            ),
            Objects::Unseen => format!(
                "{} serves no version, so its {kind} objects cannot be counted and may exist \
                 (status.storedVersions: {})",
                crd.name,
                crd.stored_versions
                    .as_deref()
                    .map_or_else(|| "not set".to_string(), |v| v.join(", "))
            ),
        }
    }
}

/// The deletion guard's problem.
pub(super) fn objects_exist(crd: &Crd, objects: Objects) -> Problem {
    let first = match objects {
        Objects::Counted(_) | Objects::Hidden(_) => format!(
            "delete them first (kubectl delete {} --all -A)",
            crd.spec.names.plural
        ),
        Objects::Unseen => "serve a version again to see and delete them first".to_string(),
    };
    Problem {
        id: DELETION_CHECK,
        blocking: true,
        by_requirement: false,
        message: format!(
            "{}, and deleting the CRD deletes every one of them; {first}, or accept the loss",
            objects.exist(crd, "still ")
        ),
    }
}

/// Whether an update arms the deletion guard's break-glass: its accept
/// annotation lists `crdDeletion`, and the update adds or changes the
/// break-glass annotations.
pub(super) fn arms_deletion(
    annotations: &BTreeMap<String, String>,
    before: &BTreeMap<String, String>,
) -> bool {
    let lists_deletion = annotations
        .get(ACCEPT_ANNOTATION)
        .is_some_and(|list| list.split(',').any(|c| c.trim() == DELETION_CHECK));
    lists_deletion && decision::bound(annotations, Some(before), None).is_ok()
}

/// The problem of an update that arms `crdDeletion` while objects exist:
/// accepted only as break-glass is (with a reason; logged with the user),
/// so arming the deletion is itself a recorded decision.
pub(super) fn armed(crd: &Crd, objects: Objects, generation: Option<i64>) -> Problem {
    let then = match generation {
        Some(g) => format!(
            "; the deletion itself is accepted only while {ACCEPT_GENERATION_ANNOTATION} is \"{g}\", this CRD's metadata.generation"
        ),
        None => String::new(),
    };
    Problem {
        id: DELETION_CHECK,
        blocking: true,
        by_requirement: false,
        message: format!(
            "this update arms {ACCEPT_ANNOTATION}: {DELETION_CHECK} while {}, \
             and deleting the CRD deletes every one of them{then}",
            objects.exist(crd, ""),
        ),
    }
}

/// The problem of a change that adds [`SKIP_LABEL`]: the chart's
/// `objectSelector` example sends no later change of such a CRD to
/// `serve`, so anyone who may write CRDs could switch its checks off (the
/// deletion guard's too) by adding a label first.
pub(super) fn skip_added() -> Problem {
    Problem {
        id: SKIP_CHECK,
        blocking: true,
        by_requirement: false,
        message: format!(
            "this change adds the label {SKIP_LABEL}, which keeps every later change of the CRD out of review \
             where the webhook's objectSelector leaves it out; only break-glass adds it \
             ({ACCEPT_ANNOTATION}: {SKIP_CHECK}, with a reason, by a requester webhook.breakGlassBy admits)"
        ),
    }
}
