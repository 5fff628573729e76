//! CRD-level checks: scope, versions and their flags, names, subresources,
//! printer columns, conversion, and the legacy `preserveUnknownFields`.
//! Anything in `spec` or a version entry that none of these reads is an
//! `unknownChange`.

use serde_json::Value;

use super::{Check, Finding, Severity, StoredVersions, StoredVersionsSource};
use crate::crd::{Crd, CrdVersion};
use crate::json::{json_eq, show};
use crate::schema::{Schema, pruning};

/// One CRD-level check, declared once: the spec and version-entry keys it
/// reads and its code. The keys are taken off the `unknownChange`
/// catch-all, and the first one is where its findings point (SARIF, GitHub
/// annotations), so a check cannot claim a key without reading it or be
/// located at one it does not read (the tests hold every claim to a
/// finding).
struct CrdCheck {
    /// The catalog id its findings carry.
    check: Check,
    /// Keys of `spec` it compares.
    spec: &'static [&'static str],
    /// Keys of each version entry it compares.
    version: &'static [&'static str],
    /// Its code.
    run: CrdRun,
}

/// A CRD-level check's code: over the whole CRD, or over each version the
/// old and the new CRD both have.
enum CrdRun {
    Crd(fn(&Crd, &Crd, &StoredVersions, &mut Out<'_>)),
    Version(fn(&CrdVersion, &CrdVersion, &mut Out<'_>)),
}

/// Keys the checks walk into rather than compare: the version entries (by
/// name, each compared by the checks below) and their schemas (compared
/// field by field, `compare/fields/`).
const WALKED_SPEC_KEYS: &[&str] = &["versions"];
const WALKED_VERSION_KEYS: &[&str] = &["name", "schema"];

/// Every CRD-level check, in the order its findings are reported: those of
/// the whole CRD, then those of each version.
const CRD_CHECKS: &[CrdCheck] = &[
    CrdCheck {
        check: Check::Scope,
        spec: &["scope"],
        version: &[],
        run: CrdRun::Crd(|o, n, _, out| scope(o, n, out)),
    },
    CrdCheck {
        check: Check::StoredVersionRemoval,
        spec: &[],
        version: &[],
        run: CrdRun::Crd(stored_versions),
    },
    CrdCheck {
        check: Check::ServedVersionRemoval,
        spec: &[],
        version: &["served"],
        run: CrdRun::Crd(|o, n, _, out| served_versions(o, n, out)),
    },
    CrdCheck {
        check: Check::StorageVersionChange,
        spec: &[],
        version: &["storage"],
        run: CrdRun::Crd(|o, n, _, out| storage_version(o, n, out)),
    },
    CrdCheck {
        check: Check::Names,
        spec: &["names", "group"],
        version: &[],
        run: CrdRun::Crd(|o, n, _, out| names(o, n, out)),
    },
    CrdCheck {
        check: Check::PreserveUnknownFields,
        spec: &["preserveUnknownFields"],
        version: &[],
        run: CrdRun::Crd(|o, n, _, out| preserve_unknown_fields(o, n, out)),
    },
    CrdCheck {
        check: Check::Conversion,
        spec: &["conversion"],
        version: &[],
        run: CrdRun::Crd(conversion),
    },
    CrdCheck {
        check: Check::Subresources,
        spec: &[],
        version: &["subresources"],
        run: CrdRun::Version(subresources),
    },
    CrdCheck {
        check: Check::PrinterColumns,
        spec: &[],
        version: &["additionalPrinterColumns"],
        run: CrdRun::Version(printer_columns),
    },
    CrdCheck {
        check: Check::Deprecation,
        spec: &[],
        version: &["deprecated", "deprecationWarning"],
        run: CrdRun::Version(deprecation),
    },
    CrdCheck {
        check: Check::SelectableFields,
        spec: &[],
        version: &["selectableFields"],
        run: CrdRun::Version(selectable_fields),
    },
];

/// The key of `spec` (or, with `in_version`, of the version entry) a
/// CRD-level check's findings point at.
pub(super) fn reported_key(check: Check, in_version: bool) -> Option<&'static str> {
    let c = CRD_CHECKS.iter().find(|c| c.check == check)?;
    let keys = if in_version { c.version } else { c.spec };
    keys.first().copied()
}

fn claimed_spec_key(key: &str) -> bool {
    WALKED_SPEC_KEYS.contains(&key) || CRD_CHECKS.iter().any(|c| c.spec.contains(&key))
}

fn claimed_version_key(key: &str) -> bool {
    WALKED_VERSION_KEYS.contains(&key) || CRD_CHECKS.iter().any(|c| c.version.contains(&key))
}

struct Out<'a>(&'a mut Vec<Finding>);

impl Out<'_> {
    fn push(
        &mut self,
        check: Check,
        severity: Severity,
        version: Option<&str>,
        message: String,
        old: Option<Value>,
        new: Option<Value>,
    ) {
        let mut finding = Finding::new(check, severity, message).values(old, new);
        finding.version = version.map(str::to_string);
        self.0.push(finding);
    }
}

pub(super) fn check(old: &Crd, new: &Crd, stored: &StoredVersions, out: &mut Vec<Finding>) {
    let mut out = Out(out);
    for c in CRD_CHECKS {
        if let CrdRun::Crd(run) = c.run {
            run(old, new, stored, &mut out);
        }
    }
    for nv in &new.versions {
        if let Some(ov) = old.version(nv.name()) {
            for c in CRD_CHECKS {
                if let CrdRun::Version(run) = c.run {
                    run(ov, nv, &mut out);
                }
            }
        }
    }
    unknown(old, new, &mut out);
}

fn s(v: &str) -> Option<Value> {
    Some(Value::String(v.to_string()))
}

fn scope(old: &Crd, new: &Crd, out: &mut Out<'_>) {
    if old.spec.scope != new.spec.scope {
        out.push(
            Check::Scope,
            Severity::Error,
            None,
            format!(
                "scope changed {} -> {}: the API server rejects the update (scope is immutable). The only way \
is delete and re-create, which deletes every {} object",
                old.spec.scope, new.spec.scope, old.spec.names.kind
            ),
            s(&old.spec.scope),
            s(&new.spec.scope),
        );
    }
}

fn stored_versions(old: &Crd, new: &Crd, stored: &StoredVersions, out: &mut Out<'_>) {
    let assumed = stored.source == StoredVersionsSource::Assumed;
    for v in &stored.versions {
        if new.version(v).is_some() {
            continue;
        }
        // The API server keeps status.storedVersions a subset of
        // spec.versions, so a flag naming another version describes a
        // cluster that cannot exist.
        if stored.source == StoredVersionsSource::Flag && old.version(v).is_none() {
            out.push(
                Check::StoredVersionRemoval,
                Severity::Warning,
                Some(v),
                format!(
                    "--stored-versions names {v}, which the old CRD does not define: the API server never lists \
such a version in status.storedVersions, so it is ignored; check the flag against `kubectl get crd {} -o \
jsonpath='{{.status.storedVersions}}'`",
                    old.name
                ),
                s(v),
                None,
            );
            continue;
        }
        let how = match stored.source {
            StoredVersionsSource::Status | StoredVersionsSource::Flag => {
                format!("{} lists it", stored.source)
            }
            StoredVersionsSource::Assumed => {
                format!("it is the current storage version ({})", stored.source)
            }
        };
        out.push(
            Check::StoredVersionRemoval,
            Severity::Error,
            Some(v),
            format!(
                "stored version {v} removed from spec.versions while {how}: the API server rejects the update, \
failing the upgrade half-way. First migrate every object to the storage version and trim \
status.storedVersions: `kubectl crd-safety migrate {}` does both, safely; then drop the version",
                new.name
            ),
            s(v),
            None,
        );
    }
    if assumed {
        let storage = old.storage_version().name();
        for ov in &old.versions {
            if ov.name() != storage && new.version(ov.name()).is_none() {
                out.push(
                    Check::StoredVersionRemoval,
                    Severity::Warning,
                    Some(ov.name()),
                    format!(
                        "version {} removed; it is not the current storage version, but it may still be listed in \
status.storedVersions if it ever was, and a manifest does not carry that list. Check with `kubectl get crd {} \
-o jsonpath='{{.status.storedVersions}}'`, pass --stored-versions, or run apply-check against the cluster",
                        ov.name(),
                        old.name
                    ),
                    s(ov.name()),
                    None,
                );
            }
        }
    }
}

fn served_versions(old: &Crd, new: &Crd, out: &mut Out<'_>) {
    // With no version served, nothing reads, lists or counts the stored
    // objects any more (the webhook's deletion guard included), and
    // deleting the CRD then deletes them unseen.
    let none_left = new.served_versions().next().is_none();
    for ov in old.served_versions() {
        let name = ov.name();
        match new.version(name) {
            Some(nv) if !nv.spec.served && none_left => out.push(
                Check::ServedVersionRemoval,
                Severity::Error,
                Some(name),
                format!(
                    "version {name} no longer served, and no version of {} is served any more: every object \
stored under it can no longer be read, written, listed or counted, and deleting the CRD in this state deletes \
them unseen. Keep at least one version served",
                    new.name
                ),
                Some(Value::Bool(true)),
                Some(Value::Bool(false)),
            ),
            None => out.push(
                Check::ServedVersionRemoval,
                Severity::Warning,
                Some(name),
                format!(
                    "served version {name} removed: every client, controller and manifest still using {}/{name} \
gets 404 from then on. Mark it deprecated for a release first, and check that nothing uses it",
                    new.spec.group
                ),
                Some(Value::Bool(true)),
                None,
            ),
            Some(nv) if !nv.spec.served => out.push(
                Check::ServedVersionRemoval,
                Severity::Warning,
                Some(name),
                format!(
                    "version {name} no longer served: clients using {}/{name} get 404 (stored data stays \
readable through the other versions)",
                    new.spec.group
                ),
                Some(Value::Bool(true)),
                Some(Value::Bool(false)),
            ),
            _ => {}
        }
    }
}

fn storage_version(old: &Crd, new: &Crd, out: &mut Out<'_>) {
    let (o, n) = (old.storage_version().name(), new.storage_version().name());
    if o == n {
        return;
    }
    let lossy = new.conversion_strategy() == "None"
        && new
            .version(o)
            .is_some_and(|ov| ov.schema != new.storage_version().schema);
    let extra = if lossy {
        format!(
            "; with conversion None and different schemas, objects read or written through {n} lose the fields \
{n} does not describe (see conversionDataLoss)"
        )
    } else {
        String::new()
    };
    out.push(
        Check::StorageVersionChange,
        Severity::Info,
        None,
        format!(
            "storage version {o} -> {n}: new and updated objects are written as {n}; existing objects stay stored \
as {o} until re-written, and {o} stays in status.storedVersions until a storage migration removes it{extra}"
        ),
        s(o),
        s(n),
    );
}

fn names(old: &Crd, new: &Crd, out: &mut Out<'_>) {
    let (on, nn) = (&old.spec.names, &new.spec.names);
    let singular = |c: &Crd| {
        c.spec
            .names
            .singular
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| c.spec.names.kind.to_lowercase())
    };
    let list_kind = |c: &Crd| {
        c.spec
            .names
            .list_kind
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("{}List", c.spec.names.kind))
    };
    let identity = [
        ("group", old.spec.group.clone(), new.spec.group.clone()),
        ("kind", on.kind.clone(), nn.kind.clone()),
        ("plural", on.plural.clone(), nn.plural.clone()),
        ("singular", singular(old), singular(new)),
        ("listKind", list_kind(old), list_kind(new)),
    ];
    for (field, o, n) in identity {
        if o != n {
            out.push(
                Check::Names,
                Severity::Error,
                None,
                format!(
                    "names.{field} changed {o} -> {n}: {}",
                    if matches!(field, "group" | "kind" | "plural") {
                        "the API server rejects it once the CRD is established, and every client addressing the resource by its old name breaks"
                    } else {
                        "clients and kubectl commands using the old name break"
                    }
                ),
                s(&o),
                s(&n),
            );
        }
    }
    for (field, o, n) in [
        ("shortNames", &on.short_names, &nn.short_names),
        ("categories", &on.categories, &nn.categories),
    ] {
        let empty = Vec::new();
        let (o, n) = (o.as_ref().unwrap_or(&empty), n.as_ref().unwrap_or(&empty));
        let removed: Vec<&String> = o.iter().filter(|x| !n.contains(x)).collect();
        if !removed.is_empty() {
            let removed: Vec<&str> = removed.iter().map(|s| s.as_str()).collect();
            out.push(
                Check::Names,
                Severity::Warning,
                None,
                format!(
                    "names.{field} removed: {}: `kubectl get {}` and scripts using it stop working",
                    removed.join(", "),
                    removed[0]
                ),
                serde_json::to_value(o).ok(),
                serde_json::to_value(n).ok(),
            );
        }
    }
}

