//! The library in an operator's own tests: compare two releases of a CRD as
//! `kubectl crd-safety diff` does, and fail on error findings.
//!
//! `cargo run --example compare_crds -- examples/widgets/old.yaml examples/widgets/new.yaml`

use crd_safety::config::Config;
use crd_safety::engine::{StoredVersionsArg, diff};
use crd_safety::manifest::{Source, load};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(old), Some(new)) = (args.next(), args.next()) else {
        return Err("usage: compare_crds OLD NEW".into());
    };
    let old = load(&[Source::parse(&old)?])?;
    let new = load(&[Source::parse(&new)?])?;
    let report = diff(
        &old,
        &new,
        &StoredVersionsArg::default(),
        &Config::default(),
    );
    for crd in &report.crds {
        for f in &crd.findings {
            let place = [f.version.as_deref(), f.path.as_deref()]
                .into_iter()
                .flatten();
            let place: Vec<&str> = place.collect();
            println!(
                "{} {} {} {}: {}",
                f.severity.as_str(),
                crd.name,
                f.check,
                place.join(" "),
                f.message
            );
        }
    }
    println!("{}", report.summary_line());
    std::process::exit(report.exit_code().into())
}
