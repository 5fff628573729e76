//! Who else manages a live CRD, and what they do to a change made around
//! them: a Helm release, an Argo CD application, a Flux Kustomization or
//! HelmRelease, OLM, or an operator known only by its field manager.
//!
//! Each tool leaves its own mark on what it applies, and that mark is the
//! only way to tell from the object: Helm annotates what its release
//! renders from `templates/` (`meta.helm.sh/release-name`, `-namespace`;
//! CRDs from `crds/` carry nothing), Argo CD writes its tracking annotation
//! or label, Flux labels what its controllers apply, OLM labels what its
//! install plans create, and every writer leaves its field manager in
//! `metadata.managedFields`. A reconciler puts its own version back, so a
//! change applied around it does not last; `apply` asks once more before
//! making one (`docs/delivery.md`, "Who owns the CRD"). Pure: it reads the
//! live object and returns what it recognized.

use serde::Serialize;
use serde_json::Value;

use crate::compare::Finding;
use crate::manifest::{LoadedCrd, Origin};

const HELM_RELEASE: &str = "meta.helm.sh/release-name";
const HELM_NAMESPACE: &str = "meta.helm.sh/release-namespace";
const ARGO_TRACKING: &str = "argocd.argoproj.io/tracking-id";
const ARGO_INSTANCE: &str = "argocd.argoproj.io/instance";
const INSTANCE: &str = "app.kubernetes.io/instance";
const FLUX_KUSTOMIZATION: (&str, &str) = (
    "kustomize.toolkit.fluxcd.io/name",
    "kustomize.toolkit.fluxcd.io/namespace",
);
const FLUX_HELM_RELEASE: (&str, &str) = (
    "helm.toolkit.fluxcd.io/name",
    "helm.toolkit.fluxcd.io/namespace",
);
/// The annotation that makes kustomize-controller leave an object alone.
const FLUX_RECONCILE: &str = "kustomize.toolkit.fluxcd.io/reconcile";
const OLM_MANAGED: &str = "olm.managed";
/// OLM's per-operator label: `operators.coreos.com/<package>.<namespace>`.
const OLM_OPERATOR_PREFIX: &str = "operators.coreos.com/";

/// What kind of owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum OwnerKind {
    /// A Helm release whose `templates/` render the CRD.
    HelmRelease,
    /// An Argo CD application.
    ArgoCdApplication,
    /// A Flux Kustomization.
    FluxKustomization,
    /// A Flux HelmRelease.
    FluxHelmRelease,
    /// The Operator Lifecycle Manager, for one operator.
    Olm,
    /// Known only by the field manager that wrote the CRD's spec.
    FieldManager,
}

/// Where NEW, read from a chart, has a CRD a Helm release owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ChartPlace {
    /// Rendered from `templates/`: an upgrade with it updates the CRD.
    Templates,
    /// Under `crds/`: an upgrade with it deletes the CRD.
    Crds,
}

/// NEW's chart, for a CRD a Helm release owns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewChart {
    /// The chart as the user named it.
    pub chart: String,
    /// Where it has the CRD.
    pub place: ChartPlace,
}

/// Someone who manages a live CRD.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Owner {
    /// What kind of owner.
    pub kind: OwnerKind,
    /// The release, application, Kustomization, HelmRelease, operator
    /// package or field manager.
    pub name: String,
    /// Its namespace, where it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The labels, annotations and field managers it was recognized by.
    pub evidence: Vec<String>,
    /// It puts its own version back (a reconciler, an upgrade that patches
    /// against the live object): `apply` asks again before a change.
    pub reverts: bool,
    /// What it does to a change made around it, and what to do instead.
    pub effect: String,
    /// For a Helm release when NEW is a chart: where the chart has the CRD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_chart: Option<NewChart>,
}

