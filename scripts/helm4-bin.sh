#!/usr/bin/env bash
# Provide a real Helm 4 for the Helm plugin test: helm.sh/helm/v4 at a
# pinned version, built by go-bin.sh (stdout: the directory holding `helm`;
# exit 3 when it cannot be built here, so the tests skip, or fail with
# CI=true).
set -euo pipefail
HELM_VERSION="v4.3.2"
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-bin.sh" helm "$HELM_VERSION" \
    "./helm version --template '{{.Version}}' | grep -qx $HELM_VERSION" \
    helm.sh/helm/v4/cmd/helm \
    -- "-X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
