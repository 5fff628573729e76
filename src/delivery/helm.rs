//! What `helm upgrade` and `helm uninstall` do with a chart's CRDs, from how
//! each side of a `diff` delivers them ([`Origin`]).
//!
//! Helm applies `crds/` on `helm install` only: `helm upgrade` (and Flux's
//! HelmRelease, whose `upgrade.crds` defaults to `Skip`) neither changes nor
//! adds a CRD there. A CRD rendered by `templates/` is part of the release:
//! upgraded with it, and deleted, with every object of its kind, when a
//! release stops rendering it (moved to `crds/`, removed, or switched off by
//! a value) or is uninstalled, unless the live CRD carries
//! `helm.sh/resource-policy: keep` (helm reads it on the cluster before
//! deleting). `tests/live/helm_delivery.rs` shows both with the real helm.

use serde_json::Value;

use crate::compare::{Check, Finding, Severity};
use crate::manifest::{LoadedCrd, ManifestSet, Origin};

/// The annotation that makes helm leave a resource in place.
const KEEP: &str = "helm.sh/resource-policy";

fn keeps(crd: &LoadedCrd) -> bool {
    keeps_live(&crd.crd.manifest)
}

/// Whether a CRD (as written, or as the cluster has it) carries the keep
/// policy.
pub fn keeps_live(crd: &Value) -> bool {
    crd["metadata"]["annotations"][KEEP] == "keep"
}

fn kind(crd: &LoadedCrd) -> &str {
    crd.crd.manifest["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or("object of the CRD")
}

fn is_chart(origin: &Origin) -> bool {
    !matches!(origin, Origin::Files)
}

/// Whether a side is read from a chart (one that renders no CRD, too).
pub fn side_is_chart(set: &ManifestSet) -> bool {
    !set.charts.is_empty() || set.crds.iter().any(|c| is_chart(&c.origin))
}

/// The directory of the file a CRD was read from (`chart/crds`, or
/// `git:REF:chart/crds`), which `apply -f` takes as it is.
fn directory(crd: &LoadedCrd) -> &str {
    let file = crd.location.file.as_str();
    file.rsplit_once('/').map_or(file, |(dir, _)| dir)
}

/// The findings of a CRD of NEW, against its namesake in OLD (`None`:
/// new in this release). `old_is_chart` says OLD is a release of a chart,
/// so that NEW is a `helm upgrade`; `added_fields` counts the fields NEW
/// adds, which the CRD left in place prunes from every write.
pub fn upgrade(
    old: Option<&LoadedCrd>,
    old_is_chart: bool,
    new: &LoadedCrd,
    added_fields: usize,
) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(o) = old
        && matches!(o.origin, Origin::ChartTemplate { .. })
        && !matches!(new.origin, Origin::ChartTemplate { .. })
        && is_chart(&new.origin)
        && !keeps(o)
    {
        out.push(deleted(o, Some(new)));
        return out;
    }
    if !old_is_chart || !matches!(new.origin, Origin::ChartCrds { .. }) {
        return out;
    }
    let changed = match old {
        Some(o) => o.crd.manifest["spec"] != new.crd.manifest["spec"],
        None => true,
    };
    if !changed {
        return out;
    }
    let pruned = if added_fields > 0 {
        format!(
            ", and the {added_fields} field(s) this release adds are pruned from every object its \
             controller writes"
        )
    } else {
        String::new()
    };
    let (what, result) = if old.is_some() {
        ("this change", "the cluster keeps the CRD it has")
    } else {
        ("this new CRD", "the cluster does not get it")
    };
    let message = format!(
        "helm upgrade does not apply {what} of crds/: Helm installs crds/ on `helm install` only \
         (Flux's HelmRelease skips them on upgrade too), so {result}{pruned}. Apply the CRDs \
         first (`kubectl crd-safety apply -f {}`), then upgrade",
        directory(new)
    );
    let mut f = Finding::new(Check::HelmCrdsNotUpgraded, Severity::Warning, message);
    f.old = Some(Value::from(added_fields));
    out.push(f);
    out
}

/// The finding of a CRD of OLD's templates that NEW does not render at all,
/// when NEW is a chart too.
pub fn absent(old: &LoadedCrd, new_is_chart: bool) -> Vec<Finding> {
    if new_is_chart && matches!(old.origin, Origin::ChartTemplate { .. }) && !keeps(old) {
        vec![deleted(old, None)]
    } else {
        Vec::new()
    }
}

