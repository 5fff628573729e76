//! Sources of CRDs made for a test (a git repository, a chart, a
//! kustomization), each holding a CRD `<plural>.example.com` whose
//! `spec.color` accepts some colors, and the plugin run in their directory.
//! The offline tests use `widgets`; the live one, which installs its CRD on
//! the shared control plane, a plural of its own.

#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// A CRD `<plural>.example.com` whose `spec.color` accepts `colors`.
pub fn colored(plural: &str, colors: &[&str]) -> String {
    super::fixtures::crd_yaml(
        plural,
        &[format!(
            "color: {{type: string, enum: [{}]}}",
            colors.join(", ")
        )],
    )
}

pub fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("directory is created");
    }
    std::fs::write(path, text).expect("file is written");
}

/// The plugin run in `dir` with `PATH` set to `path` (or inherited).
pub struct Plugin<'a> {
    pub dir: &'a Path,
    pub path: Option<String>,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Plugin<'_> {
    pub fn run(&self, args: &[&str]) -> Out {
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

    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let out = self.run(&all);
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", out.stdout, out.stderr))
    }
}

pub fn plugin(dir: &Path) -> Plugin<'_> {
    Plugin { dir, path: None }
}

/// Runs git in `dir` with a fixed identity (the test's tool; the plugin
/// itself reads repositories without git).
pub fn git(dir: &Path, args: &[&str]) -> String {
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

/// A repository with two commits of `crds/<plural>.yaml`: the first release
/// accepts red, green and blue (tagged `v1.0`, annotated, and `first`,
/// lightweight); the second drops blue. A README and a hidden file are not
/// manifests.
pub fn two_commit_repo(plural: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("temp dir");
    let d = tmp.path();
    let file = d.join(format!("crds/{plural}.yaml"));
    git(d, &["init", "-q"]);
    write(&file, &colored(plural, &["red", "green", "blue"]));
    write(&d.join("crds/README.md"), "not a manifest\n");
    write(&d.join("crds/.hidden.yaml"), "not: [valid\n");
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "first release"]);
    git(d, &["tag", "-a", "v1.0", "-m", "v1.0"]);
    git(d, &["tag", "first"]);
    write(&file, &colored(plural, &["red", "green"]));
    git(d, &["commit", "-q", "-am", "drop blue"]);
    tmp
}

/// The paths of the `enum` findings of the first CRD.
pub fn enum_findings(report: &Value) -> Vec<String> {
    report["crds"][0]["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["check"] == "enum")
        .map(|f| f["path"].as_str().unwrap_or("").to_string())
        .collect()
}

pub fn chart_yaml(name: &str) -> String {
    format!("apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
}

/// A chart `<plural>` with its CRD in crds/ and an ordinary template.
pub fn crds_chart(dir: &Path, plural: &str, colors: &[&str]) {
    write(&dir.join("Chart.yaml"), &chart_yaml(plural));
    write(
        &dir.join(format!("crds/{plural}.yaml")),
        &colored(plural, colors),
    );
    write(
        &dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    );
}

/// A base with the CRD and an overlay that patches blue out of its enum.
pub fn kustomization(dir: &Path, plural: &str) {
    write(
        &dir.join(format!("base/{plural}.yaml")),
        &colored(plural, &["red", "green", "blue"]),
    );
    write(
        &dir.join("base/kustomization.yaml"),
        &format!("resources:\n- {plural}.yaml\n"),
    );
    write(
        &dir.join("overlay/kustomization.yaml"),
        &format!(
            "resources:\n- ../base\npatches:\n- target:\n    kind: CustomResourceDefinition\n    name: {plural}.example.com\n  patch: |-\n    - op: replace\n      path: /spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color/enum\n      value: [red, green]\n"
        ),
    );
}
