#!/usr/bin/env bash
# Provide a real `helm` for the chart tests: helm.sh/helm/v3 at a pinned
# version, built by go-bin.sh (stdout: the directory holding `helm`; exit 3
# when it cannot be built here, so the tests skip, or fail with CI=true).
set -euo pipefail
HELM_VERSION="v3.21.4"
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-bin.sh" helm "$HELM_VERSION" \
    "./helm version --template '{{.Version}}' | grep -qx $HELM_VERSION" \
    helm.sh/helm/v3/cmd/helm \
    -- "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
