//! kubectl's reading of YAML, for the tests: `yaml2json` (built from
//! `tests/support/yaml2json` by `scripts/yaml2json-bin.sh`) reads with
//! sigs.k8s.io/yaml, the library kubectl, Helm and Argo CD read manifests
//! with.

#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::helm::yaml2json_dir;

/// What sigs.k8s.io/yaml makes of each document: its JSON, or `None` where
/// it refuses it.
pub fn kubectl_reading(docs: &[&str]) -> Option<Vec<Option<Value>>> {
    let dir = yaml2json_dir()?;
    let mut child = Command::new(dir.join("yaml2json"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("yaml2json starts");
    let input = serde_json::to_string(docs).expect("documents as JSON");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("yaml2json reads");
    let out = child.wait_with_output().expect("yaml2json runs");
    assert!(out.status.success(), "yaml2json failed");
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).expect("yaml2json prints JSON");
    Some(
        results
            .into_iter()
            .map(|r| r.get("json").cloned())
            .collect(),
    )
}

/// A CRD whose schema says `x`, `y`, `on`, `Off`, `yes` (the case):
/// kubectl applies the properties `x`, `true`, `false`.
pub const NORWAY_CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: PLURAL.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: KIND, plural: PLURAL}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              x: {type: string}
              y:
                type: string
              on:
                type: string
              Off:
                type: string
              yes:
                type: string
";