fn preserve_unknown_fields(old: &Crd, new: &Crd, out: &mut Out<'_>) {
    if old.preserve_unknown_fields() && !new.preserve_unknown_fields() {
        let written: Vec<Option<&Schema>> = old.versions.iter().map(|v| Some(&v.schema)).collect();
        if new
            .versions
            .iter()
            .all(|v| pruning::drops_nothing(&v.schema, &written))
        {
            out.push(
                Check::PreserveUnknownFields,
                Severity::Info,
                None,
                "spec.preserveUnknownFields true -> false: pruning starts, but it drops nothing stored: every \
version's schema keeps unknown fields (x-kubernetes-preserve-unknown-fields) wherever it describes an object, \
and the scalars it describes were scalars in every old version"
                    .to_string(),
                Some(Value::Bool(true)),
                Some(Value::Bool(false)),
            );
            return;
        }
        out.push(
            Check::PreserveUnknownFields,
            Severity::Error,
            None,
            "spec.preserveUnknownFields true -> false: the CRD kept every unknown field until now (legacy \
v1beta1 behaviour); from now on the API server prunes fields the schemas do not describe, so data stored in \
them is dropped on each object's next write. Make sure the schemas describe everything stored first"
                .to_string(),
            Some(Value::Bool(true)),
            Some(Value::Bool(false)),
        );
    }
}

