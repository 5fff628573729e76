//! `require NAME --crd CRD`: a consumer's requirement, written from the CRD
//! as it is installed or as a file has it.

use serde_json::Value;

use super::Failure;
use crate::cluster::Connection;
use crate::crd::Crd;
use crate::manifest::{
    self, DocumentText, Location, Object, SharedText, Source, SourceOptions, normalize_to_v1,
};
use crate::requirement::{self, Draft};

/// What `require` writes, and from what.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The requirement's name, owner, versions and fields as the flags gave them.
    pub draft: Draft,
    /// `--crd`: the CRD to pin.
    pub crd: String,
    /// `--fields-from`: objects whose used fields become the include list.
    pub fields_from: Vec<Source>,
    /// How the sources are read.
    pub sources: SourceOptions,
}

/// The CRD to pin, from files (`--from FILE`).
pub fn pinned_from_files(request: &Request, from: &[Source]) -> Result<Value, Failure> {
    let set = manifest::load_with(from, &request.sources)?;
    match set.get(&request.crd) {
        Some(loaded) => Ok(loaded.crd.manifest.clone()),
        None => Err(Failure::Usage(format!(
            "--crd {}: not in {}",
            request.crd,
            from.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The CRD to pin, as the cluster has it (`--from cluster`).
pub async fn pinned_from_cluster(conn: &Connection, request: &Request) -> Result<Value, Failure> {
    match conn.get_crd(&request.crd).await? {
        Some(crd) => Ok(crd),
        None => Err(Failure::Usage(format!(
            "--crd {}: no such CRD in the cluster ({})",
            request.crd, conn.context
        ))),
    }
}

/// The requirement document pinning `crd`, read back the way
/// `--requirements` reads it, so that what is written is always usable
/// (named versions and fields exist in the CRD).
pub fn write(request: &Request, crd: Value) -> Result<Value, Failure> {
    let manifest = normalize_to_v1(crd);
    let model = Crd::from_manifest(manifest.clone())
        .map_err(|e| Failure::Usage(format!("--crd {}: {e}", request.crd)))?;
    let mut draft = request.draft.clone();
    if !request.fields_from.is_empty() {
        let objects = manifest::read_objects(&request.fields_from, &request.sources)?;
        let found = requirement::fields_from(&model, &objects).ok_or_else(|| {
            Failure::Usage(format!(
                "--fields-from: no {} object ({}) found",
                model.spec.names.kind, model.spec.group
            ))
        })?;
        draft.fields.extend(found);
    }
    draft.fields.sort();
    draft.fields.dedup();
    let document = requirement::document(&draft, &manifest);
    let check = Object {
        value: document.clone(),
        location: Location {
            file: "<require>".into(),
            line: 0,
        },
        text: DocumentText::new(SharedText::whole(String::new()), 1),
    };
    requirement::parse_objects(vec![check])?;
    Ok(document)
}
