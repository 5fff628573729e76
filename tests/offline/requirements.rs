//! Consumers' requirements (`--requirements`, `require`, `requirements`):
//! NEW judged against each pinned CRD, only where the requirement holds it,
//! each finding naming the consumer; OpenShift's format read as it is.

use crate::support;

use serde_json::{Value, json};
use support::fixtures::{crd, version};
use support::run::run;
use support::runs::assert_has;

/// An object schema whose `spec` has string properties `fields`.
fn root(fields: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> = fields
        .iter()
        .map(|f| (f.to_string(), json!({"type": "string"})))
        .collect();
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

/// `pins.example.com` serving `v1beta1` and `v1` (stored), each with its
/// own `spec` fields.
fn pins(v1beta1: &[&str], v1: &[&str]) -> Value {
    crd(
        "pins",
        vec![
            version("v1beta1", true, false, root(v1beta1)),
            version("v1", true, true, root(v1)),
        ],
    )
}

/// A `CRDRequirement` named `team-a/uses-pins`, owned by `#team-a`,
/// pinning `pinned`, with `extra` lines of YAML under `spec`.
fn requirement(pinned: &Value, extra: &str) -> String {
    format!(
        "apiVersion: crd-safety.io/v1alpha1
kind: CRDRequirement
metadata:
  name: uses-pins
  namespace: team-a
spec:
  owner: {{name: Team A, contact: \"#team-a\"}}
{extra}  crd: {}
",
        serde_json::to_string(pinned).expect("a CRD serializes")
    )
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        Files {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("a fixture is written");
        path.display().to_string()
    }

    fn json(&self, name: &str, value: &Value) -> String {
        self.write(name, &serde_json::to_string(value).expect("serializes"))
    }
}

/// `lint NEW --requirements REQ -o json`: with no OLD side, every finding
/// is a requirement's.
fn lint(new: &str, requirements: &str) -> (i32, Value) {
    let r = run(
        &["lint", new, "--requirements", requirements, "-o", "json"],
        None,
    );
    assert!(r.code == 0 || r.code == 1, "{}\n{}", r.stdout, r.stderr);
    (r.code, r.json())
}

fn requirement_findings(report: &Value) -> Vec<&Value> {
    report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["findings"].as_array().into_iter().flatten())
        .filter(|f| f.get("requirement").is_some())
        .collect()
}

#[test]
fn a_pinned_field_removed_fails_the_diff_and_names_the_consumer() {
    let files = Files::new();
    let old = files.json("old.json", &pins(&["a"], &["a", "b"]));
    let new = files.json("new.json", &pins(&["a"], &["a"]));
    let req = files.write("req.yaml", &requirement(&pins(&["a"], &["a", "b"]), ""));
    let r = support::run::run_in_columns(200, &["diff", &old, &new, "--requirements", &req], None);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_has(
        &r.stdout,
        "breaks `team-a/uses-pins` (owner: Team A, #team-a): field ^.spec.b removed",
    );
    assert_has(&r.stdout, "1 requirement checked, 1 broken");

    let r = run(
        &["diff", &old, &new, "--requirements", &req, "-o", "json"],
        None,
    );
    let report = r.json();
    let found = requirement_findings(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["check"], "existingFieldRemoval");
    assert_eq!(found[0]["requirement"]["name"], "team-a/uses-pins");
    assert_eq!(found[0]["requirement"]["owner"], "Team A, #team-a");
    assert!(
        found[0]["requirement"]["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("req.yaml:1")),
        "{report:#}"
    );
    assert_eq!(report["requirements"][0]["met"], false);
    assert_eq!(report["requirements"][0]["errors"], 1);

    let r = run(
        &["diff", &old, &new, "--requirements", &req, "-o", "sarif"],
        None,
    );
    assert_has(&r.stdout, "breaks `team-a/uses-pins`");
}

#[test]
fn a_change_outside_the_pinned_fields_is_not_reported_against_the_requirement() {
    let files = Files::new();
    let pinned = pins(&["a"], &["a", "b", "c"]);
    let new = files.json("new.json", &pins(&["a"], &["a", "b"]));
    let uses_a = files.write("a.yaml", &requirement(&pinned, "  fields: [\"spec.a\"]\n"));
    let (code, report) = lint(&new, &uses_a);
    assert_eq!(code, 0, "{report:#}");
    assert!(requirement_findings(&report).is_empty(), "{report:#}");
    assert_eq!(report["requirements"][0]["met"], true);

    // The same removal breaks a consumer of the field, and one of the
    // object above it.
    for fields in ["[\"^.spec.c\"]", "[spec]"] {
        let uses = files.write(
            "c.yaml",
            &requirement(&pinned, &format!("  fields: {fields}\n")),
        );
        let (code, report) = lint(&new, &uses);
        assert_eq!(code, 1, "{fields}: {report:#}");
        let found = requirement_findings(&report);
        assert_eq!(found.len(), 1, "{fields}: {report:#}");
        assert_eq!(found[0]["path"], "^.spec.c");
    }
}

#[test]
fn excluded_fields_are_not_held() {
    let files = Files::new();
    let pinned = pins(&["a"], &["a", "b"]);
    let new = files.json("new.json", &pins(&["a"], &["a"]));
    let req = files.write(
        "req.yaml",
        &requirement(&pinned, "  excludedFields: [spec.b]\n"),
    );
    let (code, report) = lint(&new, &req);
    assert_eq!(code, 0, "{report:#}");
    assert!(requirement_findings(&report).is_empty(), "{report:#}");
}

#[test]
fn only_the_held_versions_are_judged() {
    let files = Files::new();
    let pinned = pins(&["a", "b"], &["a"]);
    // v1beta1 loses b; v1 is unchanged.
    let new = files.json("new.json", &pins(&["a"], &["a"]));
    let v1 = files.write("v1.yaml", &requirement(&pinned, "  versions: [v1]\n"));
    let (code, report) = lint(&new, &v1);
    assert_eq!(code, 0, "{report:#}");
    assert!(requirement_findings(&report).is_empty(), "{report:#}");

    for held in ["served", "[v1beta1]"] {
        let req = files.write(
            "r.yaml",
            &requirement(&pinned, &format!("  versions: {held}\n")),
        );
        let (code, report) = lint(&new, &req);
        assert_eq!(code, 1, "{held}: {report:#}");
        let found = requirement_findings(&report);
        assert_eq!(found.len(), 1, "{held}: {report:#}");
        assert_eq!(found[0]["version"], "v1beta1");
    }
    // `storage` holds v1 alone.
    let storage = files.write("s.yaml", &requirement(&pinned, "  versions: storage\n"));
    assert_eq!(lint(&new, &storage).0, 0);
}

/// OpenShift's object, as `oc get compatibilityrequirement -o yaml` prints
/// it: the CRD a YAML string, versions by selection, excluded fields
/// dot-separated through lists, and its action.
fn compatibility_requirement(
    pinned: &Value,
    selection: &str,
    excluded: &str,
    action: &str,
) -> String {
    let data = serde_json::to_string(pinned).expect("serializes");
    format!(
        "apiVersion: apiextensions.openshift.io/v1alpha1
kind: CompatibilityRequirement
metadata:
  name: pins-for-console
spec:
  compatibilitySchema:
    customResourceDefinition:
      type: YAML
      data: {data:?}
    requiredVersions:
      defaultSelection: {selection}
    excludedFields: {excluded}
  customResourceDefinitionSchemaValidation:
    action: {action}
status:
  conditions: []
"
    )
}

#[test]
fn an_openshift_compatibility_requirement_is_read_as_it_is() {
    let files = Files::new();
    let list = |fields: Value| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "array", "items": {"type": "object", "properties": fields}},
            "mode": {"type": "string"}
        }}}})
    };
    let pinned = crd(
        "pins",
        vec![version(
            "v1",
            true,
            true,
            list(json!({"name": {"type": "string"}, "port": {"type": "integer"}})),
        )],
    );
    // Both list-item fields removed.
    let new = files.json(
        "new.json",
        &crd("pins", vec![version("v1", true, true, list(json!({})))]),
    );
    let excluded = "[{path: spec.ports.name}]";
    let deny = files.write(
        "deny.yaml",
        &compatibility_requirement(&pinned, "StorageOnly", excluded, "Deny"),
    );
    let (code, report) = lint(&new, &deny);
    assert_eq!(code, 1, "{report:#}");
    let found = requirement_findings(&report);
    let paths: Vec<&Value> = found.iter().map(|f| &f["path"]).collect();
    assert_eq!(paths, [&json!("^.spec.ports[*].port")], "{report:#}");
    assert_eq!(found[0]["requirement"]["name"], "pins-for-console");
    assert!(
        found[0]
            .get("requirement")
            .and_then(|r| r.get("owner"))
            .is_none()
    );

    // Warn: reported, not failing.
    let warn = files.write(
        "warn.yaml",
        &compatibility_requirement(&pinned, "AllServed", excluded, "Warn"),
    );
    let (code, report) = lint(&new, &warn);
    assert_eq!(code, 0, "{report:#}");
    let found = requirement_findings(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["severity"], "warning");
}