/// Served versions whose schemas differ from each other, pairwise.
fn schemas_differ(crd: &Crd) -> bool {
    let served: Vec<&CrdVersion> = crd.served_versions().collect();
    served.windows(2).any(|w| w[0].schema != w[1].schema)
}

/// The versions objects can be read, written or stored in once the new CRD
/// is applied: its served versions, its storage version and the stored
/// versions it keeps. An object is only ever converted between two of them.
fn versions_in_use<'a>(new: &'a Crd, stored: &'a StoredVersions) -> Vec<&'a str> {
    let mut names: Vec<&str> = new
        .served_versions()
        .map(CrdVersion::name)
        .chain(std::iter::once(new.storage_version().name()))
        .chain(
            stored
                .versions
                .iter()
                .map(String::as_str)
                .filter(|v| new.version(v).is_some()),
        )
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn conversion(old: &Crd, new: &Crd, stored: &StoredVersions, out: &mut Out<'_>) {
    let (os, ns) = (old.conversion_strategy(), new.conversion_strategy());
    let conv_value = |c: &Crd| c.manifest.pointer("/spec/conversion").cloned();
    if os == "Webhook" && ns == "None" {
        let in_use = versions_in_use(new, stored);
        // An assumed list may miss a version objects are still stored in,
        // unless the new CRD has only one version (the API server refuses
        // it while status.storedVersions lists any other).
        let known = new.versions.len() == 1 || stored.source != StoredVersionsSource::Assumed;
        if let [only] = in_use.as_slice()
            && known
        {
            out.push(
                Check::Conversion,
                Severity::Info,
                None,
                if new.versions.len() == 1 {
                    format!(
                        "conversion Webhook -> None: the new CRD has the single version {only}, so every object \
is read, written and stored in it, nothing is ever converted and the webhook is no longer needed"
                    )
                } else {
                    format!(
                        "conversion Webhook -> None: {only} is the only version served or stored ({}), so every \
object is read, written and stored in it, nothing is ever converted and the webhook is no longer needed",
                        stored.source
                    )
                },
                conv_value(old),
                conv_value(new),
            );
            return;
        }
        let served = new.served_versions().count();
        let severity = if served > 1 && schemas_differ(new) {
            Severity::Error
        } else {
            Severity::Warning
        };
        out.push(
            Check::Conversion,
            severity,
            None,
            format!(
                "conversion Webhook -> None: objects are no longer converted between versions, only their \
apiVersion is rewritten, so objects stored in one version and read through another {}",
                if severity == Severity::Error {
                    "lose or misread every field whose schema differs between the served versions"
                } else {
                    "are read as they are stored (safe only while all versions share one schema)"
                }
            ),
            conv_value(old),
            conv_value(new),
        );
    } else if os == "None" && ns == "Webhook" {
        out.push(
            Check::Conversion,
            Severity::Info,
            None,
            "conversion None -> Webhook: every read and write in a non-storage version now goes through the \
webhook; if it is down, those requests fail"
                .to_string(),
            conv_value(old),
            conv_value(new),
        );
    } else if os == "Webhook" && ns == "Webhook" {
        let ca = |c: &Crd| {
            c.manifest
                .pointer("/spec/conversion/webhook/clientConfig/caBundle")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .is_some()
        };
        if ca(old) && !ca(new) {
            out.push(
                Check::Conversion,
                Severity::Warning,
                None,
                "conversion webhook caBundle is missing from the new CRD: applying it removes the CA the \
cluster uses to trust the webhook (usually injected by cert-manager's cainjector), and conversions fail until \
it is injected again"
                    .to_string(),
                None,
                None,
            );
        }
        let strip_ca = |c: &Crd| {
            let mut v = c.manifest.pointer("/spec/conversion").cloned();
            if let Some(cc) = v
                .as_mut()
                .and_then(|v| v.pointer_mut("/webhook/clientConfig"))
                .and_then(Value::as_object_mut)
            {
                cc.remove("caBundle");
            }
            v
        };
        let (o, n) = (strip_ca(old), strip_ca(new));
        if !opt_eq(o.as_ref(), n.as_ref()) {
            out.push(
                Check::Conversion,
                Severity::Info,
                None,
                "conversion webhook settings changed (service, URL or conversionReviewVersions): make sure the \
new endpoint is serving before applying"
                    .to_string(),
                o,
                n,
            );
        }
    }
    // Reported once, when it starts; a CRD that always had it is not news.
    // Also skip it when Webhook -> None above already explains the loss.
    let already = (os == "None" && schemas_differ(old)) || os == "Webhook";
    if ns == "None" && new.served_versions().count() > 1 && schemas_differ(new) && !already {
        out.push(
            Check::Conversion,
            Severity::Warning,
            None,
            "conversion is None but the served versions' schemas differ: the API server only rewrites \
apiVersion, so a round trip through another version drops fields (see conversionDataLoss)"
                .to_string(),
            None,
            None,
        );
    }
}

fn opt_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => json_eq(a, b),
        _ => false,
    }
}

