//! The release as a user gets it: `scripts/release.sh` builds the static
//! Linux archive with its checksums, krew manifest, Homebrew formula and
//! notes; krew's own validator accepts the manifest; krew installs the
//! plugin from that manifest and archive; and kubectl runs it.
//!
//! The first run builds the release binary for `x86_64-unknown-linux-musl`
//! (the script adds the Rust target). Without it, or without Go for krew,
//! the test is skipped with a notice, except with `CI=true`.
//!
//! The build here leaves out the release profile's optimisation (no
//! optimisation at all, no `lto = "fat"`, 16 codegen units): nothing this
//! test checks (the archive, static linking, the manifests, krew's install)
//! depends on it, and optimising every dependency for musl cost about ten
//! minutes of every CI run. The release workflow runs `scripts/release.sh`
//! with the profile as Cargo.toml sets it.

use crate::support;
use crate::support::runs::assert_has;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Runs `scripts/release.sh --out DIR`; `None` (after a notice) when the
/// toolchain cannot be installed here.
fn release(out: &Path) -> Option<PathBuf> {
    let run = Command::new("bash")
        .env("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0")
        .env("CARGO_PROFILE_RELEASE_LTO", "false")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/release.sh"))
        .arg("--out")
        .arg(out)
        .output()
        .expect("release.sh runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    match run.status.code() {
        Some(0) => Some(out.to_path_buf()),
        Some(3) if !in_ci() => {
            eprintln!(
                "notice: skipping the release test: {}",
                stderr.lines().last().unwrap_or("")
            );
            None
        }
        other => panic!("scripts/release.sh exited {other:?}:\n{stderr}"),
    }
}

