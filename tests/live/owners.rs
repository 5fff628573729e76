//! Owners of live CRDs on the real API server: `apply-check` names the Helm
//! release, Argo CD application, Flux Kustomization or HelmRelease and
//! field manager of each CRD it would change, with what they do to a
//! manual change; `apply --yes` leaves a CRD such an owner manages as it
//! is unless `--override-owners` says yes to that too, and asks a second
//! question on a terminal. With a chart as NEW, a real `helm install` makes
//! the owner, and `apply-check` says whether NEW still renders the CRD in
//! its templates.
//!
//! Plurals `ownhelms`, `ownargos`, `ownargolabels`, `ownfluxes`,
//! `ownfluxreleases`, `ownoperators`, `gateds`, `gatedfluxes`, `askeds` and
//! `ownreleases` (and the Helm release of that name) are this module's.

#![cfg(unix)]

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::support;
use support::charts::{Layout, chart};
use support::envtest::{ControlPlane, control_plane};
use support::helm::{helm, helm_dir, path_with_helm};
use support::live::{admin, crd, install_as, write_manifest};
use support::run::{Run, run, run_in_columns};
use support::runs::{answers_in_terminal, assert_has};
use support::sources::Plugin;

/// The plugin's own field manager.
const OURS: &str = "kubectl-crd-safety";

/// `<plural>.example.com` with `metadata` merged into its metadata and
/// `fields` added to its spec.
fn owned_crd(plural: &str, metadata: &Value, fields: Value) -> Value {
    let mut manifest = crd(plural, &[("v1", true, true)], fields);
    if let (Some(meta), Some(extra)) = (manifest["metadata"].as_object_mut(), metadata.as_object())
    {
        meta.extend(extra.clone());
    }
    manifest
}

/// Installs `<plural>` with `metadata` as `manager`, and writes its next
/// release (the same metadata, one more field) into `dir`.
async fn installed(client: &Client, dir: &Path, plural: &str, metadata: Value, manager: &str) {
    install_as(client, &owned_crd(plural, &metadata, json!({})), manager).await;
    let next = owned_crd(plural, &metadata, json!({"extra": {"type": "string"}}));
    write_manifest(dir, &format!("{plural}.json"), &next);
}

/// The live CRD as JSON.
async fn live(client: &Client, name: &str) -> Value {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    serde_json::to_value(crds.get(name).await.expect("the CRD exists")).expect("json")
}

/// What a manual change would alter: the resourceVersion and the spec.
async fn state(client: &Client, name: &str) -> (Value, Value) {
    let crd = live(client, name).await;
    (
        crd["metadata"]["resourceVersion"].clone(),
        crd["spec"].clone(),
    )
}

fn has_extra(spec: &Value) -> bool {
    spec["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .get("extra")
        .is_some()
}

/// `(kind, namespace/name)` of every owner of CRD `name` in a report.
fn owners_of(report: &Value, name: &str) -> Vec<(String, String)> {
    let crd = report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report}"));
    crd["owners"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            let name = match o["namespace"].as_str() {
                Some(ns) => format!("{ns}/{}", o["name"].as_str().unwrap_or_default()),
                None => o["name"].as_str().unwrap_or_default().to_string(),
            };
            (o["kind"].as_str().unwrap_or_default().to_string(), name)
        })
        .collect()
}

fn owner(kind: &str, name: &str) -> (String, String) {
    (kind.into(), name.into())
}

fn apply(plane: &ControlPlane, path: &str, extra: &[&str]) -> Run {
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let mut args = vec!["apply", "-f", path, "--kubeconfig", &kubeconfig];
    args.extend_from_slice(extra);
    run(&args, None)
}

