//! CRD-level checks: scope, versions and their flags, names, subresources,
//! printer columns, conversion, and the legacy `preserveUnknownFields`.
//! Anything in `spec` or a version entry that none of these reads is an
//! `unknownChange`.

use serde_json::Value;

use super::{Check, Finding, Severity, StoredVersions, StoredVersionsSource};
use crate::crd::{Crd, CrdVersion};
use crate::json::{json_eq, show};

/// Spec keys read by the checks below.
const SPEC_KEYS: &[&str] = &[
    "group",
    "names",
    "scope",
    "versions",
    "conversion",
    "preserveUnknownFields",
];

/// Version keys read by the checks below (schemas are compared field by field).
const VERSION_KEYS: &[&str] = &[
    "name",
    "served",
    "storage",
    "schema",
    "subresources",
    "additionalPrinterColumns",
    "deprecated",
    "deprecationWarning",
    "selectableFields",
];

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
    scope(old, new, &mut out);
    stored_versions(old, new, stored, &mut out);
    served_versions(old, new, &mut out);
    storage_version(old, new, &mut out);
    names(old, new, &mut out);
    preserve_unknown_fields(old, new, &mut out);
    conversion(old, new, stored, &mut out);
    for nv in &new.versions {
        if let Some(ov) = old.version(nv.name()) {
            subresources(ov, nv, &mut out);
            printer_columns(ov, nv, &mut out);
            deprecation(ov, nv, &mut out);
            selectable_fields(ov, nv, &mut out);
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
        if SPEC_KEYS.contains(&key.as_str()) || opt_eq(os.get(key), ns.get(key)) {
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
            if VERSION_KEYS.contains(&key.as_str()) || opt_eq(ov.get(key), nv.get(key)) {
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
