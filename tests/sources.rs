//! Where CRDs live, end to end through the binary: git revisions of a
//! repository made here, Helm charts (crds/, templated behind a values
//! switch, packaged), kustomizations with a patch on a CRD, and one
//! non-file source checked against the real API server.

mod support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::envtest::control_plane;
use support::helm::{helm_dir, path_with_helm};
use support::live::{admin, install};

/// A CRD `widgets.example.com` whose `spec.color` accepts `colors`.
fn widgets(colors: &[&str]) -> String {
    support::fixtures::crd_yaml(
        "widgets",
        &[format!(
            "color: {{type: string, enum: [{}]}}",
            colors.join(", ")
        )],
    )
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("directory is created");
    }
    std::fs::write(path, text).expect("file is written");
}

/// The plugin run in `dir` with `PATH` set to `path` (or inherited).
struct Plugin<'a> {
    dir: &'a Path,
    path: Option<String>,
}

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Plugin<'_> {
    fn run(&self, args: &[&str]) -> Out {
        let mut cmd = assert_cmd::Command::cargo_bin("kubectl-crd_safety").expect("binary");
        cmd.args(args)
            .current_dir(self.dir)
            .env("NO_COLOR", "1")
            .env("COLUMNS", "200")
            .env_remove("KUBECONFIG");
        if let Some(p) = &self.path {
            cmd.env("PATH", p);
        }
        let out = cmd.output().expect("the binary runs");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let out = self.run(&all);
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", out.stdout, out.stderr))
    }
}

fn plugin(dir: &Path) -> Plugin<'_> {
    Plugin { dir, path: None }
}

/// PATH without helm (the system directories only).
const NO_HELM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

// ---- git ----------------------------------------------------------------------

/// Runs git in `dir` with a fixed identity (the test's tool; the plugin
/// itself reads repositories without git).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(["-c", "tag.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository with two commits: the first release accepts red, green
/// and blue (tagged `v1.0`, annotated, and `first`, lightweight); the
/// second drops blue. A README and a hidden file are not manifests.
fn two_commit_repo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    git(d, &["init", "-q"]);
    write(
        &d.join("crds/widgets.yaml"),
        &widgets(&["red", "green", "blue"]),
    );
    write(&d.join("crds/README.md"), "not a manifest\n");
    write(&d.join("crds/.hidden.yaml"), "not: [valid\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "first release"]);
    git(d, &["tag", "-a", "v1.0", "-m", "v1.0"]);
    git(d, &["tag", "first"]);
    write(&d.join("crds/widgets.yaml"), &widgets(&["red", "green"]));
    git(d, &["commit", "-q", "-am", "drop blue"]);
    tmp
}

