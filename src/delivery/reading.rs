//! `yamlReading`: the places where kubectl reads a manifest otherwise than it
//! is written. The CRD itself is already kubectl's reading (the loader types
//! scalars as sigs.k8s.io/yaml does); these findings say where the author
//! meant something else.

use crate::compare::{Check, Finding, Severity};
use crate::manifest::Reading;

/// One warning per place kubectl reads otherwise, located on it.
pub fn findings(readings: &[Reading]) -> Vec<Finding> {
    readings
        .iter()
        .map(|r| {
            let what = if r.key { "key" } else { "value" };
            let message = format!(
                "{what} `{}` is read by kubectl as `{}`: kubectl, Helm and Argo CD read YAML 1.1 \
                 (unquoted y, yes, on, n, no, off are booleans, 0755 is octal, 1_000 is a number), \
                 and the CRD is judged and applied as they read it. Quote it (`\"{}\"`) to keep it \
                 as written",
                r.written,
                r.read_as.trim_matches('"'),
                r.written
            );
            let mut f = Finding::new(Check::YamlReading, Severity::Warning, message);
            f.location = Some(r.position.clone());
            f
        })
        .collect()
}
