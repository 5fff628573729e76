//! The check catalog: every check's stable id, default severity and a one-line
//! summary. Ids are what users write in config files and read in reports, so
//! they never change once released.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Worth knowing; never fails a run.
    Info,
    /// Likely to hurt someone; fails nothing by default.
    Warning,
    /// Breaks the cluster or its users; fails the run (exit 1).
    Error,
}

impl Severity {
    /// The lower-case name used in output and config.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }

    /// The severity of a change that is harmless when `allowed`: info, else an error.
    pub fn info_if(allowed: bool) -> Severity {
        if allowed {
            Severity::Info
        } else {
            Severity::Error
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Severity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// What decides whether a check's finding harms a cluster once the object
/// scan (`--objects`) has read every stored object of its version. Declared
/// in the check's catalog row, so the grading, the docs and the tests read
/// one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidedBy {
    /// Not the stored objects: the harm is to clients, requests or the CRD
    /// itself (a version no longer served, storedVersions, a type clients
    /// decode, conversion, the CRD refused), so no scan changes the grade.
    Schema,
    /// Stored objects that fail one of these validation rules (the
    /// validator's rule ids) at the finding's node or below it: a new
    /// constraint hurts no stored object that meets it.
    Failing(&'static [&'static str]),
    /// Stored objects that fail any rule of [`VALUE_RULES`] or lose data
    /// ([`DATA_LOSS`]) at the finding's node or below it: a map narrowed.
    FailingOrLosing,
    /// Stored objects that lack the field the finding names (its `new`
    /// value) under its node: a new `required` field.
    Lacking,
    /// Stored objects that hold data at the finding's node (or below) which
    /// the new schema drops: a removed field loses only what is there.
    Holding,
    /// Stored objects whose parent exists without the field: a new default
    /// changes only what they read.
    Defaulting,
}

/// What a check compares, which decides where it runs and how its
/// findings are located and graded. Declared by the section of the
/// catalog the check's row sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The CRD's spec and its version entries (`compare/crd_level.rs`).
    Crd,
    /// Which CRDs only one side has.
    Presence,
    /// One schema node against the same node of the same version
    /// (`compare/fields/`).
    Field,
    /// Two served versions of the new CRD.
    AcrossVersions,
    /// A served version's rules together, over one object.
    Rules,
    /// The API server's own validation of the new CRD.
    CrdValidation,
    /// The live cluster's answers (dry runs, ownership, webhooks).
    Live,
    /// The scan of the stored objects.
    Scan,
    /// The custom resources of the inputs.
    Inputs,
    /// How the manifests are delivered (size, Helm).
    Delivery,
    /// What no check understands.
    CatchAll,
}

/// What a change to a version's schema or entry can reach, which decides
/// how it is graded on a version the new CRD does not serve. Declared in
/// the rows of the field checks and of the version entries' checks (a test
/// holds every one of them to a declaration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Only requests made through that version: validation, subresources,
    /// printer columns, field selectors, documentation.
    Requests,
    /// Objects stored in that version too: the API server decodes each
    /// object with the schema of the version it is stored in, whatever
    /// version the client asked for, so pruning and defaulting follow that
    /// schema (`tests/live/unserved_stored.rs`).
    StoredObjects,
}

/// How a keyword's value on a node and the same keyword in one of its
/// `allOf` branches combine into one keyword that accepts exactly what
/// both accept, so a constraint moved into or out of `allOf` is seen as
/// the same constraint. A check whose keyword cannot be written as one
/// (the exclusive flags change what the bounds mean) declares none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fold {
    /// Values in both lists.
    Intersect,
    /// The higher bound.
    Max,
    /// The lower bound.
    Min,
    /// Only the same value: two different patterns or formats cannot be
    /// written as one keyword.
    Same,
}

