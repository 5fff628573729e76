//! Where CRDs live, end to end through the binary: git revisions of a
//! repository made here, Helm charts (crds/, templated behind a values
//! switch, packaged) and kustomizations with a patch on a CRD. The same
//! sources checked against the real API server: `live/sources.rs`.

use crate::support;

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use support::helm::{helm_dir, path_with_helm};
use support::runs::assert_has;
use support::sources::{Plugin, chart_yaml, colored, enum_findings, git, plugin, write};

/// A CRD `widgets.example.com` whose `spec.color` accepts `colors`.
fn widgets(colors: &[&str]) -> String {
    colored("widgets", colors)
}

/// PATH without helm (the system directories only).
const NO_HELM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

// ---- git ----------------------------------------------------------------------

/// The repository of `support::sources::two_commit_repo` for `widgets`.
fn two_commit_repo() -> tempfile::TempDir {
    support::sources::two_commit_repo("widgets")
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
    assert_has(&out.stdout, "enum");
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
    assert_has(&out.stdout, "git:v1.0:crds/widgets.yaml:1");
    // ./ paths are relative to the working directory, as in git.
    let sub = plugin(&repo.path().join("crds")).run(&["lint", "git:HEAD~1:./widgets.yaml"]);
    assert_eq!(sub.code, 0, "{}", sub.stderr);
    assert_has(&sub.stdout, "git:HEAD~1:crds/widgets.yaml:1");
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
    assert_has(&out.stderr, "not inside a git repository");
    assert_has(&out.stderr, "--repo DIR");
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
    assert_has(&out.stderr, "shallow clone");
    assert_has(&out.stderr, "fetch-depth: 0");
    assert_has(&out.stderr, "git fetch --unshallow");
}

// ---- Helm charts ---------------------------------------------------------------

/// A chart `widgets` with its CRD in crds/ and an ordinary template.
fn crds_chart(dir: &Path, colors: &[&str]) {
    support::sources::crds_chart(dir, "widgets", colors);
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
    assert_has(&table.stdout, notice);
    let json = p.json(&["lint", "chart"]);
    assert!(
        json["notices"][0]
            .as_str()
            .is_some_and(|n| n.contains("templated CRDs were not read")),
        "{json}"
    );
    let md = p.run(&["lint", "chart", "-o", "markdown"]);
    assert_has(&md.stdout, "> **Notice:** chart: templated CRDs");

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
    assert_has(&off.stderr, "no CustomResourceDefinition found");

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
    assert_has(&strict.stderr, "helm is not on PATH");

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

/// A base with the `widgets` CRD and an overlay that patches blue out of
/// its enum.
fn kustomization(dir: &Path) {
    support::sources::kustomization(dir, "widgets");
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