/// Whether an ELF executable asks for a dynamic loader (a `PT_INTERP`
/// program header): a static binary runs where there is none.
fn needs_loader(elf: &[u8]) -> bool {
    assert_eq!(&elf[..4], b"\x7fELF", "an ELF file");
    assert_eq!(elf[4], 2, "64-bit");
    let u16_at = |o: usize| u16::from_le_bytes([elf[o], elf[o + 1]]) as usize;
    let phoff = u64::from_le_bytes(elf[0x20..0x28].try_into().expect("8 bytes")) as usize;
    let (size, count) = (u16_at(0x36), u16_at(0x38));
    (0..count).any(|i| {
        let at = phoff + i * size;
        u32::from_le_bytes(elf[at..at + 4].try_into().expect("4 bytes")) == 3
    })
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum runs");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn krew_installs_the_released_archive_and_kubectl_runs_the_plugin() {
    let Some(krew) = support::helm::krew_dir() else {
        return;
    };
    let Some(dist) = dist() else { return };
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let name = format!("kubectl-crd_safety-{version}-x86_64-unknown-linux-musl.tar.gz");
    let archive = dist.join(&name);
    // What the archive holds.
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&archive)
        .output()
        .expect("tar");
    let listing = String::from_utf8_lossy(&listing.stdout);
    for file in [
        "kubectl-crd_safety",
        "kubectl_complete-crd_safety",
        "LICENSE",
        "README.md",
    ] {
        assert!(
            listing.lines().any(|l| l.trim_start_matches("./") == file),
            "{file} in {listing}"
        );
    }
    // The checksums file, the krew manifest and the formula name its sha256.
    let sum = sha256(&archive);
    let checksums = std::fs::read_to_string(dist.join("checksums.txt")).expect("checksums.txt");
    assert_has(&checksums, &format!("{sum}  {name}"));
    let manifest: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(dist.join("crd-safety.yaml")).expect("manifest"),
    )
    .expect("YAML");
    let linux = manifest["spec"]["platforms"]
        .as_array()
        .expect("platforms")
        .iter()
        .find(|p| p["uri"].as_str().is_some_and(|u| u.ends_with(&name)))
        .expect("the linux/amd64 platform");
    assert_eq!(linux["sha256"], sum.as_str());
    let formula = std::fs::read_to_string(dist.join("crd-safety.rb")).expect("formula");
    assert_has(&formula, &format!("sha256 \"{sum}\""));
    let notes = std::fs::read_to_string(dist.join("RELEASE_NOTES.md")).expect("notes");
    assert!(notes.contains("### "), "CHANGELOG's section: {notes}");
    // The binary is static.
    let binary = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/x86_64-unknown-linux-musl/release/kubectl-crd_safety");
    let elf = std::fs::read(&binary).expect("the release binary");
    assert!(
        !needs_loader(&elf),
        "{} asks for a dynamic loader",
        binary.display()
    );
    // krew's validator accepts the manifest (installing from the network is
    // krew's job below, from the local archive).
    let validate = Command::new(krew.join("validate-krew-manifest"))
        .args(["-skip-install", "-manifest"])
        .arg(dist.join("crd-safety.yaml"))
        .output()
        .expect("validate-krew-manifest runs");
    assert!(
        validate.status.success(),
        "{}",
        String::from_utf8_lossy(&validate.stderr)
    );
    // krew installs it; kubectl finds and runs it.
    let root = tempfile::tempdir().expect("KREW_ROOT");
    let install = Command::new(krew.join("krew"))
        .arg("install")
        .arg(format!(
            "--manifest={}",
            dist.join("crd-safety.yaml").display()
        ))
        .arg(format!("--archive={}", archive.display()))
        .env("KREW_ROOT", root.path())
        .output()
        .expect("krew runs");
    assert!(
        install.status.success(),
        "{}",
        String::from_utf8_lossy(&install.stderr)
    );
    let path = format!(
        "{}:{}",
        root.path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = Command::new("kubectl")
        .args(["crd-safety", "--version"])
        .env("PATH", &path)
        .output()
        .expect("kubectl runs");
    assert_eq!(
        String::from_utf8_lossy(&run.stdout).trim(),
        format!("kubectl crd-safety {}", env!("CARGO_PKG_VERSION")),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // The completion helper is installed next to it.
    assert!(
        root.path()
            .join(format!(
                "store/crd-safety/{version}/kubectl_complete-crd_safety"
            ))
            .exists()
    );
}

/// Runs `cargo ARGS` in the repository, failing with its output.
fn cargo(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "cargo {args:?}:\n{text}");
    text
}

#[test]
fn the_crates_io_package_holds_the_library_and_builds_with_its_docs() {
    let listed = cargo(&["package", "--list", "--allow-dirty"]);
    for needed in [
        "src/lib.rs",
        "src/bin/kubectl-crd_safety/main.rs",
        "build.rs",
        "examples/compare_crds.rs",
        "LICENSE",
    ] {
        assert!(
            listed.lines().any(|l| l == needed),
            "{needed} missing:\n{listed}"
        );
    }
    for left_out in ["tests/", "benches/", "charts/", "deploy/", ".github/"] {
        assert!(
            !listed.lines().any(|l| l.starts_with(left_out)),
            "{left_out} packaged"
        );
    }
    // Packaged, built from the package alone, not uploaded.
    cargo(&["publish", "--dry-run", "--allow-dirty"]);
    cargo(&["doc", "--no-deps", "--lib"]);
}

/// Serves `file` over HTTP on loopback, as a release page serves the
/// archive (helm 3 installs a plugin archive only from an http(s) URL, and
/// asks with HEAD first what it is). Returns the URL; the server lives as
/// long as the test.
fn serve_archive(file: &Path) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = listener.local_addr().expect("an address").port();
    let body = std::fs::read(file).expect("the archive");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let n = stream.read(&mut request).unwrap_or(0);
            let head = String::from_utf8_lossy(&request[..n]).starts_with("HEAD ");
            let headers = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(headers.as_bytes());
            if !head {
                let _ = stream.write_all(&body);
            }
        }
    });
    let name = file.file_name().expect("a name").to_string_lossy();
    format!("http://127.0.0.1:{port}/{name}")
}

