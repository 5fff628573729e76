//! Links the plugin as a position-dependent executable on Linux.
//!
//! A position-independent executable spends the start of every run
//! applying ~26,000 relocations to its own tables (and copying the pages
//! they sit in): about 0.4 ms of a 1.5 ms `--version`, and a twentieth of
//! a `diff` of two large CRDs. kubectl, helm and the other Go tools a
//! plugin sits next to are linked this way too. The code itself is still
//! compiled position-independent; only the final link changes.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bin=kubectl-crd_safety=-no-pie");
    }
    // The functions a `diff` runs, laid out together (see link/README.md):
    // rust-lld, the default linker of x86_64-unknown-linux-gnu, takes an
    // ordering file; GNU ld, the default elsewhere, does not.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("link/code-order.txt");
    println!("cargo:rerun-if-changed=link/code-order.txt");
    if os == "linux" && env == "gnu" && arch == "x86_64" && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=kubectl-crd_safety=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bin=kubectl-crd_safety=-Wl,--no-warn-symbol-ordering");
    }
}
