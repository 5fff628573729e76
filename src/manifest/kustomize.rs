//! kustomizations as sources (`-k DIR`, `kustomize:DIR`): rendered by
//! `kubectl kustomize`, the same code `kubectl apply -k` runs, or by a
//! standalone `kustomize build` when kubectl is not on `PATH`.

use std::path::Path;

use thiserror::Error;

use super::Origin;
use super::Text;
use super::external::{self, RunError};
use super::input::{InputLimits, LimitError};

/// Why a kustomization could not be rendered. The caller prefixes the source.
#[derive(Debug, Error)]
pub enum KustomizeError {
    /// The renderer failed; its reason.
    #[error("{renderer} failed: {reason}")]
    Failed {
        renderer: &'static str,
        reason: String,
    },
    /// Neither kubectl nor kustomize is installed.
    #[error("neither kubectl nor kustomize is on PATH")]
    NoRenderer,
    /// The rendered stream is larger than a file may be.
    #[error("the output of {renderer}: {source}")]
    TooLarge {
        renderer: &'static str,
        #[source]
        source: LimitError,
    },
}

/// Renders the kustomization in `dir`; the text is labelled `kustomize:DIR`,
/// and lines count in the rendered stream, which is read as one file of
/// `limits`.
pub fn render(dir: &Path, limits: InputLimits) -> Result<Text, KustomizeError> {
    let d = dir.as_os_str();
    let attempts: [(&str, &'static str, [&std::ffi::OsStr; 2]); 2] = [
        ("kubectl", "kubectl kustomize", ["kustomize".as_ref(), d]),
        ("kustomize", "kustomize build", ["build".as_ref(), d]),
    ];
    for (program, renderer, args) in attempts {
        match external::run(program, &args, limits.file_bytes()) {
            Ok(text) => {
                return Ok(Text {
                    label: format!("kustomize:{}", dir.display()),
                    is_json: false,
                    text,
                    origin: Origin::Files,
                });
            }
            Err(RunError::NotFound) => continue,
            Err(RunError::Failed(reason)) => {
                return Err(KustomizeError::Failed { renderer, reason });
            }
            Err(RunError::TooLarge(source)) => {
                return Err(KustomizeError::TooLarge { renderer, source });
            }
        }
    }
    Err(KustomizeError::NoRenderer)
}
