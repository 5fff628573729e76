//! What the engine that rolls a CRD out will really do to it: a Flux
//! HelmRelease applies the CRDs of its chart's `crds/` by its own policy
//! (`upgrade.crds`: `Skip`, the default, and `Create` never update an
//! existing CRD; `CreateReplace` replaces it whole), and an Argo CD
//! application with `Replace=true` replaces what it syncs. A replace drops
//! every field the manifest does not have, such as the `caBundle` a
//! cainjector keeps in the CRD's conversion webhook (fluxcd/helm-controller
//! #1588). Pure: the live CRD, the engine's object and NEW's CRD in, the
//! findings out; [`crate::live_check`] reads the objects.

use serde_json::Value;

use crate::compare::{Check, Finding, Severity};
use crate::crd::ResourceRef;

use super::owners::{Owner, OwnerKind};

/// The namespace of Argo CD's applications when the tracking names none.
pub const ARGO_CD_NAMESPACE: &str = "argocd";

/// The engine object to read for `owner`, if its kind has a CRD policy.
pub fn object_of(owner: &Owner) -> Option<(ResourceRef, String)> {
    let (group, version, plural, namespace) = match owner.kind {
        OwnerKind::FluxHelmRelease => (
            "helm.toolkit.fluxcd.io",
            "v2",
            "helmreleases",
            owner.namespace.clone()?,
        ),
        OwnerKind::ArgoCdApplication => (
            "argoproj.io",
            "v1alpha1",
            "applications",
            owner
                .namespace
                .clone()
                .unwrap_or_else(|| ARGO_CD_NAMESPACE.to_string()),
        ),
        _ => return None,
    };
    Some((
        ResourceRef {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            namespace: Some(namespace),
        },
        owner.name.clone(),
    ))
}

/// The conversion webhook's `caBundle` of a CRD, when it has one.
fn ca_bundle(crd: &Value) -> Option<&str> {
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"]
        .as_str()
        .filter(|b| !b.is_empty())
}

/// The finding of a replace that drops the live CRD's `caBundle`, which
/// NEW's manifest does not carry.
fn replace_drops_ca_bundle(live: &Value, new: &Value, how: &str) -> Option<Finding> {
    ca_bundle(live)?;
    if ca_bundle(new).is_some() {
        return None;
    }
    Some(Finding::new(
        Check::RolloutCrdPolicy,
        Severity::Error,
        format!(
            "{how} replaces the CRD with the manifest, which has no caBundle in \
             spec.conversion.webhook.clientConfig: the caBundle the cluster's CRD has (put there \
             by a cainjector) is dropped, and every read or write through a version other than \
             the stored one fails until the cainjector puts it back. Use server-side apply, \
             which keeps the fields another writer owns, or carry the caBundle in the manifest"
        ),
    ))
}

