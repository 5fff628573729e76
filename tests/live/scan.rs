//! Live tests of the object scan (`apply-check --objects`) against a real
//! kube-apiserver: objects are created through the server, then the new
//! manifests are checked against what is really stored.

use crate::support;

use serde_json::{Value, json};
use support::envtest::{ControlPlane, control_plane};
use support::fixtures;
use support::live::{admin, apply_check, crd, create_objects, install, write_manifest};
use support::run::Run;

/// Installs `old`, creates `objects`, writes `new` and runs
/// `apply-check --objects -o json` with `extra` flags.
async fn scan(
    plane: &ControlPlane,
    old: &Value,
    objects: &[(&str, Value)],
    new: &Value,
    extra: &[&str],
) -> (Run, Value) {
    let client = admin(plane).await;
    install(&client, old).await;
    let plural = old["spec"]["names"]["plural"].as_str().expect("plural");
    let objects = objects
        .iter()
        .map(|(name, spec)| ("default".to_string(), name.to_string(), spec.clone()))
        .collect();
    create_objects(&client, plural, "v1", objects).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), "new.json", new);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let mut args = vec!["--objects", "-o", "json"];
    args.extend_from_slice(extra);
    let r = apply_check(&path, &kubeconfig, &args);
    let report = r.json();
    (r, report)
}

/// One scan finding: `(check, path, rule, count, ratcheted, examples)`.
type ScanFinding = (String, String, String, u64, Option<bool>, Vec<String>);

/// The scan findings of the first CRD.
fn scan_findings(report: &Value) -> Vec<ScanFinding> {
    report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f.get("objects").is_some())
        .map(|f| {
            let o = &f["objects"];
            (
                f["check"].as_str().unwrap_or_default().to_string(),
                f["path"].as_str().unwrap_or_default().to_string(),
                o["rule"].as_str().unwrap_or_default().to_string(),
                o["count"].as_u64().unwrap_or_default(),
                o["ratcheted"].as_bool(),
                o["examples"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|e| e.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
            )
        })
        .collect()
}

fn v1(plural: &str, fields: Value) -> Value {
    crd(plural, &[("v1", true, true)], fields)
}

#[tokio::test]
async fn objects_the_new_minimum_rejects_are_listed_and_ratcheted() {
    let Some(plane) = control_plane() else { return };
    let old = v1("minimums", json!({}));
    let new = v1(
        "minimums",
        json!({"size": {"type": "integer", "minimum": 2}}),
    );
    let objects = [
        ("small", json!({"size": 1})),
        ("ok", json!({"size": 2})),
        ("tiny", json!({"size": 0})),
        ("big", json!({"size": 9})),
    ];
    let (r, report) = scan(plane, &old, &objects, &new, &["--chunk-size", "1"]).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        scan_findings(&report),
        // The schema finding and the objects it hurts are one finding.
        [(
            "minimum".to_string(),
            "^.spec.size".to_string(),
            "minimum".to_string(),
            2,
            Some(true),
            vec!["default/small".to_string(), "default/tiny".to_string()]
        )]
    );
    let scan = &report["crds"][0]["scan"];
    assert_eq!(scan["scanned"], 4, "pages of one object add up: {scan}");
    assert_eq!(scan["invalid"], 2);
    assert_eq!(scan["ratcheting"], true);
    assert_eq!(scan["serverVersion"], format!("1.{}", plane.kube_minor));
    let objects: Vec<&str> = scan["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .filter_map(|o| o["object"].as_str())
        .collect();
    assert_eq!(objects, ["default/small", "default/tiny"]);
    assert_eq!(scan["objects"][0]["violations"][0]["path"], "spec.size");
}

#[tokio::test]
async fn fields_the_new_schema_drops_are_reported_as_data_loss() {
    let Some(plane) = control_plane() else { return };
    let old = v1(
        "prunings",
        json!({"legacyMode": {"type": "string"}, "keep": {"type": "string"}}),
    );
    let new = v1("prunings", json!({"keep": {"type": "string"}}));
    let objects = [
        ("a", json!({"legacyMode": "on", "keep": "x"})),
        ("b", json!({"keep": "y"})),
        ("c", json!({"legacyMode": "off"})),
    ];
    let (r, report) = scan(plane, &old, &objects, &new, &[]).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        scan_findings(&report),
        [(
            "existingFieldRemoval".to_string(),
            "^.spec.legacyMode".to_string(),
            "pruned".to_string(),
            2,
            None,
            vec!["default/a".to_string(), "default/c".to_string()]
        )]
    );
    assert_eq!(report["crds"][0]["scan"]["losingData"], 2);
    assert_eq!(report["crds"][0]["scan"]["invalid"], 0);
}