#[test]
fn a_requirement_whose_crd_is_not_in_new_is_an_error() {
    let files = Files::new();
    let req = files.write("req.yaml", &requirement(&pins(&["a"], &["a"]), ""));
    let other = files.json(
        "other.json",
        &crd("others", vec![version("v1", true, true, root(&["x"]))]),
    );
    let (code, report) = lint(&other, &req);
    assert_eq!(code, 1, "{report:#}");
    let found = requirement_findings(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["check"], "absentCrd");
    assert_eq!(found[0]["severity"], "error");
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("breaks `team-a/uses-pins` (owner: Team A, #team-a): pins.example.com is not in the new manifests")),
        "{report:#}"
    );
}

#[test]
fn a_malformed_requirement_names_its_file_and_line() {
    let files = Files::new();
    let pinned = pins(&["a"], &["a"]);
    let new = files.json("new.json", &pinned);
    let cases = [
        (
            "  colour: red\n",
            "req.yaml:8: spec.colour: unknown key; valid keys: owner, crd, versions, fields, excludedFields, checks, action",
        ),
        (
            "  fields: [spec.a, spec.nope]\n",
            "req.yaml:8: spec.fields.1: spec.nope is not a field of the pinned CRD in v1beta1, v1",
        ),
        (
            "  versions: [v2]\n",
            "req.yaml:8: spec.versions: the pinned CRD has no version v2 (it has v1beta1, v1)",
        ),
        (
            "  checks: {enums: ignore}\n",
            "req.yaml:8: spec.checks: checks: unknown check \"enums\"",
        ),
        (
            "  action: Block\n",
            "req.yaml:8: spec.action: expected Deny or Warn, found \"Block\"",
        ),
        (
            "  fields: [\"spec..a\"]\n",
            "req.yaml:8: spec.fields.0: \"spec..a\": expected a field name at character 6",
        ),
    ];
    for (extra, want) in cases {
        let req = files.write("req.yaml", &requirement(&pinned, extra));
        let r = run(&["lint", &new, "--requirements", &req], None);
        assert_eq!(r.code, 2, "{extra}: {}", r.stdout);
        let line = r
            .stderr
            .replace(&format!("{}/", files.dir.path().display()), "");
        assert!(
            line.starts_with(&format!("error: {want}")),
            "{extra}:\n{line}"
        );
    }
    let nothing = files.write(
        "nothing.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let r = run(&["lint", &new, "--requirements", &nothing], None);
    assert_eq!(r.code, 2);
    assert_has(
        &r.stderr,
        "no CRDRequirement or CompatibilityRequirement found (1 document(s) read)",
    );
}

#[test]
fn require_writes_a_requirement_from_a_file_and_the_fields_objects_use() {
    let files = Files::new();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string"},
        "b": {"type": "string"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}}
    }}}});
    let pinned = crd("pins", vec![version("v1", true, true, schema)]);
    let crds = files.json("crds.json", &pinned);
    let objects = files.write(
        "objects.yaml",
        "apiVersion: example.com/v1
kind: Pin
metadata: {name: one}
spec:
  a: x
  labels: {team: a}
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other}
data: {b: y}
",
    );
    let r = run(
        &[
            "require",
            "team-a/uses-pins",
            "--crd",
            "pins.example.com",
            "--from",
            &crds,
            "--fields-from",
            &objects,
            "--owner",
            "Team A",
            "--contact",
            "#team-a",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let written: Value = serde_saphyr::from_str(&r.stdout).expect("YAML");
    assert_eq!(written["kind"], "CRDRequirement");
    assert_eq!(
        written["metadata"],
        json!({"name": "uses-pins", "namespace": "team-a"})
    );
    assert_eq!(
        written["spec"]["owner"],
        json!({"name": "Team A", "contact": "#team-a"})
    );
    assert_eq!(written["spec"]["versions"], serde_json::json!(["served"]));
    assert_eq!(
        written["spec"]["fields"],
        json!(["spec.a", "spec.labels", "spec.ports[*].port"])
    );
    assert_eq!(
        written["spec"]["crd"]["metadata"],
        json!({"name": "pins.example.com"})
    );

    // What it wrote is a requirement the other commands read: b is not
    // used, so its removal breaks nobody; a is.
    let req = files.write("req.yaml", &r.stdout);
    let without = |fields: &[&str]| {
        let mut crd = pinned.clone();
        let props = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"];
        if let Some(props) = props.as_object_mut() {
            for f in fields {
                props.remove(*f);
            }
        }
        crd
    };
    let new = files.json("new.json", &without(&["b"]));
    assert_eq!(lint(&new, &req).0, 0);
    let new = files.json("new.json", &without(&["a", "b"]));
    assert_eq!(lint(&new, &req).0, 1);

    let r = run(
        &[
            "require",
            "x",
            "--crd",
            "pins.example.com",
            "--from",
            &crds,
            "--fields",
            "spec.nope",
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert_has(
        &r.stderr,
        "spec.nope is not a field of the pinned CRD in v1",
    );
    let r = run(
        &[
            "require",
            "x",
            "--crd",
            "nopes.example.com",
            "--from",
            &crds,
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert_has(&r.stderr, "--crd nopes.example.com: not in");
}

#[test]
fn requirements_lists_each_requirement_and_its_state_against_files() {
    let files = Files::new();
    let pinned = pins(&["a"], &["a", "b"]);
    let dir = files.dir.path().join("reqs");
    std::fs::create_dir(&dir).expect("a directory");
    std::fs::write(
        dir.join("a.yaml"),
        requirement(&pinned, "  fields: [spec.a]\n"),
    )
    .expect("written");
    let b = requirement(&pinned, "  fields: [spec.b]\n").replace("name: uses-pins", "name: uses-b");
    std::fs::write(dir.join("b.yaml"), b).expect("written");
    let new = files.json("new.json", &pins(&["a"], &["a"]));
    let dir = dir.display().to_string();
    let r = run(&["requirements", "--requirements", &dir, "-f", &new], None);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let rows: Vec<&str> = r.stdout.lines().filter(|l| l.contains("team-a/")).collect();
    assert!(
        rows[0].contains("team-a/uses-pins") && rows[0].ends_with("Compatible"),
        "{}",
        r.stdout
    );
    assert!(
        rows[1].contains("team-a/uses-b") && rows[1].ends_with("RequirementsNotMet"),
        "{}",
        r.stdout
    );
    assert_has(
        &r.stdout,
        "existingFieldRemoval v1 ^.spec.b: field ^.spec.b removed",
    );
    assert_has(&r.stdout, "1 of 2 requirements met");

    let r = run(
        &[
            "requirements",
            "--requirements",
            &dir,
            "-f",
            &new,
            "-o",
            "json",
        ],
        None,
    );
    let states: Value = serde_json::from_str(&r.stdout).expect("JSON");
    let summary: Vec<(&str, &str)> = states["requirements"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap_or(""),
                s["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("team-a/uses-pins", "Compatible"),
            ("team-a/uses-b", "RequirementsNotMet")
        ]
    );
    assert_eq!(states["failed"], true);
}

#[test]
fn the_config_file_names_requirements_relative_to_itself() {
    let files = Files::new();
    let pinned = pins(&["a"], &["a", "b"]);
    files.write("req.yaml", &requirement(&pinned, ""));
    let config = files.write(".crd-safety.yaml", "requirements: [req.yaml]\n");
    let new = files.json("new.json", &pins(&["a"], &["a"]));
    let r = run(&["lint", &new, "--config", &config], None);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_has(&r.stdout, "breaks `team-a/uses-pins`");
}

/// An HTTPRoute as an ingress team writes it: what their controller and
/// manifests rely on.
const ROUTE: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: store, namespace: shop}
spec:
  parentRefs:
  - {name: public-gw, namespace: infra, sectionName: https}
  hostnames: [shop.example.com]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /cart}
      headers:
      - {name: x-canary, value: \"true\"}
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        add:
        - {name: x-shop, value: cart}
    backendRefs:
    - {name: cart, port: 8080, weight: 90}
";

/// The corpus case of docs/requirements.md: the Gateway API v1.0 HTTPRoute
/// fields one route uses, pinned with `require --fields-from`, held against
/// every later standard release. The figures are the table in the docs.
#[test]
fn gateway_api_v1_0_route_fields_against_every_later_release() {
    let Some(corpus) = support::corpus::corpus_dir() else {
        return;
    };
    let releases = corpus.join("gateway-api-standard");
    let files = Files::new();
    let route = files.write("route.yaml", ROUTE);
    let base = releases.join("v1.0.0").display().to_string();
    let r = run(
        &[
            "require",
            "ingress-team/gateway-routes",
            "--crd",
            "httproutes.gateway.networking.k8s.io",
            "--from",
            &base,
            "--fields-from",
            &route,
            "--versions",
            "v1",
            "--owner",
            "ingress-team",
            "--contact",
            "#ingress",
        ],
        None,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let req = files.write("gateway-routes.yaml", &r.stdout);
    let file = "gateway.networking.k8s.io_httproutes.yaml";
    let mut table = vec![
        "| release | diff of the whole CRD: errors (in v1) | against the requirement | errors | checks |".to_string(),
        "| --- | --- | --- | --- | --- |".to_string(),
    ];
    let mut rows = Vec::new();
    for release in ["v1.1.1", "v1.2.1", "v1.3.0", "v1.4.1", "v1.5.1", "v1.6.1"] {
        let new = releases.join(release).display().to_string();
        let old_file = releases.join("v1.0.0").join(file).display().to_string();
        let new_file = releases.join(release).join(file).display().to_string();
        let diff = run(&["diff", &old_file, &new_file, "-o", "json"], None).json();
        let errors = |v: Option<&str>| {
            diff["crds"][0]["findings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["severity"] == "error" && v.is_none_or(|v| f["version"] == v))
                .count()
        };
        let r = run(
            &[
                "requirements",
                "--requirements",
                &req,
                "-f",
                &new,
                "-o",
                "json",
            ],
            None,
        );
        let states: Value = serde_json::from_str(&r.stdout).expect("JSON");
        let state = &states["requirements"][0];
        let found: Vec<&Value> = state["findings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| f["severity"] == "error")
            .collect();
        let mut checks: Vec<&str> = found.iter().filter_map(|f| f["check"].as_str()).collect();
        checks.dedup();
        let state = state["state"].as_str().unwrap_or("").to_string();
        table.push(format!(
            "| {release} | {} ({}) | {state} | {} | {} |",
            errors(None),
            errors(Some("v1")),
            found.len(),
            checks.join(", ")
        ));
        // The requirement never holds more than the owner's own view of v1.
        assert!(found.len() <= errors(Some("v1")), "{release}");
        rows.push((release, state, found.len()));
    }
    eprintln!("{}", table.join("\n"));
    let states: Vec<(&str, &str, usize)> =
        rows.iter().map(|(r, s, n)| (*r, s.as_str(), *n)).collect();
    assert_eq!(
        states,
        [
            ("v1.1.1", "Compatible", 0),
            ("v1.2.1", "RequirementsNotMet", 1),
            ("v1.3.0", "RequirementsNotMet", 1),
            ("v1.4.1", "RequirementsNotMet", 1),
            ("v1.5.1", "RequirementsNotMet", 2),
            ("v1.6.1", "RequirementsNotMet", 2),
        ]
    );
}

/// The case: an `AllServed` requirement and a NEW that stops
/// serving one of its versions. The consumer reads that version, so the
/// requirement is broken: `Deny` fails the run, `Warn` reports it, and both
/// count it in the summary.
#[test]
fn a_held_served_version_removed_breaks_the_requirement_under_either_action() {
    let files = Files::new();
    let pinned = pins(&["a"], &["a"]);
    let new = files.json(
        "new.json",
        &crd("pins", vec![version("v1", true, true, root(&["a"]))]),
    );
    let removal = |report: &Value| -> Vec<String> {
        requirement_findings(report)
            .into_iter()
            .filter(|f| f["check"] == "servedVersionRemoval")
            .map(|f| format!("{} {} {}", f["severity"], f["version"], f["message"]))
            .collect()
    };
    for (action, code, severity) in [("Deny", 1, "error"), ("Warn", 0, "warning")] {
        let req = files.write(
            &format!("{action}.yaml"),
            &compatibility_requirement(&pinned, "AllServed", "[]", action),
        );
        let (got, report) = lint(&new, &req);
        assert_eq!(got, code, "{action}: {report:#}");
        let found = removal(&report);
        assert_eq!(found.len(), 1, "{action}: {report:#}");
        assert!(
            found[0].starts_with(&format!(
                "\"{severity}\" \"v1beta1\" \"breaks `pins-for-console`: served version v1beta1 removed"
            )),
            "{action}: {found:?}"
        );
        assert_eq!(
            report["requirements"][0]["met"], false,
            "{action}: {report:#}"
        );
        let table = run(&["lint", &new, "--requirements", &req], None);
        assert_has(&table.stdout, "1 requirement checked, 1 broken");
    }

    // Negative: holding only the storage version (v1, still served), the
    // same NEW breaks nothing the requirement holds.
    let storage = files.write(
        "storage.yaml",
        &compatibility_requirement(&pinned, "StorageOnly", "[]", "Deny"),
    );
    let (code, report) = lint(&new, &storage);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["requirements"][0]["met"], true, "{report:#}");
    let table = run(&["lint", &new, "--requirements", &storage], None);
    assert_has(&table.stdout, "1 requirement checked, 0 broken");
}