fn enum_findings(report: &Value) -> Vec<String> {
    report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "enum")
        .map(|f| f["path"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn diff_against_the_previous_commit_shows_the_change_with_git_locations() {
    let repo = two_commit_repo();
    let out = plugin(repo.path()).run(&["diff", "git:HEAD~1:crds", "crds"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("old: git:HEAD~1:crds/widgets.yaml:1, new: crds/widgets.yaml:1"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("enum"), "{}", out.stdout);
}

#[test]
fn every_kind_of_revision_names_the_first_release() {
    let repo = two_commit_repo();
    let d = repo.path();
    let full = git(d, &["rev-parse", "HEAD~1"]);
    let short = full[..8].to_string();
    for rev in [
        "HEAD~1",
        "main~1",
        "v1.0",
        "first",
        full.as_str(),
        short.as_str(),
    ] {
        let report = plugin(d).json(&["diff", &format!("git:{rev}:crds/widgets.yaml"), "crds"]);
        assert_eq!(
            report["crds"][0]["oldSource"],
            format!("git:{rev}:crds/widgets.yaml:1")
        );
        assert_eq!(
            enum_findings(&report),
            ["^.spec.color"],
            "{rev} reads the first release"
        );
    }
    // Both sides from git: HEAD against itself is safe.
    let same = plugin(d).run(&["diff", "git:HEAD:crds", "git:main:crds"]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
}

#[test]
fn lint_and_repo_flag_read_a_revision_from_anywhere() {
    let repo = two_commit_repo();
    let elsewhere = tempfile::tempdir().expect("temp dir");
    let repo_dir = repo.path().display().to_string();
    let out = plugin(elsewhere.path()).run(&["lint", "git:v1.0:crds", "--repo", &repo_dir]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("git:v1.0:crds/widgets.yaml:1"),
        "{}",
        out.stdout
    );
    // ./ paths are relative to the working directory, as in git.
    let sub = plugin(&repo.path().join("crds")).run(&["lint", "git:HEAD~1:./widgets.yaml"]);
    assert_eq!(sub.code, 0, "{}", sub.stderr);
    assert!(
        sub.stdout.contains("git:HEAD~1:crds/widgets.yaml:1"),
        "{}",
        sub.stdout
    );
}

#[test]
fn git_sources_fail_with_one_line_saying_what_is_wrong() {
    let repo = two_commit_repo();
    let d = repo.path();
    let cases = [
        (
            "git:nope:crds",
            "error: git:nope:crds: unknown revision nope in ",
        ),
        (
            "git:HEAD~1:deploy",
            "error: git:HEAD~1:deploy: deploy does not exist at HEAD~1 (commit ",
        ),
        ("git:HEAD", "error: git:HEAD: expected git:REF:PATH"),
    ];
    for (source, expected) in cases {
        let out = plugin(d).run(&["diff", source, "crds"]);
        assert_eq!(out.code, 2, "{source}: {}", out.stderr);
        assert!(out.stderr.starts_with(expected), "{source}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
    let empty = tempfile::tempdir().expect("temp dir");
    let out = plugin(empty.path()).run(&["lint", "git:HEAD:crds"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("not inside a git repository") && out.stderr.contains("--repo DIR"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_shallow_clone_says_how_to_fetch_the_history_and_remote_branches_resolve() {
    let repo = two_commit_repo();
    let url = format!("file://{}", repo.path().display());
    let clones = tempfile::tempdir().expect("temp dir");
    git(clones.path(), &["clone", "-q", &url, "full"]);
    git(
        clones.path(),
        &["clone", "-q", "--depth", "1", &url, "shallow"],
    );

    let full_dir = clones.path().join("full");
    let report = plugin(&full_dir).json(&["diff", "git:origin/main~1:crds", "crds"]);
    assert_eq!(enum_findings(&report), ["^.spec.color"]);

    let out = plugin(&clones.path().join("shallow")).run(&["diff", "git:HEAD~1:crds", "crds"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("shallow clone"), "{}", out.stderr);
    assert!(out.stderr.contains("fetch-depth: 0"), "{}", out.stderr);
    assert!(
        out.stderr.contains("git fetch --unshallow"),
        "{}",
        out.stderr
    );
}

// ---- Helm charts ---------------------------------------------------------------

fn chart_yaml(name: &str) -> String {
    format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
}

/// A chart with its CRD in crds/ and an ordinary template.
fn crds_chart(dir: &Path, colors: &[&str]) {
    write(&dir.join("Chart.yaml"), &chart_yaml("widgets"));
    write(&dir.join("crds/widgets.yaml"), &widgets(colors));
    write(
        &dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
}

/// A chart whose CRD is a template behind `crds.enabled`, as cert-manager's.
fn templated_chart(dir: &Path, colors: &[&str]) {
    write(&dir.join("Chart.yaml"), &chart_yaml("templated"));
    write(&dir.join("values.yaml"), "crds:\n  enabled: false\n");
    write(
        &dir.join("templates/crds.yaml"),
        &format!(
            "{{{{- if .Values.crds.enabled }}}}\n{}{{{{- end }}}}\n",
            widgets(colors)
        ),
    );
}

#[test]
fn a_chart_directory_is_read_from_its_crds_folder() {
    let tmp = tempfile::tempdir().expect("temp dir");
    crds_chart(&tmp.path().join("v1"), &["red", "green", "blue"]);
    crds_chart(&tmp.path().join("v2"), &["red", "green"]);
    // No helm needed: nothing in templates/ makes a CRD.
    let p = Plugin {
        dir: tmp.path(),
        path: Some(NO_HELM_PATH.into()),
    };
    let report = p.json(&["diff", "v1", "v2"]);
    assert_eq!(report["crds"][0]["newSource"], "v2/crds/widgets.yaml:1");
    assert_eq!(enum_findings(&report), ["^.spec.color"]);
    assert!(report.get("notices").is_none(), "{report}");
    assert_eq!(report["summary"]["skippedDocuments"], 0);
}

/// `gadgets`: the widgets CRD under another name, for a second CRD.
fn gadgets() -> String {
    widgets(&["red"])
        .replace("widgets", "gadgets")
        .replace("Widget", "Gadget")
}

#[test]
fn subcharts_crds_are_read_unpacked_and_packaged() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    crds_chart(&d.join("app"), &["red"]);
    write(
        &d.join("app/charts/gadgets/Chart.yaml"),
        &chart_yaml("gadgets"),
    );
    write(&d.join("app/charts/gadgets/crds/gadgets.yaml"), &gadgets());
    write(&d.join("sub/Chart.yaml"), &chart_yaml("sub"));
    write(
        &d.join("sub/crds/things.yaml"),
        &widgets(&["red"])
            .replace("widgets", "things")
            .replace("Widget", "Thing"),
    );
    let status = Command::new("tar")
        .args(["czf", "app/charts/sub-0.1.0.tgz", "sub"])
        .current_dir(d)
        .status()
        .expect("tar runs");
    assert!(status.success());
    let report = plugin(d).json(&["lint", "app"]);
    let sources: Vec<&str> = report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["newSource"].as_str())
        .collect();
    assert_eq!(
        sources,
        // In path order, like the files of a directory.
        [
            "app/charts/gadgets/crds/gadgets.yaml:1",
            "app/charts/sub-0.1.0.tgz:sub/crds/things.yaml:1",
            "app/crds/widgets.yaml:1",
        ]
    );
}

#[test]
fn a_packaged_chart_is_read_like_its_directory() {
    let tmp = tempfile::tempdir().expect("temp dir");
    crds_chart(&tmp.path().join("widgets"), &["red", "green", "blue"]);
    let status = Command::new("tar")
        .args(["czf", "widgets-0.1.0.tgz", "widgets"])
        .current_dir(tmp.path())
        .status()
        .expect("tar runs");
    assert!(status.success());
    crds_chart(&tmp.path().join("next"), &["red", "green"]);
    let report = plugin(tmp.path()).json(&["diff", "widgets-0.1.0.tgz", "next"]);
    assert_eq!(
        report["crds"][0]["oldSource"],
        "widgets-0.1.0.tgz:widgets/crds/widgets.yaml:1"
    );
    assert_eq!(enum_findings(&report), ["^.spec.color"]);
}

#[test]
fn without_helm_templated_crds_are_a_visible_notice_or_an_error_on_request() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let chart = tmp.path().join("chart");
    crds_chart(&chart, &["red"]);
    write(
        &chart.join("templates/more-crds.yaml"),
        &widgets(&["red"])
            .replace("widgets", "gadgets")
            .replace("Widget", "Gadget"),
    );
    let p = Plugin {
        dir: tmp.path(),
        path: Some(NO_HELM_PATH.into()),
    };
    let table = p.run(&["lint", "chart"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    let notice = "notice: chart: templated CRDs were not read: helm is not on PATH and \
                  templates/more-crds.yaml may make CRDs";
    assert!(table.stdout.contains(notice), "{}", table.stdout);
    let json = p.json(&["lint", "chart"]);
    assert!(
        json["notices"][0]
            .as_str()
            .is_some_and(|n| n.contains("templated CRDs were not read")),
        "{json}"
    );
    let md = p.run(&["lint", "chart", "-o", "markdown"]);
    assert!(
        md.stdout.contains("> **Notice:** chart: templated CRDs"),
        "{}",
        md.stdout
    );

    let strict = p.run(&["lint", "chart", "--require-helm"]);
    assert_eq!(strict.code, 2);
    assert_eq!(
        strict.stderr,
        "error: chart: templates make CRDs (templates/more-crds.yaml) but helm is not on PATH \
         (--require-helm); install helm\n"
    );
}

#[test]
fn a_templated_crd_is_rendered_by_helm_when_the_values_switch_it_on() {
    let Some(helm) = helm_dir() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    templated_chart(&tmp.path().join("old"), &["red", "green", "blue"]);
    templated_chart(&tmp.path().join("new"), &["red", "green"]);
    let p = Plugin {
        dir: tmp.path(),
        path: Some(path_with_helm(helm)),
    };
    // Switched off (the chart's default), there is no CRD at all.
    let off = p.run(&["lint", "new"]);
    assert_eq!(off.code, 2);
    assert!(
        off.stderr.contains("no CustomResourceDefinition found"),
        "{}",
        off.stderr
    );

    let report = p.json(&["diff", "old", "new", "--helm-set", "crds.enabled=true"]);
    assert_eq!(
        report["crds"][0]["newSource"],
        "helm:new:templated/templates/crds.yaml:1"
    );
    assert_eq!(enum_findings(&report), ["^.spec.color"]);
    assert!(report.get("notices").is_none());

    write(&tmp.path().join("on.yaml"), "crds:\n  enabled: true\n");
    let by_file = p.json(&["lint", "new", "--helm-values", "on.yaml"]);
    assert_eq!(by_file["crds"][0]["name"], "widgets.example.com");

    // A template helm cannot render: one line, exit 2.
    write(
        &tmp.path().join("new/templates/broken.yaml"),
        "{{ .Values.crds.enabled | nosuchfn }}\n# CustomResourceDefinition\n",
    );
    let broken = p.run(&["lint", "new"]);
    assert_eq!(broken.code, 2);
    assert!(
        broken
            .stderr
            .starts_with("error: new: helm template failed: "),
        "{}",
        broken.stderr
    );
    assert_eq!(broken.stderr.lines().count(), 1, "{}", broken.stderr);
}

#[test]
fn a_chart_at_a_git_revision_is_read_as_a_chart_and_its_templates_rendered_by_helm() {
    let repo = two_commit_repo();
    let d = repo.path();
    crds_chart(&d.join("chart"), &["red", "green", "blue"]);
    write(&d.join("chart/templates/more-crds.yaml"), &gadgets());
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "chart"]);
    write(
        &d.join("chart/crds/widgets.yaml"),
        &widgets(&["red", "green"]),
    );
    let p = Plugin {
        dir: d,
        path: Some(NO_HELM_PATH.into()),
    };
    // Templates are not YAML: the chart is read as a chart, not as a directory.
    let report = p.json(&["diff", "git:HEAD:chart", "chart"]);
    assert_eq!(
        report["crds"][0]["oldSource"],
        "git:HEAD:chart/crds/widgets.yaml:1"
    );
    assert_eq!(enum_findings(&report), ["^.spec.color"]);
    let notices: Vec<&str> = report["notices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notices.iter().any(|n| n.starts_with(
            "git:HEAD:chart: templated CRDs were not read: helm is not on PATH and \
             templates/more-crds.yaml may make CRDs"
        )),
        "{notices:?}"
    );
    let strict = p.run(&["lint", "git:HEAD:chart", "--require-helm"]);
    assert_eq!(strict.code, 2);
    assert!(
        strict.stderr.contains("helm is not on PATH"),
        "{}",
        strict.stderr
    );

    // With helm, the templates are rendered from a copy of the chart.
    let Some(helm) = helm_dir() else { return };
    let p = Plugin {
        dir: d,
        path: Some(path_with_helm(helm)),
    };
    let report = p.json(&["lint", "git:HEAD:chart"]);
    let sources: Vec<&str> = report["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["newSource"].as_str())
        .collect();
    assert_eq!(
        sources,
        [
            "git:HEAD:chart/crds/widgets.yaml:1",
            "helm:git:HEAD:chart:widgets/templates/more-crds.yaml:1",
        ]
    );
    assert!(report.get("notices").is_none(), "{report}");
}

// ---- kustomize -------------------------------------------------------------------

/// A base with the CRD and an overlay that patches blue out of its enum.
fn kustomization(dir: &Path) {
    write(
        &dir.join("base/widgets.yaml"),
        &widgets(&["red", "green", "blue"]),
    );
    write(
        &dir.join("base/kustomization.yaml"),
        "resources:\n- widgets.yaml\n",
    );
    write(
        &dir.join("overlay/kustomization.yaml"),
        "resources:\n- ../base\npatches:\n- target:\n    kind: CustomResourceDefinition\n    name: widgets.example.com\n  patch: |-\n    - op: replace\n      path: /spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color/enum\n      value: [red, green]\n",
    );
}

#[test]
fn a_kustomization_with_a_patch_on_a_crd_is_rendered_like_kubectl_apply_k() {
    let tmp = tempfile::tempdir().expect("temp dir");
    kustomization(tmp.path());
    let report = plugin(tmp.path()).json(&["diff", "base/widgets.yaml", "kustomize:overlay"]);
    assert_eq!(report["crds"][0]["newSource"], "kustomize:overlay:1");
    assert_eq!(enum_findings(&report), ["^.spec.color"]);

    let out = plugin(tmp.path()).run(&["diff", "kustomize:base", "kustomize:missing"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("error: kustomize:missing: kubectl kustomize failed: "),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

// ---- against the real API server -------------------------------------------------

#[tokio::test]
async fn apply_check_reads_a_git_revision_a_chart_and_a_kustomization() {
    let Some(plane) = control_plane() else { return };
    let client = admin(plane).await;
    // The cluster runs the first release, with blue.
    let installed: Value =
        serde_saphyr::from_str(&widgets(&["red", "green", "blue"])).expect("fixture parses");
    install(&client, &installed).await;
    let kubeconfig = plane.admin_kubeconfig.display().to_string();

    let repo = two_commit_repo();
    let chart = repo.path().join("chart");
    crds_chart(&chart, &["red", "green"]);
    kustomization(repo.path());
    let p = plugin(repo.path());
    for source in [
        vec!["-f", "git:HEAD:crds"],
        vec!["-f", "chart"],
        vec!["-k", "overlay"],
    ] {
        let mut args = vec!["apply-check", "--kubeconfig", &kubeconfig, "-o", "json"];
        args.extend(&source);
        let out = p.run(&args);
        assert_eq!(out.code, 1, "{source:?}: {}{}", out.stdout, out.stderr);
        let report: Value = serde_json::from_str(&out.stdout).expect("JSON report");
        assert_eq!(enum_findings(&report), ["^.spec.color"], "{source:?}");
        assert_eq!(report["crds"][0]["status"], "unsafe");
    }
    // The unchanged first release is safe against the cluster.
    let same = p.run(&[
        "apply-check",
        "--kubeconfig",
        &kubeconfig,
        "-f",
        "git:v1.0:crds",
    ]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);
}