/// helm with its homes in `home` and the test server's kubeconfig.
fn helm_in(helm: &Path, home: &Path, kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new(helm.join("helm"))
        .args(args)
        .env("HELM_CACHE_HOME", home.join("cache"))
        .env("HELM_CONFIG_HOME", home.join("config"))
        .env("HELM_DATA_HOME", home.join("data"))
        .env("KUBECONFIG", kubeconfig)
        .env_remove("HELM_BIN")
        .output()
        .expect("helm runs")
}

/// The release archives (built once for the tests that need them).
fn dist() -> Option<&'static Path> {
    static DIST: std::sync::OnceLock<Option<(tempfile::TempDir, PathBuf)>> =
        std::sync::OnceLock::new();
    DIST.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = release(dir.path())?;
        Some((dir, out))
    })
    .as_ref()
    .map(|(_, out)| out.as_path())
}

fn output_text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// With the plugin installed in `home`: a release `name` whose CRD
/// `plural` is a template behind a value the chart's defaults leave off,
/// installed with the value set; then `helm crd-safety upgrade` to the
/// next chart version with `--reuse-values` (the CRD gains an optional
/// field: exit 0) and `--reset-values` (the defaults switch it off, the
/// upgrade deletes it: exit 1, helmDeletesCrd). Nothing is changed.
fn the_plugin_checks_an_upgrade_with_helms_values(
    helm: &Path,
    home: &Path,
    kubeconfig: &Path,
    name: &str,
    plural: &str,
) {
    use support::charts::{Layout, chart};
    let charts = tempfile::tempdir().expect("charts");
    let (old, new) = (charts.path().join("old"), charts.path().join("new"));
    let off = Layout::Switched { enabled: false };
    chart(&old, "op", "1.0.0", &[(plural, &["a"], off)]);
    chart(&new, "op", "1.1.0", &[(plural, &["a", "b"], off)]);
    let set = format!("{plural}.enabled=true");
    let installed = helm_in(
        helm,
        home,
        kubeconfig,
        &[
            "install",
            name,
            old.to_str().expect("UTF-8"),
            "-n",
            "default",
            "--set",
            &set,
        ],
    );
    assert!(installed.status.success(), "{}", output_text(&installed));
    let upgrade = |extra: &[&str]| {
        let mut args = vec![
            "crd-safety",
            "upgrade",
            name,
            new.to_str().expect("UTF-8"),
            "-n",
            "default",
        ];
        args.extend_from_slice(extra);
        helm_in(helm, home, kubeconfig, &args)
    };
    let crd_name = format!("{plural}.example.com");

    // --reuse-values keeps the value: the CRD gains an optional field.
    let safe = upgrade(&["--reuse-values", "-o", "json"]);
    assert_eq!(safe.status.code(), Some(0), "{}", output_text(&safe));
    let report: Value = serde_json::from_slice(&safe.stdout).expect("a JSON report");
    let crd = &report["crds"][0];
    assert_eq!(crd["name"], crd_name.as_str(), "{report}");
    assert!(
        crd["newSource"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("templates/{plural}.yaml"))),
        "{report}"
    );

    // --reset-values takes the chart's defaults, which switch it off: the
    // upgrade deletes the CRD and every object of it.
    let breaking = upgrade(&["--reset-values"]);
    assert_eq!(
        breaking.status.code(),
        Some(1),
        "{}",
        output_text(&breaking)
    );
    assert_has(&output_text(&breaking), "helmDeletesCrd");
    assert_has(&output_text(&breaking), &crd_name);

    // Nothing was changed: the release is still at its first revision.
    let history = helm_in(
        helm,
        home,
        kubeconfig,
        &["history", name, "-n", "default", "-o", "json"],
    );
    let history: Value = serde_json::from_slice(&history.stdout).expect("history");
    assert_eq!(history.as_array().map(Vec::len), Some(1), "{history}");

    // What it said is what helm does: the real upgrade deletes the CRD.
    let real = helm_in(
        helm,
        home,
        kubeconfig,
        &[
            "upgrade",
            name,
            new.to_str().expect("UTF-8"),
            "-n",
            "default",
            "--reset-values",
        ],
    );
    assert!(real.status.success(), "{}", output_text(&real));
    let crd_ref = format!("crd/{crd_name}");
    let gone = support::webhook::kubectl(
        kubeconfig,
        &["wait", "--for=delete", &crd_ref, "--timeout=60s"],
    );
    assert!(
        gone.status.success(),
        "helm upgrade --reset-values deletes {crd_name}: {}",
        output_text(&gone)
    );
}

