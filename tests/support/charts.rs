//! Chart pairs for the Helm delivery checks: a chart whose CRD sits in
//! `crds/` or in `templates/` (with or without `helm.sh/resource-policy:
//! keep`, or behind a value), built in a temporary directory.

#![allow(dead_code)]

use std::path::Path;

use super::sources::write;

/// Where a chart keeps its CRD.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `crds/<plural>.yaml`.
    Crds,
    /// `templates/<plural>.yaml`.
    Templates,
    /// `templates/<plural>.yaml`, annotated `helm.sh/resource-policy: keep`.
    TemplatesKept,
    /// `templates/<plural>.yaml`, rendered when `<plural>.enabled` is true
    /// (the chart's default is `enabled`).
    Switched { enabled: bool },
}

/// The CRD `<plural>.example.com` (kind as the live fixtures make it:
/// the plural without its last letter, capitalized) whose `spec` has the
/// string `fields`.
pub fn crd(plural: &str, fields: &[&str], keep: bool) -> String {
    let singular = &plural[..plural.len() - 1];
    let kind = super::fixtures::kind_of(plural);
    let annotations = if keep {
        "  annotations:\n    helm.sh/resource-policy: keep\n"
    } else {
        ""
    };
    let props: String = fields
        .iter()
        .map(|f| format!("              {f}: {{type: string}}\n"))
        .collect();
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.example.com
{annotations}spec:
  group: example.com
  scope: Namespaced
  names: {{kind: {kind}, plural: {plural}, singular: {singular}}}
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
{props}"
    )
}

/// Writes a chart `name` at `version` into `dir` with each `(plural,
/// fields, layout)` CRD, and an ordinary template.
pub fn chart(dir: &Path, name: &str, version: &str, crds: &[(&str, &[&str], Layout)]) {
    write(
        &dir.join("Chart.yaml"),
        &format!("apiVersion: v2\nname: {name}\nversion: {version}\n"),
    );
    write(
        &dir.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n",
    );
    let mut values = String::new();
    for &(plural, fields, layout) in crds {
        let text = crd(plural, fields, layout == Layout::TemplatesKept);
        match layout {
            Layout::Crds => write(&dir.join(format!("crds/{plural}.yaml")), &text),
            Layout::Templates | Layout::TemplatesKept => {
                write(&dir.join(format!("templates/{plural}.yaml")), &text)
            }
            Layout::Switched { enabled } => {
                values.push_str(&format!("{plural}:\n  enabled: {enabled}\n"));
                write(
                    &dir.join(format!("templates/{plural}.yaml")),
                    &format!("{{{{- if .Values.{plural}.enabled }}}}\n{text}{{{{- end }}}}\n"),
                );
            }
        }
    }
    write(&dir.join("values.yaml"), &values);
}