fn subresources(ov: &CrdVersion, nv: &CrdVersion, out: &mut Out<'_>) {
    let v = Some(nv.name());
    let sub = |c: &CrdVersion| c.spec.subresources.clone().unwrap_or_default();
    let (o, n) = (sub(ov), sub(nv));
    match (o.status.is_some(), n.status.is_some()) {
        (true, false) => out.push(
            Check::Subresources,
            Severity::Error,
            v,
            "status subresource removed: /status requests (how controllers write status) get 404, and writes \
to the main resource start overwriting status"
                .to_string(),
            Some(serde_json::json!({})),
            None,
        ),
        (false, true) => out.push(
            Check::Subresources,
            Severity::Warning,
            v,
            "status subresource added: writes to the main resource stop persisting .status, and status must \
be written through /status; a controller that sets status with a plain update silently loses it"
                .to_string(),
            None,
            Some(serde_json::json!({})),
        ),
        _ => {}
    }
    let to_v = |x: &Option<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceSubresourceScale>| {
        x.as_ref().and_then(|s| serde_json::to_value(s).ok())
    };
    match (&o.scale, &n.scale) {
        (Some(_), None) => out.push(
            Check::Subresources,
            Severity::Error,
            v,
            "scale subresource removed: kubectl scale and HorizontalPodAutoscalers targeting this resource fail".to_string(),
            to_v(&o.scale),
            None,
        ),
        (None, Some(_)) => out.push(
            Check::Subresources,
            Severity::Info,
            v,
            "scale subresource added".to_string(),
            None,
            to_v(&n.scale),
        ),
        (Some(a), Some(b)) if a != b => out.push(
            Check::Subresources,
            Severity::Warning,
            v,
            "scale subresource paths changed: autoscalers read and write replicas at the new paths from now on".to_string(),
            to_v(&o.scale),
            to_v(&n.scale),
        ),
        _ => {}
    }
}

