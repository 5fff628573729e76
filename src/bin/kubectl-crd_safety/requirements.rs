//! The consumers' side: `require` writes a requirement, `requirements`
//! shows whether the installed CRDs (or manifests) meet each one.

use crd_safety::command::{self, Failure};
use crd_safety::report::render_structured;

use crate::cli::{ChangeOutput, DataOutput, RequireArgs, RequirementsArgs};
use crate::live::{connect, runtime};
use crate::options::parse_sources;
use crate::terminal::emit;

/// `require`: writes a requirement from the installed CRD or a file's.
pub fn require(args: RequireArgs) -> Result<u8, Failure> {
    let request = args.request()?;
    let crd = if args.from == "cluster" {
        runtime()?.block_on(async {
            let conn = connect(&args.kube).await?;
            command::require::pinned_from_cluster(&conn, &request).await
        })?
    } else {
        command::require::pinned_from_files(&request, &parse_sources([args.from.as_str()])?)?
    };
    let document = command::require::write(&request, crd)?;
    emit(&render_structured(
        &document,
        args.output == DataOutput::Yaml,
    )?)?;
    Ok(0)
}

/// `requirements`: each requirement's state against the cluster, or
/// against `-f` manifests. Without `--requirements` (or the config key) the
/// requirements are the cluster's own `CRDRequirement` objects.
pub fn requirements(args: RequirementsArgs) -> Result<u8, Failure> {
    let config = args.config()?;
    let runtime = runtime()?;
    let from_cluster = config.requirements.is_empty();
    let conn = if from_cluster || args.filenames.is_empty() {
        Some(runtime.block_on(connect(&args.kube))?)
    } else {
        None
    };
    let requirements = match &conn {
        Some(conn) if from_cluster => {
            runtime.block_on(command::requirements::from_cluster(conn))?
        }
        _ => crd_safety::requirement::load(&config.requirements, config.input_limits)?,
    };
    let states = match &conn {
        Some(conn) if args.filenames.is_empty() => {
            runtime.block_on(command::requirements::against_cluster(conn, &requirements))?
        }
        _ => {
            let sources = parse_sources(args.filenames.iter().map(String::as_str))?;
            let new = crd_safety::manifest::load_with(&sources, &args.sources.reading())?;
            let label = args.filenames.join(", ");
            command::requirements::against_files(&requirements, &new, label)
        }
    };
    let text = match args.output {
        ChangeOutput::Table => crd_safety::requirement::render_states(&states, args.show_info),
        ChangeOutput::Json => render_structured(&states, false)?,
        ChangeOutput::Yaml => render_structured(&states, true)?,
    };
    emit(&text)?;
    Ok(states.exit_code())
}