impl Owner {
    /// Who it is, for a sentence: `Helm release team/op`.
    pub fn who(&self) -> String {
        let name = match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        };
        match self.kind {
            OwnerKind::HelmRelease => format!("Helm release {name}"),
            OwnerKind::ArgoCdApplication => format!("Argo CD application {name}"),
            OwnerKind::FluxKustomization => format!("Flux Kustomization {name}"),
            OwnerKind::FluxHelmRelease => format!("Flux HelmRelease {name}"),
            OwnerKind::Olm => match &self.namespace {
                Some(ns) => format!("OLM (operator {} in {ns})", self.name),
                None => format!("OLM (operator {})", self.name),
            },
            OwnerKind::FieldManager => format!("field manager `{name}`"),
        }
    }

    /// The tool, for a prompt: `Helm`, `Argo CD`, `Flux`, `OLM`, or `an
    /// operator` for a field manager nobody knows.
    pub fn tool(&self) -> &'static str {
        match self.kind {
            OwnerKind::HelmRelease => "Helm",
            OwnerKind::ArgoCdApplication => "Argo CD",
            OwnerKind::FluxKustomization | OwnerKind::FluxHelmRelease => "Flux",
            OwnerKind::Olm => "OLM",
            OwnerKind::FieldManager => match self.name.as_str() {
                "helm" => "Helm",
                "helm-controller" | "kustomize-controller" => "Flux",
                "olm" | "catalog" => "OLM",
                m if m.starts_with("argo") => "Argo CD",
                _ => "an operator",
            },
        }
    }

    /// The report's line: who, then what they do (and, for a Helm release
    /// and a chart, what NEW's chart does).
    pub fn line(&self) -> String {
        let mut line = format!("{}: {}", self.who(), self.effect);
        if let Some(chart) = &self.new_chart {
            line.push_str(". ");
            line.push_str(&match chart.place {
                ChartPlace::Templates => format!(
                    "NEW ({}) still renders it from templates/, so upgrading the release with \
                     it updates the CRD",
                    chart.chart
                ),
                ChartPlace::Crds => format!(
                    "NEW ({}) has it in crds/, not templates/: upgrading the release with it \
                     deletes the CRD (helmDeletesCrd)",
                    chart.chart
                ),
            });
        }
        line
    }
}

fn label<'a>(live: &'a Value, key: &str) -> Option<&'a str> {
    live["metadata"]["labels"][key]
        .as_str()
        .filter(|s| !s.is_empty())
}

fn annotation<'a>(live: &'a Value, key: &str) -> Option<&'a str> {
    live["metadata"]["annotations"][key]
        .as_str()
        .filter(|s| !s.is_empty())
}

/// The owners of `live`, a CRD as the API server returns it, in a fixed
/// order (Helm, Argo CD, Flux, OLM, then the other field managers); `ours`
/// is this tool's own field manager, which is nobody else.
pub fn of(live: &Value, ours: &str) -> Vec<Owner> {
    let mut owners = Vec::new();
    owners.extend(helm_release(live));
    owners.extend(argo_cd(live));
    owners.extend(flux(live, FLUX_KUSTOMIZATION, OwnerKind::FluxKustomization));
    owners.extend(flux(live, FLUX_HELM_RELEASE, OwnerKind::FluxHelmRelease));
    owners.extend(olm(live));
    for manager in spec_managers(live, ours) {
        let evidence = format!("field manager {manager}");
        let joins = KNOWN_MANAGERS
            .iter()
            .find(|k| k.manager == manager)
            .and_then(|k| k.kind);
        match owners.iter_mut().find(|o| Some(o.kind) == joins) {
            Some(owner) => owner.evidence.push(evidence),
            None => owners.push(field_manager(&manager)),
        }
    }
    owners
}

fn helm_release(live: &Value) -> Option<Owner> {
    let name = annotation(live, HELM_RELEASE)?;
    let namespace = annotation(live, HELM_NAMESPACE).map(str::to_string);
    let mut evidence = vec![format!("annotation {HELM_RELEASE}")];
    if namespace.is_some() {
        evidence.push(format!("annotation {HELM_NAMESPACE}"));
    }
    if label(live, "app.kubernetes.io/managed-by") == Some("Helm") {
        evidence.push("label app.kubernetes.io/managed-by=Helm".into());
    }
    let uninstall = if super::helm::keeps_live(live) {
        "; it carries `helm.sh/resource-policy: keep`, so `helm uninstall` leaves it"
    } else {
        "; `helm uninstall` of the release deletes it and every object of it"
    };
    Some(Owner {
        kind: OwnerKind::HelmRelease,
        name: name.to_string(),
        namespace,
        evidence,
        reverts: true,
        effect: format!(
            "the next `helm upgrade` of that release overwrites a manual change (Helm patches \
             a CRD of its templates/ from the live object to the chart's){uninstall}: change \
             the chart instead"
        ),
        new_chart: None,
    })
}