/// What `engine`, the object of `owner`, does to `live` when it rolls out
/// NEW's `new`; `changes` says whether NEW differs from the cluster's CRD.
pub fn findings(
    owner: &Owner,
    engine: &Value,
    live: &Value,
    new: &Value,
    changes: bool,
) -> Vec<Finding> {
    // The application as it was read: in Argo CD's namespace when its
    // tracking names none.
    let who = match (&owner.kind, &owner.namespace) {
        (OwnerKind::ArgoCdApplication, None) => {
            format!("Argo CD application {ARGO_CD_NAMESPACE}/{}", owner.name)
        }
        _ => owner.who(),
    };
    match owner.kind {
        OwnerKind::FluxHelmRelease => {
            // A CRD of the chart's templates/ carries helm's release
            // annotation and is upgraded with the release, whatever the
            // policy; the policy is for the chart's crds/.
            if live["metadata"]["annotations"]["meta.helm.sh/release-name"].is_string() {
                return Vec::new();
            }
            let policy = engine["spec"]["upgrade"]["crds"].as_str().unwrap_or("Skip");
            match policy {
                "CreateReplace" => {
                    let how = format!("{who} (upgrade.crds: CreateReplace)");
                    replace_drops_ca_bundle(live, new, &how)
                        .into_iter()
                        .collect()
                }
                "Create" | "Skip" if changes => {
                    let what = if policy == "Skip" {
                        "Skip (the default): helm-controller never applies the CRDs of the \
                         chart's crds/ on upgrade"
                    } else {
                        "Create: helm-controller creates the CRDs of the chart's crds/ that \
                         are missing and leaves the others as they are"
                    };
                    vec![Finding::new(
                        Check::RolloutCrdPolicy,
                        Severity::Warning,
                        format!(
                            "{who} has upgrade.crds: {what}, so this change does not land \
                             through Flux. Set upgrade.crds: CreateReplace (which replaces \
                             the CRD whole) or apply the CRDs yourself first \
                             (`kubectl crd-safety apply`)"
                        ),
                    )]
                }
                _ => Vec::new(),
            }
        }
        OwnerKind::ArgoCdApplication => {
            let mut options: Vec<String> = engine["spec"]["syncPolicy"]["syncOptions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str().map(str::to_string))
                .collect();
            // The CRD's own annotation adds options for this object.
            if let Some(own) =
                live["metadata"]["annotations"]["argocd.argoproj.io/sync-options"].as_str()
            {
                options.extend(own.split(',').map(|o| o.trim().to_string()));
            }
            let on = |name: &str| options.iter().any(|o| o == &format!("{name}=true"));
            if on("Replace") && !on("ServerSideApply") {
                let how = format!("{who} (sync option Replace=true)");
                replace_drops_ca_bundle(live, new, &how)
                    .into_iter()
                    .collect()
            } else {
                Vec::new()
            }
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner(kind: OwnerKind) -> Owner {
        Owner {
            kind,
            name: "op".into(),
            namespace: Some("ops".into()),
            evidence: Vec::new(),
            reverts: true,
            effect: String::new(),
            new_chart: None,
        }
    }

    fn with_bundle(bundle: &str) -> Value {
        json!({"metadata": {"name": "widgets.example.com"}, "spec": {"conversion": {
            "strategy": "Webhook", "webhook": {"clientConfig": {"caBundle": bundle}}}}})
    }

    #[test]
    fn a_flux_release_that_skips_crds_says_the_change_does_not_land() {
        let flux = owner(OwnerKind::FluxHelmRelease);
        let live = json!({"metadata": {"name": "widgets.example.com"}});
        for policy in [
            json!({}),
            json!({"upgrade": {"crds": "Skip"}}),
            json!({"upgrade": {"crds": "Create"}}),
        ] {
            let engine = json!({"spec": policy});
            let found = findings(&flux, &engine, &live, &live, true);
            assert_eq!(found.len(), 1, "{engine}");
            assert_eq!(found[0].severity, Severity::Warning);
            assert!(
                found[0].message.contains("does not land"),
                "{}",
                found[0].message
            );
            // Nothing to say when nothing changes.
            assert!(findings(&flux, &engine, &live, &live, false).is_empty());
        }
        // A CRD of the chart's templates/ is upgraded with the release.
        let templated = json!({"metadata": {"annotations": {"meta.helm.sh/release-name": "op"}}});
        assert!(findings(&flux, &json!({"spec": {}}), &templated, &templated, true).is_empty());
    }

    #[test]
    fn a_replace_drops_the_ca_bundle_the_manifest_does_not_carry() {
        let live = with_bundle("LS0tLS1CRUdJTg==");
        let new = with_bundle("");
        let flux = owner(OwnerKind::FluxHelmRelease);
        let replace = json!({"spec": {"upgrade": {"crds": "CreateReplace"}}});
        let found = findings(&flux, &replace, &live, &new, true);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].severity, Severity::Error);
        assert!(
            found[0].message.contains("CreateReplace"),
            "{}",
            found[0].message
        );
        // The manifest carries it: nothing is dropped.
        assert!(findings(&flux, &replace, &live, &live, true).is_empty());

        let argo = owner(OwnerKind::ArgoCdApplication);
        let app = |options: Value| json!({"spec": {"syncPolicy": {"syncOptions": options}}});
        assert_eq!(
            findings(&argo, &app(json!(["Replace=true"])), &live, &new, true).len(),
            1
        );
        assert!(
            findings(
                &argo,
                &app(json!(["Replace=true", "ServerSideApply=true"])),
                &live,
                &new,
                true
            )
            .is_empty()
        );
        assert!(findings(&argo, &app(json!([])), &live, &new, true).is_empty());
        // The option on the CRD itself counts too.
        let mut annotated = live.clone();
        annotated["metadata"]["annotations"] =
            json!({"argocd.argoproj.io/sync-options": "Replace=true"});
        assert_eq!(
            findings(&argo, &app(json!([])), &annotated, &new, true).len(),
            1
        );
    }
}