/// Every rule the object validator reports a stored object failing
/// (`crate::object_validation::Rule::id`): a change that can bring any of them.
pub const VALUE_RULES: &[&str] = &[
    "type",
    "nullable",
    "enum",
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "x-kubernetes-list-type=set",
    "x-kubernetes-list-type=map",
    "minProperties",
    "maxProperties",
    "required",
    "x-kubernetes-embedded-resource",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "x-kubernetes-validations",
];

/// The scan's data losses: a field the new schema does not describe, a
/// null it no longer allows.
pub const DATA_LOSS: &[&str] = &["pruned", "nullDropped"];

/// A catalog row's `by`, or [`DecidedBy::Schema`] when it has none.
macro_rules! decided_by {
    () => {
        DecidedBy::Schema
    };
    ($by:expr) => {
        $by
    };
}

macro_rules! catalog {
    ($( $family:ident {
        $( $variant:ident => $id:literal, $sev:ident, $( reach $reach:ident, )? $( folds $fold:ident, )?
           $( by $by:expr, )? $summary:literal; )*
    } )*) => {
        /// A check of the catalog.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Check { $( $( #[doc = $summary] $variant, )* )* }

        impl Check {
            /// Every check, in catalog order.
            pub const ALL: &'static [Check] = &[ $( $( Check::$variant, )* )* ];

            /// The stable id (`storedVersionRemoval`).
            pub fn id(self) -> &'static str {
                match self { $( $( Check::$variant => $id, )* )* }
            }

            /// The most serious severity the check reports with by default.
            pub fn default_severity(self) -> Severity {
                match self { $( $( Check::$variant => Severity::$sev, )* )* }
            }

            /// One line on what the check catches.
            pub fn summary(self) -> &'static str {
                match self { $( $( Check::$variant => $summary, )* )* }
            }

            /// What decides whether its findings harm a cluster (see [`DecidedBy`]).
            pub fn decided_by(self) -> DecidedBy {
                match self { $( $( Check::$variant => decided_by!($($by)?), )* )* }
            }

            /// What the check compares (see [`Family`]).
            pub fn family(self) -> Family {
                match self { $( $( Check::$variant => Family::$family, )* )* }
            }

            /// What a change it reports on a version can reach, where the
            /// row declares it (see [`Reach`]).
            pub fn declared_reach(self) -> Option<Reach> {
                match self { $( $( Check::$variant => None $( .or(Some(Reach::$reach)) )?, )* )* }
            }

            /// How the keyword it compares combines with the same keyword
            /// of an `allOf` branch, for the checks whose keyword folds (see
            /// [`Fold`]).
            pub fn folds(self) -> Option<Fold> {
                match self { $( $( Check::$variant => None $( .or(Some(Fold::$fold)) )?, )* )* }
            }
        }
    };
}