#[tokio::test]
async fn apply_check_names_each_owner_and_what_it_does_in_the_table_and_in_json() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let helm_release = json!({
        "labels": {"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/instance": "op"},
        "annotations": {"meta.helm.sh/release-name": "op", "meta.helm.sh/release-namespace": "team"}
    });
    installed(&client, dir, "ownhelms", helm_release, "helm").await;
    let tracked = json!({"annotations": {"argocd.argoproj.io/tracking-id":
        "payments:apiextensions.k8s.io/CustomResourceDefinition:/ownargos.example.com"}});
    installed(&client, dir, "ownargos", tracked, "argocd-controller").await;
    let labeled = json!({"labels": {"app.kubernetes.io/instance": "billing"}});
    installed(&client, dir, "ownargolabels", labeled, OURS).await;
    let kustomization = json!({"labels": {"kustomize.toolkit.fluxcd.io/name": "infra",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}});
    installed(
        &client,
        dir,
        "ownfluxes",
        kustomization,
        "kustomize-controller",
    )
    .await;
    let release = json!({"labels": {"helm.toolkit.fluxcd.io/name": "db",
        "helm.toolkit.fluxcd.io/namespace": "data"}});
    installed(&client, dir, "ownfluxreleases", release, "helm-controller").await;
    // Installed by us, then changed by an operator through server-side apply.
    installed(&client, dir, "ownoperators", json!({}), OURS).await;
    let injected = owned_crd(
        "ownoperators",
        &json!({}),
        json!({"injected": {"type": "string"}}),
    );
    install_as(&client, &injected, "cluster-operator").await;

    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let path = dir.display().to_string();
    let args = ["apply-check", "-f", &path, "--kubeconfig", &kubeconfig];
    let mut json_args = args.to_vec();
    json_args.extend(["-o", "json"]);
    let r = run(&json_args, None);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    let expected = [
        ("ownhelms", owner("helmRelease", "team/op")),
        ("ownargos", owner("argoCdApplication", "payments")),
        ("ownargolabels", owner("argoCdApplication", "billing")),
        ("ownfluxes", owner("fluxKustomization", "flux-system/infra")),
        ("ownfluxreleases", owner("fluxHelmRelease", "data/db")),
        ("ownoperators", owner("fieldManager", "cluster-operator")),
    ];
    for (plural, who) in &expected {
        let name = format!("{plural}.example.com");
        assert_eq!(
            owners_of(&report, &name),
            std::slice::from_ref(who),
            "{name}"
        );
    }
    let helm = &report["crds"]
        .as_array()
        .expect("crds")
        .iter()
        .find(|c| c["name"] == "ownhelms.example.com")
        .expect("ownhelms")["owners"][0];
    assert_eq!(helm["reverts"], true);
    assert!(
        helm["evidence"]
            .as_array()
            .expect("evidence")
            .contains(&json!("field manager helm")),
        "{helm}"
    );

    // The table: a line under each CRD's header, wide enough not to wrap.
    let r = run_in_columns(1000, &args, None);
    assert!(r.code <= 1, "{}{}", r.stdout, r.stderr);
    for line in [
        "owner: Helm release team/op: the next `helm upgrade` of that release overwrites a manual change",
        "owner: Argo CD application payments: Argo CD reverts a manual change at the application's next sync (with self-heal on, within seconds): change it in the application's source instead",
        "owner: Argo CD application billing:",
        "owner: Flux Kustomization flux-system/infra: kustomize-controller reverts a manual change at the Kustomization's next reconciliation",
        "owner: Flux HelmRelease data/db: helm-controller's next upgrade of the release overwrites a manual change",
        "owner: field manager `cluster-operator`: it wrote the CRD's spec: if it is an operator that installs its own CRDs",
    ] {
        assert_has(&r.stdout, line);
    }
    let header = r
        .stdout
        .lines()
        .position(|l| l.starts_with("ownargos.example.com "))
        .expect("the CRD's header");
    let under: Vec<&str> = r.stdout.lines().skip(header + 1).take(2).collect();
    assert!(
        under[0].starts_with("storedVersions: ") && under[1].starts_with("owner: "),
        "the owner is the line under the header's storedVersions:\n{}",
        r.stdout
    );
}