#[tokio::test]
/// Ratcheted like any keyword, as `write_outcomes` shows the server does.
async fn rules_under_any_of_are_ratcheted() {
    let Some(plane) = control_plane() else { return };
    let old = v1("combos", json!({"name": {"type": "string"}}));
    let new = v1(
        "combos",
        json!({"name": {"type": "string", "anyOf": [{"maxLength": 3}, {"pattern": "^x"}]}}),
    );
    let objects = [
        ("long", json!({"name": "abcdef"})),
        ("xlong", json!({"name": "xbcdef"})),
    ];
    let (r, report) = scan(plane, &old, &objects, &new, &[]).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let found = scan_findings(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    let (check, path, _rule, count, ratcheted, examples) = &found[0];
    assert_eq!(
        (check.as_str(), path.as_str(), *count, *ratcheted),
        ("anyOf", "^.spec.name", 1, Some(true))
    );
    assert_eq!(examples, &["default/long".to_string()]);
}

#[tokio::test]
async fn cel_rule_violations_carry_the_rules_message() {
    let Some(plane) = control_plane() else { return };
    let old = v1("celchecks", json!({}));
    let mut new = v1("celchecks", json!({}));
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] =
        json!([{"rule": "self.size <= 10", "message": "size must be at most 10"}]);
    let objects = [("fine", json!({"size": 10})), ("huge", json!({"size": 11}))];
    let (r, report) = scan(plane, &old, &objects, &new, &[]).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let found = scan_findings(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, "xValidations");
    assert_eq!(found[0].3, 1);
    assert_eq!(found[0].5, ["default/huge".to_string()]);
    let violation = &report["crds"][0]["scan"]["objects"][0]["violations"][0];
    assert!(
        violation["message"]
            .as_str()
            .is_some_and(|m| m.contains("size must be at most 10")),
        "{violation}"
    );
}