catalog! {
    // CRD level.
    Crd {
        Scope => "scope", Error, "spec.scope changed (Namespaced <-> Cluster): immutable, rejected by the API server.";
        StoredVersionRemoval => "storedVersionRemoval", Error, reach StoredObjects, "a version listed in status.storedVersions is removed from spec.versions: rejected by the API server.";
        ServedVersionRemoval => "servedVersionRemoval", Warning, reach StoredObjects, "a served version is removed or set to served: false: its clients get 404.";
        StorageVersionChange => "storageVersionChange", Info, reach StoredObjects, "the storage version moves: new writes use the new version, old objects stay stored as before.";
        Names => "names", Error, "group/kind/plural/singular/listKind changed (error); shortNames or categories removed (warning).";
        Subresources => "subresources", Error, reach Requests, "status or scale subresource removed (error); status added changes what writes persist (warning).";
        PrinterColumns => "printerColumns", Info, reach Requests, "additionalPrinterColumns added, removed or changed: kubectl get output changes.";
        Conversion => "conversion", Error, "conversion Webhook -> None, webhook CA dropped, or None with differing served schemas.";
        PreserveUnknownFields => "preserveUnknownFields", Error, reach StoredObjects, by DecidedBy::Holding, "preserve-unknown-fields removed (CRD-level legacy flag or x-kubernetes-preserve-unknown-fields): pruning starts and drops stored data.";
        Deprecation => "deprecation", Info, reach Requests, "a version becomes deprecated or its deprecationWarning changes.";
        SelectableFields => "selectableFields", Warning, reach Requests, "a selectable field is removed: field selectors on it fail.";
    }
    // Which CRDs are on either side.
    Presence {
        NewCrd => "newCrd", Info, "the CRD exists only in the new manifests.";
        AbsentCrd => "absentCrd", Info, "the CRD exists only in the old manifests (applying the new ones does not delete it).";
    }
    // Field level (same version name in old and new).
    Field {
        ExistingFieldRemoval => "existingFieldRemoval", Error, reach StoredObjects, by DecidedBy::Holding, "a field is removed from a version's schema: stored data is pruned on the next write.";
        FieldAddition => "fieldAddition", Info, reach StoredObjects, by DecidedBy::Failing(VALUE_RULES), "a field is added (info, so a release with only new fields still lists them); an error where the old schema kept unknown fields, since stored objects may hold anything there that the new field's schema now validates.";
        Required => "required", Error, reach Requests, by DecidedBy::Lacking, "a field becomes required on an existing object: creates and updates without it are rejected (never ratcheted).";
        Type => "type", Error, reach StoredObjects, folds Same, "a field's type changes: existing values are rejected and clients fail to decode.";
        Enum => "enum", Error, reach Requests, folds Intersect, by DecidedBy::Failing(&["enum"]), "enum restriction added or values removed (values added: info, configurable).";
        Default => "default", Error, reach StoredObjects, by DecidedBy::Defaulting, "default added, changed or removed on an existing field: changes what clients read for existing objects.";
        Minimum => "minimum", Error, reach Requests, folds Max, by DecidedBy::Failing(&["minimum"]), "minimum added or raised.";
        Maximum => "maximum", Error, reach Requests, folds Min, by DecidedBy::Failing(&["maximum"]), "maximum added or lowered.";
        MinLength => "minLength", Error, reach Requests, folds Max, by DecidedBy::Failing(&["minLength"]), "minLength added or raised.";
        MaxLength => "maxLength", Error, reach Requests, folds Min, by DecidedBy::Failing(&["maxLength"]), "maxLength added or lowered.";
        MinItems => "minItems", Error, reach Requests, folds Max, by DecidedBy::Failing(&["minItems"]), "minItems added or raised.";
        MaxItems => "maxItems", Error, reach Requests, folds Min, by DecidedBy::Failing(&["maxItems"]), "maxItems added or lowered.";
        MinProperties => "minProperties", Error, reach Requests, folds Max, by DecidedBy::Failing(&["minProperties"]), "minProperties added or raised.";
        MaxProperties => "maxProperties", Error, reach Requests, folds Min, by DecidedBy::Failing(&["maxProperties"]), "maxProperties added or lowered.";
        ExclusiveMinimum => "exclusiveMinimum", Error, reach Requests, by DecidedBy::Failing(&["minimum"]), "exclusiveMinimum turned on: the minimum itself is no longer allowed.";
        ExclusiveMaximum => "exclusiveMaximum", Error, reach Requests, by DecidedBy::Failing(&["maximum"]), "exclusiveMaximum turned on: the maximum itself is no longer allowed.";
        MultipleOf => "multipleOf", Error, reach Requests, folds Same, by DecidedBy::Failing(&["multipleOf"]), "multipleOf added, or changed to a value the old one is not a multiple of.";
        UniqueItems => "uniqueItems", Error, reach Requests, folds Same, "uniqueItems turned on (also forbidden in structural schemas).";
        Pattern => "pattern", Error, reach Requests, folds Same, by DecidedBy::Failing(&["pattern"]), "pattern added or changed (info when every value the old schema allows still matches; removal is safe, configurable).";
        Format => "format", Error, reach Requests, folds Same, by DecidedBy::Failing(&["format"]), "format added or changed (info when the API server does not validate that format).";
        Nullable => "nullable", Error, reach StoredObjects, by DecidedBy::Failing(&["nullable", "nullDropped"]), "nullable removed: stored nulls are dropped and null writes rejected (added: info).";
        XValidations => "xValidations", Error, reach Requests, by DecidedBy::Failing(&["x-kubernetes-validations"]), "CEL rule (x-kubernetes-validations) added or changed; transition rules using oldSelf and evaluation errors (a stored value the rule cannot evaluate) are never ratcheted. Info when no object valid under the old schema can fail it, and for message-only changes.";
        ListType => "listType", Error, reach Requests, by DecidedBy::Failing(&["x-kubernetes-list-type=set", "x-kubernetes-list-type=map"]), "x-kubernetes-list-type or list-map-keys changed: uniqueness and server-side-apply merging change; lists that break the new uniqueness cannot be created again, while updates of a stored object that already breaks it succeed.";
        MapType => "mapType", Warning, reach Requests, "x-kubernetes-map-type changed between granular and atomic: server-side-apply merging changes.";
        AdditionalProperties => "additionalProperties", Error, reach StoredObjects, by DecidedBy::FailingOrLosing, "additionalProperties narrowed or removed: map entries are pruned or rejected.";
        IntOrString => "intOrString", Error, reach Requests, by DecidedBy::Failing(&["type"]), "x-kubernetes-int-or-string removed: one of the two value types is now rejected.";
        EmbeddedResource => "embeddedResource", Error, reach StoredObjects, "x-kubernetes-embedded-resource changed: apiVersion/kind/metadata handling changes.";
        OneOf => "oneOf", Error, reach Requests, by DecidedBy::Failing(&["oneOf"]), "oneOf added or a branch removed (error); a branch added: error if it overlaps an old one, info if disjoint, warning if undecidable; ratcheted like any keyword.";
        AnyOf => "anyOf", Error, reach Requests, by DecidedBy::Failing(&["anyOf"]), "anyOf added or a branch removed; ratcheted like any keyword (branch added: info).";
        AllOf => "allOf", Error, reach Requests, by DecidedBy::Failing(&["allOf"]), "allOf added or a branch added; ratcheted like any keyword (value constraints moved between allOf and the field: info).";
        Not => "not", Error, reach Requests, by DecidedBy::Failing(&["not"]), "not added or changed; ratcheted like any keyword.";
        Description => "description", Info, reach Requests, "description, title, example or externalDocs changed, on a field or inside allOf/anyOf/oneOf/not: documentation only (never fails).";
    }
    // Across versions of the new CRD.
    AcrossVersions {
        ConversionDataLoss => "conversionDataLoss", Error, "with conversion None, a field only one of two served versions knows is silently dropped when written through the other.";
    }
    // The rules of a served version together, over one object.
    Rules {
        CelCostBudget => "celCostBudget", Warning, reach Requests, "CEL rules added or changed so that one object at the old schema's sizes can cost more than the API server's runtime budget of 10,000,000 per object, while the old rules could not: the server refuses such objects on create and update (info if the old rules could too, or if only sizes the request limit bounds take it there). A warning: the figure is reached only by an object at those sizes (see Notes on semantics).";
    }
    // The API server's own validation of the new CRD, offline.
    CrdValidation {
        InvalidCrd => "invalidCrd", Error, "the API server would refuse the new CRD itself (non-structural schema, bad default, invalid name, CEL that does not parse, ...): the apply fails.";
    }
    // From the live cluster.
    Live {
        ApiServerRejects => "apiServerRejects", Error, "the API server's own dry run of the update refuses the CRD (its message is quoted).";
    }
    // From the object scan (`--objects`).
    Scan {
        InvalidObjects => "invalidObjects", Error, "existing objects the new schema rejects (count, examples, and whether ratcheting lets their controllers keep updating them).";
        PrunedFields => "prunedFields", Error, "existing objects carry fields (or nulls) the new schema drops: the data is lost on their next write.";
        DefaultedFields => "defaultedFields", Warning, "existing objects lack a field that now has a default: clients see the default on read, and the next write stores it.";
        NotEvaluated => "notEvaluated", Warning, "a validation rule the scan could not evaluate client-side (never counted as passing).";
    }
    // From the custom resources of the inputs (`-f`, `-k`, charts, `diff --objects PATH`).
    Inputs {
        ManifestObjects => "manifestObjects", Error, "custom resources in the inputs (the objects a repository applies next to its CRDs, or `diff --objects PATH`) that OLD accepts and the new schema refuses or prunes: applying them fails, or drops their data.";
    }
    // From the live cluster, added later.
    Live {
        FieldManagerConflict => "fieldManagerConflict", Warning, "another field manager (helm, kubectl, an operator) owns fields the manifest changes: apply takes them over only after a yes to its question or with --force-conflicts; --field-manager applies as an owner that installed them with server-side apply.";
        RolloutCrdPolicy => "rolloutCrdPolicy", Warning, "the engine that rolls the CRD out will not apply it as checked: a Flux HelmRelease whose upgrade.crds is Skip (the default) or Create never updates a CRD of the chart's crds/ (warning); Flux's CreateReplace and Argo CD's Replace=true replace the CRD whole, dropping the caBundle a cainjector put in its conversion webhook (error).";
        ConversionWebhookNotReady => "conversionWebhookNotReady", Error, "the new CRD converts through a webhook the API server cannot reach or trust (no Service, no such port, no ready endpoint, a caBundle that does not parse, has expired or did not sign the serving certificate), or that fails a --probe-conversion review: every read or write through a version other than the stored one fails.";
    }
    // How the manifests are delivered (`src/delivery/`).
    Delivery {
        CrdSize => "crdSize", Error, "the CRD is too large for its delivery: above 262,144 bytes of annotations client-side apply (kubectl without --server-side, Argo CD's default sync) fails (warning, also when the live CRD was applied client-side); above etcd's default 1.5 MiB (warning); above the API server's 3 MiB request limit (error).";
        HelmCrdsNotUpgraded => "helmCrdsNotUpgraded", Warning, "a CRD of a chart's crds/ changes or is added between OLD and NEW: helm upgrade (and Flux's HelmRelease) never applies crds/, so the change does not land; apply them first.";
        HelmDeletesCrd => "helmDeletesCrd", Error, "a CRD OLD renders from templates/ is no longer rendered by NEW (moved to crds/, removed, switched off by a value) and has no helm.sh/resource-policy: keep: helm upgrade deletes it and every object of it.";
        HelmUninstallDeletes => "helmUninstallDeletes", Warning, "a chart renders CRDs from templates/ without helm.sh/resource-policy: keep: helm uninstall deletes them and every object of them (once per chart).";
        YamlReading => "yamlReading", Warning, "a plain key or value kubectl, Helm and Argo CD read otherwise than written (YAML 1.1: `y:` is the key `true`, `on` is true, `0755` is 493): what is applied is not what was written.";
    }
    // The catch-all.
    CatchAll {
        UnknownChange => "unknownChange", Error, "any other change no check understands (error with failMode: closed, warning with open).";
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl FromStr for Check {
    type Err = ();

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Check::ALL.iter().copied().find(|c| c.id() == s).ok_or(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_are_unique_and_round_trip() {
        let ids: HashSet<&str> = Check::ALL.iter().map(|c| c.id()).collect();
        assert_eq!(ids.len(), Check::ALL.len());
        for c in Check::ALL {
            assert_eq!(c.id().parse::<Check>(), Ok(*c));
        }
    }
}