#[tokio::test]
async fn yes_alone_changes_nothing_argo_cd_or_flux_manage_and_override_owners_applies() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    let tracked = json!({"annotations": {"argocd.argoproj.io/tracking-id":
        "payments:apiextensions.k8s.io/CustomResourceDefinition:/gateds.example.com"}});
    installed(&client, dir, "gateds", tracked, OURS).await;
    let kustomization = json!({"labels": {"kustomize.toolkit.fluxcd.io/name": "infra",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}});
    installed(
        &client,
        dir,
        "gatedfluxes",
        kustomization,
        "kustomize-controller",
    )
    .await;
    let names = ["gateds.example.com", "gatedfluxes.example.com"];
    let before = [
        state(&client, names[0]).await,
        state(&client, names[1]).await,
    ];
    let path = dir.display().to_string();

    // --force-conflicts answers the server's conflict, not the owners.
    let r = apply(plane, &path, &["--yes", "--force-conflicts", "-o", "json"]);
    assert_eq!(r.code, 1, "refused\n{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["apply"]["decision"], "refused");
    assert_has(
        &r.stderr,
        "error: not applying without --override-owners: gatedfluxes.example.com (Flux Kustomization \
         flux-system/infra); gateds.example.com (Argo CD application payments), whose owners put \
         their own version back",
    );
    for (name, was) in names.iter().zip(&before) {
        assert_eq!(&state(&client, name).await, was, "{name} is unchanged");
    }

    let r = apply(
        plane,
        &path,
        &[
            "--yes",
            "--force-conflicts",
            "--override-owners",
            "-o",
            "json",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["apply"]["decision"], "applied");
    for name in names {
        assert!(
            has_extra(&state(&client, name).await.1),
            "{name} is applied"
        );
    }
}

/// Runs `apply -f path` in a pseudo-terminal and answers the plan's
/// question and then the owners' question with `keys` (one key each; a
/// `n` to the first ends the run): the exit code and the screen.
fn apply_in_terminal(kubeconfig: &Path, path: &str, keys: &[&str]) -> (i32, String) {
    let questions = [
        "Apply 1 CRD to context envtest-admin? [y/N]",
        "Change 1 CRD managed by Helm anyway? [y/N]",
    ];
    let answers: Vec<(&str, &str)> = questions.into_iter().zip(keys.iter().copied()).collect();
    answers_in_terminal(&["apply", "-f", path], kubeconfig, 200, &answers)
}

#[tokio::test]
async fn on_a_terminal_a_second_question_names_the_helm_release_and_defaults_to_no() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let release = json!({"annotations": {"meta.helm.sh/release-name": "op",
        "meta.helm.sh/release-namespace": "team"}});
    installed(&client, tmp.path(), "askeds", release, OURS).await;
    let name = "askeds.example.com";
    let before = state(&client, name).await;
    let path = tmp.path().display().to_string();
    let kubeconfig = plane.admin_kubeconfig.clone();

    let (p, k) = (path.clone(), kubeconfig.clone());
    let (code, screen) =
        tokio::task::spawn_blocking(move || apply_in_terminal(&k, &p, &["y", "n"]))
            .await
            .expect("pty thread");
    assert_eq!(code, 4, "{screen}");
    assert_has(
        &screen,
        "askeds.example.com  update (managed by Helm release team/op)",
    );
    assert_has(
        &screen,
        "These CRDs are managed by someone else, who will put their own version back:",
    );
    assert_has(&screen, "Nothing applied.");
    assert_eq!(state(&client, name).await, before, "unchanged after a no");

    let (code, screen) =
        tokio::task::spawn_blocking(move || apply_in_terminal(&kubeconfig, &path, &["y", "y"]))
            .await
            .expect("pty thread");
    assert_eq!(code, 0, "{screen}");
    assert_has(&screen, "askeds.example.com  configured");
    assert!(has_extra(&state(&client, name).await.1));
}

