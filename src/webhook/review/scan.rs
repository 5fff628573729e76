//! What a review may read and say of the stored objects: the scan under the
//! new schema, and who may learn which objects exist or fail (the API
//! server's authorizer decides; others learn the rule, not the objects).

use super::*;

impl Reviewer {
    /// Whether the requester may list `crd`'s objects in every namespace,
    /// as the API server's authorizer says (a `SubjectAccessReview`, kept
    /// [`ACCESS_TTL`]): only then does an answer say which stored objects
    /// exist or fail, and how many. `serve` reads them with its own rights,
    /// and a requester who may change CRDs but not read their objects
    /// could otherwise learn them (a schema whose `pattern` only some
    /// values match names the objects that hold them). An answer that
    /// cannot be had counts as no.
    pub(super) async fn may_see(&self, request: &Request<'_>, crd: &Crd) -> bool {
        let key: AccessKey = (
            request.user_info.username.clone(),
            request.user_info.groups.kept.clone(),
            crd.spec.group.clone(),
            crd.spec.names.plural.clone(),
        );
        let now = Instant::now();
        if let Some((allowed, at)) = self.access_kept().get(&key)
            && now.duration_since(*at) < ACCESS_TTL
        {
            return *allowed;
        }
        let subject = Subject {
            user: &key.0,
            groups: &key.1,
        };
        let Ok(allowed) = self.conn.may_list(subject, &key.2, &key.3).await else {
            return false;
        };
        let mut kept = self.access_kept();
        if kept.len() >= ACCESS_KEPT {
            let mut ages: Vec<Instant> = kept.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let median = ages[ages.len() / 2];
            kept.retain(|_, (_, at)| *at > median);
        }
        kept.insert(key, (allowed, now));
        allowed
    }

    /// `objects` as the requester may learn them ([`Reviewer::may_see`]).
    pub(super) async fn shown(
        &self,
        request: &Request<'_>,
        crd: &Crd,
        objects: Objects,
    ) -> Objects {
        match objects {
            Objects::Counted(_) if !self.may_see(request, crd).await => {
                Objects::Hidden(not_said("how many", request, crd))
            }
            other => other,
        }
    }

