//! The commands that need no cluster: `diff`, `lint` and `checks`.

use crd_safety::command::{self, Failure};
use crd_safety::compare::Check;
use crd_safety::engine::StoredVersionsArg;

use crate::cli::{DiffArgs, LintArgs};
use crate::options::parse_sources;
use crate::terminal::{emit, show, told_baseline};

pub fn diff(args: DiffArgs) -> Result<u8, Failure> {
    let mut stored = StoredVersionsArg::default();
    for v in &args.stored_versions {
        stored.add(v).map_err(Failure::Usage)?;
    }
    let request = command::diff::Request {
        old: parse_sources([args.old.as_str()])?,
        new: parse_sources([args.new.as_str()])?,
        sources: args.sources.options(args.report.output),
        stored,
        config: args
            .report
            .config(args.kube_version, args.sources.limits())?,
        baselines: args.report.baselines(args.sources.limits()),
        objects: parse_sources(args.objects.iter().map(String::as_str))?,
    };
    let diffed = command::diff::run(&request)?;
    told_baseline(diffed.baseline_written, &args.report);
    show(&diffed.report, &args.report)?;
    let code = diffed.report.exit_code();
    // The process ends now: see `Diffed::manifests` for why they are leaked.
    std::mem::forget(diffed);
    Ok(code)
}

/// `lint`: the new side alone, as if nothing were installed yet.
pub fn lint(args: LintArgs) -> Result<u8, Failure> {
    let request = command::Manifests {
        new: parse_sources(args.paths.iter().map(String::as_str))?,
        sources: args.sources.options(args.report.output),
        config: args
            .report
            .config(args.kube_version, args.sources.limits())?,
        baselines: args.report.baselines(args.sources.limits()),
    };
    let linted = command::lint::run(&request)?;
    told_baseline(linted.baseline_written, &args.report);
    show(&linted.report, &args.report)?;
    Ok(linted.report.exit_code())
}

/// `checks`: the catalog, one line per check.
pub fn checks() -> Result<u8, Failure> {
    let mut text = String::new();
    for c in Check::ALL {
        text.push_str(&format!(
            "{:<22} {:<8} {}\n",
            c.id(),
            c.default_severity().as_str(),
            c.summary()
        ));
    }
    emit(&text)?;
    Ok(0)
}
