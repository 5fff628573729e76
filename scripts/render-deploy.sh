#!/usr/bin/env bash
# Renders the Helm chart charts/crd-safety into deploy/crd-safety.yaml: plain
# manifests for `kubectl apply`, namespace crd-safety, release crd-safety,
# certificates from cert-manager.
#
# Usage: scripts/render-deploy.sh [--check]
#   --check  render to a temporary file and exit 1, with a diff, when
#            deploy/crd-safety.yaml is not what the chart renders to.
#
# helm comes from scripts/helm-bin.sh (built once, cached under target/go-bin),
# or from $HELM when set. Exit 3 when helm cannot be built here.
#
# --include-crds: the chart's crds/ (the CRDRequirement CRD) go into the file
# too, as kubectl has no other way to install them.
# certificates.mode=cert-manager because it renders deterministically: the
# chart's default mode (generate) makes new certificates on every render.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
out="$root/deploy/crd-safety.yaml"
namespace=crd-safety
release=crd-safety

check=false
case "${1:-}" in
  "") ;;
  --check) check=true ;;
  *) echo "usage: scripts/render-deploy.sh [--check]" >&2; exit 2 ;;
esac

helm="${HELM:-}"
if [[ -z "$helm" ]]; then
  status=0
  dir="$(bash "$root/scripts/helm-bin.sh" | tail -n 1)" || status=$?
  if [[ $status -ne 0 ]]; then
    echo "render-deploy: no helm (scripts/helm-bin.sh exited $status)" >&2
    exit "$status"
  fi
  helm="$dir/helm"
fi

render() {
  cat <<HEADER
# Rendered by scripts/render-deploy.sh from charts/crd-safety; do not edit.
#
# The crd-safety admission webhook for CustomResourceDefinitions, as plain
# manifests: namespace $namespace, certificates from cert-manager, which must
# be installed first (https://cert-manager.io). This file uses
# certificates.mode=cert-manager because that renders the same every time; the
# chart's default mode, generate, makes a new CA and certificate on every
# render. For that mode, or any other setting, install the chart instead:
#
#   helm install $release charts/crd-safety --namespace $namespace --create-namespace
#
# Defaults: webhook mode warn (findings are warnings, nothing is denied),
# failurePolicy Ignore, timeoutSeconds 10. See charts/crd-safety/values.yaml.
# The CRDRequirement CRD of the chart's crds/ is included (consumers'
# requirements, which the webhook enforces; docs/requirements.md).
---
apiVersion: v1
kind: Namespace
metadata:
  name: $namespace
  labels:
    app.kubernetes.io/part-of: crd-safety
    pod-security.kubernetes.io/enforce: restricted
HEADER
  "$helm" template "$release" "$root/charts/crd-safety" \
    --include-crds \
    --namespace "$namespace" \
    --set certificates.mode=cert-manager
}

if $check; then
  tmp="$(mktemp)"
  trap 'rm -f "$tmp"' EXIT
  render >"$tmp"
  if ! diff -u --label "deploy/crd-safety.yaml (checked in)" --label "deploy/crd-safety.yaml (rendered)" "$out" "$tmp"; then
    echo "render-deploy: deploy/crd-safety.yaml is stale; run scripts/render-deploy.sh" >&2
    exit 1
  fi
  echo "render-deploy: deploy/crd-safety.yaml is current" >&2
else
  tmp="$out.tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  render >"$tmp"
  mv -f "$tmp" "$out"
  echo "render-deploy: wrote deploy/crd-safety.yaml" >&2
fi