    pub(super) fn access_kept(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<AccessKey, (bool, Instant)>> {
        self.access
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Validates the objects the API server stores for `stored` against
    /// the new schema (the request's object), within the configured deadline and
    /// object cap.
    pub(super) async fn scan(
        &self,
        stored: &Crd,
        review: &Admission<'_>,
    ) -> Result<(Vec<Finding>, ScanSummary), ReviewError> {
        let config = &review.config;
        let settings = &config.webhook;
        let limits = settings.scan_objects;
        let not_scanned = |why: ReviewError| why.within("the stored objects were not scanned");
        // The deadline covers the count too: both are round trips to a
        // server that may be slow, and the answer must beat the webhook's
        // timeout.
        let bounded = async {
            let count = self.count_objects(stored).await.map_err(not_scanned)?;
            if count > limits.max_objects {
                return Err(ReviewError::new(
                    Kind::Limit,
                    format!(
                        "the stored objects were not scanned: {count} objects, more than scanObjects.maxObjects ({})",
                        limits.max_objects
                    ),
                ));
            }
            // The new model, as the judgment read it (or read now, on a
            // verdict already known), and room for the pages of objects,
            // held for the whole scan.
            let new = review.new_crd(&self.judging).await.map_err(not_scanned)?;
            let pages = self
                .judging
                .reserve(SCAN_PAGES_BYTES)
                .await
                .map_err(|e| not_scanned(e.into()))?;
            let minor = self.kube_version(config).await.minor;
            let mut quiet = |_: crate::scan::Progress<'_>| {};
            let scanned = scan_crd(
                &self.conn,
                stored,
                &new.crd,
                minor,
                &self.scan_options,
                &mut quiet,
            )
            .await
            .map_err(|e| not_scanned(ReviewError::cluster(e.to_string())));
            drop(pages);
            scanned
        };
        let result = tokio::time::timeout(limits.deadline, bounded)
            .await
            .map_err(|_| {
                ReviewError::new(
                    Kind::Deadline,
                    format!(
                        "the scan of the stored objects did not finish within scanObjects.deadline ({})",
                        seconds(limits.deadline)
                    ),
                )
            })??;
        let (mut kept, _) = config.policy().apply(&stored.name, result.findings);
        if !settings.reveals_values() {
            kept.iter_mut().for_each(without_values);
        }
        Ok((kept, result.summary))
    }
}

/// A scan finding as the requester may see it: the objects by
/// `namespace/name` and the rule that fails, never the values the scan
/// read with the webhook's rights (the sample of a validation error
/// quotes them). `webhook.reveal: values` keeps the full message.
pub(super) fn without_values(f: &mut Finding) {
    let Some(d) = &f.objects else { return };
    let at = f.path.as_deref().unwrap_or("the object");
    let of = format!("{} of {} objects", d.count, d.scanned);
    let examples = if d.examples.is_empty() {
        String::new()
    } else {
        format!(" ({})", d.examples.join(", "))
    };
    let hidden = "values not shown (webhook.reveal: values shows them)";
    f.message = match f.check {
        Check::InvalidObjects => {
            let list_type = d.rule.starts_with("x-kubernetes-list-type");
            let writes = match d.ratcheted {
                Some(true) if list_type => {
                    "updates of these objects still succeed, even those that change the list, creating such an object fails"
                }
                Some(true) if d.rule == "required" => {
                    "updates that leave the object lacking the field unchanged still succeed (labels, status), creating such an object fails"
                }
                Some(true) => {
                    "updates that leave the field unchanged (in a list that is not listType: map, the whole list) still succeed (ratcheting), creating such an object fails"
                }
                _ => "every write of these objects fails until they are fixed",
            };
            format!(
                "{of}{examples} fail {} at {at} under the new schema; {writes}; {hidden}",
                d.rule
            )
        }
        Check::NotEvaluated => format!(
            "rule `{}` at {at} could not be evaluated here for {of}{examples}; they are not counted as valid; {hidden}",
            d.rule
        ),
        _ => return,
    };
}

/// Why an answer does not say `what` of the stored objects (`which and
/// how many`).
pub(super) fn not_said(what: &str, request: &Request<'_>, crd: &Crd) -> String {
    format!(
        "{what} is not said: {:?} may not list {}.{}",
        request.user_info.username, crd.spec.names.plural, crd.spec.group
    )
}

/// A scan finding as a requester who may not list the objects sees it:
/// that stored objects fail, and the rule, not which or how many.
pub(super) fn without_objects(f: &mut Finding, why: &str) {
    let Some(d) = &f.objects else { return };
    let at = f.path.as_deref().unwrap_or("the object");
    f.message = match f.check {
        Check::NotEvaluated => format!(
            "rule `{}` at {at} could not be evaluated here for stored objects; they are not counted as valid; {why}",
            d.rule
        ),
        _ => format!(
            "stored objects fail {} at {at} under the new schema; {why}",
            d.rule
        ),
    };
}

/// A finding the stored objects graded, as a requester who may not list
/// them sees it: the grade and the rule, not how many objects there are or
/// which of them fail.
pub(super) fn without_counts(f: &mut Finding, why: &str) {
    let Some(grade) = &mut f.grade else { return };
    let said = match grade.outcome {
        GradeOutcome::NoStoredObjectAffected => "On this cluster no stored object fails it",
        GradeOutcome::StoredObjectsAffected => "On this cluster stored objects fail it",
        GradeOutcome::Undecided => "Not decided by the stored objects",
    };
    // The message is the grade's reason, then the schema's own words.
    let schema_part = f
        .message
        .strip_prefix(grade.reason.as_str())
        .and_then(|rest| rest.strip_prefix(". "))
        .unwrap_or(&f.message)
        .to_string();
    grade.reason = format!("{said}; {why}");
    f.message = format!("{}. {schema_part}", grade.reason);
    grade.objects_scanned = None;
    grade.objects_affected = None;
    if let Some(d) = &mut f.objects {
        d.examples.clear();
    }
}