#[tokio::test]
async fn a_clean_scan_reports_zero_and_the_table_says_so() {
    let Some(plane) = control_plane() else { return };
    let old = v1("cleans", json!({}));
    let new = v1("cleans", json!({"color": {"type": "string"}}));
    let objects = [("one", json!({"size": 1})), ("two", json!({"size": 2}))];
    let (r, report) = scan(plane, &old, &objects, &new, &[]).await;
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(scan_findings(&report).is_empty(), "{report}");
    let scan = &report["crds"][0]["scan"];
    assert_eq!(
        (scan["scanned"].as_u64(), scan["invalid"].as_u64()),
        (Some(2), Some(0))
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), "new.json", &new);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&path, &kubeconfig, &["--objects"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!(
            "objects: 2 scanned in v1; 0 invalid, 0 losing data (server 1.{}, ratcheting on)",
            plane.kube_minor
        )),
        "{}",
        r.stdout
    );

    // `apply --objects` scans, then applies what is safe.
    let r = support::run::run(
        &[
            "apply",
            "-f",
            &path,
            "--kubeconfig",
            &kubeconfig,
            "--objects",
            "--yes",
            "--force-conflicts",
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let applied: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(applied["crds"][0]["scan"]["scanned"], 2);
    assert_eq!(applied["apply"]["results"][0]["result"], "configured");
}

#[tokio::test]
async fn a_storage_version_change_counts_the_fields_the_new_storage_version_drops() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let schema = |fields: Value| json!({"type": "object", "properties": {"spec": {"type": "object", "properties": fields}}});
    let beta = schema(json!({"keep": {"type": "string"}, "legacy": {"type": "string"}}));
    let ga = schema(json!({"keep": {"type": "string"}}));
    let release = |storage_ga: bool| {
        fixtures::crd(
            "rewrites",
            vec![
                fixtures::version("v1beta2", true, !storage_ga, beta.clone()),
                fixtures::version("v1", true, storage_ga, ga.clone()),
            ],
        )
    };
    install(&client, &release(false)).await;
    create_objects(
        &client,
        "rewrites",
        "v1beta2",
        vec![
            (
                "default".into(),
                "a".into(),
                json!({"keep": "x", "legacy": "y"}),
            ),
            ("default".into(), "b".into(), json!({"keep": "z"})),
        ],
    )
    .await;
    // Conversion None, storage v1beta2 -> v1: neither schema changes, but
    // the next write of `a` stores it in v1, whose schema lacks `legacy`.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_manifest(dir.path(), "new.json", &release(true));
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(&path, &kubeconfig, &["--objects", "-o", "json"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let report = r.json();
    assert_eq!(
        scan_findings(&report),
        [(
            "prunedFields".to_string(),
            "^.spec.legacy".to_string(),
            "pruned".to_string(),
            1,
            None,
            vec!["default/a".to_string()]
        )]
    );
    let finding = report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["check"] == "prunedFields")
        .expect("the finding");
    assert_eq!(finding["version"], "v1beta2 -> v1");
    assert!(
        finding["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the new storage version's (v1) schema does not describe"),
        "{finding}"
    );
    assert_eq!(report["crds"][0]["scan"]["losingData"], 1);

    // `migrate` after the update finds the same object losing the same field.
    install(&client, &release(true)).await;
    let r = support::run::run(
        &[
            "migrate",
            "rewrites.example.com",
            "--dry-run",
            "-o",
            "json",
            "--kubeconfig",
            &kubeconfig,
        ],
        None,
    );
    let plan = r.json();
    // What the messages say happens (conversionDataLoss, prunedFields), as
    // kube-apiserver does it: a read through v1 no longer shows the field,
    // a read through v1beta2 (where it is stored) still does, and the next
    // write through v1 drops it for good.
    let through =
        |version: &str| support::live::objects_api(&client, "rewrites", version, "default");
    let read = through("v1")
        .get("a")
        .await
        .expect("a is readable through v1");
    assert!(
        read.data["spec"].get("legacy").is_none(),
        "a read through v1 prunes it: {:?}",
        read.data
    );
    let stored = through("v1beta2").get("a").await.expect("a is readable");
    assert_eq!(stored.data["spec"]["legacy"], "y", "still stored");
    through("v1")
        .replace("a", &kube::api::PostParams::default(), &read)
        .await
        .expect("a is written back through v1");
    let after = through("v1beta2").get("a").await.expect("a is readable");
    assert!(
        after.data["spec"].get("legacy").is_none(),
        "the write dropped it: {:?}",
        after.data
    );
    assert_eq!(
        plan["crds"][0]["check"]["losingData"], 1,
        "{}{}",
        r.stdout, r.stderr
    );
}

#[tokio::test]
async fn dash_n_narrows_the_scan_to_one_namespace_as_kubectl_does() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let old = v1("narroweds", json!({}));
    install(&client, &old).await;
    let objects = ["team-a", "team-b"]
        .iter()
        .flat_map(|ns| {
            [("small", 1), ("ok", 5)]
                .map(|(name, size)| (ns.to_string(), name.to_string(), json!({"size": size})))
        })
        .collect();
    create_objects(&client, "narroweds", "v1", objects).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let new = v1(
        "narroweds",
        json!({"size": {"type": "integer", "minimum": 2}}),
    );
    let path = write_manifest(dir.path(), "new.json", &new);
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let r = apply_check(
        &path,
        &kubeconfig,
        &["--objects", "-n", "team-b", "-o", "json"],
    );
    let report = r.json();
    let scan = &report["crds"][0]["scan"];
    assert_eq!(scan["namespace"], "team-b", "{scan:#}");
    assert_eq!(scan["scanned"], 2, "only team-b's objects: {scan:#}");
    assert_eq!(scan_findings(&report)[0].5, ["team-b/small"]);
    // The table says the scan was narrowed.
    let table = apply_check(&path, &kubeconfig, &["--objects", "--namespace", "team-b"]);
    assert!(
        table
            .stdout
            .contains("2 scanned in v1 (namespace team-b only)"),
        "{}",
        table.stdout
    );
    // Without -n, every namespace.
    let all = apply_check(&path, &kubeconfig, &["--objects", "-o", "json"]).json();
    assert_eq!(all["crds"][0]["scan"]["scanned"], 4);
    assert!(all["crds"][0]["scan"].get("namespace").is_none());
}