#[tokio::test]
async fn a_release_installed_by_helm_is_named_with_where_the_new_chart_has_its_crd() {
    let Some(plane) = control_plane() else { return };
    let Some(helm_bin) = helm_dir() else { return };
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    chart(
        &d.join("old"),
        "ownreleases",
        "1.0.0",
        &[("ownreleases", &["a"], Layout::Templates)],
    );
    chart(
        &d.join("new"),
        "ownreleases",
        "1.1.0",
        &[("ownreleases", &["a", "b"], Layout::Crds)],
    );
    let old = d.join("old").display().to_string();
    helm(
        helm_bin,
        &kubeconfig,
        &["install", "ownreleases", &old, "--wait"],
    );

    let plugin = Plugin {
        dir: d,
        path: Some(path_with_helm(helm_bin)),
    };
    let check = |chart: &str, output: &[&str]| {
        let mut args = vec!["apply-check", "-f", chart, "--kubeconfig", &kubeconfig];
        args.extend_from_slice(output);
        let out = plugin.run(&args);
        Run {
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
        }
    };

    // NEW moves it to crds/: upgrading the release with NEW deletes it.
    let r = check("new", &["-o", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    let name = "ownreleases.example.com";
    assert_eq!(
        owners_of(&report, name),
        [owner("helmRelease", "default/ownreleases")]
    );
    let crd = &report["crds"][0];
    assert_eq!(
        crd["owners"][0]["newChart"],
        json!({"chart": "new", "place": "crds"})
    );
    let deletes = crd["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["check"] == "helmDeletesCrd")
        .unwrap_or_else(|| panic!("no helmDeletesCrd in {crd}"));
    assert_eq!(deletes["severity"], "error");
    assert_has(
        deletes["message"].as_str().unwrap_or_default(),
        "helm upgrade of Helm release default/ownreleases with this chart deletes this CRD and \
         every Ownrelease",
    );
    let r = check("new", &[]);
    assert_has(
        &r.stdout,
        "NEW (new) has it in crds/, not templates/: upgrading the release with it deletes the CRD \
         (helmDeletesCrd)",
    );

    // The release's own chart still renders it from templates/.
    let r = check("old", &["-o", "json"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    let crd = &report["crds"][0];
    assert_eq!(
        crd["owners"][0]["newChart"],
        json!({"chart": "old", "place": "templates"})
    );
    assert!(
        !crd["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["check"] == "helmDeletesCrd"),
        "{crd}"
    );
}

/// `kubectl apply --server-side -f` of `objects` (JSON), as the admin.
fn kubectl_apply(plane: &ControlPlane, name: &str, objects: &[Value]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(format!("{name}.json"));
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    std::fs::write(&file, list.to_string()).expect("write");
    let out = support::webhook::kubectl(
        &plane.admin_kubeconfig,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            file.to_str().expect("UTF-8"),
        ],
    );
    assert!(
        out.status.success(),
        "kubectl apply {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CRD whose conversion goes through a webhook, with `ca_bundle` (as a
/// cainjector leaves it) or none (as the chart ships it).
fn converted(plural: &str, metadata: &Value, fields: Value, ca_bundle: Option<&str>) -> Value {
    let mut manifest = owned_crd(plural, metadata, fields);
    let mut client_config =
        json!({"service": {"namespace": "default", "name": "converter", "path": "/convert"}});
    if let Some(bundle) = ca_bundle {
        client_config["caBundle"] = json!(bundle);
    }
    manifest["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
        "clientConfig": client_config, "conversionReviewVersions": ["v1"]}});
    manifest
}

/// The `rolloutCrdPolicy` findings of CRD `name` in a report.
fn policy_findings(report: &Value, name: &str) -> Vec<(String, String)> {
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["name"] == name)
        .flat_map(|c| c["findings"].as_array().cloned().unwrap_or_default())
        .filter(|f| f["check"] == "rolloutCrdPolicy")
        .map(|f| {
            (
                f["severity"].as_str().unwrap_or_default().to_string(),
                f["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Plurals `enginefluxes`, `enginefluxcas`, `engineargocas` and their
/// engine objects are this test's. Flux's HelmRelease CRD and Argo CD's
/// Application CRD come from the engines' published CRDs (the corpus);
/// their objects are created, no controller runs.
#[tokio::test]
async fn what_flux_and_argo_cd_will_do_to_the_crd_is_read_from_their_objects() {
    let Some(corpus) = support::corpus::corpus_dir() else {
        return;
    };
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    for file in [
        "flux-helm-controller/v1.6.3/helm.toolkit.fluxcd.io_helmreleases.yaml",
        "argo-cd/argocd-operator-0.19.0/argoproj.io_applications.yaml",
    ] {
        let text = std::fs::read_to_string(corpus.join(file)).expect("the engine's CRD");
        let engine: Value = serde_saphyr::from_str(&text).expect("it parses");
        install_as(&client, &engine, "crd-safety-test").await;
    }
    let namespaces: Vec<Value> = ["engine-flux", "argocd"]
        .iter()
        .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        .collect();
    kubectl_apply(plane, "namespaces", &namespaces);
    let release = |name: &str, upgrade: Value| {
        json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": name, "namespace": "engine-flux"},
            "spec": {"interval": "10m", "upgrade": upgrade,
                "chart": {"spec": {"chart": "op", "sourceRef": {"kind": "HelmRepository", "name": "repo"}}}}})
    };
    let app = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "engineapp", "namespace": "argocd"},
        "spec": {"project": "default",
            "source": {"repoURL": "https://example.com/repo.git", "path": "crds"},
            "destination": {"server": "https://kubernetes.default.svc"},
            "syncPolicy": {"syncOptions": ["Replace=true"]}}});
    kubectl_apply(
        plane,
        "engines",
        &[
            release("engineskip", json!({})),
            release("enginereplace", json!({"crds": "CreateReplace"})),
            app,
        ],
    );
    let bundle = {
        use base64::Engine;
        let pem = std::fs::read(plane.dir.path().join("certs/apiserver.crt")).expect("a PEM");
        base64::engine::general_purpose::STANDARD.encode(pem)
    };
    let flux = |name: &str| {
        json!({"labels": {"helm.toolkit.fluxcd.io/name": name,
            "helm.toolkit.fluxcd.io/namespace": "engine-flux"}})
    };
    let extra = json!({"extra": {"type": "string"}});

    // Skip (the default): the change does not land through Flux.
    installed(
        &client,
        dir.path(),
        "enginefluxes",
        flux("engineskip"),
        "helm-controller",
    )
    .await;
    // CreateReplace, over a caBundle a cainjector put there.
    let cas = flux("enginereplace");
    install_as(
        &client,
        &converted("enginefluxcas", &cas, json!({}), Some(&bundle)),
        "cainjector",
    )
    .await;
    write_manifest(
        dir.path(),
        "enginefluxcas.json",
        &converted("enginefluxcas", &cas, extra.clone(), None),
    );
    // Argo CD's Replace=true, over the same.
    let argo = json!({"labels": {"argocd.argoproj.io/instance": "engineapp"}});
    install_as(
        &client,
        &converted("engineargocas", &argo, json!({}), Some(&bundle)),
        "argocd-controller",
    )
    .await;
    write_manifest(
        dir.path(),
        "engineargocas.json",
        &converted("engineargocas", &argo, extra, None),
    );

    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let path = dir.path().display().to_string();
    let r = support::live::apply_check(&path, &kubeconfig, &["-o", "json"]);
    let report = r.json();
    let skip = policy_findings(&report, "enginefluxes.example.com");
    assert_eq!(skip.len(), 1, "{report}");
    assert_eq!(skip[0].0, "warning");
    assert_has(
        &skip[0].1,
        "Flux HelmRelease engine-flux/engineskip has upgrade.crds: Skip",
    );
    assert_has(&skip[0].1, "does not land");
    let replace = policy_findings(&report, "enginefluxcas.example.com");
    assert_eq!(replace.len(), 1, "{report}");
    assert_eq!(replace[0].0, "error");
    assert_has(&replace[0].1, "upgrade.crds: CreateReplace");
    assert_has(&replace[0].1, "caBundle");
    let argo = policy_findings(&report, "engineargocas.example.com");
    assert_eq!(argo.len(), 1, "{report}");
    assert_eq!(argo[0].0, "error");
    assert_has(
        &argo[0].1,
        "Argo CD application argocd/engineapp (sync option Replace=true)",
    );
    assert_eq!(r.code, 1, "{report}");

    // Server-side apply keeps the caBundle: no finding for Argo CD.
    let ssa = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
        "metadata": {"name": "engineapp", "namespace": "argocd"},
        "spec": {"project": "default",
            "source": {"repoURL": "https://example.com/repo.git", "path": "crds"},
            "destination": {"server": "https://kubernetes.default.svc"},
            "syncPolicy": {"syncOptions": ["Replace=true", "ServerSideApply=true"]}}});
    kubectl_apply(plane, "ssa", &[ssa]);
    let argo_only = dir.path().join("engineargocas.json");
    let argo_only = argo_only.display().to_string();
    let r = support::live::apply_check(&argo_only, &kubeconfig, &["-o", "json"]);
    assert!(
        policy_findings(&r.json(), "engineargocas.example.com").is_empty(),
        "{}",
        r.stdout
    );
}