/// Argo CD's application from its tracking annotation (`app:group/Kind:
/// ns/name`, the annotation tracking method), else from its label
/// (`argocd.argoproj.io/instance`, or `app.kubernetes.io/instance`, the
/// default label tracking, unless a Helm release explains that label).
fn argo_cd(live: &Value) -> Option<Owner> {
    let crd = live["metadata"]["name"].as_str().unwrap_or_default();
    let (app, evidence) = if let Some(id) = annotation(live, ARGO_TRACKING) {
        // Argo CD disowns an object whose tracking id names another one (a
        // copy of a tracked object), and so do we.
        let (app, target) = id.split_once(':')?;
        let names_this = target.rsplit_once(':').is_some_and(|(kind, object)| {
            kind.ends_with("/CustomResourceDefinition") && object.rsplit('/').next() == Some(crd)
        });
        if !names_this {
            return None;
        }
        (app, format!("annotation {ARGO_TRACKING}"))
    } else if let Some(app) = label(live, ARGO_INSTANCE) {
        (app, format!("label {ARGO_INSTANCE}"))
    } else {
        let app = label(live, INSTANCE)?;
        // Charts set app.kubernetes.io/instance to their release name.
        if annotation(live, HELM_RELEASE) == Some(app) {
            return None;
        }
        (app, format!("label {INSTANCE} (Argo CD's label tracking)"))
    };
    // Applications outside Argo CD's namespace are tracked as `ns_name`
    // (an object name has no `_`).
    let (namespace, name) = match app.split_once('_') {
        Some((ns, name)) => (Some(ns.to_string()), name),
        None => (None, app),
    };
    Some(Owner {
        kind: OwnerKind::ArgoCdApplication,
        name: name.to_string(),
        namespace,
        evidence: vec![evidence],
        reverts: true,
        effect: "Argo CD reverts a manual change at the application's next sync (with self-heal \
                 on, within seconds): change it in the application's source instead"
            .into(),
        new_chart: None,
    })
}

fn flux(live: &Value, (name_key, namespace_key): (&str, &str), kind: OwnerKind) -> Option<Owner> {
    let name = label(live, name_key)?;
    let namespace = label(live, namespace_key).map(str::to_string);
    let mut evidence = vec![format!("label {name_key}")];
    if namespace.is_some() {
        evidence.push(format!("label {namespace_key}"));
    }
    let (reverts, effect) = match kind {
        OwnerKind::FluxKustomization if annotation(live, FLUX_RECONCILE) == Some("disabled") => (
            false,
            format!(
                "the CRD carries `{FLUX_RECONCILE}: disabled`, so kustomize-controller leaves a \
                 manual change in place; it applies the source again once the annotation goes"
            ),
        ),
        OwnerKind::FluxKustomization => (
            true,
            "kustomize-controller reverts a manual change at the Kustomization's next \
             reconciliation (every `spec.interval`): change it in its source instead"
                .to_string(),
        ),
        _ => (
            true,
            "helm-controller's next upgrade of the release overwrites a manual change (with \
             drift detection on, its next reconciliation): change the HelmRelease's chart or \
             values instead"
                .to_string(),
        ),
    };
    Some(Owner {
        kind,
        name: name.to_string(),
        namespace,
        evidence,
        reverts,
        effect,
        new_chart: None,
    })
}

