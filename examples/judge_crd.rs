//! The library as the API server: would Kubernetes 1.33 accept this CRD?
//! (`invalidCrd`, what `kubectl crd-safety lint --kube-version 1.33` reports.)
//!
//! `cargo run --example judge_crd -- examples/invalid-crd/backups.yaml`

use crd_safety::crd_validation::{KubeVersion, findings};
use crd_safety::manifest::{Source, load};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: judge_crd FILE")?;
    let set = load(&[Source::parse(&path)?])?;
    let kube: KubeVersion = "1.33".parse()?;
    let mut refused = false;
    for loaded in &set.crds {
        for f in findings(&loaded.crd.manifest, None, kube) {
            refused = true;
            println!(
                "{} ({}): {}",
                loaded.crd.name, loaded.location.file, f.message
            );
        }
    }
    if !refused {
        println!("Kubernetes {kube} accepts every CRD in {path}");
    }
    std::process::exit(i32::from(refused))
}