fn deleted(old: &LoadedCrd, new: Option<&LoadedCrd>) -> Finding {
    let now = match new {
        Some(n) => format!(
            "NEW has it in crds/ ({}), which helm upgrade never applies",
            n.location.file
        ),
        None => "NEW does not render it (removed, or switched off by a value)".into(),
    };
    let message = format!(
        "helm upgrade deletes this CRD and every {}: OLD renders it from templates/ ({}) and {now}, \
         so helm removes it from the release and the API server deletes every object of it. Before \
         upgrading, mark the installed CRD to be kept (`kubectl annotate crd {} {KEEP}=keep`, and \
         the same annotation in the chart), or keep rendering it from templates/",
        kind(old),
        old.location.file,
        old.crd.name
    );
    Finding::new(Check::HelmDeletesCrd, Severity::Error, message)
}

/// The finding of a live CRD that `release` (`Helm release ns/name`) renders
/// from its templates/ (the cluster's CRD carries the release annotations)
/// when NEW's chart has it under `crds/`: upgrading that release with NEW
/// deletes it, unless the live CRD carries the keep policy, which helm
/// reads on the cluster before deleting.
pub fn release_deletes(live: &Value, release: &str, new: &LoadedCrd) -> Option<Finding> {
    if keeps_live(live) {
        return None;
    }
    let message = format!(
        "helm upgrade of {release} with this chart deletes this CRD and every {}: the cluster's \
         CRD is part of that release (rendered from its templates/) and NEW has it in crds/ \
         ({}), which helm upgrade never applies, so helm removes it from the release and the \
         API server deletes every object of it. Before upgrading, mark the installed CRD to be \
         kept (`kubectl annotate crd {} {KEEP}=keep`, and the same annotation in the chart), or \
         keep rendering it from templates/",
        kind(new),
        new.location.file,
        new.crd.name
    );
    Some(Finding::new(
        Check::HelmDeletesCrd,
        Severity::Error,
        message,
    ))
}

/// The finding of a live CRD that `release` renders from its templates
/// now and the upgrade no longer renders at all (removed, or switched off
/// by a value): helm deletes what a release stops rendering, unless the
/// live object carries the keep policy, which helm reads on the cluster
/// before deleting.
pub fn release_drops(live: &Value, release: &str) -> Option<Finding> {
    if keeps_live(live) {
        return None;
    }
    let name = live["metadata"]["name"].as_str().unwrap_or("this CRD");
    let kind = live["spec"]["names"]["kind"]
        .as_str()
        .unwrap_or("object of the CRD");
    let message = format!(
        "helm upgrade of {release} deletes this CRD and every {kind}: the release renders it from \
         its templates now and the upgrade does not render it (removed, or switched off by a \
         value), so helm removes it from the release and the API server deletes every object of \
         it. Before upgrading, mark the installed CRD to be kept (`kubectl annotate crd {name} \
         {KEEP}=keep`), or set the value that keeps rendering it"
    );
    Some(Finding::new(
        Check::HelmDeletesCrd,
        Severity::Error,
        message,
    ))
}

/// One finding per chart of `new` whose templates render CRDs without the
/// keep policy, on the first of them (`.0` is its index in `new.crds`).
pub fn uninstall(new: &ManifestSet) -> Vec<(usize, Finding)> {
    let mut charts: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, c) in new.crds.iter().enumerate() {
        let Origin::ChartTemplate { chart } = &c.origin else {
            continue;
        };
        if keeps(c) {
            continue;
        }
        match charts.iter_mut().find(|(name, _)| name == chart) {
            Some((_, crds)) => crds.push(i),
            None => charts.push((chart, vec![i])),
        }
    }
    charts
        .into_iter()
        .map(|(chart, crds)| {
            let names: Vec<&str> = crds
                .iter()
                .map(|&i| new.crds[i].crd.name.as_str())
                .collect();
            let message = format!(
                "helm uninstall of {chart} deletes {} CRD(s) of its templates/ ({}) and every \
                 object of them: they are part of the release and carry no `{KEEP}: keep`. Add \
                 that annotation to each in the chart",
                names.len(),
                names.join(", ")
            );
            (
                crds[0],
                Finding::new(Check::HelmUninstallDeletes, Severity::Warning, message),
            )
        })
        .collect()
}