fn printer_columns(ov: &CrdVersion, nv: &CrdVersion, out: &mut Out<'_>) {
    let empty = Vec::new();
    let o = ov
        .spec
        .additional_printer_columns
        .as_ref()
        .unwrap_or(&empty);
    let n = nv
        .spec
        .additional_printer_columns
        .as_ref()
        .unwrap_or(&empty);
    for oc in o {
        match n.iter().find(|c| c.name == oc.name) {
            None => out.push(
                Check::PrinterColumns,
                Severity::Info,
                Some(nv.name()),
                format!(
                    "printer column {:?} removed from kubectl get output",
                    oc.name
                ),
                serde_json::to_value(oc).ok(),
                None,
            ),
            Some(nc) if nc != oc => out.push(
                Check::PrinterColumns,
                Severity::Info,
                Some(nv.name()),
                format!(
                    "printer column {:?} changed (scripts parsing kubectl get output may break)",
                    oc.name
                ),
                serde_json::to_value(oc).ok(),
                serde_json::to_value(nc).ok(),
            ),
            _ => {}
        }
    }
    for nc in n.iter().filter(|c| !o.iter().any(|x| x.name == c.name)) {
        out.push(
            Check::PrinterColumns,
            Severity::Info,
            Some(nv.name()),
            format!("printer column {:?} added", nc.name),
            None,
            serde_json::to_value(nc).ok(),
        );
    }
}

