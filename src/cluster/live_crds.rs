//! Reading the live CRDs of a bundle: a GET each for a few, one paginated
//! LIST for many, so that a bundle of hundreds of CRDs a 50 ms round trip
//! away costs a few round trips rather than hundreds.

use std::collections::HashMap;

use kube::api::ListParams;
use serde_json::Value;

use super::{ClusterError, Connection, Page};

/// From this many CRDs on, the live ones are read with a LIST of every CRD
/// of the cluster rather than a GET each. A LIST also brings the cluster's
/// other CRDs, which a small bundle would not need: with 32 CRDs read 8 at a
/// time the GETs cost 4 round trips, about what a LIST of a cluster with a
/// few hundred CRDs costs in pages and bytes.
pub const LIST_FROM: usize = 32;

/// CRDs per LIST page: the answer is read whole before it is parsed, and a
/// large CRD is 1 MB or more, so pages stay small enough to bound memory
/// while a cluster of 1,000 CRDs takes 10 round trips.
const PAGE: u32 = 100;

impl Connection {
    /// The live CRDs named `names`, in that order, `None` where the cluster
    /// has none. Status (`storedVersions`) included.
    ///
    /// A LIST needs the `list` verb where GETs need only `get`: a LIST the
    /// server refuses (403), or whose continuation expires (410), falls back
    /// to the GETs, which then answer for themselves.
    pub async fn get_crds(
        &self,
        names: &[&str],
        concurrency: usize,
    ) -> Result<Vec<Option<Value>>, ClusterError> {
        if names.len() >= LIST_FROM {
            match self.list_crds(names).await {
                Ok(found) => return Ok(found),
                Err(Fallback::Gets) => {}
                Err(Fallback::Fail(e)) => return Err(e),
            }
        }
        crate::parallel::in_order(names.iter().map(|n| self.get_crd(n)), concurrency).await
    }

    /// Every CRD of the cluster, page by page, keeping those of `names`.
    async fn list_crds(&self, names: &[&str]) -> Result<Vec<Option<Value>>, Fallback> {
        let wanted: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut found = vec![None; names.len()];
        let mut token: Option<String> = None;
        loop {
            let mut params = ListParams::default().limit(PAGE);
            if let Some(t) = &token {
                params = params.continue_token(t);
            }
            let request = self
                .crds()
                .list(&params)
                .map_err(|e| Fallback::Fail(self.unbuildable(e)))?;
            let page: Page = match self.call("LIST crds", request).await {
                Ok(page) => page,
                Err(f) if matches!(f.code(), Some(403 | 410)) => return Err(Fallback::Gets),
                Err(f) => return Err(Fallback::Fail(self.classify_failed(f))),
            };
            let next = page.next().map(str::to_string);
            for mut item in page.items {
                let index = item
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .and_then(|name| wanted.get(name).copied());
                if let Some(i) = index {
                    // A list's items carry no apiVersion and kind of their
                    // own; a GET's answer does, and the rest expects them.
                    item["apiVersion"] = Value::from("apiextensions.k8s.io/v1");
                    item["kind"] = Value::from("CustomResourceDefinition");
                    found[i] = Some(item);
                }
            }
            match next {
                Some(t) => token = Some(t),
                None => return Ok(found),
            }
        }
    }
}

/// Why a LIST did not give the answer.
enum Fallback {
    /// Read the CRDs one by one instead.
    Gets,
    /// A cluster error the GETs would meet too.
    Fail(ClusterError),
}
