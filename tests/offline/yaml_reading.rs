//! Manifests read as kubectl reads them. kubectl, Helm and Argo CD read YAML
//! with sigs.k8s.io/yaml (go-yaml v2, YAML 1.1); `yaml2json`, a small Go
//! program built from `tests/support/yaml2json` against that library, is the
//! reference: every tricky document below must read to the same JSON, or be
//! refused by both.

use crate::support::kubectl_yaml::{NORWAY_CRD, kubectl_reading};
use crate::support::run::run;

/// Documents where YAML 1.1 and 1.2, or go-yaml and the YAML spec, part ways.
const TRICKY: &[&str] = &[
    // The Norway problem, keys and values, in every case go-yaml lists.
    "x: 1\ny: 2\non: 3\nOff: 4\nyes: 5\n",
    "a: y\nb: Y\nc: yes\nd: Yes\ne: YES\nf: on\ng: On\nh: ON\ni: true\nj: True\nk: TRUE\n",
    "a: n\nb: N\nc: no\nd: No\ne: NO\nf: off\ng: Off\nh: OFF\ni: false\nj: False\nk: FALSE\n",
    "a: yEs\nb: oN\nc: nO\nd: tRUE\ne: o\nf: yes!\n",
    "'y': quoted\n\"on\": double\nn: plain\n",
    "list: [y, n, on, off, 'y']\nflow: {y: 1, n: 2}\n",
    // Numbers.
    "a: 0777\nb: 0x1F\nc: 0o17\nd: 0b101\ne: 1_000\nf: +5\ng: -0\nh: 08\ni: 09.5\n",
    "a: 1e3\nb: 1.0\nc: .5\nd: -.5\ne: 1.\nf: 1E-2\ng: 3.25\nh: 0.1\n",
    "a: 18446744073709551615\nb: -9223372036854775808\nc: 9223372036854775808\n",
    "a: 123456789012345678901234567890\nb: 1e999\nc: 0x\nd: '0777'\n",
    "a: 1:20\nb: 2001-12-14\nc: 2001-12-14t21:59:43.10-05:00\nd: =\ne: -\nf: --1\n",
    // Keys that are not strings. (Not `1` beside `1.0`: both become "1",
    // and which value sigs.k8s.io/yaml keeps depends on Go's random map
    // order, so kubectl itself reads such a file differently from run to
    // run.)
    "1: a\n0x10: b\n2.0: c\n1.5: d\n3.14159265: e\n1e7: f\n0.00001: g\ntrue: h\n",
    // Nulls.
    "a: ~\nb: null\nc: Null\nd: NULL\ne:\nf: 'null'\n",
    // Anchors, aliases, merge keys (go-yaml v2: a merge overwrites the keys
    // before it; of a list of maps the first wins), repeated keys.
    "a: &x {p: 1, q: 2}\nb:\n  q: 3\n  <<: *x\n  r: 4\nc: *x\n",
    "m:\n  <<: [{p: 1}, {p: 2, s: 5}]\n  t: 6\n",
    "a: 1\nb: 2\na: 3\n",
    "k: &v y\nl: *v\n",
    "a: !!str 5\nb: !!str y\n",
    // Block and quoted scalars stay strings.
    "a: |\n  y\nb: >\n  on\nc: \"0777\"\n",
    // Refused by kubectl.
    "a: .inf\n",
    "a: -.Inf\n",
    "a: .nan\n",
    "~: x\n",
    "? [a]\n: b\n",
];

#[test]
fn every_tricky_document_reads_as_sigs_k8s_io_yaml_reads_it() {
    let Some(reference) = kubectl_reading(TRICKY) else {
        return;
    };
    let mut differences = Vec::new();
    for (doc, want) in TRICKY.iter().zip(reference) {
        let ours = crd_safety::manifest::read_values(doc, "t.yaml")
            .ok()
            .map(|mut docs| docs.remove(0).0);
        if ours != want {
            differences.push(format!(
                "{doc:?}\n  sigs.k8s.io/yaml: {}\n  crd-safety:       {}",
                want.map_or("refused".into(), |v| v.to_string()),
                ours.map_or("refused".into(), |v| v.to_string()),
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[test]
fn lint_warns_at_every_key_kubectl_reads_as_a_boolean_and_judges_its_reading() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("crd.yaml");
    let crd = NORWAY_CRD
        .replace("PLURAL", "norways")
        .replace("KIND", "Norway");
    std::fs::write(&file, &crd).expect("written");
    let file = file.display().to_string();
    let out = run(&["lint", &file, "-o", "json"], None);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let report = out.json();
    let findings: Vec<(String, u64, String)> = report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "yamlReading")
        .map(|f| {
            let message = f["message"].as_str().unwrap_or_default();
            let what = message.split(':').next().unwrap_or_default().to_string();
            (
                f["severity"].as_str().unwrap_or_default().to_string(),
                f["location"]["line"].as_u64().unwrap_or(0),
                what,
            )
        })
        .collect();
    let warn = |line, what: &str| ("warning".to_string(), line, what.to_string());
    assert_eq!(
        findings,
        [
            warn(21, "key `y` is read by kubectl as `true`"),
            warn(23, "key `on` is read by kubectl as `true`"),
            warn(25, "key `Off` is read by kubectl as `false`"),
            warn(27, "key `yes` is read by kubectl as `true`"),
        ]
    );
    // The table says the same, with the file and line.
    let table = run(&["lint", &file], None);
    assert!(
        table.stdout.contains("yamlReading")
            && table.stdout.contains("key `y` is read by kubectl as"),
        "{}",
        table.stdout
    );
}

#[test]
fn diff_judges_the_crd_kubectl_would_apply() {
    // Quoting `y` in NEW is the fix: kubectl then applies the property `y`
    // where it applied `true` before, which removes a field.
    let dir = tempfile::tempdir().expect("temp dir");
    let old = dir.path().join("old.yaml");
    let new = dir.path().join("new.yaml");
    let crd = NORWAY_CRD
        .replace("PLURAL", "norways")
        .replace("KIND", "Norway");
    std::fs::write(&old, &crd).expect("written");
    std::fs::write(
        &new,
        crd.replace("              y:\n", "              'y':\n"),
    )
    .expect("written");
    let out = run(
        &[
            "diff",
            &old.display().to_string(),
            &new.display().to_string(),
            "-o",
            "json",
        ],
        None,
    );
    let report = out.json();
    let removed: Vec<&str> = report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "existingFieldRemoval")
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(removed, Vec::<&str>::new(), "{}", out.stdout);
    let added: Vec<&str> = report["crds"][0]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["check"] == "fieldAddition")
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(added, ["^.spec.y"], "{}", out.stdout);
}
