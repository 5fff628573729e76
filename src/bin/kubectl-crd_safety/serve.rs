//! `serve`: the admission webhook.

use crd_safety::command::Failure;

use crate::cli::ServeArgs;
use crate::live::connect;
use crate::terminal::terminated;

/// The webhook on a multi-threaded runtime (reviews of large CRDs run side
/// by side), until SIGTERM or Ctrl-C. Its blocking threads judge CEL rules
/// from request bodies.
pub fn serve(args: ServeArgs) -> Result<u8, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(crd_safety::parallel::STACK_BYTES)
        .build()
        .map_err(Failure::Runtime)?;
    runtime.block_on(async {
        let conn = connect(&args.kube).await?;
        crd_safety::webhook::serve(conn, args.options(), terminated()).await?;
        Ok(0)
    })
}