fn deprecation(ov: &CrdVersion, nv: &CrdVersion, out: &mut Out<'_>) {
    let (od, nd) = (
        ov.spec.deprecated.unwrap_or(false),
        nv.spec.deprecated.unwrap_or(false),
    );
    if !od && nd {
        out.push(
            Check::Deprecation,
            Severity::Info,
            Some(nv.name()),
            format!(
                "version {} marked deprecated: its clients get a warning on every request{}",
                nv.name(),
                nv.spec
                    .deprecation_warning
                    .as_ref()
                    .map(|w| format!(" ({w:?})"))
                    .unwrap_or_default()
            ),
            Some(Value::Bool(false)),
            Some(Value::Bool(true)),
        );
    } else if od && !nd {
        out.push(
            Check::Deprecation,
            Severity::Info,
            Some(nv.name()),
            format!("version {} no longer deprecated", nv.name()),
            Some(Value::Bool(true)),
            Some(Value::Bool(false)),
        );
    } else if nd && ov.spec.deprecation_warning != nv.spec.deprecation_warning {
        out.push(
            Check::Deprecation,
            Severity::Info,
            Some(nv.name()),
            "deprecationWarning text changed".to_string(),
            ov.spec.deprecation_warning.clone().map(Value::String),
            nv.spec.deprecation_warning.clone().map(Value::String),
        );
    }
}

