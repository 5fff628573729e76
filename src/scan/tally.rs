//! Adding up validation outcomes: one group per (check, version, path,
//! rule) with a count and a few examples for the table, and every offending
//! object for JSON. Memory grows with the number of offending objects, never
//! with the number scanned.

use std::collections::{BTreeMap, BTreeSet};

use crate::object_validation::{PrunedKind, ValidationOutcome};
use crate::outcome::{ObjectDataLoss, ObjectReport, ObjectViolation};
use crate::schema::FieldPath;

/// The scan's own check kinds (each maps to a catalog check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The new schema rejects the object.
    Invalid,
    /// A field the new schema does not describe: dropped on the next write.
    Pruned,
    /// A stored `null` the new schema no longer allows: dropped on decode.
    NullDropped,
    /// A field the object lacks gets a new default on read.
    Defaulted,
    /// A CEL rule that could not be evaluated here.
    NotEvaluated,
}

/// Where a group of findings is: what, in which version, where, which rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupKey {
    pub kind: Kind,
    pub version: String,
    pub path: FieldPath,
    pub rule: String,
}

/// The objects that share one [`GroupKey`].
#[derive(Debug, Clone, Default)]
pub struct Group {
    /// Objects affected (each counted once per group).
    pub count: u64,
    /// Whether every violation in the group is ratchetable.
    pub ratchetable: bool,
    /// Up to `max_examples` objects, `namespace/name`.
    pub examples: Vec<String>,
    /// The first object's message, as a sample.
    pub sample: String,
}

/// The running totals of one CRD's scan.
#[derive(Debug, Default)]
pub struct Tally {
    pub groups: BTreeMap<GroupKey, Group>,
    pub objects: Vec<ObjectReport>,
    /// Objects the new schema rejects, per version.
    pub invalid: BTreeSet<(String, String)>,
    /// Objects that lose or change data, per version.
    pub losing_data: BTreeSet<(String, String)>,
    max_examples: usize,
    ratcheting: bool,
}

impl Tally {
    /// `ratcheting`: whether the server ratchets unchanged invalid fields.
    pub fn new(max_examples: usize, ratcheting: bool) -> Tally {
        Tally {
            max_examples,
            ratcheting,
            ..Tally::default()
        }
    }

    /// Adds one object's outcome. `keep_default` says whether a default at
    /// a path is new (an unchanged default was already shown before).
    pub fn add(
        &mut self,
        version: &str,
        object: &str,
        outcome: ValidationOutcome,
        keep_default: impl Fn(&FieldPath) -> bool,
    ) {
        if outcome.is_clean() {
            return;
        }
        let mut seen: BTreeSet<GroupKey> = BTreeSet::new();
        let mut report = ObjectReport {
            object: object.to_string(),
            version: version.to_string(),
            violations: Vec::new(),
            data_loss: Vec::new(),
        };
        for v in outcome.violations {
            let ratcheted = (self.ratcheting && v.ratchetable) || v.rule.is_list_type();
            let key = GroupKey {
                kind: Kind::Invalid,
                version: version.to_string(),
                path: v.schema_path.clone(),
                rule: v.rule.id().to_string(),
            };
            self.note(&mut seen, key, object, &v.message, v.ratchetable);
            report.violations.push(ObjectViolation {
                path: v.path,
                rule: v.rule.id().to_string(),
                message: v.message,
                ratcheted,
            });
        }
        for p in outcome.pruned {
            let (kind, label) = match p.kind {
                PrunedKind::Unknown => (Kind::Pruned, "pruned"),
                PrunedKind::NullDropped => (Kind::NullDropped, "nullDropped"),
                PrunedKind::Defaulted if keep_default(&p.schema_path) => {
                    (Kind::Defaulted, "defaulted")
                }
                PrunedKind::Defaulted => continue,
            };
            let key = GroupKey {
                kind,
                version: version.to_string(),
                path: p.schema_path.clone(),
                rule: label.to_string(),
            };
            self.note(&mut seen, key, object, &p.path, false);
            report.data_loss.push(ObjectDataLoss {
                path: p.path,
                kind: label,
            });
        }
        for n in outcome.not_evaluated {
            let key = GroupKey {
                kind: Kind::NotEvaluated,
                version: version.to_string(),
                path: n.schema_path.clone(),
                rule: n.rule.clone(),
            };
            self.note(&mut seen, key, object, &n.reason, false);
        }
        let id = (version.to_string(), object.to_string());
        if !report.violations.is_empty() {
            self.invalid.insert(id.clone());
        }
        if !report.data_loss.is_empty() {
            self.losing_data.insert(id);
        }
        if !report.violations.is_empty() || !report.data_loss.is_empty() {
            self.objects.push(report);
        }
    }

    fn note(
        &mut self,
        seen: &mut BTreeSet<GroupKey>,
        key: GroupKey,
        object: &str,
        sample: &str,
        ratchetable: bool,
    ) {
        let max = self.max_examples;
        let fresh = !self.groups.contains_key(&key);
        let group = self.groups.entry(key.clone()).or_default();
        if fresh {
            group.ratchetable = ratchetable;
            group.sample = sample.to_string();
        } else {
            group.ratchetable &= ratchetable;
        }
        // One object counts once per group, however many list items fail.
        if seen.insert(key) {
            group.count += 1;
            if group.examples.len() < max {
                group.examples.push(object.to_string());
            }
        }
    }

    /// Forgets everything found in `version` (its listing starts over).
    pub fn reset_version(&mut self, version: &str) {
        self.groups.retain(|k, _| k.version != version);
        self.objects.retain(|o| o.version != version);
        self.invalid.retain(|(v, _)| v != version);
        self.losing_data.retain(|(v, _)| v != version);
    }
}
