//! The krew plugin manifest: the rendered `krew/crd-safety.yaml` is a valid
//! krew `Plugin`, names the right binary on every platform, matches the
//! version in Cargo.toml, and is what the template renders to.

use std::path::Path;

use serde_json::Value;

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn rendered() -> Value {
    serde_saphyr::from_str(&read("krew/crd-safety.yaml"))
        .expect("krew/crd-safety.yaml parses as YAML")
}

#[test]
fn the_rendered_manifest_is_a_krew_plugin_for_this_version() {
    let m = rendered();
    assert_eq!(
        m["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(m["kind"], "Plugin");
    assert_eq!(m["metadata"]["name"], "crd-safety");
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    assert_eq!(m["spec"]["version"], version.as_str());
    let short = m["spec"]["shortDescription"]
        .as_str()
        .expect("shortDescription");
    assert!(
        !short.is_empty() && short.len() < 80,
        "krew wants a short description"
    );
}

#[test]
fn every_platform_ships_the_plugin_binary_for_its_os() {
    let m = rendered();
    let version = format!("v{}", env!("CARGO_PKG_VERSION"));
    let platforms = m["spec"]["platforms"].as_array().expect("platforms");
    let mut seen = Vec::new();
    for p in platforms {
        let labels = &p["selector"]["matchLabels"];
        let (os, arch) = (
            labels["os"].as_str().expect("os"),
            labels["arch"].as_str().expect("arch"),
        );
        seen.push(format!("{os}/{arch}"));
        let bin = if os == "windows" {
            "kubectl-crd_safety.exe"
        } else {
            "kubectl-crd_safety"
        };
        assert_eq!(p["bin"], bin, "{os}/{arch}");
        let files: Vec<&str> = p["files"]
            .as_array()
            .expect("files")
            .iter()
            .filter_map(|f| f["from"].as_str())
            .collect();
        assert!(
            files.contains(&bin),
            "{os}/{arch} archive must contain {bin}"
        );
        assert!(
            files.contains(&"LICENSE"),
            "{os}/{arch} archive must contain LICENSE"
        );
        let uri = p["uri"].as_str().expect("uri");
        assert!(
            uri.starts_with("https://") && uri.contains(&version),
            "{uri}"
        );
        let sha = p["sha256"].as_str().expect("sha256");
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{os}/{arch}: {sha}"
        );
    }
    for want in [
        "linux/amd64",
        "linux/arm64",
        "darwin/amd64",
        "darwin/arm64",
        "windows/amd64",
    ] {
        assert!(seen.iter().any(|s| s == want), "missing platform {want}");
    }
}

#[test]
fn the_rendered_manifest_matches_the_template() {
    let template = read("plugin-manifest/crd-safety.yaml.tmpl");
    assert!(
        template.contains("{{VERSION}}"),
        "the template keeps its placeholders"
    );
    let m = rendered();
    let mut text = template.replace("{{VERSION}}", &format!("v{}", env!("CARGO_PKG_VERSION")));
    let shas: Vec<String> = m["spec"]["platforms"]
        .as_array()
        .expect("platforms")
        .iter()
        .map(|p| p["sha256"].as_str().unwrap_or_default().to_string())
        .collect();
    for (placeholder, sha) in [
        "{{SHA256_LINUX_AMD64}}",
        "{{SHA256_LINUX_ARM64}}",
        "{{SHA256_DARWIN_AMD64}}",
        "{{SHA256_DARWIN_ARM64}}",
        "{{SHA256_WINDOWS_AMD64}}",
    ]
    .iter()
    .zip(&shas)
    {
        text = text.replace(placeholder, sha);
    }
    let from_template: Value = serde_saphyr::from_str(&text).expect("rendered template parses");
    assert_eq!(
        from_template, m,
        "krew/crd-safety.yaml is stale: run scripts/render-krew.sh"
    );
}