fn selectable_fields(ov: &CrdVersion, nv: &CrdVersion, out: &mut Out<'_>) {
    let paths = |v: &CrdVersion| -> Vec<String> {
        v.spec
            .selectable_fields
            .as_ref()
            .map(|f| f.iter().map(|x| x.json_path.clone()).collect())
            .unwrap_or_default()
    };
    let n = paths(nv);
    for p in paths(ov).into_iter().filter(|p| !n.contains(p)) {
        out.push(
            Check::SelectableFields,
            Severity::Warning,
            Some(nv.name()),
            format!("selectable field {p} removed: list and watch requests with a field selector on it are rejected"),
            s(&p),
            None,
        );
    }
}

fn unknown(old: &Crd, new: &Crd, out: &mut Out<'_>) {
    // Borrowed, not copied: the spec holds every schema.
    let empty = serde_json::Map::new();
    let (os, ns) = (
        spec_of(old).unwrap_or(&empty),
        spec_of(new).unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = os.keys().chain(ns.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        if claimed_spec_key(key) || opt_eq(os.get(key), ns.get(key)) {
            continue;
        }
        out.push(
            Check::UnknownChange,
            Severity::Error,
            None,
            format!(
                "spec.{key}: {} -> {} (no check understands this field)",
                show(os.get(key)),
                show(ns.get(key))
            ),
            os.get(key).cloned(),
            ns.get(key).cloned(),
        );
    }
    let (ovs, nvs) = (versions_of(old), versions_of(new));
    for nv in &nvs {
        let name = nv.get("name").and_then(Value::as_str).unwrap_or("");
        let Some(ov) = ovs
            .iter()
            .find(|o| o.get("name").and_then(Value::as_str) == Some(name))
        else {
            continue;
        };
        let mut keys: Vec<&String> = ov.keys().chain(nv.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            if claimed_version_key(key) || opt_eq(ov.get(key), nv.get(key)) {
                continue;
            }
            out.push(
                Check::UnknownChange,
                Severity::Error,
                Some(name),
                format!(
                    "versions[{name}].{key}: {} -> {} (no check understands this field)",
                    show(ov.get(key)),
                    show(nv.get(key))
                ),
                ov.get(key).cloned(),
                nv.get(key).cloned(),
            );
        }
    }
}

fn spec_of(c: &Crd) -> Option<&serde_json::Map<String, Value>> {
    c.manifest.get("spec").and_then(Value::as_object)
}

fn versions_of(c: &Crd) -> Vec<&serde_json::Map<String, Value>> {
    c.manifest
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    //! The declarations hold what they promise: every key a CRD-level check
    //! claims is one it compares, and every CRD-level check of the catalog
    //! is declared once.

    use serde_json::{Value, json};

    use super::*;
    use crate::compare::Family;

    fn crd(spec_extra: Value, v1_extra: Value, v2_extra: Value) -> Crd {
        let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}});
        let mut v1 = json!({"name": "v1", "served": true, "storage": true, "schema": schema});
        let mut v2 = json!({"name": "v2", "served": true, "storage": false, "schema": schema});
        for (entry, extra) in [(&mut v1, v1_extra), (&mut v2, v2_extra)] {
            for (k, x) in extra.as_object().into_iter().flatten() {
                entry[k] = x.clone();
            }
        }
        let mut spec = json!({
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [v1, v2],
        });
        for (k, x) in spec_extra.as_object().into_iter().flatten() {
            spec[k] = x.clone();
        }
        Crd::from_manifest(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": spec,
        }))
        .expect("fixture CRD")
    }

    /// A change of `key` alone, in the direction its check flags.
    fn change(key: &str) -> Option<(Crd, Crd)> {
        let none = || json!({});
        let spec = |o: Value, n: Value| {
            (
                crd(json!({ key: o }), none(), none()),
                crd(json!({ key: n }), none(), none()),
            )
        };
        let v2 = |o: Value, n: Value| {
            (
                crd(none(), none(), json!({ key: o })),
                crd(none(), none(), json!({ key: n })),
            )
        };
        Some(match key {
            "scope" => spec(json!("Namespaced"), json!("Cluster")),
            "group" => spec(json!("example.com"), json!("example.org")),
            "names" => spec(
                json!({"kind": "Widget", "plural": "widgets"}),
                json!({"kind": "Gadget", "plural": "gadgets"}),
            ),
            "preserveUnknownFields" => spec(json!(true), json!(false)),
            "conversion" => spec(
                json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                    "clientConfig": {"url": "https://conv.example.com", "caBundle": "Y2E="}}}),
                json!({"strategy": "None"}),
            ),
            "served" => v2(json!(true), json!(false)),
            "storage" => (
                crd(none(), none(), none()),
                crd(none(), json!({"storage": false}), json!({"storage": true})),
            ),
            "subresources" => v2(json!({"status": {}}), json!({})),
            "additionalPrinterColumns" => v2(
                json!([{"name": "A", "type": "string", "jsonPath": ".spec.a"}]),
                json!([{"name": "A", "type": "string", "jsonPath": ".spec.b"}]),
            ),
            "deprecated" => v2(json!(false), json!(true)),
            // The warning is only shown for a deprecated version.
            "deprecationWarning" => (
                crd(none(), none(), json!({"deprecated": true, key: "old"})),
                crd(none(), none(), json!({"deprecated": true, key: "new"})),
            ),
            "selectableFields" => v2(json!([{"jsonPath": ".spec.a"}]), json!([])),
            _ => return None,
        })
    }

    fn findings(old: &Crd, new: &Crd) -> Vec<Finding> {
        let stored = StoredVersions {
            versions: vec!["v1".into()],
            source: StoredVersionsSource::Flag,
        };
        let mut out = Vec::new();
        check(old, new, &stored, &mut out);
        out
    }

    #[test]
    fn every_key_a_crd_level_check_claims_is_one_it_compares() {
        for c in CRD_CHECKS {
            for &key in c.spec.iter().chain(c.version) {
                let (old, new) =
                    change(key).unwrap_or_else(|| panic!("no example change of {key}"));
                let found = findings(&old, &new);
                let dump: Vec<String> = found
                    .iter()
                    .map(|f| format!("{}: {}", f.check, f.message))
                    .collect();
                assert!(
                    found.iter().any(|f| f.check == c.check),
                    "{} claims {key}, but changing {key} yields no {} finding: {dump:#?}",
                    c.check,
                    c.check
                );
                assert!(
                    found.iter().all(|f| f.check != Check::UnknownChange),
                    "{key} is claimed, yet reported as unknown: {dump:#?}"
                );
            }
        }
    }

    #[test]
    fn a_key_no_check_claims_is_an_unknown_change() {
        let (old, new) = (
            crd(json!({"futureField": 1}), json!({}), json!({})),
            crd(
                json!({"futureField": 2}),
                json!({}),
                json!({"futureVersionField": true}),
            ),
        );
        let unknown: Vec<String> = findings(&old, &new)
            .into_iter()
            .filter(|f| f.check == Check::UnknownChange)
            .map(|f| f.message)
            .collect();
        assert_eq!(
            unknown,
            [
                "spec.futureField: 1 -> 2 (no check understands this field)",
                "versions[v2].futureVersionField: <none> -> true (no check understands this field)",
            ]
        );
    }

    #[test]
    fn every_crd_level_check_of_the_catalog_is_declared_once() {
        let mut catalog: Vec<Check> = Check::ALL
            .iter()
            .copied()
            .filter(|c| c.family() == Family::Crd)
            .collect();
        catalog.sort();
        let mut declared: Vec<Check> = CRD_CHECKS.iter().map(|c| c.check).collect();
        declared.sort();
        assert_eq!(declared, catalog);
    }

    #[test]
    fn every_check_of_a_version_entry_declares_what_it_reaches() {
        for c in CRD_CHECKS.iter().filter(|c| !c.version.is_empty()) {
            assert!(
                c.check.declared_reach().is_some(),
                "{} compares version entries: declare `reach` in its catalog row",
                c.check
            );
        }
    }
}
