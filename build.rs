//! Link settings of the plugin binary.
//!
//! The binary is position-independent, as rustc links it by default: it
//! holds cluster credentials, so its code keeps address-space layout
//! randomisation. (It was once linked `-no-pie` to save start-up time,
//! a trade that is gone; figures: docs/BENCHMARKS.md, "What each speed
//! trick buys".)
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // The functions a `diff` runs, laid out together (see link/README.md):
    // rust-lld, the default linker of x86_64-unknown-linux-gnu, takes an
    // ordering file; GNU ld, the default elsewhere, does not.
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("link/code-order.txt");
    println!("cargo:rerun-if-changed=link/code-order.txt");
    // The linker reads a copy in OUT_DIR: checkouts that share a target
    // directory share this script's output too (its hash leaves out where
    // the checkout is), and a path into the checkout that ran it last
    // failed every link once that checkout was gone.
    let copy =
        std::path::Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("code-order.txt");
    if os == "linux"
        && env == "gnu"
        && arch == "x86_64"
        && order.is_file()
        && std::fs::copy(&order, &copy).is_ok()
    {
        println!(
            "cargo:rustc-link-arg-bin=kubectl-crd_safety=-Wl,--symbol-ordering-file={}",
            copy.display()
        );
        println!("cargo:rustc-link-arg-bin=kubectl-crd_safety=-Wl,--no-warn-symbol-ordering");
    }
}