#[test]
fn helm_installs_the_released_archive_as_a_plugin_that_checks_an_upgrade_with_helms_values() {
    let Some(helm) = support::helm::helm_dir() else {
        return;
    };
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let Some(dist) = dist() else { return };
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let archive = dist.join(format!(
        "kubectl-crd_safety-{version}-x86_64-unknown-linux-musl.tar.gz"
    ));
    let home = tempfile::tempdir().expect("helm's homes");
    let kubeconfig = plane.admin_kubeconfig.as_path();
    let install = helm_in(
        helm,
        home.path(),
        kubeconfig,
        &["plugin", "install", &serve_archive(&archive)],
    );
    assert!(install.status.success(), "{}", output_text(&install));
    let list = helm_in(helm, home.path(), kubeconfig, &["plugin", "list"]);
    let listed = output_text(&list);
    assert!(
        listed.contains("crd-safety") && listed.contains(env!("CARGO_PKG_VERSION")),
        "{listed}"
    );
    the_plugin_checks_an_upgrade_with_helms_values(
        helm,
        home.path(),
        kubeconfig,
        "plugrel",
        "pluginwidgets",
    );
}

/// Helm 4 verifies a plugin archive's signature by default; the release
/// has no `.prov` yet, so the install says so and `--verify=false` is the
/// documented way (docs/helm-plugin.md). Installed so, Helm 4 reads the
/// archive's `apiVersion: v1` plugin.yaml and the plugin does what it does
/// under Helm 3.
#[test]
fn helm4_installs_the_released_plugin_archive_with_verify_false_and_it_checks_an_upgrade() {
    let Some(helm) = support::helm::helm4_dir() else {
        return;
    };
    let Some(plane) = support::envtest::control_plane() else {
        return;
    };
    let Some(dist) = dist() else { return };
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let archive = dist.join(format!(
        "helm-crd-safety-{version}-x86_64-unknown-linux-musl.tgz"
    ));
    let listing = Command::new("tar")
        .arg("tzf")
        .arg(&archive)
        .output()
        .expect("tar");
    let listing = String::from_utf8_lossy(&listing.stdout);
    assert!(
        listing.lines().any(|l| l == "plugin.yaml")
            && listing.lines().any(|l| l == "kubectl-crd_safety"),
        "{listing}"
    );
    let home = tempfile::tempdir().expect("helm's homes");
    let kubeconfig = plane.admin_kubeconfig.as_path();
    let url = serve_archive(&archive);
    let refused = helm_in(helm, home.path(), kubeconfig, &["plugin", "install", &url]);
    assert!(!refused.status.success(), "{}", output_text(&refused));
    assert!(
        output_text(&refused).contains("verif"),
        "Helm 4 names the verification it could not do: {}",
        output_text(&refused)
    );
    let install = helm_in(
        helm,
        home.path(),
        kubeconfig,
        &["plugin", "install", &url, "--verify=false"],
    );
    assert!(install.status.success(), "{}", output_text(&install));
    the_plugin_checks_an_upgrade_with_helms_values(
        helm,
        home.path(),
        kubeconfig,
        "plug4rel",
        "plugin4widgets",
    );
}