/// Several CRDs are scanned at once, sharing one page budget: the report
/// is the one a scan of one CRD after the other gives, in manifest order,
/// with every object counted.
#[tokio::test]
async fn several_crds_scanned_at_once_report_as_one_after_another() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    let dir = tempfile::tempdir().expect("tempdir");
    const CRDS: usize = 6;
    const OBJECTS: usize = 30;
    for c in 0..CRDS {
        let plural = format!("atonce{c}s");
        install(&client, &v1(&plural, json!({}))).await;
        // Every third object is below the new minimum.
        let objects = (0..OBJECTS)
            .map(|i| {
                let size = if i % 3 == 0 { 0 } else { 5 };
                (
                    "default".to_string(),
                    format!("o{i:02}"),
                    json!({"size": size}),
                )
            })
            .collect();
        create_objects(&client, &plural, "v1", objects).await;
        let new = v1(&plural, json!({"size": {"type": "integer", "minimum": 1}}));
        write_manifest(dir.path(), &format!("{c}.json"), &new);
    }
    let kubeconfig = plane.admin_kubeconfig.display().to_string();
    let path = dir.path().display().to_string();
    let run = |concurrency: &str| {
        let args = [
            "--objects",
            "--chunk-size",
            "4",
            "--concurrency",
            concurrency,
            "-o",
            "json",
        ];
        let r = apply_check(&path, &kubeconfig, &args);
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        let mut report = r.json();
        if let Some(o) = report.as_object_mut() {
            o.remove("cluster");
        }
        report
    };
    let one_by_one = run("1");
    let at_once = run("8");
    assert_eq!(at_once, one_by_one);
    let crds = at_once["crds"].as_array().expect("crds");
    assert_eq!(crds.len(), CRDS);
    for (c, crd) in crds.iter().enumerate() {
        assert_eq!(crd["name"], format!("atonce{c}s.example.com"));
        assert_eq!(crd["scan"]["scanned"], OBJECTS, "{}", crd["scan"]);
        assert_eq!(crd["scan"]["invalid"], OBJECTS / 3, "{}", crd["scan"]);
    }
}

#[tokio::test]
async fn objects_without_a_new_required_field_are_ratcheted_at_the_object_that_lacks_it() {
    let Some(plane) = control_plane() else { return };
    let lb = |required: bool| {
        let mut o = json!({"type": "object", "properties": {
            "mode": {"type": "string"}, "simple": {"type": "string"}}});
        if required {
            o["required"] = json!(["mode"]);
        }
        json!({"lb": o, "probe": {"type": "string"}})
    };
    let old = v1("scanrequireds", lb(false));
    let new = v1("scanrequireds", lb(true));
    let objects = [
        ("lacking", json!({"lb": {"simple": "a"}})),
        ("complete", json!({"lb": {"mode": "m"}})),
    ];
    let (r, report) = scan(plane, &old, &objects, &new, &[]).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // The schema finding and the objects it hurts are one finding.
    assert_eq!(
        scan_findings(&report),
        [(
            "required".to_string(),
            "^.spec.lb".to_string(),
            "required".to_string(),
            1,
            Some(true),
            vec!["default/lacking".to_string()]
        )],
        "{report}"
    );
    let message = report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f.get("objects").is_some())
        .and_then(|f| f["message"].as_str())
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("updates that leave that object as it was (labels, status) still succeed"),
        "{message}"
    );
    // What the server does, under NEW: a label-only update and a change
    // outside `lb` pass, a change inside it is refused.
    let client = admin(plane).await;
    install(&client, &new).await;
    let api = support::live::objects_api(&client, "scanrequireds", "v1", "default");
    let params = kube::api::PostParams::default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let mut o = api.get("lacking").await.expect("stored object");
        o.data["spec"]["lb"]["simple"] = json!("b");
        if api.replace("lacking", &params, &o).await.is_err() {
            break;
        }
        // The old schema still judged it: put it back and try again.
        o.data["spec"]["lb"]["simple"] = json!("a");
        let mut back = api.get("lacking").await.expect("stored object");
        back.data["spec"]["lb"] = json!({"simple": "a"});
        api.replace("lacking", &params, &back)
            .await
            .expect("restored");
        assert!(
            std::time::Instant::now() < deadline,
            "the new schema never took effect"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let mut o = api.get("lacking").await.expect("stored object");
    o.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    o.data["spec"]["probe"] = json!("changed");
    api.replace("lacking", &params, &o)
        .await
        .expect("an update that leaves `lb` as it was passes");
}