fn olm(live: &Value) -> Option<Owner> {
    let labels = live["metadata"]["labels"].as_object();
    let operator = labels.into_iter().flatten().find_map(|(key, _)| {
        let rest = key.strip_prefix(OLM_OPERATOR_PREFIX)?;
        // Namespaces have no dots; package names may.
        let (package, ns) = rest.rsplit_once('.')?;
        Some((key.clone(), package.to_string(), ns.to_string()))
    });
    let managed = label(live, OLM_MANAGED) == Some("true");
    if operator.is_none() && !managed {
        return None;
    }
    let mut evidence = Vec::new();
    if managed {
        evidence.push(format!("label {OLM_MANAGED}=true"));
    }
    let (name, namespace) = match operator {
        Some((key, package, ns)) => {
            evidence.push(format!("label {key}"));
            (package, Some(ns))
        }
        None => ("an operator".to_string(), None),
    };
    Some(Owner {
        kind: OwnerKind::Olm,
        name,
        namespace,
        evidence,
        reverts: true,
        effect: "the Operator Lifecycle Manager installed it from the operator's bundle and \
                 replaces it at the operator's next install plan (an upgrade): change the \
                 operator's bundle instead"
            .into(),
        new_chart: None,
    })
}

/// A field manager that tells what wrote the CRD.
struct KnownManager {
    manager: &'static str,
    /// The owner a label or annotation names, which this manager is part of.
    kind: Option<OwnerKind>,
    /// Who it is, for the conflict message of a server-side apply.
    describe: &'static str,
    /// Without labels naming the owner: whether it puts its version back,
    /// and what it does.
    reverts: bool,
    effect: &'static str,
}

const ARGO_EFFECT: &str = "Argo CD reverts a manual change at its next sync: change it in the \
                           application's source instead";
const OLM_EFFECT: &str = "the Operator Lifecycle Manager replaces it at the operator's next \
                          install plan: change the operator's bundle instead";

const KNOWN_MANAGERS: &[KnownManager] = &[
    KnownManager {
        manager: "helm",
        kind: Some(OwnerKind::HelmRelease),
        describe: "Helm (a CRD of a release's templates/ is overwritten at the next helm upgrade)",
        reverts: false,
        effect: "Helm installed it from a chart's crds/ (it carries no release annotations): \
                 helm upgrade never changes it, so a manual change stays. This is how such a CRD \
                 is upgraded",
    },
    KnownManager {
        manager: "helm-controller",
        kind: Some(OwnerKind::FluxHelmRelease),
        describe: "Flux helm-controller (the next reconcile reverts the change)",
        reverts: true,
        effect: "Flux helm-controller installed it; with `upgrade.crds: CreateReplace` its next \
                 upgrade replaces it: change the HelmRelease's chart instead",
    },
    KnownManager {
        manager: "kustomize-controller",
        kind: Some(OwnerKind::FluxKustomization),
        describe: "Flux kustomize-controller (the next reconcile reverts the change)",
        reverts: true,
        effect: "Flux kustomize-controller reverts a manual change at its next reconciliation: \
                 change it in the Kustomization's source instead",
    },
    KnownManager {
        manager: "argocd-controller",
        kind: Some(OwnerKind::ArgoCdApplication),
        describe: "Argo CD (the next sync reverts the change)",
        reverts: true,
        effect: ARGO_EFFECT,
    },
    KnownManager {
        manager: "argocd-application-controller",
        kind: Some(OwnerKind::ArgoCdApplication),
        describe: "Argo CD (the next sync reverts the change)",
        reverts: true,
        effect: ARGO_EFFECT,
    },
    KnownManager {
        manager: "argo-cd",
        kind: Some(OwnerKind::ArgoCdApplication),
        describe: "Argo CD (the next sync reverts the change)",
        reverts: true,
        effect: ARGO_EFFECT,
    },
    KnownManager {
        manager: "olm",
        kind: Some(OwnerKind::Olm),
        describe: "Operator Lifecycle Manager (it reinstalls the operator's CRDs)",
        reverts: true,
        effect: OLM_EFFECT,
    },
    KnownManager {
        manager: "catalog",
        kind: Some(OwnerKind::Olm),
        describe: "Operator Lifecycle Manager (it reinstalls the operator's CRDs)",
        reverts: true,
        effect: OLM_EFFECT,
    },
    KnownManager {
        manager: "kubectl-edit",
        kind: None,
        describe: "a hand edit (kubectl edit)",
        reverts: false,
        effect: "",
    },
    KnownManager {
        manager: "kubectl-patch",
        kind: None,
        describe: "a hand edit (kubectl patch)",
        reverts: false,
        effect: "",
    },
];

/// A readable description of who `manager` is, when it is a known
/// controller or tool (for the conflict message of a server-side apply).
pub fn describe_manager(manager: &str) -> Option<&'static str> {
    KNOWN_MANAGERS
        .iter()
        .find(|k| k.manager == manager)
        .map(|k| k.describe)
}

/// The managers of the CRD's spec other than people and the API server:
/// `kubectl` and its subcommands (`kubectl-client-side-apply`,
/// `kubectl-edit`, ...) are someone at a terminal, `kube-apiserver` writes
/// status, and `ours` is this tool. In `managedFields` order (newest
/// first), once each.
fn spec_managers(live: &Value, ours: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for entry in live["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let Some(manager) = entry["manager"].as_str() else {
            continue;
        };
        let subresource = entry["subresource"].as_str().unwrap_or("");
        let writes_spec = entry["fieldsV1"].get("f:spec").is_some();
        let person = manager == "kubectl" || manager.starts_with("kubectl-");
        if !subresource.is_empty()
            || !writes_spec
            || person
            || manager == ours
            || manager == "kube-apiserver"
            || out.iter().any(|m| m == manager)
        {
            continue;
        }
        out.push(manager.to_string());
    }
    out
}

fn field_manager(manager: &str) -> Owner {
    let known = KNOWN_MANAGERS.iter().find(|k| k.manager == manager);
    let (reverts, effect) = match known {
        Some(k) if !k.effect.is_empty() => (k.reverts, k.effect.to_string()),
        _ => (
            false,
            "it wrote the CRD's spec: if it is an operator that installs its own CRDs (at \
             start-up or in a loop), it overwrites a manual change then; change the CRD where \
             that operator takes it from"
                .to_string(),
        ),
    };
    Owner {
        kind: OwnerKind::FieldManager,
        name: manager.to_string(),
        namespace: None,
        evidence: vec![format!("field manager {manager}")],
        reverts,
        effect,
        new_chart: None,
    }
}

/// The owners of `live` with what NEW's source says about them: for a
/// Helm release, where NEW's chart has the CRD, and the `helmDeletesCrd`
/// finding when an upgrade of that release with NEW would delete it.
pub fn judge(live: &Value, new: &LoadedCrd, ours: &str) -> (Vec<Owner>, Vec<Finding>) {
    let mut owners = of(live, ours);
    let mut findings = Vec::new();
    let (chart, place) = match &new.origin {
        Origin::ChartTemplate { chart } => (chart, ChartPlace::Templates),
        Origin::ChartCrds { chart } => (chart, ChartPlace::Crds),
        Origin::Files => return (owners, findings),
    };
    for owner in owners
        .iter_mut()
        .filter(|o| o.kind == OwnerKind::HelmRelease)
    {
        owner.new_chart = Some(NewChart {
            chart: chart.clone(),
            place,
        });
        if place == ChartPlace::Crds {
            findings.extend(super::helm::release_deletes(live, &owner.who(), new));
        }
    }
    (owners, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const OURS: &str = "kubectl-crd-safety";

    fn crd(labels: Value, annotations: Value, managers: &[(&str, &str)]) -> Value {
        let fields: Vec<Value> = managers
            .iter()
            .map(|(manager, subresource)| {
                let mut e = json!({"manager": manager, "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:group": {}}}});
                if !subresource.is_empty() {
                    e["subresource"] = json!(subresource);
                    e["fieldsV1"] = json!({"f:status": {}});
                }
                e
            })
            .collect();
        json!({"metadata": {"name": "widgets.example.com", "labels": labels,
            "annotations": annotations, "managedFields": fields}})
    }

    fn lines(live: &Value) -> Vec<String> {
        of(live, OURS).iter().map(Owner::who).collect()
    }

    #[test]
    fn a_helm_release_is_named_from_its_annotations_with_its_field_manager() {
        let live = crd(
            json!({"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "op"}),
            json!({HELM_RELEASE: "op", HELM_NAMESPACE: "team"}),
            &[("helm", ""), ("kube-apiserver", "status")],
        );
        let owners = of(&live, OURS);
        assert_eq!(owners.len(), 1, "{owners:?}");
        let helm = &owners[0];
        assert_eq!(helm.who(), "Helm release team/op");
        assert!(helm.reverts);
        assert_eq!(
            helm.evidence,
            [
                "annotation meta.helm.sh/release-name",
                "annotation meta.helm.sh/release-namespace",
                "label app.kubernetes.io/managed-by=Helm",
                "field manager helm"
            ]
        );
        assert!(
            helm.effect
                .starts_with("the next `helm upgrade` of that release overwrites a manual change"),
            "{}",
            helm.effect
        );
        assert!(
            helm.effect
                .contains("`helm uninstall` of the release deletes it")
        );
    }

    #[test]
    fn helm_without_release_annotations_installed_from_crds_and_does_not_revert() {
        let live = crd(json!({}), json!({}), &[("helm", "")]);
        let owners = of(&live, OURS);
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].who(), "field manager `helm`");
        assert!(!owners[0].reverts);
        assert!(owners[0].effect.contains("helm upgrade never changes it"));
    }

    #[test]
    fn argo_cd_is_named_by_annotation_tracking_and_disowns_copies() {
        let id = "apps_payments:apiextensions.k8s.io/CustomResourceDefinition:/widgets.example.com";
        let live = crd(json!({}), json!({ARGO_TRACKING: id}), &[]);
        assert_eq!(lines(&live), ["Argo CD application apps/payments"]);
        let copied = "payments:apiextensions.k8s.io/CustomResourceDefinition:/gadgets.example.com";
        let live = crd(json!({}), json!({ARGO_TRACKING: copied}), &[]);
        assert!(lines(&live).is_empty());
    }

    #[test]
    fn argo_cd_label_tracking_is_read_unless_helm_explains_the_label() {
        let live = crd(json!({INSTANCE: "payments"}), json!({}), &[]);
        assert_eq!(lines(&live), ["Argo CD application payments"]);
        let live = crd(json!({ARGO_INSTANCE: "payments"}), json!({}), &[]);
        assert_eq!(lines(&live), ["Argo CD application payments"]);
        let helm = crd(
            json!({INSTANCE: "op"}),
            json!({HELM_RELEASE: "op", HELM_NAMESPACE: "team"}),
            &[],
        );
        assert_eq!(lines(&helm), ["Helm release team/op"]);
    }

    #[test]
    fn flux_kustomization_and_helm_release_are_named_from_their_labels() {
        let live = crd(
            json!({"kustomize.toolkit.fluxcd.io/name": "infra",
                   "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}),
            json!({}),
            &[("kustomize-controller", "")],
        );
        let owners = of(&live, OURS);
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].who(), "Flux Kustomization flux-system/infra");
        assert_eq!(owners[0].tool(), "Flux");
        assert!(owners[0].reverts);
        assert!(owners[0].effect.contains("every `spec.interval`"));
        assert_eq!(
            owners[0].evidence.last().map(String::as_str),
            Some("field manager kustomize-controller")
        );

        let disabled = crd(
            json!({"kustomize.toolkit.fluxcd.io/name": "infra"}),
            json!({FLUX_RECONCILE: "disabled"}),
            &[],
        );
        assert!(!of(&disabled, OURS)[0].reverts);

        let release = crd(
            json!({"helm.toolkit.fluxcd.io/name": "op", "helm.toolkit.fluxcd.io/namespace": "team"}),
            json!({HELM_RELEASE: "op", HELM_NAMESPACE: "team"}),
            &[("helm-controller", "")],
        );
        assert_eq!(
            lines(&release),
            ["Helm release team/op", "Flux HelmRelease team/op"]
        );
    }

    #[test]
    fn olm_is_named_with_the_operator_package_and_namespace() {
        let live = crd(
            json!({OLM_MANAGED: "true", "operators.coreos.com/etcd.v1.operators": ""}),
            json!({}),
            &[("catalog", "")],
        );
        let owners = of(&live, OURS);
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].who(), "OLM (operator etcd.v1 in operators)");
        assert_eq!(owners[0].evidence.len(), 3);
    }

    #[test]
    fn people_ourselves_and_the_api_server_own_nothing() {
        let live = crd(
            json!({}),
            json!({}),
            &[
                ("kubectl-client-side-apply", ""),
                ("kubectl-edit", ""),
                ("kubectl", ""),
                (OURS, ""),
                ("kube-apiserver", "status"),
            ],
        );
        assert!(of(&live, OURS).is_empty());
    }

    #[test]
    fn an_unknown_manager_of_the_spec_is_named_as_a_possible_operator() {
        let live = crd(
            json!({}),
            json!({}),
            &[("cluster-operator", ""), ("cluster-operator", "")],
        );
        let owners = of(&live, OURS);
        assert_eq!(owners.len(), 1);
        assert_eq!(owners[0].who(), "field manager `cluster-operator`");
        assert!(!owners[0].reverts);
        assert!(
            owners[0]
                .effect
                .contains("operator that installs its own CRDs")
        );
    }

    #[test]
    fn a_manager_of_metadata_alone_owns_nothing() {
        let mut live = crd(json!({}), json!({}), &[]);
        live["metadata"]["managedFields"] = json!([{"manager": "labeler", "operation": "Apply",
            "fieldsV1": {"f:metadata": {"f:labels": {}}}}]);
        assert!(of(&live, OURS).is_empty());
    }

    /// NEW's `widgets.example.com`, read from `chart` at `origin`.
    fn new_from(origin: Origin) -> LoadedCrd {
        let text = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {plural: widgets, kind: Widget}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
";
        let mut set = crate::manifest::ManifestSet::default();
        crate::manifest::load_text(text, "op/crds/widgets.yaml", false, &mut set).expect("a CRD");
        let mut crd = set.crds.remove(0);
        crd.origin = origin;
        crd
    }

    #[test]
    fn a_release_whose_new_chart_moved_the_crd_to_crds_deletes_it() {
        let live = crd(
            json!({}),
            json!({HELM_RELEASE: "op", HELM_NAMESPACE: "team"}),
            &[],
        );
        let chart = || "op".to_string();
        let (owners, found) = judge(&live, &new_from(Origin::ChartCrds { chart: chart() }), OURS);
        assert_eq!(
            owners[0].new_chart,
            Some(NewChart {
                chart: chart(),
                place: ChartPlace::Crds
            })
        );
        assert!(owners[0].line().ends_with(
            "NEW (op) has it in crds/, not templates/: upgrading the release with it deletes the \
             CRD (helmDeletesCrd)"
        ));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].message.starts_with(
                "helm upgrade of Helm release team/op with this chart deletes this CRD and every Widget"
            ),
            "{}",
            found[0].message
        );

        let (owners, found) = judge(
            &live,
            &new_from(Origin::ChartTemplate { chart: chart() }),
            OURS,
        );
        assert_eq!(
            owners[0].new_chart.as_ref().map(|c| c.place),
            Some(ChartPlace::Templates)
        );
        assert!(found.is_empty());

        let mut kept = live.clone();
        kept["metadata"]["annotations"]["helm.sh/resource-policy"] = json!("keep");
        let (owners, found) = judge(&kept, &new_from(Origin::ChartCrds { chart: chart() }), OURS);
        assert!(found.is_empty(), "the keep policy saves it");
        assert!(owners[0].effect.contains("so `helm uninstall` leaves it"));

        let (owners, found) = judge(&live, &new_from(Origin::Files), OURS);
        assert_eq!(owners[0].new_chart, None);
        assert!(found.is_empty());
    }

    #[test]
    fn a_known_controller_without_labels_is_named_by_its_tool() {
        let live = crd(json!({}), json!({}), &[("argocd-controller", "")]);
        let owners = of(&live, OURS);
        assert_eq!(owners[0].who(), "field manager `argocd-controller`");
        assert_eq!(owners[0].tool(), "Argo CD");
        assert!(owners[0].reverts);
    }

    #[test]
    fn the_conflict_message_names_known_managers() {
        assert_eq!(
            describe_manager("kustomize-controller"),
            Some("Flux kustomize-controller (the next reconcile reverts the change)")
        );
        assert_eq!(describe_manager("someone"), None);
    }
}
